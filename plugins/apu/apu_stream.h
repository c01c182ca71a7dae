/* SPDX-License-Identifier: Apache-2.0 */
/* An APU stream: an in-order queue of commands run by a worker thread of its own. */
#ifndef TP_APU_STREAM_H
#define TP_APU_STREAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "apu_device.h"

typedef struct apu_event {
    pthread_mutex_t mutex;
    pthread_cond_t done;
    /* Written under `mutex`; atomic so that a waiter can watch it without the mutex for a
     * moment before it sleeps (apu_spin_until). */
    _Atomic tp_event_state_t state;
    uint64_t generation; /* each record starts a new generation */
    /* TP_EVENT_ERROR: the failure of work queued on the recording stream since its previous
     * event, which this event reports (plugin.h, 1.4). A stream that waits for the event does
     * not take it on: the runtime knows which values depend on it. */
    char error[256];
    /* When the stream ran the work queued between its previous event and this one, on
     * CLOCK_MONOTONIC: what event_work_times reports (plugin.h, 1.6). */
    uint64_t work_start_ns, work_end_ns;
} apu_event_t;

typedef struct apu_command apu_command_t;

typedef struct apu_stream {
    apu_device_t *device;
    pthread_t worker;
    pthread_mutex_t mutex;
    pthread_cond_t work;     /* signalled when a command is queued or on shutdown */
    pthread_cond_t drained;  /* signalled when the queue becomes empty */
    apu_command_t *head, *tail;
    /* Commands queued and not yet taken, and the stop request: written under `mutex`, read
     * without it by the worker that watches for work before it sleeps (apu_spin_until). */
    atomic_uint queued;
    atomic_bool shutting_down;
    bool worker_sleeping;    /* the worker waits on `work`: a queued command must signal it */
    bool running;            /* a command is being executed */
    /* The first failure of work queued since the last event record, not yet reported: the
     * next event recorded reports it, or else the next synchronize. */
    char error[256];
    /* When the device ran the work since the last event record: the start of the first
     * command and the end of the last (0: none yet). Only the worker thread touches them. */
    uint64_t work_start_ns, work_end_ns;
} apu_stream_t;

/* A command's work, run on the worker thread; returns false and fills `error` on failure. */
typedef bool (*apu_work_fn)(apu_stream_t *stream, void *payload, char *error, size_t capacity);

bool apu_stream_start(apu_device_t *device, apu_stream_t **out, tp_plugin_status_t *status);
void apu_stream_stop(apu_stream_t *stream);

/* Queues `work` with a copy of `payload` (at most 128 bytes): device work, which
 * TP_APU_LATENCY_US slows. */
bool apu_stream_enqueue(apu_stream_t *stream, apu_work_fn work, const void *payload,
                        size_t payload_size, tp_plugin_status_t *status);
/* The same for an event record, a wait or a host callback, which a device does at once: the
 * runtime records an event after every launch, and latency on it would double every op's. */
bool apu_stream_enqueue_marker(apu_stream_t *stream, apu_work_fn work, const void *payload,
                               size_t payload_size, tp_plugin_status_t *status);

/* The worker's clock: CLOCK_MONOTONIC in nanoseconds, the host's clock for device times. */
uint64_t apu_clock_ns(void);

/* On the worker thread, at an event record: when the device ran the work since the previous
 * one (both now, when there was none), after which the next piece of work starts anew. */
void apu_stream_take_work_times(apu_stream_t *stream, uint64_t *out_start_ns,
                                uint64_t *out_end_ns);

/* Watches `ready(arg)` without blocking, for a short while: true as soon as it holds, false
 * when the watch ends first. A launch's work is done, and a stream's next command arrives,
 * within microseconds, while a thread that sleeps on a condition variable takes tens of
 * microseconds to wake: the queue's worker and a host waiting for an event watch first and
 * sleep only when nothing came, as a GPU runtime's synchronisation spins before it yields. */
bool apu_spin_until(bool (*ready)(const void *arg), const void *arg);

/* Waits until the queue is empty; reports and clears a failure no event has reported. */
void apu_stream_synchronize(apu_stream_t *stream, tp_plugin_status_t *status);

#endif
