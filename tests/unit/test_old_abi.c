/* SPDX-License-Identifier: Apache-2.0 */
/* A plug-in built against ABI 1.6 (tests/plugins/abi_1_6.c) in a runtime of 1.7: it loads, its
 * kernels run the dtypes 1.6 had, and none of them is ever handed one of the dtypes 1.7 added,
 * neither through a kernel without constraints, nor through a dtype attribute its constraints
 * leave open, nor through an op of its own whose type attribute said "any". Its kernels fail,
 * naming the dtype, if they are; so a passing run here means the host kept them away. */
#include "device_support.h"

#include "tensorplug/float16.h"

static int setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_OLD_ABI_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    return create_context_state(state, &options);
}

static int teardown(void **state) { return context_teardown(state); }

static tp_tensor_t *tensor(tp_context_t *context, tp_dtype_t dtype, const void *data,
                           size_t size, int64_t count) {
    tp_tensor_t *t;
    assert_ok(tp_tensor_create(context, dtype, TP_SHAPE(count), data, size, &t));
    return t;
}

static void expect_device(const tp_tensor_t *t, const char *type) {
    if (strstr(tp_tensor_device(t), type) == NULL) {
        print_error("the tensor is on %s, not %s\n", tp_tensor_device(t), type);
        fail();
    }
}

/* The plug-in loaded although it is older, and says so. */
static void the_old_plugin_loads(void **state) {
    tp_context_t *context = *state;
    const tp_device_registry_t *registry = &context->registry;
    const tp_plugin_record_t *old = NULL;
    for (size_t i = 0; i < registry->num_plugins; i++)
        if (strcmp(registry->plugins[i].record->name, "abi_1_6") == 0)
            old = registry->plugins[i].record;
    assert_non_null(old);
    assert_int_equal(old->abi_minor, 6);
    bool found = false;
    for (size_t i = 0; i < registry->num_physical_devices; i++)
        found |= strcmp(registry->physical_devices[i]->def->type, "OLD") == 0;
    assert_true(found);
}

/* Its unconstrained Neg runs the 1.6 dtypes on OLD, where its priority puts it. */
static void old_dtypes_run_on_the_old_kernel(void **state) {
    tp_context_t *context = *state;
    const float f32[] = {1.5f, -2.0f};
    const int64_t i64[] = {7, -9};
    tp_tensor_t *x = tensor(context, TP_FLOAT32, f32, sizeof f32, 2), *y;
    assert_ok(tp_neg(context, x, &y));
    expect_device(y, "OLD:0");
    float got[2];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[0] == -1.5f && got[1] == 2.0f);
    tp_tensor_release(x);
    tp_tensor_release(y);
    x = tensor(context, TP_INT64, i64, sizeof i64, 2);
    assert_ok(tp_neg(context, x, &y));
    expect_device(y, "OLD:0");
    int64_t got64[2];
    assert_ok(tp_tensor_read(y, got64, sizeof got64));
    assert_true(got64[0] == -7 && got64[1] == 9);
    tp_tensor_release(x);
    tp_tensor_release(y);
}

/* Neg of float16 and of int8: the old kernel is not a candidate, the CPU runs them. */
static void new_dtypes_pass_the_old_kernel_by(void **state) {
    tp_context_t *context = *state;
    const uint16_t halves[] = {tp_float16_from_float(1.5f), tp_float16_from_float(-0.25f)};
    const int8_t bytes[] = {3, -128};
    tp_tensor_t *x = tensor(context, TP_FLOAT16, halves, sizeof halves, 2), *y;
    assert_ok(tp_neg(context, x, &y));
    expect_device(y, "CPU:0");
    uint16_t got[2];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(tp_float16_to_float(got[0]) == -1.5f && tp_float16_to_float(got[1]) == 0.25f);
    tp_tensor_release(x);
    tp_tensor_release(y);
    x = tensor(context, TP_INT8, bytes, sizeof bytes, 2);
    assert_ok(tp_neg(context, x, &y));
    expect_device(y, "CPU:0");
    int8_t got8[2];
    assert_ok(tp_tensor_read(y, got8, sizeof got8));
    assert_int_equal(got8[0], -3);
    assert_int_equal(got8[1], -128); /* wraps, as NumPy's does */
    tp_tensor_release(x);
    tp_tensor_release(y);
}

/* Asked for OLD by a scope, a new dtype is an error naming the op and the device, not a call
 * of the old kernel. */
static void a_scope_on_the_old_device_refuses_new_dtypes(void **state) {
    tp_context_t *context = *state;
    const uint16_t halves[] = {tp_bfloat16_from_float(2.0f)};
    tp_tensor_t *x = tensor(context, TP_BFLOAT16, halves, sizeof halves, 1), *y = NULL;
    assert_ok(tp_device_push(context, "/OLD:0"));
    assert_error(tp_neg(context, x, &y), TP_INVALID_ARGUMENT, "Neg");
    assert_null(y);
    /* The 1.6 dtypes still run there. */
    const float one[] = {1.0f};
    tp_tensor_t *f = tensor(context, TP_FLOAT32, one, sizeof one, 1);
    assert_ok(tp_neg(context, f, &y));
    expect_device(y, "OLD:0");
    assert_ok(tp_device_pop(context));
    tp_tensor_release(y);
    tp_tensor_release(f);
    tp_tensor_release(x);
}

/* Cast constrains SrcT only: a cast from float32 to int32 runs on OLD, one to int8 or float16
 * (DstT left open) does not. */
static void an_open_attribute_keeps_new_dtypes_away(void **state) {
    tp_context_t *context = *state;
    const float values[] = {3.0f, -4.0f};
    tp_tensor_t *x = tensor(context, TP_FLOAT32, values, sizeof values, 2), *y;
    assert_ok(tp_cast(context, x, TP_INT32, &y));
    expect_device(y, "OLD:0");
    tp_tensor_release(y);
    const tp_dtype_t later[] = {TP_INT8, TP_FLOAT16, TP_UINT64};
    for (size_t i = 0; i < 3; i++) {
        assert_ok(tp_cast(context, x, later[i], &y));
        expect_device(y, "CPU:0");
        tp_tensor_release(y);
    }
    assert_ok(tp_device_push(context, "/OLD:0"));
    y = NULL;
    assert_error(tp_cast(context, x, TP_UINT16, &y), TP_INVALID_ARGUMENT, "Cast");
    assert_null(y);
    assert_ok(tp_device_pop(context));
    tp_tensor_release(x);
}

/* The plug-in's own op said "any dtype" in 1.6: that meant the dtypes of 1.6, so the op itself
 * refuses a later one, naming it, before its shape function or kernel could see it. */
static void an_old_op_allows_only_old_dtypes(void **state) {
    tp_context_t *context = *state;
    const int32_t values[] = {5, -6};
    tp_tensor_t *x = tensor(context, TP_INT32, values, sizeof values, 2), *y;
    assert_ok(tp_execute(context, "OldTwice", &x, 1, NULL, 0, &y, 1));
    expect_device(y, "OLD:0");
    int32_t got[2];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[0] == 10 && got[1] == -12);
    tp_tensor_release(y);
    tp_tensor_release(x);
    const int16_t shorts[] = {1, 2};
    x = tensor(context, TP_INT16, shorts, sizeof shorts, 2);
    y = NULL;
    assert_error(tp_execute(context, "OldTwice", &x, 1, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                 "int16");
    assert_null(y);
    tp_tensor_release(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_old_plugin_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(old_dtypes_run_on_the_old_kernel, setup, teardown),
        cmocka_unit_test_setup_teardown(new_dtypes_pass_the_old_kernel_by, setup, teardown),
        cmocka_unit_test_setup_teardown(a_scope_on_the_old_device_refuses_new_dtypes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_open_attribute_keeps_new_dtypes_away, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_old_op_allows_only_old_dtypes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
