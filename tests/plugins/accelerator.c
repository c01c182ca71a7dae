/* SPDX-License-Identifier: Apache-2.0 */
/* A device with kernels, for placement tests: two ACC devices (priority 100) whose memory is
 * host memory, with a Relu kernel for float32 only. Its stream defers errors as an
 * asynchronous device does: a Relu that meets a NaN records the failure on the stream, and the
 * next synchronize reports it. Its graph pass does what TP_TEST_ACC_PASS says, read at each
 * run, so that tests can drive every graph host function (see run_pass). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simple_device.h"

static const tp_host_api_t *host;

/* One pending error per process is enough for the tests, which use one stream at a time. */
static char pending_error[256];

static void synchronize_reporting(void *device, void *stream, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    if (pending_error[0] != '\0') {
        host->status_set(status, TP_INTERNAL, "%s", pending_error);
        pending_error[0] = '\0';
    }
}

static void relu(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
    host->kernel_input(context, 0, &x, status);
    host->kernel_output(context, 0, &y, status);
    if (host->status_code(status) != TP_OK || x.num_elements == 0) return; /* no memory */
    const float *in = (const float *)((char *)x.mem + x.offset);
    float *out = (float *)((char *)y.mem + y.offset);
    for (int64_t i = 0; i < x.num_elements; i++) {
        if (isnan(in[i]))
            snprintf(pending_error, sizeof pending_error,
                     "%s on ACC met a NaN at element %lld", host->kernel_op_name(context),
                     (long long)i);
        out[i] = in[i] > 0 ? in[i] : 0;
    }
}

/* ---- The graph pass ------------------------------------------------------------------------- */

static bool failed(tp_plugin_status_t *status) { return host->status_code(status) != TP_OK; }

static bool is_acc_relu(tp_plugin_graph_t *graph, int32_t node, tp_plugin_status_t *status) {
    const char *op = host->graph_node_op(graph, node, status), *type = NULL;
    if (op == NULL || strcmp(op, "Relu") != 0) return false;
    host->graph_node_device(graph, node, &type, NULL, status);
    return type != NULL && strcmp(type, "ACC") == 0;
}

/* The first ACC Relu that reads another, and what the inner one reads; false if none. */
static bool find_relu_pair(tp_plugin_graph_t *graph, int32_t *outer, int32_t *inner,
                           int32_t *source, tp_plugin_status_t *status) {
    for (int32_t n = 0; n < host->graph_num_nodes(graph) && !failed(status); n++) {
        int32_t output;
        if (!is_acc_relu(graph, n, status)) continue;
        host->graph_node_input(graph, n, 0, inner, &output, status);
        if (!is_acc_relu(graph, *inner, status)) continue;
        *outer = n;
        host->graph_node_input(graph, *inner, 0, source, &output, status);
        return !failed(status);
    }
    return false;
}

/* "rebuild": every ACC Relu is replaced by a new one of the same type attribute (attr, add,
 * replace_uses, remove).
 * "rewire": in Relu(Relu(x)), the outer reads x and the inner goes (set_input, remove).
 * "fail", "cycle", "mismatch", "bad_attr", "remove_read": a pass that goes wrong so. */
static void run_pass(void *state, tp_plugin_graph_t *graph, tp_plugin_status_t *status) {
    (void)state;
    const char *mode = getenv("TP_TEST_ACC_PASS");
    if (mode == NULL) return;
    int32_t outer, inner, source;
    if (strcmp(mode, "rebuild") == 0) {
        int32_t original = host->graph_num_nodes(graph);
        for (int32_t n = 0; n < original && !failed(status); n++) {
            if (!is_acc_relu(graph, n, status)) continue;
            int32_t input, output;
            host->graph_node_input(graph, n, 0, &input, &output, status);
            tp_plugin_attr_t type = {.struct_size = sizeof type};
            host->graph_node_attr(graph, n, "T", &type, status);
            if (failed(status)) return;
            int32_t added =
                host->graph_add_node(graph, "Relu", &input, &output, 1, &type, 1, n, status);
            if (failed(status)) return;
            host->graph_replace_uses(graph, n, 0, added, 0, status);
            host->graph_remove_node(graph, n, status);
        }
    } else if (strcmp(mode, "rewire") == 0) {
        if (!find_relu_pair(graph, &outer, &inner, &source, status)) return;
        host->graph_set_input(graph, outer, 0, source, 0, status);
        if (host->graph_node_num_uses(graph, inner, status) == 0)
            host->graph_remove_node(graph, inner, status);
    } else if (strcmp(mode, "fail") == 0) {
        host->status_set(status, TP_INTERNAL, "the test pass was told to fail");
    } else if (strcmp(mode, "cycle") == 0) {
        if (find_relu_pair(graph, &outer, &inner, &source, status))
            host->graph_set_input(graph, inner, 0, outer, 0, status);
    } else if (strcmp(mode, "mismatch") == 0) {
        /* Node 0 is the first argument, which the test makes of another shape. */
        if (find_relu_pair(graph, &outer, &inner, &source, status))
            host->graph_set_input(graph, outer, 0, 0, 0, status);
    } else if (strcmp(mode, "bad_attr") == 0) {
        tp_plugin_attr_t attr = {.struct_size = sizeof attr};
        if (find_relu_pair(graph, &outer, &inner, &source, status))
            host->graph_node_attr(graph, inner, "alpha", &attr, status);
    } else if (strcmp(mode, "remove_read") == 0) {
        if (find_relu_pair(graph, &outer, &inner, &source, status))
            host->graph_remove_node(graph, inner, status);
    }
}

static void init(const tp_host_api_t *host_api, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    host = host_api;
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, "ACC", 2, host);
    def.priority = 100;
    def.stream_synchronize = synchronize_reporting;
    host->register_device_type(registrar, &def, status);
    static const tp_dtype_t float32_only[] = {TP_FLOAT32};
    tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    tp_kernel_def_t kernel = {.struct_size = sizeof kernel, .op = "Relu", .device_type = "ACC",
                              .constraints = &constraint, .num_constraints = 1,
                              .compute = relu};
    host->register_kernel(registrar, &kernel, status);
    /* The pass needs the graph functions of ABI 1.3. */
    if (host->struct_size < offsetof(tp_host_api_t, graph_remove_node) +
                                sizeof host->graph_remove_node)
        return;
    tp_graph_pass_def_t pass = {.struct_size = sizeof pass, .name = "acc_test_pass",
                                .device_type = "ACC", .run = run_pass};
    host->register_graph_pass(registrar, &pass, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "accelerator", "1.0.0", init};
    return &descriptor;
}
