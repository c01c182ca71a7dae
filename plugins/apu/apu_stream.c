/* SPDX-License-Identifier: Apache-2.0 */
#include "apu_stream.h"

#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct apu_command {
    apu_command_t *next;
    apu_work_fn work;
    bool marker; /* an event record, a wait or a callback: no device work, so no latency */
    _Alignas(max_align_t) unsigned char payload[128]; /* holds structs of any alignment */
};

static void sleep_microseconds(uint64_t microseconds) {
    struct timespec delay = {(time_t)(microseconds / 1000000),
                             (long)(microseconds % 1000000) * 1000};
    while (nanosleep(&delay, &delay) != 0) {
    }
}

uint64_t apu_clock_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

void apu_stream_take_work_times(apu_stream_t *stream, uint64_t *out_start_ns,
                                uint64_t *out_end_ns) {
    if (stream->work_start_ns == 0) {
        *out_start_ns = *out_end_ns = apu_clock_ns();
        return;
    }
    *out_start_ns = stream->work_start_ns;
    *out_end_ns = stream->work_end_ns;
    stream->work_start_ns = stream->work_end_ns = 0;
}

/* How long a watch lasts: longer than a runtime takes between launching an op and the next
 * (about a microsecond), far shorter than any op worth a device. */
enum { SPIN_NS = 20 * 1000 };

/* Threads watching now, in every stream and waiter of the process: at most one per core, so
 * that watches never fill a core's run queue (the rest sleep at once, as before), and none on
 * one core, where the awaited thread needs that core. Not one fewer than the cores: a round
 * trip hands the watch back and forth, and the worker starts its watch for the next launch
 * while the host still watches the event it just completed (with one watcher allowed on 2
 * cores, the worker then slept, and each launch woke it: 17-22 µs a round trip, not 4). */
static atomic_int watchers;

static int watchers_allowed(void) {
    static atomic_int allowed = -1;
    int value = atomic_load_explicit(&allowed, memory_order_relaxed);
    if (value < 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        value = cores > 1 ? (int)cores : 0;
        atomic_store_explicit(&allowed, value, memory_order_relaxed);
    }
    return value;
}

bool apu_spin_until(bool (*ready)(const void *arg), const void *arg) {
    if (ready(arg)) return true;
    if (atomic_fetch_add_explicit(&watchers, 1, memory_order_relaxed) >= watchers_allowed()) {
        atomic_fetch_sub_explicit(&watchers, 1, memory_order_relaxed);
        return false;
    }
    uint64_t deadline = apu_clock_ns() + SPIN_NS;
    bool seen = false;
    for (unsigned round = 1; !(seen = ready(arg)); round++) {
        /* Yields rather than pausing: the thread this one waits for may be queued on this
         * very core, and on a virtual machine a pause loop can make the host take the core
         * away (a round trip measured 10 µs so, 6 µs yielding). */
        sched_yield();
        if (round % 8 == 0 && apu_clock_ns() > deadline) break;
    }
    atomic_fetch_sub_explicit(&watchers, 1, memory_order_relaxed);
    return seen;
}

static bool work_or_stop(const void *arg) {
    const apu_stream_t *stream = arg;
    return atomic_load_explicit(&stream->queued, memory_order_acquire) > 0 ||
           atomic_load_explicit(&stream->shutting_down, memory_order_acquire);
}

static void *run_queue(void *arg) {
    apu_stream_t *stream = arg;
    pthread_mutex_lock(&stream->mutex);
    for (;;) {
        if (stream->head == NULL && !stream->shutting_down) {
            pthread_mutex_unlock(&stream->mutex);
            apu_spin_until(work_or_stop, stream);
            pthread_mutex_lock(&stream->mutex);
        }
        while (stream->head == NULL && !stream->shutting_down) {
            stream->worker_sleeping = true;
            pthread_cond_wait(&stream->work, &stream->mutex);
            stream->worker_sleeping = false;
        }
        if (stream->head == NULL) break; /* shutting down with nothing left */
        apu_command_t *command = stream->head;
        atomic_fetch_sub_explicit(&stream->queued, 1, memory_order_relaxed);
        stream->running = true;
        pthread_mutex_unlock(&stream->mutex);

        /* The simulated latency is the device's time: a command starts when it is taken. */
        uint64_t start_ns = command->marker ? 0 : apu_clock_ns();
        if (apu_config.latency_us > 0 && !command->marker)
            sleep_microseconds(apu_config.latency_us);
        char error[sizeof stream->error] = "";
        bool ok = command->work(stream, command->payload, error, sizeof error);
        if (!command->marker) {
            if (stream->work_start_ns == 0) stream->work_start_ns = start_ns;
            stream->work_end_ns = apu_clock_ns();
        }

        pthread_mutex_lock(&stream->mutex);
        if (!ok && stream->error[0] == '\0')
            snprintf(stream->error, sizeof stream->error, "%s", error);
        stream->head = command->next;
        if (stream->head == NULL) stream->tail = NULL;
        stream->running = false;
        free(command);
        if (stream->head == NULL) pthread_cond_broadcast(&stream->drained);
    }
    pthread_mutex_unlock(&stream->mutex);
    return NULL;
}

bool apu_stream_start(apu_device_t *device, apu_stream_t **out, tp_plugin_status_t *status) {
    apu_stream_t *stream = calloc(1, sizeof *stream);
    if (stream == NULL) {
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED, "APU: out of host memory");
        return false;
    }
    stream->device = device;
    pthread_mutex_init(&stream->mutex, NULL);
    pthread_cond_init(&stream->work, NULL);
    pthread_cond_init(&stream->drained, NULL);
    if (pthread_create(&stream->worker, NULL, run_queue, stream) != 0) {
        pthread_cond_destroy(&stream->drained);
        pthread_cond_destroy(&stream->work);
        pthread_mutex_destroy(&stream->mutex);
        free(stream);
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                             "APU:%d: cannot start the stream's queue thread",
                             (int)device->ordinal);
        return false;
    }
    *out = stream;
    return true;
}

void apu_stream_stop(apu_stream_t *stream) {
    pthread_mutex_lock(&stream->mutex);
    stream->shutting_down = true;
    pthread_cond_signal(&stream->work);
    pthread_mutex_unlock(&stream->mutex);
    pthread_join(stream->worker, NULL);
    pthread_cond_destroy(&stream->drained);
    pthread_cond_destroy(&stream->work);
    pthread_mutex_destroy(&stream->mutex);
    free(stream);
}

static bool enqueue(apu_stream_t *stream, apu_work_fn work, bool marker, const void *payload,
                    size_t payload_size, tp_plugin_status_t *status) {
    apu_command_t *command = malloc(sizeof *command);
    if (command == NULL || payload_size > sizeof command->payload) {
        free(command);
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED, "APU: cannot queue a command");
        return false;
    }
    command->next = NULL;
    command->work = work;
    command->marker = marker;
    memcpy(command->payload, payload, payload_size);
    pthread_mutex_lock(&stream->mutex);
    if (stream->tail != NULL)
        stream->tail->next = command;
    else
        stream->head = command;
    stream->tail = command;
    atomic_fetch_add_explicit(&stream->queued, 1, memory_order_release);
    if (stream->worker_sleeping) pthread_cond_signal(&stream->work);
    pthread_mutex_unlock(&stream->mutex);
    return true;
}

bool apu_stream_enqueue(apu_stream_t *stream, apu_work_fn work, const void *payload,
                        size_t payload_size, tp_plugin_status_t *status) {
    return enqueue(stream, work, false, payload, payload_size, status);
}

bool apu_stream_enqueue_marker(apu_stream_t *stream, apu_work_fn work, const void *payload,
                               size_t payload_size, tp_plugin_status_t *status) {
    return enqueue(stream, work, true, payload, payload_size, status);
}

void apu_stream_synchronize(apu_stream_t *stream, tp_plugin_status_t *status) {
    pthread_mutex_lock(&stream->mutex);
    while (stream->head != NULL) pthread_cond_wait(&stream->drained, &stream->mutex);
    if (stream->error[0] != '\0') {
        apu_host->status_set(status, TP_INTERNAL, "%s", stream->error);
        stream->error[0] = '\0';
    }
    pthread_mutex_unlock(&stream->mutex);
}
