/* SPDX-License-Identifier: Apache-2.0 */
/* Gather, OneHot and UnsortedSegmentSum on the GPU, from kernels/index.cl. Gather's and
 * UnsortedSegmentSum's indices are checked on the device, in order, before anything is
 * computed: the first one out of range fails the op with its value and coordinates, as on the
 * CPU, through a record the stream reads back behind the launch. */
#include <stdint.h>
#include <stdio.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* By log2 of the element size and the index dtype (0 int32, 1 int64, 2 uint8). */
static int32_t gather_ids[4][2], one_hot_ids[4][3], check_ids[2];
/* UnsortedSegmentSum's by index dtype (0 int32, 1 int64) and dtype. */
static int32_t segment_ids[2][OPENCL_NUM_DTYPES];

static int index_kind(tp_dtype_t dtype) {
    return dtype == TP_INT64 ? 1 : dtype == TP_UINT8 ? 2 : 0;
}

/* "NAME[1,2] = 7 is not in [0, 5)" from record {1, index, limit, rank, coordinates...}. */
static void describe_index(const char *name, const int64_t *record, char *text,
                           size_t capacity) {
    char position[160] = "";
    int64_t rank = record[3] < 0 ? 0 : record[3] > 8 ? 8 : record[3];
    size_t used = 0;
    for (int64_t d = 0; d < rank && used < sizeof position; d++)
        used += (size_t)snprintf(position + used, sizeof position - used,
                                 d == 0 ? "[%lld" : ",%lld", (long long)record[4 + d]);
    if (rank > 0 && used < sizeof position) snprintf(position + used, sizeof position - used, "]");
    snprintf(text, capacity, "%s%s = %lld is not in [0, %lld)", name, position,
             (long long)record[1], (long long)record[2]);
}

static void describe_bad_index(const int64_t *record, char *text, size_t capacity) {
    describe_index("indices", record, text, capacity);
}

static void describe_bad_segment(const int64_t *record, char *text, size_t capacity) {
    describe_index("segment_ids", record, text, capacity);
}

/* Queues the check that every index lies in [low, limit) and the read of its record; false
 * with `status` set when it cannot be queued. */
static bool check_indices(tp_kernel_context_t *context, const char *what,
                          const tp_tensor_view_t *indices, cl_long low, cl_long limit,
                          opencl_describe_fn describe, tp_plugin_status_t *status) {
    if (indices->num_elements == 0) return true;
    cl_mem i_mem = (cl_mem)indices->mem;
    cl_ulong total = (cl_ulong)indices->num_elements;
    cl_int rank = indices->rank;
    cl_long8 dims = {{0}};
    for (int32_t d = 0; d < indices->rank && d < 8; d++) dims.s[d] = indices->dims[d];
    opencl_arg_t args[] = {OPENCL_ARG(i_mem), OPENCL_ARG(indices->offset),
                           OPENCL_ARG(total), OPENCL_ARG(low),
                           OPENCL_ARG(limit), OPENCL_ARG(rank),
                           OPENCL_ARG(dims),  {0, NULL}};
    int32_t id = check_ids[index_kind(indices->dtype)];
    return opencl_launch_check(context, what, id, args, COUNT(args) - 1, describe, status);
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
    if (!check_indices(context, "Gather", &indices, 0, n, describe_bad_index, status)) return;
    /* With nothing to gather from, any index failed the check above. */
    if (y.num_elements == 0 || n == 0) return;
    cl_mem p_mem = (cl_mem)params.mem, y_mem = (cl_mem)y.mem;
    cl_ulong rows = (cl_ulong)(outer * count);
    const opencl_arg_t args[] = {OPENCL_ARG(p_mem),  OPENCL_ARG(params.offset),
                                 OPENCL_ARG(i_mem),  OPENCL_ARG(indices.offset),
                                 OPENCL_ARG(y_mem),  OPENCL_ARG(y.offset),
                                 OPENCL_ARG(rows),   OPENCL_ARG(count),
                                 OPENCL_ARG(n),      OPENCL_ARG(inner)};
    int32_t id = gather_ids[opencl_size_index(y.dtype)][kind];
    opencl_launch(context, "Gather", id, args, COUNT(args), (size_t)rows, 0, status);
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
    cl_ulong n = (cl_ulong)y.num_elements, on_bits = opencl_scalar_bits(y.dtype, on),
             off_bits = opencl_scalar_bits(y.dtype, off);
    cl_long d = depth;
    const opencl_arg_t args[] = {OPENCL_ARG(i_mem), OPENCL_ARG(indices.offset), OPENCL_ARG(y_mem),
                                 OPENCL_ARG(y.offset), OPENCL_ARG(n), OPENCL_ARG(d),
                                 OPENCL_ARG(after), OPENCL_ARG(on_bits), OPENCL_ARG(off_bits)};
    int32_t id = one_hot_ids[opencl_size_index(y.dtype)][index_kind(indices.dtype)];
    opencl_launch(context, "OneHot", id, args, COUNT(args), (size_t)n, 0, status);
}

static void segment_sum(tp_kernel_context_t *context, tp_plugin_status_t *status) {
    tp_tensor_view_t data, ids, y;
    if (!opencl_input(context, 0, &data, status) || !opencl_input(context, 1, &ids, status) ||
        !opencl_output(context, 0, &y, status))
        return;
    if (y.rank < 1 || ids.rank > 8 || (ids.dtype != TP_INT32 && ids.dtype != TP_INT64)) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "UnsortedSegmentSum: an output of rank %d and segment_ids of "
                                "rank %d: not a sum the GPU can run",
                                (int)y.rank, (int)ids.rank);
        return;
    }
    int32_t id = opencl_kernel_for("UnsortedSegmentSum", segment_ids[index_kind(ids.dtype)],
                                   y.dtype, context, status);
    if (id < 0) return;
    cl_long segments = y.dims[0], columns = 1, rows = ids.num_elements;
    for (int32_t d = 1; d < y.rank; d++) columns *= y.dims[d];
    if (!check_indices(context, "UnsortedSegmentSum", &ids, INT64_MIN, segments,
                       describe_bad_segment, status) ||
        y.num_elements == 0)
        return;
    cl_mem d_mem = (cl_mem)data.mem, i_mem = (cl_mem)ids.mem, y_mem = (cl_mem)y.mem;
    cl_ulong n = (cl_ulong)y.num_elements;
    const opencl_arg_t args[] = {OPENCL_ARG(d_mem), OPENCL_ARG(data.offset), OPENCL_ARG(i_mem),
                                 OPENCL_ARG(ids.offset), OPENCL_ARG(y_mem), OPENCL_ARG(y.offset),
                                 OPENCL_ARG(n), OPENCL_ARG(rows), OPENCL_ARG(columns)};
    opencl_launch(context, "UnsortedSegmentSum", id, args, COUNT(args), (size_t)n, 0, status);
}

static void compute_segment_sum(void *kernel, tp_kernel_context_t *context,
                                tp_plugin_status_t *status) {
    (void)kernel;
    segment_sum(context, status);
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
    const tp_dtype_t sums[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_FLOAT64};
    size_t num_sums = fp64 ? COUNT(sums) : COUNT(sums) - 1;
    for (int d = 0; d < OPENCL_NUM_DTYPES; d++) segment_ids[0][d] = segment_ids[1][d] = -1;
    for (size_t t = 0; t < num_sums && !opencl_failed(status); t++)
        for (int k = 0; k < 2 && !opencl_failed(status); k++) {
            char name[64];
            snprintf(name, sizeof name, "segment_sum_%s_%s", opencl_dtype_suffix(sums[t]),
                     kinds[k]);
            segment_ids[k][sums[t]] = opencl_kernel_id("index", name, status);
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
    const tp_type_constraint_t segment_constraints[] = {
        {sizeof segment_constraints[0], "T", sums, num_sums},
        {sizeof segment_constraints[0], "Tindices", index_dtypes, 2}};
    tp_kernel_def_t segment_def = gather_def;
    segment_def.op = "UnsortedSegmentSum";
    segment_def.constraints = segment_constraints;
    segment_def.compute = compute_segment_sum;
    if (!opencl_failed(status)) opencl_host->register_kernel(registrar, &segment_def, status);
}
