/* SPDX-License-Identifier: Apache-2.0 */
/* Files read and written whole: a reader that refuses what is not a regular file, and a writer
 * that leaves either the old file or the whole new one, never a part. */
#ifndef TP_IO_FILE_H
#define TP_IO_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplug/tensorplug.h"

/* Enough for any path with each byte escaped (see base/printable.h), cut short beyond. */
#define TP_FILE_SHOWN_PATH 1024

/* `path` as messages show it: bytes that could be misread escaped as \xHH. */
void tp_file_show_path(const char *path, char out[TP_FILE_SHOWN_PATH]);


/* Opens `path` (which must be a regular file) for reading, and says its size. Messages name
 * the path and the system's reason. */
tp_status_t *tp_file_open_read(const char *path, int *out_fd, uint64_t *out_size);

/* Reads `size` bytes at the file's position into `buffer`; *out_read is less only where the
 * file ends. */
tp_status_t *tp_file_read(int fd, const char *path, void *buffer, size_t size, size_t *out_read);

/* Replaces `path` with a file of `size` bytes from `data`, atomically: the bytes go to a new
 * file in the same folder, are flushed to the disk, and that file is renamed over `path`. On
 * failure `path` is as it was and the new file is removed. The new file's permissions are
 * those open(2) gives (0666 less the umask). Thread-safe. */
tp_status_t *tp_file_write_atomic(const char *path, const void *data, size_t size);

#endif
