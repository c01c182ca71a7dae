/* SPDX-License-Identifier: Apache-2.0 */
#include "graph/partition.h"

#include <stdlib.h>

#include "base/status.h"
#include "graph/graph_edit.h"
#include "tensor/tensor.h"

typedef struct {
    tp_graph_edge_t from;
    tp_device_t *to;
    int32_t node;
} copy_t;

/* The copy node of `from` onto `to`, made on first need. */
static tp_status_t *copy_node(tp_graph_t *graph, copy_t **copies, int32_t *count,
                              tp_graph_edge_t from, tp_device_t *to, int32_t *out) {
    for (int32_t c = 0; c < *count; c++) {
        const copy_t *copy = &(*copies)[c];
        if (copy->from.node == from.node && copy->from.output == from.output && copy->to == to) {
            *out = copy->node;
            return NULL;
        }
    }
    copy_t *grown = realloc(*copies, (size_t)(*count + 1) * sizeof *grown);
    if (grown == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    *copies = grown;
    int32_t index;
    TP_RETURN_IF_ERROR(tp_graph_add_node(graph, TP_NODE_COPY, "copy", &index));
    tp_graph_node_t *node = &graph->nodes[index];
    node->inputs = tp_arena_memdup(&graph->arena, &from, sizeof from);
    if (node->inputs == NULL) {
        node->removed = true;
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    }
    const tp_graph_node_t *source = &graph->nodes[from.node];
    node->num_inputs = 1;
    node->num_outputs = 1;
    node->output_dtypes[0] = source->output_dtypes[from.output];
    node->output_shapes[0] = source->output_shapes[from.output];
    node->device = to;
    graph->nodes[from.node].consumers++;
    grown[(*count)++] = (copy_t){from, to, index};
    *out = index;
    return NULL;
}

tp_status_t *tp_graph_partition(tp_graph_t *graph) {
    copy_t *copies = NULL;
    int32_t num_copies = 0, original = graph->num_nodes;
    tp_status_t *error = NULL;
    for (int32_t n = 0; n < original && error == NULL; n++) {
        if (graph->nodes[n].kind != TP_NODE_OP) continue;
        for (int32_t i = 0; i < graph->nodes[n].num_inputs && error == NULL; i++) {
            tp_graph_edge_t from = graph->nodes[n].inputs[i];
            tp_device_t *device = graph->nodes[n].device;
            tp_device_t *source = tp_graph_node_value_device(&graph->nodes[from.node]);
            if (source == NULL || source == device) continue;
            int32_t copy = -1;
            error = copy_node(graph, &copies, &num_copies, from, device, &copy);
            if (error == NULL) tp_graph_set_input(graph, n, i, (tp_graph_edge_t){copy, 0});
        }
    }
    free(copies);
    return error != NULL ? error : tp_graph_compact(graph);
}
