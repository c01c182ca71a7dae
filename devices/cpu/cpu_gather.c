/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels driven by integer indices: Gather, UnsortedSegmentSum (Gather's gradient: rows added
 * back where they were read) and OneHot. An index outside its dimension fails with the index's
 * value and its place among the indices, before anything is written. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cpu_kernels.h"

/* Index k of an int32, int64 or uint8 tensor. */
static int64_t index_at(const cpu_tensor_t *indices, int64_t k) {
    switch (indices->view.dtype) {
    case TP_INT32: return ((const int32_t *)indices->data)[k];
    case TP_UINT8: return ((const uint8_t *)indices->data)[k];
    default: return ((const int64_t *)indices->data)[k];
    }
}

/* "[1,2]": the coordinates of element k of the indices, as TensorFlow names a bad index; ""
 * for a scalar. */
static void position_text(const tp_tensor_view_t *view, int64_t k, char *text, size_t capacity) {
    if (view->rank == 0) {
        text[0] = '\0';
        return;
    }
    int64_t coordinates[TP_MAX_RANK];
    for (int32_t d = view->rank - 1; d >= 0; d--) {
        coordinates[d] = k % view->dims[d];
        k /= view->dims[d];
    }
    size_t used = (size_t)snprintf(text, capacity, "[");
    for (int32_t d = 0; d < view->rank && used < capacity; d++)
        used += (size_t)snprintf(text + used, capacity - used, d == 0 ? "%lld" : ",%lld",
                                 (long long)coordinates[d]);
    if (used < capacity) snprintf(text + used, capacity - used, "]");
}

/* Fails naming the first index outside [low, limit). */
static bool check_indices(const char *op, const char *name, const cpu_tensor_t *indices,
                          int64_t low, int64_t limit, tp_plugin_status_t *status) {
    for (int64_t k = 0; k < indices->view.num_elements; k++) {
        int64_t index = index_at(indices, k);
        if (index < low || index >= limit) {
            char position[256];
            position_text(&indices->view, k, position, sizeof position);
            tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT,
                                    "%s: %s%s = %lld is not in [0, %lld)", op, name, position,
                                    (long long)index, (long long)limit);
            return false;
        }
    }
    return true;
}

/* ---- Gather ---------------------------------------------------------------------------------- */

/* params seen as [outer, n, inner]; the output as [outer, indices, inner]. */
typedef struct {
    const char *params;
    char *out;
    const cpu_tensor_t *indices;
    int64_t n, count, row_bytes;
} gather_job_t;

static void gather_rows(void *arg, int64_t begin, int64_t end) {
    const gather_job_t *job = arg;
    for (int64_t r = begin; r < end; r++) {
        int64_t outer = r / job->count, index = index_at(job->indices, r % job->count);
        memcpy(job->out + r * job->row_bytes,
               job->params + (outer * job->n + index) * job->row_bytes, (size_t)job->row_bytes);
    }
}

static void gather(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t params, indices, y;
    int64_t axis = 0;
    tp_cpu_host->kernel_attr_int(context, "axis", &axis, status);
    if (cpu_failed(status) || !cpu_input(context, 0, &params, status) ||
        !cpu_input(context, 1, &indices, status) || !cpu_output(context, 0, &y, status))
        return;
    if (axis < 0) axis += params.view.rank;
    int64_t n = params.view.dims[axis];
    int64_t outer = cpu_dims_product(params.view.dims, 0, (int32_t)axis);
    int64_t inner = cpu_dims_product(params.view.dims, (int32_t)axis + 1, params.view.rank);
    /* Every index is checked, even when the output is empty, so that a bad one never passes
     * unseen. */
    if (!check_indices("Gather", "indices", &indices, 0, n, status) || y.view.num_elements == 0)
        return;
    gather_job_t job = {params.data, y.data, &indices, n, indices.view.num_elements,
                        inner * (int64_t)cpu_element_size(&y.view)};
    cpu_parallel_for(outer * job.count, inner, gather_rows, &job);
}

/* ---- UnsortedSegmentSum ---------------------------------------------------------------------- */

/* Columns [begin, end) of every row of data added into the rows of out their ids name; a
 * negative id drops its row (TensorFlow's rule). Threads split the columns, so no two write one
 * element. */
typedef struct {
    const cpu_tensor_t *data, *ids;
    cpu_tensor_t *out;
    int64_t rows, columns;
} segment_job_t;

#define SEGMENT_SUM(T, U)                                                                      \
    do {                                                                                       \
        const T *in = job->data->data;                                                         \
        T *out = job->out->data;                                                               \
        for (int64_t r = 0; r < job->rows; r++) {                                              \
            int64_t id = index_at(job->ids, r);                                                \
            if (id < 0) continue;                                                              \
            const T *row = in + r * job->columns;                                              \
            T *sum = out + id * job->columns;                                                  \
            for (int64_t c = begin; c < end; c++) sum[c] = (T)((U)sum[c] + (U)row[c]);         \
        }                                                                                      \
    } while (0)

static void segment_columns(void *arg, int64_t begin, int64_t end) {
    const segment_job_t *job = arg;
    switch (job->data->view.dtype) {
    case TP_FLOAT32: SEGMENT_SUM(float, float); break;
    case TP_FLOAT64: SEGMENT_SUM(double, double); break;
    /* Integers wrap, through unsigned arithmetic, as Add's do. */
#define INTEGER_CASE(dt, T, U, is_signed)                                                       \
    case dt: SEGMENT_SUM(T, U); break;
        CPU_FOR_EACH_INTEGER(INTEGER_CASE)
#undef INTEGER_CASE
    default: break;
    }
}

static void unsorted_segment_sum(void *kernel, tp_kernel_context_t *context,
                                 tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t data, ids, y;
    if (!cpu_input(context, 0, &data, status) || !cpu_input(context, 1, &ids, status) ||
        !cpu_output(context, 0, &y, status))
        return;
    int64_t segments = y.view.dims[0];
    if (!check_indices("UnsortedSegmentSum", "segment_ids", &ids, INT64_MIN, segments, status))
        return;
    if (y.view.byte_size > 0) memset(y.data, 0, y.view.byte_size);
    int64_t columns = cpu_dims_product(y.view.dims, 1, y.view.rank);
    segment_job_t job = {&data, &ids, &y, ids.view.num_elements, columns};
    cpu_parallel_for(columns, job.rows, segment_columns, &job);
}

/* ---- OneHot ---------------------------------------------------------------------------------- */

/* off_value everywhere, then on_value where each index points; an index outside [0, depth)
 * leaves its row all off_value, as in TensorFlow. */
static void one_hot(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t indices, y;
    int64_t depth = 0, axis = -1;
    double on = 1, off = 0;
    tp_cpu_host->kernel_attr_int(context, "depth", &depth, status);
    tp_cpu_host->kernel_attr_int(context, "axis", &axis, status);
    tp_cpu_host->kernel_attr_float(context, "on_value", &on, status);
    tp_cpu_host->kernel_attr_float(context, "off_value", &off, status);
    if (cpu_failed(status) || !cpu_input(context, 0, &indices, status) ||
        !cpu_output(context, 0, &y, status))
        return;
    _Alignas(16) unsigned char on_bytes[16], off_bytes[16];
    if (!cpu_scalar_bytes(y.view.dtype, on, on_bytes, "OneHot", status) ||
        !cpu_scalar_bytes(y.view.dtype, off, off_bytes, "OneHot", status))
        return;
    size_t size = cpu_element_size(&y.view);
    cpu_fill_elements(y.data, y.view.num_elements, off_bytes, size);
    if (y.view.num_elements == 0) return;
    /* The indices as [before, after] around the new axis. */
    int32_t at = axis == -1 ? indices.view.rank : (int32_t)axis;
    int64_t after = cpu_dims_product(indices.view.dims, at, indices.view.rank);
    for (int64_t k = 0; k < indices.view.num_elements; k++) {
        int64_t index = index_at(&indices, k);
        if (index < 0 || index >= depth) continue;
        int64_t before = k / after, rest = k % after;
        memcpy((char *)y.data + (size_t)(((before * depth) + index) * after + rest) * size,
               on_bytes, size);
    }
}

void cpu_register_gather_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "Gather", NULL, NULL, 0, gather, status);
    cpu_register(registrar, "UnsortedSegmentSum", "T", CPU_NUMBERS, unsorted_segment_sum, status);
    /* OneHot writes its values' bytes, 16-bit floats' included (cpu_scalar_bytes). */
    cpu_register_native(registrar, "OneHot", "T", CPU_ALL, one_hot, status);
}
