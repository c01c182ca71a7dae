/* SPDX-License-Identifier: Apache-2.0 */
/* The typed functions for the array ops: each is tp_execute with its inputs and attributes. */
#include "base/status.h"
#include "eager/op_api.h"

/* A list given with its length as size_t: longer than an attribute holds is refused here, before
 * the length is narrowed. */
static tp_status_t *check_length(const char *op, const char *name, size_t count, size_t most) {
    if (count > most)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s has %zu entries; at most %zu", op,
                              name, count, most);
    return NULL;
}

static tp_status_t *arg_search(tp_context_t *c, const char *op, tp_tensor_t *x, int64_t axis,
                               tp_dtype_t index_dtype, tp_tensor_t **out) {
    tp_attr_t attrs[2] = {TP_ATTR_INT_VALUE("axis", axis),
                          TP_ATTR_DTYPE_VALUE("output_type", index_dtype)};
    return tp_execute(c, op, &x, 1, attrs, 2, out, 1);
}

tp_status_t *tp_argmax(tp_context_t *c, tp_tensor_t *x, int64_t axis, tp_dtype_t index_dtype,
                       tp_tensor_t **out) {
    return arg_search(c, "ArgMax", x, axis, index_dtype, out);
}

tp_status_t *tp_argmin(tp_context_t *c, tp_tensor_t *x, int64_t axis, tp_dtype_t index_dtype,
                       tp_tensor_t **out) {
    return arg_search(c, "ArgMin", x, axis, index_dtype, out);
}

tp_status_t *tp_concat(tp_context_t *c, tp_tensor_t *const *inputs, size_t count, int64_t axis,
                       tp_tensor_t **out) {
    tp_attr_t attr = TP_ATTR_INT_VALUE("axis", axis);
    return tp_execute(c, "Concat", inputs, count, &attr, 1, out, 1);
}

tp_status_t *tp_slice(tp_context_t *c, tp_tensor_t *x, const int64_t *begin, const int64_t *size,
                      size_t rank, tp_tensor_t **out) {
    TP_RETURN_IF_ERROR(check_length("Slice", "begin", rank, TP_MAX_RANK));
    tp_attr_t attrs[2] = {TP_ATTR_LIST_VALUE("begin", begin, (int32_t)rank),
                          TP_ATTR_LIST_VALUE("size", size, (int32_t)rank)};
    return tp_execute(c, "Slice", &x, 1, attrs, 2, out, 1);
}

tp_status_t *tp_strided_slice(tp_context_t *c, tp_tensor_t *x, const int64_t *begin,
                              const int64_t *end, const int64_t *strides, size_t count,
                              const tp_strided_slice_masks_t *masks, tp_tensor_t **out) {
    TP_RETURN_IF_ERROR(check_length("StridedSlice", "begin", count, INT32_MAX));
    tp_strided_slice_masks_t none = {0, 0, 0, 0, 0};
    if (masks == NULL) masks = &none;
    int32_t n = (int32_t)count;
    tp_attr_t attrs[8] = {TP_ATTR_LIST_VALUE("begin", begin, n),
                          TP_ATTR_LIST_VALUE("end", end, n),
                          TP_ATTR_LIST_VALUE("strides", strides, strides == NULL ? 0 : n),
                          TP_ATTR_INT_VALUE("begin_mask", masks->begin_mask),
                          TP_ATTR_INT_VALUE("end_mask", masks->end_mask),
                          TP_ATTR_INT_VALUE("ellipsis_mask", masks->ellipsis_mask),
                          TP_ATTR_INT_VALUE("new_axis_mask", masks->new_axis_mask),
                          TP_ATTR_INT_VALUE("shrink_axis_mask", masks->shrink_axis_mask)};
    return tp_execute(c, "StridedSlice", &x, 1, attrs, 8, out, 1);
}

tp_status_t *tp_gather(tp_context_t *c, tp_tensor_t *params, tp_tensor_t *indices, int64_t axis,
                       tp_tensor_t **out) {
    tp_tensor_t *inputs[2] = {params, indices};
    tp_attr_t attr = TP_ATTR_INT_VALUE("axis", axis);
    return tp_execute(c, "Gather", inputs, 2, &attr, 1, out, 1);
}

tp_status_t *tp_unsorted_segment_sum(tp_context_t *c, tp_tensor_t *data,
                                     tp_tensor_t *segment_ids, int64_t num_segments,
                                     tp_tensor_t **out) {
    tp_tensor_t *inputs[2] = {data, segment_ids};
    tp_attr_t attr = TP_ATTR_INT_VALUE("num_segments", num_segments);
    return tp_execute(c, "UnsortedSegmentSum", inputs, 2, &attr, 1, out, 1);
}

tp_status_t *tp_one_hot(tp_context_t *c, tp_tensor_t *indices, int64_t depth, double on_value,
                        double off_value, int64_t axis, tp_dtype_t dtype, tp_tensor_t **out) {
    tp_attr_t attrs[5] = {TP_ATTR_INT_VALUE("depth", depth),
                          TP_ATTR_FLOAT_VALUE("on_value", on_value),
                          TP_ATTR_FLOAT_VALUE("off_value", off_value),
                          TP_ATTR_INT_VALUE("axis", axis), TP_ATTR_DTYPE_VALUE("T", dtype)};
    return tp_execute(c, "OneHot", &indices, 1, attrs, 5, out, 1);
}

tp_status_t *tp_pad(tp_context_t *c, tp_tensor_t *x, const int64_t *paddings, size_t rank,
                    double constant_value, tp_tensor_t **out) {
    TP_RETURN_IF_ERROR(check_length("Pad", "paddings", rank, TP_MAX_RANK));
    tp_attr_t attrs[2] = {TP_ATTR_LIST_VALUE("paddings", paddings, (int32_t)(2 * rank)),
                          TP_ATTR_FLOAT_VALUE("constant_value", constant_value)};
    return tp_execute(c, "Pad", &x, 1, attrs, 2, out, 1);
}

tp_status_t *tp_tile(tp_context_t *c, tp_tensor_t *x, const int64_t *multiples, size_t rank,
                     tp_tensor_t **out) {
    TP_RETURN_IF_ERROR(check_length("Tile", "multiples", rank, TP_MAX_RANK));
    tp_attr_t attr = TP_ATTR_LIST_VALUE("multiples", multiples, (int32_t)rank);
    return tp_execute(c, "Tile", &x, 1, &attr, 1, out, 1);
}

tp_status_t *tp_select(tp_context_t *c, tp_tensor_t *condition, tp_tensor_t *t, tp_tensor_t *e,
                       tp_tensor_t **out) {
    tp_tensor_t *inputs[3] = {condition, t, e};
    return tp_execute(c, "Select", inputs, 3, NULL, 0, out, 1);
}

BINARY(tp_equal, "Equal")
BINARY(tp_not_equal, "NotEqual")
BINARY(tp_less, "Less")
BINARY(tp_less_equal, "LessEqual")
BINARY(tp_greater, "Greater")
BINARY(tp_greater_equal, "GreaterEqual")
