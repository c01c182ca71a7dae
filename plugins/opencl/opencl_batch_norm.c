/* SPDX-License-Identifier: Apache-2.0 */
/* FusedBatchNorm and FusedBatchNormGrad on the GPU, from kernels/batch_norm.cl: per-channel
 * statistics in double, in the CPU's order, into a scratch buffer, then one work-item per
 * element. Only on devices with cl_khr_fp64, since the CPU's statistics are double sums. */
#include <stdio.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* By dtype: bn_stats, bn_normalize, bn_grad_sums, bn_grad. */
static int32_t stats_ids[OPENCL_NUM_DTYPES], normalize_ids[OPENCL_NUM_DTYPES],
    grad_sums_ids[OPENCL_NUM_DTYPES], grad_ids[OPENCL_NUM_DTYPES];

typedef struct attrs {
    double epsilon, factor;
    cl_int training;
} attrs_t;

static bool read_attrs(tp_kernel_context_t *context, attrs_t *out, tp_plugin_status_t *status) {
    int32_t training = 0;
    opencl_host->kernel_attr_float(context, "epsilon", &out->epsilon, status);
    if (!opencl_failed(status))
        opencl_host->kernel_attr_float(context, "exponential_avg_factor", &out->factor, status);
    if (!opencl_failed(status))
        opencl_host->kernel_attr_bool(context, "is_training", &training, status);
    out->training = training != 0;
    return !opencl_failed(status);
}

/* The inputs and outputs of either op, the layout [rows, channels], the scratch buffer of
 * 6 C doubles; false when there is nothing to run (a failure, or an empty x). */
typedef struct call {
    tp_tensor_view_t in[7], out[3];
    cl_long rows, channels;
    attrs_t attrs;
} call_t;

static bool read_call(tp_kernel_context_t *context, const char *op, int num_in, call_t *call,
                      int32_t *id, const int32_t *ids, tp_plugin_status_t *status) {
    for (int k = 0; k < num_in; k++)
        if (!opencl_input(context, k, &call->in[k], status)) return false;
    for (int k = 0; k < 3; k++)
        if (!opencl_output(context, k, &call->out[k], status)) return false;
    if (!read_attrs(context, &call->attrs, status)) return false;
    const opencl_device_t *device = opencl_host->kernel_device(context);
    if (!device->has_fp64) {
        opencl_host->status_set(status, TP_UNIMPLEMENTED,
                                "%s on GPU:%d (%s): no kernel: the statistics are summed in "
                                "double, and the device lacks cl_khr_fp64",
                                op, (int)device->ordinal, device->name);
        return false;
    }
    const tp_tensor_view_t *x = &call->in[num_in == 5 ? 0 : 1];
    *id = opencl_kernel_for(op, ids, x->dtype, context, status);
    if (*id < 0 || x->rank < 1) return false;
    call->channels = x->dims[x->rank - 1];
    call->rows = 1;
    for (int32_t d = 0; d + 1 < x->rank; d++) call->rows *= x->dims[d];
    return call->channels > 0;
}

static cl_mem scratch(tp_kernel_context_t *context, const char *op, cl_long channels,
                      tp_plugin_status_t *status) {
    opencl_device_t *device = opencl_host->kernel_device(context);
    cl_int error = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(device->context, CL_MEM_READ_WRITE,
                                (size_t)channels * 6 * sizeof(cl_double), NULL, &error);
    if (mem == NULL || error != CL_SUCCESS) {
        opencl_fail(status, device, op, "clCreateBuffer", error);
        return NULL;
    }
    return mem;
}

#define MEM(view) (cl_mem) (view).mem
#define VIEW_ARGS(view) OPENCL_ARG(mems[view]), OPENCL_ARG(offsets[view])

static void forward(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    static const char op[] = "FusedBatchNorm";
    call_t call;
    int32_t id;
    if (!read_call(context, op, 5, &call, &id, stats_ids, status)) return;
    tp_dtype_t dtype = call.in[0].dtype;
    cl_mem stats = scratch(context, op, call.channels, status);
    if (stats == NULL) return;
    /* x, scale, offset, mean, variance, then y, batch_mean, batch_variance. */
    cl_mem mems[8];
    cl_ulong offsets[8];
    for (int k = 0; k < 8; k++) {
        const tp_tensor_view_t *view = k < 5 ? &call.in[k] : &call.out[k - 5];
        mems[k] = MEM(*view);
        offsets[k] = view->offset;
    }
    cl_int write_outputs = 1;
    const opencl_arg_t stats_args[] = {
        VIEW_ARGS(0), VIEW_ARGS(3), VIEW_ARGS(4), OPENCL_ARG(stats), VIEW_ARGS(6), VIEW_ARGS(7),
        OPENCL_ARG(call.rows), OPENCL_ARG(call.channels), OPENCL_ARG(call.attrs.training),
        OPENCL_ARG(write_outputs), OPENCL_ARG(call.attrs.factor), OPENCL_ARG(call.attrs.epsilon)};
    cl_ulong n = (cl_ulong)call.in[0].num_elements;
    if (opencl_launch(context, op, id, stats_args, COUNT(stats_args), (size_t)call.channels, 0,
                      status) &&
        n > 0) {
        const opencl_arg_t args[] = {VIEW_ARGS(0),      VIEW_ARGS(1),  VIEW_ARGS(2),
                                     OPENCL_ARG(stats), VIEW_ARGS(5),  OPENCL_ARG(n),
                                     OPENCL_ARG(call.channels)};
        opencl_launch(context, op, normalize_ids[dtype], args, COUNT(args), (size_t)n, 0,
                      status);
    }
    clReleaseMemObject(stats); /* OpenCL keeps it while queued commands use it */
}

static void backward(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    static const char op[] = "FusedBatchNormGrad";
    call_t call;
    int32_t id;
    if (!read_call(context, op, 7, &call, &id, stats_ids, status)) return;
    tp_dtype_t dtype = call.in[1].dtype;
    cl_mem stats = scratch(context, op, call.channels, status);
    if (stats == NULL) return;
    /* dy, x, scale, mean, variance, dmean, dvariance, then dx, dscale, doffset. */
    cl_mem mems[10];
    cl_ulong offsets[10];
    for (int k = 0; k < 10; k++) {
        const tp_tensor_view_t *view = k < 7 ? &call.in[k] : &call.out[k - 7];
        mems[k] = MEM(*view);
        offsets[k] = view->offset;
    }
    cl_int write_outputs = 0;
    const opencl_arg_t stats_args[] = {
        VIEW_ARGS(1), VIEW_ARGS(3), VIEW_ARGS(4), OPENCL_ARG(stats), VIEW_ARGS(3), VIEW_ARGS(4),
        OPENCL_ARG(call.rows), OPENCL_ARG(call.channels), OPENCL_ARG(call.attrs.training),
        OPENCL_ARG(write_outputs), OPENCL_ARG(call.attrs.factor), OPENCL_ARG(call.attrs.epsilon)};
    const opencl_arg_t sums_args[] = {
        VIEW_ARGS(0), VIEW_ARGS(1), VIEW_ARGS(5), VIEW_ARGS(6), OPENCL_ARG(stats), VIEW_ARGS(8),
        VIEW_ARGS(9), OPENCL_ARG(call.rows), OPENCL_ARG(call.channels),
        OPENCL_ARG(call.attrs.factor)};
    cl_ulong n = (cl_ulong)call.in[1].num_elements;
    if (opencl_launch(context, op, id, stats_args, COUNT(stats_args), (size_t)call.channels, 0,
                      status) &&
        opencl_launch(context, op, grad_sums_ids[dtype], sums_args, COUNT(sums_args),
                      (size_t)call.channels, 0, status) &&
        n > 0) {
        const opencl_arg_t args[] = {VIEW_ARGS(0),          VIEW_ARGS(1),
                                     VIEW_ARGS(2),          OPENCL_ARG(stats),
                                     VIEW_ARGS(7),          OPENCL_ARG(n),
                                     OPENCL_ARG(call.rows), OPENCL_ARG(call.channels),
                                     OPENCL_ARG(call.attrs.training)};
        opencl_launch(context, op, grad_ids[dtype], args, COUNT(args), (size_t)n, 0, status);
    }
    clReleaseMemObject(stats); /* OpenCL keeps it while queued commands use it */
}

void opencl_register_batch_norm_kernels(tp_registrar_t *registrar, bool fp64,
                                        tp_plugin_status_t *status) {
    for (int d = 0; d < OPENCL_NUM_DTYPES; d++)
        stats_ids[d] = normalize_ids[d] = grad_sums_ids[d] = grad_ids[d] = -1;
    if (!fp64) return; /* the kernels exist only with -DTP_FP64 */
    tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    struct {
        int32_t *ids;
        const char *family;
    } kernels[] = {{stats_ids, "bn_stats"},
                   {normalize_ids, "bn_normalize"},
                   {grad_sums_ids, "bn_grad_sums"},
                   {grad_ids, "bn_grad"}};
    for (size_t k = 0; k < COUNT(kernels) && !opencl_failed(status); k++)
        for (size_t f = 0; f < COUNT(floats) && !opencl_failed(status); f++) {
            char name[64];
            snprintf(name, sizeof name, "%s_%s", kernels[k].family,
                     opencl_dtype_suffix(floats[f]));
            kernels[k].ids[floats[f]] = opencl_kernel_id("batch_norm", name, status);
        }
    static int state; /* the kernels need nothing beyond the ids above */
    opencl_register(registrar, "FusedBatchNorm", "T", floats, 2, &state, forward, status);
    opencl_register(registrar, "FusedBatchNormGrad", "T", floats, 2, &state, backward, status);
}
