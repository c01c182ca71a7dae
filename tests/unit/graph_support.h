/* SPDX-License-Identifier: Apache-2.0 */
/* What the graph-mode tests share: small vectors in and out, a function's graph as text, and
 * an op run under a device scope. */
#ifndef TP_TESTS_GRAPH_SUPPORT_H
#define TP_TESTS_GRAPH_SUPPORT_H

#include <stdio.h>
#include <string.h>

#include "test_support.h"

static inline tp_tensor_t *vector(tp_context_t *context, const float *values, int64_t count) {
    tp_tensor_t *t;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(count), values,
                               (size_t)count * sizeof *values, &t));
    return t;
}

static inline void read_floats(tp_tensor_t *t, float *out, size_t count) {
    assert_ok(tp_tensor_read(t, out, count * sizeof *out));
}

/* The function's graph for `inputs`, as text. */
static inline void graph_text(tp_function_t *function, tp_tensor_t **inputs, size_t count,
                              char *text, size_t size) {
    memset(text, 0, size);
    FILE *out = fmemopen(text, size - 1, "w");
    assert_non_null(out);
    assert_ok(tp_function_write_graph(function, inputs, count, TP_GRAPH_TEXT, out));
    fclose(out);
}

/* How often `pattern` occurs in `text`. */
static inline int count_of(const char *text, const char *pattern) {
    int count = 0;
    for (const char *at = strstr(text, pattern); at != NULL; at = strstr(at + 1, pattern))
        count++;
    return count;
}

/* How many nodes of `op` a graph's text lists ("relu_1 = Relu(" counts for "Relu"). */
static inline int count_ops(const char *text, const char *op) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, " = %s(", op);
    return count_of(text, pattern);
}

/* Runs the one-input op `op` under the device scope `device`. */
static inline tp_status_t *scoped(tp_context_t *context, const char *device,
                                  tp_status_t *(*op)(tp_context_t *, tp_tensor_t *,
                                                     tp_tensor_t **),
                                  tp_tensor_t *x, tp_tensor_t **out) {
    tp_status_t *error = tp_device_push(context, device);
    if (error != NULL) return error;
    error = op(context, x, out);
    tp_status_t *popped = tp_device_pop(context);
    if (error == NULL) return popped;
    tp_status_free(popped);
    return error;
}

#endif
