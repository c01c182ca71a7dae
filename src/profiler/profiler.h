/* SPDX-License-Identifier: Apache-2.0 */
/* The profiler: records what the core reports through base/profile_hooks.h while a profile
 * is on, and writes it as a Chrome trace (trace_json.h). One profile at a time, for the whole
 * process; tp_profiler_start and tp_profiler_stop (tensorplug.h) are its API, and TP_PROFILE
 * starts one with the first context. */
#ifndef TP_PROFILER_PROFILER_H
#define TP_PROFILER_PROFILER_H

#include "base/profile_hooks.h"

/* What the profiler installs while it records (profile_events.c). */
extern const tp_profile_hooks_t tp_profiler_hooks;

/* Called by the context once it is made and once its last reference is gone: TP_PROFILE=path
 * starts a profile when the process's first context is made and writes it when the last live
 * context is released, once per process. */
void tp_profiler_context_created(void);
void tp_profiler_context_released(void);

#endif
