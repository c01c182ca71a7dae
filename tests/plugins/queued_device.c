/* SPDX-License-Identifier: Apache-2.0 */
/* An asynchronous device for the conformance check's tests, type QDEV: up to two devices of
 * 64 MiB of host memory each, a queue thread per stream that runs copies (within a device and
 * between the two), kernels, event records, event waits and host callbacks in order, and the
 * kernels Relu, Neg and Exp for float32 and float64.
 *
 * It follows ABI 1.4's failure contract: work that fails on the device is reported through the
 * first event recorded on its stream after it (TP_EVENT_ERROR, and event_synchronize gives the
 * message); a wait on such an event does not fail; stream_synchronize reports a failure only
 * when no event did, once.
 *
 * Settings, read from the environment at init:
 *   QDEV_DEVICES=N      how many devices are present, 0 to 2 (default 2)
 *   QDEV_FAIL_KERNEL=N  the Nth kernel launch on each device fails on the device (0: none)
 *   QDEV_FAIL_CODE=N    the tp_code_t such a failure reports (default 13, INTERNAL)
 * A stream destroyed with work still queued logs a warning: the runtime must never do that.
 *
 * Built as it is (every check passes), and with one defect each, chosen by QUEUED_FAULT at
 * compile time, that the check must catch:
 *   QUEUED_FAULT_KERNEL       Relu halves negative inputs instead of zeroing them (float32)
 *   QUEUED_FAULT_EVENT        an event is complete as soon as it is recorded; waits are no-ops
 *   QUEUED_FAULT_COPY         memcpy_device_to_host copies at once, ignoring its stream
 *   QUEUED_FAULT_STATUS       Relu ignores the errors of the host functions it calls
 *   QUEUED_FAULT_CRASH        memcpy_device_to_device aborts the process
 *   QUEUED_FAULT_NO_CALLBACK  no host_callback, and not declared synchronous: otherwise
 *                             correct, but its streams cannot be held
 *   QUEUED_FAULT_LEAKY        Relu lets negative inputs through times 1e-6 (float32)
 *   QUEUED_FAULT_SCALE        Exp is 1.00009 times too large (float32)
 *   QUEUED_FAULT_TILE         Relu reads every 8192-element tile from the first (float32)
 *   QUEUED_FAULT_NAN          Relu turns NaN into 0 (float32)
 *   QUEUED_FAULT_SIGNED_ZERO  Neg computes 0 - x, so that Neg(+0) is +0 (float32)
 *   QUEUED_FAULT_LEAK         every Relu launch takes 4 KiB of device memory it never gives
 *                             back (until the device is released)
 *   QUEUED_FAULT_CTOR_CRASH   a constructor that crashes while the plug-in is loaded
 * and twice more to be synchronous:
 *   QUEUED_SYNCHRONOUS        every call runs its work before it returns, and the device
 *                             declares TP_DEVICE_SYNCHRONOUS (correct)
 *   QUEUED_FAULT_SYNC_LIE     declares TP_DEVICE_SYNCHRONOUS, but queues its work */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
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
#define QUEUED_FAULT_NO_CALLBACK 6
#define QUEUED_FAULT_LEAKY 7
#define QUEUED_FAULT_SCALE 8
#define QUEUED_FAULT_TILE 9
#define QUEUED_FAULT_NAN 10
#define QUEUED_FAULT_SIGNED_ZERO 11
#define QUEUED_FAULT_LEAK 12
#define QUEUED_FAULT_CTOR_CRASH 13
#define QUEUED_FAULT_SYNC_LIE 14
#ifndef QUEUED_FAULT
#define QUEUED_FAULT QUEUED_FAULT_NONE
#endif
#ifndef QUEUED_SYNCHRONOUS
#define QUEUED_SYNCHRONOUS 0
#endif

enum { MAX_DEVICES = 2, ALIGNMENT = 64, TILE = 8192, LEAKED_BYTES = 4096 };
static const uint64_t device_memory = UINT64_C(64) << 20;

static const tp_host_api_t *host;
static tp_registrar_t *registrar;

static struct {
    int32_t devices;
    long long fail_kernel;
    long long fail_code;
} config = {MAX_DEVICES, 0, TP_INTERNAL};

typedef struct leaked {
    struct leaked *next;
} leaked_t;

typedef struct device {
    int32_t ordinal;
    pthread_mutex_t mutex; /* guards used, launches and leaked */
    uint64_t used;
    long long launches;
    leaked_t *leaked;
} device_t;

#if QUEUED_FAULT == QUEUED_FAULT_CTOR_CRASH
/* A crash while the loader runs the plug-in's constructors. The default action is restored
 * first, so that a sanitizer's handler does not turn the crash into an exit status. */
__attribute__((constructor)) static void crash_while_loading(void) {
    signal(SIGSEGV, SIG_DFL);
    volatile int *nowhere = NULL;
    *nowhere = 1;
}
#endif

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

/* ---- Streams: a queue thread each, and the failure no event has reported yet ---------------- */

typedef struct stream stream_t;

typedef struct command {
    struct command *next;
    void (*run)(stream_t *stream, void *payload);
    unsigned char payload[];
} command_t;

struct stream {
    pthread_t thread;
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    command_t *head, *tail;
    bool busy, stopping;
    /* The first failure of work on the stream since the last event or synchronize. */
    tp_code_t failure_code;
    char failure[256];
};

/* Called by work that fails on the device; the next event recorded on the stream, or else the
 * next synchronize, reports it. */
static void stream_fail(stream_t *stream, tp_code_t code, const char *format, ...)
    TP_PRINTF_LIKE(3, 4);
static void stream_fail(stream_t *stream, tp_code_t code, const char *format, ...) {
    pthread_mutex_lock(&stream->mutex);
    if (stream->failure_code == TP_OK) {
        va_list args;
        va_start(args, format);
        vsnprintf(stream->failure, sizeof stream->failure, format, args);
        va_end(args);
        stream->failure_code = code;
    }
    pthread_mutex_unlock(&stream->mutex);
}

/* Takes the unreported failure off the stream: TP_OK when there is none. */
static tp_code_t stream_take_failure(stream_t *stream, char *message, size_t capacity) {
    pthread_mutex_lock(&stream->mutex);
    tp_code_t code = stream->failure_code;
    if (code != TP_OK) snprintf(message, capacity, "%s", stream->failure);
    stream->failure_code = TP_OK;
    pthread_mutex_unlock(&stream->mutex);
    return code;
}

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
        command->run(stream, command->payload);
        free(command);
        pthread_mutex_lock(&stream->mutex);
        stream->busy = false;
        pthread_cond_broadcast(&stream->changed);
    }
    pthread_mutex_unlock(&stream->mutex);
    return NULL;
}

/* Queues `run` with a copy of the payload. A synchronous build runs it at once instead and
 * reports its failure on `status`, as TP_DEVICE_SYNCHRONOUS asks. */
static void enqueue(void *handle, void (*run)(stream_t *, void *), const void *payload,
                    size_t size, tp_plugin_status_t *status) {
    stream_t *stream = handle;
    command_t *command = malloc(sizeof *command + size);
    if (command == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "QDEV: out of host memory");
        return;
    }
    command->next = NULL;
    command->run = run;
    memcpy(command->payload, payload, size);
#if QUEUED_SYNCHRONOUS
    run(stream, command->payload);
    free(command);
    char message[256];
    tp_code_t code = stream_take_failure(stream, message, sizeof message);
    if (code != TP_OK) host->status_set(status, code, "%s", message);
#else
    pthread_mutex_lock(&stream->mutex);
    if (stream->tail != NULL)
        stream->tail->next = command;
    else
        stream->head = command;
    stream->tail = command;
    pthread_cond_broadcast(&stream->changed);
    pthread_mutex_unlock(&stream->mutex);
#endif
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
        pthread_mutex_destroy(&stream->mutex);
        pthread_cond_destroy(&stream->changed);
        free(stream);
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "QDEV: cannot start a queue thread");
        return;
    }
    *out_stream = stream;
}

/* Waits for the queue to drain, then reports the failure no event reported. */
static void synchronize(void *device, void *handle, tp_plugin_status_t *status) {
    (void)device;
    stream_t *stream = handle;
    pthread_mutex_lock(&stream->mutex);
    while (stream->head != NULL || stream->busy) pthread_cond_wait(&stream->changed, &stream->mutex);
    pthread_mutex_unlock(&stream->mutex);
    char message[256];
    tp_code_t code = stream_take_failure(stream, message, sizeof message);
    if (code != TP_OK) host->status_set(status, code, "%s", message);
}

static void stream_destroy(void *device, void *handle) {
    (void)device;
    stream_t *stream = handle;
    pthread_mutex_lock(&stream->mutex);
    if (stream->head != NULL || stream->busy)
        host->log(registrar, TP_LOG_WARNING, "QDEV: a stream was destroyed with work queued");
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

static void run_copy(stream_t *stream, void *payload) {
    (void)stream;
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
    run_copy(NULL, &copy);
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

/* Both devices' memory is host memory, so a copy between them is a memcpy on the source's
 * stream, after the work queued there before it. */
static void peer(void *device, void *stream, void *dst_device, void *dst_mem,
                 uint64_t dst_offset, const void *src_mem, uint64_t src_offset, uint64_t size,
                 tp_plugin_status_t *status) {
    (void)device;
    (void)dst_device;
    copy_t copy = {(char *)dst_mem + dst_offset, (const char *)src_mem + src_offset, size};
    enqueue(stream, run_copy, &copy, sizeof copy, status);
}

/* ---- Events and callbacks -------------------------------------------------------------------- */

typedef struct event {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    tp_event_state_t state;
    tp_code_t code; /* with TP_EVENT_ERROR: the failure it reports */
    char message[256];
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

static void set_state(event_t *event, tp_event_state_t state, tp_code_t code,
                      const char *message) {
    pthread_mutex_lock(&event->mutex);
    event->state = state;
    event->code = code;
    snprintf(event->message, sizeof event->message, "%s", message);
    pthread_cond_broadcast(&event->changed);
    pthread_mutex_unlock(&event->mutex);
}

#if QUEUED_FAULT != QUEUED_FAULT_EVENT
/* The event takes the stream's unreported failure, if there is one. */
static void complete_event(stream_t *stream, void *payload) {
    char message[256] = "";
    tp_code_t code = stream_take_failure(stream, message, sizeof message);
    set_state(*(event_t **)payload, code == TP_OK ? TP_EVENT_COMPLETE : TP_EVENT_ERROR, code,
              message);
}

static void wait_event(event_t *event) {
    pthread_mutex_lock(&event->mutex);
    while (event->state == TP_EVENT_PENDING) pthread_cond_wait(&event->changed, &event->mutex);
    pthread_mutex_unlock(&event->mutex);
}

/* A failed event ends the wait like a complete one: the failure is not this stream's. */
static void run_wait(stream_t *stream, void *payload) {
    (void)stream;
    wait_event(*(event_t **)payload);
}
#endif

static void event_record(void *device, void *stream, void *handle, tp_plugin_status_t *status) {
    (void)device;
#if QUEUED_FAULT == QUEUED_FAULT_EVENT
    (void)stream;
    (void)status;
    set_state(handle, TP_EVENT_COMPLETE, TP_OK, "");
#else
    set_state(handle, TP_EVENT_PENDING, TP_OK, "");
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
    event_t *event = handle;
#if QUEUED_FAULT != QUEUED_FAULT_EVENT
    wait_event(event);
#endif
    pthread_mutex_lock(&event->mutex);
    if (event->state == TP_EVENT_ERROR) host->status_set(status, event->code, "%s", event->message);
    pthread_mutex_unlock(&event->mutex);
}

#if QUEUED_FAULT != QUEUED_FAULT_NO_CALLBACK
typedef struct callback {
    void (*fn)(void *arg);
    void *arg;
} callback_t;

static void run_callback(stream_t *stream, void *payload) {
    (void)stream;
    const callback_t *callback = payload;
    callback->fn(callback->arg);
}

static void host_callback(void *device, void *stream, void (*fn)(void *arg), void *arg,
                          tp_plugin_status_t *status) {
    (void)device;
    callback_t callback = {fn, arg};
    enqueue(stream, run_callback, &callback, sizeof callback, status);
}
#endif

/* ---- Devices --------------------------------------------------------------------------------- */

static int32_t device_count(void *type_state, tp_plugin_status_t *status) {
    (void)type_state;
    (void)status;
    return config.devices;
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
    while (device->leaked != NULL) {
        leaked_t *next = device->leaked->next;
        deallocate(device, device->leaked);
        device->leaked = next;
    }
    pthread_mutex_destroy(&device->mutex);
    free(device);
}

/* ---- Kernels: Relu, Neg and Exp, element by element ------------------------------------------ */

typedef enum { RELU, NEG, EXP } unary_op_t;
static const char *const op_names[] = {"Relu", "Neg", "Exp"};

typedef struct unary {
    unary_op_t op;
    tp_dtype_t dtype;
    const void *x;
    void *y;
    int64_t count;
    int32_t ordinal;
    long long failing_launch; /* 0, or the launch number that fails (QDEV_FAIL_KERNEL) */
} unary_t;

static float apply_float(unary_op_t op, float x) {
    switch (op) {
    case RELU:
#if QUEUED_FAULT == QUEUED_FAULT_KERNEL
        return x > 0 ? x : x * 0.5f;
#elif QUEUED_FAULT == QUEUED_FAULT_LEAKY
        return x < 0 ? x * 1e-6f : x;
#elif QUEUED_FAULT == QUEUED_FAULT_NAN
        return x > 0 ? x : 0.0f;
#else
        return x < 0 ? 0.0f : x; /* NaN and -0 pass through, as on the CPU */
#endif
    case NEG:
#if QUEUED_FAULT == QUEUED_FAULT_SIGNED_ZERO
        return 0.0f - x;
#else
        return -x;
#endif
    case EXP:
#if QUEUED_FAULT == QUEUED_FAULT_SCALE
        return expf(x) * 1.00009f;
#else
        return expf(x);
#endif
    }
    return x;
}

static double apply_double(unary_op_t op, double x) {
    switch (op) {
    case RELU: return x < 0 ? 0.0 : x;
    case NEG: return -x;
    case EXP: return exp(x);
    }
    return x;
}

static void run_unary(stream_t *stream, void *payload) {
    const unary_t *unary = payload;
    if (unary->failing_launch != 0) {
        stream_fail(stream, (tp_code_t)config.fail_code,
                    "%s on QDEV:%d: injected failure of kernel launch %lld (QDEV_FAIL_KERNEL)",
                    op_names[unary->op], (int)unary->ordinal, unary->failing_launch);
        return;
    }
    if (unary->dtype == TP_FLOAT64) {
        const double *x = unary->x;
        double *y = unary->y;
        for (int64_t i = 0; i < unary->count; i++) y[i] = apply_double(unary->op, x[i]);
        return;
    }
    const float *x = unary->x;
    float *y = unary->y;
    for (int64_t i = 0; i < unary->count; i++) {
        int64_t source = i;
#if QUEUED_FAULT == QUEUED_FAULT_TILE
        if (unary->op == RELU) source = i % TILE;
#endif
        y[i] = apply_float(unary->op, x[source]);
    }
}

#if QUEUED_FAULT == QUEUED_FAULT_LEAK
/* Scratch memory taken from the device and kept (reachably, so that a leak checker at exit
 * does not blame the process) until the device is released. */
static void leak_scratch(device_t *device, tp_plugin_status_t *status) {
    void *scratch = NULL;
    allocate(device, LEAKED_BYTES, &scratch, status);
    if (scratch == NULL) return;
    pthread_mutex_lock(&device->mutex);
    leaked_t *leaked = scratch;
    leaked->next = device->leaked;
    device->leaked = leaked;
    pthread_mutex_unlock(&device->mutex);
}
#endif

static void unary_compute(unary_op_t op, tp_kernel_context_t *context,
                          tp_plugin_status_t *status) {
    tp_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
    host->kernel_input(context, 0, &x, status);
    host->kernel_output(context, 0, &y, status);
#if QUEUED_FAULT == QUEUED_FAULT_STATUS
    if (op == RELU) host->status_set(status, TP_OK, "%s", "");
#endif
    if (host->status_code(status) != TP_OK || x.num_elements == 0) return;
    device_t *device = host->kernel_device(context);
#if QUEUED_FAULT == QUEUED_FAULT_LEAK
    if (op == RELU) leak_scratch(device, status);
    if (host->status_code(status) != TP_OK) return;
#endif
    pthread_mutex_lock(&device->mutex);
    long long launch = ++device->launches;
    pthread_mutex_unlock(&device->mutex);
    unary_t unary = {op,
                     x.dtype,
                     (const char *)x.mem + x.offset,
                     (char *)y.mem + y.offset,
                     x.num_elements,
                     device->ordinal,
                     launch == config.fail_kernel ? launch : 0};
    enqueue(host->kernel_stream(context), run_unary, &unary, sizeof unary, status);
}

#define UNARY_KERNEL(name, op)                                                                 \
    static void name(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) { \
        (void)kernel;                                                                          \
        unary_compute(op, context, status);                                                    \
    }
UNARY_KERNEL(relu_compute, RELU)
UNARY_KERNEL(neg_compute, NEG)
UNARY_KERNEL(exp_compute, EXP)

/* ---- Registration ---------------------------------------------------------------------------- */

/* A whole number from the environment in [minimum, maximum], or false with the reason set. */
static bool read_setting(const char *name, long long minimum, long long maximum,
                         long long *value, tp_plugin_status_t *status) {
    const char *text = getenv(name);
    if (text == NULL || text[0] == '\0') return true;
    char *end;
    long long number = strtoll(text, &end, 10);
    if (*end != '\0' || number < minimum || number > maximum) {
        host->status_set(status, TP_INVALID_ARGUMENT, "%s='%s' is not a number from %lld to %lld",
                         name, text, minimum, maximum);
        return false;
    }
    *value = number;
    return true;
}

static void init(const tp_host_api_t *host_api, tp_registrar_t *registrar_given,
                 tp_plugin_status_t *status) {
    host = host_api;
    registrar = registrar_given;
    long long devices = MAX_DEVICES;
    if (!read_setting("QDEV_DEVICES", 0, MAX_DEVICES, &devices, status) ||
        !read_setting("QDEV_FAIL_KERNEL", 0, INT32_MAX, &config.fail_kernel, status) ||
        !read_setting("QDEV_FAIL_CODE", TP_CANCELLED, TP_DATA_LOSS, &config.fail_code, status))
        return;
    config.devices = (int32_t)devices;
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
        .memcpy_peer = peer,
        .event_create = event_create,
        .event_destroy = event_destroy,
        .event_record = event_record,
        .stream_wait_event = stream_wait_event,
        .event_query = event_query,
        .event_synchronize = event_synchronize,
#if QUEUED_FAULT != QUEUED_FAULT_NO_CALLBACK
        .host_callback = host_callback,
#endif
#if QUEUED_SYNCHRONOUS || QUEUED_FAULT == QUEUED_FAULT_SYNC_LIE
        .flags = TP_DEVICE_SYNCHRONOUS,
#endif
    };
    host->register_device_type(registrar, &def, status);
    static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    const tp_type_constraint_t constraint = {sizeof constraint, "T", floats, 2};
    void (*const computes[])(void *, tp_kernel_context_t *, tp_plugin_status_t *) = {
        relu_compute, neg_compute, exp_compute};
    for (int op = RELU; op <= EXP && host->status_code(status) == TP_OK; op++) {
        const tp_kernel_def_t kernel = {.struct_size = sizeof kernel,
                                        .op = op_names[op],
                                        .device_type = "QDEV",
                                        .constraints = &constraint,
                                        .num_constraints = 1,
                                        .compute = computes[op]};
        host->register_kernel(registrar, &kernel, status);
    }
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "queued", "1.0.0", init};
    return &descriptor;
}
