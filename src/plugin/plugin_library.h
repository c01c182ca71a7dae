/* SPDX-License-Identifier: Apache-2.0 */
/* The process's plug-ins: each file is opened and initialised at most once, the first time a
 * context's search finds it, and kept until the process exits. */
#ifndef TP_PLUGIN_PLUGIN_LIBRARY_H
#define TP_PLUGIN_PLUGIN_LIBRARY_H

#include "plugin/plugin_record.h"
#include "tensorplug/tensorplug.h"

/* The built-in plug-ins, initialised on first call. A built-in that is refused is reported
 * like any plug-in; fails only when called from a plug-in's init (FAILED_PRECONDITION), which
 * would otherwise wait forever for its own loading to end. */
tp_status_t *tp_plugin_library_builtins(const tp_plugin_record_t *const **out_records,
                                        size_t *out_count);

/* Whether the caller will use the plug-in of `record`, whose name and version are read: asked
 * before its init runs, so that a plug-in switched off or shadowed is never initialised. Called
 * with the library's lock held: it must not load plug-ins. */
typedef bool (*tp_plugin_wanted_fn)(const tp_plugin_record_t *record, void *arg);

/* The record of the plug-in file at `path`, loading it if this process has not: the file is
 * checked first (plugin_file.h), and probed in a child process when TP_PLUGIN_PROBE asks
 * (plugin_probe.h). Its init runs the first time `wanted` says yes; until then the record has
 * its name and no registrations (record->initialised is false). Two paths that name the same
 * file give the same record. Fails only when out of host memory or called from a plug-in's
 * init, as above. */
tp_status_t *tp_plugin_library_load(const char *path, tp_plugin_wanted_fn wanted,
                                    void *wanted_arg, const tp_plugin_record_t **out_record);

/* Logs the refusal of `record` as one line, once per process. */
void tp_plugin_library_log_refusal(const tp_plugin_record_t *record, const char *reason);

#endif
