/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/plugin_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/elf_check.h"
#include "plugin/plugin_trust.h"

const char *tp_plugin_file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

static bool refuse_kind(mode_t mode, char *reason, size_t capacity) {
    snprintf(reason, capacity, "it is %s, not a regular file", tp_plugin_file_kind(mode));
    return false;
}

static bool refuse_errno(int error, char *reason, size_t capacity) {
    if (error == ELOOP)
        snprintf(reason, capacity, "it is a symbolic link loop");
    else if (error == ENOENT)
        snprintf(reason, capacity, "it does not exist (a symbolic link to nothing?)");
    else
        snprintf(reason, capacity, "it cannot be opened: %s", strerror(error));
    return false;
}

/* The folder that holds the file, found from the file's real path so that a link in a trusted
 * folder to a file in an untrusted one is judged by the untrusted one. */
static bool check_folder(const char *path, char *reason, size_t capacity) {
    char resolved[PATH_MAX];
    if (realpath(path, resolved) == NULL) return refuse_errno(errno, reason, capacity);
    const char *folder = dirname(resolved);
    struct stat info;
    if (stat(folder, &info) != 0) return refuse_errno(errno, reason, capacity);
    char why[256];
    if (!tp_plugin_trust_check(&info, why, sizeof why)) {
        /* "it is ..." about the folder becomes "its folder /x is ..." about the file. */
        snprintf(reason, capacity, "its folder %s %s", folder,
                 strncmp(why, "it ", 3) == 0 ? why + 3 : why);
        return false;
    }
    return true;
}

bool tp_plugin_file_check(const char *path, char *reason, size_t capacity) {
    /* Only regular files are opened: opening a device can act on it (rewind a tape, hang up a
     * line). */
    struct stat info;
    if (stat(path, &info) != 0) return refuse_errno(errno, reason, capacity);
    if (!S_ISREG(info.st_mode)) return refuse_kind(info.st_mode, reason, capacity);
    /* The path may name something else by now, so what counts is what was opened: O_NONBLOCK
     * keeps a FIFO put there meanwhile from blocking the open. dlopen opens the path again;
     * between the two only root or the user, who own the file and its folder, can change it. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return refuse_errno(errno, reason, capacity);
    bool ok = fstat(fd, &info) == 0;
    if (!ok)
        refuse_errno(errno, reason, capacity);
    else if (!S_ISREG(info.st_mode))
        ok = refuse_kind(info.st_mode, reason, capacity);
    else
        ok = tp_plugin_trust_check(&info, reason, capacity) &&
             check_folder(path, reason, capacity) &&
             tp_elf_check_fd(fd, (uint64_t)info.st_size, reason, capacity);
    close(fd);
    return ok;
}
