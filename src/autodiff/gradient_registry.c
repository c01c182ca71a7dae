/* SPDX-License-Identifier: Apache-2.0 */
/* Which built-in op has which gradient function, and what they share. */
#include <stdlib.h>
#include <string.h>

#include "autodiff/gradients.h"
#include "base/status.h"

typedef struct {
    const char *op;
    tp_gradient_fn_t fn;
} gradient_entry_t;

/* Sorted by op name, for bsearch. */
static const gradient_entry_t entries[] = {
    {"Add", tp_gradient_add},
    {"AddN", tp_gradient_add_n},
    {"BiasAdd", tp_gradient_bias_add},
    {"Div", tp_gradient_div},
    {"Fill", tp_gradient_fill},
    {"Identity", tp_gradient_identity},
    {"MatMul", tp_gradient_matmul},
    {"Mean", tp_gradient_mean},
    {"Mul", tp_gradient_mul},
    {"Neg", tp_gradient_neg},
    {"OnesLike", tp_gradient_none},
    {"Relu", tp_gradient_relu},
    {"Reshape", tp_gradient_reshape},
    {"Sigmoid", tp_gradient_sigmoid},
    {"Square", tp_gradient_square},
    {"Sub", tp_gradient_sub},
    {"Sum", tp_gradient_sum},
    {"Tanh", tp_gradient_tanh},
    {"Transpose", tp_gradient_transpose},
    {"ZerosLike", tp_gradient_none},
};

static int compare_op(const void *key, const void *element) {
    return strcmp((const char *)key, ((const gradient_entry_t *)element)->op);
}

tp_gradient_fn_t tp_gradient_find(const char *op) {
    const gradient_entry_t *entry = bsearch(op, entries, sizeof entries / sizeof entries[0],
                                            sizeof entries[0], compare_op);
    return entry != NULL ? entry->fn : NULL;
}

const tp_attr_t *tp_gradient_attr(const tp_gradient_op_t *op, const char *name) {
    for (size_t a = 0; a < op->def->num_attrs; a++)
        if (strcmp(op->def->attrs[a].name, name) == 0) return &op->attrs[a];
    return NULL;
}

void tp_gradient_release(tp_tensor_t **tensors, int32_t count) {
    for (int32_t i = 0; i < count; i++) {
        tp_tensor_release(tensors[i]);
        tensors[i] = NULL;
    }
}

tp_status_t *tp_gradient_unbroadcast(tp_context_t *context, tp_tensor_t *grad,
                                     const tp_tensor_t *input, tp_tensor_t **out) {
    tp_shape_t from = tp_tensor_shape(grad), to = tp_tensor_shape(input);
    int64_t axes[TP_MAX_RANK];
    size_t num_axes = 0;
    for (int32_t d = 0; d < from.rank; d++) {
        int32_t own = d - (from.rank - to.rank);
        if (own < 0 || (to.dims[own] == 1 && from.dims[d] != 1)) axes[num_axes++] = d;
    }
    if (num_axes == 0 && from.rank == to.rank) {
        *out = tp_tensor_retain(grad);
        return NULL;
    }
    tp_tensor_t *summed = grad;
    if (num_axes > 0) TP_RETURN_IF_ERROR(tp_sum(context, grad, axes, num_axes, false, &summed));
    tp_status_t *error = tp_reshape(context, summed, to, out);
    if (summed != grad) tp_tensor_release(summed);
    return error;
}
