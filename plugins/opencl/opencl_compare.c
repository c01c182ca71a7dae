/* SPDX-License-Identifier: Apache-2.0 */
/* The comparisons (Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual) and the searches
 * ArgMax and ArgMin on the GPU, from kernels/compare.cl. compute only queues work. */
#include <stdio.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef struct compare_op {
    const char *op, *kernel;
    bool ordered; /* an ordering or a search: no bool kernels */
    bool search;
    /* By the input's dtype; a search's by index dtype (0 int32, 1 int64) and then input dtype. */
    int32_t ids[2][OPENCL_NUM_DTYPES];
} compare_op_t;

static compare_op_t ops[] = {
    {"Equal", "equal", false, false, {{0}}},
    {"NotEqual", "not_equal", false, false, {{0}}},
    {"Less", "less", true, false, {{0}}},
    {"LessEqual", "less_equal", true, false, {{0}}},
    {"Greater", "greater", true, false, {{0}}},
    {"GreaterEqual", "greater_equal", true, false, {{0}}},
    {"ArgMax", "arg_max", true, true, {{0}}},
    {"ArgMin", "arg_min", true, true, {{0}}},
};

static void compare(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const compare_op_t *op = kernel;
    tp_tensor_view_t a, b, z;
    if (!opencl_input(context, 0, &a, status) || !opencl_input(context, 1, &b, status) ||
        !opencl_output(context, 0, &z, status))
        return;
    int32_t id = opencl_kernel_for(op->op, op->ids[0], a.dtype, context, status);
    if (id < 0 || z.num_elements == 0) return;
    cl_long8 dims = {{0}}, a_strides = {{0}}, b_strides = {{0}};
    cl_int rank = 0;
    if (a.num_elements != z.num_elements || b.num_elements != z.num_elements) {
        rank = z.rank;
        for (int32_t d = 0; d < z.rank; d++) dims.s[d] = z.dims[d];
        opencl_broadcast_strides(&a, z.rank, z.dims, a_strides.s);
        opencl_broadcast_strides(&b, z.rank, z.dims, b_strides.s);
    }
    cl_mem a_mem = (cl_mem)a.mem, b_mem = (cl_mem)b.mem, z_mem = (cl_mem)z.mem;
    cl_ulong n = (cl_ulong)z.num_elements;
    const opencl_arg_t args[] = {OPENCL_ARG(a_mem),     OPENCL_ARG(a.offset), OPENCL_ARG(b_mem),
                                 OPENCL_ARG(b.offset),  OPENCL_ARG(z_mem),    OPENCL_ARG(z.offset),
                                 OPENCL_ARG(n),         OPENCL_ARG(rank),     OPENCL_ARG(dims),
                                 OPENCL_ARG(a_strides), OPENCL_ARG(b_strides)};
    opencl_launch(context, op->op, id, args, COUNT(args), (size_t)n, 0, status);
}

static void search(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const compare_op_t *op = kernel;
    tp_tensor_view_t x, y;
    int64_t axis = 0;
    opencl_host->kernel_attr_int(context, "axis", &axis, status);
    if (opencl_failed(status) || !opencl_input(context, 0, &x, status) ||
        !opencl_output(context, 0, &y, status))
        return;
    if (axis < 0) axis += x.rank;
    if (axis < 0 || axis >= x.rank || x.dims[axis] == 0) {
        /* The shape function refuses these; the kernel would read outside the tensor. */
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "%s: axis %lld is out of range or empty for a tensor of rank %d",
                                op->op, (long long)axis, (int)x.rank);
        return;
    }
    int32_t id =
        opencl_kernel_for(op->op, op->ids[y.dtype == TP_INT64 ? 1 : 0], x.dtype, context, status);
    if (id < 0 || y.num_elements == 0) return;
    cl_long extent = x.dims[axis], inner = 1;
    for (int32_t d = (int32_t)axis + 1; d < x.rank; d++) inner *= x.dims[d];
    cl_mem x_mem = (cl_mem)x.mem, y_mem = (cl_mem)y.mem;
    cl_ulong n = (cl_ulong)y.num_elements;
    const opencl_arg_t args[] = {OPENCL_ARG(x_mem), OPENCL_ARG(x.offset), OPENCL_ARG(y_mem),
                                 OPENCL_ARG(y.offset), OPENCL_ARG(n), OPENCL_ARG(extent),
                                 OPENCL_ARG(inner)};
    opencl_launch(context, op->op, id, args, COUNT(args), (size_t)n, 0, status);
}

void opencl_register_compare_kernels(tp_registrar_t *registrar, bool fp64,
                                     tp_plugin_status_t *status) {
    static const tp_dtype_t all[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32, TP_INT64, TP_UINT8,
                                     TP_BOOL};
    static const char *const index_suffixes[2] = {"int32", "int64"};
    for (size_t i = 0; i < COUNT(ops) && !opencl_failed(status); i++) {
        compare_op_t *op = &ops[i];
        tp_dtype_t kept[COUNT(all)];
        size_t num_kept = 0;
        for (int d = 0; d < OPENCL_NUM_DTYPES; d++) op->ids[0][d] = op->ids[1][d] = -1;
        for (size_t k = 0; k < COUNT(all) && !opencl_failed(status); k++) {
            if ((all[k] == TP_FLOAT64 && !fp64) || (all[k] == TP_BOOL && op->ordered)) continue;
            kept[num_kept++] = all[k];
            for (int index = 0; index < (op->search ? 2 : 1); index++) {
                char name[64];
                if (op->search)
                    snprintf(name, sizeof name, "%s_%s_%s", op->kernel,
                             opencl_dtype_suffix(all[k]), index_suffixes[index]);
                else
                    snprintf(name, sizeof name, "%s_%s", op->kernel, opencl_dtype_suffix(all[k]));
                op->ids[index][all[k]] = opencl_kernel_id("compare", name, status);
            }
        }
        opencl_register(registrar, op->op, "T", kept, num_kept, op,
                        op->search ? search : compare, status);
    }
}
