/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL plug-in's fusion pass, on PoCL's CPU device offered as GPU:0: a chain of
 * element-wise ops in a traced function becomes one OpenCLFusedElementwise node in the placed
 * graph, gives the same bits as the ops run one by one (and as the CPU), leaves alone what it
 * must not fuse, and the fused op refuses an expression it cannot compute, by name. */
#include "../unit/graph_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tp_context_t *make_context(bool fusion) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_OPENCL_PLUGIN;
    options.skip_installed_plugins = true;
    tp_context_t *context = NULL;
    assert_ok(tp_context_create(&options, &context));
    if (!fusion) assert_ok(tp_context_set_graph_passes(context, TP_PASS_PLUGINS, false));
    return context;
}

/* Eight ops: Tanh(Sigmoid(Sub(Square(Mul(Relu(Add(x, bias)), x)), bias)) / x) + x, where the
 * bias of shape [C] broadcasts over x's [N, C]. */
static tp_status_t *eight_ops(tp_context_t *context, tp_tensor_t *const *inputs,
                              size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                              void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *x = inputs[0], *bias = inputs[1], *v[8] = {NULL};
    tp_status_t *error = tp_add(context, x, bias, &v[0]);
    if (error == NULL) error = tp_relu(context, v[0], &v[1]);
    if (error == NULL) error = tp_mul(context, v[1], x, &v[2]);
    if (error == NULL) error = tp_square(context, v[2], &v[3]);
    if (error == NULL) error = tp_sub(context, v[3], bias, &v[4]);
    if (error == NULL) error = tp_sigmoid(context, v[4], &v[5]);
    if (error == NULL) error = tp_div(context, v[5], x, &v[6]);
    if (error == NULL) error = tp_tanh(context, v[6], &v[7]);
    if (error == NULL) error = tp_add(context, v[7], x, &outputs[0]);
    for (int k = 0; k < 8; k++) tp_tensor_release(v[k]);
    return error;
}

/* The function's result for x [4, 3] and bias [3], and its graph's text. */
static void run_eight_ops(tp_context_t *context, tp_dtype_t dtype, void *result, size_t size,
                          char *text, size_t text_size) {
    const double x_values[] = {-2.0, -0.5, 0.25, 1.0, 3.5, -7.0, 0.0, 2.0, 1e-3, -1e3, 9.0, 0.5};
    const double bias_values[] = {0.5, -1.0, 2.0};
    float x32[12], bias32[3];
    for (int k = 0; k < 12; k++) x32[k] = (float)x_values[k];
    for (int k = 0; k < 3; k++) bias32[k] = (float)bias_values[k];
    bool wide = dtype == TP_FLOAT64;
    tp_tensor_t *inputs[2] = {NULL, NULL}, *y = NULL;
    assert_ok(tp_tensor_create(context, dtype, TP_SHAPE(4, 3), wide ? (const void *)x_values : x32,
                               wide ? sizeof x_values : sizeof x32, &inputs[0]));
    assert_ok(tp_tensor_create(context, dtype, TP_SHAPE(3),
                               wide ? (const void *)bias_values : bias32,
                               wide ? sizeof bias_values : sizeof bias32, &inputs[1]));
    tp_function_t *function = NULL;
    assert_ok(tp_function_create(context, "eight_ops", eight_ops, 1, NULL, &function));
    assert_ok(tp_device_push(context, "/GPU:0"));
    graph_text(function, inputs, 2, text, text_size);
    assert_ok(tp_function_call(function, inputs, 2, &y, 1));
    assert_ok(tp_device_pop(context));
    assert_ok(tp_tensor_read(y, result, size));
    tp_tensor_release(y);
    tp_function_destroy(function);
    tp_tensor_release(inputs[0]);
    tp_tensor_release(inputs[1]);
}

static void a_chain_becomes_one_node_with_the_same_bits(void **state) {
    (void)state;
    static const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < 2; d++) {
        tp_context_t *fused_context = make_context(true), *plain_context = make_context(false);
        double fused[12], plain[12]; /* room for 12 float64 or 12 float32 */
        size_t size = 12 * (dtypes[d] == TP_FLOAT64 ? sizeof(double) : sizeof(float));
        char fused_text[8192], plain_text[8192];
        run_eight_ops(fused_context, dtypes[d], fused, size, fused_text, sizeof fused_text);
        run_eight_ops(plain_context, dtypes[d], plain, size, plain_text, sizeof plain_text);
        assert_int_equal(count_ops(fused_text, "OpenCLFusedElementwise"), 1);
        assert_non_null(strstr(fused_text,
                               "expression=\"Add(Tanh(Div(Sigmoid(Sub(Square(Mul(Relu(Add(x0, "
                               "x1)), x0)), x1)), x0)), x0)\""));
        assert_non_null(strstr(fused_text, "on /job:localhost/replica:0/task:0/device:GPU:0"));
        assert_int_equal(count_ops(fused_text, "Relu"), 0);
        assert_int_equal(count_ops(fused_text, "Add"), 0);
        assert_int_equal(count_ops(plain_text, "OpenCLFusedElementwise"), 0);
        assert_int_equal(count_ops(plain_text, "Add"), 2);
        assert_memory_equal(fused, plain, size);
        tp_context_destroy(fused_context);
        tp_context_destroy(plain_context);
    }
}

/* Integers wrap inside a fused chain as they do op by op. */
static tp_status_t *integer_chain(tp_context_t *context, tp_tensor_t *const *inputs,
                                  size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                  void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *sum = NULL, *negated = NULL;
    tp_status_t *error = tp_add(context, inputs[0], inputs[0], &sum);
    if (error == NULL) error = tp_neg(context, sum, &negated);
    if (error == NULL) error = tp_mul(context, negated, inputs[0], &outputs[0]);
    tp_tensor_release(sum);
    tp_tensor_release(negated);
    return error;
}

static void integers_wrap_as_unfused(void **state) {
    (void)state;
    const int32_t values[] = {INT32_MAX, INT32_MIN, 7, -3};
    int32_t results[2][4];
    for (int fusion = 0; fusion < 2; fusion++) {
        tp_context_t *context = make_context(fusion == 1);
        tp_tensor_t *x = NULL, *y = NULL;
        assert_ok(tp_tensor_create(context, TP_INT32, TP_SHAPE(4), values, sizeof values, &x));
        tp_function_t *function = NULL;
        assert_ok(tp_function_create(context, "integer_chain", integer_chain, 1, NULL,
                                     &function));
        char text[4096];
        graph_text(function, &x, 1, text, sizeof text);
        assert_int_equal(count_ops(text, "OpenCLFusedElementwise"), fusion);
        assert_ok(tp_function_call(function, &x, 1, &y, 1));
        assert_ok(tp_tensor_read(y, results[fusion], sizeof results[fusion]));
        tp_tensor_release(y);
        tp_tensor_release(x);
        tp_function_destroy(function);
        tp_context_destroy(context);
    }
    assert_memory_equal(results[0], results[1], sizeof results[0]);
    assert_int_equal(results[1][2], -98); /* -(7 + 7) * 7 */
}

/* The sum is also a result of the function, so it must be kept: only the ops after it fuse. */
static tp_status_t *shared_middle(tp_context_t *context, tp_tensor_t *const *inputs,
                                  size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                  void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *relu = NULL;
    tp_status_t *error = tp_add(context, inputs[0], inputs[0], &outputs[0]);
    if (error == NULL) error = tp_relu(context, outputs[0], &relu);
    if (error == NULL) error = tp_exp(context, relu, &outputs[1]);
    tp_tensor_release(relu);
    return error;
}

static void a_value_read_outside_the_chain_is_kept(void **state) {
    (void)state;
    tp_context_t *context = make_context(true);
    const float values[] = {-1.0f, 0.5f};
    tp_tensor_t *x = floats(context, TP_SHAPE(2), values), *y[2] = {NULL, NULL};
    tp_function_t *function = NULL;
    assert_ok(tp_function_create(context, "shared_middle", shared_middle, 2, NULL, &function));
    char text[4096];
    graph_text(function, &x, 1, text, sizeof text);
    assert_int_equal(count_ops(text, "Add"), 1);
    assert_non_null(strstr(text, "expression=\"Exp(Relu(x0))\""));
    assert_ok(tp_function_call(function, &x, 1, y, 2));
    float sum[2], result[2];
    assert_ok(tp_tensor_read(y[0], sum, sizeof sum));
    assert_ok(tp_tensor_read(y[1], result, sizeof result));
    assert_true(sum[0] == -2.0f && sum[1] == 1.0f);
    assert_true(result[0] == 1.0f && result[1] == (float)exp(1.0));
    tp_tensor_release(y[0]);
    tp_tensor_release(y[1]);
    tp_tensor_release(x);
    tp_function_destroy(function);
    tp_context_destroy(context);
}

/* The fused op run by hand: a good expression computes, a bad one is refused by name. */
static void the_fused_op_checks_its_expression(void **state) {
    (void)state;
    tp_context_t *context = make_context(true);
    const float a_values[] = {1.0f, -2.0f, 3.0f, -4.0f}, b_values[] = {10.0f, 20.0f};
    tp_tensor_t *a = NULL, *b = NULL, *y = NULL;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 2), a_values, sizeof a_values,
                               &a));
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2), b_values, sizeof b_values, &b));
    tp_tensor_t *inputs[] = {a, b};
    tp_attr_t attr = TP_ATTR_STRING_VALUE("expression", "Relu( Mul(x0, x1) )");
    assert_ok(tp_device_push(context, "/GPU:0"));
    assert_ok(tp_execute(context, "OpenCLFusedElementwise", inputs, 2, &attr, 1, &y, 1));
    float out[4];
    assert_ok(tp_tensor_read(y, out, sizeof out));
    const float expected[] = {10.0f, 0.0f, 30.0f, 0.0f};
    assert_memory_equal(out, expected, sizeof out);
    tp_tensor_release(y);

    static const struct {
        const char *expression, *why;
    } bad[] = {
        {"Relu(x2)", "input at character 5 is not one of x0 to x1"},
        {"MatMul(x0, x1)", "'MatMul' at character 0 is not an element-wise op"},
        {"Add(x0, x1", "expected ')' at character 10"},
        {"Add(x0, x1) x0", "unexpected text at character 12"},
        {"Relu(x0)", "it does not read input x1"},
        {"x0", "it names no op"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        attr.s = bad[k].expression;
        y = NULL;
        tp_status_t *error =
            tp_execute(context, "OpenCLFusedElementwise", inputs, 2, &attr, 1, &y, 1);
        if (error == NULL) error = tp_tensor_wait(y);
        assert_non_null(error);
        assert_int_equal(tp_status_code(error), TP_INVALID_ARGUMENT);
        assert_non_null(strstr(tp_status_message(error), "OpenCLFusedElementwise on GPU:0"));
        assert_non_null(strstr(tp_status_message(error), bad[k].why));
        tp_status_free(error);
        tp_tensor_release(y);
    }
    assert_ok(tp_device_pop(context));
    tp_tensor_release(a);
    tp_tensor_release(b);
    tp_context_destroy(context);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_chain_becomes_one_node_with_the_same_bits),
        cmocka_unit_test(integers_wrap_as_unfused),
        cmocka_unit_test(a_value_read_outside_the_chain_is_kept),
        cmocka_unit_test(the_fused_op_checks_its_expression),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
