/* SPDX-License-Identifier: Apache-2.0 */
/* The chain of cheap ops whose per-op and per-node costs the benchmarks measure (bench_graph.c,
 * bench/compare/): Neg and Relu alternating, OP_CHAIN_LENGTH of them, on one tensor, eagerly
 * or as a traced function's body. C that C++ also compiles. */
#ifndef TP_BENCH_OP_CHAIN_H
#define TP_BENCH_OP_CHAIN_H

#include "tensorplug/tensorplug.h"

enum { OP_CHAIN_LENGTH = 1000 };

static inline tp_status_t *op_chain(tp_context_t *context, tp_tensor_t *x, tp_tensor_t **out) {
    tp_tensor_t *value = tp_tensor_retain(x);
    for (int i = 0; i < OP_CHAIN_LENGTH; i++) {
        tp_tensor_t *next;
        tp_status_t *error = i % 2 == 0 ? tp_neg(context, value, &next)
                                        : tp_relu(context, value, &next);
        tp_tensor_release(value);
        if (error != NULL) return error;
        value = next;
    }
    *out = value;
    return NULL;
}

/* The chain as a tp_function_body_t of one input and one output. */
static inline tp_status_t *op_chain_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                         size_t num_inputs, tp_tensor_t **outputs,
                                         size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    return op_chain(context, inputs[0], &outputs[0]);
}

#endif
