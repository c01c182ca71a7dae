/* SPDX-License-Identifier: Apache-2.0 */
/* Tracing: while a function's body runs under a trace, the ops it calls are recorded into a
 * graph instead of running, and their outputs are symbolic tensors. One trace per thread at a
 * time. */
#ifndef TP_GRAPH_TRACE_H
#define TP_GRAPH_TRACE_H

#include "graph/graph.h"

typedef struct tp_trace {
    tp_context_t *context;
    tp_graph_t graph;
    /* Every symbolic tensor the trace made, each with a reference the trace holds until it
     * ends: a body that drops one reference too many leaves a count to check, not freed
     * memory. */
    tp_tensor_t **made;
    size_t num_made, made_capacity;
} tp_trace_t;

/* The trace this thread runs for `context`, or NULL. */
tp_trace_t *tp_trace_current(const tp_context_t *context);

/* Starts tracing on this thread: a graph with one argument node per input, and a symbolic
 * tensor for each in `out_arguments` (zeroed by the caller, which releases them; on failure
 * they are left NULL). */
tp_status_t *tp_trace_begin(tp_trace_t *trace, tp_context_t *context, const char *name,
                            tp_tensor_t *const *inputs, size_t num_inputs,
                            tp_tensor_t **out_arguments);
/* Records a resolved call whose shapes are inferred, with its outputs as new symbolic
 * tensors. Inputs with values are captured. */
tp_status_t *tp_trace_record(tp_trace_t *trace, tp_kernel_context_t *call,
                             tp_tensor_t *const *inputs, size_t num_inputs,
                             tp_tensor_t **outputs);
/* Stops tracing on this thread, sets the graph's outputs and lets go of the trace's symbolic
 * tensors; on failure the graph is freed. Each output must hand over a reference of its own:
 * one of the trace's tensors returned without one (an argument or another output returned as
 * is, or a value the body released) is an error, and its entry is set to NULL so that the
 * caller releases only references that exist. */
tp_status_t *tp_trace_end(tp_trace_t *trace, tp_tensor_t **outputs, size_t num_outputs);

#endif
