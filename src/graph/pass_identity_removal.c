/* SPDX-License-Identifier: Apache-2.0 */
/* Identity removal: an Identity whose input is already on its device only forwards the value,
 * so its readers read the input instead. One that reads a function argument stays: the
 * argument's device is known only at the call, and the Identity may be what moves it. */
#include <string.h>

#include "base/status.h"
#include "graph/graph_edit.h"
#include "graph/passes.h"
#include "tensor/tensor.h"

static bool forwards_only(const tp_graph_t *graph, const tp_graph_node_t *node) {
    if (node->kind != TP_NODE_OP || strcmp(node->op.def->name, "Identity") != 0) return false;
    return tp_graph_node_value_device(&graph->nodes[node->inputs[0].node]) == node->device;
}

tp_status_t *tp_pass_remove_identities(tp_graph_t *graph) {
    tp_graph_redirects_t redirects;
    TP_RETURN_IF_ERROR(tp_graph_redirects_init(&redirects, graph));
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        tp_graph_redirect_inputs(graph, n, &redirects);
        if (forwards_only(graph, &graph->nodes[n])) redirects.to[n] = graph->nodes[n].inputs[0];
    }
    tp_graph_redirect_finish(graph, &redirects);
    tp_graph_redirects_free(&redirects);
    return tp_graph_compact(graph);
}
