/* SPDX-License-Identifier: Apache-2.0 */
/* Editing a graph in place, as passes do: rewiring an edge keeps every node's count of readers
 * right, removing a node removes the inputs it leaves unread, and compacting drops the removed
 * nodes and restores dependency order after nodes were added. */
#ifndef TP_GRAPH_GRAPH_EDIT_H
#define TP_GRAPH_GRAPH_EDIT_H

#include "graph/graph.h"

/* Input `index` of `node` reads `edge` from now on. */
void tp_graph_set_input(tp_graph_t *graph, int32_t node, int32_t index, tp_graph_edge_t edge);
/* Function output `index` is `edge` from now on. */
void tp_graph_set_output(tp_graph_t *graph, int32_t index, tp_graph_edge_t edge);

/* Drops every read of `node` (it keeps its readers); an input left with no reader is removed,
 * unless it is a function argument, and so on up the chain. */
void tp_graph_drop_inputs(tp_graph_t *graph, int32_t node);
/* Marks `node` removed and drops its reads; an input left with no reader is removed in turn,
 * unless it is a function argument. The node must have no reader left. */
void tp_graph_remove_node(tp_graph_t *graph, int32_t node);

/* Where passes that replace a node by another send its readers: `to[n].node` is -1 for a node
 * that stays, else the node whose outputs replace n's (output `to[n].output`, or the same
 * output as read when that is -1). */
typedef struct tp_graph_redirects {
    tp_graph_edge_t *to;
} tp_graph_redirects_t;

tp_status_t *tp_graph_redirects_init(tp_graph_redirects_t *redirects, const tp_graph_t *graph);
void tp_graph_redirects_free(tp_graph_redirects_t *redirects);
/* Points the inputs of `node` past every replaced node. */
void tp_graph_redirect_inputs(tp_graph_t *graph, int32_t node,
                              const tp_graph_redirects_t *redirects);
/* Points the function outputs past replaced nodes, then removes the replaced nodes, which no
 * one reads any more. */
void tp_graph_redirect_finish(tp_graph_t *graph, const tp_graph_redirects_t *redirects);

/* Drops removed nodes (releasing their captures), puts the others in dependency order (keeping
 * the present order where it is one), renumbers edges and recounts readers. Fails, changing
 * nothing, if the edges form a cycle. */
tp_status_t *tp_graph_compact(tp_graph_t *graph);

#endif
