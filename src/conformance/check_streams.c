/* SPDX-License-Identifier: Apache-2.0 */
/* The ordering checks. Each holds a stream with a gate (check_support.c), queues work behind
 * it, and asserts what must not have happened yet: a read that did not wait wrote its host
 * buffer, an event that did not wait says complete, a host wait returned. Then it opens the
 * gate and asserts what must have happened. A device that cannot be held fails them: the end
 * result alone says nothing about order. A device that declares itself synchronous has no
 * order to hold; its claim is checked instead. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "conformance/check.h"

enum { ORDER_BYTES = 256 << 10, UNTOUCHED = 0xEE };

/* Long enough for a host wait that does not wait to have returned. */
static void pause_briefly(void) {
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
}

static bool untouched(const unsigned char *buffer, size_t size) {
    for (size_t i = 0; i < size; i++)
        if (buffer[i] != UNTOUCHED) return false;
    return true;
}

/* What the order checks hold: one device buffer, the bytes written into it, a host buffer the
 * device reads it back into, and up to two streams. */
typedef struct order_setup {
    void *mem;
    unsigned char *written, *back;
    void *streams[2];
    tp_check_gate_t gate;
    bool gate_closed;
} order_setup_t;

static tp_status_t *order_open(tp_check_t *check, int streams, order_setup_t *setup) {
    memset(setup, 0, sizeof *setup);
    setup->written = malloc(ORDER_BYTES);
    setup->back = malloc(ORDER_BYTES);
    if (setup->written == NULL || setup->back == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_check_random_bytes(check, setup->written, ORDER_BYTES);
    memset(setup->back, UNTOUCHED, ORDER_BYTES);
    TP_RETURN_IF_ERROR(tp_check_allocate(check, 0, ORDER_BYTES, &setup->mem));
    for (int s = 0; s < streams; s++)
        TP_RETURN_IF_ERROR(tp_check_stream_create(check, 0, &setup->streams[s]));
    setup->gate_closed = true;
    return tp_check_gate_close(check, 0, setup->streams[0], &setup->gate);
}

static void order_free_buffers(order_setup_t *setup) {
    free(setup->written);
    free(setup->back);
    setup->written = setup->back = NULL;
}

/* Opens the gate, waits for both streams and frees the device's resources, keeping the host
 * buffers; keeps the first error. */
static tp_status_t *order_close_keeping_buffers(tp_check_t *check, order_setup_t *setup,
                                                tp_status_t *error) {
    void *handle = check->devices[0]->handle;
    if (setup->gate_closed) tp_check_gate_open(&setup->gate);
    for (int s = 0; s < 2; s++) {
        if (setup->streams[s] == NULL) continue;
        tp_status_t *sync_error = tp_check_synchronize(check, 0, setup->streams[s]);
        if (error == NULL) error = sync_error;
        else tp_status_free(sync_error);
        check->def->stream_destroy(handle, setup->streams[s]);
    }
    if (setup->gate_closed) tp_check_gate_destroy(&setup->gate);
    if (setup->mem != NULL) check->def->deallocate(handle, setup->mem);
    return error;
}

/* The same, freeing the host buffers too. */
static tp_status_t *order_close(tp_check_t *check, order_setup_t *setup, tp_status_t *error) {
    error = order_close_keeping_buffers(check, setup, error);
    order_free_buffers(setup);
    return error;
}

static tp_status_t *expect_written(const order_setup_t *setup, const char *what) {
    if (memcmp(setup->back, setup->written, ORDER_BYTES) == 0) return NULL;
    return tp_check_failure("%s did not see the bytes written before it", what);
}

/* The failure of an ordering check whose stream the gate could not hold. */
static tp_status_t *not_held(const tp_check_t *check, const tp_check_gate_t *gate,
                             const char *unseen) {
    char problem[160];
    return tp_check_failure("%s:0's stream cannot be held: %s and the device does not declare "
                            "TP_DEVICE_SYNCHRONOUS, so whether %s cannot be seen (give "
                            "host_callback a place in the stream's queue, or declare the device "
                            "synchronous if its work is done when each call returns)",
                            check->def->type,
                            tp_check_gate_problem(check, gate, problem, sizeof problem), unseen);
}

/* The reason an ordering check does not apply to a synchronous device. */
static void synchronous_not_applicable(tp_check_t *check, const char *what) {
    tp_check_not_applicable(check, "%s declares itself synchronous (TP_DEVICE_SYNCHRONOUS): its "
                                   "work is done when each call returns, so nothing is pending "
                                   "for %s", check->def->type, what);
}

/* What a synchronous device claims, checked: a host callback has run, and a read has its bytes,
 * when the call that queued it returns. */
static tp_status_t *check_synchronous_claim(tp_check_t *check) {
    const char *type = check->def->type;
    order_setup_t setup;
    tp_status_t *error = order_open(check, 1, &setup);
    if (error == NULL && setup.gate.held)
        error = tp_check_failure("%s declares TP_DEVICE_SYNCHRONOUS, but host_callback returned "
                                 "before it had called back: its work is queued", type);
    void *stream = setup.streams[0];
    if (error == NULL)
        error = tp_check_to_device(check, 0, stream, setup.mem, 0, setup.written, ORDER_BYTES);
    if (error == NULL)
        error = tp_check_to_host(check, 0, stream, setup.back, setup.mem, 0, ORDER_BYTES);
    if (error == NULL && memcmp(setup.back, setup.written, ORDER_BYTES) != 0)
        error = tp_check_failure("%s declares TP_DEVICE_SYNCHRONOUS, but memcpy_device_to_host "
                                 "returned before the bytes written before it were in the host "
                                 "buffer", type);
    return order_close(check, &setup, error);
}

tp_status_t *tp_check_stream_order(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 stream order", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    if (tp_check_synchronous(check)) {
        TP_RETURN_IF_ERROR(check_synchronous_claim(check));
        synchronous_not_applicable(check, "stream order to hold; a write and a read were done "
                                          "when they returned");
        return NULL;
    }
    order_setup_t setup;
    error = order_open(check, 1, &setup);
    if (error == NULL && !setup.gate.held)
        error = not_held(check, &setup.gate, "a read waits for the work queued before it");
    void *stream = setup.streams[0];
    /* A write, an overwrite of its first half, then the read. */
    if (error == NULL)
        error = tp_check_to_device(check, 0, stream, setup.mem, 0, setup.written, ORDER_BYTES);
    unsigned char *second = NULL;
    if (error == NULL && (second = malloc(ORDER_BYTES / 2)) == NULL)
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    if (error == NULL) {
        tp_check_random_bytes(check, second, ORDER_BYTES / 2);
        error = tp_check_to_device(check, 0, stream, setup.mem, 0, second, ORDER_BYTES / 2);
    }
    if (error == NULL)
        error = tp_check_to_host(check, 0, stream, setup.back, setup.mem, 0, ORDER_BYTES);
    if (error == NULL) {
        pause_briefly();
        if (!untouched(setup.back, ORDER_BYTES))
            error = tp_check_failure("memcpy_device_to_host wrote the host buffer while the "
                                     "work queued before it was held: it ignores its stream");
    }
    /* Freed only once the streams are synchronized: the device may read `second` until then. */
    error = order_close_keeping_buffers(check, &setup, error);
    if (error == NULL) {
        memcpy(setup.written, second, ORDER_BYTES / 2);
        error = expect_written(&setup, "a read queued after a write and an overwrite");
    }
    order_free_buffers(&setup);
    free(second);
    TP_RETURN_IF_ERROR(error);
    tp_check_detail(check, "a read queued behind a held write and overwrite waited for both");
    return NULL;
}

/* A host wait run on a thread of its own, so that the checker can see whether it returned
 * while the gate was still closed. */
typedef struct host_wait {
    tp_check_t *check;
    void *stream;
    void *event;
    tp_check_gate_t *gate;
    bool returned_before_open;
    tp_status_t *error;
} host_wait_t;

static void note_return(host_wait_t *wait) {
    pthread_mutex_lock(&wait->gate->mutex);
    wait->returned_before_open = !wait->gate->open;
    pthread_mutex_unlock(&wait->gate->mutex);
}

static void *wait_for_event(void *arg) {
    host_wait_t *wait = arg;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    wait->check->def->event_synchronize(wait->check->devices[0]->handle, wait->event, &status);
    note_return(wait);
    wait->error = tp_plugin_status_check(&status, "event_synchronize");
    return NULL;
}

static void *wait_for_stream(void *arg) {
    host_wait_t *wait = arg;
    wait->error = tp_check_synchronize(wait->check, 0, wait->stream);
    note_return(wait);
    return NULL;
}

static void *wait_for_device(void *arg) {
    host_wait_t *wait = arg;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    wait->check->def->device_synchronize(wait->check->devices[0]->handle, &status);
    note_return(wait);
    wait->error = tp_plugin_status_check(&status, "device_synchronize");
    return NULL;
}

/* Starts `fn` on a thread, gives it time to return too early, opens the gate, and joins it. */
static tp_status_t *wait_across_gate(host_wait_t *wait, void *(*fn)(void *), const char *what) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, fn, wait) != 0)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "cannot start a thread");
    pause_briefly();
    tp_check_gate_open(wait->gate);
    pthread_join(thread, NULL);
    TP_RETURN_IF_ERROR(wait->error);
    if (wait->returned_before_open)
        return tp_check_failure("%s returned while the work queued before it was held", what);
    return NULL;
}

/* Counts the calls of a host callback; read by the checker once the stream is synchronized. */
static void count_call(void *arg) {
    atomic_int *calls = arg;
    atomic_fetch_add(calls, 1);
}

static tp_status_t *queue_count(tp_check_t *check, void *stream, atomic_int *calls) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    check->def->host_callback(check->devices[0]->handle, stream, count_call, calls, &status);
    return tp_plugin_status_check(&status, "host_callback");
}

/* Reads the buffer back on `stream` after everything is synchronized, so that only the bytes,
 * not the order of the read, are judged here. */
static tp_status_t *read_back(tp_check_t *check, order_setup_t *setup, void *stream,
                              const char *what) {
    TP_RETURN_IF_ERROR(tp_check_synchronize(check, 0, stream));
    TP_RETURN_IF_ERROR(
        tp_check_to_host(check, 0, stream, setup->back, setup->mem, 0, ORDER_BYTES));
    TP_RETURN_IF_ERROR(tp_check_synchronize(check, 0, stream));
    return expect_written(setup, what);
}

/* Stream 0, held, writes and records the event; stream 1 waits for the event, then calls back
 * (a host callback sees the stream's progress whatever its copies do). */
static tp_status_t *event_steps(tp_check_t *check, order_setup_t *setup, void *event) {
    void *handle = check->devices[0]->handle;
    const tp_device_type_def_t *def = check->def;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    TP_RETURN_IF_ERROR(tp_check_to_device(check, 0, setup->streams[0], setup->mem, 0,
                                          setup->written, ORDER_BYTES));
    def->event_record(handle, setup->streams[0], event, &status);
    TP_RETURN_IF_ERROR(tp_plugin_status_check(&status, "event_record"));
    if (def->event_query(handle, event) != TP_EVENT_PENDING)
        return tp_check_failure("event_query said the event was complete while the work "
                                "recorded before it was held");
    def->stream_wait_event(handle, setup->streams[1], event, &status);
    TP_RETURN_IF_ERROR(tp_plugin_status_check(&status, "stream_wait_event"));
    atomic_int calls = 0;
    TP_RETURN_IF_ERROR(queue_count(check, setup->streams[1], &calls));
    pause_briefly();
    if (atomic_load(&calls) != 0)
        return tp_check_failure("work queued on another stream after stream_wait_event ran "
                                "while the work before the event was held");
    if (def->event_synchronize != NULL) {
        host_wait_t wait = {check, NULL, event, &setup->gate, false, NULL};
        TP_RETURN_IF_ERROR(wait_across_gate(&wait, wait_for_event, "event_synchronize"));
    }
    tp_check_gate_open(&setup->gate);
    TP_RETURN_IF_ERROR(tp_check_synchronize(check, 0, setup->streams[1]));
    if (atomic_load(&calls) != 1)
        return tp_check_failure("a host callback ran %d times by the time its stream was "
                                "synchronized", atomic_load(&calls));
    TP_RETURN_IF_ERROR(tp_check_synchronize(check, 0, setup->streams[0]));
    tp_event_state_t state = def->event_query(handle, event);
    if (state != TP_EVENT_COMPLETE)
        return tp_check_failure("event_query says %s once its stream is synchronized",
                                state == TP_EVENT_PENDING ? "pending" : "error");
    return read_back(check, setup, setup->streams[1], "a read after the event");
}

tp_status_t *tp_check_events(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 events", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    const tp_device_type_def_t *def = check->def;
    if (def->event_create == NULL) {
        tp_check_not_applicable(check, "no events: the runtime orders streams by synchronizing");
        return NULL;
    }
    if (tp_check_synchronous(check)) {
        synchronous_not_applicable(check, "an event to wait for");
        return NULL;
    }
    order_setup_t setup;
    error = order_open(check, 2, &setup);
    if (error == NULL && !setup.gate.held)
        error = not_held(check, &setup.gate, "events wait for the work recorded before them");
    void *event = NULL;
    if (error == NULL) {
        tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
        def->event_create(check->devices[0]->handle, &event, &status);
        error = tp_plugin_status_check(&status, "event_create");
    }
    if (error == NULL) error = event_steps(check, &setup, event);
    error = order_close(check, &setup, error);
    if (event != NULL) def->event_destroy(check->devices[0]->handle, event);
    TP_RETURN_IF_ERROR(error);
    tp_check_detail(check, "record, query, another stream's wait%s waited for held work; the "
                    "event completed without an error",
                    def->event_synchronize != NULL ? " and event_synchronize" : "");
    return NULL;
}

/* Holds the stream, queues a write and a counted callback, and has `fn` wait across the gate:
 * when it returns, the callback must have run and the bytes must be there. */
static tp_status_t *held_wait(tp_check_t *check, order_setup_t *setup, void *(*fn)(void *),
                              const char *what) {
    void *stream = setup->streams[0];
    atomic_int calls = 0;
    if (!setup->gate.held) return not_held(check, &setup->gate, "host waits wait for queued work");
    TP_RETURN_IF_ERROR(
        tp_check_to_device(check, 0, stream, setup->mem, 0, setup->written, ORDER_BYTES));
    TP_RETURN_IF_ERROR(queue_count(check, stream, &calls));
    host_wait_t wait = {check, stream, NULL, &setup->gate, false, NULL};
    TP_RETURN_IF_ERROR(wait_across_gate(&wait, fn, what));
    if (atomic_load(&calls) != 1)
        return tp_check_failure("a host callback queued before %s had run %d times when it "
                                "returned", what, atomic_load(&calls));
    return read_back(check, setup, stream, what);
}

tp_status_t *tp_check_host_waits(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 host waits", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    const tp_device_type_def_t *def = check->def;
    if (tp_check_synchronous(check)) {
        synchronous_not_applicable(check, "a host wait to wait for");
        return NULL;
    }
    order_setup_t setup;
    error = order_open(check, 1, &setup);
    if (error == NULL) error = held_wait(check, &setup, wait_for_stream, "stream_synchronize");
    if (error == NULL && def->device_synchronize != NULL) {
        /* Held again, by a second gate, for device_synchronize. */
        tp_check_gate_destroy(&setup.gate);
        memset(setup.back, UNTOUCHED, ORDER_BYTES);
        error = tp_check_gate_close(check, 0, setup.streams[0], &setup.gate);
        if (error == NULL)
            error = held_wait(check, &setup, wait_for_device, "device_synchronize");
    }
    error = order_close(check, &setup, error);
    TP_RETURN_IF_ERROR(error);
    tp_check_detail(check, "stream_synchronize%s waited for held work, a host callback before "
                    "it had run", def->device_synchronize != NULL ? " and device_synchronize" : "");
    return NULL;
}
