/* SPDX-License-Identifier: Apache-2.0 */
/* float16 and bfloat16 through a kernel's float32 code. While a kernel registered with
 * cpu_register runs on 16-bit floats, cpu_input hands it float32 copies of its 16-bit inputs
 * and cpu_output float32 buffers for its 16-bit outputs; when it returns, each output is
 * rounded to its dtype, to nearest even, once (tensorplug/float16.h). So every float32 kernel
 * serves both 16-bit floats without code of its own, and computes as TensorFlow's CPU kernels
 * do for them: in float32, one rounding per op. The price is a conversion pass and
 * float32-sized buffers per 16-bit tensor, small beside a kernel's own work.
 *
 * The staging of a call lives in a thread-local variable: a kernel calls cpu_input and
 * cpu_output on the thread that launched it (cpu_parallel_for's workers only compute). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu_kernels.h"
#include "tensorplug/float16.h"

/* One 16-bit tensor of the call and its float32 stand-in. */
typedef struct {
    bool input;
    int32_t index;
    tp_tensor_view_t view; /* the stand-in's view, handed out again on a second request */
    tp_dtype_t dtype;      /* the tensor's own */
    void *data;            /* the tensor's own */
    float *buffer;
    size_t buffer_bytes;   /* its capacity, which may exceed what the call uses */
} staged_t;

typedef struct {
    staged_t *tensors;
    size_t count, capacity;
} staging_t;

static _Thread_local staging_t *current;

/* ---- Conversion, in slices on every core ---------------------------------------------------- */

typedef struct {
    tp_dtype_t dtype;
    void *half;
    float *wide;
} conversion_t;

static void widen_range(void *arg, int64_t begin, int64_t end) {
    const conversion_t *c = arg;
    const uint16_t *half = c->half;
    if (c->dtype == TP_FLOAT16)
        for (int64_t i = begin; i < end; i++) c->wide[i] = tp_float16_to_float(half[i]);
    else
        for (int64_t i = begin; i < end; i++) c->wide[i] = tp_bfloat16_to_float(half[i]);
}

static void narrow_range(void *arg, int64_t begin, int64_t end) {
    const conversion_t *c = arg;
    uint16_t *half = c->half;
    if (c->dtype == TP_FLOAT16)
        for (int64_t i = begin; i < end; i++) half[i] = tp_float16_from_float(c->wide[i]);
    else
        for (int64_t i = begin; i < end; i++) half[i] = tp_bfloat16_from_float(c->wide[i]);
}

/* ---- Buffers, kept between calls ---------------------------------------------------------- */

/* A staging buffer of some megabytes fresh from malloc costs the first touch of each of its
 * pages, several times the conversion itself (a Sum of 4 Mi float16 elements took 24 ms so, 7.5
 * with its buffer kept, on the 2-core machine this was written on). So each thread keeps the
 * buffers its last calls gave back, up to KEPT_BUFFERS of them and KEPT_BYTES in all, for its
 * next calls, and frees them when it exits (a pthread key's destructor). */
enum { KEPT_BUFFERS = 4 };
#define KEPT_BYTES ((size_t)64 << 20)

typedef struct {
    float *buffers[KEPT_BUFFERS];
    size_t bytes[KEPT_BUFFERS];
} kept_t;

static pthread_key_t kept_key;
static bool kept_key_made;
static pthread_once_t kept_key_once = PTHREAD_ONCE_INIT;

static void free_kept(void *arg) {
    kept_t *kept = arg;
    for (size_t i = 0; i < KEPT_BUFFERS; i++) free(kept->buffers[i]);
    free(kept);
}

static void make_kept_key(void) { kept_key_made = pthread_key_create(&kept_key, free_kept) == 0; }

/* This thread's kept buffers; NULL where there are none and none can be kept. */
static kept_t *kept_buffers(bool create) {
    pthread_once(&kept_key_once, make_kept_key);
    if (!kept_key_made) return NULL;
    kept_t *kept = pthread_getspecific(kept_key);
    if (kept == NULL && create) {
        kept = calloc(1, sizeof *kept);
        if (kept != NULL && pthread_setspecific(kept_key, kept) != 0) {
            free(kept);
            kept = NULL;
        }
    }
    return kept;
}

/* A buffer of at least `bytes`: the smallest kept one that is large enough, or a new one. */
static float *take_buffer(size_t bytes, size_t *out_capacity) {
    kept_t *kept = kept_buffers(false);
    size_t best = KEPT_BUFFERS;
    for (size_t i = 0; kept != NULL && i < KEPT_BUFFERS; i++)
        if (kept->buffers[i] != NULL && kept->bytes[i] >= bytes &&
            (best == KEPT_BUFFERS || kept->bytes[i] < kept->bytes[best]))
            best = i;
    if (best < KEPT_BUFFERS) {
        float *buffer = kept->buffers[best];
        *out_capacity = kept->bytes[best];
        kept->buffers[best] = NULL;
        kept->bytes[best] = 0;
        return buffer;
    }
    *out_capacity = bytes;
    return malloc(bytes);
}

/* Keeps a buffer the call is done with, or frees it when there is no room. */
static void give_back_buffer(float *buffer, size_t bytes) {
    if (buffer == NULL) return;
    kept_t *kept = bytes <= KEPT_BYTES ? kept_buffers(true) : NULL;
    size_t total = bytes, empty = KEPT_BUFFERS;
    for (size_t i = 0; kept != NULL && i < KEPT_BUFFERS; i++) {
        total += kept->bytes[i];
        if (kept->buffers[i] == NULL) empty = i;
    }
    if (kept == NULL || empty == KEPT_BUFFERS || total > KEPT_BYTES) {
        free(buffer);
        return;
    }
    kept->buffers[empty] = buffer;
    kept->bytes[empty] = bytes;
}

/* ---- Handing out stand-ins ---------------------------------------------------------------- */

bool cpu_stage(bool input, int32_t index, tp_kernel_context_t *context, cpu_tensor_t *tensor,
               tp_plugin_status_t *status) {
    /* The dtype first: a float32 call never reads the thread-local. */
    if (!cpu_is_half(tensor->view.dtype)) return true;
    staging_t *staging = current;
    if (staging == NULL) return true;
    for (size_t i = 0; i < staging->count; i++) {
        const staged_t *s = &staging->tensors[i];
        if (s->input == input && s->index == index) {
            tensor->view = s->view;
            tensor->data = s->buffer;
            return true;
        }
    }
    int64_t count = tensor->view.num_elements;
    float *buffer = NULL;
    size_t buffer_bytes = 0;
    bool room = staging->count < staging->capacity;
    if (!room) {
        size_t capacity = staging->capacity == 0 ? 4 : staging->capacity * 2;
        staged_t *grown = realloc(staging->tensors, capacity * sizeof *grown);
        if (grown != NULL) {
            staging->tensors = grown;
            staging->capacity = capacity;
            room = true;
        }
    }
    if (room && count > 0 && (uint64_t)count <= SIZE_MAX / sizeof(float))
        buffer = take_buffer((size_t)count * sizeof(float), &buffer_bytes);
    if (!room || (count > 0 && buffer == NULL)) {
        tp_cpu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "%s: no host memory to compute %s %s %d (%lld elements) in "
                                "float32",
                                tp_cpu_host->kernel_op_name(context),
                                tensor->view.dtype == TP_FLOAT16 ? "float16" : "bfloat16",
                                input ? "input" : "output", (int)index, (long long)count);
        return false;
    }
    staged_t *s = &staging->tensors[staging->count++];
    *s = (staged_t){input,        index,  tensor->view, tensor->view.dtype,
                    tensor->data, buffer, buffer_bytes};
    s->view.dtype = TP_FLOAT32;
    s->view.byte_size = (uint64_t)count * sizeof(float);
    s->view.mem = buffer;
    s->view.offset = 0;
    if (input) {
        conversion_t widen = {s->dtype, s->data, buffer};
        cpu_parallel_for(count, 2, widen_range, &widen);
    }
    tensor->view = s->view;
    tensor->data = buffer;
    return true;
}

/* ---- Running a kernel staged ---------------------------------------------------------------- */

typedef void (*compute_fn)(void *, tp_kernel_context_t *, tp_plugin_status_t *);

/* A kernel whose 16-bit floats are staged: its own compute. */
typedef struct {
    compute_fn compute;
} staged_kernel_t;

/* The CPU registers a few dozen; init runs once per process, so a fixed table serves. */
enum { MAX_STAGED_KERNELS = 128 };
static staged_kernel_t staged_kernels[MAX_STAGED_KERNELS];
static size_t num_staged_kernels;

static void *staged_create(void *kernel_state, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    (void)context;
    (void)status;
    return kernel_state;
}

/* Registered for the 16-bit dtypes alone: every call is staged. */
static void staged_compute(void *kernel, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    const staged_kernel_t *staged = kernel;
    staging_t staging = {NULL, 0, 0};
    staging_t *outer = current;
    current = &staging;
    staged->compute(NULL, context, status);
    current = outer;
    for (size_t i = 0; i < staging.count; i++) {
        staged_t *s = &staging.tensors[i];
        if (!s->input && !cpu_failed(status)) {
            conversion_t narrow = {s->dtype, s->data, s->buffer};
            cpu_parallel_for(s->view.num_elements, 2, narrow_range, &narrow);
        }
        give_back_buffer(s->buffer, s->buffer_bytes);
    }
    free(staging.tensors);
}

/* Two kernels: compute itself for the other dtypes, so that a float32 call pays nothing for
 * staging (a wrapper that read the dtype attribute by name on every call cost about 130
 * instructions of a 1-element Add), and the staged wrapper for the 16-bit floats. */
void cpu_register(tp_registrar_t *registrar, const char *op, const char *attr,
                  const tp_dtype_t *dtypes, size_t num_dtypes, compute_fn compute,
                  tp_plugin_status_t *status) {
    tp_dtype_t wide[32], halves[2];
    size_t num_wide = 0, num_halves = 0;
    for (size_t i = 0; i < num_dtypes; i++) {
        if (attr != NULL && cpu_is_half(dtypes[i]) && num_halves < 2)
            halves[num_halves++] = dtypes[i];
        else if (num_wide < sizeof wide / sizeof wide[0])
            wide[num_wide++] = dtypes[i];
    }
    if (num_wide > 0 || num_halves == 0)
        cpu_register_native(registrar, op, attr, num_halves == 0 ? dtypes : wide,
                            num_halves == 0 ? num_dtypes : num_wide, compute, status);
    if (num_halves == 0 || cpu_failed(status)) return;
    if (num_staged_kernels == MAX_STAGED_KERNELS) {
        tp_cpu_host->status_set(status, TP_INTERNAL,
                                "the CPU stages the 16-bit floats of more than %d kernels; "
                                "raise MAX_STAGED_KERNELS",
                                MAX_STAGED_KERNELS);
        return;
    }
    staged_kernel_t *staged = &staged_kernels[num_staged_kernels++];
    *staged = (staged_kernel_t){compute};
    cpu_register_kernel(registrar, op, attr, halves, num_halves, staged, staged_create,
                        staged_compute, status);
}
