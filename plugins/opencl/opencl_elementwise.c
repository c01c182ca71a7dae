/* SPDX-License-Identifier: Apache-2.0 */
/* The element-wise ops on the GPU, from kernels/elementwise.cl: unary math (Rsqrt and Sign
 * among it), broadcasting binary arithmetic, AddN, BiasAdd, the activation gradients, Fill,
 * ZerosLike and OnesLike, Cast, and the copies (Identity, Reshape, Const). compute only queues
 * work; it never waits for the device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
static const tp_dtype_t numbers[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32, TP_INT64};
static const tp_dtype_t all_types[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32,
                                       TP_INT64,   TP_UINT8,   TP_BOOL};

/* One op as the GPU runs it: which kernel each dtype takes (-1: none), the dtype-indexed
 * table filled at registration. */
typedef struct gpu_op {
    const char *op;        /* "Add" */
    const char *kernel;    /* "add": the kernels are add_<dtype> */
    int32_t ids[OPENCL_NUM_DTYPES];
} gpu_op_t;

/* The buffer of a view as a kernel argument (NULL memory only for an empty tensor, which no
 * kernel reads). */
static cl_mem buffer_of(const tp_tensor_view_t *view) { return (cl_mem)view->mem; }

/* Launches kernel `id` with one work-item per element of the last of `views`: the kernels
 * of elementwise.cl that take each tensor as (buffer, offset), then the element count. */
static void launch_per_element(tp_kernel_context_t *context, const char *what, int32_t id,
                               const tp_tensor_view_t *const *views, size_t num_views,
                               tp_plugin_status_t *status) {
    cl_mem mems[3];
    opencl_arg_t args[2 * 3 + 1];
    for (size_t v = 0; v < num_views; v++) {
        mems[v] = buffer_of(views[v]);
        args[2 * v] = OPENCL_ARG(mems[v]);
        args[2 * v + 1] = OPENCL_ARG(views[v]->offset);
    }
    cl_ulong n = (cl_ulong)views[num_views - 1]->num_elements;
    args[2 * num_views] = OPENCL_ARG(n);
    opencl_launch(context, what, id, args, 2 * num_views + 1, (size_t)n, 0, status);
}

/* ---- Unary ------------------------------------------------------------------------------- */

static void unary(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t x, y;
    if (!opencl_input(context, 0, &x, status) || !opencl_output(context, 0, &y, status)) return;
    int32_t id = opencl_kernel_for(op->op, op->ids, y.dtype, context, status);
    if (id < 0 || y.num_elements == 0) return;
    launch_per_element(context, op->op, id, (const tp_tensor_view_t *[]){&x, &y}, 2, status);
}

/* ---- Binary, with broadcasting ------------------------------------------------------------- */

/* z = a OP b over `rank` dims `dims`, where a and b read with their strides; rank 0: all
 * three have the same elements. Integer division also gets a flag the device sets on a zero
 * divisor, checked after the launch. */
static void launch_binary(tp_kernel_context_t *context, const gpu_op_t *op, int32_t id,
                          const tp_tensor_view_t *a, const tp_tensor_view_t *b,
                          const tp_tensor_view_t *z, cl_int rank, const cl_long dims[8],
                          const cl_long a_strides[8], const cl_long b_strides[8],
                          tp_plugin_status_t *status) {
    cl_mem a_mem = buffer_of(a), b_mem = buffer_of(b), z_mem = buffer_of(z);
    cl_ulong n = (cl_ulong)z->num_elements;
    cl_long8 packed[3];
    memcpy(&packed[0], dims, sizeof packed[0]);
    memcpy(&packed[1], a_strides, sizeof packed[1]);
    memcpy(&packed[2], b_strides, sizeof packed[2]);
    opencl_arg_t args[] = {OPENCL_ARG(a_mem),     OPENCL_ARG(a->offset), OPENCL_ARG(b_mem),
                           OPENCL_ARG(b->offset), OPENCL_ARG(z_mem),     OPENCL_ARG(z->offset),
                           OPENCL_ARG(n),         OPENCL_ARG(rank),      OPENCL_ARG(packed[0]),
                           OPENCL_ARG(packed[1]), OPENCL_ARG(packed[2]), {0, NULL}};
    bool checked = strcmp(op->kernel, "div") == 0 && (z->dtype == TP_INT32 || z->dtype == TP_INT64);
    if (!checked) {
        opencl_launch(context, op->op, id, args, COUNT(args) - 1, (size_t)n, 0, status);
        return;
    }
    opencl_device_t *device = opencl_host->kernel_device(context);
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    cl_int error;
    cl_int zero = 0;
    cl_mem flag = clCreateBuffer(device->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 sizeof zero, &zero, &error);
    if (flag == NULL || error != CL_SUCCESS) {
        opencl_fail(status, device, op->op, "clCreateBuffer", error);
        return;
    }
    args[COUNT(args) - 1] = OPENCL_ARG(flag);
    if (opencl_launch(context, op->op, id, args, COUNT(args), (size_t)n, 0, status))
        opencl_stream_check_flag(stream, flag, op->op, "integer division by zero", status);
    clReleaseMemObject(flag); /* OpenCL keeps it while queued commands use it */
}

/* Inputs 0 and 1 and output 0 of a two-input op, and the op's kernel for the output's dtype;
 * -1 when there is nothing to launch: a failure on `status`, or an empty output. */
static int32_t two_inputs(tp_kernel_context_t *context, const gpu_op_t *op,
                          tp_tensor_view_t *a, tp_tensor_view_t *b, tp_tensor_view_t *z,
                          tp_plugin_status_t *status) {
    if (!opencl_input(context, 0, a, status) || !opencl_input(context, 1, b, status) ||
        !opencl_output(context, 0, z, status))
        return -1;
    int32_t id = opencl_kernel_for(op->op, op->ids, z->dtype, context, status);
    return z->num_elements == 0 ? -1 : id;
}

static void binary(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t a, b, z;
    int32_t id = two_inputs(context, op, &a, &b, &z, status);
    if (id < 0) return;
    cl_long dims[8] = {0}, a_strides[8] = {0}, b_strides[8] = {0};
    cl_int rank = 0;
    if (a.num_elements != z.num_elements || b.num_elements != z.num_elements) {
        rank = z.rank;
        for (int32_t d = 0; d < z.rank; d++) dims[d] = z.dims[d];
        opencl_broadcast_strides(&a, z.rank, z.dims, a_strides);
        opencl_broadcast_strides(&b, z.rank, z.dims, b_strides);
    }
    launch_binary(context, op, id, &a, &b, &z, rank, dims, a_strides, b_strides, status);
}

/* BiasAdd: x of shape [..., C] plus bias of shape [C], as a broadcast over [N, C]. */
static void bias_add(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t x, bias, z;
    int32_t id = two_inputs(context, op, &x, &bias, &z, status);
    if (id < 0) return;
    int64_t channels = bias.num_elements;
    cl_long dims[8] = {z.num_elements / channels, channels};
    cl_long x_strides[8] = {channels, 1}, bias_strides[8] = {0, 1};
    launch_binary(context, op, id, &x, &bias, &z, 2, dims, x_strides, bias_strides, status);
}

/* AddN: ((x0 + x1) + x2) + ..., in the CPU's order, so that the sums round alike. */
static void add_n(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t first, z;
    if (!opencl_input(context, 0, &first, status) || !opencl_output(context, 0, &z, status))
        return;
    int32_t count = opencl_host->kernel_num_inputs(context);
    if (z.num_elements == 0) return;
    if (count == 1) {
        opencl_copy_tensor(context, op->op, &first, &z, status);
        return;
    }
    int32_t id = opencl_kernel_for(op->op, op->ids, z.dtype, context, status);
    const cl_long none[8] = {0};
    tp_tensor_view_t sum = first;
    for (int32_t k = 1; k < count && id >= 0 && !opencl_failed(status); k++) {
        tp_tensor_view_t x;
        if (!opencl_input(context, k, &x, status)) return;
        launch_binary(context, op, id, &sum, &x, &z, 0, none, none, none, status);
        sum = z;
    }
}

/* ReluGrad, SigmoidGrad and TanhGrad: two inputs of the output's shape. */
static void gradient(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t a, b, z;
    int32_t id = two_inputs(context, op, &a, &b, &z, status);
    if (id < 0) return;
    launch_per_element(context, op->op, id, (const tp_tensor_view_t *[]){&a, &b, &z}, 3,
                       status);
}

/* ---- Fill, ZerosLike, OnesLike ----------------------------------------------------------- */

/* Fill: every element a copy of input 0's one element, by element size. */
static void fill(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t value, y;
    if (!opencl_input(context, 0, &value, status) || !opencl_output(context, 0, &y, status))
        return;
    size_t size = opencl_dtype_size(y.dtype);
    int32_t id = op->ids[size == 1 ? 0 : size == 4 ? 1 : 2];
    if (y.num_elements == 0) return;
    launch_per_element(context, op->op, id, (const tp_tensor_view_t *[]){&value, &y}, 2,
                       status);
}

/* The bytes of 1 in `dtype`. */
static void one_of(tp_dtype_t dtype, unsigned char *bytes) {
    const float f = 1.0f;
    const double d = 1.0;
    const int32_t i = 1;
    const int64_t l = 1;
    switch (dtype) {
    case TP_FLOAT32: memcpy(bytes, &f, sizeof f); break;
    case TP_FLOAT64: memcpy(bytes, &d, sizeof d); break;
    case TP_INT32: memcpy(bytes, &i, sizeof i); break;
    case TP_INT64: memcpy(bytes, &l, sizeof l); break;
    default: bytes[0] = 1; break;
    }
}

/* ZerosLike and OnesLike: clEnqueueFillBuffer with the dtype's 0 or 1. */
static void fill_constant(void *kernel, tp_kernel_context_t *context,
                          tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t y;
    if (!opencl_output(context, 0, &y, status) || y.num_elements == 0) return;
    unsigned char pattern[8] = {0};
    size_t size = opencl_dtype_size(y.dtype);
    if (strcmp(op->op, "OnesLike") == 0) one_of(y.dtype, pattern);
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    cl_event event;
    cl_int error = clEnqueueFillBuffer(stream->queue, buffer_of(&y), pattern, size, y.offset,
                                       y.byte_size, 0, NULL, &event);
    opencl_stream_queued(stream, op->op, "clEnqueueFillBuffer", error, event, status);
}

/* ---- Copies: Identity, Reshape, Const -------------------------------------------------------- */

static void copy(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t x, y;
    if (opencl_input(context, 0, &x, status) && opencl_output(context, 0, &y, status))
        opencl_copy_tensor(context, op->op, &x, &y, status);
}

static void CL_CALLBACK free_staging(cl_event event, cl_int state, void *staging) {
    (void)event;
    (void)state;
    free(staging);
}

/* Const: the attribute's bytes, which live only during this call, go through a host copy that
 * a callback frees once the device has them. */
static void constant(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t y;
    const void *bytes = NULL;
    uint64_t size = 0;
    opencl_host->kernel_attr_bytes(context, "value", &bytes, &size, status);
    if (opencl_failed(status) || !opencl_output(context, 0, &y, status) || y.byte_size == 0)
        return;
    if (size != y.byte_size) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "Const: %llu value bytes for a tensor of %llu bytes",
                                (unsigned long long)size, (unsigned long long)y.byte_size);
        return;
    }
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    void *staging = malloc((size_t)size);
    if (staging == NULL) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "Const on GPU:%d: out of host memory for %llu bytes",
                                (int)stream->device->ordinal, (unsigned long long)size);
        return;
    }
    memcpy(staging, bytes, (size_t)size);
    cl_event event;
    cl_int error = clEnqueueWriteBuffer(stream->queue, buffer_of(&y), CL_FALSE, y.offset,
                                        (size_t)size, staging, 0, NULL, &event);
    if (error == CL_SUCCESS) error = clSetEventCallback(event, CL_COMPLETE, free_staging, staging);
    if (error != CL_SUCCESS) {
        opencl_fail(status, stream->device, op->op, "clEnqueueWriteBuffer", error);
        free(staging);
        return;
    }
    opencl_stream_track(stream, event, op->op, status);
}

/* ---- Cast ------------------------------------------------------------------------------------ */

/* Cast's kernels, cast_<from>_<to>, by source and destination dtype. */
static int32_t cast_ids[OPENCL_NUM_DTYPES][OPENCL_NUM_DTYPES];

static void cast(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const gpu_op_t *op = kernel;
    tp_tensor_view_t x, y;
    if (!opencl_input(context, 0, &x, status) || !opencl_output(context, 0, &y, status)) return;
    const opencl_device_t *device = opencl_host->kernel_device(context);
    bool in_range = (int)x.dtype > 0 && (int)x.dtype < OPENCL_NUM_DTYPES && (int)y.dtype > 0 &&
                    (int)y.dtype < OPENCL_NUM_DTYPES;
    int32_t id = in_range ? cast_ids[x.dtype][y.dtype] : -1;
    if (id < 0 || ((x.dtype == TP_FLOAT64 || y.dtype == TP_FLOAT64) && !device->has_fp64)) {
        opencl_host->status_set(status, TP_UNIMPLEMENTED,
                                "Cast on GPU:%d (%s): no kernel from %s to %s%s",
                                (int)device->ordinal, device->name,
                                in_range ? opencl_dtype_suffix(x.dtype) : "?",
                                in_range ? opencl_dtype_suffix(y.dtype) : "?",
                                in_range ? ": the device lacks cl_khr_fp64" : "");
        return;
    }
    if (y.num_elements == 0) return;
    launch_per_element(context, op->op, id, (const tp_tensor_view_t *[]){&x, &y}, 2, status);
}

/* ---- Registration ---------------------------------------------------------------------------- */

static gpu_op_t ops[] = {
    {"Relu", "relu", {0}},         {"Neg", "neg", {0}},
    {"Abs", "abs", {0}},           {"Square", "square", {0}},
    {"Sigmoid", "sigmoid", {0}},   {"Tanh", "tanh", {0}},
    {"Exp", "exp", {0}},           {"Log", "log", {0}},
    {"Sqrt", "sqrt", {0}},         {"Add", "add", {0}},
    {"Sub", "sub", {0}},           {"Mul", "mul", {0}},
    {"Div", "div", {0}},           {"AddN", "add", {0}},
    {"BiasAdd", "add", {0}},       {"ReluGrad", "relu_grad", {0}},
    {"SigmoidGrad", "sigmoid_grad", {0}}, {"TanhGrad", "tanh_grad", {0}},
    {"Fill", "fill", {0}},         {"ZerosLike", NULL, {0}},
    {"OnesLike", NULL, {0}},       {"Identity", NULL, {0}},
    {"Reshape", NULL, {0}},        {"Const", NULL, {0}},
    {"Cast", NULL, {0}},           {"Rsqrt", "rsqrt", {0}},
    {"Sign", "sign", {0}},         {"Maximum", "maximum", {0}},
    {"Minimum", "minimum", {0}},
};

static gpu_op_t *find_op(const char *name) {
    for (size_t i = 0; i < COUNT(ops); i++)
        if (strcmp(ops[i].op, name) == 0) return &ops[i];
    return NULL;
}

/* Registers `op`'s kernel for `dtypes` of attribute `attr`, taking the ids of its OpenCL
 * kernels <kernel>_<dtype> (float64 ones only when some device has cl_khr_fp64). */
static void register_op(tp_registrar_t *registrar, const char *name, const char *attr,
                        const tp_dtype_t *dtypes, size_t count, opencl_compute_fn compute,
                        bool fp64, tp_plugin_status_t *status) {
    if (opencl_failed(status)) return;
    gpu_op_t *op = find_op(name);
    tp_dtype_t kept[8];
    size_t num_kept = 0;
    for (int d = 0; d < OPENCL_NUM_DTYPES; d++) op->ids[d] = -1;
    for (size_t i = 0; i < count && !opencl_failed(status); i++) {
        if (dtypes[i] == TP_FLOAT64 && !fp64) continue;
        kept[num_kept++] = dtypes[i];
        if (op->kernel == NULL) continue;
        char kernel_name[64];
        snprintf(kernel_name, sizeof kernel_name, "%s_%s", op->kernel,
                 opencl_dtype_suffix(dtypes[i]));
        op->ids[dtypes[i]] = opencl_kernel_id("elementwise", kernel_name, status);
    }
    opencl_register(registrar, name, attr, kept, num_kept, op, compute, status);
}

static void register_fill_and_cast(tp_registrar_t *registrar, bool fp64,
                                   tp_plugin_status_t *status) {
    gpu_op_t *fill_op = find_op("Fill");
    const char *fill_kernels[3] = {"fill_1", "fill_4", "fill_8"};
    for (int i = 0; i < 3 && !opencl_failed(status); i++)
        fill_op->ids[i] = opencl_kernel_id("elementwise", fill_kernels[i], status);
    tp_dtype_t kept[8];
    size_t num_kept = 0;
    for (size_t i = 0; i < COUNT(all_types); i++)
        if (all_types[i] != TP_FLOAT64 || fp64) kept[num_kept++] = all_types[i];
    opencl_register(registrar, "Fill", "T", kept, num_kept, fill_op, fill, status);

    for (int from = 0; from < OPENCL_NUM_DTYPES; from++)
        for (int to = 0; to < OPENCL_NUM_DTYPES; to++) cast_ids[from][to] = -1;
    for (size_t f = 0; f < num_kept && !opencl_failed(status); f++)
        for (size_t t = 0; t < num_kept && !opencl_failed(status); t++) {
            char kernel_name[64];
            snprintf(kernel_name, sizeof kernel_name, "cast_%s_%s", opencl_dtype_suffix(kept[f]),
                     opencl_dtype_suffix(kept[t]));
            cast_ids[kept[f]][kept[t]] = opencl_kernel_id("elementwise", kernel_name, status);
        }
    const tp_type_constraint_t cast_constraints[] = {
        {sizeof cast_constraints[0], "SrcT", kept, num_kept},
        {sizeof cast_constraints[0], "DstT", kept, num_kept}};
    const tp_kernel_def_t def = {.struct_size = sizeof def,
                                 .op = "Cast",
                                 .device_type = "GPU",
                                 .constraints = cast_constraints,
                                 .num_constraints = 2,
                                 .kernel_state = find_op("Cast"),
                                 .create = opencl_share_op,
                                 .compute = cast};
    if (!opencl_failed(status)) opencl_host->register_kernel(registrar, &def, status);
}

void opencl_register_elementwise_kernels(tp_registrar_t *registrar, bool fp64,
                                         tp_plugin_status_t *status) {
    static const char *const number_unary[] = {"Relu", "Neg", "Abs", "Square", "Sign"};
    static const char *const float_unary[] = {"Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Rsqrt"};
    static const char *const number_binary[] = {"Add", "Sub", "Mul", "Div", "Maximum",
                                                 "Minimum"};
    for (size_t i = 0; i < COUNT(number_unary); i++)
        register_op(registrar, number_unary[i], "T", numbers, COUNT(numbers), unary, fp64,
                    status);
    for (size_t i = 0; i < COUNT(float_unary); i++)
        register_op(registrar, float_unary[i], "T", floats, COUNT(floats), unary, fp64, status);
    for (size_t i = 0; i < COUNT(number_binary); i++)
        register_op(registrar, number_binary[i], "T", numbers, COUNT(numbers), binary, fp64,
                    status);
    register_op(registrar, "AddN", "T", numbers, COUNT(numbers), add_n, fp64, status);
    register_op(registrar, "BiasAdd", "T", numbers, COUNT(numbers), bias_add, fp64, status);
    register_op(registrar, "ReluGrad", "T", numbers, COUNT(numbers), gradient, fp64, status);
    register_op(registrar, "SigmoidGrad", "T", floats, COUNT(floats), gradient, fp64, status);
    register_op(registrar, "TanhGrad", "T", floats, COUNT(floats), gradient, fp64, status);
    register_op(registrar, "ZerosLike", "T", all_types, COUNT(all_types), fill_constant, fp64,
                status);
    register_op(registrar, "OnesLike", "T", all_types, COUNT(all_types), fill_constant, fp64,
                status);
    register_op(registrar, "Identity", "T", all_types, COUNT(all_types), copy, fp64, status);
    register_op(registrar, "Reshape", "T", all_types, COUNT(all_types), copy, fp64, status);
    register_op(registrar, "Const", "dtype", all_types, COUNT(all_types), constant, fp64,
                status);
    register_fill_and_cast(registrar, fp64, status);
}
