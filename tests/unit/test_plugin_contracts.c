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
 * launch's create made, which destroy then gets back. Neg's kernel is registered as a plug-in
 * built against 1.7 registers it, ending before tp_kernel_def_t.flags: the
 * TP_KERNEL_REUSE_INSTANCE lying past its struct_size changes nothing. */
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

typedef struct racer {
    tp_context_t *context;
    pthread_barrier_t *start;
    void (*body)(struct racer *racer);
    float got[4];
    tp_status_t *status;
} racer_t;

static void *race(void *arg) {
    racer_t *racer = arg;
    pthread_barrier_wait(racer->start);
    racer->body(racer);
    return NULL;
}

/* Runs `body` on `count` threads (at most 3) that start together, and waits for them all. */
static void run_at_once(tp_context_t *context, int count, void (*body)(racer_t *racer),
                        racer_t *racers) {
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, (unsigned)count), 0);
    pthread_t ids[3];
    for (int t = 0; t < count; t++) {
        racers[t] = (racer_t){.context = context, .start = &start, .body = body};
        assert_int_equal(pthread_create(&ids[t], NULL, race, &racers[t]), 0);
    }
    for (int t = 0; t < count; t++) pthread_join(ids[t], NULL);
    pthread_barrier_destroy(&start);
}

static void run_exp(racer_t *racer) {
    racer->status = run_unary(racer->context, tp_exp, racer->got);
}

/* Both racers' ops succeeded, and each saw two computes inside at once. */
static void assert_both_met(racer_t *racers) {
    for (int t = 0; t < 2; t++) {
        assert_ok(racers[t].status);
        for (int i = 0; i < 4; i++) assert_true(racers[t].got[i] == 2.0f);
    }
}

/* compute may run on several threads at once for one kernel, on one device and stream: on a
 * TP_DEVICE_SYNCHRONOUS device the runtime serializes nothing. Each Exp waits for a second to
 * be inside compute and writes how many were; serialized, it would wait 5 s and write 1. */
static void compute_runs_concurrently_on_a_synchronous_device(void **state) {
    racer_t racers[2];
    run_at_once(*state, 2, run_exp, racers);
    assert_both_met(racers);
}

/* How many lines of the log hold `text`. */
static int lines_with(const char *text) {
    int count = 0;
    for (const char *line = log_lines; *line != '\0'; line = strchr(line, '\n') + 1) {
        const char *found = strstr(line, text);
        if (found != NULL && found < strchr(line, '\n')) count++;
    }
    return count;
}

/* Runs the contracts plug-in's op Scale (y = factor * x) on CTR:0 and checks its values. */
static tp_status_t *run_scale(tp_context_t *context, double factor) {
    tp_tensor_t *x = floats(context, TP_SHAPE(4), sample), *y = NULL;
    tp_attr_t attr = TP_ATTR_FLOAT_VALUE("factor", factor);
    tp_status_t *status = tp_execute(context, "Scale", &x, 1, &attr, 1, &y, 1);
    float got[4];
    if (status == NULL) status = tp_tensor_read(y, got, sizeof got);
    for (int i = 0; status == NULL && i < 4; i++)
        assert_true(got[i] == (float)factor * sample[i]);
    tp_tensor_release(x);
    tp_tensor_release(y);
    return status;
}

/* Destroys the test's context now (teardown then has none), so that its devices close. */
static void close_context(void **state) {
    tp_context_destroy(*state);
    *state = NULL;
}

/* TP_KERNEL_REUSE_INSTANCE: one create per attribute values on a device, each instance handed
 * to every launch of its values, and every one destroyed once when the context goes. */
static void a_kept_instance_is_made_once_per_attributes(void **state) {
    for (int launch = 0; launch < 5; launch++) {
        assert_ok(run_scale(*state, 2.0));
        assert_ok(run_scale(*state, 3.0));
    }
    assert_string_equal(log_lines, "[contracts] Scale create(factor=2)\n"
                                   "[contracts] Scale create(factor=3)\n");
    close_context(state);
    assert_int_equal(lines_with("Scale create"), 2);
    assert_int_equal(lines_with("Scale destroy(factor=2)"), 1);
    assert_int_equal(lines_with("Scale destroy(factor=3)"), 1);
}

/* A tensor keeps its context's devices, and so their kept instances, until it goes. */
static void kept_instances_last_as_long_as_the_devices(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *x = floats(context, TP_SHAPE(4), sample), *y = NULL;
    tp_attr_t attr = TP_ATTR_FLOAT_VALUE("factor", 4.0);
    assert_ok(tp_execute(context, "Scale", &x, 1, &attr, 1, &y, 1));
    tp_tensor_release(x);
    close_context(state);
    assert_int_equal(lines_with("Scale destroy"), 0);
    float got[4];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[3] == 12.0f);
    tp_tensor_release(y);
    assert_int_equal(lines_with("Scale destroy(factor=4)"), 1);
}

/* A create that fails is the launch's failure and is not kept: the next launch of the same
 * attributes calls create again, and nothing is destroyed for it. */
static void a_failed_create_is_not_kept(void **state) {
    for (int launch = 0; launch < 2; launch++)
        assert_error(run_scale(*state, -1.0), TP_INVALID_ARGUMENT,
                     "Scale on " CTR0 ": Scale's create refuses factor -1");
    assert_ok(run_scale(*state, 1.0));
    close_context(state);
    assert_int_equal(lines_with("Scale create(factor=-1)"), 2);
    assert_int_equal(lines_with("Scale destroy(factor=-1)"), 0);
    assert_int_equal(lines_with("Scale destroy(factor=1)"), 1);
}

static void run_scales(racer_t *racer) {
    for (int launch = 0; launch < 20 && racer->status == NULL; launch++)
        racer->status = run_scale(racer->context, 2.0);
}

/* Launches on several threads at once share one kept instance, made once though they all
 * start without one; without TP_KERNEL_CONCURRENT_COMPUTE, the host runs their computes on it
 * one at a time even on a synchronous device (Scale's compute fails if it meets another). */
static void launches_share_one_kept_instance_one_at_a_time(void **state) {
    racer_t racers[3];
    run_at_once(*state, 3, run_scales, racers);
    for (int t = 0; t < 3; t++) assert_ok(racers[t].status);
    assert_string_equal(log_lines, "[contracts] Scale create(factor=2)\n");
}

static void run_sigmoid(racer_t *racer) {
    racer->status = run_unary(racer->context, tp_sigmoid, racer->got);
}

/* With TP_KERNEL_CONCURRENT_COMPUTE, computes run at once on the one kept instance: each
 * Sigmoid waits for a second to be inside and writes how many were (1 after 5 s, if the host
 * serialized them). */
static void kept_instances_compute_concurrently_when_allowed(void **state) {
    racer_t racers[2];
    run_at_once(*state, 2, run_sigmoid, racers);
    assert_both_met(racers);
    close_context(state);
    assert_string_equal(log_lines, "[contracts] Sigmoid create\n"
                                   "[contracts] Sigmoid destroy\n");
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
        cmocka_unit_test_setup_teardown(a_kept_instance_is_made_once_per_attributes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(kept_instances_last_as_long_as_the_devices, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_failed_create_is_not_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(launches_share_one_kept_instance_one_at_a_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(kept_instances_compute_concurrently_when_allowed, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
