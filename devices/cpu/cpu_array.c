/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels that copy blocks of elements between layouts without looking at them: Concat, Slice,
 * StridedSlice and its gradient, Pad and Tile. Each describes its copy as one walk over an index
 * space, with a stride per dimension on each side, so that it works on every dtype by element
 * size alone; the walk copies whole rows with memcpy where both sides are contiguous. */
#include <stdbool.h>
#include <string.h>

#include "cpu_kernels.h"

/* Tile walks (multiple, dimension) pairs: twice the rank. */
enum { MAX_WALK_RANK = 2 * TP_MAX_RANK };

/* Element k of the index space `dims` (row-major) is read from `source` at element
 * from_start + sum(c_d * from[d]) and written to `destination` at to_start + sum(c_d * to[d]). */
typedef struct {
    int32_t rank;
    int64_t dims[MAX_WALK_RANK];
    int64_t from[MAX_WALK_RANK], to[MAX_WALK_RANK];
    int64_t from_start, to_start;
    size_t element;
    const char *source;
    char *destination;
} walk_t;

size_t cpu_element_size(const tp_tensor_view_t *view) {
    return view->num_elements > 0 ? (size_t)(view->byte_size / (uint64_t)view->num_elements) : 0;
}

void cpu_row_major_strides(int32_t rank, const int64_t *dims, int64_t *strides) {
    int64_t stride = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= dims[d];
    }
}

int64_t cpu_dims_product(const int64_t *dims, int32_t begin, int32_t end) {
    int64_t product = 1;
    for (int32_t d = begin; d < end; d++) product *= dims[d];
    return product;
}

/* Drops dimensions of size 1 and merges neighbours that both sides step through as one, so
 * that a slice of whole rows becomes one long row (one memcpy). */
static void simplify(walk_t *walk) {
    int32_t kept = 0;
    for (int32_t d = 0; d < walk->rank; d++) {
        if (walk->dims[d] == 1) continue;
        if (kept > 0 && walk->from[kept - 1] == walk->from[d] * walk->dims[d] &&
            walk->to[kept - 1] == walk->to[d] * walk->dims[d]) {
            walk->dims[kept - 1] *= walk->dims[d];
            walk->from[kept - 1] = walk->from[d];
            walk->to[kept - 1] = walk->to[d];
            continue;
        }
        walk->dims[kept] = walk->dims[d];
        walk->from[kept] = walk->from[d];
        walk->to[kept] = walk->to[d];
        kept++;
    }
    if (kept == 0) {
        walk->dims[0] = 1;
        walk->from[0] = walk->to[0] = 1;
        kept = 1;
    }
    walk->rank = kept;
}

/* Copies `count` elements of a fixed size between strided places: the size a constant, so each
 * memcpy is one load and one store. */
#define COPY_ELEMENTS(SIZE)                                                                    \
    for (int64_t k = 0; k < count; k++)                                                        \
        memcpy(to + k * to_step * (SIZE), from + k * from_step * (SIZE), (SIZE))

static void copy_span(const walk_t *walk, int64_t from_at, int64_t to_at, int64_t count) {
    size_t size = walk->element;
    const char *from = walk->source + (size_t)from_at * size;
    char *to = walk->destination + (size_t)to_at * size;
    int64_t from_step = walk->from[walk->rank - 1], to_step = walk->to[walk->rank - 1];
    if (from_step == 1 && to_step == 1) {
        memcpy(to, from, (size_t)count * size);
        return;
    }
    switch (size) {
    case 1: COPY_ELEMENTS(1); break;
    case 2: COPY_ELEMENTS(2); break;
    case 4: COPY_ELEMENTS(4); break;
    case 8: COPY_ELEMENTS(8); break;
    default:
        for (int64_t k = 0; k < count; k++)
            memcpy(to + (size_t)(k * to_step) * size, from + (size_t)(k * from_step) * size,
                   size);
        break;
    }
}

static void walk_rows(void *arg, int64_t begin, int64_t end) {
    const walk_t *walk = arg;
    int32_t last = walk->rank - 1;
    for (int64_t row = begin; row < end; row++) {
        int64_t rest = row, from = walk->from_start, to = walk->to_start;
        for (int32_t d = last - 1; d >= 0; d--) {
            int64_t coordinate = rest % walk->dims[d];
            rest /= walk->dims[d];
            from += coordinate * walk->from[d];
            to += coordinate * walk->to[d];
        }
        copy_span(walk, from, to, walk->dims[last]);
    }
}

/* Runs the walk, by rows of its innermost dimension, on every core when it is large. */
static void run_walk(walk_t *walk) {
    for (int32_t d = 0; d < walk->rank; d++)
        if (walk->dims[d] == 0) return;
    simplify(walk);
    int64_t rows = cpu_dims_product(walk->dims, 0, walk->rank - 1);
    cpu_parallel_for(rows, walk->dims[walk->rank - 1], walk_rows, walk);
}

/* A walk over `rank` dimensions `dims` that is dense (row-major over dims) on one side:
 * `dense_strides` is walk->from for a dense source, walk->to for a dense destination. */
static void dense_walk(walk_t *walk, int32_t rank, const int64_t *dims, int64_t *dense_strides) {
    walk->rank = rank;
    for (int32_t d = 0; d < rank; d++) walk->dims[d] = dims[d];
    cpu_row_major_strides(rank, dims, dense_strides);
}

void cpu_fill_elements(void *data, int64_t count, const void *value, size_t size) {
    if (count <= 0 || size == 0) return;
    char *out = data;
    bool zero = true;
    for (size_t b = 0; b < size; b++) zero = zero && ((const unsigned char *)value)[b] == 0;
    if (zero) {
        memset(out, 0, (size_t)count * size);
        return;
    }
    /* Doubling copies: log2(count) memcpys instead of count small ones. */
    memcpy(out, value, size);
    size_t done = size, total = (size_t)count * size;
    while (done < total) {
        size_t chunk = done < total - done ? done : total - done;
        memcpy(out + done, out, chunk);
        done += chunk;
    }
}

bool cpu_scalar_bytes(tp_dtype_t dtype, double value, void *out, const char *op,
                      tp_plugin_status_t *status) {
    /* The core's shape function checked that an integer dtype's value is whole and in range;
     * a 16-bit float's is rounded to nearest even. */
    if (dtype < TP_FLOAT32 || dtype > TP_UINT64) {
        tp_cpu_host->status_set(status, TP_UNIMPLEMENTED,
                                "%s: the CPU cannot write a constant of dtype %d", op,
                                (int)dtype);
        return false;
    }
    cpu_store_double(out, dtype, 0, value);
    return true;
}

/* ---- Concat ---------------------------------------------------------------------------------- */

/* Each input lands in the output at its offset along the axis. */
static void concat(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t y;
    int64_t axis = 0;
    tp_cpu_host->kernel_attr_int(context, "axis", &axis, status);
    if (cpu_failed(status) || !cpu_output(context, 0, &y, status)) return;
    int32_t rank = y.view.rank;
    if (axis < 0) axis += rank;
    int64_t y_strides[TP_MAX_RANK], offset = 0;
    cpu_row_major_strides(rank, y.view.dims, y_strides);
    int32_t count = tp_cpu_host->kernel_num_inputs(context);
    for (int32_t i = 0; i < count; i++) {
        cpu_tensor_t x;
        if (!cpu_input(context, i, &x, status)) return;
        walk_t walk = {.element = cpu_element_size(&y.view), .source = x.data,
                       .destination = y.data, .to_start = offset * y_strides[axis]};
        dense_walk(&walk, rank, x.view.dims, walk.from);
        for (int32_t d = 0; d < rank; d++) walk.to[d] = y_strides[d];
        run_walk(&walk);
        offset += x.view.dims[axis];
    }
}

/* ---- Slice and StridedSlice ------------------------------------------------------------------ */

static void slice(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    const int64_t *begin = NULL;
    int32_t count = 0;
    tp_cpu_host->kernel_attr_int_list(context, "begin", &begin, &count, status);
    if (cpu_failed(status) || !cpu_input(context, 0, &x, status) ||
        !cpu_output(context, 0, &y, status))
        return;
    walk_t walk = {.element = cpu_element_size(&y.view), .source = x.data,
                   .destination = y.data};
    dense_walk(&walk, y.view.rank, y.view.dims, walk.to);
    cpu_row_major_strides(x.view.rank, x.view.dims, walk.from);
    for (int32_t d = 0; d < x.view.rank; d++) walk.from_start += begin[d] * walk.from[d];
    run_walk(&walk);
}

/* A strided slice per dimension of the sliced tensor: first index, step and count. */
typedef struct {
    int64_t begin[TP_MAX_RANK], stride[TP_MAX_RANK], count[TP_MAX_RANK];
} slice_plan_t;

static bool bit(int64_t mask, int32_t i) { return ((mask >> i) & 1) != 0; }

static int64_t clamp_bound(int64_t value, bool masked, bool is_begin, int64_t stride,
                           int64_t size) {
    int64_t low = stride > 0 ? 0 : -1, high = stride > 0 ? size : size - 1;
    if (masked) return (stride > 0) == is_begin ? low : high;
    int64_t forward = value < 0 ? value + size : value;
    return forward < low ? low : forward > high ? high : forward;
}

/* The ranges StridedSlice's attributes select of a tensor of `rank` dimensions `dims`. The
 * core's shape function has checked the attributes and planned the same ranges for the output's
 * shape (src/op/strided_slice.c, whose comments give the rules); a plug-in sees only plugin.h,
 * so the plan is made again here, and the caller checks that it covers the output. */
static bool plan_strided_slice(tp_kernel_context_t *context, int32_t rank, const int64_t *dims,
                               slice_plan_t *plan, tp_plugin_status_t *status) {
    const int64_t *begin = NULL, *end = NULL, *strides = NULL;
    int32_t count = 0, end_count = 0, strides_count = 0;
    int64_t begin_mask = 0, end_mask = 0, ellipsis = 0, new_axis = 0, shrink = 0;
    tp_cpu_host->kernel_attr_int_list(context, "begin", &begin, &count, status);
    tp_cpu_host->kernel_attr_int_list(context, "end", &end, &end_count, status);
    tp_cpu_host->kernel_attr_int_list(context, "strides", &strides, &strides_count, status);
    tp_cpu_host->kernel_attr_int(context, "begin_mask", &begin_mask, status);
    tp_cpu_host->kernel_attr_int(context, "end_mask", &end_mask, status);
    tp_cpu_host->kernel_attr_int(context, "ellipsis_mask", &ellipsis, status);
    tp_cpu_host->kernel_attr_int(context, "new_axis_mask", &new_axis, status);
    tp_cpu_host->kernel_attr_int(context, "shrink_axis_mask", &shrink, status);
    if (cpu_failed(status)) return false;
    int32_t entries = count;
    if (ellipsis == 0) ellipsis = (int64_t)1 << entries++;
    int32_t new_after_ellipsis = 0;
    bool seen = false;
    for (int32_t i = 0; i < count; i++) {
        if (seen && !bit(ellipsis, i) && bit(new_axis, i)) new_after_ellipsis++;
        seen = seen || bit(ellipsis, i);
    }
    int32_t d = 0;
    for (int32_t i = 0; i < entries && d <= rank; i++) {
        if (bit(ellipsis, i)) {
            for (; d < rank - (entries - 1 - i - new_after_ellipsis); d++) {
                plan->begin[d] = 0;
                plan->stride[d] = 1;
                plan->count[d] = dims[d];
            }
        } else if (!bit(new_axis, i) && d < rank) {
            int64_t stride = strides_count == 0 ? 1 : strides[i];
            if (bit(shrink, i)) {
                plan->begin[d] = begin[i] < 0 ? begin[i] + dims[d] : begin[i];
                plan->stride[d] = 1;
                plan->count[d] = 1;
            } else {
                int64_t first = clamp_bound(begin[i], bit(begin_mask, i), true, stride, dims[d]);
                int64_t last = clamp_bound(end[i], bit(end_mask, i), false, stride, dims[d]);
                int64_t span = last - first, n = 0;
                if (span != 0 && (span < 0) == (stride < 0))
                    n = span / stride + (span % stride != 0 ? 1 : 0);
                plan->begin[d] = n > 0 ? first : 0;
                plan->stride[d] = stride;
                plan->count[d] = n;
            }
            d++;
        }
    }
    (void)end_count;
    return true;
}

/* The walk that reads (StridedSlice) or writes (its gradient) the planned ranges of a tensor
 * of `rank` dimensions `dims`: `strided` holds the sliced side's strides and start. The dense
 * side must hold exactly the planned elements. */
static bool strided_walk(const slice_plan_t *plan, int32_t rank, const int64_t *dims,
                         int64_t dense_elements, walk_t *walk, int64_t *strided,
                         int64_t *strided_start, tp_plugin_status_t *status, const char *op) {
    int64_t tensor_strides[TP_MAX_RANK], elements = 1;
    cpu_row_major_strides(rank, dims, tensor_strides);
    walk->rank = rank;
    *strided_start = 0;
    for (int32_t d = 0; d < rank; d++) {
        walk->dims[d] = plan->count[d];
        elements *= plan->count[d];
        strided[d] = plan->stride[d] * tensor_strides[d];
        *strided_start += plan->begin[d] * tensor_strides[d];
    }
    if (elements != dense_elements) {
        tp_cpu_host->status_set(status, TP_INTERNAL,
                                "%s: the CPU's plan selects %lld elements where the shape "
                                "function's selects %lld",
                                op, (long long)elements, (long long)dense_elements);
        return false;
    }
    return true;
}

static void strided_slice(void *kernel, tp_kernel_context_t *context,
                          tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    slice_plan_t plan;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status) ||
        !plan_strided_slice(context, x.view.rank, x.view.dims, &plan, status))
        return;
    walk_t walk = {.element = cpu_element_size(&y.view), .source = x.data,
                   .destination = y.data};
    if (!strided_walk(&plan, x.view.rank, x.view.dims, y.view.num_elements, &walk, walk.from,
                      &walk.from_start, status, "StridedSlice"))
        return;
    cpu_row_major_strides(walk.rank, walk.dims, walk.to);
    run_walk(&walk);
}

/* Zeros, with dy written where StridedSlice read its elements. */
static void strided_slice_grad(void *kernel, tp_kernel_context_t *context,
                               tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t dy, y;
    slice_plan_t plan;
    if (!cpu_input(context, 0, &dy, status) || !cpu_output(context, 0, &y, status) ||
        !plan_strided_slice(context, y.view.rank, y.view.dims, &plan, status))
        return;
    if (y.view.byte_size > 0) memset(y.data, 0, y.view.byte_size);
    walk_t walk = {.element = cpu_element_size(&y.view), .source = dy.data,
                   .destination = y.data};
    if (!strided_walk(&plan, y.view.rank, y.view.dims, dy.view.num_elements, &walk, walk.to,
                      &walk.to_start, status, "StridedSliceGrad"))
        return;
    cpu_row_major_strides(walk.rank, walk.dims, walk.from);
    run_walk(&walk);
}

/* ---- Pad and Tile ---------------------------------------------------------------------------- */

/* The constant everywhere, then the input copied inside the borders. */
static void pad(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    const int64_t *paddings = NULL;
    int32_t count = 0;
    double constant = 0;
    tp_cpu_host->kernel_attr_int_list(context, "paddings", &paddings, &count, status);
    tp_cpu_host->kernel_attr_float(context, "constant_value", &constant, status);
    if (cpu_failed(status) || !cpu_input(context, 0, &x, status) ||
        !cpu_output(context, 0, &y, status))
        return;
    _Alignas(16) unsigned char value[16];
    if (!cpu_scalar_bytes(y.view.dtype, constant, value, "Pad", status)) return;
    size_t size = cpu_element_size(&y.view);
    cpu_fill_elements(y.data, y.view.num_elements, value, size);
    walk_t walk = {.element = size, .source = x.data, .destination = y.data};
    dense_walk(&walk, x.view.rank, x.view.dims, walk.from);
    cpu_row_major_strides(y.view.rank, y.view.dims, walk.to);
    for (int32_t d = 0; d < y.view.rank; d++) walk.to_start += paddings[2 * d] * walk.to[d];
    run_walk(&walk);
}

/* The output seen as (multiple, dimension) pairs: the source steps through the dimension and
 * stands still through the multiple. */
static void tile(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    const int64_t *multiples = NULL;
    int32_t count = 0;
    tp_cpu_host->kernel_attr_int_list(context, "multiples", &multiples, &count, status);
    if (cpu_failed(status) || !cpu_input(context, 0, &x, status) ||
        !cpu_output(context, 0, &y, status))
        return;
    int32_t rank = x.view.rank;
    int64_t x_strides[TP_MAX_RANK];
    cpu_row_major_strides(rank, x.view.dims, x_strides);
    walk_t walk = {.rank = 2 * rank, .element = cpu_element_size(&y.view), .source = x.data,
                   .destination = y.data};
    for (int32_t d = 0; d < rank; d++) {
        walk.dims[2 * d] = multiples[d];
        walk.dims[2 * d + 1] = x.view.dims[d];
        walk.from[2 * d] = 0;
        walk.from[2 * d + 1] = x_strides[d];
    }
    cpu_row_major_strides(walk.rank, walk.dims, walk.to);
    run_walk(&walk);
}

void cpu_register_array_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    /* No dtype constraint: these copy elements by size, whatever their dtype. */
    cpu_register(registrar, "Concat", NULL, NULL, 0, concat, status);
    cpu_register(registrar, "Slice", NULL, NULL, 0, slice, status);
    cpu_register(registrar, "StridedSlice", NULL, NULL, 0, strided_slice, status);
    cpu_register(registrar, "StridedSliceGrad", NULL, NULL, 0, strided_slice_grad, status);
    cpu_register(registrar, "Pad", NULL, NULL, 0, pad, status);
    cpu_register(registrar, "Tile", NULL, NULL, 0, tile, status);
}
