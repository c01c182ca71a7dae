/* SPDX-License-Identifier: Apache-2.0 */
/* The APU plug-in: device type "APU", its memory, streams, events and copies, and the Relu
 * kernel for float32 (Conv2D's is in apu_conv.c, those for the dtypes of ABI 1.7 in
 * apu_dtypes.c), run on the stream's queue thread. It includes tensorplug's public headers
 * alone and links nothing of the core: the reference for device vendors. */
#define _GNU_SOURCE /* secure_getenv */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apu_device.h"
#include "apu_stream.h"

const tp_host_api_t *apu_host;
apu_config_t apu_config;

static pthread_mutex_t kernel_fault_mutex = PTHREAD_MUTEX_INITIALIZER;
static int64_t kernel_launches;

/* ---- Configuration --------------------------------------------------------------------------- */

/* A decimal count, with an optional K, M or G (powers of 1024) for sizes, from 1 to `max`.
 * A malformed or out-of-range value is one warning naming the variable and the value, and
 * the default stays: a typo must not take the device away, nor pass unnoticed. Read with
 * secure_getenv, so that a setuid program ignores it. */
static void read_number(tp_registrar_t *registrar, const char *name, bool sizes, uint64_t min,
                        uint64_t max, uint64_t *value) {
    const char *text = secure_getenv(name);
    if (text == NULL || text[0] == '\0') return;
    char *end;
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, 10);
    uint64_t scale = 1;
    if (sizes && (*end == 'K' || *end == 'k')) scale = UINT64_C(1) << 10;
    if (sizes && (*end == 'M' || *end == 'm')) scale = UINT64_C(1) << 20;
    if (sizes && (*end == 'G' || *end == 'g')) scale = UINT64_C(1) << 30;
    if (scale != 1) end++;
    bool well_formed = errno == 0 && end != text && *end == '\0' && text[0] != '-' &&
                       parsed <= UINT64_MAX / scale;
    if (well_formed && parsed * scale >= min && parsed * scale <= max) {
        *value = parsed * scale;
        return;
    }
    char shown[64];
    size_t n = 0; /* the value as typed, control bytes escaped, cut short if long */
    for (const char *c = text; *c != '\0' && n + 5 < sizeof shown; c++)
        n += (size_t)snprintf(shown + n, sizeof shown - n,
                              (unsigned char)*c < 0x20 || *c == 0x7f ? "\\x%02x" : "%c",
                              (unsigned char)*c);
    apu_host->log(registrar, TP_LOG_WARNING,
                  "%s='%s' is not a %s from %llu to %llu; using the default %llu", name, shown,
                  sizes ? "size (bytes, or with K, M or G)" : "count",
                  (unsigned long long)min, (unsigned long long)max,
                  (unsigned long long)*value);
}

void apu_read_config(tp_registrar_t *registrar) {
    uint64_t devices = 1, memory = UINT64_C(1) << 30, fail_allocation = 0, fail_kernel = 0,
             fail_kernel_every = 0, latency = 0;
    read_number(registrar, "TP_APU_DEVICES", false, 0, 64, &devices);
    read_number(registrar, "TP_APU_MEMORY", true, 4096, UINT64_C(1) << 40, &memory);
    read_number(registrar, "TP_APU_FAIL_ALLOCATION", false, 0, INT64_MAX, &fail_allocation);
    read_number(registrar, "TP_APU_FAIL_KERNEL", false, 0, INT64_MAX, &fail_kernel);
    read_number(registrar, "TP_APU_FAIL_KERNEL_EVERY", false, 0, INT64_MAX, &fail_kernel_every);
    read_number(registrar, "TP_APU_LATENCY_US", false, 0, 10 * 1000 * 1000, &latency);
    apu_config = (apu_config_t){(int32_t)devices,       memory, (int64_t)fail_allocation,
                                (int64_t)fail_kernel,   latency, (int64_t)fail_kernel_every};
}

/* ---- Devices --------------------------------------------------------------------------------- */

static int32_t apu_device_count(void *type_state, tp_plugin_status_t *status) {
    (void)type_state;
    (void)status;
    return apu_config.devices;
}

static void apu_device_init(void *type_state, int32_t ordinal, tp_device_info_t *info,
                            void **out_device, tp_plugin_status_t *status) {
    (void)type_state;
    apu_device_t *device = calloc(1, sizeof *device);
    if (device == NULL) {
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED, "APU: out of host memory");
        return;
    }
    device->ordinal = ordinal;
    if (!apu_memory_init(device, status)) {
        free(device);
        return;
    }
    info->hardware_name = "Awesome Processing Unit (simulated)";
    info->vendor = "tensorplug";
    info->memory_bytes = device->arena_bytes;
    *out_device = device;
}

static void apu_device_release(void *handle) {
    apu_device_t *device = handle;
    apu_memory_release(device);
    free(device);
}

/* ---- Streams --------------------------------------------------------------------------------- */

static void apu_stream_create(void *device, void **out_stream, tp_plugin_status_t *status) {
    apu_stream_t *stream;
    if (apu_stream_start(device, &stream, status)) *out_stream = stream;
}

static void apu_stream_destroy(void *device, void *stream) {
    (void)device;
    apu_stream_stop(stream);
}

static void apu_synchronize(void *device, void *stream, tp_plugin_status_t *status) {
    (void)device;
    apu_stream_synchronize(stream, status);
}

/* ---- Copies: queued, so that they run after the work before them ----------------------------- */

typedef struct {
    void *device_mem;
    uint64_t device_offset;
    void *host; /* source or destination in host memory */
    const void *source_mem;
    uint64_t source_offset;
    uint64_t size;
} copy_t;

static bool copy_to_device(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    const copy_t *copy = payload;
    unsigned char *to = apu_translate(stream->device, copy->device_mem, copy->device_offset,
                                      copy->size);
    if (to == NULL) {
        snprintf(error, capacity, "APU:%d: copy to an address outside any allocation",
                 (int)stream->device->ordinal);
        return false;
    }
    memcpy(to, copy->host, copy->size);
    return true;
}

static bool copy_to_host(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    const copy_t *copy = payload;
    unsigned char *from = apu_translate(stream->device, copy->device_mem, copy->device_offset,
                                        copy->size);
    if (from == NULL) {
        snprintf(error, capacity, "APU:%d: copy from an address outside any allocation",
                 (int)stream->device->ordinal);
        return false;
    }
    memcpy(copy->host, from, copy->size);
    return true;
}

static bool copy_within(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    const copy_t *copy = payload;
    unsigned char *to = apu_translate(stream->device, copy->device_mem, copy->device_offset,
                                      copy->size);
    unsigned char *from = apu_translate(stream->device, copy->source_mem, copy->source_offset,
                                        copy->size);
    if (to == NULL || from == NULL) {
        snprintf(error, capacity, "APU:%d: copy outside any allocation",
                 (int)stream->device->ordinal);
        return false;
    }
    memmove(to, from, copy->size);
    return true;
}

static void apu_memcpy_h2d(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                           const void *src, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    copy_t copy = {dst_mem, dst_offset, (void *)(uintptr_t)src, NULL, 0, size};
    apu_stream_enqueue(stream, copy_to_device, &copy, sizeof copy, status);
}

static void apu_memcpy_d2h(void *device, void *stream, void *dst, const void *src_mem,
                           uint64_t src_offset, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    copy_t copy = {(void *)(uintptr_t)src_mem, src_offset, dst, NULL, 0, size};
    apu_stream_enqueue(stream, copy_to_host, &copy, sizeof copy, status);
}

static void apu_memcpy_d2d(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                           const void *src_mem, uint64_t src_offset, uint64_t size,
                           tp_plugin_status_t *status) {
    (void)device;
    copy_t copy = {dst_mem, dst_offset, NULL, src_mem, src_offset, size};
    apu_stream_enqueue(stream, copy_within, &copy, sizeof copy, status);
}

/* A copy to another APU, queued on the source's stream after the work that makes the value;
 * the destination's stream waits for it through an event the host records. */
typedef struct {
    apu_device_t *destination;
    void *dst_mem;
    uint64_t dst_offset;
    const void *src_mem;
    uint64_t src_offset;
    uint64_t size;
} peer_copy_t;

static bool copy_to_peer(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    const peer_copy_t *copy = payload;
    unsigned char *from = apu_translate(stream->device, copy->src_mem, copy->src_offset,
                                        copy->size);
    unsigned char *to = apu_translate(copy->destination, copy->dst_mem, copy->dst_offset,
                                      copy->size);
    if (to == NULL || from == NULL) {
        snprintf(error, capacity, "APU:%d to APU:%d: copy outside any allocation",
                 (int)stream->device->ordinal, (int)copy->destination->ordinal);
        return false;
    }
    memcpy(to, from, copy->size);
    return true;
}

static void apu_memcpy_peer(void *device, void *stream, void *dst_device, void *dst_mem,
                            uint64_t dst_offset, const void *src_mem, uint64_t src_offset,
                            uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    peer_copy_t copy = {dst_device, dst_mem, dst_offset, src_mem, src_offset, size};
    apu_stream_enqueue(stream, copy_to_peer, &copy, sizeof copy, status);
}

/* ---- Events ---------------------------------------------------------------------------------- */

static void apu_event_create(void *device, void **out_event, tp_plugin_status_t *status) {
    (void)device;
    apu_event_t *event = calloc(1, sizeof *event);
    if (event == NULL) {
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED, "APU: out of host memory");
        return;
    }
    pthread_mutex_init(&event->mutex, NULL);
    pthread_cond_init(&event->done, NULL);
    event->state = TP_EVENT_COMPLETE; /* never recorded: nothing to wait for */
    *out_event = event;
}

static void apu_event_destroy(void *device, void *handle) {
    (void)device;
    apu_event_t *event = handle;
    pthread_cond_destroy(&event->done);
    pthread_mutex_destroy(&event->mutex);
    free(event);
}

typedef struct {
    apu_event_t *event;
    uint64_t generation;
} event_mark_t;

/* Runs after the work queued before the record: a failure of that work since the previous
 * event is this event's to report, and no longer the stream's. */
static bool complete_event(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    (void)error;
    (void)capacity;
    const event_mark_t *mark = payload;
    char failure[sizeof mark->event->error];
    pthread_mutex_lock(&stream->mutex);
    memcpy(failure, stream->error, sizeof failure);
    stream->error[0] = '\0';
    pthread_mutex_unlock(&stream->mutex);
    uint64_t start_ns, end_ns;
    apu_stream_take_work_times(stream, &start_ns, &end_ns);
    pthread_mutex_lock(&mark->event->mutex);
    /* A later record supersedes this one: only its own generation completes the event. */
    if (mark->event->generation == mark->generation) {
        mark->event->state = failure[0] != '\0' ? TP_EVENT_ERROR : TP_EVENT_COMPLETE;
        memcpy(mark->event->error, failure, sizeof failure);
        mark->event->work_start_ns = start_ns;
        mark->event->work_end_ns = end_ns;
        pthread_cond_broadcast(&mark->event->done);
    }
    pthread_mutex_unlock(&mark->event->mutex);
    return true;
}

static void apu_event_record(void *device, void *stream, void *handle,
                             tp_plugin_status_t *status) {
    (void)device;
    apu_event_t *event = handle;
    pthread_mutex_lock(&event->mutex);
    event_mark_t mark = {event, ++event->generation};
    event->state = TP_EVENT_PENDING;
    event->error[0] = '\0';
    event->work_start_ns = event->work_end_ns = 0;
    pthread_mutex_unlock(&event->mutex);
    apu_stream_enqueue_marker(stream, complete_event, &mark, sizeof mark, status);
}

static bool event_past(const void *arg) {
    const apu_event_t *event = arg;
    return atomic_load_explicit(&event->state, memory_order_acquire) != TP_EVENT_PENDING;
}

/* Waits for the event; false, with the failure in `error`, if the work before it failed. */
static bool wait_for(apu_event_t *event, char *error, size_t capacity) {
    apu_spin_until(event_past, event);
    pthread_mutex_lock(&event->mutex);
    while (event->state == TP_EVENT_PENDING) pthread_cond_wait(&event->done, &event->mutex);
    bool failed = event->state == TP_EVENT_ERROR;
    if (failed) snprintf(error, capacity, "%s", event->error);
    pthread_mutex_unlock(&event->mutex);
    return !failed;
}

/* A wait holds the stream until the event is past, failed or not: the failure belongs to the
 * work the event followed, and the runtime reports it on the values computed from it. */
static bool wait_event(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    (void)stream;
    (void)error;
    (void)capacity;
    apu_event_t *event = *(apu_event_t **)payload;
    char failure[sizeof event->error];
    wait_for(event, failure, sizeof failure);
    return true;
}

static void apu_stream_wait_event(void *device, void *stream, void *event,
                                  tp_plugin_status_t *status) {
    (void)device;
    apu_stream_enqueue_marker(stream, wait_event, &event, sizeof event, status);
}

static tp_event_state_t apu_event_query(void *device, void *handle) {
    (void)device;
    apu_event_t *event = handle;
    pthread_mutex_lock(&event->mutex);
    tp_event_state_t state = event->state;
    pthread_mutex_unlock(&event->mutex);
    return state;
}

static void apu_event_synchronize(void *device, void *handle, tp_plugin_status_t *status) {
    (void)device;
    apu_event_t *event = handle;
    char failure[sizeof event->error];
    if (!wait_for(event, failure, sizeof failure))
        apu_host->status_set(status, TP_INTERNAL, "%s", failure);
}

/* When the device ran the work the event followed (plugin.h, 1.6). */
static void apu_event_work_times(void *device, void *handle, uint64_t *out_start_ns,
                                 uint64_t *out_end_ns, tp_plugin_status_t *status) {
    (void)device;
    apu_event_t *event = handle;
    pthread_mutex_lock(&event->mutex);
    bool past = event->state != TP_EVENT_PENDING && event->work_start_ns != 0;
    *out_start_ns = event->work_start_ns;
    *out_end_ns = event->work_end_ns;
    pthread_mutex_unlock(&event->mutex);
    if (!past)
        apu_host->status_set(status, TP_FAILED_PRECONDITION,
                             "APU: the event is not recorded or not complete yet");
}

/* ---- Host callbacks -------------------------------------------------------------------------- */

typedef struct {
    void (*fn)(void *arg);
    void *arg;
} callback_t;

static bool call_back(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    (void)stream;
    (void)error;
    (void)capacity;
    const callback_t *callback = payload;
    callback->fn(callback->arg);
    return true;
}

static void apu_host_callback(void *device, void *stream, void (*fn)(void *arg), void *arg,
                              tp_plugin_status_t *status) {
    (void)device;
    callback_t callback = {fn, arg};
    apu_stream_enqueue_marker(stream, call_back, &callback, sizeof callback, status);
}

/* ---- Kernels --------------------------------------------------------------------------------- */

int64_t apu_next_launch(bool *out_injected_failure) {
    pthread_mutex_lock(&kernel_fault_mutex);
    int64_t launch = ++kernel_launches;
    pthread_mutex_unlock(&kernel_fault_mutex);
    *out_injected_failure =
        (apu_config.fail_kernel > 0 && launch == apu_config.fail_kernel) ||
        (apu_config.fail_kernel_every > 0 && launch % apu_config.fail_kernel_every == 0);
    return launch;
}

const char *apu_fault_variable(void) {
    return apu_config.fail_kernel_every > 0 ? "TP_APU_FAIL_KERNEL_EVERY" : "TP_APU_FAIL_KERNEL";
}

/* ---- The Relu kernel ------------------------------------------------------------------------- */

typedef struct {
    void *x_mem, *y_mem;
    uint64_t x_offset, y_offset;
    int64_t count;
    bool injected_failure;
    int64_t launch;
} relu_t;

static bool run_relu(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    const relu_t *relu = payload;
    if (relu->injected_failure) {
        snprintf(error, capacity,
                 "Relu on APU:%d: injected failure of kernel launch %lld, on %lld elements "
                 "(%s)",
                 (int)stream->device->ordinal, (long long)relu->launch, (long long)relu->count,
                 apu_fault_variable());
        return false;
    }
    uint64_t bytes = (uint64_t)relu->count * sizeof(float);
    const float *x = (const float *)(void *)apu_translate(stream->device, relu->x_mem,
                                                          relu->x_offset, bytes);
    float *y = (float *)(void *)apu_translate(stream->device, relu->y_mem, relu->y_offset, bytes);
    if (x == NULL || y == NULL) {
        snprintf(error, capacity, "Relu on APU:%d: a tensor lies outside device memory",
                 (int)stream->device->ordinal);
        return false;
    }
    for (int64_t i = 0; i < relu->count; i++) y[i] = x[i] < 0 ? 0.0f : x[i];
    return true;
}

/* Runs on a host thread: reads the views and queues the work, returning before it is done. */
static void relu_compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
    apu_host->kernel_input(context, 0, &x, status);
    apu_host->kernel_output(context, 0, &y, status);
    if (apu_host->status_code(status) != TP_OK || x.num_elements == 0) return;
    relu_t relu = {x.mem, y.mem, x.offset, y.offset, x.num_elements, false, 0};
    relu.launch = apu_next_launch(&relu.injected_failure);
    apu_stream_enqueue(apu_host->kernel_stream(context), run_relu, &relu, sizeof relu, status);
}

/* ---- Registration ---------------------------------------------------------------------------- */

static void apu_init(const tp_host_api_t *host, tp_registrar_t *registrar,
                     tp_plugin_status_t *status) {
    apu_host = host;
    if (host->struct_size < offsetof(tp_host_api_t, kernel_attr_bytes)) {
        host->status_set(status, TP_FAILED_PRECONDITION,
                         "the APU needs a runtime with plug-in ABI 1.2 or later");
        return;
    }
    apu_read_config(registrar);
    const tp_device_type_def_t apu = {
        .struct_size = sizeof(tp_device_type_def_t),
        .type = "APU",
        .priority = 100,
        .device_count = apu_device_count,
        .device_init = apu_device_init,
        .device_release = apu_device_release,
        .allocate = apu_allocate,
        .deallocate = apu_deallocate,
        .memory_usage = apu_memory_usage,
        .stream_create = apu_stream_create,
        .stream_destroy = apu_stream_destroy,
        .stream_synchronize = apu_synchronize,
        .memcpy_host_to_device = apu_memcpy_h2d,
        .memcpy_device_to_host = apu_memcpy_d2h,
        .memcpy_device_to_device = apu_memcpy_d2d,
        .memcpy_peer = apu_memcpy_peer,
        .event_create = apu_event_create,
        .event_destroy = apu_event_destroy,
        .event_record = apu_event_record,
        .stream_wait_event = apu_stream_wait_event,
        .event_query = apu_event_query,
        .event_synchronize = apu_event_synchronize,
        .host_callback = apu_host_callback,
        .flags = 0, /* asynchronous: every command runs on the stream's queue thread */
        .event_work_times = apu_event_work_times,
    };
    host->register_device_type(registrar, &apu, status);
    static const tp_dtype_t float32_only[] = {TP_FLOAT32};
    const tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    const tp_kernel_def_t relu = {.struct_size = sizeof relu,
                                  .op = "Relu",
                                  .device_type = "APU",
                                  .constraints = &constraint,
                                  .num_constraints = 1,
                                  .compute = relu_compute};
    host->register_kernel(registrar, &relu, status);
    apu_register_conv(registrar, status);
    apu_register_dtype_kernels(registrar, status);
    apu_register_graph_pass(registrar, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        .struct_size = sizeof(tp_plugin_descriptor_t),
        .abi_major = TP_ABI_MAJOR,
        .abi_minor = TP_ABI_MINOR,
        .name = "apu",
        .version = TP_APU_VERSION,
        .init = apu_init,
    };
    return &descriptor;
}
