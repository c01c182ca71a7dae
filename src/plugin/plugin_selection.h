/* SPDX-License-Identifier: Apache-2.0 */
/* TP_PLUGINS: which plug-in files a process uses, so that a user can switch plug-ins off without
 * uninstalling them. Unset: every plug-in found. "none": no plug-in file is even opened. A
 * comma-separated list of plug-in names ("apu,opencl"): only those; a file is opened to read
 * its name from its entry point, and a plug-in the list does not name is never initialised.
 * The built-in CPU device is not a plug-in file and cannot be switched off. A malformed value
 * is warned about and every plug-in is used. */
#ifndef TP_PLUGIN_PLUGIN_SELECTION_H
#define TP_PLUGIN_PLUGIN_SELECTION_H

#include <stdbool.h>
#include <stddef.h>

/* Whether TP_PLUGINS is "none" (ASCII case-insensitive). */
bool tp_plugin_selection_is_none(void);

/* Whether TP_PLUGINS lets the plug-in named `name` be used. */
bool tp_plugin_selection_allows(const char *name);

/* Writes TP_PLUGINS's names that are not among `names` (count of them) into `buffer` as
 * "'a', 'b'"; returns how many there were, 0 when the list names no missing plug-in or TP_PLUGINS
 * is not a list. */
size_t tp_plugin_selection_missing(const char *const *names, size_t count, char *buffer,
                                   size_t capacity);

#endif
