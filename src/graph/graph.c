/* SPDX-License-Identifier: Apache-2.0 */
#include "graph/graph.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "tensor/tensor.h"

tp_status_t *tp_graph_init(tp_graph_t *graph, const char *name) {
    *graph = (tp_graph_t){.arena = TP_ARENA_INIT};
    graph->name = tp_arena_strdup(&graph->arena, name);
    if (graph->name == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    return NULL;
}

void tp_graph_free(tp_graph_t *graph) {
    for (int32_t i = 0; i < graph->num_nodes; i++) tp_tensor_release(graph->nodes[i].captured);
    free(graph->nodes);
    tp_arena_free(&graph->arena);
    *graph = (tp_graph_t){.arena = TP_ARENA_INIT};
}

/* How many nodes were named from one base so far. */
typedef struct tp_graph_name_count {
    struct tp_graph_name_count *next;
    const char *base;
    int count;
} name_count_t;

/* "Relu" -> "relu", then "relu_1", "relu_2": TensorFlow's node names. Bases are op names,
 * "argument_<i>" and "captured": no op is named like another base with a suffix, so the names
 * cannot collide. */
static const char *unique_name(tp_graph_t *graph, const char *base) {
    char lower[64];
    size_t length = 0;
    for (; base[length] != '\0' && length + 1 < sizeof lower; length++)
        lower[length] = (char)tolower((unsigned char)base[length]);
    lower[length] = '\0';
    name_count_t *seen = graph->name_counts;
    while (seen != NULL && strcmp(seen->base, lower) != 0) seen = seen->next;
    if (seen == NULL) {
        seen = tp_arena_alloc(&graph->arena, sizeof *seen);
        if (seen == NULL || (seen->base = tp_arena_strdup(&graph->arena, lower)) == NULL)
            return NULL;
        seen->next = graph->name_counts;
        graph->name_counts = seen;
    }
    char name[80];
    if (seen->count == 0)
        snprintf(name, sizeof name, "%s", lower);
    else
        snprintf(name, sizeof name, "%s_%d", lower, seen->count);
    seen->count++;
    return tp_arena_strdup(&graph->arena, name);
}

tp_status_t *tp_graph_add_node(tp_graph_t *graph, tp_node_kind_t kind, const char *base,
                               int32_t *out_index) {
    if (graph->num_nodes == graph->capacity) {
        int32_t capacity = graph->capacity == 0 ? 16 : graph->capacity * 2;
        tp_graph_node_t *grown = realloc(graph->nodes, (size_t)capacity * sizeof *grown);
        if (grown == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
        graph->nodes = grown;
        graph->capacity = capacity;
    }
    const char *name = unique_name(graph, base);
    if (name == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    graph->nodes[graph->num_nodes] = (tp_graph_node_t){.kind = kind, .name = name};
    *out_index = graph->num_nodes++;
    return NULL;
}

/* A copy of one attribute value whose pointers lead into the arena. */
static bool copy_attr(tp_arena_t *arena, const tp_attr_t *from, tp_attr_t *to) {
    *to = *from;
    to->name = tp_arena_strdup(arena, from->name);
    if (to->name == NULL) return false;
    if (from->list != NULL) {
        to->list = tp_arena_memdup(arena, from->list, (size_t)from->count * sizeof *from->list);
        if (to->list == NULL && from->count > 0) return false;
    }
    if (from->s != NULL) {
        size_t size = from->type == TP_ATTR_BYTES ? (size_t)from->count : strlen(from->s) + 1;
        to->s = tp_arena_memdup(arena, from->s, size);
        if (to->s == NULL && size > 0) return false;
    }
    return true;
}

tp_status_t *tp_graph_set_op(tp_graph_t *graph, int32_t index, const tp_kernel_context_t *call,
                             const tp_graph_edge_t *inputs, int32_t num_inputs) {
    tp_graph_node_t *node = &graph->nodes[index];
    node->op = *call->op;
    for (size_t a = 0; a < call->op->def->num_attrs; a++)
        if (!copy_attr(&graph->arena, &call->attrs[a], &node->attrs[a]))
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    if (num_inputs > 0) {
        node->inputs = tp_arena_memdup(&graph->arena, inputs, (size_t)num_inputs * sizeof *inputs);
        if (node->inputs == NULL)
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    }
    node->num_inputs = num_inputs;
    for (int32_t i = 0; i < num_inputs; i++) graph->nodes[inputs[i].node].consumers++;
    node->num_outputs = call->num_outputs;
    for (int32_t o = 0; o < call->num_outputs; o++) {
        node->output_dtypes[o] = call->output_dtypes[o];
        node->output_shapes[o] = call->output_shapes[o];
    }
    return NULL;
}

tp_status_t *tp_graph_set_outputs(tp_graph_t *graph, const tp_graph_edge_t *outputs,
                                  int32_t count) {
    graph->outputs = tp_arena_memdup(&graph->arena, outputs, (size_t)count * sizeof *outputs);
    if (graph->outputs == NULL && count > 0)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    graph->num_outputs = count;
    for (int32_t i = 0; i < count; i++) graph->nodes[outputs[i].node].consumers++;
    return NULL;
}

tp_device_t *tp_graph_node_value_device(const tp_graph_node_t *node) {
    if (node->kind == TP_NODE_CAPTURE) return node->captured->device;
    return node->kind == TP_NODE_ARGUMENT ? NULL : node->device;
}

/* ---- Text ------------------------------------------------------------------------------------ */

static void write_attr(const tp_attr_t *attr, FILE *out) {
    fprintf(out, " %s=", attr->name);
    switch (attr->type) {
    case TP_ATTR_INT:
        fprintf(out, "%lld", (long long)attr->i);
        break;
    case TP_ATTR_FLOAT:
        fprintf(out, "%g", attr->f);
        break;
    case TP_ATTR_BOOL:
        fprintf(out, "%s", attr->i ? "true" : "false");
        break;
    case TP_ATTR_DTYPE:
        fprintf(out, "%s", tp_dtype_name((tp_dtype_t)attr->i));
        break;
    case TP_ATTR_SHAPE:
    case TP_ATTR_INT_LIST:
        fputc('[', out);
        for (int32_t i = 0; i < attr->count; i++)
            fprintf(out, i == 0 ? "%lld" : ",%lld", (long long)attr->list[i]);
        fputc(']', out);
        break;
    case TP_ATTR_STRING:
        fprintf(out, "\"%s\"", attr->s != NULL ? attr->s : "");
        break;
    case TP_ATTR_BYTES:
        fprintf(out, "<%d bytes>", (int)attr->count);
        break;
    }
}

static const char *device_of(const tp_graph_node_t *node) {
    if (node->device != NULL) return node->device->full_name;
    if (node->captured != NULL) return tp_tensor_device(node->captured);
    return node->kind == TP_NODE_ARGUMENT ? "(the argument's)" : "(unplaced)";
}

tp_status_t *tp_graph_write_text(const tp_graph_t *graph, FILE *out) {
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        const tp_graph_node_t *node = &graph->nodes[n];
        fprintf(out, "%s = ", node->name);
        if (node->kind == TP_NODE_ARGUMENT) fprintf(out, "Argument(%d)", (int)node->argument);
        if (node->kind == TP_NODE_CAPTURE && node->folded_from == NULL) fprintf(out, "Captured()");
        if (node->kind == TP_NODE_CAPTURE && node->folded_from != NULL)
            fprintf(out, "Constant(folded %s)", node->folded_from);
        if (node->kind == TP_NODE_OP || node->kind == TP_NODE_COPY) {
            fprintf(out, "%s(", node->kind == TP_NODE_OP ? node->op.def->name : "Copy");
            for (int32_t i = 0; i < node->num_inputs; i++)
                fprintf(out, "%s%s:%d", i == 0 ? "" : ", ", graph->nodes[node->inputs[i].node].name,
                        (int)node->inputs[i].output);
            fputc(')', out);
            for (size_t a = 0; node->kind == TP_NODE_OP && a < node->op.def->num_attrs; a++)
                write_attr(&node->attrs[a], out);
        }
        fprintf(out, " ->");
        for (int32_t o = 0; o < node->num_outputs; o++) {
            char shape[128];
            tp_shape_format(&node->output_shapes[o], shape, sizeof shape);
            fprintf(out, " %s%s", tp_dtype_name(node->output_dtypes[o]), shape);
        }
        fprintf(out, " on %s\n", device_of(node));
    }
    fprintf(out, "return");
    for (int32_t i = 0; i < graph->num_outputs; i++)
        fprintf(out, "%s %s:%d", i == 0 ? "" : ",", graph->nodes[graph->outputs[i].node].name,
                (int)graph->outputs[i].output);
    return fprintf(out, "\n") < 0 ? tp_status_make(TP_UNAVAILABLE, "writing the graph failed")
                                  : NULL;
}

/* ---- DOT ----------------------------------------------------------------------------------- */

/* A fill colour per device type and ordinal, stable from run to run. */
static const char *colour_of(const tp_graph_node_t *node) {
    static const char *const palette[] = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6",
                                          "#fb9a99", "#ffff99", "#1f78b4", "#33a02c"};
    if (node->device == NULL) return "#eeeeee";
    unsigned hash = 5381;
    for (const char *c = node->device->full_name; *c != '\0'; c++)
        hash = hash * 33 + (unsigned char)*c;
    return palette[hash % (sizeof palette / sizeof palette[0])];
}

tp_status_t *tp_graph_write_dot(const tp_graph_t *graph, FILE *out) {
    fprintf(out, "digraph \"%s\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n",
            graph->name);
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        const tp_graph_node_t *node = &graph->nodes[n];
        if (node->kind == TP_NODE_OP || node->kind == TP_NODE_COPY)
            fprintf(out,
                    "  \"%s\" [shape=%s, style=filled, fillcolor=\"%s\", "
                    "label=\"%s\\n%s\\n%s\"];\n",
                    node->name, node->kind == TP_NODE_OP ? "box" : "cds", colour_of(node),
                    node->name, node->kind == TP_NODE_OP ? node->op.def->name : "Copy",
                    device_of(node));
        else
            fprintf(out, "  \"%s\" [shape=ellipse, label=\"%s\\n%s\"];\n", node->name,
                    node->name,
                    node->kind == TP_NODE_ARGUMENT ? "argument"
                    : node->folded_from != NULL    ? "constant (folded)"
                                                   : "captured");
        for (int32_t i = 0; i < node->num_inputs; i++) {
            const tp_graph_node_t *from = &graph->nodes[node->inputs[i].node];
            char shape[128];
            tp_shape_format(&from->output_shapes[node->inputs[i].output], shape, sizeof shape);
            fprintf(out, "  \"%s\" -> \"%s\" [label=\"%s%s\"];\n", from->name, node->name,
                    tp_dtype_name(from->output_dtypes[node->inputs[i].output]), shape);
        }
    }
    for (int32_t i = 0; i < graph->num_outputs; i++)
        fprintf(out, "  \"%s\" -> \"output %d\";\n  \"output %d\" [shape=plaintext];\n",
                graph->nodes[graph->outputs[i].node].name, (int)i, (int)i);
    return fprintf(out, "}\n") < 0 ? tp_status_make(TP_UNAVAILABLE, "writing the graph failed")
                                   : NULL;
}
