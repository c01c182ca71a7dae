/* SPDX-License-Identifier: Apache-2.0 */
/* The graph IR: what a traced function computes, as nodes in an order where every node comes
 * after its inputs. A node is a function argument, a tensor the function captured from outside,
 * or an op with its resolved attributes, the device it asked for and the device it was given.
 * Passes edit a graph in place: they mark nodes removed and rewire edges, and
 * tp_graph_compact (graph/graph_edit.h) drops what they removed.
 * Edges name (node, output). Everything a graph points to lives in its arena. */
#ifndef TP_GRAPH_GRAPH_H
#define TP_GRAPH_GRAPH_H

#include <stdbool.h>
#include <stdio.h>

#include "base/arena.h"
#include "launch/device_scope.h"
#include "kernel/kernel_context.h"

/* A copy node moves one value to another device; partitioning puts one on each edge between
 * two devices (see graph/partition.h). */
typedef enum { TP_NODE_ARGUMENT, TP_NODE_CAPTURE, TP_NODE_OP, TP_NODE_COPY } tp_node_kind_t;

typedef struct tp_graph_edge {
    int32_t node;
    int32_t output;
} tp_graph_edge_t;

typedef struct tp_graph_node {
    tp_node_kind_t kind;
    const char *name; /* "relu", "relu_1", "x_0" */
    /* TP_NODE_OP */
    tp_op_t op;
    tp_attr_t attrs[TP_MAX_OP_ATTRS]; /* resolved: in op.def's order, all set */
    tp_graph_edge_t *inputs;
    int32_t num_inputs;
    bool has_scope;
    tp_device_scope_t scope; /* the device scope the op was traced in */
    tp_device_t *device;     /* assigned by placement */
    const tp_kernel_def_t *kernel;
    /* TP_NODE_ARGUMENT: which argument; TP_NODE_CAPTURE: the tensor, retained */
    int32_t argument;
    tp_tensor_t *captured;
    const char *folded_from; /* a capture made by constant folding: the op it replaced */
    /* Every kind */
    int32_t num_outputs;
    tp_dtype_t output_dtypes[TP_MAX_OP_OUTPUTS];
    tp_shape_t output_shapes[TP_MAX_OP_OUTPUTS];
    int32_t consumers; /* input edges and function outputs that read this node */
    bool removed;      /* by a pass, until tp_graph_compact */
} tp_graph_node_t;

typedef struct tp_graph {
    tp_arena_t arena;
    const char *name;
    tp_graph_node_t *nodes;
    int32_t num_nodes, capacity;
    tp_graph_edge_t *outputs;
    int32_t num_outputs;
    struct tp_graph_name_count *name_counts; /* for unique node names */
} tp_graph_t;

tp_status_t *tp_graph_init(tp_graph_t *graph, const char *name);
/* Releases captured tensors and everything in the arena. */
void tp_graph_free(tp_graph_t *graph);

/* Appends a node; its name is made unique from `base` ("relu", then "relu_1"). `*out_index`
 * is its index. The caller fills the kind's fields. */
tp_status_t *tp_graph_add_node(tp_graph_t *graph, tp_node_kind_t kind, const char *base,
                               int32_t *out_index);
/* Copies an op call's resolved attributes and inputs into node `index`. */
tp_status_t *tp_graph_set_op(tp_graph_t *graph, int32_t index, const tp_kernel_context_t *call,
                             const tp_graph_edge_t *inputs, int32_t num_inputs);
tp_status_t *tp_graph_set_outputs(tp_graph_t *graph, const tp_graph_edge_t *outputs,
                                  int32_t count);

/* The device whose memory holds `node`'s values: NULL for an argument, whose device is known
 * only at the call. */
tp_device_t *tp_graph_node_value_device(const tp_graph_node_t *node);

/* One line per node: "relu_1 = Relu(relu:0) T=float32 -> float32(5,) on /job:.../APU:0". */
tp_status_t *tp_graph_write_text(const tp_graph_t *graph, FILE *out);
/* Graphviz DOT: ops as boxes filled by device, arguments and captures as ellipses. */
tp_status_t *tp_graph_write_dot(const tp_graph_t *graph, FILE *out);

#endif
