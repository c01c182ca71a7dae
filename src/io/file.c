/* SPDX-License-Identifier: Apache-2.0 */
#include "io/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/printable.h"
#include "base/status.h"

void tp_file_show_path(const char *path, char out[TP_FILE_SHOWN_PATH]) {
    tp_printable_copy(out, TP_FILE_SHOWN_PATH, path);
}

/* A status for the system error `error` while doing `what` to `path`. */
static tp_status_t *system_error(int error, const char *what, const char *path) {
    char reason[256] = "unknown error";
    (void)strerror_r(error, reason, sizeof reason);
    char shown[TP_FILE_SHOWN_PATH];
    tp_file_show_path(path, shown);
    return tp_status_make(tp_code_from_errno(error), "cannot %s '%s': %s", what, shown, reason);
}

tp_status_t *tp_file_open_read(const char *path, int *out_fd, uint64_t *out_size) {
    int fd;
    do fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return system_error(errno, "open", path);
    struct stat info;
    if (fstat(fd, &info) != 0) {
        int error = errno;
        close(fd);
        return system_error(error, "examine", path);
    }
    if (!S_ISREG(info.st_mode)) {
        close(fd);
        char shown[TP_FILE_SHOWN_PATH];
        tp_file_show_path(path, shown);
        return tp_status_make(TP_INVALID_ARGUMENT, "cannot read '%s': it is not a regular file",
                              shown);
    }
    *out_fd = fd;
    *out_size = (uint64_t)info.st_size;
    return NULL;
}

tp_status_t *tp_file_read(int fd, const char *path, void *buffer, size_t size, size_t *out_read) {
    size_t done = 0;
    while (done < size) {
        ssize_t n = read(fd, (char *)buffer + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return system_error(errno, "read", path);
        if (n == 0) break;
        done += (size_t)n;
    }
    *out_read = done;
    return NULL;
}

static tp_status_t *write_all(int fd, const char *path, const void *data, size_t size) {
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, (const char *)data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return system_error(errno, "write", path);
        done += (size_t)n;
    }
    return NULL;
}

tp_status_t *tp_file_write_atomic(const char *path, const void *data, size_t size) {
    /* A name no other writer in this process or another picks: the process id and a counter,
     * and O_EXCL for whatever else lies in the folder. mkstemp would do but makes the file
     * 0600, and the umask cannot be read without changing it for every thread. */
    static atomic_uint serial;
    size_t length = strlen(path);
    char *temporary = malloc(length + 64);
    if (temporary == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(temporary, length + 64, "%s.tmp-%ld-%u", path, (long)getpid(),
                 atomic_fetch_add(&serial, 1));
        do fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        while (fd < 0 && errno == EINTR);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        tp_status_t *error = system_error(errno, "create a file beside", path);
        free(temporary);
        return error;
    }
    tp_status_t *error = write_all(fd, path, data, size);
    if (error == NULL && fsync(fd) != 0) error = system_error(errno, "flush", path);
    if (close(fd) != 0 && error == NULL) error = system_error(errno, "write", path);
    if (error == NULL && rename(temporary, path) != 0) error = system_error(errno, "replace", path);
    if (error != NULL) unlink(temporary);
    free(temporary);
    return error;
}
