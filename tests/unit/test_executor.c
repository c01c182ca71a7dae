/* SPDX-License-Identifier: Apache-2.0 */
/* The graph executor: the memory plan shares memory only between values whose lives do not
 * overlap, a run's intermediate values take one block whose size is the plan's peak and give
 * it back, running out of it is an error naming the function, and a device's late error
 * reaches the reader of the result. */
#include "test_support.h"

#include <math.h>
#include <stdlib.h>

#include "cpu_fixture.h"
#include "graph_support.h"
#include "graph/memory_plan.h"

static void values_alive_together_do_not_share(void **state) {
    (void)state;
    /* a (steps 0-2) and b (1-2) overlap; c (3-4) may take a's place, d (3-3) b's. */
    tp_planned_value_t values[4] = {{0, 2, 100, 0}, {1, 2, 64, 0}, {3, 4, 128, 0}, {3, 3, 1, 0}};
    uint64_t size;
    assert_ok(tp_memory_plan(values, 4, &size));
    assert_int_equal(values[0].offset, 0);
    assert_int_equal(values[1].offset, 128); /* 100 rounded up to the alignment */
    assert_int_equal(values[2].offset, 0);
    assert_int_equal(values[3].offset, 128);
    assert_int_equal(size, 192);
}

static void a_gap_left_by_a_dead_value_is_reused(void **state) {
    (void)state;
    /* a (0-1) and b (0-5); a dies, c (2-5) fits where a was; d (2-5) goes past b. */
    tp_planned_value_t values[4] = {
        {0, 1, 64, 0}, {0, 5, 64, 0}, {2, 5, 64, 0}, {2, 5, 64, 0}};
    uint64_t size;
    assert_ok(tp_memory_plan(values, 4, &size));
    assert_int_equal(values[0].offset, 0);
    assert_int_equal(values[1].offset, 64);
    assert_int_equal(values[2].offset, 0);
    assert_int_equal(values[3].offset, 128);
    assert_int_equal(size, 192);
}

/* A chain of Tanh ops on a vector of 4096 floats (16 KiB). */
enum { CHAIN = 50, WIDTH = 4096 };

static tp_status_t *chain_body(tp_context_t *context, tp_tensor_t *const *inputs,
                               size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                               void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *value = tp_tensor_retain(inputs[0]);
    for (int i = 0; i < CHAIN; i++) {
        tp_tensor_t *next;
        tp_status_t *error = tp_tanh(context, value, &next);
        tp_tensor_release(value);
        if (error != NULL) return error;
        value = next;
    }
    outputs[0] = value;
    return NULL;
}

static void cpu_stats(tp_context_t *context, tp_memory_stats_t *stats) {
    *stats = (tp_memory_stats_t){.struct_size = sizeof *stats};
    assert_ok(tp_context_memory_stats(context, "CPU:0", stats));
}

/* Two intermediates are alive at a time, so a run takes 2 x 16 KiB for them, and the result
 * 16 KiB of its own; everything but the result is back after the run. */
static void a_run_takes_one_block_of_the_planned_peak(void **state) {
    tp_context_t *context = *state;
    float *values = malloc(WIDTH * sizeof *values);
    for (int i = 0; i < WIDTH; i++) values[i] = (float)i / WIDTH;
    tp_tensor_t *x, *y;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(WIDTH), values,
                               WIDTH * sizeof *values, &x));
    tp_function_t *function;
    assert_ok(tp_function_create(context, "tanhs", chain_body, 1, NULL, &function));
    assert_ok(tp_function_call(function, &x, 1, &y, 1)); /* traces */
    tp_tensor_release(y);
    assert_ok(tp_context_synchronize(context));

    tp_memory_stats_t before, after;
    cpu_stats(context, &before);
    assert_ok(tp_context_reset_peak_memory(context, "CPU:0"));
    assert_ok(tp_function_call(function, &x, 1, &y, 1));
    assert_ok(tp_context_synchronize(context));
    cpu_stats(context, &after);
    const uint64_t tensor = WIDTH * sizeof(float);
    assert_int_equal(after.peak_bytes_in_use - before.bytes_in_use, 3 * tensor);
    assert_int_equal(after.bytes_in_use - before.bytes_in_use, tensor);
    assert_int_equal(after.total_allocations - before.total_allocations, 2);

    float *got = malloc(WIDTH * sizeof *got);
    assert_ok(tp_tensor_read(y, got, WIDTH * sizeof *got));
    for (int i = 0; i < WIDTH; i += 97) {
        float expected = values[i];
        for (int k = 0; k < CHAIN; k++) expected = tanhf(expected);
        assert_true(fabsf(got[i] - expected) <= 1e-6f);
    }
    free(got);
    free(values);
    tp_tensor_release(y);
    tp_tensor_release(x);
    tp_function_destroy(function);
}

static void running_out_of_the_block_names_the_function(void **state) {
    (void)state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    assert_ok(tp_context_set_memory_limit(context, "CPU:0", 40 * 1024));
    float *values = calloc(WIDTH, sizeof *values);
    tp_tensor_t *x, *y = NULL;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(WIDTH), values,
                               WIDTH * sizeof *values, &x));
    free(values);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "tanhs", chain_body, 1, NULL, &function));
    /* x holds 16 KiB of the 40; the block needs 32 more. */
    assert_error(tp_function_call(function, &x, 1, &y, 1), TP_RESOURCE_EXHAUSTED,
                 "OOM when allocating the 32768 bytes of the intermediate values of function "
                 "'tanhs' on /job:localhost/replica:0/task:0/device:CPU:0");
    assert_null(y);
    tp_tensor_release(x);
    tp_function_destroy(function);
    tp_memory_stats_t stats;
    cpu_stats(context, &stats);
    assert_int_equal(stats.bytes_in_use, 0);
    tp_context_destroy(context);
}

/* The test accelerator reports a Relu that met a NaN at its next synchronize: a call returns
 * before that, and reading the result reports it. */
static tp_status_t *acc_relu_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                  size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                  void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *inner = NULL;
    tp_status_t *error = scoped(context, "/device:ACC:0", tp_relu, inputs[0], &inner);
    if (error == NULL) error = tp_neg(context, inner, &outputs[0]); /* on the CPU */
    tp_tensor_release(inner);
    return error;
}

static void a_late_device_error_reaches_the_reader(void **state) {
    (void)state;
    tp_log_set_level(TP_LOG_ERROR); /* Neg's fallback from ACC to the CPU is expected */
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_KERNEL_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    const float a[2] = {NAN, 1};
    tp_tensor_t *x, *y = NULL;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2), a, sizeof a, &x));
    tp_function_t *function;
    assert_ok(tp_function_create(context, "nan", acc_relu_body, 1, NULL, &function));
    tp_status_t *error = tp_function_call(function, &x, 1, &y, 1);
    if (error == NULL) {
        float got[2];
        error = tp_tensor_read(y, got, sizeof got);
    }
    assert_error(error, TP_INTERNAL, "Relu on ACC met a NaN at element 0");
    tp_tensor_release(y);
    tp_tensor_release(x);
    tp_function_destroy(function);
    tp_context_destroy(context);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values_alive_together_do_not_share),
        cmocka_unit_test(a_gap_left_by_a_dead_value_is_reused),
        TEST(a_run_takes_one_block_of_the_planned_peak),
        cmocka_unit_test(running_out_of_the_block_names_the_function),
        cmocka_unit_test(a_late_device_error_reaches_the_reader),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
