/* SPDX-License-Identifier: Apache-2.0 */
/* The order the passes run in (see graph/passes.h) and which of them run for a graph: the
 * context's choice, less what a plug-in with nodes in the graph switched off. */
#include <strings.h>

#include "base/status.h"
#include "graph/passes.h"

tp_status_t *tp_context_set_graph_passes(tp_context_t *context, uint32_t passes, bool enabled) {
    TP_REQUIRE_ARG(context);
    if ((passes & ~(uint32_t)TP_PASS_ALL) != 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_context_set_graph_passes: unknown pass bits 0x%x",
                              (unsigned)(passes & ~(uint32_t)TP_PASS_ALL));
    if (enabled) atomic_fetch_or(&context->graph_passes, passes);
    else atomic_fetch_and(&context->graph_passes, ~passes);
    return NULL;
}

uint32_t tp_context_graph_passes(tp_context_t *context) {
    return context == NULL ? 0 : atomic_load(&context->graph_passes);
}

/* Whether a node of `graph` was placed on a device of `type`. */
static bool has_node_on(const tp_graph_t *graph, const char *type) {
    for (int32_t n = 0; n < graph->num_nodes; n++)
        if (graph->nodes[n].device != NULL &&
            strcasecmp(graph->nodes[n].device->def->type, type) == 0)
            return true;
    return false;
}

/* The plug-ins in use with a pass for a device type the graph has nodes on, in load order. */
static size_t plugins_with_pass(const tp_context_t *context, const tp_graph_t *graph,
                                const tp_plugin_record_t **out, size_t capacity) {
    size_t count = 0;
    const tp_device_registry_t *registry = &context->registry;
    for (size_t p = 0; p < registry->num_plugins && count < capacity; p++) {
        const tp_plugin_record_t *record = registry->plugins[p].record;
        if (registry->plugins[p].refusal == NULL && record->has_graph_pass &&
            has_node_on(graph, record->graph_pass.device_type))
            out[count++] = record;
    }
    return count;
}

tp_status_t *tp_graph_optimize(tp_context_t *context, tp_graph_t *graph) {
    /* Which plug-ins switch standard passes off is decided on the graph as placed; whose pass
     * runs, on the graph the standard passes leave. */
    const tp_plugin_record_t *plugins[64];
    size_t num_plugins = plugins_with_pass(context, graph, plugins, 64);
    uint32_t passes = tp_context_graph_passes(context);
    for (size_t p = 0; p < num_plugins; p++)
        passes &= ~plugins[p]->graph_pass.disabled_standard_passes;
    if (passes & TP_PASS_PRUNING) TP_RETURN_IF_ERROR(tp_pass_prune(graph));
    if (passes & TP_PASS_COMMON_SUBEXPRESSION)
        TP_RETURN_IF_ERROR(tp_pass_eliminate_common_subexpressions(graph));
    if (passes & TP_PASS_CONSTANT_FOLDING)
        TP_RETURN_IF_ERROR(tp_pass_fold_constants(context, graph));
    if (passes & TP_PASS_IDENTITY_REMOVAL) TP_RETURN_IF_ERROR(tp_pass_remove_identities(graph));
    if (!(passes & TP_PASS_PLUGINS)) return NULL;
    num_plugins = plugins_with_pass(context, graph, plugins, 64);
    for (size_t p = 0; p < num_plugins; p++)
        TP_RETURN_IF_ERROR(tp_pass_run_plugin(context, plugins[p], graph));
    return NULL;
}
