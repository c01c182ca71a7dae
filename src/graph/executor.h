/* SPDX-License-Identifier: Apache-2.0 */
/* Runs a placed, partitioned graph. An executor is made once per graph: the steps in
 * dependency order with their kernel calls resolved, and a memory plan that puts every
 * intermediate value at a fixed offset of one block per device. A run then takes one block
 * per device, launches each step on its device's stream without waiting, and gives the blocks
 * back in stream order; the host waits only where a copy moves a value between devices. The
 * function's results are tensors of their own. Runs may overlap on several threads. */
#ifndef TP_GRAPH_EXECUTOR_H
#define TP_GRAPH_EXECUTOR_H

#include "context/context.h"
#include "graph/graph.h"

typedef struct tp_executor tp_executor_t;

/* The graph must outlive the executor. */
tp_status_t *tp_executor_create(tp_context_t *context, const tp_graph_t *graph,
                                tp_executor_t **out);
void tp_executor_destroy(tp_executor_t *executor);

/* `inputs` are the function's arguments, matching the graph's argument nodes; `outputs`
 * receive new references. On failure nothing is left. */
tp_status_t *tp_executor_run(tp_executor_t *executor, tp_tensor_t *const *inputs,
                             tp_tensor_t **outputs);

#endif
