/* SPDX-License-Identifier: Apache-2.0 */
#include "graph/graph_edit.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "tensor/tensor.h"

void tp_graph_set_input(tp_graph_t *graph, int32_t node, int32_t index, tp_graph_edge_t edge) {
    tp_graph_edge_t *input = &graph->nodes[node].inputs[index];
    graph->nodes[input->node].consumers--;
    graph->nodes[edge.node].consumers++;
    *input = edge;
}

void tp_graph_set_output(tp_graph_t *graph, int32_t index, tp_graph_edge_t edge) {
    graph->nodes[graph->outputs[index].node].consumers--;
    graph->nodes[edge.node].consumers++;
    graph->outputs[index] = edge;
}

void tp_graph_drop_inputs(tp_graph_t *graph, int32_t node) {
    /* A chain of nodes each read only by the next is walked without recursion: each step
     * drops the reads of one node whose last reader was the one before. */
    int32_t dropping = node;
    while (dropping >= 0) {
        tp_graph_node_t *reader = &graph->nodes[dropping];
        int32_t count = reader->num_inputs;
        reader->num_inputs = 0;
        dropping = -1;
        for (int32_t i = 0; i < count; i++) {
            int32_t index = reader->inputs[i].node;
            tp_graph_node_t *input = &graph->nodes[index];
            if (--input->consumers > 0 || input->removed || input->kind == TP_NODE_ARGUMENT)
                continue;
            input->removed = true;
            if (dropping < 0) dropping = index;
            else tp_graph_drop_inputs(graph, index);
        }
    }
}

void tp_graph_remove_node(tp_graph_t *graph, int32_t node) {
    graph->nodes[node].removed = true;
    tp_graph_drop_inputs(graph, node);
}

tp_status_t *tp_graph_redirects_init(tp_graph_redirects_t *redirects, const tp_graph_t *graph) {
    redirects->to = malloc((size_t)(graph->num_nodes + 1) * sizeof *redirects->to);
    if (redirects->to == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    for (int32_t n = 0; n < graph->num_nodes; n++) redirects->to[n] = (tp_graph_edge_t){-1, -1};
    return NULL;
}

void tp_graph_redirects_free(tp_graph_redirects_t *redirects) {
    free(redirects->to);
    redirects->to = NULL;
}

/* Where `edge` leads once replaced nodes are skipped; a replacement is never itself replaced,
 * as passes redirect in dependency order. */
static tp_graph_edge_t redirected(const tp_graph_redirects_t *redirects, tp_graph_edge_t edge) {
    tp_graph_edge_t to = redirects->to[edge.node];
    if (to.node < 0) return edge;
    return (tp_graph_edge_t){to.node, to.output < 0 ? edge.output : to.output};
}

void tp_graph_redirect_inputs(tp_graph_t *graph, int32_t node,
                              const tp_graph_redirects_t *redirects) {
    for (int32_t i = 0; i < graph->nodes[node].num_inputs; i++) {
        tp_graph_edge_t edge = graph->nodes[node].inputs[i];
        tp_graph_edge_t to = redirected(redirects, edge);
        if (to.node != edge.node || to.output != edge.output)
            tp_graph_set_input(graph, node, i, to);
    }
}

void tp_graph_redirect_finish(tp_graph_t *graph, const tp_graph_redirects_t *redirects) {
    for (int32_t i = 0; i < graph->num_outputs; i++) {
        tp_graph_edge_t to = redirected(redirects, graph->outputs[i]);
        if (to.node != graph->outputs[i].node || to.output != graph->outputs[i].output)
            tp_graph_set_output(graph, i, to);
    }
    for (int32_t n = 0; n < graph->num_nodes; n++)
        if (redirects->to[n].node >= 0 && !graph->nodes[n].removed)
            tp_graph_remove_node(graph, n);
}

/* ---- Compacting ------------------------------------------------------------------------------ */

enum { UNSEEN = 0, OPEN = 1, PLACED = 2 };

/* The live nodes in an order where inputs come first: a depth-first walk from each node in
 * present order, which keeps that order when it already is one. */
static tp_status_t *dependency_order(const tp_graph_t *graph, int32_t *order, int32_t *count) {
    int32_t n_nodes = graph->num_nodes;
    unsigned char *state = calloc((size_t)n_nodes + 1, 1);
    /* The walk's stack: a node and the next of its inputs to visit. */
    tp_graph_edge_t *stack = malloc(((size_t)n_nodes + 1) * sizeof *stack);
    if (state == NULL || stack == NULL) {
        free(state);
        free(stack);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    }
    tp_status_t *error = NULL;
    *count = 0;
    for (int32_t root = 0; root < n_nodes && error == NULL; root++) {
        if (graph->nodes[root].removed || state[root] != UNSEEN) continue;
        int32_t depth = 0;
        stack[depth++] = (tp_graph_edge_t){root, 0};
        state[root] = OPEN;
        while (depth > 0 && error == NULL) {
            tp_graph_edge_t *top = &stack[depth - 1];
            const tp_graph_node_t *node = &graph->nodes[top->node];
            if (top->output == node->num_inputs) {
                state[top->node] = PLACED;
                order[(*count)++] = top->node;
                depth--;
                continue;
            }
            int32_t input = node->inputs[top->output++].node;
            if (graph->nodes[input].removed)
                error = tp_status_make(TP_INTERNAL, "node %s reads %s, which was removed",
                                       node->name, graph->nodes[input].name);
            else if (state[input] == OPEN)
                error = tp_status_make(TP_INVALID_ARGUMENT,
                                       "the graph has a cycle through node %s",
                                       graph->nodes[input].name);
            else if (state[input] == UNSEEN) {
                state[input] = OPEN;
                stack[depth++] = (tp_graph_edge_t){input, 0};
            }
        }
    }
    for (int32_t i = 0; i < graph->num_outputs && error == NULL; i++)
        if (graph->nodes[graph->outputs[i].node].removed)
            error = tp_status_make(TP_INTERNAL, "output %d reads %s, which was removed", (int)i,
                                   graph->nodes[graph->outputs[i].node].name);
    free(state);
    free(stack);
    return error;
}

tp_status_t *tp_graph_compact(tp_graph_t *graph) {
    int32_t n_nodes = graph->num_nodes;
    int32_t *order = malloc(((size_t)n_nodes + 1) * sizeof *order);
    int32_t *renumber = malloc(((size_t)n_nodes + 1) * sizeof *renumber);
    tp_graph_node_t *nodes = malloc(((size_t)n_nodes + 1) * sizeof *nodes);
    tp_status_t *error = order == NULL || renumber == NULL || nodes == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : NULL;
    int32_t count = 0;
    if (error == NULL) error = dependency_order(graph, order, &count);
    if (error != NULL) {
        free(order);
        free(renumber);
        free(nodes);
        return error;
    }
    for (int32_t i = 0; i < count; i++) renumber[order[i]] = i;
    for (int32_t i = 0; i < count; i++) {
        nodes[i] = graph->nodes[order[i]];
        nodes[i].consumers = 0;
    }
    for (int32_t n = 0; n < n_nodes; n++)
        if (graph->nodes[n].removed) tp_tensor_release(graph->nodes[n].captured);
    for (int32_t i = 0; i < count; i++)
        for (int32_t e = 0; e < nodes[i].num_inputs; e++) {
            nodes[i].inputs[e].node = renumber[nodes[i].inputs[e].node];
            nodes[nodes[i].inputs[e].node].consumers++;
        }
    for (int32_t i = 0; i < graph->num_outputs; i++) {
        graph->outputs[i].node = renumber[graph->outputs[i].node];
        nodes[graph->outputs[i].node].consumers++;
    }
    free(graph->nodes);
    graph->nodes = nodes;
    graph->num_nodes = count;
    graph->capacity = n_nodes + 1;
    free(order);
    free(renumber);
    return NULL;
}
