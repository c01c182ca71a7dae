/* SPDX-License-Identifier: Apache-2.0 */
/* The array ops, with TensorFlow's names and meanings: ArgMax and ArgMin, Concat, Slice,
 * StridedSlice, Gather, OneHot, Pad, Tile, Select, the comparisons, and the ops their gradients
 * need (StridedSliceGrad, UnsortedSegmentSum). Where TensorFlow takes an axis, a begin, a size,
 * multiples or paddings as an input tensor, these take an attribute, as Sum's axis and
 * Reshape's shape are: the shape of the result follows from the attributes alone. Ops that only
 * move elements take every dtype. */
#include <math.h>
#include <stdio.h>

#include "base/shape.h"
#include "base/status.h"
#include "kernel/kernel_context.h"
#include "op/op_defs.h"
#include "op/shape_functions.h"
#include "op/strided_slice.h"
#include "tensor/tensor.h"

#define COUNT TP_OP_COUNT
#define ARG TP_OP_ARG
#define TYPE_ATTR TP_OP_TYPE_ATTR

/* Comparable by order: the numbers, and uint8. */
static const tp_dtype_t ordered[] = {TP_OP_NUMBER_DTYPES};
/* Comparable for equality, and what OneHot can write: those and bool. */
static const tp_dtype_t valued[] = {TP_OP_NUMBER_DTYPES, TP_BOOL};
static const tp_dtype_t numbers[] = {TP_OP_NUMBER_DTYPES};
static const tp_dtype_t index_types[] = {TP_INT32, TP_INT64};
static const tp_dtype_t one_hot_index_types[] = {TP_UINT8, TP_INT32, TP_INT64};

#define ATTR(attr_name, attr_type) \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = attr_name, .type = attr_type}
#define INT_ATTR(attr_name, value)                                                             \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = attr_name, .type = TP_ATTR_INT,         \
     .has_default = 1, .default_int = value}
#define FLOAT_ATTR(attr_name, value)                                                           \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = attr_name, .type = TP_ATTR_FLOAT,       \
     .has_default = 1, .default_float = value}
#define DTYPE_ATTR(attr_name, allowed, default_dtype)                                          \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = attr_name, .type = TP_ATTR_DTYPE,       \
     .allowed_dtypes = allowed, .num_allowed_dtypes = COUNT(allowed), .has_default = 1,       \
     .default_int = default_dtype}
/* The masks and strides of StridedSlice and StridedSliceGrad: strides default to all 1. */
#define STRIDED_SLICE_ATTRS                                                                    \
    ATTR("begin", TP_ATTR_INT_LIST), ATTR("end", TP_ATTR_INT_LIST),                          \
        {.struct_size = sizeof(tp_op_attr_def_t), .name = "strides",                          \
         .type = TP_ATTR_INT_LIST, .has_default = 1},                                         \
        INT_ATTR("begin_mask", 0), INT_ATTR("end_mask", 0), INT_ATTR("ellipsis_mask", 0),    \
        INT_ATTR("new_axis_mask", 0), INT_ATTR("shrink_axis_mask", 0)

static const tp_op_arg_def_t arg_input[] = {ARG("input")};
static const tp_op_arg_def_t arg_output[] = {ARG("output")};
static const tp_op_arg_def_t arg_dy[] = {ARG("dy")};
static const tp_op_arg_def_t arg_index_output[] = {TP_OP_TYPED_ARG("output", "output_type")};
static const tp_op_arg_def_t arg_values[] = {
    {sizeof(tp_op_arg_def_t), "values", TP_DTYPE_INVALID, "T", "N"}};
static const tp_op_arg_def_t args_params_indices[] = {ARG("params"),
                                                      TP_OP_TYPED_ARG("indices", "Tindices")};
static const tp_op_arg_def_t args_data_ids[] = {ARG("data"),
                                                TP_OP_TYPED_ARG("segment_ids", "Tindices")};
static const tp_op_arg_def_t arg_one_hot_indices[] = {TP_OP_TYPED_ARG("indices", "TI")};
static const tp_op_arg_def_t args_select[] = {TP_OP_FIXED_ARG("condition", TP_BOOL), ARG("t"),
                                              ARG("e")};
static const tp_op_arg_def_t args_x_y[] = {ARG("x"), ARG("y")};
static const tp_op_arg_def_t arg_bool_z[] = {TP_OP_FIXED_ARG("z", TP_BOOL)};

static const tp_op_attr_def_t any_type[] = {TYPE_ATTR(NULL, 0)};
static const tp_op_attr_def_t ordered_type[] = {TYPE_ATTR(ordered, COUNT(ordered))};
static const tp_op_attr_def_t valued_type[] = {TYPE_ATTR(valued, COUNT(valued))};
static const tp_op_attr_def_t arg_reduce_attrs[] = {
    TYPE_ATTR(ordered, COUNT(ordered)), INT_ATTR("axis", 0),
    DTYPE_ATTR("output_type", index_types, TP_INT64)};
static const tp_op_attr_def_t concat_attrs[] = {TYPE_ATTR(NULL, 0), ATTR("N", TP_ATTR_INT),
                                                INT_ATTR("axis", 0)};
static const tp_op_attr_def_t slice_attrs[] = {TYPE_ATTR(NULL, 0),
                                               ATTR("begin", TP_ATTR_INT_LIST),
                                               ATTR("size", TP_ATTR_INT_LIST)};
static const tp_op_attr_def_t strided_slice_attrs[] = {TYPE_ATTR(NULL, 0), STRIDED_SLICE_ATTRS};
static const tp_op_attr_def_t strided_slice_grad_attrs[] = {
    TYPE_ATTR(NULL, 0), ATTR("shape", TP_ATTR_SHAPE), STRIDED_SLICE_ATTRS};
static const tp_op_attr_def_t gather_attrs[] = {
    TYPE_ATTR(NULL, 0), DTYPE_ATTR("Tindices", index_types, TP_INT64), INT_ATTR("axis", 0)};
static const tp_op_attr_def_t segment_sum_attrs[] = {
    TYPE_ATTR(numbers, COUNT(numbers)), DTYPE_ATTR("Tindices", index_types, TP_INT64),
    ATTR("num_segments", TP_ATTR_INT)};
static const tp_op_attr_def_t one_hot_attrs[] = {
    DTYPE_ATTR("T", valued, TP_FLOAT32), DTYPE_ATTR("TI", one_hot_index_types, TP_INT64),
    ATTR("depth", TP_ATTR_INT), FLOAT_ATTR("on_value", 1.0), FLOAT_ATTR("off_value", 0.0),
    INT_ATTR("axis", -1)};
static const tp_op_attr_def_t pad_attrs[] = {TYPE_ATTR(NULL, 0),
                                             ATTR("paddings", TP_ATTR_INT_LIST),
                                             FLOAT_ATTR("constant_value", 0.0)};
static const tp_op_attr_def_t tile_attrs[] = {TYPE_ATTR(NULL, 0),
                                              ATTR("multiples", TP_ATTR_INT_LIST)};

/* ---- Shape functions ------------------------------------------------------------------------ */

static const char *op_name(const tp_kernel_context_t *call) { return call->op->def->name; }

static const tp_shape_t *input_shape(const tp_kernel_context_t *call, int32_t index) {
    return &call->inputs[index]->shape;
}

static const tp_attr_t *attr(const tp_kernel_context_t *call, const char *name) {
    return tp_kernel_context_attr(call, name);
}

static tp_status_t *set_output(tp_kernel_context_t *call, const tp_shape_t *shape) {
    int64_t count;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_shape_num_elements(shape, &count), "%s",
                                          op_name(call)));
    call->output_shapes[0] = *shape;
    call->output_shape_set[0] = true;
    return NULL;
}

/* "[1,-2,3]": an integer list as a message shows it, cut short if long. */
static const char *list_text(const tp_attr_t *list, char *text, size_t capacity) {
    size_t used = (size_t)snprintf(text, capacity, "[");
    for (int32_t i = 0; i < list->count && used + 24 < capacity; i++)
        used += (size_t)snprintf(text + used, capacity - used, i == 0 ? "%lld" : ",%lld",
                                 (long long)list->list[i]);
    if (used + 24 >= capacity && list->count > 0)
        used += (size_t)snprintf(text + used, capacity - used, ",...");
    snprintf(text + used, capacity - used, "]");
    return text;
}

/* An axis attribute in [-rank, rank), made non-negative. */
static tp_status_t *resolve_axis(const tp_kernel_context_t *call, const char *name,
                                 int32_t rank, int32_t *out) {
    int64_t axis = attr(call, name)->i;
    if (axis < -rank || axis >= rank)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: %s %lld is out of range for a tensor of rank %d (allowed: "
                              "[%d, %d))",
                              op_name(call), name, (long long)axis, (int)rank, -(int)rank,
                              (int)rank);
    *out = (int32_t)(axis < 0 ? axis + rank : axis);
    return NULL;
}

/* ArgMax, ArgMin: the input without the axis, which must not be empty (no index to give). */
static tp_status_t *shape_arg_reduce(tp_kernel_context_t *call) {
    const tp_shape_t *x = input_shape(call, 0);
    char text[256];
    if (x->rank == 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: the input is a scalar; it needs a "
                              "dimension to search along", op_name(call));
    int32_t axis = 0;
    TP_RETURN_IF_ERROR(resolve_axis(call, "axis", x->rank, &axis));
    if (x->dims[axis] == 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: axis %d of the input %s is empty",
                              op_name(call), (int)axis, tp_shape_text(x, text, sizeof text));
    if (attr(call, "output_type")->i == TP_INT32 && x->dims[axis] > INT32_MAX)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: axis %d of the input %s is too long "
                              "for int32 indices", op_name(call), (int)axis,
                              tp_shape_text(x, text, sizeof text));
    tp_shape_t out = {.rank = 0};
    for (int32_t d = 0; d < x->rank; d++)
        if (d != axis) out.dims[out.rank++] = x->dims[d];
    return set_output(call, &out);
}

/* Concat: inputs of one rank (at least 1) whose dimensions agree but along the axis. */
static tp_status_t *shape_concat(tp_kernel_context_t *call) {
    const tp_shape_t *first = input_shape(call, 0);
    char ta[256], tb[256];
    if (first->rank == 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "Concat: input 0 is a scalar; only tensors "
                              "of rank 1 or more can be joined");
    int32_t axis = 0;
    TP_RETURN_IF_ERROR(resolve_axis(call, "axis", first->rank, &axis));
    tp_shape_t out = *first;
    for (int32_t i = 1; i < call->num_inputs; i++) {
        const tp_shape_t *x = input_shape(call, i);
        bool agree = x->rank == first->rank;
        for (int32_t d = 0; d < first->rank && agree; d++)
            agree = d == axis || x->dims[d] == first->dims[d];
        if (!agree)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "Concat: input %d is %s and input 0 is %s; they must agree "
                                  "in every dimension but axis %d",
                                  (int)i, tp_shape_text(x, ta, sizeof ta),
                                  tp_shape_text(first, tb, sizeof tb), (int)axis);
        if (x->dims[axis] > INT64_MAX - out.dims[axis])
            return tp_status_make(TP_INVALID_ARGUMENT, "Concat: axis %d grows past 2^63",
                                  (int)axis);
        out.dims[axis] += x->dims[axis];
    }
    return set_output(call, &out);
}

/* A list attribute with one entry per dimension (`per_dimension` entries each). */
static tp_status_t *check_list_length(const tp_kernel_context_t *call, const char *name,
                                      const tp_shape_t *x, int32_t per_dimension) {
    const tp_attr_t *list = attr(call, name);
    if (list->count != x->rank * per_dimension) {
        char text[256];
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s has %d entries, but the input %s "
                              "needs %d", op_name(call), name, (int)list->count,
                              tp_shape_text(x, text, sizeof text), (int)(x->rank * per_dimension));
    }
    return NULL;
}

/* Slice: begin[d] in [0, dims[d]], size[d] in [0, dims[d] - begin[d]] or -1 for the rest. */
static tp_status_t *shape_slice(tp_kernel_context_t *call) {
    const tp_shape_t *x = input_shape(call, 0);
    TP_RETURN_IF_ERROR(check_list_length(call, "begin", x, 1));
    TP_RETURN_IF_ERROR(check_list_length(call, "size", x, 1));
    const int64_t *begin = attr(call, "begin")->list, *size = attr(call, "size")->list;
    tp_shape_t out = {.rank = x->rank};
    char text[256];
    for (int32_t d = 0; d < x->rank; d++) {
        if (begin[d] < 0 || begin[d] > x->dims[d])
            return tp_status_make(TP_INVALID_ARGUMENT, "Slice: begin[%d] = %lld is outside [0, "
                                  "%lld] for the input %s", (int)d, (long long)begin[d],
                                  (long long)x->dims[d], tp_shape_text(x, text, sizeof text));
        int64_t left = x->dims[d] - begin[d];
        if (size[d] < -1 || size[d] > left)
            return tp_status_make(TP_INVALID_ARGUMENT, "Slice: size[%d] = %lld is outside [0, "
                                  "%lld] (or -1: to the end) for begin[%d] = %lld in the input "
                                  "%s", (int)d, (long long)size[d], (long long)left, (int)d,
                                  (long long)begin[d], tp_shape_text(x, text, sizeof text));
        out.dims[d] = size[d] == -1 ? left : size[d];
    }
    return set_output(call, &out);
}

/* The spec of a StridedSlice or StridedSliceGrad call, its list lengths checked. */
static tp_status_t *strided_slice_spec(const tp_kernel_context_t *call,
                                       tp_strided_slice_spec_t *spec) {
    const tp_attr_t *begin = attr(call, "begin"), *end = attr(call, "end");
    const tp_attr_t *strides = attr(call, "strides");
    if (end->count != begin->count || (strides->count != 0 && strides->count != begin->count))
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: begin, end and strides must have as "
                              "many entries, but have %d, %d and %d", op_name(call),
                              (int)begin->count, (int)end->count, (int)strides->count);
    *spec = (tp_strided_slice_spec_t){
        .begin = begin->list, .end = end->list,
        .strides = strides->count == 0 ? NULL : strides->list, .count = begin->count,
        .begin_mask = attr(call, "begin_mask")->i, .end_mask = attr(call, "end_mask")->i,
        .ellipsis_mask = attr(call, "ellipsis_mask")->i,
        .new_axis_mask = attr(call, "new_axis_mask")->i,
        .shrink_axis_mask = attr(call, "shrink_axis_mask")->i};
    return NULL;
}

static tp_status_t *shape_strided_slice(tp_kernel_context_t *call) {
    tp_strided_slice_spec_t spec;
    tp_strided_slice_plan_t plan;
    TP_RETURN_IF_ERROR(strided_slice_spec(call, &spec));
    TP_RETURN_IF_ERROR(tp_strided_slice_plan("StridedSlice", input_shape(call, 0), &spec, &plan));
    return set_output(call, &plan.result);
}

/* StridedSliceGrad: dy must have the shape the slice of `shape` has; the result has `shape`. */
static tp_status_t *shape_strided_slice_grad(tp_kernel_context_t *call) {
    const tp_attr_t *shape_attr = attr(call, "shape");
    if (shape_attr->count > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "StridedSliceGrad: shape has %d dimensions; "
                              "at most %d", (int)shape_attr->count, TP_MAX_RANK);
    tp_shape_t shape = {.rank = shape_attr->count};
    for (int32_t d = 0; d < shape.rank; d++) shape.dims[d] = shape_attr->list[d];
    int64_t count;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_shape_num_elements(&shape, &count),
                                          "StridedSliceGrad"));
    tp_strided_slice_spec_t spec;
    tp_strided_slice_plan_t plan;
    TP_RETURN_IF_ERROR(strided_slice_spec(call, &spec));
    TP_RETURN_IF_ERROR(tp_strided_slice_plan("StridedSliceGrad", &shape, &spec, &plan));
    if (!tp_shape_equal(&plan.result, input_shape(call, 0))) {
        char ta[256], tb[256], tc[256];
        return tp_status_make(TP_INVALID_ARGUMENT, "StridedSliceGrad: dy is %s, but the slice "
                              "of %s is %s", tp_shape_text(input_shape(call, 0), ta, sizeof ta),
                              tp_shape_text(&shape, tb, sizeof tb),
                              tp_shape_text(&plan.result, tc, sizeof tc));
    }
    return set_output(call, &shape);
}

/* Gather: params' dimensions before the axis, then the indices' dimensions, then the rest. */
static tp_status_t *shape_gather(tp_kernel_context_t *call) {
    const tp_shape_t *params = input_shape(call, 0), *indices = input_shape(call, 1);
    char ta[256], tb[256];
    if (params->rank == 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "Gather: params is a scalar; it needs a "
                              "dimension to gather from");
    int32_t axis = 0;
    TP_RETURN_IF_ERROR(resolve_axis(call, "axis", params->rank, &axis));
    if (params->rank - 1 + indices->rank > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "Gather: params %s with indices %s would give "
                              "rank %d; at most %d", tp_shape_text(params, ta, sizeof ta),
                              tp_shape_text(indices, tb, sizeof tb),
                              (int)(params->rank - 1 + indices->rank), TP_MAX_RANK);
    tp_shape_t out = {.rank = 0};
    for (int32_t d = 0; d < axis; d++) out.dims[out.rank++] = params->dims[d];
    for (int32_t d = 0; d < indices->rank; d++) out.dims[out.rank++] = indices->dims[d];
    for (int32_t d = axis + 1; d < params->rank; d++) out.dims[out.rank++] = params->dims[d];
    return set_output(call, &out);
}

/* UnsortedSegmentSum: segment_ids' shape begins data's; the result is [num_segments] and the
 * rest of data's dimensions. */
static tp_status_t *shape_segment_sum(tp_kernel_context_t *call) {
    const tp_shape_t *data = input_shape(call, 0), *ids = input_shape(call, 1);
    int64_t segments = attr(call, "num_segments")->i;
    char ta[256], tb[256];
    if (segments < 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "UnsortedSegmentSum: num_segments is %lld; "
                              "it must be >= 0", (long long)segments);
    bool prefix = ids->rank <= data->rank;
    for (int32_t d = 0; d < ids->rank && prefix; d++) prefix = ids->dims[d] == data->dims[d];
    if (!prefix)
        return tp_status_make(TP_INVALID_ARGUMENT, "UnsortedSegmentSum: segment_ids %s must be "
                              "the leading dimensions of data %s",
                              tp_shape_text(ids, ta, sizeof ta),
                              tp_shape_text(data, tb, sizeof tb));
    if (data->rank - ids->rank + 1 > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "UnsortedSegmentSum: the result would have "
                              "rank %d; at most %d", (int)(data->rank - ids->rank + 1),
                              TP_MAX_RANK);
    tp_shape_t out = {.rank = 1, .dims = {segments}};
    for (int32_t d = ids->rank; d < data->rank; d++) out.dims[out.rank++] = data->dims[d];
    return set_output(call, &out);
}

/* A float attribute written into elements of `dtype`: an integer dtype takes only whole values
 * in its range and bool only 0 or 1, so that nothing is rounded or wrapped silently. */
static tp_status_t *check_value_fits(const tp_kernel_context_t *call, const char *name,
                                     tp_dtype_t dtype) {
    double value = attr(call, name)->f, low, high_excluded;
    switch (dtype) {
    case TP_INT8: low = -0x1p7, high_excluded = 0x1p7; break;
    case TP_INT16: low = -0x1p15, high_excluded = 0x1p15; break;
    case TP_INT32: low = INT32_MIN, high_excluded = 0x1p31; break;
    case TP_INT64: low = -0x1p63, high_excluded = 0x1p63; break;
    case TP_UINT8: low = 0, high_excluded = 256; break;
    case TP_UINT16: low = 0, high_excluded = 0x1p16; break;
    case TP_UINT32: low = 0, high_excluded = 0x1p32; break;
    case TP_UINT64: low = 0, high_excluded = 0x1p64; break;
    case TP_BOOL: low = 0, high_excluded = 2; break;
    default: return NULL; /* a float dtype rounds to nearest, as a cast does */
    }
    if (!(value >= low && value < high_excluded && value == floor(value)))
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s %g is not a value of %s",
                              op_name(call), name, value, tp_dtype_name(dtype));
    return NULL;
}

/* OneHot: the indices' shape with `depth` inserted at the axis (-1: last). */
static tp_status_t *shape_one_hot(tp_kernel_context_t *call) {
    const tp_shape_t *indices = input_shape(call, 0);
    int64_t depth = attr(call, "depth")->i, axis = attr(call, "axis")->i;
    if (depth < 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "OneHot: depth is %lld; it must be >= 0",
                              (long long)depth);
    if (axis < -1 || axis > indices->rank)
        return tp_status_make(TP_INVALID_ARGUMENT, "OneHot: axis %lld is out of range for "
                              "indices of rank %d (allowed: -1 or [0, %d])", (long long)axis,
                              (int)indices->rank, (int)indices->rank);
    if (indices->rank == TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "OneHot: indices of rank %d would give rank "
                              "%d; at most %d", (int)indices->rank, (int)indices->rank + 1,
                              TP_MAX_RANK);
    tp_dtype_t dtype = (tp_dtype_t)attr(call, "T")->i;
    TP_RETURN_IF_ERROR(check_value_fits(call, "on_value", dtype));
    TP_RETURN_IF_ERROR(check_value_fits(call, "off_value", dtype));
    int32_t at = axis == -1 ? indices->rank : (int32_t)axis;
    tp_shape_t out = {.rank = indices->rank + 1};
    for (int32_t d = 0, k = 0; d < out.rank; d++)
        out.dims[d] = d == at ? depth : indices->dims[k++];
    return set_output(call, &out);
}

/* Pad: paddings holds (before, after) per dimension, each >= 0. */
static tp_status_t *shape_pad(tp_kernel_context_t *call) {
    const tp_shape_t *x = input_shape(call, 0);
    TP_RETURN_IF_ERROR(check_list_length(call, "paddings", x, 2));
    TP_RETURN_IF_ERROR(check_value_fits(call, "constant_value", call->inputs[0]->dtype));
    const tp_attr_t *paddings = attr(call, "paddings");
    tp_shape_t out = *x;
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t before = paddings->list[2 * d], after = paddings->list[2 * d + 1];
        if (before < 0 || after < 0) {
            char text[256];
            return tp_status_make(TP_INVALID_ARGUMENT, "Pad: paddings %s has a negative entry "
                                  "for dimension %d (%lld, %lld)",
                                  list_text(paddings, text, sizeof text), (int)d,
                                  (long long)before, (long long)after);
        }
        if (before > INT64_MAX - out.dims[d] || after > INT64_MAX - out.dims[d] - before)
            return tp_status_make(TP_INVALID_ARGUMENT, "Pad: dimension %d grows past 2^63",
                                  (int)d);
        out.dims[d] += before + after;
    }
    return set_output(call, &out);
}

/* Tile: each dimension times its multiple, each >= 0. */
static tp_status_t *shape_tile(tp_kernel_context_t *call) {
    const tp_shape_t *x = input_shape(call, 0);
    TP_RETURN_IF_ERROR(check_list_length(call, "multiples", x, 1));
    const tp_attr_t *multiples = attr(call, "multiples");
    tp_shape_t out = *x;
    char text[256];
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t m = multiples->list[d];
        if (m < 0)
            return tp_status_make(TP_INVALID_ARGUMENT, "Tile: multiples %s has %lld for "
                                  "dimension %d; each must be >= 0",
                                  list_text(multiples, text, sizeof text), (long long)m, (int)d);
        if (m != 0 && out.dims[d] > INT64_MAX / m)
            return tp_status_make(TP_INVALID_ARGUMENT, "Tile: dimension %d grows past 2^63",
                                  (int)d);
        out.dims[d] *= m;
    }
    return set_output(call, &out);
}

/* Select: the condition, t and e broadcast together, as NumPy's where (TensorFlow's
 * SelectV2). */
static tp_status_t *shape_select(tp_kernel_context_t *call) {
    tp_shape_t values, out;
    TP_RETURN_IF_ERROR(tp_status_annotate(
        tp_broadcast_shapes(input_shape(call, 1), input_shape(call, 2), &values),
        "Select: t and e"));
    TP_RETURN_IF_ERROR(tp_status_annotate(
        tp_broadcast_shapes(input_shape(call, 0), &values, &out),
        "Select: the condition and the values"));
    return set_output(call, &out);
}

static const tp_builtin_op_entry_t entries[] = {
    TP_OP_ENTRY("ArgMax", arg_input, arg_index_output, arg_reduce_attrs, shape_arg_reduce),
    TP_OP_ENTRY("ArgMin", arg_input, arg_index_output, arg_reduce_attrs, shape_arg_reduce),
    TP_OP_ENTRY("Concat", arg_values, arg_output, concat_attrs, shape_concat),
    TP_OP_ENTRY("Equal", args_x_y, arg_bool_z, valued_type, tp_shape_broadcast),
    TP_OP_ENTRY("Gather", args_params_indices, arg_output, gather_attrs, shape_gather),
    TP_OP_ENTRY("Greater", args_x_y, arg_bool_z, ordered_type, tp_shape_broadcast),
    TP_OP_ENTRY("GreaterEqual", args_x_y, arg_bool_z, ordered_type, tp_shape_broadcast),
    TP_OP_ENTRY("Less", args_x_y, arg_bool_z, ordered_type, tp_shape_broadcast),
    TP_OP_ENTRY("LessEqual", args_x_y, arg_bool_z, ordered_type, tp_shape_broadcast),
    TP_OP_ENTRY("NotEqual", args_x_y, arg_bool_z, valued_type, tp_shape_broadcast),
    TP_OP_ENTRY("OneHot", arg_one_hot_indices, arg_output, one_hot_attrs, shape_one_hot),
    TP_OP_ENTRY("Pad", arg_input, arg_output, pad_attrs, shape_pad),
    TP_OP_ENTRY("Select", args_select, arg_output, any_type, shape_select),
    TP_OP_ENTRY("Slice", arg_input, arg_output, slice_attrs, shape_slice),
    TP_OP_ENTRY("StridedSlice", arg_input, arg_output, strided_slice_attrs,
                shape_strided_slice),
    TP_OP_ENTRY("StridedSliceGrad", arg_dy, arg_output, strided_slice_grad_attrs,
                shape_strided_slice_grad),
    TP_OP_ENTRY("Tile", arg_input, arg_output, tile_attrs, shape_tile),
    TP_OP_ENTRY("UnsortedSegmentSum", args_data_ids, arg_output, segment_sum_attrs,
                shape_segment_sum),
};

const tp_op_family_t tp_ops_array = {"array", entries, COUNT(entries)};
