/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient functions: for one recorded op, the gradients of its inputs given those of its
 * outputs, built from ordinary ops so that they run on any device and trace like any code. */
#ifndef TP_AUTODIFF_GRADIENTS_H
#define TP_AUTODIFF_GRADIENTS_H

#include <stdbool.h>

#include "op/op.h"
#include "tensorplug/tensorplug.h"

/* What a gradient function sees of the op it differentiates. */
typedef struct tp_gradient_op {
    tp_context_t *context;
    const tp_op_def_t *def;
    const tp_attr_t *attrs; /* resolved, in the order of def->attrs */
    tp_tensor_t *const *inputs;
    int32_t num_inputs;
    tp_tensor_t *const *outputs;
    int32_t num_outputs;
} tp_gradient_op_t;

/* Fills input_grads[i] with a new tensor of inputs[i]'s shape for each i where needed[i], or
 * leaves it NULL where nothing flows back to that input (an integer Cast: "no gradient", which
 * the tape tells apart from zero); output_grads has one tensor per output. On failure it leaves
 * nothing allocated. */
typedef tp_status_t *(*tp_gradient_fn_t)(const tp_gradient_op_t *op,
                                         tp_tensor_t *const *output_grads, const bool *needed,
                                         tp_tensor_t **input_grads);

/* The gradient function of a built-in op, or NULL. */
tp_gradient_fn_t tp_gradient_find(const char *op);

/* The resolved attribute `name` of the op. */
const tp_attr_t *tp_gradient_attr(const tp_gradient_op_t *op, const char *name);

/* `grad` (of a broadcast result's shape) summed over the dimensions that broadcasting added to
 * `input`, and reshaped to input's shape: what a broadcast input receives. */
tp_status_t *tp_gradient_unbroadcast(tp_context_t *context, tp_tensor_t *grad,
                                     const tp_tensor_t *input, tp_tensor_t **out);

/* A scalar of `dtype` holding `value`: made in float64 and cast, so that it serves every
 * floating-point dtype Cast reaches. */
tp_status_t *tp_gradient_scalar(tp_context_t *context, tp_dtype_t dtype, double value,
                                tp_tensor_t **out);

/* Releases the first `count` of `tensors` and sets them to NULL: a failed gradient's cleanup. */
void tp_gradient_release(tp_tensor_t **tensors, int32_t count);

#define TP_GRADIENT_FN(name)                                                                   \
    tp_status_t *name(const tp_gradient_op_t *op, tp_tensor_t *const *output_grads,           \
                      const bool *needed, tp_tensor_t **input_grads)

/* Each gradients_*.c lists the ops it differentiates in a family table, in any order;
 * gradient_registry.c gathers the families into one index. */
typedef struct tp_gradient_entry {
    const char *op;
    tp_gradient_fn_t fn;
} tp_gradient_entry_t;

typedef struct tp_gradient_family {
    const tp_gradient_entry_t *entries;
    size_t count;
} tp_gradient_family_t;

extern const tp_gradient_family_t tp_gradients_conv;
extern const tp_gradient_family_t tp_gradients_math;
extern const tp_gradient_family_t tp_gradients_nn;
extern const tp_gradient_family_t tp_gradients_shape;
extern const tp_gradient_family_t tp_gradients_loss;
extern const tp_gradient_family_t tp_gradients_layers;
extern const tp_gradient_family_t tp_gradients_array;

/* The gradient of an op whose value does not depend on its inputs' values (ZerosLike, OnesLike,
 * OneHot): nothing flows back, and the tape goes on past it. */
TP_GRADIENT_FN(tp_gradient_none);

/* Every op with a gradient function, sorted by name: what the gradient check walks. */
const tp_gradient_entry_t *tp_gradient_entries(size_t *out_count);

#endif
