/* SPDX-License-Identifier: Apache-2.0 */
/* Traced functions: tracing once per signature, graph results equal to eager ones, device
 * scopes and placement over the graph, errors in graph wording, the text dump. */
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>

#include "cpu_fixture.h"
#include "graph_support.h"

/* relu(x * x + bias) - x, with `bias` captured from outside. */
static tp_status_t *computation(tp_context_t *context, tp_tensor_t *x, tp_tensor_t *bias,
                                tp_tensor_t **out) {
    tp_tensor_t *square = NULL, *shifted = NULL, *rectified = NULL;
    tp_status_t *error = tp_mul(context, x, x, &square);
    if (error == NULL) error = tp_add(context, square, bias, &shifted);
    if (error == NULL) error = tp_relu(context, shifted, &rectified);
    if (error == NULL) error = tp_sub(context, rectified, x, out);
    tp_tensor_release(square);
    tp_tensor_release(shifted);
    tp_tensor_release(rectified);
    return error;
}

static tp_status_t *body(tp_context_t *context, tp_tensor_t *const *inputs, size_t num_inputs,
                         tp_tensor_t **outputs, size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    return computation(context, inputs[0], user_data, &outputs[0]);
}

static void traced_once_per_signature_and_equal_to_eager(void **state) {
    tp_context_t *context = *state;
    const float bias_values[1] = {-2.0f};
    tp_tensor_t *bias;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, bias_values,
                               sizeof bias_values, &bias));
    tp_function_t *function;
    assert_ok(tp_function_create(context, "f", body, 1, bias, &function));

    const float a[4] = {-3, -1, 0.5f, 2}, b[4] = {4, 1, -2, 0}, c[3] = {1, 2, 3};
    tp_tensor_t *xa = vector(context, a, 4), *xb = vector(context, b, 4),
                *xc = vector(context, c, 3);
    tp_tensor_t *ya, *yb, *yc, *eager;
    assert_ok(tp_function_call(function, &xa, 1, &ya, 1));
    assert_ok(tp_function_call(function, &xb, 1, &yb, 1));
    assert_int_equal(tp_function_trace_count(function), 1);
    assert_ok(tp_function_call(function, &xc, 1, &yc, 1)); /* a new shape traces again */
    assert_int_equal(tp_function_trace_count(function), 2);

    float graph_values[4], eager_values[4];
    read_floats(ya, graph_values, 4);
    assert_ok(computation(context, xa, bias, &eager));
    read_floats(eager, eager_values, 4);
    for (int i = 0; i < 4; i++) assert_true(graph_values[i] == eager_values[i]);
    /* relu(9 - 2) + 3 = 10, relu(1 - 2) + 1 = 1, relu(0.25 - 2) - 0.5, relu(4 - 2) - 2 = 0 */
    assert_true(graph_values[0] == 10 && graph_values[1] == 1 && graph_values[2] == -0.5f &&
                graph_values[3] == 0);
    read_floats(yb, graph_values, 4);
    assert_true(graph_values[0] == 10 && graph_values[1] == -1 && graph_values[2] == 4 &&
                graph_values[3] == 0);
    float three[3];
    read_floats(yc, three, 3);
    assert_true(three[0] == -1 && three[1] == 0 && three[2] == 4);
    assert_string_equal(tp_tensor_device(ya), "/job:localhost/replica:0/task:0/device:CPU:0");

    tp_tensor_t *many[2] = {xa, xb}, *none = NULL;
    assert_error(tp_function_call(function, many, 1, &none, 2), TP_INVALID_ARGUMENT,
                 "function 'f' returns 1 tensors, but 2 outputs were given");
    tp_tensor_t *list[] = {xa, yb, yc, ya, xb, xc, eager, bias};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) tp_tensor_release(list[i]);
    tp_function_destroy(function);
}

static void the_graph_reads_as_text(void **state) {
    tp_context_t *context = *state;
    const float bias_values[1] = {-2.0f}, a[2] = {1, 2};
    tp_tensor_t *bias, *x = vector(context, a, 2);
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, bias_values,
                               sizeof bias_values, &bias));
    tp_function_t *function;
    assert_ok(tp_function_create(context, "f", body, 1, bias, &function));
    char text[2048] = {0};
    FILE *out = fmemopen(text, sizeof text - 1, "w");
    assert_ok(tp_function_write_graph(function, &x, 1, TP_GRAPH_TEXT, out));
    fclose(out);
    assert_string_equal(
        text,
        "argument_0 = Argument(0) -> float32(2,) on (the argument's)\n"
        "mul = Mul(argument_0:0, argument_0:0) T=float32 -> float32(2,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "captured = Captured() -> float32() on /job:localhost/replica:0/task:0/device:CPU:0\n"
        "add = Add(mul:0, captured:0) T=float32 -> float32(2,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "relu = Relu(add:0) T=float32 -> float32(2,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "sub = Sub(relu:0, argument_0:0) T=float32 -> float32(2,) on "
        "/job:localhost/replica:0/task:0/device:CPU:0\n"
        "return sub:0\n");
    out = fmemopen(text, sizeof text - 1, "w");
    assert_ok(tp_function_write_graph(function, &x, 1, TP_GRAPH_DOT, out));
    fclose(out);
    assert_non_null(strstr(text, "digraph \"f\" {"));
    assert_non_null(strstr(text, "\"relu\" [shape=box, style=filled, fillcolor="));
    assert_non_null(strstr(text, "\"add\" -> \"relu\" [label=\"float32(2,)\"];"));
    assert_int_equal(tp_function_trace_count(function), 1);
    tp_tensor_release(x);
    tp_tensor_release(bias);
    tp_function_destroy(function);
}

/* The body scopes relu to /device:CPU:1, a logical device; with placement logging, each node
 * prints its device once, when the graph is placed. */
static tp_status_t *scoped_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *negated;
    tp_status_t *error = tp_neg(context, inputs[0], &negated);
    if (error != NULL) return error;
    error = tp_device_push(context, "/device:CPU:1");
    if (error == NULL) error = tp_relu(context, negated, &outputs[0]);
    tp_status_free(tp_device_pop(context));
    tp_tensor_release(negated);
    return error;
}

static void scopes_in_the_body_place_nodes(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_context_set_logical_devices(context, "CPU:0",
                                             (uint64_t[]){64u << 20, 64u << 20}, 2));
    char log[1024] = {0};
    FILE *out = fmemopen(log, sizeof log - 1, "w");
    context->placement_log = out;
    tp_context_set_log_device_placement(context, true);
    const float a[3] = {1, -2, 3};
    tp_tensor_t *x = vector(context, a, 3), *y;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "scoped", scoped_body, 1, NULL, &function));
    assert_ok(tp_function_call(function, &x, 1, &y, 1));
    tp_context_set_log_device_placement(context, false);
    fclose(out);
    context->placement_log = NULL;
    assert_string_equal(log, "neg: (Neg): /job:localhost/replica:0/task:0/device:CPU:0\n"
                             "relu: (Relu): /job:localhost/replica:0/task:0/device:CPU:1\n");
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:CPU:1");
    float got[3];
    read_floats(y, got, 3);
    assert_true(got[0] == 0 && got[1] == 2 && got[2] == 0);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_function_destroy(function);
}

static tp_status_t *gpu_body(tp_context_t *context, tp_tensor_t *const *inputs,
                             size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                             void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    tp_status_t *error = tp_device_push(context, user_data);
    if (error != NULL) return error;
    error = tp_relu(context, inputs[0], &outputs[0]);
    tp_status_free(tp_device_pop(context));
    return error;
}

static tp_status_t *reading_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                 size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                 void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    float value[2];
    tp_status_t *error = tp_tensor_read(inputs[0], value, sizeof value);
    return error != NULL ? error : tp_relu(context, inputs[0], &outputs[0]);
}

static void errors_name_the_node_and_the_function(void **state) {
    tp_context_t *context = *state;
    const float a[2] = {1, -1};
    tp_tensor_t *x = vector(context, a, 2), *y = NULL;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "on_gpu", gpu_body, 1, "/device:GPU:0", &function));
    assert_error(tp_function_call(function, &x, 1, &y, 1), TP_INVALID_ARGUMENT,
                 "Cannot assign a device for operation relu: Could not satisfy explicit device "
                 "specification '/device:GPU:0' because no devices matching that specification "
                 "are registered in this process");
    assert_null(y);
    assert_int_equal(tp_function_trace_count(function), 0); /* nothing kept */
    tp_function_destroy(function);

    assert_ok(tp_function_create(context, "reads", reading_body, 1, NULL, &function));
    assert_error(tp_function_call(function, &x, 1, &y, 1), TP_FAILED_PRECONDITION,
                 "tracing function 'reads': tp_tensor_read: the tensor is symbolic, a value of "
                 "a function being traced; it has values only when the function is called");
    tp_function_destroy(function);
    tp_tensor_release(x);
}

/* With the test accelerator, which has a Relu kernel only: Tanh cannot go there. */
static void a_device_without_the_kernel_is_a_graph_error(void **state) {
    (void)state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_KERNEL_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    const float a[2] = {1, -1};
    tp_tensor_t *x = vector(context, a, 2), *y = NULL;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "acc", gpu_body, 1, "/device:ACC:0", &function));
    assert_ok(tp_function_call(function, &x, 1, &y, 1)); /* Relu has an ACC kernel */
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:ACC:0");
    float got[2];
    read_floats(y, got, 2);
    assert_true(got[0] == 1 && got[1] == 0);
    tp_tensor_release(y);
    tp_function_destroy(function);
    tp_tensor_release(x);
    tp_context_destroy(context);
}

/* ---- What a body may return --------------------------------------------------------------
 * A body hands over one reference per output. Each way of producing an output is traced, run
 * twice (the trace, then the kept graph) and its memory must come back (the fixture checks). */

/* Returns its argument itself, and relu of it. */
static tp_status_t *returns_argument(tp_context_t *context, tp_tensor_t *const *inputs,
                                     size_t num_inputs, tp_tensor_t **outputs,
                                     size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    outputs[0] = tp_tensor_retain(inputs[0]);
    return tp_relu(context, inputs[0], &outputs[1]);
}

/* Returns one value twice, with a reference for each. */
static tp_status_t *returns_one_value_twice(tp_context_t *context, tp_tensor_t *const *inputs,
                                            size_t num_inputs, tp_tensor_t **outputs,
                                            size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_status_t *error = tp_neg(context, inputs[0], &outputs[0]);
    if (error == NULL) outputs[1] = tp_tensor_retain(outputs[0]);
    return error;
}

/* Returns the captured tensor `user_data` unchanged. */
static tp_status_t *returns_capture(tp_context_t *context, tp_tensor_t *const *inputs,
                                    size_t num_inputs, tp_tensor_t **outputs,
                                    size_t num_outputs, void *user_data) {
    (void)context;
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    outputs[0] = tp_tensor_retain(user_data);
    return NULL;
}

/* Returns a constant made in the body. */
static tp_status_t *returns_constant(tp_context_t *context, tp_tensor_t *const *inputs,
                                     size_t num_inputs, tp_tensor_t **outputs,
                                     size_t num_outputs, void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    const float seven[2] = {7, -7};
    return tp_constant(context, TP_FLOAT32, TP_SHAPE(2), seven, sizeof seven, &outputs[0]);
}

/* Returns its argument without a reference of its own, a hand-over of nothing. */
static tp_status_t *returns_argument_unretained(tp_context_t *context,
                                                tp_tensor_t *const *inputs, size_t num_inputs,
                                                tp_tensor_t **outputs, size_t num_outputs,
                                                void *user_data) {
    (void)context;
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    outputs[0] = inputs[0];
    return NULL;
}

/* Returns one value twice with a single reference. */
static tp_status_t *returns_one_reference_twice(tp_context_t *context,
                                                tp_tensor_t *const *inputs, size_t num_inputs,
                                                tp_tensor_t **outputs, size_t num_outputs,
                                                void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_status_t *error = tp_neg(context, inputs[0], &outputs[0]);
    outputs[1] = outputs[0];
    return error;
}

/* Releases its result before returning it. */
static tp_status_t *returns_a_released_value(tp_context_t *context, tp_tensor_t *const *inputs,
                                             size_t num_inputs, tp_tensor_t **outputs,
                                             size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_status_t *error = tp_relu(context, inputs[0], &outputs[0]);
    tp_tensor_release(outputs[0]);
    return error;
}

/* Calls `function` on x twice and checks its outputs hold `expected` (count floats each). */
static void call_twice_expecting(tp_function_t *function, tp_tensor_t *x, size_t num_outputs,
                                 const float *expected, size_t count) {
    for (int call = 0; call < 2; call++) {
        tp_tensor_t *outputs[2] = {NULL, NULL};
        assert_ok(tp_function_call(function, &x, 1, outputs, num_outputs));
        for (size_t o = 0; o < num_outputs; o++) {
            float got[4];
            read_floats(outputs[o], got, count);
            for (size_t i = 0; i < count; i++) assert_true(got[i] == expected[o * count + i]);
        }
        for (size_t o = 0; o < num_outputs; o++) tp_tensor_release(outputs[o]);
    }
    assert_int_equal(tp_function_trace_count(function), 1);
}

static void a_body_returns_its_argument(void **state) {
    tp_context_t *context = *state;
    const float a[2] = {-1, 2};
    tp_tensor_t *x = vector(context, a, 2);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "same", returns_argument, 2, NULL, &function));
    call_twice_expecting(function, x, 2, (const float[]){-1, 2, 0, 2}, 2);
    tp_function_destroy(function);
    float still[2];
    read_floats(x, still, 2); /* the caller's tensor is intact after the function is gone */
    assert_true(still[0] == -1 && still[1] == 2);
    tp_tensor_release(x);
}

static void a_body_returns_one_value_twice(void **state) {
    tp_context_t *context = *state;
    const float a[2] = {-1, 2};
    tp_tensor_t *x = vector(context, a, 2);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "twice", returns_one_value_twice, 2, NULL, &function));
    call_twice_expecting(function, x, 2, (const float[]){1, -2, 1, -2}, 2);
    tp_function_destroy(function);
    tp_tensor_release(x);
}

static void a_body_returns_a_captured_tensor(void **state) {
    tp_context_t *context = *state;
    const float a[2] = {-1, 2}, b[2] = {5, 6};
    tp_tensor_t *x = vector(context, a, 2), *captured = vector(context, b, 2);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "captures", returns_capture, 1, captured, &function));
    call_twice_expecting(function, x, 1, b, 2);
    tp_function_destroy(function);
    float still[2];
    read_floats(captured, still, 2);
    assert_true(still[0] == 5 && still[1] == 6);
    tp_tensor_release(captured);
    tp_tensor_release(x);
}

static void a_body_returns_a_constant(void **state) {
    tp_context_t *context = *state;
    const float a[2] = {-1, 2};
    tp_tensor_t *x = vector(context, a, 2);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "constant", returns_constant, 1, NULL, &function));
    call_twice_expecting(function, x, 1, (const float[]){7, -7}, 2);
    tp_function_destroy(function);
    tp_tensor_release(x);
}

static void a_body_that_hands_over_no_reference_is_refused(void **state) {
    tp_context_t *context = *state;
    const float a[2] = {-1, 2};
    tp_tensor_t *x = vector(context, a, 2), *y = NULL;
    tp_function_t *function;
    assert_ok(tp_function_create(context, "borrows", returns_argument_unretained, 1, NULL,
                                 &function));
    assert_error(tp_function_call(function, &x, 1, &y, 1), TP_INVALID_ARGUMENT,
                 "tracing function 'borrows': output 0 is argument 0 returned without a "
                 "reference of its own; return tp_tensor_retain(argument)");
    assert_null(y);
    assert_int_equal(tp_function_trace_count(function), 0);
    tp_function_destroy(function);
    float still[2];
    read_floats(x, still, 2);
    assert_true(still[0] == -1 && still[1] == 2);

    tp_tensor_t *pair[2] = {NULL, NULL};
    assert_ok(tp_function_create(context, "twice", returns_one_reference_twice, 2, NULL,
                                 &function));
    assert_error(tp_function_call(function, &x, 1, pair, 2), TP_INVALID_ARGUMENT,
                 "tracing function 'twice': output 1 is output 0 again without a reference of "
                 "its own; return tp_tensor_retain(output 0)");
    assert_null(pair[0]);
    tp_function_destroy(function);

    assert_ok(tp_function_create(context, "released", returns_a_released_value, 1, NULL,
                                 &function));
    assert_error(tp_function_call(function, &x, 1, &y, 1), TP_INVALID_ARGUMENT,
                 "tracing function 'released': output 0 (relu:0) was released by the body "
                 "before it was returned");
    assert_null(y);
    tp_function_destroy(function);
    tp_tensor_release(x);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(traced_once_per_signature_and_equal_to_eager),
        TEST(the_graph_reads_as_text),
        TEST(scopes_in_the_body_place_nodes),
        TEST(errors_name_the_node_and_the_function),
        cmocka_unit_test(a_device_without_the_kernel_is_a_graph_error),
        TEST(a_body_returns_its_argument),
        TEST(a_body_returns_one_value_twice),
        TEST(a_body_returns_a_captured_tensor),
        TEST(a_body_returns_a_constant),
        TEST(a_body_that_hands_over_no_reference_is_refused),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
