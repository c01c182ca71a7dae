/* SPDX-License-Identifier: Apache-2.0 */
/* The APU's kernels for the dtypes of ABI 1.7: Relu for float16, bfloat16, int8, int16,
 * uint16, uint32 and uint64, and Add, with NumPy broadcasting, for float16 and bfloat16. The
 * 16-bit floats compute in float32 and round once to nearest even through
 * tensorplug/float16.h, as the runtime's CPU does, so that `tensorplug plugin-check` finds the
 * APU's results equal to the CPU's bit for bit where one rounding decides them. Like Relu for
 * float32 (apu_plugin.c), the work runs on the stream's queue thread and kernel fault
 * injection counts its launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apu_device.h"
#include "apu_stream.h"
#include "tensorplug/float16.h"

typedef enum { APU_RELU, APU_ADD } apu_op_t;

/* One launch: the output's dims, each input's element strides over them (0 where it is
 * broadcast), and the memory of inputs 0 and 1 and the output (2). Larger than a queued
 * command's payload, it is queued as a pointer, and the queue thread frees it when it has
 * run (every queued command runs: a stream is destroyed only once it is drained). */
typedef struct {
    apu_op_t op;
    tp_dtype_t dtype;
    int32_t rank;
    int64_t dims[TP_MAX_RANK];
    int64_t strides[2][TP_MAX_RANK];
    void *mem[3];
    uint64_t offset[3];
    uint64_t bytes[3];
    int64_t count;
    bool injected_failure;
    int64_t launch;
} apu_work_t;

static const char *op_name(apu_op_t op) { return op == APU_RELU ? "Relu" : "Add"; }

static size_t element_size(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_INT8: return 1;
    case TP_UINT32: return 4;
    case TP_UINT64: return 8;
    default: return 2; /* float16, bfloat16, int16, uint16 */
    }
}

static float widen(tp_dtype_t dtype, uint16_t bits) {
    return dtype == TP_FLOAT16 ? tp_float16_to_float(bits) : tp_bfloat16_to_float(bits);
}

static uint16_t narrow(tp_dtype_t dtype, float value) {
    return dtype == TP_FLOAT16 ? tp_float16_from_float(value) : tp_bfloat16_from_float(value);
}

/* Relu of one element: a float in float32 (NaN passes, as x < 0 is false for it); a signed
 * integer below 0 becomes 0; an unsigned one is never below 0. */
static void relu_element(tp_dtype_t dtype, const unsigned char *x, unsigned char *y) {
    int8_t i8;
    int16_t i16;
    switch (dtype) {
    case TP_FLOAT16:
    case TP_BFLOAT16: {
        uint16_t bits;
        memcpy(&bits, x, sizeof bits);
        float v = widen(dtype, bits);
        bits = narrow(dtype, v < 0 ? 0.0f : v);
        memcpy(y, &bits, sizeof bits);
        break;
    }
    case TP_INT8:
        memcpy(&i8, x, sizeof i8);
        if (i8 < 0) i8 = 0;
        memcpy(y, &i8, sizeof i8);
        break;
    case TP_INT16:
        memcpy(&i16, x, sizeof i16);
        if (i16 < 0) i16 = 0;
        memcpy(y, &i16, sizeof i16);
        break;
    default: memcpy(y, x, element_size(dtype)); break;
    }
}

/* Where output element i reads input k. */
static int64_t input_offset(const apu_work_t *work, int k, int64_t i) {
    int64_t offset = 0;
    for (int32_t d = work->rank - 1; d >= 0; d--) {
        offset += (i % work->dims[d]) * work->strides[k][d];
        i /= work->dims[d];
    }
    return offset;
}

static bool run_work(apu_stream_t *stream, const apu_work_t *work, char *error,
                     size_t capacity) {
    int ordinal = (int)stream->device->ordinal;
    if (work->injected_failure) {
        snprintf(error, capacity,
                 "%s on APU:%d: injected failure of kernel launch %lld, on %lld elements (%s)",
                 op_name(work->op), ordinal, (long long)work->launch, (long long)work->count,
                 apu_fault_variable());
        return false;
    }
    unsigned char *data[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        if (k == 1 && work->op == APU_RELU) continue; /* Relu reads input 0 alone */
        data[k] = apu_translate(stream->device, work->mem[k], work->offset[k], work->bytes[k]);
        if (data[k] == NULL) {
            snprintf(error, capacity, "%s on APU:%d: a tensor lies outside device memory",
                     op_name(work->op), ordinal);
            return false;
        }
    }
    size_t size = element_size(work->dtype);
    for (int64_t i = 0; i < work->count; i++) {
        unsigned char *out = data[2] + (size_t)i * size;
        const unsigned char *x = data[0] + (size_t)input_offset(work, 0, i) * size;
        if (work->op == APU_RELU) {
            relu_element(work->dtype, x, out);
            continue;
        }
        const unsigned char *y = data[1] + (size_t)input_offset(work, 1, i) * size;
        uint16_t a, b;
        memcpy(&a, x, sizeof a);
        memcpy(&b, y, sizeof b);
        uint16_t sum = narrow(work->dtype, widen(work->dtype, a) + widen(work->dtype, b));
        memcpy(out, &sum, sizeof sum);
    }
    return true;
}

static bool run(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    apu_work_t *work;
    memcpy(&work, payload, sizeof work);
    bool done = run_work(stream, work, error, capacity);
    free(work);
    return done;
}

/* Input k's strides over the output's dims: NumPy broadcasting aligns the last dimensions, and
 * a dimension of 1 (or one the input lacks) repeats its element. */
static void broadcast_strides(const tp_tensor_view_t *input, const tp_tensor_view_t *output,
                              int64_t *strides) {
    int64_t stride = 1;
    for (int32_t d = output->rank - 1; d >= 0; d--) {
        int32_t own = d - (output->rank - input->rank);
        int64_t dim = own >= 0 ? input->dims[own] : 1;
        strides[d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
}

static void compute(apu_op_t op, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    tp_tensor_view_t views[3];
    int inputs = op == APU_RELU ? 1 : 2;
    for (int k = 0; k < 3; k++) views[k] = (tp_tensor_view_t){.struct_size = sizeof views[k]};
    for (int k = 0; k < inputs; k++) apu_host->kernel_input(context, k, &views[k], status);
    apu_host->kernel_output(context, 0, &views[2], status);
    if (apu_host->status_code(status) != TP_OK || views[2].num_elements == 0) return;
    apu_work_t *work = malloc(sizeof *work);
    if (work == NULL) {
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED, "%s on APU: out of host memory",
                             op_name(op));
        return;
    }
    *work = (apu_work_t){.op = op, .dtype = views[2].dtype, .rank = views[2].rank,
                         .count = views[2].num_elements};
    for (int32_t d = 0; d < work->rank; d++) work->dims[d] = views[2].dims[d];
    for (int k = 0; k < 3; k++) {
        if (k < 2 && k >= inputs) continue;
        work->mem[k] = views[k].mem;
        work->offset[k] = views[k].offset;
        work->bytes[k] = views[k].byte_size;
        if (k < 2) broadcast_strides(&views[k], &views[2], work->strides[k]);
    }
    work->launch = apu_next_launch(&work->injected_failure);
    if (!apu_stream_enqueue(apu_host->kernel_stream(context), run, &work, sizeof work, status))
        free(work);
}

/* Both kernels are this one: the op's name says which it runs. */
static void compute_kernel(void *kernel, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    (void)kernel;
    bool relu = strcmp(apu_host->kernel_op_name(context), "Relu") == 0;
    compute(relu ? APU_RELU : APU_ADD, context, status);
}

static void register_kernel(tp_registrar_t *registrar, apu_op_t op, const tp_dtype_t *dtypes,
                            size_t count, tp_plugin_status_t *status) {
    const tp_type_constraint_t constraint = {sizeof constraint, "T", dtypes, count};
    const tp_kernel_def_t kernel = {.struct_size = sizeof kernel, .op = op_name(op),
                                    .device_type = "APU", .constraints = &constraint,
                                    .num_constraints = 1, .compute = compute_kernel};
    apu_host->register_kernel(registrar, &kernel, status);
}

void apu_register_dtype_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    static const tp_dtype_t relu_dtypes[] = {TP_FLOAT16, TP_BFLOAT16, TP_INT8,  TP_INT16,
                                             TP_UINT16,  TP_UINT32,   TP_UINT64};
    static const tp_dtype_t add_dtypes[] = {TP_FLOAT16, TP_BFLOAT16};
    register_kernel(registrar, APU_RELU, relu_dtypes, sizeof relu_dtypes / sizeof *relu_dtypes,
                    status);
    register_kernel(registrar, APU_ADD, add_dtypes, 2, status);
}
