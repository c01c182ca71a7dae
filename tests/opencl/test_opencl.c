/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL plug-in through the runtime, on PoCL's CPU device offered as GPU:0
 * (TP_OPENCL_DEVICE_TYPES=cpu): what the device says of itself, placement by priority, values
 * against the CPU, a failure found on the device reaching exactly the tensors computed from
 * it, and memory returning to zero. (The program cache is test_opencl_cli.sh's: it takes
 * processes of their own.) */
#include "../unit/test_support.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tp_context_t *make_context_logging(FILE *placement_log) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.placement_log = placement_log;
    options.plugin_path = TP_OPENCL_PLUGIN;
    options.skip_installed_plugins = true;
    tp_context_t *context = NULL;
    assert_ok(tp_context_create(&options, &context));
    return context;
}

static tp_context_t *make_context(void) { return make_context_logging(NULL); }

static tp_tensor_t *ints(tp_context_t *context, const int32_t *values, int64_t count) {
    tp_tensor_t *tensor = NULL;
    assert_ok(tp_tensor_create(context, TP_INT32, TP_SHAPE(count), values,
                               (size_t)count * sizeof *values, &tensor));
    return tensor;
}

static void the_device_says_what_it_is(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    assert_int_equal(tp_physical_device_count(context, "GPU"), 1);
    const tp_physical_device_t *gpu;
    assert_ok(tp_physical_device_find(context, "/physical_device:GPU:0", &gpu));
    assert_non_null(strstr(tp_physical_device_driver_version(gpu), "OpenCL"));
    assert_non_null(strstr(tp_physical_device_driver_version(gpu), ", driver "));
    assert_true(tp_physical_device_compute_units(gpu) > 0);
    assert_true(tp_physical_device_memory_bytes(gpu) > 0);
    assert_true(strlen(tp_physical_device_hardware_name(gpu)) > 0);
    tp_context_destroy(context);
}

/* ---- Placement ---------------------------------------------------------------------------------- */

static void unscoped_ops_run_on_the_gpu_by_priority(void **state) {
    (void)state;
    char *log = NULL;
    size_t log_size = 0;
    FILE *placement_log = open_memstream(&log, &log_size);
    tp_context_t *context = make_context_logging(placement_log);
    tp_context_set_log_device_placement(context, true);
    const float values[] = {-1.5f, 2.0f, -0.0f, 4.25f};
    tp_tensor_t *x = floats(context, TP_SHAPE(4), values), *y = NULL;
    assert_ok(tp_relu(context, x, &y));
    float out[4];
    assert_ok(tp_tensor_read(y, out, sizeof out));
    tp_context_set_log_device_placement(context, false);
    fclose(placement_log);
    assert_string_equal(log, "Executing op Relu in device "
                             "/job:localhost/replica:0/task:0/device:GPU:0\n");
    free(log);
    const float expected[] = {0.0f, 2.0f, -0.0f, 4.25f}; /* -0 passes, as on the CPU */
    assert_memory_equal(out, expected, sizeof out);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_context_destroy(context);
}

/* ---- Values ------------------------------------------------------------------------------------- */

/* Broadcasting, integer wrap, saturating casts and the float32 math, against what the CPU
 * gives for the same inputs. */
static void results_match_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    const float a_values[] = {1.0f, -2.5f, 3.0e38f, -0.0f, 7.0f, 1e-3f};
    const float b_values[] = {0.5f, 4.0f, 10.0f};
    tp_tensor_t *a = NULL, *b = NULL;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 3), a_values, sizeof a_values,
                               &a));
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(3), b_values, sizeof b_values, &b));
    const char *const devices[] = {"/GPU:0", "/CPU:0"};
    float sums[2][6], products[2][6], sigmoids[2][6];
    int32_t casts[2][6];
    for (int d = 0; d < 2; d++) {
        assert_ok(tp_device_push(context, devices[d]));
        tp_tensor_t *sum = NULL, *product = NULL, *sigmoid = NULL, *cast = NULL;
        assert_ok(tp_add(context, a, b, &sum));
        assert_ok(tp_mul(context, a, b, &product));
        assert_ok(tp_sigmoid(context, a, &sigmoid));
        assert_ok(tp_cast(context, product, TP_INT32, &cast));
        assert_ok(tp_device_pop(context));
        assert_ok(tp_tensor_read(sum, sums[d], sizeof sums[d]));
        assert_ok(tp_tensor_read(product, products[d], sizeof products[d]));
        assert_ok(tp_tensor_read(sigmoid, sigmoids[d], sizeof sigmoids[d]));
        assert_ok(tp_tensor_read(cast, casts[d], sizeof casts[d]));
        tp_tensor_release(sum);
        tp_tensor_release(product);
        tp_tensor_release(sigmoid);
        tp_tensor_release(cast);
    }
    assert_memory_equal(sums[0], sums[1], sizeof sums[0]);
    assert_memory_equal(products[0], products[1], sizeof products[0]);
    /* The CPU computes float32 Sigmoid in float through SLEEF (within 2 units in the last
     * place), the GPU in double: equal to a few units, not bit for bit. */
    for (int k = 0; k < 6; k++)
        assert_true(fabsf(sigmoids[0][k] - sigmoids[1][k]) <=
                    4 * FLT_EPSILON * fabsf(sigmoids[1][k]));
    assert_memory_equal(casts[0], casts[1], sizeof casts[0]);
    assert_int_equal(casts[0][2], INT32_MAX); /* 3e38 * 10 is +inf: saturated */
    assert_int_equal(casts[0][1], -10);       /* -2.5 * 4 */

    const int32_t big[] = {INT32_MAX, INT32_MIN, 7};
    tp_tensor_t *i = ints(context, big, 3), *wrapped = NULL, *negated = NULL;
    assert_ok(tp_add(context, i, i, &wrapped));
    assert_ok(tp_neg(context, i, &negated));
    int32_t out[3];
    assert_ok(tp_tensor_read(wrapped, out, sizeof out));
    assert_int_equal(out[0], -2);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 14);
    assert_ok(tp_tensor_read(negated, out, sizeof out));
    assert_int_equal(out[1], INT32_MIN);
    tp_tensor_release(i);
    tp_tensor_release(wrapped);
    tp_tensor_release(negated);
    tp_tensor_release(a);
    tp_tensor_release(b);
    tp_context_destroy(context);
}

/* RandomUniform and RandomStandardNormal on the GPU draw the CPU's Philox stream: uniform values
 * bit for bit, normal values to within the last bits that the device's log, cos and sin may
 * differ in (kernels/random.cl), for lengths that end inside a Philox block and a seed that uses
 * the key's high word. */
static void random_ops_draw_the_cpus_numbers(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    enum { N = 1003 };
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    const int64_t seed = -INT64_C(0x0123456789abcdef);
    for (int normal = 0; normal < 2; normal++) {
        for (int d = 0; d < 2; d++) {
            double values[2][N];
            const char *const devices[] = {"/GPU:0", "/CPU:0"};
            for (int where = 0; where < 2; where++) {
                tp_tensor_t *t = NULL;
                assert_ok(tp_device_push(context, devices[where]));
                tp_status_t *error =
                    normal ? tp_random_normal(context, dtypes[d], TP_SHAPE(N), seed, &t)
                           : tp_random_uniform(context, dtypes[d], TP_SHAPE(N), seed, &t);
                assert_ok(tp_device_pop(context));
                assert_ok(error);
                assert_non_null(strstr(tp_tensor_device(t), devices[where] + 1));
                if (dtypes[d] == TP_FLOAT32) {
                    float raw[N];
                    assert_ok(tp_tensor_read(t, raw, sizeof raw));
                    for (int i = 0; i < N; i++) values[where][i] = raw[i];
                } else {
                    assert_ok(tp_tensor_read(t, values[where], sizeof values[where]));
                }
                tp_tensor_release(t);
            }
            double tolerance = !normal ? 0 : dtypes[d] == TP_FLOAT32 ? 1e-6 : 1e-14;
            for (int i = 0; i < N; i++)
                if (fabs(values[0][i] - values[1][i]) > tolerance * fmax(1, fabs(values[1][i])))
                    fail_msg("%s %s element %d: GPU %.17g, CPU %.17g",
                             normal ? "RandomStandardNormal" : "RandomUniform",
                             tp_dtype_name(dtypes[d]), i, values[0][i], values[1][i]);
        }
    }
    tp_context_destroy(context);
}

/* ---- Failures ----------------------------------------------------------------------------------- */

/* An integer division by zero is found on the device, after the launch has returned: it
 * reaches the quotient and what is computed from it, and nothing else. */
static void a_failure_on_the_device_reaches_exactly_its_tensors(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    const int32_t n[] = {6, 7, 8}, d[] = {3, 0, 2};
    tp_tensor_t *numerator = ints(context, n, 3), *divisor = ints(context, d, 3);
    tp_tensor_t *quotient = NULL, *after = NULL, *beside = NULL;
    int32_t out[3];
    assert_ok(tp_div(context, numerator, divisor, &quotient)); /* queued; not yet known */
    /* The add is queued behind the division, or refused at once with the division's failure
     * if the device has already found it: either way the failure is the add's. */
    tp_status_t *added = tp_add(context, quotient, numerator, &after);
    if (added == NULL) added = tp_tensor_read(after, out, sizeof out);
    assert_error(added, TP_INVALID_ARGUMENT, "integer division by zero");
    assert_ok(tp_mul(context, numerator, divisor, &beside));
    const char *expected = "Div on GPU:0 (";
    tp_status_t *status = tp_tensor_wait(quotient);
    assert_non_null(status);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    assert_non_null(strstr(tp_status_message(status), expected));
    assert_non_null(strstr(tp_status_message(status), "): integer division by zero"));
    tp_status_free(status);
    assert_ok(tp_tensor_read(beside, out, sizeof out));
    assert_int_equal(out[0], 18);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 16);
    /* The device goes on. */
    tp_tensor_t *again = NULL;
    assert_ok(tp_div(context, numerator, numerator, &again));
    assert_ok(tp_tensor_read(again, out, sizeof out));
    assert_int_equal(out[0] + out[1] + out[2], 3);
    tp_tensor_release(again);
    tp_tensor_release(quotient);
    tp_tensor_release(after);
    tp_tensor_release(beside);
    tp_tensor_release(numerator);
    tp_tensor_release(divisor);
    tp_context_destroy(context);
}

/* ---- Memory ------------------------------------------------------------------------------------- */

/* PoCL's device memory is the host's: it grows on demand, like the CPU's, and a tensor larger
 * than one buffer can be is refused with the reason. Everything returns to zero. */
static void memory_grows_and_returns_to_zero(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    const float values[1024] = {0};
    tp_tensor_t *x = floats(context, TP_SHAPE(1024), values), *y = NULL;
    assert_ok(tp_device_push(context, "/GPU:0"));
    assert_ok(tp_neg(context, x, &y));
    assert_ok(tp_device_pop(context));
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    assert_ok(tp_context_memory_stats(context, "/GPU:0", &stats));
    assert_true(stats.bytes_in_use >= 4096); /* y, and x's copy while it is kept */
    assert_true(stats.bytes_reserved < stats.bytes_limit); /* grown, not reserved up front */
    tp_tensor_release(y);
    tp_tensor_release(x);
    assert_ok(tp_context_synchronize(context));
    assert_ok(tp_context_memory_stats(context, "/GPU:0", &stats));
    assert_int_equal(stats.bytes_in_use, 0);

    const tp_physical_device_t *gpu;
    assert_ok(tp_physical_device_find(context, "/physical_device:GPU:0", &gpu));
    tp_tensor_t *huge = NULL, *zero = floats(context, TP_SHAPE(1), values);
    tp_tensor_t *scalar = NULL;
    assert_ok(tp_reshape(context, zero, TP_SCALAR_SHAPE, &scalar));
    assert_ok(tp_device_push(context, "/GPU:0"));
    int64_t elements = (int64_t)(tp_physical_device_memory_bytes(gpu) / 4);
    tp_status_t *status = tp_fill(context, TP_SHAPE(elements), scalar, &huge);
    assert_ok(tp_device_pop(context));
    tp_tensor_release(zero);
    tp_tensor_release(scalar);
    if (status == NULL) status = tp_tensor_wait(huge);
    assert_non_null(status);
    assert_int_equal(tp_status_code(status), TP_RESOURCE_EXHAUSTED);
    tp_status_free(status);
    tp_tensor_release(huge);
    tp_context_destroy(context);
}

int main(void) {
    tp_log_set_level(TP_LOG_WARNING);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_device_says_what_it_is),
        cmocka_unit_test(unscoped_ops_run_on_the_gpu_by_priority),
        cmocka_unit_test(results_match_the_cpu),
        cmocka_unit_test(random_ops_draw_the_cpus_numbers),
        cmocka_unit_test(a_failure_on_the_device_reaches_exactly_its_tensors),
        cmocka_unit_test(memory_grows_and_returns_to_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
