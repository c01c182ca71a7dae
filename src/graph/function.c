/* SPDX-License-Identifier: Apache-2.0 */
/* Traced functions: the body is traced into a graph once per input signature (dtypes and
 * shapes), the graph placed, and every call runs the graph. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/profile_hooks.h"
#include "base/shape.h"
#include "base/status.h"
#include "context/context.h"
#include "graph/executor.h"
#include "graph/graph_placement.h"
#include "graph/partition.h"
#include "graph/passes.h"
#include "graph/trace.h"
#include "tensor/tensor.h"

typedef struct concrete {
    struct concrete *next;
    size_t num_inputs;
    tp_dtype_t *dtypes;
    tp_shape_t *shapes;
    tp_trace_t trace; /* its graph, placed, optimized and partitioned */
    tp_executor_t *executor;
} concrete_t;

struct tp_function {
    tp_context_t *context; /* retained */
    char *name;
    tp_function_body_t body;
    void *user_data;
    size_t num_outputs;
    pthread_mutex_t mutex; /* guards the list of concrete graphs and tracing */
    concrete_t *concretes;
    atomic_size_t traces;
};

tp_status_t *tp_function_create(tp_context_t *context, const char *name, tp_function_body_t body,
                                size_t num_outputs, void *user_data, tp_function_t **out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(name);
    TP_REQUIRE_ARG(body);
    TP_REQUIRE_ARG(out);
    if (num_outputs == 0 || num_outputs > 16)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_function_create: '%s' must return 1 to 16 tensors, not %zu",
                              name, num_outputs);
    tp_function_t *function = calloc(1, sizeof *function);
    if (function == NULL || (function->name = strdup(name)) == NULL ||
        pthread_mutex_init(&function->mutex, NULL) != 0) {
        if (function != NULL) free(function->name);
        free(function);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    }
    atomic_init(&function->traces, 0);
    tp_context_retain(context);
    function->context = context;
    function->body = body;
    function->user_data = user_data;
    function->num_outputs = num_outputs;
    *out = function;
    return NULL;
}

static void free_concrete(concrete_t *concrete) {
    tp_executor_destroy(concrete->executor);
    tp_graph_free(&concrete->trace.graph);
    free(concrete->dtypes);
    free(concrete->shapes);
    free(concrete);
}

void tp_function_destroy(tp_function_t *function) {
    if (function == NULL) return;
    while (function->concretes != NULL) {
        concrete_t *next = function->concretes->next;
        free_concrete(function->concretes);
        function->concretes = next;
    }
    pthread_mutex_destroy(&function->mutex);
    tp_context_t *context = function->context;
    free(function->name);
    free(function);
    tp_context_release(context);
}

static bool same_signature(const concrete_t *concrete, tp_tensor_t *const *inputs, size_t count) {
    if (concrete->num_inputs != count) return false;
    for (size_t i = 0; i < count; i++) {
        if (concrete->dtypes[i] != inputs[i]->dtype) return false;
        if (!tp_shape_equal(&concrete->shapes[i], &inputs[i]->shape)) return false;
    }
    return true;
}

/* Runs the body under a trace, then places, optimizes and partitions the graph and plans its
 * execution. */
static tp_status_t *trace(tp_function_t *function, tp_tensor_t *const *inputs, size_t count,
                          concrete_t **out) {
    concrete_t *concrete = calloc(1, sizeof *concrete);
    tp_tensor_t **arguments = calloc(count + 1, sizeof *arguments);
    tp_tensor_t **results = calloc(function->num_outputs, sizeof *results);
    if (concrete != NULL) {
        concrete->dtypes = malloc((count + 1) * sizeof *concrete->dtypes);
        concrete->shapes = malloc((count + 1) * sizeof *concrete->shapes);
    }
    tp_status_t *error = concrete == NULL || arguments == NULL || results == NULL ||
                                 concrete->dtypes == NULL || concrete->shapes == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : NULL;
    bool traced = false;
    if (error == NULL)
        error = tp_trace_begin(&concrete->trace, function->context, function->name, inputs,
                               count, arguments);
    if (error == NULL) {
        error = function->body(function->context, arguments, count, results,
                               function->num_outputs, function->user_data);
        tp_status_t *ended = tp_trace_end(&concrete->trace, results, function->num_outputs);
        if (error == NULL) error = ended;
        else if (ended == NULL) tp_graph_free(&concrete->trace.graph);
        else tp_status_free(ended);
        traced = error == NULL;
        error = tp_status_annotate(error, "tracing function '%s'", function->name);
    }
    for (size_t i = 0; arguments != NULL && i < count; i++) tp_tensor_release(arguments[i]);
    for (size_t i = 0; results != NULL && i < function->num_outputs; i++)
        tp_tensor_release(results[i]);
    free(arguments);
    free(results);
    if (error == NULL) error = tp_graph_place(function->context, &concrete->trace.graph);
    if (error == NULL) error = tp_graph_optimize(function->context, &concrete->trace.graph);
    if (error == NULL) error = tp_graph_partition(&concrete->trace.graph);
    if (error == NULL)
        error = tp_executor_create(function->context, &concrete->trace.graph,
                                   &concrete->executor);
    if (error != NULL) {
        if (traced) tp_graph_free(&concrete->trace.graph);
        if (concrete != NULL) {
            free(concrete->dtypes);
            free(concrete->shapes);
        }
        free(concrete);
        return error;
    }
    concrete->num_inputs = count;
    for (size_t i = 0; i < count; i++) {
        concrete->dtypes[i] = inputs[i]->dtype;
        concrete->shapes[i] = inputs[i]->shape;
    }
    *out = concrete;
    return NULL;
}

/* The graph for the signature of `inputs`, traced now if it is new (*out_traced). */
static tp_status_t *concrete_for(tp_function_t *function, tp_tensor_t *const *inputs,
                                 size_t count, concrete_t **out, bool *out_traced) {
    *out_traced = false;
    pthread_mutex_lock(&function->mutex);
    concrete_t *found = function->concretes;
    while (found != NULL && !same_signature(found, inputs, count)) found = found->next;
    tp_status_t *error = NULL;
    if (found == NULL) {
        error = trace(function, inputs, count, &found);
        if (error == NULL) {
            found->next = function->concretes;
            function->concretes = found;
            atomic_fetch_add(&function->traces, 1);
            *out_traced = true;
        }
    }
    pthread_mutex_unlock(&function->mutex);
    if (error == NULL) *out = found;
    return error;
}

tp_status_t *tp_function_call(tp_function_t *function, tp_tensor_t *const *inputs,
                              size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs) {
    TP_REQUIRE_ARG(function);
    TP_REQUIRE_ARG(outputs);
    if (num_inputs > 0) TP_REQUIRE_ARG(inputs);
    if (num_outputs != function->num_outputs)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "function '%s' returns %zu tensors, but %zu outputs were given",
                              function->name, function->num_outputs, num_outputs);
    for (size_t i = 0; i < num_inputs; i++) {
        if (inputs[i] == NULL || inputs[i]->context != function->context)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "function '%s': input %zu is %s", function->name, i,
                                  inputs[i] == NULL ? "NULL" : "of another context");
        TP_RETURN_IF_ERROR(tp_status_annotate(tp_tensor_require_values(inputs[i], function->name),
                                              "input %zu", i));
    }
    if (tp_trace_current(function->context) != NULL)
        return tp_status_make(TP_UNIMPLEMENTED,
                              "function '%s' was called while another is being traced; calling "
                              "one function from another's body is not supported yet",
                              function->name);
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    concrete_t *concrete;
    bool traced;
    TP_RETURN_IF_ERROR(concrete_for(function, inputs, num_inputs, &concrete, &traced));
    tp_status_t *error = tp_executor_run(concrete->executor, inputs, outputs);
    if (profile != NULL && error == NULL) profile->function_run(function->name, traced, begin_ns);
    return error;
}

size_t tp_function_trace_count(const tp_function_t *function) {
    return function == NULL ? 0 : atomic_load(&function->traces);
}

tp_status_t *tp_function_write_graph(tp_function_t *function, tp_tensor_t *const *inputs,
                                     size_t num_inputs, tp_graph_format_t format, FILE *out) {
    TP_REQUIRE_ARG(function);
    TP_REQUIRE_ARG(out);
    concrete_t *concrete;
    bool traced;
    TP_RETURN_IF_ERROR(concrete_for(function, inputs, num_inputs, &concrete, &traced));
    const tp_graph_t *graph = &concrete->trace.graph;
    return format == TP_GRAPH_DOT ? tp_graph_write_dot(graph, out)
                                  : tp_graph_write_text(graph, out);
}
