/* SPDX-License-Identifier: Apache-2.0 */
/* Gradients of the array ops that move elements: each input receives the gradients of the
 * output elements it became (Concat, Slice, StridedSlice, Pad, Tile, Select), summed where one
 * element became several (Gather, Tile). OneHot's output does not vary with its indices: it
 * has a gradient that gives nothing, as in TensorFlow, so that a one-hot of indices computed from
 * a watched tensor (an ArgMax) does not stop the tape. ArgMax, ArgMin and the comparisons
 * (TensorFlow's NotDifferentiable) are left without one: their outputs are indices and flags,
 * which no gradient function gives anything to, so the tape never asks for theirs. */
#include <string.h>

#include "autodiff/gradients.h"
#include "base/status.h"

static int32_t axis_of(const tp_gradient_op_t *op, int32_t rank) {
    int64_t axis = tp_gradient_attr(op, "axis")->i;
    return (int32_t)(axis < 0 ? axis + rank : axis);
}

/* Each input receives its stretch of dy along the axis. */
static TP_GRADIENT_FN(tp_gradient_concat) {
    tp_tensor_t *dy = output_grads[0];
    tp_shape_t shape = tp_tensor_shape(dy);
    int32_t axis = axis_of(op, shape.rank);
    int64_t begin[TP_MAX_RANK] = {0}, offset = 0;
    for (int32_t i = 0; i < op->num_inputs; i++) {
        tp_shape_t part = tp_tensor_shape(op->inputs[i]);
        if (needed[i]) {
            begin[axis] = offset;
            tp_status_t *error = tp_slice(op->context, dy, begin, part.dims, (size_t)part.rank,
                                          &input_grads[i]);
            if (error != NULL) {
                tp_gradient_release(input_grads, i);
                return error;
            }
        }
        offset += part.dims[axis];
    }
    return NULL;
}

/* dy padded with zeros back to the input's shape. */
static TP_GRADIENT_FN(tp_gradient_slice) {
    (void)needed;
    tp_shape_t x = tp_tensor_shape(op->inputs[0]), y = tp_tensor_shape(op->outputs[0]);
    const tp_attr_t *begin = tp_gradient_attr(op, "begin");
    int64_t paddings[2 * TP_MAX_RANK];
    for (int32_t d = 0; d < x.rank; d++) {
        paddings[2 * d] = begin->list[d];
        paddings[2 * d + 1] = x.dims[d] - begin->list[d] - y.dims[d];
    }
    return tp_pad(op->context, output_grads[0], paddings, (size_t)x.rank, 0, &input_grads[0]);
}

/* The spec's attributes of a StridedSlice or StridedSliceGrad, to hand on as they are. */
static const char *const spec_attrs[] = {"begin",         "end",           "strides",
                                         "begin_mask",    "end_mask",      "ellipsis_mask",
                                         "new_axis_mask", "shrink_axis_mask"};
enum { NUM_SPEC_ATTRS = sizeof spec_attrs / sizeof spec_attrs[0] };

static void copy_spec(const tp_gradient_op_t *op, tp_attr_t *attrs) {
    for (size_t a = 0; a < NUM_SPEC_ATTRS; a++) attrs[a] = *tp_gradient_attr(op, spec_attrs[a]);
}

/* Zeros of the input's shape with dy where the slice read: StridedSliceGrad. */
static TP_GRADIENT_FN(tp_gradient_strided_slice) {
    (void)needed;
    tp_shape_t x = tp_tensor_shape(op->inputs[0]);
    tp_attr_t attrs[NUM_SPEC_ATTRS + 1];
    copy_spec(op, attrs);
    attrs[NUM_SPEC_ATTRS] = (tp_attr_t){.name = "shape", .type = TP_ATTR_SHAPE, .list = x.dims,
                                        .count = x.rank};
    tp_tensor_t *dy = output_grads[0];
    return tp_execute(op->context, "StridedSliceGrad", &dy, 1, attrs, NUM_SPEC_ATTRS + 1,
                      &input_grads[0], 1);
}

/* StridedSliceGrad is linear in dy, and its adjoint is the slice itself. */
static TP_GRADIENT_FN(tp_gradient_strided_slice_grad) {
    (void)needed;
    tp_attr_t attrs[NUM_SPEC_ATTRS];
    copy_spec(op, attrs);
    tp_tensor_t *grad = output_grads[0];
    return tp_execute(op->context, "StridedSlice", &grad, 1, attrs, NUM_SPEC_ATTRS,
                      &input_grads[0], 1);
}

/* params receives dy's rows added back where they were read: UnsortedSegmentSum over the
 * indices, after moving the indices' dimensions of dy to the front (and the segments' dimension
 * back to the axis after). The indices receive nothing. */
static TP_GRADIENT_FN(tp_gradient_gather) {
    if (!needed[0]) return NULL;
    tp_context_t *c = op->context;
    tp_tensor_t *params = op->inputs[0], *indices = op->inputs[1], *dy = output_grads[0];
    tp_shape_t p = tp_tensor_shape(params);
    int32_t axis = axis_of(op, p.rank), q = tp_tensor_shape(indices).rank;
    int32_t rank = tp_tensor_shape(dy).rank;
    if (axis == 0)
        return tp_unsorted_segment_sum(c, dy, indices, p.dims[0], &input_grads[0]);
    int64_t to_front[TP_MAX_RANK], to_axis[TP_MAX_RANK];
    int32_t k = 0;
    for (int32_t d = axis; d < axis + q; d++) to_front[k++] = d;
    for (int32_t d = 0; d < axis; d++) to_front[k++] = d;
    for (int32_t d = axis + q; d < rank; d++) to_front[k++] = d;
    for (int32_t d = 0; d < p.rank; d++) to_axis[d] = d < axis ? d + 1 : d == axis ? 0 : d;
    tp_tensor_t *temps[2] = {NULL, NULL};
    tp_status_t *error = tp_transpose(c, dy, to_front, (size_t)rank, &temps[0]);
    if (error == NULL) error = tp_unsorted_segment_sum(c, temps[0], indices, p.dims[axis],
                                                       &temps[1]);
    if (error == NULL)
        error = tp_transpose(c, temps[1], to_axis, (size_t)p.rank, &input_grads[0]);
    tp_gradient_release(temps, 2);
    return error;
}

/* data receives dy's row of its segment, and zeros where its id was negative (the row was
 * dropped): a Gather at the ids clipped to 0, masked. The ids receive nothing. */
static TP_GRADIENT_FN(tp_gradient_unsorted_segment_sum) {
    if (!needed[0]) return NULL;
    tp_context_t *c = op->context;
    tp_tensor_t *ids = op->inputs[1], *dy = output_grads[0];
    tp_shape_t id_shape = tp_tensor_shape(ids), data_shape = tp_tensor_shape(op->inputs[0]);
    /* No segments: every id was negative and every row dropped (Gather could not clip to 0). */
    if (tp_tensor_shape(dy).dims[0] == 0) return tp_zeros_like(c, op->inputs[0], &input_grads[0]);
    /* The mask has the ids' dimensions and 1 for each further dimension of data. */
    tp_shape_t mask_shape = data_shape;
    for (int32_t d = id_shape.rank; d < mask_shape.rank; d++) mask_shape.dims[d] = 1;
    enum { ZERO_IDS, KEPT, CLIPPED, GATHERED, MASK, ZEROS, NUM_TEMPS };
    tp_tensor_t *t[NUM_TEMPS] = {NULL};
    tp_status_t *error = tp_zeros_like(c, ids, &t[ZERO_IDS]);
    if (error == NULL) error = tp_greater_equal(c, ids, t[ZERO_IDS], &t[KEPT]);
    if (error == NULL) error = tp_select(c, t[KEPT], ids, t[ZERO_IDS], &t[CLIPPED]);
    if (error == NULL) error = tp_gather(c, dy, t[CLIPPED], 0, &t[GATHERED]);
    if (error == NULL) error = tp_reshape(c, t[KEPT], mask_shape, &t[MASK]);
    if (error == NULL) error = tp_zeros_like(c, t[GATHERED], &t[ZEROS]);
    if (error == NULL) error = tp_select(c, t[MASK], t[GATHERED], t[ZEROS], &input_grads[0]);
    tp_gradient_release(t, NUM_TEMPS);
    return error;
}

/* The stretch of dy inside the padding. */
static TP_GRADIENT_FN(tp_gradient_pad) {
    (void)needed;
    tp_shape_t x = tp_tensor_shape(op->inputs[0]);
    const tp_attr_t *paddings = tp_gradient_attr(op, "paddings");
    int64_t begin[TP_MAX_RANK];
    for (int32_t d = 0; d < x.rank; d++) begin[d] = paddings->list[2 * d];
    return tp_slice(op->context, output_grads[0], begin, x.dims, (size_t)x.rank,
                    &input_grads[0]);
}

/* The copies summed: one tiled dimension at a time, dy seen as [before, multiple, size,
 * after] and summed over the multiple. */
static TP_GRADIENT_FN(tp_gradient_tile) {
    (void)needed;
    tp_context_t *c = op->context;
    tp_shape_t x = tp_tensor_shape(op->inputs[0]), current = tp_tensor_shape(output_grads[0]);
    const tp_attr_t *multiples = tp_gradient_attr(op, "multiples");
    tp_tensor_t *grad = tp_tensor_retain(output_grads[0]);
    for (int32_t d = 0; d < x.rank; d++) {
        if (multiples->list[d] == 1) continue;
        int64_t before = 1, after = 1;
        for (int32_t k = 0; k < d; k++) before *= current.dims[k];
        for (int32_t k = d + 1; k < current.rank; k++) after *= current.dims[k];
        tp_shape_t split = TP_SHAPE(before, multiples->list[d], x.dims[d], after);
        current.dims[d] = x.dims[d];
        tp_tensor_t *temps[3] = {NULL, NULL, NULL};
        const int64_t multiple_axis[1] = {1};
        tp_status_t *error = tp_reshape(c, grad, split, &temps[0]);
        if (error == NULL) error = tp_sum(c, temps[0], multiple_axis, 1, false, &temps[1]);
        if (error == NULL) error = tp_reshape(c, temps[1], current, &temps[2]);
        tp_tensor_release(grad);
        grad = temps[2];
        temps[2] = NULL;
        tp_gradient_release(temps, 3);
        if (error != NULL) {
            tp_tensor_release(grad);
            return error;
        }
    }
    input_grads[0] = grad;
    return NULL;
}

/* t receives dy where the condition held, e where it did not, each summed back over the
 * dimensions broadcasting gave it. The condition receives nothing. */
static TP_GRADIENT_FN(tp_gradient_select) {
    tp_context_t *c = op->context;
    tp_tensor_t *condition = op->inputs[0], *dy = output_grads[0], *zeros = NULL;
    TP_RETURN_IF_ERROR(tp_zeros_like(c, dy, &zeros));
    tp_status_t *error = NULL;
    for (int32_t i = 1; i <= 2 && error == NULL; i++) {
        if (!needed[i]) continue;
        tp_tensor_t *picked = NULL;
        error = i == 1 ? tp_select(c, condition, dy, zeros, &picked)
                       : tp_select(c, condition, zeros, dy, &picked);
        if (error == NULL)
            error = tp_gradient_unbroadcast(c, picked, op->inputs[i], &input_grads[i]);
        tp_tensor_release(picked);
    }
    tp_tensor_release(zeros);
    if (error != NULL) tp_gradient_release(input_grads, op->num_inputs);
    return error;
}

static const tp_gradient_entry_t entries[] = {
    {"Concat", tp_gradient_concat},
    {"Gather", tp_gradient_gather},
    {"OneHot", tp_gradient_none},
    {"Pad", tp_gradient_pad},
    {"Select", tp_gradient_select},
    {"Slice", tp_gradient_slice},
    {"StridedSlice", tp_gradient_strided_slice},
    {"StridedSliceGrad", tp_gradient_strided_slice_grad},
    {"Tile", tp_gradient_tile},
    {"UnsortedSegmentSum", tp_gradient_unsorted_segment_sum},
};

const tp_gradient_family_t tp_gradients_array = {entries, sizeof entries / sizeof entries[0]};
