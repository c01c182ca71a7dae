/* An asynchronous device for the conformance check's tests, type QDEV: two devices of 64 MiB of
 * host memory each, a queue thread per stream that runs copies, kernels, event records, event
 * waits and host callbacks in order, and a Relu kernel for float32 and float64.
 *
 * Built four times: as it is (every check passes), and with one defect each, chosen by
 * QUEUED_FAULT at compile time, that the check must catch:
 *   QUEUED_FAULT_KERNEL  Relu halves negative inputs instead of zeroing them (float32 only)
 *   QUEUED_FAULT_EVENT   an event is complete as soon as it is recorded, and waits are no-ops
 *   QUEUED_FAULT_COPY    memcpy_device_to_host copies at once, ignoring its stream
 *   QUEUED_FAULT_STATUS  Relu ignores the errors of the host functions it calls
 *   QUEUED_FAULT_CRASH   memcpy_device_to_device aborts the process */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorplug/plugin.h"

#define QUEUED_FAULT_NONE 0
#define QUEUED_FAULT_KERNEL 1
#define QUEUED_FAULT_EVENT 2
#define QUEUED_FAULT_COPY 3
#define QUEUED_FAULT_STATUS 4
#define QUEUED_FAULT_CRASH 5
#ifndef QUEUED_FAULT
#define QUEUED_FAULT QUEUED_FAULT_NONE
#endif

enum { DEVICES = 2, ALIGNMENT = 64 };
static const uint64_t device_memory = UINT64_C(64) << 20;

static const tp_host_api_t *host;

typedef struct device {
    int32_t ordinal;
    pthread_mutex_t mutex;
    uint64_t used;
} device_t;

/* ---- Memory: host memory with a header that remembers the size ----------------------------- */

static void allocate(void *handle, uint64_t size, void **out_mem, tp_plugin_status_t *status) {
    device_t *device = handle;
    pthread_mutex_lock(&device->mutex);
    bool fits = size <= device_memory - device->used;
    if (fits) device->used += size;
    pthread_mutex_unlock(&device->mutex);
    unsigned char *block = fits ? aligned_alloc(ALIGNMENT, ALIGNMENT + (size + 63) / 64 * 64)
                                : NULL;
    if (block == NULL) {
        if (fits) {
            pthread_mutex_lock(&device->mutex);
            device->used -= size;
            pthread_mutex_unlock(&device->mutex);
        }
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "QDEV:%d: cannot allocate %llu bytes",
                         (int)device->ordinal, (unsigned long long)size);
        return;
    }
    memcpy(block, &size, sizeof size);
    *out_mem = block + ALIGNMENT;
}

static void deallocate(void *handle, void *mem) {
    device_t *device = handle;
    unsigned char *block = (unsigned char *)mem - ALIGNMENT;
    uint64_t size;
    memcpy(&size, block, sizeof size);
    pthread_mutex_lock(&device->mutex);
    device->used -= size;
    pthread_mutex_unlock(&device->mutex);
    free(block);
}

static void memory_usage(void *handle, uint64_t *free_bytes, uint64_t *total_bytes) {
    device_t *device = handle;
    pthread_mutex_lock(&device->mutex);
    *free_bytes = device_memory - device->used;
    pthread_mutex_unlock(&device->mutex);
    *total_bytes = device_memory;
}

/* ---- Streams: a queue thread each ------------------------------------------------------------ */

typedef struct command {
    struct command *next;
    void (*run)(void *payload);
    unsigned char payload[];
} command_t;

typedef struct stream {
    pthread_t thread;
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    command_t *head, *tail;
    bool busy, stopping;
} stream_t;

static void *run_queue(void *arg) {
    stream_t *stream = arg;
    pthread_mutex_lock(&stream->mutex);
    for (;;) {
        while (stream->head == NULL && !stream->stopping)
            pthread_cond_wait(&stream->changed, &stream->mutex);
        if (stream->head == NULL) break;
        command_t *command = stream->head;
        stream->head = command->next;
        if (stream->head == NULL) stream->tail = NULL;
        stream->busy = true;
        pthread_mutex_unlock(&stream->mutex);
        command->run(command->payload);
        free(command);
        pthread_mutex_lock(&stream->mutex);
        stream->busy = false;
        pthread_cond_broadcast(&stream->changed);
    }
    pthread_mutex_unlock(&stream->mutex);
    return NULL;
}

static void enqueue(void *handle, void (*run)(void *), const void *payload, size_t size,
                    tp_plugin_status_t *status) {
    stream_t *stream = handle;
    command_t *command = malloc(sizeof *command + size);
    if (command == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "QDEV: out of host memory");
        return;
    }
    command->next = NULL;
    command->run = run;
    memcpy(command->payload, payload, size);
    pthread_mutex_lock(&stream->mutex);
    if (stream->tail != NULL)
        stream->tail->next = command;
    else
        stream->head = command;
    stream->tail = command;
    pthread_cond_broadcast(&stream->changed);
    pthread_mutex_unlock(&stream->mutex);
}

static void stream_create(void *device, void **out_stream, tp_plugin_status_t *status) {
    (void)device;
    stream_t *stream = calloc(1, sizeof *stream);
    if (stream == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "QDEV: out of host memory");
        return;
    }
    pthread_mutex_init(&stream->mutex, NULL);
    pthread_cond_init(&stream->changed, NULL);
    if (pthread_create(&stream->thread, NULL, run_queue, stream) != 0) {
        free(stream);
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "QDEV: cannot start a queue thread");
        return;
    }
    *out_stream = stream;
}

static void synchronize(void *device, void *handle, tp_plugin_status_t *status) {
    (void)device;
    (void)status;
    stream_t *stream = handle;
    pthread_mutex_lock(&stream->mutex);
    while (stream->head != NULL || stream->busy) pthread_cond_wait(&stream->changed, &stream->mutex);
    pthread_mutex_unlock(&stream->mutex);
}

static void stream_destroy(void *device, void *handle) {
    (void)device;
    stream_t *stream = handle;
    pthread_mutex_lock(&stream->mutex);
    stream->stopping = true;
    pthread_cond_broadcast(&stream->changed);
    pthread_mutex_unlock(&stream->mutex);
    pthread_join(stream->thread, NULL);
    pthread_mutex_destroy(&stream->mutex);
    pthread_cond_destroy(&stream->changed);
    free(stream);
}

/* ---- Copies ---------------------------------------------------------------------------------- */

typedef struct copy {
    void *target;
    const void *source;
    uint64_t size;
} copy_t;

static void run_copy(void *payload) {
    const copy_t *copy = payload;
    memcpy(copy->target, copy->source, copy->size);
}

static void to_device(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                      const void *src, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    copy_t copy = {(char *)dst_mem + dst_offset, src, size};
    enqueue(stream, run_copy, &copy, sizeof copy, status);
}

static void to_host(void *device, void *stream, void *dst, const void *src_mem,
                    uint64_t src_offset, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    copy_t copy = {dst, (const char *)src_mem + src_offset, size};
#if QUEUED_FAULT == QUEUED_FAULT_COPY
    (void)stream;
    (void)status;
    run_copy(&copy);
#else
    enqueue(stream, run_copy, &copy, sizeof copy, status);
#endif
}

static void within_device(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                          const void *src_mem, uint64_t src_offset, uint64_t size,
                          tp_plugin_status_t *status) {
    (void)device;
    copy_t copy = {(char *)dst_mem + dst_offset, (const char *)src_mem + src_offset, size};
#if QUEUED_FAULT == QUEUED_FAULT_CRASH
    abort();
#endif
    enqueue(stream, run_copy, &copy, sizeof copy, status);
}

/* ---- Events and callbacks -------------------------------------------------------------------- */

typedef struct event {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    tp_event_state_t state;
} event_t;

static void event_create(void *device, void **out_event, tp_plugin_status_t *status) {
    (void)device;
    event_t *event = calloc(1, sizeof *event);
    if (event == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "QDEV: out of host memory");
        return;
    }
    pthread_mutex_init(&event->mutex, NULL);
    pthread_cond_init(&event->changed, NULL);
    event->state = TP_EVENT_COMPLETE;
    *out_event = event;
}

static void event_destroy(void *device, void *handle) {
    (void)device;
    event_t *event = handle;
    pthread_mutex_destroy(&event->mutex);
    pthread_cond_destroy(&event->changed);
    free(event);
}

static void set_state(event_t *event, tp_event_state_t state) {
    pthread_mutex_lock(&event->mutex);
    event->state = state;
    pthread_cond_broadcast(&event->changed);
    pthread_mutex_unlock(&event->mutex);
}

#if QUEUED_FAULT != QUEUED_FAULT_EVENT
static void complete_event(void *payload) { set_state(*(event_t **)payload, TP_EVENT_COMPLETE); }

static void wait_event(event_t *event) {
    pthread_mutex_lock(&event->mutex);
    while (event->state == TP_EVENT_PENDING) pthread_cond_wait(&event->changed, &event->mutex);
    pthread_mutex_unlock(&event->mutex);
}

static void run_wait(void *payload) { wait_event(*(event_t **)payload); }
#endif

static void event_record(void *device, void *stream, void *handle, tp_plugin_status_t *status) {
    (void)device;
#if QUEUED_FAULT == QUEUED_FAULT_EVENT
    (void)stream;
    (void)status;
    set_state(handle, TP_EVENT_COMPLETE);
#else
    set_state(handle, TP_EVENT_PENDING);
    enqueue(stream, complete_event, &handle, sizeof handle, status);
#endif
}

static void stream_wait_event(void *device, void *stream, void *handle,
                              tp_plugin_status_t *status) {
    (void)device;
#if QUEUED_FAULT == QUEUED_FAULT_EVENT
    (void)stream;
    (void)handle;
    (void)status;
#else
    enqueue(stream, run_wait, &handle, sizeof handle, status);
#endif
}

static tp_event_state_t event_query(void *device, void *handle) {
    (void)device;
    event_t *event = handle;
    pthread_mutex_lock(&event->mutex);
    tp_event_state_t state = event->state;
    pthread_mutex_unlock(&event->mutex);
    return state;
}

static void event_synchronize(void *device, void *handle, tp_plugin_status_t *status) {
    (void)device;
    (void)status;
#if QUEUED_FAULT == QUEUED_FAULT_EVENT
    (void)handle;
#else
    wait_event(handle);
#endif
}

typedef struct callback {
    void (*fn)(void *arg);
    void *arg;
} callback_t;

static void run_callback(void *payload) {
    const callback_t *callback = payload;
    callback->fn(callback->arg);
}

static void host_callback(void *device, void *stream, void (*fn)(void *arg), void *arg,
                          tp_plugin_status_t *status) {
    (void)device;
    callback_t callback = {fn, arg};
    enqueue(stream, run_callback, &callback, sizeof callback, status);
}

/* ---- Devices --------------------------------------------------------------------------------- */

static int32_t device_count(void *type_state, tp_plugin_status_t *status) {
    (void)type_state;
    (void)status;
    return DEVICES;
}

static void device_init(void *type_state, int32_t ordinal, tp_device_info_t *info,
                        void **out_device, tp_plugin_status_t *status) {
    (void)type_state;
    device_t *device = calloc(1, sizeof *device);
    if (device == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "QDEV: out of host memory");
        return;
    }
    device->ordinal = ordinal;
    pthread_mutex_init(&device->mutex, NULL);
    info->hardware_name = "Queued Test Device";
    info->vendor = "tensorplug tests";
    info->memory_bytes = device_memory;
    *out_device = device;
}

static void device_release(void *handle) {
    device_t *device = handle;
    pthread_mutex_destroy(&device->mutex);
    free(device);
}

/* ---- The Relu kernel ------------------------------------------------------------------------- */

typedef struct relu {
    const void *x;
    void *y;
    int64_t count;
    tp_dtype_t dtype;
} relu_t;

static void run_relu(void *payload) {
    const relu_t *relu = payload;
    if (relu->dtype == TP_FLOAT64) {
        const double *x = relu->x;
        double *y = relu->y;
        for (int64_t i = 0; i < relu->count; i++) y[i] = x[i] > 0 ? x[i] : 0;
        return;
    }
    const float *x = relu->x;
    float *y = relu->y;
    for (int64_t i = 0; i < relu->count; i++) {
#if QUEUED_FAULT == QUEUED_FAULT_KERNEL
        y[i] = x[i] > 0 ? x[i] : x[i] * 0.5f;
#else
        y[i] = x[i] > 0 ? x[i] : 0;
#endif
    }
}

static void relu_compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
    host->kernel_input(context, 0, &x, status);
    host->kernel_output(context, 0, &y, status);
#if QUEUED_FAULT == QUEUED_FAULT_STATUS
    host->status_set(status, TP_OK, "%s", "");
#endif
    if (host->status_code(status) != TP_OK || x.num_elements == 0) return;
    relu_t relu = {(const char *)x.mem + x.offset, (char *)y.mem + y.offset, x.num_elements,
                   x.dtype};
    enqueue(host->kernel_stream(context), run_relu, &relu, sizeof relu, status);
}

static void init(const tp_host_api_t *host_api, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    host = host_api;
    const tp_device_type_def_t def = {
        .struct_size = sizeof def,
        .type = "QDEV",
        .priority = 100,
        .device_count = device_count,
        .device_init = device_init,
        .device_release = device_release,
        .allocate = allocate,
        .deallocate = deallocate,
        .memory_usage = memory_usage,
        .stream_create = stream_create,
        .stream_destroy = stream_destroy,
        .stream_synchronize = synchronize,
        .memcpy_host_to_device = to_device,
        .memcpy_device_to_host = to_host,
        .memcpy_device_to_device = within_device,
        .event_create = event_create,
        .event_destroy = event_destroy,
        .event_record = event_record,
        .stream_wait_event = stream_wait_event,
        .event_query = event_query,
        .event_synchronize = event_synchronize,
        .host_callback = host_callback,
    };
    host->register_device_type(registrar, &def, status);
    static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    const tp_type_constraint_t constraint = {sizeof constraint, "T", floats, 2};
    const tp_kernel_def_t relu = {.struct_size = sizeof relu, .op = "Relu", .device_type = "QDEV",
                                  .constraints = &constraint, .num_constraints = 1,
                                  .compute = relu_compute};
    host->register_kernel(registrar, &relu, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "queued", "1.0.0", init};
    return &descriptor;
}
