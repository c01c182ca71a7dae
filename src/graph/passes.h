/* SPDX-License-Identifier: Apache-2.0 */
/* Graph passes. tp_graph_optimize runs them on a placed graph in this order:
 *
 *   1. pruning: nodes that no function output depends on are dropped;
 *   2. common subexpression elimination: an op node equal to an earlier one (same op,
 *      attributes, inputs and device) is replaced by it;
 *   3. constant folding: an op node whose inputs are all constants is run once, at trace time,
 *      and becomes a constant;
 *   4. identity removal: an Identity that moves nothing between devices is bypassed;
 *   5. each plug-in's pass, for graphs with a node on the plug-in's device type.
 *
 * Stateful ops (the random ones) are never merged or folded: they run at every call. Each
 * standard pass can be switched off (tp_context_set_graph_passes), and a plug-in may switch
 * some off for graphs on its device type. Every pass leaves the graph compacted. */
#ifndef TP_GRAPH_PASSES_H
#define TP_GRAPH_PASSES_H

#include "context/context.h"
#include "graph/graph.h"

/* Constant folding leaves ops whose output is larger than this alone, as TensorFlow's does:
 * their constant would hold memory for the life of the function. */
#define TP_MAX_FOLDED_BYTES (10u * 1024 * 1024)
/* Ops with more inputs than this (an AddN of many terms) are not folded. */
#define TP_MAX_FOLDED_INPUTS 16

tp_status_t *tp_pass_prune(tp_graph_t *graph);
tp_status_t *tp_pass_eliminate_common_subexpressions(tp_graph_t *graph);
tp_status_t *tp_pass_fold_constants(tp_context_t *context, tp_graph_t *graph);
tp_status_t *tp_pass_remove_identities(tp_graph_t *graph);
/* Runs the plug-in's graph pass through the host graph functions (graph/plugin_graph.c). */
tp_status_t *tp_pass_run_plugin(tp_context_t *context, const tp_plugin_record_t *plugin,
                                tp_graph_t *graph);

/* Fills the host function table's graph_* entries. */
void tp_plugin_graph_fill_host_api(tp_host_api_t *api);

/* The passes above, in order, as the context's options and the plug-ins allow. */
tp_status_t *tp_graph_optimize(tp_context_t *context, tp_graph_t *graph);

#endif
