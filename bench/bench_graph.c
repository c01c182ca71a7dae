/* Graph mode against eager on the same computation: a chain of 1000 cheap ops (Neg, then
 * Relu, alternating) on a 1-element float32, run as a traced function and op by op. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

enum { CHAIN = 1000, REPEATS = 200 };

static tp_status_t *chain(tp_context_t *context, tp_tensor_t *x, tp_tensor_t **out) {
    tp_tensor_t *value = tp_tensor_retain(x);
    for (int i = 0; i < CHAIN; i++) {
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

static tp_status_t *body(tp_context_t *context, tp_tensor_t *const *inputs, size_t num_inputs,
                         tp_tensor_t **outputs, size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    return chain(context, inputs[0], &outputs[0]);
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    tp_context_t *context = bench_cpu_context();
    const float one = 1.0f;
    tp_tensor_t *x;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &one, sizeof one, &x));
    tp_function_t *function;
    TP_CHECK(tp_function_create(context, "chain", body, 1, NULL, &function));

    double eager = 1e30, graph = 1e30;
    for (int r = 0; r < REPEATS; r++) {
        tp_tensor_t *y;
        double start = now_seconds();
        TP_CHECK(chain(context, x, &y));
        TP_CHECK(tp_tensor_wait(y));
        double t = now_seconds() - start;
        if (t < eager) eager = t;
        tp_tensor_release(y);

        start = now_seconds();
        TP_CHECK(tp_function_call(function, &x, 1, &y, 1)); /* traced at the first call */
        TP_CHECK(tp_tensor_wait(y));
        t = now_seconds() - start;
        if (r > 0 && t < graph) graph = t;
        tp_tensor_release(y);
    }
    printf("a chain of %d cheap ops on one float32, CPU (best of %d)\n", CHAIN, REPEATS);
    printf("  %-40s %8.0f ns/node\n", "baseline: eager, op by op", eager * 1e9 / CHAIN);
    printf("  %-40s %8.0f ns/node   (%.2fx eager; target: at most 0.5x)\n",
           "traced function (graph)", graph * 1e9 / CHAIN, graph / eager);
    tp_function_destroy(function);
    tp_tensor_release(x);
    tp_context_destroy(context);
    return 0;
}
