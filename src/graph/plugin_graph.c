/* SPDX-License-Identifier: Apache-2.0 */
/* The graph a plug-in's pass sees: the graph_* host functions of plugin.h, over the IR, and
 * the running of a pass. Every edit is checked before it is made, so that a pass cannot leave
 * a node reading a value of another dtype or shape than the one it was traced with. */
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "graph/graph_edit.h"
#include "graph/graph_placement.h"
#include "graph/passes.h"
#include "kernel/kernel_registry.h"
#include "plugin/plugin_status.h"
#include "tensor/tensor.h"

/* The most inputs a node added by a pass may have, as plugin.h says. */
enum { MAX_ADDED_INPUTS = 16 };

struct tp_plugin_graph {
    tp_context_t *context;
    tp_graph_t *graph;
};

static tp_graph_node_t *live_node(const tp_plugin_graph_t *graph, int32_t node,
                                  tp_plugin_status_t *status) {
    if (graph == NULL) {
        tp_plugin_status_set(status, TP_INVALID_ARGUMENT, "graph is NULL");
        return NULL;
    }
    if (node < 0 || node >= graph->graph->num_nodes) {
        tp_plugin_status_set(status, TP_OUT_OF_RANGE, "node %d, but there are %d",
                             (int)node, (int)graph->graph->num_nodes);
        return NULL;
    }
    tp_graph_node_t *found = &graph->graph->nodes[node];
    if (found->removed) {
        tp_plugin_status_set(status, TP_FAILED_PRECONDITION, "node %d (%s) was removed",
                             (int)node, found->name);
        return NULL;
    }
    return found;
}

/* Output `output` of a live node, checked. */
static tp_graph_node_t *live_output(const tp_plugin_graph_t *graph, int32_t node, int32_t output,
                                    tp_plugin_status_t *status) {
    tp_graph_node_t *found = live_node(graph, node, status);
    if (found != NULL && (output < 0 || output >= found->num_outputs)) {
        tp_plugin_status_set(status, TP_OUT_OF_RANGE, "%s has no output %d",
                             found->name, (int)output);
        return NULL;
    }
    return found;
}

static bool same_value_type(const tp_plugin_graph_t *graph, tp_graph_edge_t a, tp_graph_edge_t b,
                            tp_plugin_status_t *status) {
    const tp_graph_node_t *x = &graph->graph->nodes[a.node], *y = &graph->graph->nodes[b.node];
    const tp_shape_t *sx = &x->output_shapes[a.output], *sy = &y->output_shapes[b.output];
    if (x->output_dtypes[a.output] == y->output_dtypes[b.output] && sx->rank == sy->rank &&
        memcmp(sx->dims, sy->dims, (size_t)sx->rank * sizeof *sx->dims) == 0)
        return true;
    char shape_x[128], shape_y[128];
    tp_shape_format(sx, shape_x, sizeof shape_x);
    tp_shape_format(sy, shape_y, sizeof shape_y);
    tp_plugin_status_set(status, TP_INVALID_ARGUMENT,
                         "%s:%d, %s%s, cannot be read in place of %s:%d, %s%s: a pass may only "
                         "rewire to a value of the same dtype and shape",
                         y->name, (int)b.output, tp_dtype_name(y->output_dtypes[b.output]),
                         shape_y, x->name, (int)a.output,
                         tp_dtype_name(x->output_dtypes[a.output]), shape_x);
    return false;
}

static int32_t graph_num_nodes(const tp_plugin_graph_t *graph) {
    return graph == NULL ? 0 : graph->graph->num_nodes;
}

static const char *graph_node_op(const tp_plugin_graph_t *graph, int32_t node,
                                 tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    return found != NULL && found->kind == TP_NODE_OP ? found->op.def->name : NULL;
}

static const char *graph_node_name(const tp_plugin_graph_t *graph, int32_t node,
                                   tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    return found != NULL ? found->name : NULL;
}

static void graph_node_device(const tp_plugin_graph_t *graph, int32_t node, const char **out_type,
                              int32_t *out_ordinal, tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    const tp_device_t *device = found == NULL ? NULL : tp_graph_node_value_device(found);
    if (out_type != NULL) *out_type = device != NULL ? device->def->type : NULL;
    if (out_ordinal != NULL) *out_ordinal = device != NULL ? device->ordinal : -1;
}

static int32_t graph_node_num_inputs(const tp_plugin_graph_t *graph, int32_t node,
                                     tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    return found != NULL ? found->num_inputs : 0;
}

static int32_t graph_node_num_outputs(const tp_plugin_graph_t *graph, int32_t node,
                                      tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    return found != NULL ? found->num_outputs : 0;
}

static void graph_node_input(const tp_plugin_graph_t *graph, int32_t node, int32_t index,
                             int32_t *out_node, int32_t *out_output, tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    if (found != NULL && (index < 0 || index >= found->num_inputs)) {
        tp_plugin_status_set(status, TP_OUT_OF_RANGE, "%s has no input %d",
                             found->name, (int)index);
        found = NULL;
    }
    if (out_node != NULL) *out_node = found != NULL ? found->inputs[index].node : -1;
    if (out_output != NULL) *out_output = found != NULL ? found->inputs[index].output : -1;
}

static int32_t graph_node_num_uses(const tp_plugin_graph_t *graph, int32_t node,
                                   tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    return found != NULL ? found->consumers : 0;
}

static void graph_node_attr(const tp_plugin_graph_t *graph, int32_t node, const char *name,
                            tp_plugin_attr_t *out, tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    if (found == NULL) return;
    if (out == NULL || out->struct_size < sizeof *out) {
        tp_plugin_status_set(status, TP_INVALID_ARGUMENT,
                             "graph_node_attr: set the out attribute's struct_size");
        return;
    }
    int index = found->kind == TP_NODE_OP && name != NULL
                    ? tp_op_attr_index(found->op.def, name) : -1;
    if (index < 0) {
        tp_plugin_status_set(status, TP_NOT_FOUND, "%s has no attribute '%s'", found->name,
                             name != NULL ? name : "(NULL)");
        return;
    }
    const tp_attr_t *attr = &found->attrs[index];
    *out = (tp_plugin_attr_t){sizeof *out, attr->name, attr->type, attr->i, attr->f,
                              attr->list, attr->count, attr->s};
}

/* The call a new node makes: resolved against stand-ins that carry the inputs' dtypes, shapes
 * and sizes, with `attrs`, and its shapes inferred. */
static bool resolve_new_node(tp_plugin_graph_t *graph, const tp_op_t *op,
                             const tp_graph_edge_t *edges, int32_t count, const tp_attr_t *attrs,
                             int32_t num_attrs, tp_kernel_context_t *call,
                             tp_plugin_status_t *status) {
    tp_tensor_t stand_ins[MAX_ADDED_INPUTS];
    tp_tensor_t *inputs[MAX_ADDED_INPUTS];
    tp_status_t *error = NULL;
    for (int32_t i = 0; i < count && error == NULL; i++) {
        const tp_graph_node_t *from = &graph->graph->nodes[edges[i].node];
        stand_ins[i] = (tp_tensor_t){.dtype = from->output_dtypes[edges[i].output],
                                     .shape = from->output_shapes[edges[i].output]};
        error = tp_tensor_check_layout(stand_ins[i].dtype, &stand_ins[i].shape,
                                       &stand_ins[i].num_elements, &stand_ins[i].byte_size);
        inputs[i] = &stand_ins[i];
    }
    if (error == NULL)
        error = tp_kernel_context_resolve(call, op, inputs, (size_t)count, attrs,
                                          (size_t)num_attrs, op->def->num_outputs);
    if (error == NULL) error = tp_kernel_context_infer_shapes(call);
    call->inputs = NULL;
    if (error == NULL) return true;
    tp_plugin_status_set(status, tp_status_code(error), "adding %s: %s",
                         op->def->name, tp_status_message(error));
    tp_status_free(error);
    return false;
}

/* The pass's attributes as the application API's, checked for struct_size. */
static bool copy_attrs(const tp_plugin_attr_t *from, int32_t count, tp_attr_t *to,
                       tp_plugin_status_t *status) {
    for (int32_t a = 0; a < count; a++) {
        if (from[a].struct_size < sizeof(tp_plugin_attr_t) || from[a].name == NULL) {
            tp_plugin_status_set(status, TP_INVALID_ARGUMENT,
                                 "attribute %d: set its struct_size and name", (int)a);
            return false;
        }
        to[a] = (tp_attr_t){from[a].name, from[a].type,  from[a].i, from[a].f,
                            from[a].list, from[a].count, from[a].s};
    }
    return true;
}

static int32_t graph_add_node(tp_plugin_graph_t *graph, const char *op_name,
                              const int32_t *input_nodes, const int32_t *input_outputs,
                              int32_t num_inputs, const tp_plugin_attr_t *plugin_attrs,
                              int32_t num_attrs, int32_t place_like,
                              tp_plugin_status_t *status) {
    const tp_graph_node_t *like = live_node(graph, place_like, status);
    if (like == NULL) return -1;
    tp_op_t op;
    if (op_name == NULL || !tp_kernel_registry_find_op(&graph->context->registry, op_name, &op)) {
        tp_plugin_status_set(status, TP_NOT_FOUND, "unknown op '%s'",
                             op_name != NULL ? op_name : "(NULL)");
        return -1;
    }
    if (like->kind != TP_NODE_OP || num_inputs < 0 || num_inputs > MAX_ADDED_INPUTS ||
        (num_inputs > 0 && (input_nodes == NULL || input_outputs == NULL)) ||
        num_attrs < 0 || num_attrs > TP_MAX_OP_ATTRS || (num_attrs > 0 && plugin_attrs == NULL)) {
        tp_plugin_status_set(status, TP_INVALID_ARGUMENT,
                             "adding %s: place_like must be an op node, the inputs 0 to %d "
                             "(node, output) pairs and the attributes 0 to %d",
                             op_name, MAX_ADDED_INPUTS, TP_MAX_OP_ATTRS);
        return -1;
    }
    tp_attr_t attrs[TP_MAX_OP_ATTRS];
    if (!copy_attrs(plugin_attrs, num_attrs, attrs, status)) return -1;
    tp_graph_edge_t edges[MAX_ADDED_INPUTS];
    for (int32_t i = 0; i < num_inputs; i++) {
        if (live_output(graph, input_nodes[i], input_outputs[i], status) == NULL) return -1;
        edges[i] = (tp_graph_edge_t){input_nodes[i], input_outputs[i]};
    }
    tp_kernel_context_t call;
    if (!resolve_new_node(graph, &op, edges, num_inputs, attrs, num_attrs, &call, status))
        return -1;
    call.device = like->device;
    const tp_kernel_def_t *kernel =
        tp_kernel_registry_find(&graph->context->registry, &call, like->device->def);
    if (kernel == NULL) {
        tp_plugin_status_set(status, TP_NOT_FOUND, "no kernel for %s on %s",
                             op_name, like->device->full_name);
        return -1;
    }
    tp_device_t *device = like->device;
    int32_t index = -1;
    tp_status_t *error = tp_graph_add_node(graph->graph, TP_NODE_OP, op_name, &index);
    if (error == NULL) error = tp_graph_set_op(graph->graph, index, &call, edges, num_inputs);
    if (error != NULL) {
        /* Out of host memory: the node, if it was added, reads nothing and is dropped. */
        if (index >= 0) graph->graph->nodes[index].removed = true;
        tp_plugin_status_set(status, tp_status_code(error), "adding %s: %s",
                             op_name, tp_status_message(error));
        tp_status_free(error);
        return -1;
    }
    graph->graph->nodes[index].device = device;
    graph->graph->nodes[index].kernel = kernel;
    return index;
}

static void graph_set_input(tp_plugin_graph_t *graph, int32_t node, int32_t index,
                            int32_t from_node, int32_t from_output, tp_plugin_status_t *status) {
    tp_graph_node_t *reader = live_node(graph, node, status);
    if (reader == NULL || live_output(graph, from_node, from_output, status) == NULL) return;
    if (index < 0 || index >= reader->num_inputs) {
        tp_plugin_status_set(status, TP_OUT_OF_RANGE, "%s has no input %d",
                             reader->name, (int)index);
        return;
    }
    tp_graph_edge_t to = {from_node, from_output};
    if (same_value_type(graph, reader->inputs[index], to, status))
        tp_graph_set_input(graph->graph, node, index, to);
}

static void graph_replace_uses(tp_plugin_graph_t *graph, int32_t node, int32_t output,
                               int32_t to_node, int32_t to_output, tp_plugin_status_t *status) {
    if (live_output(graph, node, output, status) == NULL ||
        live_output(graph, to_node, to_output, status) == NULL)
        return;
    tp_graph_edge_t from = {node, output}, to = {to_node, to_output};
    if (!same_value_type(graph, from, to, status)) return;
    tp_graph_t *g = graph->graph;
    for (int32_t n = 0; n < g->num_nodes; n++) {
        if (g->nodes[n].removed || n == to_node) continue;
        for (int32_t i = 0; i < g->nodes[n].num_inputs; i++)
            if (g->nodes[n].inputs[i].node == node && g->nodes[n].inputs[i].output == output)
                tp_graph_set_input(g, n, i, to);
    }
    for (int32_t i = 0; i < g->num_outputs; i++)
        if (g->outputs[i].node == node && g->outputs[i].output == output)
            tp_graph_set_output(g, i, to);
}

static void graph_remove_node(tp_plugin_graph_t *graph, int32_t node, tp_plugin_status_t *status) {
    const tp_graph_node_t *found = live_node(graph, node, status);
    if (found == NULL) return;
    if (found->kind == TP_NODE_ARGUMENT || found->consumers > 0) {
        tp_plugin_status_set(status, TP_FAILED_PRECONDITION,
                             "%s cannot be removed: %s", found->name,
                             found->kind == TP_NODE_ARGUMENT ? "it is a function argument"
                                                             : "it is still read");
        return;
    }
    tp_graph_remove_node(graph->graph, node);
}

void tp_plugin_graph_fill_host_api(tp_host_api_t *api) {
    api->graph_num_nodes = graph_num_nodes;
    api->graph_node_op = graph_node_op;
    api->graph_node_name = graph_node_name;
    api->graph_node_device = graph_node_device;
    api->graph_node_num_inputs = graph_node_num_inputs;
    api->graph_node_num_outputs = graph_node_num_outputs;
    api->graph_node_input = graph_node_input;
    api->graph_node_num_uses = graph_node_num_uses;
    api->graph_node_attr = graph_node_attr;
    api->graph_add_node = graph_add_node;
    api->graph_set_input = graph_set_input;
    api->graph_replace_uses = graph_replace_uses;
    api->graph_remove_node = graph_remove_node;
}

tp_status_t *tp_pass_run_plugin(tp_context_t *context, const tp_plugin_record_t *plugin,
                                tp_graph_t *graph) {
    const tp_graph_pass_def_t *pass = &plugin->graph_pass;
    tp_plugin_graph_t view = {context, graph};
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    pass->run(pass->pass_state, &view, &status);
    TP_RETURN_IF_ERROR(tp_plugin_status_check(&status, "graph pass '%s' of plug-in '%s'",
                                              pass->name, plugin->name));
    return tp_status_annotate(tp_graph_compact(graph),
                              "after graph pass '%s' of plug-in '%s'", pass->name, plugin->name);
}
