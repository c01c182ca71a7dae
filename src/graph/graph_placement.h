/* SPDX-License-Identifier: Apache-2.0 */
/* Placement over a whole graph: each op node gets a device and kernel by the eager rules
 * (its scope, priority, soft placement), with errors in graph wording and, with placement
 * logging on, one line per node as TensorFlow's graph placer prints it. */
#ifndef TP_GRAPH_GRAPH_PLACEMENT_H
#define TP_GRAPH_GRAPH_PLACEMENT_H

#include "context/context.h"
#include "graph/graph.h"

tp_status_t *tp_graph_place(tp_context_t *context, tp_graph_t *graph);

/* A call of node `index` as kernels and placement read it: op, attributes, shapes and device,
 * no inputs. */
void tp_graph_node_call(const tp_graph_node_t *node, tp_kernel_context_t *out);

#endif
