/* SPDX-License-Identifier: Apache-2.0 */
/* Pruning: what no function output depends on is never run. Arguments stay, being the
 * function's signature. */
#include <stdlib.h>

#include "base/status.h"
#include "graph/graph_edit.h"
#include "graph/passes.h"

tp_status_t *tp_pass_prune(tp_graph_t *graph) {
    bool *needed = calloc((size_t)graph->num_nodes + 1, sizeof *needed);
    if (needed == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    for (int32_t i = 0; i < graph->num_outputs; i++) needed[graph->outputs[i].node] = true;
    /* Readers come after what they read, so one backward sweep finds every needed node. */
    for (int32_t n = graph->num_nodes - 1; n >= 0; n--) {
        const tp_graph_node_t *node = &graph->nodes[n];
        if (needed[n])
            for (int32_t i = 0; i < node->num_inputs; i++) needed[node->inputs[i].node] = true;
        else if (node->kind != TP_NODE_ARGUMENT)
            graph->nodes[n].removed = true;
    }
    free(needed);
    return tp_graph_compact(graph);
}
