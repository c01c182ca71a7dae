/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a file's ELF headers describe a shared object this process can load: ELF of this
 * machine's class, byte order and architecture, and long enough to hold every segment the
 * loader maps. dlopen maps segments without comparing them with the file's size, and touching
 * a page past the end of a truncated file raises SIGBUS, which no error return can catch. */
#ifndef TP_PLUGIN_ELF_CHECK_H
#define TP_PLUGIN_ELF_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies `size` bytes at `offset` of the file into `buffer`; false if it cannot (a short read
 * or an error). The checks never read past the file_size they were given. */
typedef bool (*tp_elf_read_fn)(void *source, uint64_t offset, void *buffer, size_t size);

/* True when the file of `file_size` bytes that `read` reads can be handed to dlopen; otherwise
 * `reason` gets why, as "it ..." for a log line about the file. */
bool tp_elf_check(tp_elf_read_fn read, void *source, uint64_t file_size, char *reason,
                  size_t capacity);

/* The same checks of a file held in memory, and of an open file (read with pread). */
bool tp_elf_check_buffer(const void *bytes, size_t size, char *reason, size_t capacity);
bool tp_elf_check_fd(int fd, uint64_t file_size, char *reason, size_t capacity);

#endif
