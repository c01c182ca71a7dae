/* SPDX-License-Identifier: Apache-2.0 */
/* Graph mode with the APU plug-in: its graph pass runs, a graph spans the CPU and two APUs
 * with copy nodes where values change device and gives what eager execution gives, arguments
 * on another device are copied at the call, several threads may call one function, and work
 * on two APUs overlaps. Run
 * with TP_APU_DEVICES=2 and TP_APU_LATENCY_US=200, so that work is still queued when the host
 * moves on. */
#include "../unit/test_support.h"

#include <pthread.h>
#include <stdlib.h>

#include "../unit/device_support.h"
#include "../unit/graph_support.h"

static tp_context_options_t apu_options(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    return options;
}

static int setup(void **state) {
    tp_context_options_t options = apu_options();
    tp_log_set_level(TP_LOG_ERROR);
    return create_context_state(state, &options);
}

/* relu(relu(relu(x))) on APU:0, then relu of that on APU:1. */
static tp_status_t *relu_chain_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                    size_t num_inputs, tp_tensor_t **outputs,
                                    size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *t[3] = {NULL};
    tp_status_t *error = scoped(context, "/device:APU:0", tp_relu, inputs[0], &t[0]);
    if (error == NULL) error = scoped(context, "/device:APU:0", tp_relu, t[0], &t[1]);
    if (error == NULL) error = scoped(context, "/device:APU:0", tp_relu, t[1], &t[2]);
    if (error == NULL) error = scoped(context, "/device:APU:1", tp_relu, t[2], &outputs[0]);
    for (int i = 0; i < 3; i++) tp_tensor_release(t[i]);
    return error;
}

static void check_relu_chain(tp_context_t *context, int relus_expected) {
    const float a[4] = {-2, -0.5f, 0.25f, 3};
    tp_tensor_t *x = vector(context, a, 4), *y;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "relus", relu_chain_body, 1, NULL, &function));
    assert_ok(tp_function_call(function, &x, 1, &y, 1));
    float got[4];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[0] == 0 && got[1] == 0 && got[2] == 0.25f && got[3] == 3);
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:APU:1");
    char text[4096];
    graph_text(function, &x, 1, text, sizeof text);
    assert_int_equal(count_of(text, " = Relu("), relus_expected);
    /* Whatever the pass did, the value moves to APU:1 through one copy node. */
    assert_int_equal(count_of(text, " = Copy("), 1);
    assert_non_null(strstr(text, "on /job:localhost/replica:0/task:0/device:APU:1\nreturn"));
    tp_tensor_release(y);
    tp_tensor_release(x);
    tp_function_destroy(function);
}

/* The APU's pass makes the three Relus on APU:0 one; the one on APU:1 reads another device's
 * value, so it stays. */
static void the_apu_pass_collapses_relu_chains(void **state) {
    check_relu_chain(*state, 2);
}

static void without_plugin_passes_the_chain_stays(void **state) {
    assert_ok(tp_context_set_graph_passes(*state, TP_PASS_PLUGINS, false));
    check_relu_chain(*state, 4);
}

/* d = uniform [64] on the CPU; |d - 0.5| as relu(d - 0.5) on APU:0 plus relu(0.5 - d) on APU:1,
 * added on the CPU. */
static tp_status_t *three_devices(tp_context_t *context, tp_tensor_t *half, tp_tensor_t **out) {
    tp_tensor_t *t[5] = {NULL};
    tp_status_t *error = tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(64), 11, &t[0]);
    if (error == NULL) error = tp_sub(context, t[0], half, &t[1]);
    if (error == NULL) error = tp_sub(context, half, t[0], &t[2]);
    if (error == NULL) error = scoped(context, "/device:APU:0", tp_relu, t[1], &t[3]);
    if (error == NULL) error = scoped(context, "/device:APU:1", tp_relu, t[2], &t[4]);
    if (error == NULL) error = tp_add(context, t[3], t[4], out);
    for (int i = 0; i < 5; i++) tp_tensor_release(t[i]);
    return error;
}

static tp_status_t *three_devices_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                       size_t num_inputs, tp_tensor_t **outputs,
                                       size_t num_outputs, void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    return three_devices(context, user_data, &outputs[0]);
}

static void a_graph_across_the_cpu_and_two_apus(void **state) {
    (void)state;
    char *log = NULL;
    size_t log_size = 0;
    FILE *placement = open_memstream(&log, &log_size);
    tp_context_options_t options = apu_options();
    options.log_device_placement = true;
    options.placement_log = placement;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    const float half_value[1] = {0.5f};
    tp_tensor_t *half = vector(context, half_value, 1), *graph, *eager;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "spread", three_devices_body, 1, half, &function));
    assert_ok(tp_function_call(function, NULL, 0, &graph, 1));
    tp_context_set_log_device_placement(context, false);
    fflush(placement);
    assert_ok(three_devices(context, half, &eager));

    float from_graph[64], from_eager[64], drawn[64];
    tp_tensor_t *d;
    assert_ok(tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(64), 11, &d));
    assert_ok(tp_tensor_read(d, drawn, sizeof drawn));
    assert_ok(tp_tensor_read(graph, from_graph, sizeof from_graph));
    assert_ok(tp_tensor_read(eager, from_eager, sizeof from_eager));
    for (int i = 0; i < 64; i++) {
        float expected = drawn[i] > 0.5f ? drawn[i] - 0.5f : 0.5f - drawn[i];
        assert_true(from_graph[i] == from_eager[i]);
        assert_true(from_graph[i] == expected);
    }
    assert_string_equal(tp_tensor_device(graph), "/job:localhost/replica:0/task:0/device:CPU:0");

    const char *prefix = "/job:localhost/replica:0/task:0/device:";
    char line[256];
    snprintf(line, sizeof line, "relu: (Relu): %sAPU:0\n", prefix);
    assert_non_null(strstr(log, line));
    snprintf(line, sizeof line, "relu_1: (Relu): %sAPU:1\n", prefix);
    assert_non_null(strstr(log, line));
    snprintf(line, sizeof line, "add: (Add): %sCPU:0\n", prefix);
    assert_non_null(strstr(log, line));

    /* Four copies: each difference to its APU, each relu back to the CPU. */
    char text[4096];
    graph_text(function, NULL, 0, text, sizeof text);
    assert_int_equal(count_of(text, " = Copy("), 4);
    snprintf(line, sizeof line, "= Copy(sub:0) -> float32(64,) on %sAPU:0\n", prefix);
    assert_non_null(strstr(text, line));
    snprintf(line, sizeof line, "= Copy(relu_1:0) -> float32(64,) on %sCPU:0\n", prefix);
    assert_non_null(strstr(text, line));

    tp_tensor_release(d);
    tp_tensor_release(graph);
    tp_tensor_release(eager);
    tp_tensor_release(half);
    tp_function_destroy(function);
    tp_context_destroy(context);
    fclose(placement);
    free(log);
}

/* relu on APU:0 of an argument the caller made on the CPU. */
static tp_status_t *apu_relu_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                  size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                  void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    return scoped(context, "/device:APU:0", tp_relu, inputs[0], &outputs[0]);
}

static void an_argument_on_another_device_is_copied_at_the_call(void **state) {
    tp_context_t *context = *state;
    const float a[3] = {-1, 0, 2};
    tp_tensor_t *x = vector(context, a, 3), *y;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "relu", apu_relu_body, 1, NULL, &function));
    assert_ok(tp_function_call(function, &x, 1, &y, 1));
    float got[3];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[0] == 0 && got[1] == 0 && got[2] == 2);
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:APU:0");
    tp_tensor_release(y);
    tp_tensor_release(x);
    tp_function_destroy(function);
}

/* ---- Work on two devices overlaps -------------------------------------------------------------
 * A long chain of Relus on APU:0 is traced first, then one Relu on APU:1. With TP_APU_LATENCY_US
 * each of the chain's nodes takes at least that long on APU:0's queue, so the chain runs for
 * CHAIN times it. An executor that launches without waiting returns while the chain still
 * runs, and APU:1's node, queued behind nothing on its own device, is done long before the
 * chain is: the two devices worked at the same time. One that waited after every node would
 * return with both done. Nothing here waits on a clock. The chain is long enough that the
 * host, were it to wait for a deep input at some depth, would show it here. */
enum { CHAIN = 100 };

static tp_status_t *two_chains_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                    size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                    void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *value = tp_tensor_retain(inputs[0]);
    tp_status_t *error = NULL;
    for (int i = 0; i < CHAIN && error == NULL; i++) {
        tp_tensor_t *next = NULL;
        error = scoped(context, "/device:APU:0", tp_relu, value, &next);
        tp_tensor_release(value);
        value = next;
    }
    if (error == NULL) error = scoped(context, "/device:APU:1", tp_relu, inputs[0], &outputs[1]);
    outputs[0] = value;
    return error;
}

static void graph_work_on_two_devices_overlaps(void **state) {
    tp_context_t *context = *state;
    const char *latency = getenv("TP_APU_LATENCY_US");
    assert_true(latency != NULL && atoi(latency) >= 100); /* what the ordering below rests on */
    /* The APU's pass would fold the chain into one Relu. */
    assert_ok(tp_context_set_graph_passes(context, TP_PASS_PLUGINS, false));
    const float a[4] = {-1, 2, -3, 4};
    tp_tensor_t *x = vector(context, a, 4);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "two_chains", two_chains_body, 2, NULL, &function));
    tp_tensor_t *warm[2];
    assert_ok(tp_function_call(function, &x, 1, warm, 2)); /* traces; runs once */
    for (int i = 0; i < 2; i++) {
        assert_ok(tp_tensor_wait(warm[i]));
        tp_tensor_release(warm[i]);
    }

    tp_tensor_t *y[2];
    assert_ok(tp_function_call(function, &x, 1, y, 2));
    bool chain_ready, single_ready;
    assert_ok(tp_tensor_query(y[0], &chain_ready));
    if (chain_ready) fail_msg("the call returned after APU:0's chain of %d nodes had run", CHAIN);
    assert_ok(tp_tensor_wait(y[1]));
    assert_ok(tp_tensor_query(y[0], &chain_ready));
    if (chain_ready)
        fail_msg("APU:1's node finished only after APU:0's chain: the devices took turns");
    assert_ok(tp_tensor_query(y[1], &single_ready));
    assert_true(single_ready);
    assert_string_equal(tp_tensor_device(y[0]), "/job:localhost/replica:0/task:0/device:APU:0");
    assert_string_equal(tp_tensor_device(y[1]), "/job:localhost/replica:0/task:0/device:APU:1");
    float got[2][4];
    for (int i = 0; i < 2; i++) assert_ok(tp_tensor_read(y[i], got[i], sizeof got[i]));
    for (int i = 0; i < 2; i++)
        assert_true(got[i][0] == 0 && got[i][1] == 2 && got[i][2] == 0 && got[i][3] == 4);
    char text[16384];
    graph_text(function, &x, 1, text, sizeof text);
    assert_int_equal(count_of(text, " = Relu("), CHAIN + 1);
    tp_tensor_release(y[0]);
    tp_tensor_release(y[1]);
    tp_tensor_release(x);
    tp_function_destroy(function);
}

/* Several threads call one function at once: each run has its own memory and results. */
typedef struct {
    tp_function_t *function;
    tp_context_t *context;
    int wrong;
} caller_t;

static void *call_repeatedly(void *arg) {
    caller_t *caller = arg;
    for (int i = 0; i < 20; i++) {
        const float a[4] = {(float)-i, (float)i, 0.5f, -0.5f};
        tp_tensor_t *x, *y = NULL;
        tp_status_t *error = tp_tensor_create(caller->context, TP_FLOAT32, TP_SHAPE(4), a,
                                              sizeof a, &x);
        if (error == NULL) error = tp_function_call(caller->function, &x, 1, &y, 1);
        float got[4] = {-1, -1, -1, -1};
        if (error == NULL) error = tp_tensor_read(y, got, sizeof got);
        if (error != NULL || got[0] != 0 || got[1] != (float)i || got[2] != 0.5f || got[3] != 0)
            caller->wrong++;
        tp_status_free(error);
        tp_tensor_release(y);
        tp_tensor_release(x);
    }
    return NULL;
}

static void calls_from_several_threads(void **state) {
    tp_context_t *context = *state;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "relus", relu_chain_body, 1, NULL, &function));
    enum { THREADS = 4 };
    pthread_t threads[THREADS];
    caller_t callers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        callers[t] = (caller_t){function, context, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, call_repeatedly, &callers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(callers[t].wrong, 0);
    }
    assert_int_equal(tp_function_trace_count(function), 1);
    tp_function_destroy(function);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(the_apu_pass_collapses_relu_chains),
        TEST(without_plugin_passes_the_chain_stays),
        TEST(a_graph_across_the_cpu_and_two_apus),
        TEST(an_argument_on_another_device_is_copied_at_the_call),
        TEST(calls_from_several_threads),
        TEST(graph_work_on_two_devices_overlaps),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
