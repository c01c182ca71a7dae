/* SPDX-License-Identifier: Apache-2.0 */
/* Graph passes: each standard pass changes the graph as documented and not the results, each
 * can be switched off, folding leaves random ops alone, and a plug-in's pass edits the graph
 * through the host graph functions (add, rewire, remove), with its mistakes reported. */
#include "test_support.h"

#include <math.h>
#include <stdlib.h>

#include "context/context.h"
#include "cpu_fixture.h"
#include "graph_support.h"
#include "tensor/tensor.h"

/* Releases the tensors a body made along the way and passes its status on. */
static tp_status_t *done(tp_status_t *error, tp_tensor_t **made, size_t count) {
    for (size_t i = 0; i < count; i++) tp_tensor_release(made[i]);
    return error;
}

/* (x * x + x * x) + relu(identity(x * c1 + c2 * c2)) with c1, c2 captured, and a Tanh no
 * result depends on. Pruning drops the Tanh, elimination merges the two x * x, folding
 * computes c2 * c2, identity removal bypasses the Identity. */
typedef struct {
    tp_tensor_t *c1, *c2;
} constants_t;

static tp_status_t *redundant_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                   size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                   void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    const constants_t *c = user_data;
    tp_tensor_t *x = inputs[0];
    tp_tensor_t *t[9] = {NULL};
    tp_status_t *error = tp_mul(context, x, x, &t[0]);
    if (error == NULL) error = tp_mul(context, x, x, &t[1]);
    if (error == NULL) error = tp_add(context, t[0], t[1], &t[2]);
    if (error == NULL) error = tp_mul(context, x, c->c1, &t[3]);
    if (error == NULL) error = tp_mul(context, c->c2, c->c2, &t[4]);
    if (error == NULL) error = tp_add(context, t[3], t[4], &t[5]);
    if (error == NULL) error = tp_identity(context, t[5], &t[6]);
    if (error == NULL) error = tp_relu(context, t[6], &t[7]);
    if (error == NULL) error = tp_tanh(context, x, &t[8]); /* read by no one */
    if (error == NULL) error = tp_add(context, t[2], t[7], &outputs[0]);
    return done(error, t, 9);
}

/* Traces redundant_body with the passes `passes` on, checks the result, and leaves the graph
 * text in `text`. */
static void trace_with(tp_context_t *context, uint32_t passes, char *text, size_t size) {
    assert_ok(tp_context_set_graph_passes(context, TP_PASS_ALL, false));
    assert_ok(tp_context_set_graph_passes(context, passes, true));
    assert_int_equal(tp_context_graph_passes(context), passes);
    const float one[1] = {1}, minus_three[1] = {-3}, a[3] = {1, -2, 0.5f};
    constants_t c = {vector(context, one, 1), vector(context, minus_three, 1)};
    tp_tensor_t *x = vector(context, a, 3), *y;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "redundant", redundant_body, 1, &c, &function));
    assert_ok(tp_function_call(function, &x, 1, &y, 1));
    float got[3];
    read_floats(y, got, 3);
    /* 2x^2 + relu(x + 9) */
    assert_true(got[0] == 2 + 10 && got[1] == 8 + 7 && got[2] == 0.5f + 9.5f);
    graph_text(function, &x, 1, text, size);
    assert_int_equal(tp_function_trace_count(function), 1);
    tp_tensor_release(y);
    tp_tensor_release(x);
    tp_tensor_release(c.c1);
    tp_tensor_release(c.c2);
    tp_function_destroy(function);
}

static void with_no_pass_the_graph_is_as_traced(void **state) {
    char text[4096];
    trace_with(*state, 0, text, sizeof text);
    assert_int_equal(count_ops(text, "Tanh"), 1);
    assert_int_equal(count_ops(text, "Mul"), 4);
    assert_int_equal(count_ops(text, "Identity"), 1);
    assert_null(strstr(text, "Constant("));
}

static void pruning_drops_what_no_result_reads(void **state) {
    char text[4096];
    trace_with(*state, TP_PASS_PRUNING, text, sizeof text);
    assert_int_equal(count_ops(text, "Tanh"), 0);
    assert_int_equal(count_ops(text, "Mul"), 4);
    assert_non_null(strstr(text, "argument_0 = Argument(0)"));
}

static void elimination_merges_equal_nodes(void **state) {
    char text[4096];
    trace_with(*state, TP_PASS_COMMON_SUBEXPRESSION, text, sizeof text);
    assert_int_equal(count_ops(text, "Mul"), 3);
    assert_non_null(strstr(text, "add = Add(mul:0, mul:0)"));
    assert_int_equal(count_ops(text, "Tanh"), 1); /* elimination prunes nothing else */
}

static void folding_computes_constant_nodes_once(void **state) {
    char text[4096];
    trace_with(*state, TP_PASS_CONSTANT_FOLDING, text, sizeof text);
    assert_int_equal(count_ops(text, "Mul"), 3);
    assert_non_null(strstr(text, "mul_3 = Constant(folded Mul) -> float32(1,) on "
                                 "/job:localhost/replica:0/task:0/device:CPU:0\n"));
    assert_non_null(strstr(text, "add_1 = Add(mul_2:0, mul_3:0)"));
    /* c2, read only by the folded node, is gone; c1 is still read. */
    assert_int_equal(count_ops(text, "Captured"), 1);
}

static void identity_removal_bypasses_identities(void **state) {
    char text[4096];
    trace_with(*state, TP_PASS_IDENTITY_REMOVAL, text, sizeof text);
    assert_int_equal(count_ops(text, "Identity"), 0);
    assert_non_null(strstr(text, "relu = Relu(add_1:0)"));
}

static void all_passes_together(void **state) {
    char text[4096];
    trace_with(*state, TP_PASS_ALL, text, sizeof text);
    assert_string_equal(
        text,
        "argument_0 = Argument(0) -> float32(3,) on (the argument's)\n"
        "mul = Mul(argument_0:0, argument_0:0) T=float32 -> float32(3,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "add = Add(mul:0, mul:0) T=float32 -> float32(3,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "captured = Captured() -> float32(1,) on /job:localhost/replica:0/task:0/device:CPU:0\n"
        "mul_2 = Mul(argument_0:0, captured:0) T=float32 -> float32(3,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "mul_3 = Constant(folded Mul) -> float32(1,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "add_1 = Add(mul_2:0, mul_3:0) T=float32 -> float32(3,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "relu = Relu(add_1:0) T=float32 -> float32(3,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "add_2 = Add(add:0, relu:0) T=float32 -> float32(3,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "return add_2:0\n");
}

/* random + (c + c): the sum is folded, the random op is not, and it draws anew at each call. */
static tp_status_t *random_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    tp_tensor_t *c = user_data, *t[2] = {NULL};
    tp_status_t *error = tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(4), 7, &t[0]);
    if (error == NULL) error = tp_add(context, c, c, &t[1]);
    if (error == NULL) error = tp_add(context, t[0], t[1], &outputs[0]);
    return done(error, t, 2);
}

static void folding_leaves_random_ops_alone(void **state) {
    tp_context_t *context = *state;
    const float ten[1] = {10};
    tp_tensor_t *c = vector(context, ten, 1), *first, *second;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "noisy", random_body, 1, c, &function));
    assert_ok(tp_function_call(function, NULL, 0, &first, 1));
    assert_ok(tp_function_call(function, NULL, 0, &second, 1));
    char text[2048];
    graph_text(function, NULL, 0, text, sizeof text);
    assert_int_equal(count_ops(text, "RandomUniform"), 1);
    assert_non_null(strstr(text, "add = Constant(folded Add)"));
    float a[4], b[4];
    read_floats(first, a, 4);
    read_floats(second, b, 4);
    bool differ = false;
    for (int i = 0; i < 4; i++) {
        assert_true(a[i] >= 20 && a[i] < 21 && b[i] >= 20 && b[i] < 21);
        differ = differ || a[i] != b[i];
    }
    assert_true(differ);
    tp_tensor_release(first);
    tp_tensor_release(second);
    tp_tensor_release(c);
    tp_function_destroy(function);
}

/* Two equal random ops are two draws: elimination must not merge them. */
static tp_status_t *two_draws_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                   size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                   void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *t[2] = {NULL};
    tp_status_t *error = tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(2), 0, &t[0]);
    if (error == NULL) error = tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(2), 0, &t[1]);
    if (error == NULL) error = tp_sub(context, t[0], t[1], &outputs[0]);
    return done(error, t, 2);
}

static void elimination_leaves_random_ops_alone(void **state) {
    tp_function_t *function;
    assert_ok(tp_function_create(*state, "draws", two_draws_body, 1, NULL, &function));
    char text[2048];
    graph_text(function, NULL, 0, text, sizeof text);
    assert_int_equal(count_ops(text, "RandomUniform"), 2);
    assert_non_null(strstr(text, "sub = Sub(randomuniform:0, randomuniform_1:0)"));
    tp_function_destroy(function);
}

static void unknown_pass_bits_are_refused(void **state) {
    tp_context_t *context = *state;
    assert_error(tp_context_set_graph_passes(context, TP_PASS_PRUNING | (1u << 20), false),
                 TP_INVALID_ARGUMENT, "tp_context_set_graph_passes: unknown pass bits 0x100000");
    assert_int_equal(tp_context_graph_passes(context), TP_PASS_ALL);
}

/* ---- The plug-in pass, with the test accelerator ------------------------------------------ */

static int acc_setup(void **state) {
    tp_log_set_level(TP_LOG_ERROR); /* ops without an ACC kernel fall back, as expected */
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_KERNEL_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    return create_context_state(state, &options);
}

static int acc_teardown(void **state) {
    unsetenv("TP_TEST_ACC_PASS");
    return context_teardown(state);
}

/* relu(relu(x)) on ACC:0; the first input, unused, is there to be of another shape. */
static tp_status_t *relu_twice_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                    size_t num_inputs, tp_tensor_t **outputs,
                                    size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *inner = NULL;
    tp_status_t *error = scoped(context, "/device:ACC:0", tp_relu, inputs[1], &inner);
    if (error == NULL) error = scoped(context, "/device:ACC:0", tp_relu, inner, &outputs[0]);
    tp_tensor_release(inner);
    return error;
}

/* Traces relu_twice_body with TP_TEST_ACC_PASS=`mode`: NULL and the graph's text in `text` on
 * success, else the error. */
static tp_status_t *trace_acc(tp_context_t *context, const char *mode, char *text, size_t size) {
    setenv("TP_TEST_ACC_PASS", mode, 1);
    const float a[2] = {-1, 2}, m[3] = {0, 0, 0};
    tp_tensor_t *inputs[2] = {vector(context, m, 3), vector(context, a, 2)}, *y = NULL;
    tp_function_t *function;
    assert_ok(tp_function_create(context, mode, relu_twice_body, 1, NULL, &function));
    tp_status_t *error = tp_function_call(function, inputs, 2, &y, 1);
    if (error == NULL) {
        float got[2];
        read_floats(y, got, 2);
        assert_true(got[0] == 0 && got[1] == 2);
        assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:ACC:0");
        graph_text(function, inputs, 2, text, size);
    }
    tp_tensor_release(y);
    tp_tensor_release(inputs[0]);
    tp_tensor_release(inputs[1]);
    tp_function_destroy(function);
    return error;
}

static void a_plugin_pass_adds_and_removes_nodes(void **state) {
    char text[2048];
    assert_ok(trace_acc(*state, "rebuild", text, sizeof text));
    /* Both relus were replaced by new ones, which read what the old ones read. */
    assert_int_equal(count_ops(text, "Relu"), 2);
    assert_non_null(strstr(text, "relu_2 = Relu(argument_1:0)"));
    assert_non_null(strstr(text, "relu_3 = Relu(relu_2:0)"));
    assert_non_null(strstr(text, "return relu_3:0\n"));
}

static void a_plugin_pass_rewires_an_input(void **state) {
    char text[2048];
    assert_ok(trace_acc(*state, "rewire", text, sizeof text));
    assert_int_equal(count_ops(text, "Relu"), 1);
    assert_non_null(strstr(text, "relu_1 = Relu(argument_1:0)"));
}

static void a_plugin_pass_can_be_switched_off(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_context_set_graph_passes(context, TP_PASS_PLUGINS, false));
    char text[2048];
    assert_ok(trace_acc(context, "rewire", text, sizeof text));
    assert_int_equal(count_ops(text, "Relu"), 2);
}

static void a_plugin_pass_that_goes_wrong_fails_the_trace(void **state) {
    tp_context_t *context = *state;
    char text[2048];
    assert_error(trace_acc(context, "fail", text, sizeof text), TP_INTERNAL,
                 "graph pass 'acc_test_pass' of plug-in 'accelerator': the test pass was told "
                 "to fail");
    assert_error(trace_acc(context, "cycle", text, sizeof text), TP_INVALID_ARGUMENT,
                 "after graph pass 'acc_test_pass' of plug-in 'accelerator': the graph has a "
                 "cycle through node relu");
    assert_error(trace_acc(context, "mismatch", text, sizeof text), TP_INVALID_ARGUMENT,
                 "graph pass 'acc_test_pass' of plug-in 'accelerator': argument_0:0, "
                 "float32(3,), cannot be read in place of relu:0, float32(2,): a pass may only "
                 "rewire to a value of the same dtype and shape");
    assert_error(trace_acc(context, "bad_attr", text, sizeof text), TP_NOT_FOUND,
                 "graph pass 'acc_test_pass' of plug-in 'accelerator': relu has no attribute "
                 "'alpha'");
    assert_error(trace_acc(context, "remove_read", text, sizeof text), TP_FAILED_PRECONDITION,
                 "graph pass 'acc_test_pass' of plug-in 'accelerator': relu cannot be removed: "
                 "it is still read");
}

/* relu on ACC:0 of a captured tensor on ACC:0, so that folding may run it. */
static tp_status_t *captured_relu_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                       size_t num_inputs, tp_tensor_t **outputs,
                                       size_t num_outputs, void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    return scoped(context, "/device:ACC:0", tp_relu, user_data, &outputs[0]);
}

/* The accelerator's Relu reports a NaN only at the next synchronize: folding must wait for it
 * and leave the node to run, so that every call reports the failure, not just the first. */
static void folding_does_not_keep_a_value_the_device_failed(void **state) {
    tp_context_t *context = *state;
    const float bad[2] = {NAN, 2};
    tp_tensor_t *on_cpu = vector(context, bad, 2), *on_acc, *y = NULL;
    assert_ok(tp_context_devices_ready(context));
    assert_ok(tp_tensor_copy_to_device(
        on_cpu, tp_device_registry_find(&context->registry, "ACC", 0), &on_acc));
    tp_function_t *function;
    assert_ok(tp_function_create(context, "nan", captured_relu_body, 1, on_acc, &function));
    for (int call = 0; call < 3; call++) {
        tp_status_t *error = tp_function_call(function, NULL, 0, &y, 1);
        float got[2];
        if (error == NULL) error = tp_tensor_read(y, got, sizeof got);
        assert_error(error, TP_INTERNAL, "Relu on ACC met a NaN at element 0");
        tp_tensor_release(y);
        y = NULL;
    }
    char text[1024];
    graph_text(function, NULL, 0, text, sizeof text);
    assert_int_equal(count_ops(text, "Relu"), 1);
    tp_function_destroy(function);
    tp_tensor_release(on_acc);
    tp_tensor_release(on_cpu);
}

/* c + c on the CPU after an accelerator's Relu failed: the accelerator has no events, so the
 * runtime learns the failure at the launch (plugin.h), and it stays that op's. Folding on the
 * CPU neither reports it nor is spoiled by it, and nothing is left for a later wait. */
static tp_status_t *double_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    return tp_add(context, user_data, user_data, &outputs[0]);
}

static void folding_leaves_other_devices_errors_alone(void **state) {
    tp_context_t *context = *state;
    const float bad[2] = {NAN, 2};
    tp_tensor_t *c = vector(context, bad + 1, 1), *x = vector(context, bad, 2), *failed = NULL, *y;
    assert_error(scoped(context, "/device:ACC:0", tp_relu, x, &failed), TP_INTERNAL,
                 "Relu on /job:localhost/replica:0/task:0/device:ACC:0: Relu on ACC met a NaN "
                 "at element 0");
    assert_null(failed);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "double", double_body, 1, c, &function));
    assert_ok(tp_function_call(function, NULL, 0, &y, 1));
    float got[1];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[0] == 4);
    char text[1024];
    graph_text(function, NULL, 0, text, sizeof text);
    assert_non_null(strstr(text, "add = Constant(folded Add)"));
    assert_ok(tp_context_synchronize(context));
    tp_function_destroy(function);
    tp_tensor_release(y);
    tp_tensor_release(x);
    tp_tensor_release(c);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
#define ACC_TEST(name) cmocka_unit_test_setup_teardown(name, acc_setup, acc_teardown)
    const struct CMUnitTest tests[] = {
        TEST(with_no_pass_the_graph_is_as_traced),
        TEST(pruning_drops_what_no_result_reads),
        TEST(elimination_merges_equal_nodes),
        TEST(folding_computes_constant_nodes_once),
        TEST(identity_removal_bypasses_identities),
        TEST(all_passes_together),
        TEST(folding_leaves_random_ops_alone),
        TEST(elimination_leaves_random_ops_alone),
        TEST(unknown_pass_bits_are_refused),
        ACC_TEST(a_plugin_pass_adds_and_removes_nodes),
        ACC_TEST(a_plugin_pass_rewires_an_input),
        ACC_TEST(a_plugin_pass_can_be_switched_off),
        ACC_TEST(a_plugin_pass_that_goes_wrong_fails_the_trace),
        ACC_TEST(folding_does_not_keep_a_value_the_device_failed),
        ACC_TEST(folding_leaves_other_devices_errors_alone),
    };
#undef TEST
#undef ACC_TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
