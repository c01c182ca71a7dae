/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel contracts plugin.h states, as the runtime keeps them, against the test plug-in
 * "contracts" (tests/plugins/contracts.c): one synchronous CTR device whose kernels report
 * what they were handed. */
#include "test_support.h"

#include <pthread.h>
#include <stdio.h>

#define CTR0 "/job:localhost/replica:0/task:0/device:CTR:0"

static char log_lines[4096];

static void keep_line(tp_log_level_t level, const char *line, void *user_data) {
    (void)level;
    (void)user_data;
    size_t used = strlen(log_lines);
    snprintf(log_lines + used, sizeof log_lines - used, "%s\n", line);
}

static int setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_CONTRACT_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    int result = create_context_state(state, &options);
    log_lines[0] = '\0';
    tp_log_set_level(TP_LOG_INFO);
    tp_log_set_callback(keep_line, NULL);
    return result;
}

static int teardown(void **state) {
    tp_log_set_callback(NULL, NULL);
    tp_context_destroy(*state);
    return 0;
}

static const float sample[4] = {-1.5f, 2.0f, -0.25f, 3.0f};

/* Runs a unary op from tensorplug.h on CTR:0 (placed there by priority) and reads it. */
static tp_status_t *run_unary(tp_context_t *context,
                              tp_status_t *(*op)(tp_context_t *, tp_tensor_t *, tp_tensor_t **),
                              float *got) {
    tp_tensor_t *x = floats(context, TP_SHAPE(4), sample), *y = NULL;
    tp_status_t *status = op(context, x, &y);
    if (status == NULL) {
        assert_string_equal(tp_tensor_device(y), CTR0);
        status = tp_tensor_read(y, got, 4 * sizeof *got);
    }
    tp_tensor_release(x);
    tp_tensor_release(y);
    return status;
}

/* tp_kernel_def_t.create NULL: compute is handed NULL, and destroy is still called, with
 * NULL, once per launch. */
static void a_kernel_without_create_is_handed_null(void **state) {
    float got[4];
    for (int launch = 0; launch < 2; launch++) assert_ok(run_unary(*state, tp_relu, got));
    const float expected[4] = {0, 2, 0, 3};
    assert_memory_equal(got, expected, sizeof expected);
    assert_string_equal(log_lines, "[contracts] Relu destroy(NULL)\n"
                                   "[contracts] Relu destroy(NULL)\n");
}

/* create, compute and destroy run once per launch: every compute is handed the instance its
 * launch's create made, which destroy then gets back. */
static void an_instance_lives_for_one_launch(void **state) {
    float got[4];
    for (int launch = 0; launch < 3; launch++) assert_ok(run_unary(*state, tp_neg, got));
    const float expected[4] = {1.5f, -2.0f, 0.25f, -3.0f};
    assert_memory_equal(got, expected, sizeof expected);
    assert_string_equal(log_lines, "[contracts] Neg destroy(instance)\n"
                                   "[contracts] Neg destroy(instance)\n"
                                   "[contracts] Neg destroy(instance)\n");
}

/* A create that fails is the launch's failure, named by op and device; neither compute nor
 * destroy runs. */
static void a_failed_create_fails_the_launch_alone(void **state) {
    float got[4];
    assert_error(run_unary(*state, tp_square, got), TP_FAILED_PRECONDITION,
                 "Square on " CTR0 ": Square's create refused this call");
    assert_string_equal(log_lines, "");
    assert_ok(run_unary(*state, tp_neg, got)); /* the device goes on */
}

/* The runtime does not broadcast for a kernel: it infers the output's shape, refuses shapes
 * that do not broadcast before any kernel runs, and hands the kernel each input in its own
 * shape. */
static void a_kernel_is_handed_its_inputs_unbroadcast(void **state) {
    tp_context_t *context = *state;
    const float six[6] = {1, 2, 3, 4, 5, 6};
    tp_tensor_t *x = floats(context, TP_SHAPE(2, 3), six), *y = floats(context, TP_SHAPE(3), six),
                *wrong = floats(context, TP_SHAPE(4), six), *z = NULL;
    assert_error(tp_add(context, x, y, &z), TP_UNIMPLEMENTED,
                 "Add on " CTR0 ": CTR's Add was handed x (2, 3), y (3), z (2, 3)");
    assert_null(z);
    assert_error(tp_add(context, x, wrong, &z), TP_INVALID_ARGUMENT, "Incompatible shapes");
    assert_null(z);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_tensor_release(wrong);
}

typedef struct {
    tp_context_t *context;
    pthread_barrier_t *start;
    float got[4];
    tp_status_t *status;
} exp_thread_t;

static void *run_exp(void *arg) {
    exp_thread_t *thread = arg;
    pthread_barrier_wait(thread->start);
    thread->status = run_unary(thread->context, tp_exp, thread->got);
    return NULL;
}

/* compute may run on several threads at once for one kernel, on one device and stream: on a
 * TP_DEVICE_SYNCHRONOUS device the runtime serializes nothing. Each Exp waits for a second to
 * be inside compute and writes how many were; serialized, it would wait 5 s and write 1. */
static void compute_runs_concurrently_on_a_synchronous_device(void **state) {
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
    exp_thread_t threads[2];
    pthread_t ids[2];
    for (int t = 0; t < 2; t++) {
        threads[t] = (exp_thread_t){.context = *state, .start = &start};
        assert_int_equal(pthread_create(&ids[t], NULL, run_exp, &threads[t]), 0);
    }
    for (int t = 0; t < 2; t++) pthread_join(ids[t], NULL);
    pthread_barrier_destroy(&start);
    for (int t = 0; t < 2; t++) {
        assert_ok(threads[t].status);
        for (int i = 0; i < 4; i++) assert_true(threads[t].got[i] == 2.0f);
    }
}

/* Of kernels for one op, device type and dtype the highest priority wins, and of equal
 * priorities the one registered first. */
static void the_first_registered_of_equal_priorities_wins(void **state) {
    float got[4];
    for (int launch = 0; launch < 2; launch++) assert_ok(run_unary(*state, tp_abs, got));
    const float expected[4] = {1.5f, 2.0f, 0.25f, 3.0f};
    assert_memory_equal(got, expected, sizeof expected);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_kernel_without_create_is_handed_null, setup, teardown),
        cmocka_unit_test_setup_teardown(an_instance_lives_for_one_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_create_fails_the_launch_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(a_kernel_is_handed_its_inputs_unbroadcast, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(compute_runs_concurrently_on_a_synchronous_device, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_first_registered_of_equal_priorities_wins, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
