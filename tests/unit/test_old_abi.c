/* SPDX-License-Identifier: Apache-2.0 */
/* A plug-in built against ABI 1.6 (tests/plugins/abi_1_6.c) in a later runtime: it loads, its
 * kernels run the dtypes 1.6 had, and none of them is ever handed one of the dtypes 1.7 added,
 * neither through a kernel without constraints, nor through a dtype attribute its constraints
 * leave open, nor through an op of its own whose type attribute said "any". Its kernels fail,
 * naming the dtype, if they are; so a passing run here means the host kept them away. */
#include "device_support.h"

static int setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_OLD_ABI_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    return create_context_state(state, &options);
}

static int teardown(void **state) { return context_teardown(state); }

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

/* Neg of two elements of `dtype` (`size` bytes at `values`): it runs on `device`, and gives
 * `negated`. */
static void expect_neg(tp_context_t *context, tp_dtype_t dtype, const void *values, size_t size,
                       const char *device, const void *negated) {
    tp_tensor_t *x = tensor_of_bytes(context, dtype, TP_SHAPE(2), values, size), *y;
    assert_ok(tp_neg(context, x, &y));
    unsigned char got[16];
    tp_status_t *status = tp_tensor_read(y, got, size);
    const char *where = tp_tensor_device(y);
    bool on_device = strstr(where, device) != NULL;
    if (!on_device)
        print_error("Neg of %s ran on %s, not %s\n", tp_dtype_name(dtype), where, device);
    tp_tensor_release(x);
    tp_tensor_release(y);
    assert_ok(status);
    assert_true(on_device);
    assert_memory_equal(got, negated, size);
}

/* Its unconstrained Neg runs the 1.6 dtypes on OLD, where its priority puts it. */
static void old_dtypes_run_on_the_old_kernel(void **state) {
    const float f32[] = {1.5f, -2.0f}, f32_negated[] = {-1.5f, 2.0f};
    expect_neg(*state, TP_FLOAT32, f32, sizeof f32, "OLD:0", f32_negated);
    const int64_t i64[] = {7, -9}, i64_negated[] = {-7, 9};
    expect_neg(*state, TP_INT64, i64, sizeof i64, "OLD:0", i64_negated);
}

/* Neg of float16 and of int8: the old kernel is not a candidate, the CPU runs them. */
static void new_dtypes_pass_the_old_kernel_by(void **state) {
    const uint16_t halves[] = {0x3e00 /* 1.5 */, 0xb400 /* -0.25 */};
    const uint16_t negated[] = {0xbe00, 0x3400};
    expect_neg(*state, TP_FLOAT16, halves, sizeof halves, "CPU:0", negated);
    const int8_t bytes[] = {3, -128}, bytes_negated[] = {-3, -128}; /* wraps, as NumPy's does */
    expect_neg(*state, TP_INT8, bytes, sizeof bytes, "CPU:0", bytes_negated);
}

/* Asked for OLD by a scope, a new dtype is an error naming the op and the device, not a call
 * of the old kernel. */
static void a_scope_on_the_old_device_refuses_new_dtypes(void **state) {
    tp_context_t *context = *state;
    const uint16_t halves[] = {0x4000 /* 2 */};
    tp_tensor_t *x = tensor_of_bytes(context, TP_BFLOAT16, TP_SHAPE(1), halves, sizeof halves);
    tp_tensor_t *y = NULL;
    assert_ok(tp_device_push(context, "/OLD:0"));
    assert_error(tp_neg(context, x, &y), TP_INVALID_ARGUMENT,
                 "for op Neg: no kernel for Neg with T=bfloat16 on OLD devices; device types "
                 "with a kernel: CPU");
    assert_null(y);
    /* The 1.6 dtypes still run there. */
    const float one[] = {1.0f};
    tp_tensor_t *f = tensor_of_bytes(context, TP_FLOAT32, TP_SHAPE(1), one, sizeof one);
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
    tp_tensor_t *x = tensor_of_bytes(context, TP_FLOAT32, TP_SHAPE(2), values, sizeof values);
    tp_tensor_t *y;
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
    assert_error(tp_cast(context, x, TP_UINT16, &y), TP_INVALID_ARGUMENT,
                 "no kernel for Cast with SrcT=float32, DstT=uint16 on OLD devices");
    assert_null(y);
    assert_ok(tp_device_pop(context));
    tp_tensor_release(x);
}

/* The plug-in's own op said "any dtype" in 1.6: that meant the dtypes of 1.6, so the op itself
 * refuses a later one, naming it, before its shape function or kernel could see it. */
static void an_old_op_allows_only_old_dtypes(void **state) {
    tp_context_t *context = *state;
    const int32_t values[] = {5, -6};
    tp_tensor_t *x = tensor_of_bytes(context, TP_INT32, TP_SHAPE(2), values, sizeof values), *y;
    assert_ok(tp_execute(context, "OldTwice", &x, 1, NULL, 0, &y, 1));
    expect_device(y, "OLD:0");
    int32_t got[2];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[0] == 10 && got[1] == -12);
    tp_tensor_release(y);
    tp_tensor_release(x);
    const int16_t shorts[] = {1, 2};
    x = tensor_of_bytes(context, TP_INT16, TP_SHAPE(2), shorts, sizeof shorts);
    y = NULL;
    assert_error(tp_execute(context, "OldTwice", &x, 1, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                 "int16");
    assert_null(y);
    tp_tensor_release(x);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        TEST(the_old_plugin_loads),
        TEST(old_dtypes_run_on_the_old_kernel),
        TEST(new_dtypes_pass_the_old_kernel_by),
        TEST(a_scope_on_the_old_device_refuses_new_dtypes),
        TEST(an_open_attribute_keeps_new_dtypes_away),
        TEST(an_old_op_allows_only_old_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
