/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL plug-in's graph pass: a chain of element-wise ops on one GPU becomes one
 * OpenCLFusedElementwise node (opencl_fusion.c), which reads each tensor the chain reads once
 * and writes only its result, instead of one pass over memory per op.
 *
 * Walking the graph from its last node back, an element-wise op starts a chain, and takes in
 * each op it reads that sits on the same GPU, has the same dtype and is read by nothing else:
 * those values then live only inside the fused kernel. What the chain reads from elsewhere
 * becomes an input of the fused node. Chains of one op are left as they are. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opencl_device.h"

static tp_registrar_t *fusion_registrar;

typedef struct chain {
    const char *device_type;
    int32_t ordinal;
    tp_dtype_t dtype;
    int32_t input_nodes[OPENCL_FUSED_MAX_INPUTS], input_outputs[OPENCL_FUSED_MAX_INPUTS];
    int32_t num_inputs, num_ops;
    int32_t ops[OPENCL_FUSED_MAX_OPS]; /* the nodes taken into the chain */
    bool too_many_inputs;
    char expression[1024];
    size_t length;
} chain_t;

/* The number of inputs of `node` if it is an element-wise op the fused kernel computes, on a
 * GPU, in a dtype it fuses; else 0. Every such op has its dtype in attribute "T". */
static int fusible(tp_plugin_graph_t *graph, int32_t node, const char **out_type,
                   int32_t *out_ordinal, tp_dtype_t *out_dtype, tp_plugin_status_t *status) {
    const char *op = opencl_host->graph_node_op(graph, node, status);
    if (op == NULL || opencl_fusible_arity(op, TP_FLOAT32) == 0 ||
        opencl_host->graph_node_num_outputs(graph, node, status) != 1)
        return 0;
    opencl_host->graph_node_device(graph, node, out_type, out_ordinal, status);
    if (*out_type == NULL || strcasecmp(*out_type, "GPU") != 0) return 0;
    tp_plugin_attr_t attr = {.struct_size = sizeof attr};
    opencl_host->graph_node_attr(graph, node, "T", &attr, status);
    if (opencl_host->status_code(status) != TP_OK || attr.type != TP_ATTR_DTYPE) return 0;
    *out_dtype = (tp_dtype_t)attr.i;
    return opencl_fusible_arity(op, *out_dtype);
}

static void write(chain_t *chain, const char *text) {
    size_t length = strlen(text);
    if (chain->length + length < sizeof chain->expression) {
        memcpy(chain->expression + chain->length, text, length + 1);
        chain->length += length;
    } else {
        chain->length = sizeof chain->expression; /* too long: the chain is dropped */
    }
}

/* Writes (node, output) into the chain's expression as an input "x<k>". */
static void write_input(chain_t *chain, int32_t node, int32_t output) {
    int32_t k = 0;
    while (k < chain->num_inputs &&
           (chain->input_nodes[k] != node || chain->input_outputs[k] != output))
        k++;
    if (k == OPENCL_FUSED_MAX_INPUTS) {
        chain->too_many_inputs = true;
        return;
    }
    if (k == chain->num_inputs) {
        chain->input_nodes[k] = node;
        chain->input_outputs[k] = output;
        chain->num_inputs++;
    }
    char text[16];
    snprintf(text, sizeof text, "x%d", (int)k);
    write(chain, text);
}

/* Writes the value (node, output) that the chain reads: the op that computes it, taken into
 * the chain, or an input. `first` is the chain's last op, which may have any number of
 * readers. */
static void write_value(tp_plugin_graph_t *graph, chain_t *chain, int32_t node, int32_t output,
                        bool first, tp_plugin_status_t *status) {
    const char *type = NULL;
    int32_t ordinal = -1;
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    int arity = fusible(graph, node, &type, &ordinal, &dtype, status);
    bool take = arity > 0 && chain->num_ops < OPENCL_FUSED_MAX_OPS &&
                (first || (ordinal == chain->ordinal && dtype == chain->dtype &&
                           opencl_host->graph_node_num_uses(graph, node, status) == 1));
    if (!take) {
        write_input(chain, node, output);
        return;
    }
    chain->ops[chain->num_ops++] = node;
    write(chain, opencl_host->graph_node_op(graph, node, status));
    write(chain, "(");
    for (int32_t k = 0; k < arity && opencl_host->status_code(status) == TP_OK; k++) {
        int32_t from = -1, from_output = -1;
        opencl_host->graph_node_input(graph, node, k, &from, &from_output, status);
        if (k > 0) write(chain, ", ");
        write_value(graph, chain, from, from_output, false, status);
    }
    write(chain, ")");
}

/* Puts one fused node in place of the chain that ends at `last`. */
static void replace_chain(tp_plugin_graph_t *graph, int32_t last, const chain_t *chain,
                          tp_plugin_status_t *status) {
    const tp_plugin_attr_t attr = {.struct_size = sizeof attr,
                                   .name = "expression",
                                   .type = TP_ATTR_STRING,
                                   .s = chain->expression};
    int32_t fused = opencl_host->graph_add_node(graph, OPENCL_FUSED_OP, chain->input_nodes,
                                                chain->input_outputs, chain->num_inputs, &attr,
                                                1, last, status);
    if (fused < 0) return;
    opencl_host->graph_replace_uses(graph, last, 0, fused, 0, status);
    opencl_host->graph_remove_node(graph, last, status);
}

static void fuse_chains(void *state, tp_plugin_graph_t *graph, tp_plugin_status_t *status) {
    (void)state;
    int32_t count = opencl_host->graph_num_nodes(graph);
    bool *taken = calloc((size_t)count + 1, sizeof *taken);
    if (taken == NULL) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "out of host memory for %d nodes", (int)count);
        return;
    }
    int32_t chains = 0, ops = 0;
    for (int32_t last = count - 1; last >= 0 && opencl_host->status_code(status) == TP_OK;
         last--) {
        if (taken[last]) continue;
        chain_t chain = {.ordinal = -1};
        if (fusible(graph, last, &chain.device_type, &chain.ordinal, &chain.dtype, status) == 0)
            continue;
        write_value(graph, &chain, last, 0, true, status);
        bool whole = !chain.too_many_inputs && chain.length < sizeof chain.expression;
        if (whole && chain.num_ops > 1 && opencl_host->status_code(status) == TP_OK) {
            replace_chain(graph, last, &chain, status);
            for (int32_t k = 0; k < chain.num_ops; k++) taken[chain.ops[k]] = true;
            chains++;
            ops += chain.num_ops;
        }
    }
    free(taken);
    if (chains > 0)
        opencl_host->log(fusion_registrar, TP_LOG_DEBUG,
                         "graph pass: %d element-wise ops fused into %d kernels", (int)ops,
                         (int)chains);
}

void opencl_register_fusion_pass(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    /* Runtimes before ABI 1.3 cannot show a pass the graph: the ops then run one by one. */
    if (opencl_failed(status) ||
        opencl_host->struct_size <
            offsetof(tp_host_api_t, graph_remove_node) + sizeof opencl_host->graph_remove_node)
        return;
    fusion_registrar = registrar;
    const tp_graph_pass_def_t pass = {.struct_size = sizeof pass,
                                      .name = "opencl_elementwise_fusion",
                                      .device_type = "GPU",
                                      .run = fuse_chains};
    opencl_host->register_graph_pass(registrar, &pass, status);
}
