/* SPDX-License-Identifier: Apache-2.0 */
#include "graph/graph_placement.h"

#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "launch/placement.h"

void tp_graph_node_call(const tp_graph_node_t *node, tp_kernel_context_t *out) {
    memset(out, 0, sizeof *out);
    out->op = &node->op;
    memcpy(out->attrs, node->attrs, sizeof out->attrs);
    out->num_inputs = node->num_inputs;
    out->num_outputs = node->num_outputs;
    for (int32_t o = 0; o < node->num_outputs; o++) {
        out->output_dtypes[o] = node->output_dtypes[o];
        out->output_shapes[o] = node->output_shapes[o];
        out->output_shape_set[o] = true;
    }
    out->device = node->device;
}

/* TensorFlow's graph wording for a scope that cannot be honoured. */
static tp_status_t *cannot_assign(tp_context_t *context, const tp_graph_node_t *node,
                                  tp_status_t *error) {
    if (!node->has_scope) return tp_status_annotate(error, "Cannot assign a device for operation "
                                                    "%s", node->name);
    const tp_device_spec_t *spec = &node->scope.spec;
    tp_status_t *worded;
    if (!tp_placement_any_device_matches(&context->registry, spec))
        worded = tp_status_make(TP_INVALID_ARGUMENT,
                                "Cannot assign a device for operation %s: Could not satisfy "
                                "explicit device specification '%s' because no devices matching "
                                "that specification are registered in this process",
                                node->name, node->scope.name);
    else
        worded = tp_status_make(TP_INVALID_ARGUMENT,
                                "Cannot assign a device for operation %s: Could not satisfy "
                                "explicit device specification '%s' because no supported kernel "
                                "for %s devices is available.",
                                node->name, node->scope.name,
                                spec->has_type ? spec->type : "those");
    tp_status_free(error);
    return worded;
}

tp_status_t *tp_graph_place(tp_context_t *context, tp_graph_t *graph) {
    TP_RETURN_IF_ERROR(tp_context_devices_ready(context));
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        tp_graph_node_t *node = &graph->nodes[n];
        if (node->kind != TP_NODE_OP) continue;
        tp_kernel_context_t call;
        tp_graph_node_call(node, &call);
        tp_placement_t placement;
        tp_status_t *error = tp_place_op_in_scope(context, &call,
                                                  node->has_scope ? &node->scope : NULL,
                                                  &placement);
        if (error != NULL) return cannot_assign(context, node, error);
        node->device = placement.device;
        node->kernel = placement.kernel;
    }
    if (!atomic_load(&context->log_device_placement)) return NULL;
    FILE *out = context->placement_log != NULL ? context->placement_log : stderr;
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        const tp_graph_node_t *node = &graph->nodes[n];
        if (node->kind == TP_NODE_OP)
            fprintf(out, "%s: (%s): %s\n", node->name, node->op.def->name,
                    node->device->full_name);
    }
    return NULL;
}
