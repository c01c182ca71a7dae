/* SPDX-License-Identifier: Apache-2.0 */
/* The events of the profile being recorded. Each thread appends to a buffer of its own under a
 * mutex that only the end of the profile contends for, so threads launching at once never wait
 * for each other. Strings are interned per buffer: a training loop repeats the same names and
 * shapes, and each is kept once per thread. */
#ifndef TP_PROFILER_RECORDER_H
#define TP_PROFILER_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/strbuf.h"

typedef enum tp_profile_event_kind {
    TP_PROFILE_SPAN,    /* begin and duration */
    TP_PROFILE_COUNTER, /* a value at `begin_ns`, in args */
    TP_PROFILE_INSTANT  /* a point in time */
} tp_profile_event_kind_t;

/* One event. `process` names the track group: a device's full name, or NULL for the host's
 * threads; `thread` the track in it: a host thread's label, a device's stream track. */
typedef struct tp_profile_event {
    tp_profile_event_kind_t kind;
    const char *category;
    const char *name;
    const char *process;
    const char *thread;
    uint64_t begin_ns;
    uint64_t duration_ns;
    const char *args; /* the text of a JSON object, or NULL */
    bool global;      /* an instant drawn across every track (a step boundary) */
    /* A counter's value, drawn as the series `series` ("bytes_in_use", a static string). */
    const char *series;
    uint64_t value;
} tp_profile_event_t;

/* What one buffer held for one profile, detached from it when the profile ended. */
typedef struct tp_profile_storage tp_profile_storage_t;

typedef struct tp_profile_collection {
    tp_profile_storage_t **storages;
    size_t count;
    uint64_t dropped; /* events not kept: the per-thread cap reached, or no host memory */
} tp_profile_collection_t;

/* Starts taking events; false when a profile is recording already. */
bool tp_recorder_begin(void);
/* Stops taking events and hands every buffer's events over. Appends that race with the end are
 * either in the collection or dropped, never half-made. */
void tp_recorder_end(tp_profile_collection_t *out);
/* Whether a profile is taking events. */
bool tp_recorder_active(void);

/* Appends `event` to this thread's buffer, copying its strings; dropped when no profile
 * records. */
void tp_recorder_add(const tp_profile_event_t *event);

/* An empty string buffer of this thread's, for the arguments of its next event: reused, so that
 * recording allocates nothing once warm. NULL when out of host memory. */
tp_strbuf_t *tp_recorder_scratch(void);

/* This thread's label for the events it records on the host: "main", "thread 3", or what it
 * was given ("replica 0 (CPU:0)"). The label lasts as long as the thread. */
void tp_recorder_set_thread_label(const char *label);
const char *tp_recorder_thread_label(void);

/* Calls fn on each event of the collection, buffer by buffer. */
void tp_profile_collection_each(const tp_profile_collection_t *collection,
                                void (*fn)(const tp_profile_event_t *event, void *arg),
                                void *arg);
size_t tp_profile_collection_size(const tp_profile_collection_t *collection);
void tp_profile_collection_free(tp_profile_collection_t *collection);

#endif
