/* SPDX-License-Identifier: Apache-2.0 */
/* Constant folding: an op node whose inputs are all constants (captured tensors, or nodes
 * folded before it) computes the same value at every call, so it is run once now, on the
 * device it was placed on, and becomes a constant holding the result. Stateful ops are left to
 * run at every call, and so are ops whose result would be large, and ops whose constants are
 * on another device (copying them here would wait on that device and could meet its errors).
 * The pass waits for the node's device: a value is folded only once it is known good. A
 * kernel that fails leaves the node as it is, for the call to report; an error the wait finds
 * is kept for the device's next reader, since it may belong to earlier work. */
#include "base/status.h"
#include "launch/launch.h"
#include "graph/graph_edit.h"
#include "graph/graph_placement.h"
#include "graph/passes.h"
#include "tensor/tensor.h"

static bool foldable(const tp_graph_t *graph, const tp_graph_node_t *node) {
    if (node->kind != TP_NODE_OP || node->op.def->is_stateful || node->num_outputs != 1 ||
        node->kernel == NULL || node->num_inputs > TP_MAX_FOLDED_INPUTS)
        return false;
    for (int32_t i = 0; i < node->num_inputs; i++) {
        const tp_graph_node_t *input = &graph->nodes[node->inputs[i].node];
        if (input->kind != TP_NODE_CAPTURE || input->captured->device != node->device)
            return false;
    }
    int64_t elements;
    size_t bytes;
    return tp_tensor_check_layout(node->output_dtypes[0], &node->output_shapes[0], &elements,
                                  &bytes) == NULL &&
           bytes <= TP_MAX_FOLDED_BYTES;
}

tp_status_t *tp_pass_fold_constants(tp_context_t *context, tp_graph_t *graph) {
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        tp_graph_node_t *node = &graph->nodes[n];
        if (!foldable(graph, node)) continue;
        tp_tensor_t *inputs[TP_MAX_FOLDED_INPUTS];
        for (int32_t i = 0; i < node->num_inputs; i++)
            inputs[i] = graph->nodes[node->inputs[i].node].captured;
        tp_kernel_context_t call;
        tp_graph_node_call(node, &call);
        tp_status_t *error =
            tp_execute_call(context, &call, node->kernel, inputs, (size_t)node->num_inputs);
        if (error != NULL) {
            tp_status_free(error);
            continue;
        }
        /* A value whose kernel failed later is not frozen into the graph: the node stays, and
         * each call reports the failure where it happens. */
        error = tp_tensor_wait(call.outputs[0]);
        if (error != NULL) {
            tp_tensor_release(call.outputs[0]);
            tp_status_free(error);
            continue;
        }
        tp_graph_drop_inputs(graph, n);
        node->kind = TP_NODE_CAPTURE;
        node->captured = call.outputs[0];
        node->folded_from = node->op.def->name;
        node->kernel = NULL;
    }
    return tp_graph_compact(graph);
}
