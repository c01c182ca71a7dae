/* SPDX-License-Identifier: Apache-2.0 */
/* Loading a plug-in file in a child process before loading it here: a plug-in whose
 * constructor or init crashes, ends the process or hangs is refused with how it ended, and
 * this process goes on. Asked for with TP_PLUGIN_PROBE=1, as `tensorplug plugins` does; it
 * costs a fork and a second load per file, and like any fork it wants a program that has not
 * started threads of its own. */
#ifndef TP_PLUGIN_PLUGIN_PROBE_H
#define TP_PLUGIN_PLUGIN_PROBE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether TP_PLUGIN_PROBE asks for probing (1 or true; 0, false or unset do not; any other
 * value gets a warning and does not). */
bool tp_plugin_probe_wanted(void);

/* Opens the plug-in file at `path` in a child process and runs its entry point, descriptor
 * checks and init there. True when the child came through (or cannot be told apart from one
 * that did); otherwise `reason` says how it ended, as "it crashed with signal 11 (SIGSEGV)
 * during init". A child still loading after `timeout_ms` is killed and the plug-in refused. */
bool tp_plugin_probe(const char *path, int timeout_ms, char *reason, size_t capacity);

#endif
