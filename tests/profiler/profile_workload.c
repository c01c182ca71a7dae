/* SPDX-License-Identifier: Apache-2.0 */
/* What the profile test records, through the public API alone: eager ops on the CPU and on
 * the APU (inputs copied there), values read back, a traced function with a name full of
 * bytes a JSON writer must escape, called twice, and two steps of a mirrored strategy on two
 * logical CPUs. Everything is released at the end, so that TP_PROFILE writes the profile when
 * the context goes. Usage: profile_workload APU_PLUGIN_PATH */
#include <stdio.h>
#include <stdlib.h>

#include <tensorplug/training.h>

enum { COUNT = 1000 };

/* Quotes, a backslash, a newline, a control byte, a byte that is not UTF-8, and U+2028. */
static const char HOSTILE_NAME[] = "evil \"quoted\" \\ name\nline\x01 \xff end \xe2\x80\xa8.";

static tp_status_t *double_it(tp_context_t *context, tp_tensor_t *const *inputs,
                              size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                              void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    return tp_add(context, inputs[0], inputs[0], &outputs[0]);
}

static tp_status_t *replica_step(tp_replica_context_t *replica, void *user_data) {
    tp_context_t *context = tp_replica_context(replica);
    tp_tensor_t *x = user_data, *y, *summed;
    tp_status_t *error = tp_square(context, x, &y);
    if (error != NULL) return error;
    error = tp_replica_all_reduce(replica, TP_REDUCE_SUM, &y, 1, &summed);
    tp_tensor_release(y);
    if (error == NULL) tp_tensor_release(summed);
    return error;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s APU_PLUGIN_PATH\n", argv[0]);
        return 2;
    }
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = argv[1];
    options.skip_installed_plugins = true;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));
    const uint64_t limits[2] = {64ull << 20, 64ull << 20};
    TP_CHECK(tp_context_set_logical_devices(context, "CPU:0", limits, 2));

    float values[COUNT];
    for (int i = 0; i < COUNT; i++) values[i] = (float)(i % 7) - 3.0f;
    tp_tensor_t *x, *on_apu, *twice, *product, *matrix;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(COUNT), values, sizeof values, &x));
    /* Relu goes to APU:0, by priority: x is copied there, 4,000 bytes. */
    TP_CHECK(tp_relu(context, x, &on_apu));
    TP_CHECK(tp_relu(context, on_apu, &twice));
    TP_CHECK(tp_tensor_read(twice, values, sizeof values));
    TP_CHECK(tp_reshape(context, x, TP_SHAPE(40, 25), &matrix));
    TP_CHECK(tp_matmul(context, matrix, matrix, false, true, &product));
    TP_CHECK(tp_tensor_wait(product));

    tp_function_t *function;
    TP_CHECK(tp_function_create(context, HOSTILE_NAME, double_it, 1, NULL, &function));
    for (int call = 0; call < 2; call++) {
        tp_tensor_t *doubled;
        TP_CHECK(tp_function_call(function, &x, 1, &doubled, 1));
        TP_CHECK(tp_tensor_wait(doubled));
        tp_tensor_release(doubled);
    }
    tp_function_destroy(function);

    const char *devices[2] = {"/CPU:0", "/CPU:1"};
    tp_mirrored_strategy_t *strategy;
    TP_CHECK(tp_mirrored_strategy_create(context, devices, 2, &strategy));
    for (int step = 0; step < 2; step++)
        TP_CHECK(tp_mirrored_strategy_run(strategy, replica_step, x));
    tp_mirrored_strategy_destroy(strategy);

    tp_tensor_release(product);
    tp_tensor_release(matrix);
    tp_tensor_release(twice);
    tp_tensor_release(on_apu);
    tp_tensor_release(x);
    tp_context_destroy(context);
    printf("done\n");
    return 0;
}
