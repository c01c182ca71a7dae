/* Runs a placed graph: nodes in order, each launched on its device's stream. Values are
 * released as soon as their last reader has been launched; inputs on another device are
 * copied there. The host waits only where a copy between devices needs it. */
#ifndef TP_GRAPH_EXECUTOR_H
#define TP_GRAPH_EXECUTOR_H

#include "context/context.h"
#include "graph/graph.h"

/* `inputs` are the function's arguments, matching the graph's argument nodes; `outputs`
 * receive new references. On failure nothing is left. */
tp_status_t *tp_graph_run(tp_context_t *context, const tp_graph_t *graph,
                          tp_tensor_t *const *inputs, tp_tensor_t **outputs);

#endif
