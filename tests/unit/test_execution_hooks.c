/* SPDX-License-Identifier: Apache-2.0 */
/* launch/execution_hooks.h: eager execution tells registered observers of each call and lets a
 * registered interceptor take calls instead of running them, without knowing who they are. */
#include <stdatomic.h>
#include <string.h>

#include "base/status.h"
#include "cpu_fixture.h"
#include "launch/execution_hooks.h"
#include "tensor/tensor.h"
#include "test_support.h"

/* Each hook is process-wide, so each acts only while its test switches it on. */
static _Thread_local bool watching, failing, intercepting;
static _Thread_local int observed;
static _Thread_local char observed_op[32];
static _Thread_local tp_tensor_t *observed_output;

static bool watch_active(void) { return watching; }

static tp_status_t *watch(tp_context_t *context, const tp_kernel_context_t *call,
                          tp_tensor_t *const *inputs, size_t num_inputs,
                          tp_tensor_t *const *outputs) {
    (void)context, (void)inputs, (void)num_inputs;
    observed++;
    snprintf(observed_op, sizeof observed_op, "%s", call->op->def->name);
    observed_output = outputs[0];
    if (failing) return tp_status_make(TP_RESOURCE_EXHAUSTED, "watcher: out of host memory");
    return NULL;
}

static const tp_execution_observer_t watcher = {watch_active, watch};

static bool intercept_wants(const tp_context_t *context) {
    (void)context;
    return intercepting;
}

/* Answers every call with a float32 7 of the call's output shape, without running a kernel. */
static tp_status_t *intercept_take(tp_context_t *context, tp_kernel_context_t *call,
                                   tp_tensor_t *const *inputs, size_t num_inputs,
                                   tp_tensor_t **outputs) {
    (void)inputs, (void)num_inputs;
    float seven = 7.0f;
    return tp_tensor_create(context, TP_FLOAT32, call->output_shapes[0], &seven, sizeof seven,
                            &outputs[0]);
}

static const tp_execution_interceptor_t interceptor = {intercept_wants, intercept_take};

static tp_tensor_t *scalar(tp_context_t *context, float value) {
    tp_tensor_t *t;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &value, sizeof value, &t));
    return t;
}

static float value_of(tp_tensor_t *t) {
    float v;
    assert_ok(tp_tensor_read(t, &v, sizeof v));
    return v;
}

static void observers_see_each_call_with_its_outputs(void **state) {
    tp_context_t *context = *state;
    assert_true(tp_execution_add_observer(&watcher));
    assert_true(tp_execution_add_observer(&watcher)); /* once only */
    tp_tensor_t *x = scalar(context, 2.0f), *y;
    observed = 0;
    assert_ok(tp_add(context, x, x, &y)); /* not watching: not told */
    tp_tensor_release(y);
    assert_int_equal(observed, 0);
    watching = true;
    assert_ok(tp_add(context, x, x, &y));
    watching = false;
    assert_int_equal(observed, 1); /* added twice, told once */
    assert_string_equal(observed_op, "Add");
    assert_ptr_equal(observed_output, y);
    assert_true(value_of(y) == 4.0f);
    tp_tensor_release(y);
    tp_tensor_release(x);
}

static void an_observer_that_fails_leaves_no_output(void **state) {
    tp_context_t *context = *state;
    assert_true(tp_execution_add_observer(&watcher));
    tp_tensor_t *x = scalar(context, 2.0f), *y = x;
    watching = failing = true;
    assert_error(tp_add(context, x, x, &y), TP_RESOURCE_EXHAUSTED, "watcher: out of host memory");
    watching = failing = false;
    assert_null(y); /* released by the executor, not leaked: the teardown counts the bytes */
    tp_tensor_release(x);
}

static void an_interceptor_takes_calls_instead_of_running_them(void **state) {
    tp_context_t *context = *state;
    assert_true(tp_execution_add_interceptor(&interceptor));
    assert_true(tp_execution_add_observer(&watcher));
    tp_tensor_t *x = scalar(context, 2.0f), *y;
    assert_null(tp_execution_interceptor_for(context));
    intercepting = watching = true;
    observed = 0;
    assert_ptr_equal(tp_execution_interceptor_for(context), &interceptor);
    assert_ok(tp_add(context, x, x, &y));
    intercepting = watching = false;
    assert_true(value_of(y) == 7.0f); /* the interceptor's, not 2 + 2 */
    assert_int_equal(observed, 1);    /* observers see intercepted calls too */
    assert_ptr_equal(observed_output, y);
    tp_tensor_release(y);
    /* Resolution still comes first: a bad call fails as it would in eager mode. */
    intercepting = true;
    assert_error(tp_execute(context, "NoSuchOp", &x, 1, NULL, 0, &y, 1), TP_NOT_FOUND,
                 "unknown op 'NoSuchOp'");
    intercepting = false;
    tp_tensor_release(x);
}

/* Filling the observer table: the table is small and fixed (the core has two hooks), so a
 * fifth distinct observer is refused rather than written past the end. Runs last: what it adds
 * stays, inactive, for the life of the process. */
static bool never(void) { return false; }
static const tp_execution_observer_t fillers[4] = {
    {never, watch}, {never, watch}, {never, watch}, {never, watch}};

static void the_table_refuses_a_hook_past_its_size(void **state) {
    (void)state;
    bool all_added = true;
    for (int i = 0; i < 4; i++) all_added &= tp_execution_add_observer(&fillers[i]);
    /* `watcher` took a slot earlier, so at least the last filler did not fit. */
    assert_false(all_added);
    assert_true(tp_execution_add_observer(&watcher)); /* present already: still fine */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(observers_see_each_call_with_its_outputs,
                                        cpu_context_setup, cpu_context_teardown),
        cmocka_unit_test_setup_teardown(an_observer_that_fails_leaves_no_output,
                                        cpu_context_setup, cpu_context_teardown),
        cmocka_unit_test_setup_teardown(an_interceptor_takes_calls_instead_of_running_them,
                                        cpu_context_setup, cpu_context_teardown),
        cmocka_unit_test_setup_teardown(the_table_refuses_a_hook_past_its_size,
                                        cpu_context_setup, cpu_context_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
