/* Tracing: while a function's body runs under a trace, the ops it calls are recorded into a
 * graph instead of running, and their outputs are symbolic tensors. One trace per thread at a
 * time. */
#ifndef TP_GRAPH_TRACE_H
#define TP_GRAPH_TRACE_H

#include "graph/graph.h"

typedef struct tp_trace {
    tp_context_t *context;
    tp_graph_t graph;
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
/* Stops tracing on this thread and sets the graph's outputs; on failure the graph is freed. */
tp_status_t *tp_trace_end(tp_trace_t *trace, tp_tensor_t *const *outputs, size_t num_outputs);

#endif
