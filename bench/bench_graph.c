/* SPDX-License-Identifier: Apache-2.0 */
/* Graph mode, each figure beside a baseline measured in the same run:
 * - a chain of 1000 cheap ops (Neg, then Relu, alternating) on a 1-element float32, run as a
 *   traced function against op by op;
 * - a body with the redundancy traced code tends to have, traced with the graph passes off
 *   and again with them on;
 * - two independent Relu chains on two APUs against the same chains on one APU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "op_chain.h"
#include "tensorplug/tensorplug.h"

enum { CHAIN = OP_CHAIN_LENGTH, REPEATS = 200 };

/* Seconds for one call, counting until every result is computed, not just queued. */
static double call_seconds(tp_function_t *function, tp_tensor_t *const *inputs, size_t count,
                           size_t num_outputs) {
    tp_tensor_t *outputs[2];
    double start = now_seconds();
    TP_CHECK(tp_function_call(function, inputs, count, outputs, num_outputs));
    for (size_t i = 0; i < num_outputs; i++) TP_CHECK(tp_tensor_wait(outputs[i]));
    double seconds = now_seconds() - start;
    for (size_t i = 0; i < num_outputs; i++) tp_tensor_release(outputs[i]);
    return seconds;
}

static double min_of(double a, double b) { return a < b ? a : b; }

/* ---- A chain of cheap ops ------------------------------------------------------------------- */

static void bench_chain(tp_context_t *context) {
    const float one = 1.0f;
    tp_tensor_t *x;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &one, sizeof one, &x));
    tp_function_t *function;
    TP_CHECK(tp_function_create(context, "chain", op_chain_body, 1, NULL, &function));
    (void)call_seconds(function, &x, 1, 1); /* traces, so that no timed call does */

    double eager = 1e30, graph = 1e30;
    for (int r = 0; r < REPEATS; r++) {
        tp_tensor_t *y;
        double start = now_seconds();
        TP_CHECK(op_chain(context, x, &y));
        TP_CHECK(tp_tensor_wait(y));
        eager = min_of(eager, now_seconds() - start);
        tp_tensor_release(y);
        graph = min_of(graph, call_seconds(function, &x, 1, 1));
    }
    printf("a chain of %d cheap ops on one float32, CPU (best of %d)\n", CHAIN, REPEATS);
    printf("  %-40s %8.0f ns/node\n", "baseline: eager, op by op", eager * 1e9 / CHAIN);
    printf("  %-40s %8.0f ns/node   (%.2fx eager; target: at most 0.5x)\n",
           "traced function (graph)", graph * 1e9 / CHAIN, graph / eager);
    tp_function_destroy(function);
    tp_tensor_release(x);
}

/* ---- Redundancy the graph passes remove ------------------------------------------------------ */

enum { BRANCHES = 4, MAX_ELEMENTS = 4096 };

typedef struct {
    tp_tensor_t *scale, *bias; /* captured: constants as far as the graph is concerned */
} weights_t;

/* sum over four branches of f_i(x*x + bias), two of them scaled by w = exp(-|tanh(scale*bias +
 * bias)|). Written as code often is: each branch recomputes x*x + bias (an inlined helper),
 * Identity ops mark values (as tf.identity does for names), w is computed in the body though
 * it depends on no argument, and a value meant for a summary is computed and never returned.
 * Folding computes w once, common subexpression elimination keeps one x*x + bias, identity
 * removal bypasses the Identity ops and pruning drops the unused branch. */
static tp_status_t *redundant_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                   size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                   void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    const weights_t *weights = user_data;
    tp_tensor_t *x = inputs[0];
    tp_tensor_t *w[6] = {NULL}, *square[BRANCHES] = {NULL}, *shifted[BRANCHES] = {NULL},
                *h[BRANCHES] = {NULL}, *unused[2] = {NULL}, *branch[6] = {NULL};
    tp_status_t *error = tp_mul(context, weights->scale, weights->bias, &w[0]);
    if (error == NULL) error = tp_add(context, w[0], weights->bias, &w[1]);
    if (error == NULL) error = tp_tanh(context, w[1], &w[2]);
    if (error == NULL) error = tp_abs(context, w[2], &w[3]);
    if (error == NULL) error = tp_neg(context, w[3], &w[4]);
    if (error == NULL) error = tp_exp(context, w[4], &w[5]);
    for (int i = 0; i < BRANCHES && error == NULL; i++) {
        error = tp_mul(context, x, x, &square[i]);
        if (error == NULL) error = tp_add(context, square[i], weights->bias, &shifted[i]);
        if (error == NULL) error = tp_identity(context, shifted[i], &h[i]);
    }
    if (error == NULL) error = tp_tanh(context, h[0], &unused[0]);
    if (error == NULL) error = tp_softmax(context, unused[0], &unused[1]);
    if (error == NULL) error = tp_relu(context, h[0], &branch[0]);
    if (error == NULL) error = tp_mul(context, branch[0], w[5], &branch[1]);
    if (error == NULL) error = tp_sigmoid(context, h[1], &branch[2]);
    if (error == NULL) error = tp_tanh(context, h[2], &branch[3]);
    if (error == NULL) error = tp_mul(context, h[3], w[5], &branch[4]);
    if (error == NULL) {
        tp_tensor_t *terms[] = {branch[1], branch[2], branch[3], branch[4]};
        error = tp_add_n(context, terms, 4, &outputs[0]);
    }
    for (int i = 0; i < 6; i++) tp_tensor_release(w[i]);
    for (int i = 0; i < 6; i++) tp_tensor_release(branch[i]);
    for (int i = 0; i < BRANCHES; i++) {
        tp_tensor_release(square[i]);
        tp_tensor_release(shifted[i]);
        tp_tensor_release(h[i]);
    }
    for (int i = 0; i < 2; i++) tp_tensor_release(unused[i]);
    return error;
}

/* Nodes of the function's placed graph: one line each in the text form, then "return". */
static int node_count(tp_function_t *function, tp_tensor_t *x) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (out == NULL) {
        perror("bench_graph: open_memstream");
        exit(1);
    }
    TP_CHECK(tp_function_write_graph(function, &x, 1, TP_GRAPH_TEXT, out));
    fclose(out);
    int lines = 0;
    for (size_t i = 0; i < size; i++) lines += text[i] == '\n';
    free(text);
    return lines - 1;
}

static tp_tensor_t *floats(tp_context_t *context, const float *values, int64_t count) {
    tp_tensor_t *t;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(count), values,
                              (size_t)count * sizeof *values, &t));
    return t;
}

/* The passes must not change a result: equal bit for bit, since folding runs each node's own
 * kernel and the merged nodes computed the same thing. */
static void check_same_results(tp_function_t *without, tp_function_t *with, tp_tensor_t *x,
                               int64_t count) {
    static float got[2][MAX_ELEMENTS];
    tp_function_t *functions[2] = {without, with};
    for (int f = 0; f < 2; f++) {
        tp_tensor_t *y;
        TP_CHECK(tp_function_call(functions[f], &x, 1, &y, 1));
        TP_CHECK(tp_tensor_read(y, got[f], (size_t)count * sizeof(float)));
        tp_tensor_release(y);
    }
    for (int64_t i = 0; i < count; i++) {
        if (memcmp(&got[0][i], &got[1][i], sizeof(float)) != 0) {
            fprintf(stderr, "bench_graph: with the passes, element %lld of %lld is %.9g, "
                            "without them %.9g\n",
                    (long long)i, (long long)count, got[1][i], got[0][i]);
            exit(1);
        }
    }
}

static void bench_passes(tp_context_t *context, int64_t count, int repeats) {
    static float x_values[MAX_ELEMENTS], scale_values[MAX_ELEMENTS], bias_values[MAX_ELEMENTS];
    for (int64_t i = 0; i < count; i++) {
        x_values[i] = (float)(i % 17 - 8) * 0.125f;
        scale_values[i] = (float)(i % 7) * 0.3f;
        bias_values[i] = (float)(i % 5) * 0.1f - 0.2f;
    }
    tp_tensor_t *x = floats(context, x_values, count);
    weights_t weights = {floats(context, scale_values, count), floats(context, bias_values, count)};

    tp_function_t *without, *with;
    TP_CHECK(tp_context_set_graph_passes(context, TP_PASS_ALL, false));
    TP_CHECK(tp_function_create(context, "redundant", redundant_body, 1, &weights, &without));
    (void)call_seconds(without, &x, 1, 1); /* the trace takes the passes switched on now */
    TP_CHECK(tp_context_set_graph_passes(context, TP_PASS_ALL, true));
    TP_CHECK(tp_function_create(context, "redundant", redundant_body, 1, &weights, &with));
    (void)call_seconds(with, &x, 1, 1);
    check_same_results(without, with, x, count);

    double off = 1e30, on = 1e30;
    for (int r = 0; r < repeats; r++) {
        off = min_of(off, call_seconds(without, &x, 1, 1));
        on = min_of(on, call_seconds(with, &x, 1, 1));
    }
    printf("  %lld floats\n", (long long)count);
    printf("    %-38s %3d nodes %9.2f us/call\n", "baseline: passes off", node_count(without, x),
           off * 1e6);
    printf("    %-38s %3d nodes %9.2f us/call   (%.2fx faster)\n", "passes on",
           node_count(with, x), on * 1e6, off / on);
    tp_function_destroy(without);
    tp_function_destroy(with);
    tp_tensor_release(weights.scale);
    tp_tensor_release(weights.bias);
    tp_tensor_release(x);
}

/* ---- Overlap across devices ------------------------------------------------------------------ */

enum { RELUS = 25, APU_ELEMENTS = 1024, APU_LATENCY_US = 200, OVERLAP_REPEATS = 7 };

/* Where each chain runs: both on APU:0 for the serial baseline. */
typedef struct {
    const char *devices[2];
} placement_t;

static tp_status_t *relu_chain(tp_context_t *context, const char *device, tp_tensor_t *x,
                               tp_tensor_t **out) {
    tp_status_t *error = tp_device_push(context, device);
    if (error != NULL) return error;
    tp_tensor_t *value = tp_tensor_retain(x);
    for (int i = 0; i < RELUS && error == NULL; i++) {
        tp_tensor_t *next;
        error = tp_relu(context, value, &next);
        tp_tensor_release(value);
        value = error == NULL ? next : NULL;
    }
    tp_status_t *popped = tp_device_pop(context);
    if (error == NULL) error = popped;
    else tp_status_free(popped);
    if (error == NULL) *out = value;
    else tp_tensor_release(value);
    return error;
}

static tp_status_t *two_chains_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                    size_t num_inputs, tp_tensor_t **outputs,
                                    size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    const placement_t *placement = user_data;
    tp_status_t *error = relu_chain(context, placement->devices[0], inputs[0], &outputs[0]);
    if (error != NULL) return error;
    error = relu_chain(context, placement->devices[1], inputs[0], &outputs[1]);
    if (error != NULL) tp_tensor_release(outputs[0]);
    return error;
}

/* Why the APU context has fewer than two APUs, for the line that says the figure is skipped. */
static void explain_missing_apus(tp_context_t *context, size_t apus) {
    for (size_t i = 0; i < tp_plugin_count(context); i++) {
        tp_plugin_info_t info = {.struct_size = sizeof info};
        if (tp_plugin_get(context, i, &info) == NULL && !info.loaded &&
            strstr(info.path, "apu") != NULL) {
            printf("  skipped: the APU plug-in %s was refused: %s\n", info.path, info.reason);
            return;
        }
    }
    printf("  skipped: %zu APU devices in %s, 2 needed (is the APU plug-in built?)\n", apus,
           TP_BENCH_APU_PLUGIN_DIR);
}

static void check_relu_of(tp_function_t *function, tp_tensor_t *x, const float *x_values) {
    static float got[APU_ELEMENTS];
    tp_tensor_t *y[2];
    TP_CHECK(tp_function_call(function, &x, 1, y, 2));
    for (int o = 0; o < 2; o++) {
        TP_CHECK(tp_tensor_read(y[o], got, sizeof got));
        for (int i = 0; i < APU_ELEMENTS; i++) {
            if (got[i] != (x_values[i] > 0 ? x_values[i] : 0.0f)) {
                fprintf(stderr, "bench_graph: Relu chain %d gives %g for %g at %d\n", o, got[i],
                        x_values[i], i);
                exit(1);
            }
        }
        tp_tensor_release(y[o]);
    }
}

static void bench_overlap(void) {
    printf("two independent chains of %d Relus on %d floats, APU latency %d us per command "
           "(best of %d)\n", RELUS, APU_ELEMENTS, APU_LATENCY_US, OVERLAP_REPEATS);
    /* The plug-in reads these at its init, once per process: the CPU context loads no
     * plug-in, so this context is the first to load it. */
    char latency[16];
    snprintf(latency, sizeof latency, "%d", APU_LATENCY_US);
    setenv("TP_APU_DEVICES", "2", 1);
    setenv("TP_APU_LATENCY_US", latency, 1);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_BENCH_APU_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    tp_status_t *error = tp_context_create(&options, &context);
    if (error != NULL) {
        printf("  skipped: no context with the APU plug-in: %s\n", tp_status_message(error));
        tp_status_free(error);
        return;
    }
    size_t apus = tp_physical_device_count(context, "APU");
    if (apus < 2) {
        explain_missing_apus(context, apus);
        tp_context_destroy(context);
        return;
    }
    /* The APU's own pass would collapse each chain to one Relu, and in the one-APU baseline
     * common subexpression elimination would merge the two equal chains: both off, so that
     * both functions run every Relu they were written with. */
    TP_CHECK(tp_context_set_graph_passes(context,
                                         TP_PASS_PLUGINS | TP_PASS_COMMON_SUBEXPRESSION, false));

    static float x_values[APU_ELEMENTS];
    for (int i = 0; i < APU_ELEMENTS; i++) x_values[i] = (float)(i % 9 - 4);
    tp_tensor_t *x = floats(context, x_values, APU_ELEMENTS);
    static placement_t one = {{"/device:APU:0", "/device:APU:0"}};
    static placement_t two = {{"/device:APU:0", "/device:APU:1"}};
    tp_function_t *serial, *parallel;
    TP_CHECK(tp_function_create(context, "one_apu", two_chains_body, 2, &one, &serial));
    TP_CHECK(tp_function_create(context, "two_apus", two_chains_body, 2, &two, &parallel));
    check_relu_of(serial, x, x_values);
    check_relu_of(parallel, x, x_values);

    double one_apu = 1e30, two_apus = 1e30;
    for (int r = 0; r < OVERLAP_REPEATS; r++) {
        one_apu = min_of(one_apu, call_seconds(serial, &x, 1, 2));
        two_apus = min_of(two_apus, call_seconds(parallel, &x, 1, 2));
    }
    printf("  %-40s %8.2f ms/call\n", "baseline: both chains on APU:0", one_apu * 1e3);
    printf("  %-40s %8.2f ms/call   (%.2fx one APU; ideal with overlap: about 0.5x)\n",
           "one chain on each of APU:0, APU:1", two_apus * 1e3, two_apus / one_apu);
    tp_function_destroy(serial);
    tp_function_destroy(parallel);
    tp_tensor_release(x);
    tp_context_destroy(context);
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    tp_context_t *context = bench_cpu_context();
    bench_chain(context);

    printf("a body with repeated subexpressions, ops over constants, Identity ops and an unused "
           "branch, CPU (best of %d)\n", REPEATS);
    bench_passes(context, 16, REPEATS);
    bench_passes(context, MAX_ELEMENTS, REPEATS);
    tp_context_destroy(context);

    bench_overlap();
    return 0;
}
