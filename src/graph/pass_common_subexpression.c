/* SPDX-License-Identifier: Apache-2.0 */
/* Common subexpression elimination: an op node that computes what an earlier node computes,
 * the same op with the same attributes on the same inputs and device, is replaced by it.
 * Nodes are visited in dependency order with their inputs already pointed at the surviving
 * nodes, so whole repeated chains collapse in one sweep. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "graph/graph_edit.h"
#include "graph/passes.h"

static bool attr_equal(const tp_attr_t *a, const tp_attr_t *b) {
    if (a->type != b->type) return false;
    switch (a->type) {
    case TP_ATTR_INT:
    case TP_ATTR_BOOL:
    case TP_ATTR_DTYPE:
        return a->i == b->i;
    case TP_ATTR_FLOAT:
        /* Bitwise, so that two NaN attributes are the same value. */
        return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case TP_ATTR_SHAPE:
    case TP_ATTR_INT_LIST:
        return a->count == b->count &&
               (a->count == 0 || memcmp(a->list, b->list, (size_t)a->count * sizeof *a->list) == 0);
    case TP_ATTR_STRING:
        return strcmp(a->s != NULL ? a->s : "", b->s != NULL ? b->s : "") == 0;
    case TP_ATTR_BYTES:
        return a->count == b->count && (a->count == 0 || memcmp(a->s, b->s, (size_t)a->count) == 0);
    }
    return false;
}

static bool same_computation(const tp_graph_node_t *a, const tp_graph_node_t *b) {
    if (a->op.def != b->op.def || a->device != b->device || a->num_inputs != b->num_inputs)
        return false;
    for (int32_t i = 0; i < a->num_inputs; i++)
        if (a->inputs[i].node != b->inputs[i].node || a->inputs[i].output != b->inputs[i].output)
            return false;
    for (size_t k = 0; k < a->op.def->num_attrs; k++)
        if (!attr_equal(&a->attrs[k], &b->attrs[k])) return false;
    return true;
}

/* Hashes what same_computation compares, but attributes only by kind: equal nodes must hash
 * alike, and the op and inputs already spread the nodes well. */
static uint64_t hash_of(const tp_graph_node_t *node) {
    uint64_t hash = (uint64_t)(uintptr_t)node->op.def * 0x9e3779b97f4a7c15u;
    hash ^= (uint64_t)(uintptr_t)node->device + (hash << 6) + (hash >> 2);
    for (int32_t i = 0; i < node->num_inputs; i++) {
        uint64_t edge = ((uint64_t)(uint32_t)node->inputs[i].node << 8) ^
                        (uint64_t)(uint32_t)node->inputs[i].output;
        hash ^= edge + 0x9e3779b97f4a7c15u + (hash << 6) + (hash >> 2);
    }
    return hash;
}

static bool mergeable(const tp_graph_node_t *node) {
    return node->kind == TP_NODE_OP && !node->op.def->is_stateful;
}

tp_status_t *tp_pass_eliminate_common_subexpressions(tp_graph_t *graph) {
    size_t buckets = 16;
    while (buckets < (size_t)graph->num_nodes * 2) buckets *= 2;
    int32_t *table = malloc(buckets * sizeof *table);
    tp_graph_redirects_t redirects = {NULL};
    tp_status_t *error = table == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : tp_graph_redirects_init(&redirects, graph);
    if (error != NULL) {
        free(table);
        return error;
    }
    for (size_t b = 0; b < buckets; b++) table[b] = -1;
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        tp_graph_redirect_inputs(graph, n, &redirects);
        const tp_graph_node_t *node = &graph->nodes[n];
        if (!mergeable(node)) continue;
        size_t b = (size_t)hash_of(node) & (buckets - 1);
        while (table[b] >= 0 && !same_computation(&graph->nodes[table[b]], node))
            b = (b + 1) & (buckets - 1);
        if (table[b] >= 0) redirects.to[n] = (tp_graph_edge_t){table[b], -1};
        else table[b] = n;
    }
    tp_graph_redirect_finish(graph, &redirects);
    tp_graph_redirects_free(&redirects);
    free(table);
    return tp_graph_compact(graph);
}
