/* SPDX-License-Identifier: Apache-2.0 */
/* How the built-in ops' output shapes follow from their inputs and attributes. */
#ifndef TP_OP_SHAPE_FUNCTIONS_H
#define TP_OP_SHAPE_FUNCTIONS_H

#include "op/op.h"

tp_status_t *tp_shape_same_as_input(tp_kernel_context_t *call);
tp_status_t *tp_shape_broadcast(tp_kernel_context_t *call);
tp_status_t *tp_shape_all_inputs_equal(tp_kernel_context_t *call);
tp_status_t *tp_shape_matmul(tp_kernel_context_t *call);
tp_status_t *tp_shape_batch_matmul(tp_kernel_context_t *call);
tp_status_t *tp_shape_bias_add(tp_kernel_context_t *call);
tp_status_t *tp_shape_reduce(tp_kernel_context_t *call);
tp_status_t *tp_shape_reshape(tp_kernel_context_t *call);
tp_status_t *tp_shape_transpose(tp_kernel_context_t *call);
tp_status_t *tp_shape_from_attr(tp_kernel_context_t *call);
tp_status_t *tp_shape_const(tp_kernel_context_t *call);
tp_status_t *tp_shape_fill(tp_kernel_context_t *call);
tp_status_t *tp_shape_softmax(tp_kernel_context_t *call);

/* "[2,3]", as TensorFlow writes shapes in messages; returns `text`. */
const char *tp_shape_text(const tp_shape_t *shape, char *text, size_t capacity);

/* The same text for a list of `count` values (an attribute's list); returns `text`. */
const char *tp_bracketed_list(const int64_t *values, int32_t count, char *text, size_t capacity);

/* The NumPy broadcast of two shapes; fails naming both when they do not broadcast. */
tp_status_t *tp_broadcast_shapes(const tp_shape_t *a, const tp_shape_t *b, tp_shape_t *out);

/* Reduction axes as a mask over `rank` dimensions: negative axes count from the end, none
 * means all; an axis out of range or repeated fails. */
tp_status_t *tp_reduction_mask(const int64_t *axes, int32_t count, int32_t rank,
                               bool mask[TP_MAX_RANK]);

#endif
