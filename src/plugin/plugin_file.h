/* SPDX-License-Identifier: Apache-2.0 */
/* The checks a plug-in file passes before dlopen sees it: a regular file (a FIFO would block
 * the loader, a device would be read), that no one but root and the running user can change,
 * in a folder no one else can change, whose ELF headers fit this machine and its size. */
#ifndef TP_PLUGIN_PLUGIN_FILE_H
#define TP_PLUGIN_PLUGIN_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* True when `path` may be handed to dlopen; otherwise `reason` gets why, as "it ..." for a
 * log line that names the file. Never blocks, whatever the path names. */
bool tp_plugin_file_check(const char *path, char *reason, size_t capacity);

/* "a FIFO", "a directory", ...: what a file that is not a regular one is, for a refusal. */
const char *tp_plugin_file_kind(mode_t mode);

#endif
