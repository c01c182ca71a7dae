/* SPDX-License-Identifier: Apache-2.0 */
/* What the typed op functions (*_op_api.c) share: an op of one or two inputs, no attributes and
 * one output is tp_execute with those inputs, written as UNARY(tp_relu, "Relu") or
 * BINARY(tp_add, "Add"). */
#ifndef TP_EAGER_OP_API_H
#define TP_EAGER_OP_API_H

#include "tensorplug/tensorplug.h"

static inline tp_status_t *tp_op_api_unary(tp_context_t *c, const char *op, tp_tensor_t *x,
                                           tp_tensor_t **out) {
    return tp_execute(c, op, &x, 1, NULL, 0, out, 1);
}

static inline tp_status_t *tp_op_api_binary(tp_context_t *c, const char *op, tp_tensor_t *x,
                                            tp_tensor_t *y, tp_tensor_t **out) {
    tp_tensor_t *inputs[2] = {x, y};
    return tp_execute(c, op, inputs, 2, NULL, 0, out, 1);
}

#define UNARY(function, op)                                                                    \
    tp_status_t *function(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out) {                \
        return tp_op_api_unary(c, op, x, out);                                                 \
    }
#define BINARY(function, op)                                                                   \
    tp_status_t *function(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y, tp_tensor_t **out) { \
        return tp_op_api_binary(c, op, x, y, out);                                             \
    }

#endif
