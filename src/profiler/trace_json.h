/* SPDX-License-Identifier: Apache-2.0 */
/* The Chrome Trace Event format ("traceEvents" JSON), which Perfetto and chrome://tracing
 * open: "X" complete events for spans, "C" counters, "i" instants, and "M" metadata naming
 * each process and thread, so that the host's threads and each device's stream tracks are
 * named tracks. Times are microseconds from the profile's start. */
#ifndef TP_PROFILER_TRACE_JSON_H
#define TP_PROFILER_TRACE_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/strbuf.h"
#include "profiler/recorder.h"

/* Appends `text` as a JSON string, quotes included. Names come from plug-ins and applications:
 * quotes, backslashes and control bytes are escaped, a byte that is not part of well-formed
 * UTF-8 becomes U+FFFD, and U+2028 and U+2029 are escaped for JavaScript readers. */
void tp_json_append_string(tp_strbuf_t *out, const char *text);
/* Appends `value` in decimal, without printf's cost. */
void tp_json_append_uint(tp_strbuf_t *out, uint64_t value);

/* Writes the events, times taken from `origin_ns`, to `file`; `producer` ("tensorplug 0.1.0")
 * and the count of dropped events go in "otherData". false when out of host memory or when a
 * write failed (ferror). */
bool tp_trace_json_write(FILE *file, const tp_profile_collection_t *events, uint64_t origin_ns,
                         const char *producer);

#endif
