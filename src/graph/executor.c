#include "graph/executor.h"

#include <stdlib.h>

#include "base/status.h"
#include "eager/execute.h"
#include "graph/graph_placement.h"
#include "tensor/tensor.h"

typedef struct {
    tp_tensor_t *values[TP_MAX_OP_OUTPUTS];
    int32_t readers_left;
} slot_t;

static void release_slot(slot_t *slot) {
    for (int o = 0; o < TP_MAX_OP_OUTPUTS; o++) {
        tp_tensor_release(slot->values[o]);
        slot->values[o] = NULL;
    }
}

static tp_status_t *run_op(tp_context_t *context, const tp_graph_t *graph,
                           const tp_graph_node_t *node, slot_t *slots, slot_t *out) {
    tp_tensor_t *inputs[64];
    for (int32_t i = 0; i < node->num_inputs; i++)
        inputs[i] = slots[node->inputs[i].node].values[node->inputs[i].output];
    tp_kernel_context_t call;
    tp_graph_node_call(node, &call);
    tp_status_t *error =
        tp_execute_call(context, &call, node->kernel, inputs, (size_t)node->num_inputs);
    if (error != NULL)
        return tp_status_annotate(error, "in function '%s', node %s", graph->name, node->name);
    for (int32_t o = 0; o < node->num_outputs; o++) out->values[o] = call.outputs[o];
    return NULL;
}

tp_status_t *tp_graph_run(tp_context_t *context, const tp_graph_t *graph,
                          tp_tensor_t *const *inputs, tp_tensor_t **outputs) {
    slot_t small[64];
    slot_t *slots =
        graph->num_nodes <= 64 ? small : malloc((size_t)graph->num_nodes * sizeof *slots);
    if (slots == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_status_t *error = NULL;
    int32_t n = 0;
    for (; n < graph->num_nodes && error == NULL; n++) {
        const tp_graph_node_t *node = &graph->nodes[n];
        slot_t *slot = &slots[n];
        *slot = (slot_t){.readers_left = node->consumers};
        if (node->kind == TP_NODE_ARGUMENT)
            slot->values[0] = tp_tensor_retain(inputs[node->argument]);
        else if (node->kind == TP_NODE_CAPTURE)
            slot->values[0] = tp_tensor_retain(node->captured);
        else
            error = run_op(context, graph, node, slots, slot);
        /* Values no later node reads go back to their allocator now, in stream order. */
        for (int32_t i = 0; i < node->num_inputs && error == NULL; i++)
            if (--slots[node->inputs[i].node].readers_left == 0)
                release_slot(&slots[node->inputs[i].node]);
    }
    if (error == NULL)
        for (int32_t i = 0; i < graph->num_outputs; i++)
            outputs[i] = tp_tensor_retain(
                slots[graph->outputs[i].node].values[graph->outputs[i].output]);
    for (int32_t done = 0; done < n; done++) release_slot(&slots[done]);
    if (slots != small) free(slots);
    return error;
}
