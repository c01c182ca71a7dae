/* SPDX-License-Identifier: Apache-2.0 */
/* Gather and OneHot on the GPU, from kernels/index.cl, by element size. Gather's indices are
 * checked on the device, in order, before the rows are copied: the first one outside the
 * gathered dimension fails the op with its value and coordinates, as on the CPU, through a
 * record the stream reads back behind the launch. */
#include <stdio.h>
#include <string.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* By log2 of the element size and the index dtype (0 int32, 1 int64, 2 uint8). */
static int32_t gather_ids[4][2], one_hot_ids[4][3], check_ids[2];

static int size_index(size_t size) { return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3; }
static int index_kind(tp_dtype_t dtype) {
    return dtype == TP_INT64 ? 1 : dtype == TP_UINT8 ? 2 : 0;
}

/* "indices[1,2] = 7 is not in [0, 5)" from record {1, index, limit, rank, coordinates...}. */
static void describe_bad_index(const int64_t *record, char *text, size_t capacity) {
    char position[160] = "";
    int64_t rank = record[3] < 0 ? 0 : record[3] > 8 ? 8 : record[3];
    size_t used = 0;
    for (int64_t d = 0; d < rank && used < sizeof position; d++)
        used += (size_t)snprintf(position + used, sizeof position - used,
                                 d == 0 ? "[%lld" : ",%lld", (long long)record[4 + d]);
    if (rank > 0 && used < sizeof position) snprintf(position + used, sizeof position - used, "]");
    snprintf(text, capacity, "indices%s = %lld is not in [0, %lld)", position,
             (long long)record[1], (long long)record[2]);
}

static void gather(tp_kernel_context_t *context, tp_plugin_status_t *status) {
    tp_tensor_view_t params, indices, y;
    int64_t axis = 0;
    opencl_host->kernel_attr_int(context, "axis", &axis, status);
    if (opencl_failed(status) || !opencl_input(context, 0, &params, status) ||
        !opencl_input(context, 1, &indices, status) || !opencl_output(context, 0, &y, status))
        return;
    if (axis < 0) axis += params.rank;
    if (axis < 0 || axis >= params.rank || indices.rank > 8 ||
        (indices.dtype != TP_INT32 && indices.dtype != TP_INT64)) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "Gather: axis %lld of params of rank %d, indices of rank %d and "
                                "dtype %s: not a gather the GPU can run",
                                (long long)axis, (int)params.rank, (int)indices.rank,
                                opencl_dtype_suffix(indices.dtype));
        return;
    }
    cl_long n = params.dims[axis], outer = 1, inner = 1, count = indices.num_elements;
    for (int32_t d = 0; d < axis; d++) outer *= params.dims[d];
    for (int32_t d = (int32_t)axis + 1; d < params.rank; d++) inner *= params.dims[d];
    int kind = index_kind(indices.dtype);
    cl_mem i_mem = (cl_mem)indices.mem;
    /* Every index is checked, even when the output is empty, as on the CPU. */
    if (count > 0) {
        opencl_device_t *device = opencl_host->kernel_device(context);
        const cl_long zeros[OPENCL_RECORD_SIZE] = {0};
        cl_int error = CL_SUCCESS;
        cl_mem record = clCreateBuffer(device->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                       sizeof zeros, (void *)zeros, &error);
        if (record == NULL || error != CL_SUCCESS) {
            opencl_fail(status, device, "Gather", "clCreateBuffer", error);
            return;
        }
        cl_ulong total = (cl_ulong)count;
        cl_int rank = indices.rank;
        cl_long8 dims = {{0}};
        for (int32_t d = 0; d < indices.rank; d++) dims.s[d] = indices.dims[d];
        const opencl_arg_t args[] = {OPENCL_ARG(i_mem), OPENCL_ARG(indices.offset),
                                     OPENCL_ARG(total), OPENCL_ARG(n), OPENCL_ARG(rank),
                                     OPENCL_ARG(dims),  OPENCL_ARG(record)};
        if (opencl_launch(context, "Gather", check_ids[kind], args, COUNT(args), 1, 0, status))
            opencl_stream_check_record(opencl_host->kernel_stream(context), record, "Gather",
                                       describe_bad_index, status);
        clReleaseMemObject(record); /* OpenCL keeps it while queued commands use it */
        if (opencl_failed(status)) return;
    }
    /* With nothing to gather from, any index failed the check above. */
    if (y.num_elements == 0 || n == 0) return;
    cl_mem p_mem = (cl_mem)params.mem, y_mem = (cl_mem)y.mem;
    cl_ulong rows = (cl_ulong)(outer * count);
    const opencl_arg_t args[] = {OPENCL_ARG(p_mem),  OPENCL_ARG(params.offset),
                                 OPENCL_ARG(i_mem),  OPENCL_ARG(indices.offset),
                                 OPENCL_ARG(y_mem),  OPENCL_ARG(y.offset),
                                 OPENCL_ARG(rows),   OPENCL_ARG(count),
                                 OPENCL_ARG(n),      OPENCL_ARG(inner)};
    int32_t id = gather_ids[size_index(opencl_dtype_size(y.dtype))][kind];
    opencl_launch(context, "Gather", id, args, COUNT(args), (size_t)rows, 0, status);
}

/* The bytes of `value` in `dtype`, low bytes first, as the CPU writes OneHot's values (the
 * core's shape function checked that an integer dtype's value is whole and in range). */
static cl_ulong value_bits(tp_dtype_t dtype, double value) {
    cl_ulong bits = 0;
    float f = (float)value;
    int32_t i = (int32_t)value;
    int64_t l = (int64_t)value;
    unsigned char byte = dtype == TP_BOOL ? value != 0 : (unsigned char)value;
    switch (dtype) {
    case TP_FLOAT32: memcpy(&bits, &f, sizeof f); break;
    case TP_FLOAT64: memcpy(&bits, &value, sizeof value); break;
    case TP_INT32: memcpy(&bits, &i, sizeof i); break;
    case TP_INT64: memcpy(&bits, &l, sizeof l); break;
    default: bits = byte; break;
    }
    return bits;
}

static void one_hot(tp_kernel_context_t *context, tp_plugin_status_t *status) {
    tp_tensor_view_t indices, y;
    int64_t depth = 0, axis = -1;
    double on = 1, off = 0;
    opencl_host->kernel_attr_int(context, "depth", &depth, status);
    opencl_host->kernel_attr_int(context, "axis", &axis, status);
    opencl_host->kernel_attr_float(context, "on_value", &on, status);
    opencl_host->kernel_attr_float(context, "off_value", &off, status);
    if (opencl_failed(status) || !opencl_input(context, 0, &indices, status) ||
        !opencl_output(context, 0, &y, status) || y.num_elements == 0 || depth <= 0)
        return;
    int32_t at = axis == -1 ? indices.rank : (int32_t)axis;
    cl_long after = 1;
    for (int32_t d = at; d < indices.rank; d++) after *= indices.dims[d];
    if (after == 0) return;
    cl_mem i_mem = (cl_mem)indices.mem, y_mem = (cl_mem)y.mem;
    cl_ulong n = (cl_ulong)y.num_elements, on_bits = value_bits(y.dtype, on),
             off_bits = value_bits(y.dtype, off);
    cl_long d = depth;
    const opencl_arg_t args[] = {OPENCL_ARG(i_mem), OPENCL_ARG(indices.offset), OPENCL_ARG(y_mem),
                                 OPENCL_ARG(y.offset), OPENCL_ARG(n), OPENCL_ARG(d),
                                 OPENCL_ARG(after), OPENCL_ARG(on_bits), OPENCL_ARG(off_bits)};
    int32_t id = one_hot_ids[size_index(opencl_dtype_size(y.dtype))][index_kind(indices.dtype)];
    opencl_launch(context, "OneHot", id, args, COUNT(args), (size_t)n, 0, status);
}

static void compute_gather(void *kernel, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    (void)kernel;
    gather(context, status);
}

static void compute_one_hot(void *kernel, tp_kernel_context_t *context,
                            tp_plugin_status_t *status) {
    (void)kernel;
    one_hot(context, status);
}

void opencl_register_index_kernels(tp_registrar_t *registrar, bool fp64,
                                   tp_plugin_status_t *status) {
    static const char *const sizes[4] = {"1", "2", "4", "8"};
    static const char *const kinds[3] = {"int32", "int64", "uint8"};
    for (int s = 0; s < 4 && !opencl_failed(status); s++)
        for (int k = 0; k < 3 && !opencl_failed(status); k++) {
            char name[48];
            if (k < 2) {
                snprintf(name, sizeof name, "gather_%s_%s", sizes[s], kinds[k]);
                gather_ids[s][k] = opencl_kernel_id("index", name, status);
            }
            snprintf(name, sizeof name, "one_hot_%s_%s", sizes[s], kinds[k]);
            one_hot_ids[s][k] = opencl_kernel_id("index", name, status);
        }
    for (int k = 0; k < 2 && !opencl_failed(status); k++) {
        char name[48];
        snprintf(name, sizeof name, "check_indices_%s", kinds[k]);
        check_ids[k] = opencl_kernel_id("index", name, status);
    }
    tp_dtype_t dtypes[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_UINT8, TP_BOOL, TP_FLOAT64};
    size_t num_dtypes = fp64 ? COUNT(dtypes) : COUNT(dtypes) - 1;
    static int unused;
    const tp_dtype_t index_dtypes[] = {TP_INT32, TP_INT64};
    const tp_type_constraint_t gather_constraints[] = {
        {sizeof gather_constraints[0], "T", dtypes, num_dtypes},
        {sizeof gather_constraints[0], "Tindices", index_dtypes, 2}};
    const tp_kernel_def_t gather_def = {.struct_size = sizeof gather_def,
                                        .op = "Gather",
                                        .device_type = "GPU",
                                        .constraints = gather_constraints,
                                        .num_constraints = 2,
                                        .kernel_state = &unused,
                                        .create = opencl_share_op,
                                        .compute = compute_gather};
    if (!opencl_failed(status)) opencl_host->register_kernel(registrar, &gather_def, status);
    opencl_register(registrar, "OneHot", "T", dtypes, num_dtypes, &unused, compute_one_hot,
                    status);
}
