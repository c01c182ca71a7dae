/* SPDX-License-Identifier: Apache-2.0 */
/* `tensorplug graph`: the placed graph of a demo traced function, as DOT or text. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The demo layer's shape: small enough to read as a picture, large enough to be a layer. */
enum { DEMO_INPUTS = 100, DEMO_UNITS = 10 };

/* The body of the demo: the plug-in page's tf.function (uniform values on the CPU, Relu on
 * the APU) with a dense layer between, so that the picture has more than two boxes. */
static tp_status_t *demo_layer(tp_context_t *context, tp_tensor_t **out) {
    tp_tensor_t *d = NULL, *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    static const float bias[DEMO_UNITS] = {0}; /* the graph is only drawn, never run */
    tp_status_t *error =
        tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(DEMO_INPUTS), /*seed=*/1, &d);
    if (error == NULL) error = tp_reshape(context, d, TP_SHAPE(1, DEMO_INPUTS), &x);
    if (error == NULL)
        error = tp_random_normal(context, TP_FLOAT32, TP_SHAPE(DEMO_INPUTS, DEMO_UNITS),
                                 /*seed=*/2, &w);
    if (error == NULL)
        error = tp_constant(context, TP_FLOAT32, TP_SHAPE(DEMO_UNITS), bias, sizeof bias, &b);
    if (error == NULL) error = tp_matmul(context, x, w, false, false, &y);
    if (error == NULL) error = tp_add(context, y, b, out);
    tp_tensor_t *made[] = {d, x, w, b, y};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) tp_tensor_release(made[i]);
    return error;
}

/* `user_data` is the device Relu is asked for, or NULL to leave it to default placement. */
static tp_status_t *demo_body(tp_context_t *context, tp_tensor_t *const *inputs,
                              size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                              void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    tp_tensor_t *z = NULL;
    tp_status_t *error = tp_device_push(context, "/CPU:0");
    if (error != NULL) return error;
    error = demo_layer(context, &z);
    tp_status_free(tp_device_pop(context));
    bool scoped = false;
    if (error == NULL && user_data != NULL) {
        error = tp_device_push(context, user_data);
        scoped = error == NULL;
    }
    if (error == NULL) error = tp_relu(context, z, &outputs[0]);
    if (scoped) tp_status_free(tp_device_pop(context));
    tp_tensor_release(z);
    return error;
}

static tp_status_t *write_demo_graph(tp_context_t *context, tp_graph_format_t format,
                                     FILE *out) {
    /* Logical devices, not physical ones: those are what placement chooses among. */
    size_t apus;
    tp_status_t *status = tp_logical_device_count(context, "APU", &apus);
    if (status != NULL) return status;
    tp_function_t *function;
    status = tp_function_create(context, "demo", demo_body, 1, apus > 0 ? "/APU:0" : NULL,
                                &function);
    if (status != NULL) return status;
    status = tp_function_write_graph(function, NULL, 0, format, out);
    tp_function_destroy(function);
    return status;
}

enum { OPTION_TEXT = CLI_FIRST_OWN_OPTION, OPTION_OUTPUT };

static int run_graph(const cli_command_t *command, int argc, char **argv) {
    static const struct option options[] = {{"text", no_argument, NULL, OPTION_TEXT},
                                            {"output", required_argument, NULL, OPTION_OUTPUT},
                                            CLI_STANDARD_OPTIONS};
    bool text = false;
    const char *path = NULL;
    int option, exit_code;
    while ((option = cli_next_option(command, argc, argv, options, &exit_code)) >= 0) {
        if (option == OPTION_TEXT) text = true;
        if (option == OPTION_OUTPUT) path = optarg;
    }
    if (option == CLI_OPTIONS_EXIT) return exit_code;
    if (cli_no_operands(command, argc, argv) != 0) return CLI_EXIT_USAGE;
    tp_context_t *context;
    tp_status_t *status = tp_context_create(NULL, &context);
    if (status != NULL) return cli_fail(status);
    /* Opened only once the context exists, so that a failing context leaves no empty file. */
    FILE *out = path != NULL ? fopen(path, "w") : stdout;
    if (out == NULL) {
        fprintf(stderr, "tensorplug graph: cannot open '%s': %s\n", path, strerror(errno));
        tp_context_destroy(context);
        return EXIT_FAILURE;
    }
    status = write_demo_graph(context, text ? TP_GRAPH_TEXT : TP_GRAPH_DOT, out);
    tp_context_destroy(context);
    if ((out != stdout ? fclose(out) : fflush(out)) != 0 && status == NULL) {
        fprintf(stderr, "tensorplug graph: writing '%s' failed: %s\n",
                path != NULL ? path : "standard output", strerror(errno));
        return EXIT_FAILURE;
    }
    return status != NULL ? cli_fail(status) : EXIT_SUCCESS;
}

const cli_command_t cli_graph_command = {
    "graph", "write the placed graph of a demo traced function, as DOT or text",
    "usage: tensorplug graph [--text] [--output FILE]\n"
    "\n"
    "Traces a demo function on the devices a context sees and writes its placed graph:\n"
    "uniform random values, a dense layer (MatMul, Add) on the CPU, then Relu on APU:0\n"
    "if an APU is present, else where default placement puts it. Graphviz draws the DOT:\n"
    "  tensorplug graph | dot -Tsvg > graph.svg\n"
    "\n"
    "  --text         one line per node (op, inputs, attributes, type, device) instead\n"
    "  --output FILE  write to FILE instead of standard output\n",
    run_graph,
};
