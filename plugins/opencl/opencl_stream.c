/* SPDX-License-Identifier: Apache-2.0 */
/* Streams, copies, events and host callbacks on OpenCL command queues.
 *
 * A command that fails on the device shows only as a negative execution status of its
 * cl_event. So every command the plug-in queues keeps its event in its stream's pending list;
 * event_record moves that list into the event, with a marker behind it, and the event reports
 * the first of its commands that failed. stream_synchronize reports those no event took. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_device.h"

/* ---- Pending commands ------------------------------------------------------------------------ */

static void release_commands(opencl_commands_t *commands) {
    for (size_t i = 0; i < commands->count; i++) {
        clReleaseEvent(commands->items[i].event);
        free(commands->items[i].flag);
        free(commands->items[i].record);
    }
    free(commands->items);
    *commands = (opencl_commands_t){0};
}

/* The first command that failed on the device, or NULL; `code` is its status. */
static const opencl_command_t *first_failure(const opencl_commands_t *commands, cl_int *code) {
    for (size_t i = 0; i < commands->count; i++) {
        cl_int state = CL_COMPLETE;
        cl_int error = clGetEventInfo(commands->items[i].event,
                                      CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state,
                                      NULL);
        if (error != CL_SUCCESS) state = error;
        if (state == CL_COMPLETE && ((commands->items[i].flag != NULL &&
                                      *commands->items[i].flag != 0) ||
                                     (commands->items[i].record != NULL &&
                                      commands->items[i].record[0] != 0)))
            state = CL_INVALID_VALUE; /* the device's check failed: the failure text tells */
        if (state < 0) {
            *code = state;
            return &commands->items[i];
        }
    }
    return NULL;
}

/* The failure's message, and its code: a check the device made is the op's input at fault,
 * exhausted resources are the caller's to retry, anything else is a fault. */
static tp_code_t describe_failure(const opencl_device_t *device,
                                  const opencl_command_t *command, cl_int code, char *message,
                                  size_t capacity) {
    char buffer[32];
    if (command->failure != NULL && command->flag != NULL && *command->flag != 0) {
        snprintf(message, capacity, "%s on GPU:%d (%s): %s", command->what,
                 (int)device->ordinal, device->name, command->failure);
        return TP_INVALID_ARGUMENT;
    }
    if (command->describe != NULL && command->record != NULL && command->record[0] != 0) {
        int used = snprintf(message, capacity, "%s on GPU:%d (%s): ", command->what,
                            (int)device->ordinal, device->name);
        if (used >= 0 && (size_t)used < capacity)
            command->describe(command->record, message + used, capacity - (size_t)used);
        return TP_INVALID_ARGUMENT;
    }
    snprintf(message, capacity, "%s on GPU:%d (%s) failed on the device: %s", command->what,
             (int)device->ordinal, device->name, opencl_error_name(code, buffer, sizeof buffer));
    return code == CL_OUT_OF_RESOURCES || code == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                   code == CL_OUT_OF_HOST_MEMORY
               ? TP_RESOURCE_EXHAUSTED
               : TP_INTERNAL;
}

/* Keeps `command` with the stream's pending ones; false when there is no room. */
static bool keep_command(opencl_stream_t *stream, opencl_command_t command) {
    pthread_mutex_lock(&stream->mutex);
    opencl_commands_t *pending = &stream->pending;
    if (pending->count == pending->capacity) {
        size_t capacity = pending->capacity == 0 ? 16 : pending->capacity * 2;
        opencl_command_t *items = realloc(pending->items, capacity * sizeof *items);
        if (items != NULL) {
            pending->items = items;
            pending->capacity = capacity;
        }
    }
    bool kept = pending->count < pending->capacity;
    if (kept) pending->items[pending->count++] = command;
    pthread_mutex_unlock(&stream->mutex);
    return kept;
}

void opencl_stream_track(opencl_stream_t *stream, cl_event event, const char *what,
                         tp_plugin_status_t *status) {
    if (keep_command(stream, (opencl_command_t){.event = event, .what = what})) return;
    /* Nowhere to keep its outcome: learn it now rather than lose a failure. */
    clWaitForEvents(1, &event);
    clReleaseEvent(event);
    opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                            "%s on GPU:%d: out of host memory to track the command", what,
                            (int)stream->device->ordinal);
}

bool opencl_stream_queued(opencl_stream_t *stream, const char *what, const char *call,
                         cl_int error, cl_event event, tp_plugin_status_t *status) {
    if (error != CL_SUCCESS) {
        opencl_fail(status, stream->device, what, call, error);
        return false;
    }
    opencl_stream_track(stream, event, what, status);
    return opencl_host->status_code(status) == TP_OK;
}

void opencl_stream_check_flag(opencl_stream_t *stream, cl_mem flag_mem, const char *what,
                              const char *failure, tp_plugin_status_t *status) {
    int32_t *flag = calloc(1, sizeof *flag);
    if (flag == NULL) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "%s on GPU:%d: out of host memory to check the result", what,
                                (int)stream->device->ordinal);
        return;
    }
    cl_event event;
    cl_int error = clEnqueueReadBuffer(stream->queue, flag_mem, CL_FALSE, 0, sizeof *flag, flag,
                                       0, NULL, &event);
    if (error != CL_SUCCESS) {
        free(flag);
        opencl_fail(status, stream->device, what, "clEnqueueReadBuffer", error);
        return;
    }
    opencl_command_t command = {.event = event, .what = what, .flag = flag, .failure = failure};
    if (keep_command(stream, command)) return;
    /* Nowhere to keep it: learn the outcome now rather than lose it. */
    clWaitForEvents(1, &event);
    clReleaseEvent(event);
    if (*flag != 0)
        opencl_host->status_set(status, TP_INVALID_ARGUMENT, "%s on GPU:%d (%s): %s", what,
                                (int)stream->device->ordinal, stream->device->name, failure);
    free(flag);
}

void opencl_stream_check_record(opencl_stream_t *stream, cl_mem record_mem, const char *what,
                                opencl_describe_fn describe, tp_plugin_status_t *status) {
    int64_t *record = calloc(OPENCL_RECORD_SIZE, sizeof *record);
    if (record == NULL) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "%s on GPU:%d: out of host memory to check the result", what,
                                (int)stream->device->ordinal);
        return;
    }
    cl_event event;
    cl_int error = clEnqueueReadBuffer(stream->queue, record_mem, CL_FALSE, 0,
                                       OPENCL_RECORD_SIZE * sizeof *record, record, 0, NULL,
                                       &event);
    if (error != CL_SUCCESS) {
        free(record);
        opencl_fail(status, stream->device, what, "clEnqueueReadBuffer", error);
        return;
    }
    opencl_command_t command = {.event = event, .what = what, .record = record,
                                .describe = describe};
    if (keep_command(stream, command)) return;
    /* Nowhere to keep it: learn the outcome now rather than lose it. */
    clWaitForEvents(1, &event);
    clReleaseEvent(event);
    if (record[0] != 0) {
        char message[640];
        describe_failure(stream->device, &command, CL_INVALID_VALUE, message, sizeof message);
        opencl_host->status_set(status, TP_INVALID_ARGUMENT, "%s", message);
    }
    free(record);
}

/* ---- Streams --------------------------------------------------------------------------------- */

static void stream_create(void *handle, void **out_stream, tp_plugin_status_t *status) {
    opencl_device_t *device = handle;
    opencl_stream_t *stream = calloc(1, sizeof *stream);
    if (stream == NULL) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED, "GPU:%d: out of host memory",
                                (int)device->ordinal);
        return;
    }
    cl_int error;
    stream->queue = clCreateCommandQueue(device->context, device->id, 0, &error);
    if (stream->queue == NULL || error != CL_SUCCESS) {
        opencl_fail(status, device, "stream_create", "clCreateCommandQueue", error);
        free(stream);
        return;
    }
    stream->device = device;
    pthread_mutex_init(&stream->mutex, NULL);
    *out_stream = stream;
}

static void stream_destroy(void *device, void *handle) {
    (void)device;
    opencl_stream_t *stream = handle;
    clFinish(stream->queue);
    release_commands(&stream->pending);
    clReleaseCommandQueue(stream->queue);
    pthread_mutex_destroy(&stream->mutex);
    free(stream);
}

static void stream_synchronize(void *device, void *handle, tp_plugin_status_t *status) {
    (void)device;
    opencl_stream_t *stream = handle;
    cl_int error = clFinish(stream->queue);
    pthread_mutex_lock(&stream->mutex);
    opencl_commands_t done = stream->pending;
    stream->pending = (opencl_commands_t){0};
    pthread_mutex_unlock(&stream->mutex);
    cl_int code;
    const opencl_command_t *failed = first_failure(&done, &code);
    if (failed != NULL) {
        char message[512];
        tp_code_t failure = describe_failure(stream->device, failed, code, message,
                                             sizeof message);
        opencl_host->status_set(status, failure, "%s", message);
    } else if (error != CL_SUCCESS) {
        opencl_fail(status, stream->device, "stream_synchronize", "clFinish", error);
    }
    release_commands(&done);
}

/* ---- Copies ---------------------------------------------------------------------------------- */

static void memcpy_h2d(void *device, void *handle, void *dst_mem, uint64_t dst_offset,
                       const void *src, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    opencl_stream_t *stream = handle;
    if (size == 0) return;
    cl_event event;
    /* Not blocking: the runtime keeps `src` alive and unchanged until the copy is done. */
    cl_int error = clEnqueueWriteBuffer(stream->queue, dst_mem, CL_FALSE, (size_t)dst_offset,
                                        (size_t)size, src, 0, NULL, &event);
    opencl_stream_queued(stream, "memcpy_host_to_device", "clEnqueueWriteBuffer", error, event,
                         status);
}

static void memcpy_d2h(void *device, void *handle, void *dst, const void *src_mem,
                       uint64_t src_offset, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    opencl_stream_t *stream = handle;
    if (size == 0) return;
    cl_event event;
    cl_int error = clEnqueueReadBuffer(stream->queue, (cl_mem)(uintptr_t)src_mem, CL_FALSE,
                                       (size_t)src_offset, (size_t)size, dst, 0, NULL, &event);
    opencl_stream_queued(stream, "memcpy_device_to_host", "clEnqueueReadBuffer", error, event,
                         status);
}

static void memcpy_d2d(void *device, void *handle, void *dst_mem, uint64_t dst_offset,
                       const void *src_mem, uint64_t src_offset, uint64_t size,
                       tp_plugin_status_t *status) {
    (void)device;
    opencl_stream_t *stream = handle;
    if (size == 0) return;
    cl_event event;
    cl_int error = clEnqueueCopyBuffer(stream->queue, (cl_mem)(uintptr_t)src_mem, dst_mem,
                                       (size_t)src_offset, (size_t)dst_offset, (size_t)size, 0,
                                       NULL, &event);
    opencl_stream_queued(stream, "memcpy_device_to_device", "clEnqueueCopyBuffer", error, event,
                         status);
}

/* A copy to another OpenCL device. Devices of one platform share a context, whose buffers any
 * of its devices can use: the copy is queued on the source's stream and stays on the device
 * side. Between platforms the bytes go through the host, with the host waiting. */
static void memcpy_peer(void *device, void *handle, void *dst_device, void *dst_mem,
                        uint64_t dst_offset, const void *src_mem, uint64_t src_offset,
                        uint64_t size, tp_plugin_status_t *status) {
    opencl_stream_t *stream = handle;
    opencl_device_t *destination = dst_device;
    (void)device;
    if (size == 0) return;
    if (destination->context == stream->device->context) {
        memcpy_d2d(device, handle, dst_mem, dst_offset, src_mem, src_offset, size, status);
        return;
    }
    void *staging = malloc((size_t)size);
    if (staging == NULL) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "memcpy_peer from GPU:%d to GPU:%d: out of host memory for %llu "
                                "bytes", (int)stream->device->ordinal,
                                (int)destination->ordinal, (unsigned long long)size);
        return;
    }
    cl_int error = clEnqueueReadBuffer(stream->queue, (cl_mem)(uintptr_t)src_mem, CL_TRUE,
                                       (size_t)src_offset, (size_t)size, staging, 0, NULL, NULL);
    if (error != CL_SUCCESS) {
        opencl_fail(status, stream->device, "memcpy_peer", "clEnqueueReadBuffer", error);
    } else {
        cl_command_queue queue =
            clCreateCommandQueue(destination->context, destination->id, 0, &error);
        if (queue != NULL && error == CL_SUCCESS) {
            error = clEnqueueWriteBuffer(queue, dst_mem, CL_TRUE, (size_t)dst_offset,
                                         (size_t)size, staging, 0, NULL, NULL);
            clReleaseCommandQueue(queue);
        }
        if (error != CL_SUCCESS)
            opencl_fail(status, destination, "memcpy_peer", "clEnqueueWriteBuffer", error);
    }
    free(staging);
}

/* ---- Events ---------------------------------------------------------------------------------- */

typedef struct opencl_event {
    pthread_mutex_t mutex; /* guards everything below */
    const opencl_device_t *device;
    cl_event marker;            /* NULL: never recorded, or settled */
    opencl_commands_t covered;  /* the stream's commands before the marker */
    bool failed;
    tp_code_t failure_code;
    char failure[512];
} opencl_event_t;

static void event_create(void *handle, void **out_event, tp_plugin_status_t *status) {
    opencl_device_t *device = handle;
    opencl_event_t *event = calloc(1, sizeof *event);
    if (event == NULL) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED, "GPU:%d: out of host memory",
                                (int)device->ordinal);
        return;
    }
    pthread_mutex_init(&event->mutex, NULL);
    event->device = device;
    *out_event = event;
}

static void event_destroy(void *device, void *handle) {
    (void)device;
    opencl_event_t *event = handle;
    if (event->marker != NULL) clReleaseEvent(event->marker);
    release_commands(&event->covered);
    pthread_mutex_destroy(&event->mutex);
    free(event);
}

static void event_record(void *device, void *stream_handle, void *handle,
                         tp_plugin_status_t *status) {
    (void)device;
    opencl_stream_t *stream = stream_handle;
    opencl_event_t *event = handle;
    cl_event marker;
    pthread_mutex_lock(&stream->mutex);
    cl_int error = clEnqueueMarkerWithWaitList(stream->queue, 0, NULL, &marker);
    opencl_commands_t covered = stream->pending;
    if (error == CL_SUCCESS) stream->pending = (opencl_commands_t){0};
    pthread_mutex_unlock(&stream->mutex);
    if (error != CL_SUCCESS) {
        opencl_fail(status, stream->device, "event_record", "clEnqueueMarkerWithWaitList",
                    error);
        return;
    }
    pthread_mutex_lock(&event->mutex);
    cl_event old_marker = event->marker;
    opencl_commands_t old_covered = event->covered;
    event->marker = marker;
    event->covered = covered;
    event->failed = false;
    event->failure[0] = '\0';
    pthread_mutex_unlock(&event->mutex);
    if (old_marker != NULL) clReleaseEvent(old_marker);
    release_commands(&old_covered);
}

/* Reads the event's outcome once its marker is done, and lets go of what it held; the caller
 * holds the event's mutex. */
static tp_event_state_t settle(opencl_event_t *event) {
    if (event->marker == NULL) return event->failed ? TP_EVENT_ERROR : TP_EVENT_COMPLETE;
    cl_int state = CL_QUEUED;
    cl_int error = clGetEventInfo(event->marker, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                  sizeof state, &state, NULL);
    if (error != CL_SUCCESS) state = error;
    if (state > 0) return TP_EVENT_PENDING; /* CL_QUEUED, CL_SUBMITTED or CL_RUNNING */
    cl_int code;
    const opencl_command_t *failed = first_failure(&event->covered, &code);
    if (failed != NULL) {
        event->failure_code = describe_failure(event->device, failed, code, event->failure,
                                               sizeof event->failure);
    } else if (state < 0) {
        opencl_command_t marker = {.event = event->marker, .what = "the event's marker"};
        event->failure_code = describe_failure(event->device, &marker, state, event->failure,
                                               sizeof event->failure);
    }
    event->failed = failed != NULL || state < 0;
    clReleaseEvent(event->marker);
    event->marker = NULL;
    release_commands(&event->covered);
    return event->failed ? TP_EVENT_ERROR : TP_EVENT_COMPLETE;
}

static tp_event_state_t event_query(void *device, void *handle) {
    (void)device;
    opencl_event_t *event = handle;
    pthread_mutex_lock(&event->mutex);
    tp_event_state_t state = settle(event);
    pthread_mutex_unlock(&event->mutex);
    return state;
}

/* The event's marker, retained, or NULL when there is nothing to wait for. */
static cl_event retained_marker(opencl_event_t *event) {
    pthread_mutex_lock(&event->mutex);
    cl_event marker = event->marker;
    if (marker != NULL) clRetainEvent(marker);
    pthread_mutex_unlock(&event->mutex);
    return marker;
}

static void event_synchronize(void *device, void *handle, tp_plugin_status_t *status) {
    (void)device;
    opencl_event_t *event = handle;
    cl_event marker = retained_marker(event);
    if (marker != NULL) {
        clWaitForEvents(1, &marker); /* a failure is read from the statuses below */
        clReleaseEvent(marker);
    }
    pthread_mutex_lock(&event->mutex);
    /* A record made meanwhile may still be pending; wait for it too. */
    while (settle(event) == TP_EVENT_PENDING) {
        marker = event->marker;
        clRetainEvent(marker);
        pthread_mutex_unlock(&event->mutex);
        clWaitForEvents(1, &marker);
        clReleaseEvent(marker);
        pthread_mutex_lock(&event->mutex);
    }
    if (event->failed)
        opencl_host->status_set(status, event->failure_code, "%s", event->failure);
    pthread_mutex_unlock(&event->mutex);
}

/* A wait goes through a user event that completes when the marker is done, failed or not: a
 * stream that waits for failed work does not fail (the runtime reports the failure on the
 * values computed from it), whereas an OpenCL wait list may pass the failure on. */
static void CL_CALLBACK release_wait(cl_event marker, cl_int state, void *user_event) {
    (void)marker;
    (void)state;
    clSetUserEventStatus(user_event, CL_COMPLETE);
    clReleaseEvent(user_event);
}

static void stream_wait_event(void *device, void *stream_handle, void *handle,
                              tp_plugin_status_t *status) {
    (void)device;
    opencl_stream_t *stream = stream_handle;
    opencl_event_t *event = handle;
    pthread_mutex_lock(&event->mutex);
    bool pending = settle(event) == TP_EVENT_PENDING;
    cl_event marker = pending ? event->marker : NULL;
    if (pending) clRetainEvent(marker);
    pthread_mutex_unlock(&event->mutex);
    if (!pending) return;
    cl_int error;
    cl_event user_event = clCreateUserEvent(stream->device->context, &error);
    if (user_event == NULL || error != CL_SUCCESS) {
        clReleaseEvent(marker);
        opencl_fail(status, stream->device, "stream_wait_event", "clCreateUserEvent", error);
        return;
    }
    cl_event barrier;
    error = clEnqueueBarrierWithWaitList(stream->queue, 1, &user_event, &barrier);
    if (error != CL_SUCCESS) {
        clSetUserEventStatus(user_event, CL_COMPLETE);
        clReleaseEvent(user_event);
        clReleaseEvent(marker);
        opencl_fail(status, stream->device, "stream_wait_event", "clEnqueueBarrierWithWaitList",
                    error);
        return;
    }
    /* The callback owns the user event from here; it may run at once, on this thread. */
    error = clSetEventCallback(marker, CL_COMPLETE, release_wait, user_event);
    if (error != CL_SUCCESS) {
        clWaitForEvents(1, &marker);
        release_wait(marker, CL_COMPLETE, user_event);
    }
    clReleaseEvent(marker);
    opencl_stream_track(stream, barrier, "stream_wait_event", status);
}

/* ---- Host callbacks -------------------------------------------------------------------------- */

/* A host callback holds its stream until fn returns, as a CUDA host function does: a marker
 * before it learns when the work before it is done, and a barrier after it waits for a user
 * event that completes when fn has returned. OpenCL may run an event's callback at once on the
 * thread that sets it, and fn may block, so fn runs on the plug-in's own callback thread,
 * never on the caller's and never on the OpenCL implementation's. */
typedef struct callback {
    void (*fn)(void *arg);
    void *arg;
    cl_event returned; /* the user event the barrier waits for */
    struct callback *next;
} callback_t;

static pthread_mutex_t callbacks_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t callbacks_due = PTHREAD_COND_INITIALIZER;
static callback_t *first_due, *last_due;
static bool callback_thread_started;

/* Runs the callbacks whose work is done, in the order their work finished, for the life of the
 * process. */
static void *callback_thread(void *unused) {
    (void)unused;
    pthread_mutex_lock(&callbacks_mutex);
    for (;;) {
        while (first_due == NULL) pthread_cond_wait(&callbacks_due, &callbacks_mutex);
        callback_t *callback = first_due;
        first_due = callback->next;
        if (first_due == NULL) last_due = NULL;
        pthread_mutex_unlock(&callbacks_mutex);
        callback->fn(callback->arg);
        clSetUserEventStatus(callback->returned, CL_COMPLETE);
        clReleaseEvent(callback->returned);
        free(callback);
        pthread_mutex_lock(&callbacks_mutex);
    }
    return NULL;
}

/* OpenCL calls this once the work before the marker is done, failed or not. */
static void CL_CALLBACK callback_due(cl_event marker, cl_int state, void *payload) {
    (void)marker;
    (void)state;
    callback_t *callback = payload;
    pthread_mutex_lock(&callbacks_mutex);
    if (last_due != NULL)
        last_due->next = callback;
    else
        first_due = callback;
    last_due = callback;
    pthread_cond_signal(&callbacks_due);
    pthread_mutex_unlock(&callbacks_mutex);
}

static bool start_callback_thread(void) {
    pthread_mutex_lock(&callbacks_mutex);
    if (!callback_thread_started) {
        pthread_t thread;
        callback_thread_started = pthread_create(&thread, NULL, callback_thread, NULL) == 0;
        if (callback_thread_started) pthread_detach(thread);
    }
    bool started = callback_thread_started;
    pthread_mutex_unlock(&callbacks_mutex);
    return started;
}

static void host_callback(void *device, void *stream_handle, void (*fn)(void *arg), void *arg,
                          tp_plugin_status_t *status) {
    (void)device;
    opencl_stream_t *stream = stream_handle;
    callback_t *callback = malloc(sizeof *callback);
    if (callback == NULL || !start_callback_thread()) {
        free(callback);
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "host_callback on GPU:%d: out of host memory or threads",
                                (int)stream->device->ordinal);
        return;
    }
    cl_int error;
    cl_event returned = clCreateUserEvent(stream->device->context, &error);
    if (returned == NULL || error != CL_SUCCESS) {
        free(callback);
        opencl_fail(status, stream->device, "host_callback", "clCreateUserEvent", error);
        return;
    }
    *callback = (callback_t){fn, arg, returned, NULL};
    cl_event marker, barrier;
    error = clEnqueueMarkerWithWaitList(stream->queue, 0, NULL, &marker);
    if (error != CL_SUCCESS) {
        free(callback);
        clSetUserEventStatus(returned, CL_COMPLETE);
        clReleaseEvent(returned);
        opencl_fail(status, stream->device, "host_callback", "clEnqueueMarkerWithWaitList",
                    error);
        return;
    }
    error = clEnqueueBarrierWithWaitList(stream->queue, 1, &returned, &barrier);
    if (error != CL_SUCCESS) {
        /* fn still runs once the work is done; only the hold is lost. */
        barrier = NULL;
    }
    error = clSetEventCallback(marker, CL_COMPLETE, callback_due, callback);
    if (error != CL_SUCCESS) {
        /* Hand it over once the work is done, rather than never. */
        clWaitForEvents(1, &marker);
        callback_due(marker, CL_COMPLETE, callback);
    }
    /* The marker outlives its callback: OpenCL keeps an event while a callback is due. */
    clReleaseEvent(marker);
    if (barrier != NULL) opencl_stream_track(stream, barrier, "host_callback", status);
}

void opencl_fill_stream_functions(tp_device_type_def_t *def) {
    def->stream_create = stream_create;
    def->stream_destroy = stream_destroy;
    def->stream_synchronize = stream_synchronize;
    def->memcpy_host_to_device = memcpy_h2d;
    def->memcpy_device_to_host = memcpy_d2h;
    def->memcpy_device_to_device = memcpy_d2d;
    def->memcpy_peer = memcpy_peer;
    def->event_create = event_create;
    def->event_destroy = event_destroy;
    def->event_record = event_record;
    def->stream_wait_event = stream_wait_event;
    def->event_query = event_query;
    def->event_synchronize = event_synchronize;
    def->host_callback = host_callback;
}
