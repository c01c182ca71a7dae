/* SPDX-License-Identifier: Apache-2.0 */
/* RandomUniform, RandomStandardNormal and Dropout on the GPU, from kernels/random.cl: the CPU
 * device's Philox-4x32-10 stream, so that a seed gives the same values on either device
 * (random.cl says where that is bit for bit). One work-item computes one Philox block: four
 * float32 or two float64 elements. compute only queues work; it never waits for the device. */
#include <stdio.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* One random op: its kernel ids for float32 and float64 (-1: none). */
typedef struct random_op {
    const char *op;     /* "RandomUniform" */
    const char *kernel; /* "uniform": the kernels are uniform_float32 and uniform_float64 */
    int32_t float32_id, float64_id;
} random_op_t;

static random_op_t random_ops[] = {
    {"RandomUniform", "uniform", -1, -1},
    {"RandomStandardNormal", "normal", -1, -1},
};

static void compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const random_op_t *op = kernel;
    tp_tensor_view_t y = {.struct_size = sizeof y};
    opencl_host->kernel_output(context, 0, &y, status);
    int64_t seed = 0;
    if (!opencl_failed(status)) opencl_host->kernel_attr_int(context, "seed", &seed, status);
    if (opencl_failed(status)) return;
    const opencl_device_t *device = opencl_host->kernel_device(context);
    /* A float64 kernel is registered when some device has cl_khr_fp64, not necessarily this
     * one. */
    int32_t id = y.dtype == TP_FLOAT32                         ? op->float32_id
                 : y.dtype == TP_FLOAT64 && device->has_fp64 ? op->float64_id
                                                               : -1;
    if (id < 0) {
        opencl_host->status_set(status, TP_UNIMPLEMENTED, "%s on GPU:%d (%s): no kernel for %s",
                                op->op, (int)device->ordinal, device->name,
                                y.dtype == TP_FLOAT64 ? "float64: the device lacks cl_khr_fp64"
                                                      : "this dtype, only float32 and float64");
        return;
    }
    if (y.num_elements == 0) return;
    cl_ulong seed_bits = (cl_ulong)seed; /* the Philox key is the seed's two's-complement bits */
    cl_mem y_mem = (cl_mem)y.mem;
    cl_ulong n = (cl_ulong)y.num_elements;
    cl_ulong per_block = y.dtype == TP_FLOAT32 ? 4 : 2, blocks = (n + per_block - 1) / per_block;
    const opencl_arg_t args[] = {OPENCL_ARG(seed_bits), OPENCL_ARG(y_mem), OPENCL_ARG(y.offset),
                                 OPENCL_ARG(n)};
    opencl_launch(context, op->op, id, args, COUNT(args), (size_t)blocks, 0, status);
}

/* ---- Dropout --------------------------------------------------------------------------------- */

static int32_t dropout_ids[OPENCL_NUM_DTYPES];

static void dropout(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x, y, mask;
    double rate = 0;
    int64_t seed = 0;
    if (!opencl_input(context, 0, &x, status) || !opencl_output(context, 0, &y, status) ||
        !opencl_output(context, 1, &mask, status))
        return;
    opencl_host->kernel_attr_float(context, "rate", &rate, status);
    if (!opencl_failed(status)) opencl_host->kernel_attr_int(context, "seed", &seed, status);
    if (opencl_failed(status)) return;
    /* The shape function refused any other rate; a kernel trusts no caller with a division. */
    if (!(rate >= 0 && rate < 1)) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "Dropout: rate must be in [0, 1), not %g", rate);
        return;
    }
    int32_t id = opencl_kernel_for("Dropout", dropout_ids, y.dtype, context, status);
    if (id < 0 || y.num_elements == 0) return;
    /* rate * 2^24 is exact in double; its ceiling is the first kept 24-bit value. */
    double scaled = rate * 0x1p24;
    cl_uint threshold = (cl_uint)scaled;
    if ((double)threshold < scaled) threshold++;
    double scale = 1 / (1 - rate);
    cl_float scale32 = (cl_float)scale;
    cl_double scale64 = scale;
    cl_ulong seed_bits = (cl_ulong)seed, n = (cl_ulong)y.num_elements;
    cl_mem x_mem = (cl_mem)x.mem, y_mem = (cl_mem)y.mem, m_mem = (cl_mem)mask.mem;
    const opencl_arg_t args[] = {
        OPENCL_ARG(seed_bits), OPENCL_ARG(x_mem),       OPENCL_ARG(x.offset),
        OPENCL_ARG(y_mem),     OPENCL_ARG(y.offset),    OPENCL_ARG(m_mem),
        OPENCL_ARG(mask.offset), OPENCL_ARG(n),         OPENCL_ARG(threshold),
        y.dtype == TP_FLOAT32 ? OPENCL_ARG(scale32) : OPENCL_ARG(scale64)};
    opencl_launch(context, "Dropout", id, args, COUNT(args), (size_t)((n + 3) / 4), 0, status);
}

void opencl_register_random_kernels(tp_registrar_t *registrar, bool fp64,
                                    tp_plugin_status_t *status) {
    static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t i = 0; i < COUNT(random_ops) && !opencl_failed(status); i++) {
        random_op_t *op = &random_ops[i];
        char name[64];
        snprintf(name, sizeof name, "%s_float32", op->kernel);
        op->float32_id = opencl_kernel_id("random", name, status);
        if (fp64 && !opencl_failed(status)) {
            snprintf(name, sizeof name, "%s_float64", op->kernel);
            op->float64_id = opencl_kernel_id("random", name, status);
        }
        opencl_register(registrar, op->op, "dtype", floats, fp64 ? 2 : 1, op, compute, status);
    }
    for (int d = 0; d < OPENCL_NUM_DTYPES; d++) dropout_ids[d] = -1;
    if (!opencl_failed(status))
        dropout_ids[TP_FLOAT32] = opencl_kernel_id("random", "dropout_float32", status);
    if (fp64 && !opencl_failed(status))
        dropout_ids[TP_FLOAT64] = opencl_kernel_id("random", "dropout_float64", status);
    static int dropout_state; /* Dropout's kernels need no state beyond dropout_ids */
    opencl_register(registrar, "Dropout", "T", floats, fp64 ? 2 : 1, &dropout_state, dropout,
                    status);
}
