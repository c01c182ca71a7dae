/* SPDX-License-Identifier: Apache-2.0 */
/* The APU's graph pass. Relu is idempotent, so a Relu on an APU that reads a Relu on the same
 * APU gives what the inner one gives: its readers read the inner node instead and it is
 * removed, one kernel launch fewer per call. */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "apu_device.h"

static tp_registrar_t *apu_registrar;

/* Whether node `n` is a Relu on an APU; its ordinal in *out_ordinal. */
static int is_apu_relu(tp_plugin_graph_t *graph, int32_t n, int32_t *out_ordinal,
                       tp_plugin_status_t *status) {
    const char *op = apu_host->graph_node_op(graph, n, status);
    if (op == NULL || strcmp(op, "Relu") != 0) return 0;
    const char *type = NULL;
    apu_host->graph_node_device(graph, n, &type, out_ordinal, status);
    return type != NULL && strcasecmp(type, "APU") == 0;
}

static void collapse_relu_chains(void *state, tp_plugin_graph_t *graph,
                                 tp_plugin_status_t *status) {
    (void)state;
    int32_t collapsed = 0;
    for (int32_t n = 0; n < apu_host->graph_num_nodes(graph); n++) {
        int32_t ordinal, inner_ordinal, inner, output;
        if (!is_apu_relu(graph, n, &ordinal, status)) continue;
        apu_host->graph_node_input(graph, n, 0, &inner, &output, status);
        if (apu_host->status_code(status) != TP_OK) return;
        if (!is_apu_relu(graph, inner, &inner_ordinal, status) || inner_ordinal != ordinal)
            continue;
        apu_host->graph_replace_uses(graph, n, 0, inner, output, status);
        apu_host->graph_remove_node(graph, n, status);
        if (apu_host->status_code(status) != TP_OK) return;
        collapsed++;
    }
    if (collapsed > 0)
        apu_host->log(apu_registrar, TP_LOG_DEBUG, "graph pass: %d Relu(Relu(x)) made Relu(x)",
                      (int)collapsed);
}

void apu_register_graph_pass(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    /* Runtimes before ABI 1.3 cannot show a pass the graph: the APU then works without it. */
    if (apu_host->struct_size < offsetof(tp_host_api_t, graph_remove_node) +
                                    sizeof apu_host->graph_remove_node)
        return;
    apu_registrar = registrar;
    const tp_graph_pass_def_t pass = {.struct_size = sizeof pass,
                                      .name = "apu_relu_idempotence",
                                      .device_type = "APU",
                                      .run = collapse_relu_chains};
    apu_host->register_graph_pass(registrar, &pass, status);
}
