/* SPDX-License-Identifier: Apache-2.0 */
#include "graph/trace.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "context/context.h"
#include "launch/device_scope.h"
#include "launch/execution_hooks.h"
#include "tensor/tensor.h"

static _Thread_local tp_trace_t *current;

tp_trace_t *tp_trace_current(const tp_context_t *context) {
    return current != NULL && current->context == context ? current : NULL;
}

/* Makes a symbolic tensor for output `output` of node `node` and keeps a reference to it until
 * the trace ends. */
static tp_status_t *make_symbolic(tp_trace_t *trace, int32_t node, int32_t output,
                                  tp_dtype_t dtype, const tp_shape_t *shape, tp_tensor_t **out) {
    if (trace->num_made == trace->made_capacity) {
        size_t capacity = trace->made_capacity == 0 ? 16 : trace->made_capacity * 2;
        tp_tensor_t **made = realloc(trace->made, capacity * sizeof *made);
        if (made == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
        trace->made = made;
        trace->made_capacity = capacity;
    }
    TP_RETURN_IF_ERROR(
        tp_tensor_symbolic(trace->context, trace, node, output, dtype, shape, out));
    trace->made[trace->num_made++] = tp_tensor_retain(*out);
    return NULL;
}

static void release_made(tp_trace_t *trace) {
    for (size_t i = 0; i < trace->num_made; i++) tp_tensor_release(trace->made[i]);
    free(trace->made);
    trace->made = NULL;
    trace->num_made = trace->made_capacity = 0;
}

/* The tracer as execution sees it: it takes the calls of a thread that runs a trace for the
 * call's context (tp_execution_interceptor_for). */
static bool trace_wants(const tp_context_t *context) { return tp_trace_current(context) != NULL; }

static tp_status_t *trace_take(tp_context_t *context, tp_kernel_context_t *call,
                               tp_tensor_t *const *inputs, size_t num_inputs,
                               tp_tensor_t **outputs) {
    return tp_trace_record(tp_trace_current(context), call, inputs, num_inputs, outputs);
}

static const tp_execution_interceptor_t tracer = {trace_wants, trace_take};

tp_status_t *tp_trace_begin(tp_trace_t *trace, tp_context_t *context, const char *name,
                            tp_tensor_t *const *inputs, size_t num_inputs,
                            tp_tensor_t **out_arguments) {
    /* Joins the hooks before its first trace: until then no op pays for the tracer. */
    if (!tp_execution_add_interceptor(&tracer))
        return tp_status_make(TP_INTERNAL, "tracing '%s': the execution hook table is full",
                              name);
    if (current != NULL)
        return tp_status_make(TP_UNIMPLEMENTED,
                              "function '%s' was called while '%s' is being traced; calling one "
                              "function from another's body is not supported yet",
                              name, current->graph.name);
    trace->context = context;
    trace->made = NULL;
    trace->num_made = trace->made_capacity = 0;
    TP_RETURN_IF_ERROR(tp_graph_init(&trace->graph, name));
    tp_status_t *error = NULL;
    size_t made = 0;
    for (; made < num_inputs && error == NULL; made++) {
        char base[32];
        snprintf(base, sizeof base, "argument_%zu", made);
        int32_t index;
        error = tp_graph_add_node(&trace->graph, TP_NODE_ARGUMENT, base, &index);
        if (error != NULL) break;
        tp_graph_node_t *node = &trace->graph.nodes[index];
        node->argument = (int32_t)made;
        node->num_outputs = 1;
        node->output_dtypes[0] = inputs[made]->dtype;
        node->output_shapes[0] = inputs[made]->shape;
        error = make_symbolic(trace, index, 0, inputs[made]->dtype, &inputs[made]->shape,
                              &out_arguments[made]);
    }
    if (error != NULL) {
        for (size_t i = 0; i < num_inputs; i++) {
            tp_tensor_release(out_arguments[i]);
            out_arguments[i] = NULL;
        }
        release_made(trace);
        tp_graph_free(&trace->graph);
        return error;
    }
    current = trace;
    return NULL;
}

/* The edge that gives `tensor` in this trace: its node, or a capture of a tensor with values
 * (one per tensor, however often it is used). */
static tp_status_t *edge_of(tp_trace_t *trace, tp_tensor_t *tensor, size_t position,
                            const char *op, tp_graph_edge_t *out) {
    if (tensor->trace == trace) {
        *out = (tp_graph_edge_t){tensor->node, tensor->output};
        return NULL;
    }
    if (tensor->trace != NULL)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: input %zu is a symbolic tensor of another function's trace",
                              op, position);
    tp_graph_t *graph = &trace->graph;
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        if (graph->nodes[n].captured == tensor) {
            *out = (tp_graph_edge_t){n, 0};
            return NULL;
        }
    }
    int32_t index;
    TP_RETURN_IF_ERROR(tp_graph_add_node(graph, TP_NODE_CAPTURE, "captured", &index));
    tp_graph_node_t *node = &graph->nodes[index];
    node->captured = tp_tensor_retain(tensor);
    node->num_outputs = 1;
    node->output_dtypes[0] = tensor->dtype;
    node->output_shapes[0] = tensor->shape;
    *out = (tp_graph_edge_t){index, 0};
    return NULL;
}

tp_status_t *tp_trace_record(tp_trace_t *trace, tp_kernel_context_t *call,
                             tp_tensor_t *const *inputs, size_t num_inputs,
                             tp_tensor_t **outputs) {
    const char *op = call->op->def->name;
    tp_graph_edge_t edges[64];
    if (num_inputs > sizeof edges / sizeof edges[0])
        return tp_status_make(TP_UNIMPLEMENTED, "%s: a traced op takes at most 64 inputs", op);
    for (size_t i = 0; i < num_inputs; i++)
        TP_RETURN_IF_ERROR(edge_of(trace, inputs[i], i, op, &edges[i]));
    int32_t index;
    TP_RETURN_IF_ERROR(tp_graph_add_node(&trace->graph, TP_NODE_OP, op, &index));
    TP_RETURN_IF_ERROR(
        tp_graph_set_op(&trace->graph, index, call, edges, (int32_t)num_inputs));
    const tp_device_scope_t *scope = tp_device_scope_current(trace->context);
    tp_graph_node_t *node = &trace->graph.nodes[index];
    if (scope != NULL) {
        node->has_scope = true;
        node->scope = *scope;
    }
    int32_t made = 0;
    tp_status_t *error = NULL;
    for (; made < call->num_outputs && error == NULL; made++)
        error = make_symbolic(trace, index, made, call->output_dtypes[made],
                              &call->output_shapes[made], &outputs[made]);
    if (error != NULL)
        for (int32_t o = 0; o + 1 < made; o++) tp_tensor_release(outputs[o]);
    return error;
}

/* Each output hands over one reference, and the body keeps none of the trace's tensors. So a
 * tensor of the trace has the trace's reference, its argument's if it is one, and one per
 * output so far; fewer means this output was returned without a reference of its own. It is
 * refused and set to NULL, so the caller's releases match the references that exist. */
static tp_status_t *check_handed_over(tp_trace_t *trace, tp_tensor_t **outputs, size_t count) {
    tp_status_t *error = NULL;
    for (size_t i = 0; i < count; i++) {
        tp_tensor_t *tensor = outputs[i];
        if (tensor == NULL || tensor->trace != trace) continue;
        const tp_graph_node_t *node = &trace->graph.nodes[tensor->node];
        bool argument = node->kind == TP_NODE_ARGUMENT;
        size_t earlier = i;
        int owed = argument ? 3 : 2;
        for (size_t j = 0; j < i; j++) {
            if (outputs[j] != tensor) continue;
            owed++;
            if (earlier == i) earlier = j;
        }
        if (atomic_load(&tensor->references) >= owed) continue;
        outputs[i] = NULL;
        if (error != NULL) continue;
        if (earlier < i)
            error = tp_status_make(TP_INVALID_ARGUMENT,
                                   "output %zu is output %zu again without a reference of its "
                                   "own; return tp_tensor_retain(output %zu)",
                                   i, earlier, earlier);
        else if (argument)
            error = tp_status_make(TP_INVALID_ARGUMENT,
                                   "output %zu is argument %d returned without a reference of "
                                   "its own; return tp_tensor_retain(argument)",
                                   i, (int)node->argument);
        else
            error = tp_status_make(TP_INVALID_ARGUMENT,
                                   "output %zu (%s:%d) was released by the body before it was "
                                   "returned",
                                   i, node->name, (int)tensor->output);
    }
    return error;
}

tp_status_t *tp_trace_end(tp_trace_t *trace, tp_tensor_t **outputs, size_t num_outputs) {
    current = NULL;
    tp_graph_edge_t edges[TP_MAX_OP_OUTPUTS * 4];
    tp_status_t *error = check_handed_over(trace, outputs, num_outputs);
    if (error == NULL && num_outputs > sizeof edges / sizeof edges[0])
        error = tp_status_make(TP_UNIMPLEMENTED, "a function returns at most %zu tensors",
                               sizeof edges / sizeof edges[0]);
    for (size_t i = 0; i < num_outputs && error == NULL; i++) {
        if (outputs[i] == NULL)
            error = tp_status_make(TP_INVALID_ARGUMENT, "the body left output %zu unset", i);
        else
            error = edge_of(trace, outputs[i], i, "the function's result", &edges[i]);
    }
    if (error == NULL) error = tp_graph_set_outputs(&trace->graph, edges, (int32_t)num_outputs);
    release_made(trace);
    if (error != NULL) tp_graph_free(&trace->graph);
    return error;
}
