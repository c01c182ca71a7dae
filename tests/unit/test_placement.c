/* SPDX-License-Identifier: Apache-2.0 */
/* Placement as the reference documents describe it, against the test plug-in "accelerator":
 * two ACC devices (priority 100) with a float32 Relu kernel and nothing else. */
#include "test_support.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    tp_context_t *context;
    char *log_text;
    size_t log_length;
    FILE *log;
} fixture_t;

static char warnings[4096];

static void capture_warning(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    if (level < TP_LOG_WARNING) return;
    size_t used = strlen(warnings);
    snprintf(warnings + used, sizeof warnings - used, "%s\n", line);
}

/* A context with the plug-ins of `plugin_path`, its placement log kept. */
static fixture_t *make_fixture_with(const char *plugin_path, bool soft, bool strict) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->log = open_memstream(&f->log_text, &f->log_length);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = plugin_path;
    options.skip_installed_plugins = true;
    options.log_device_placement = true;
    options.placement_log = f->log;
    options.soft_device_placement = soft;
    options.strict_placement = strict;
    assert_ok(tp_context_create(&options, &f->context));
    warnings[0] = '\0';
    tp_log_set_callback(capture_warning, NULL);
    return f;
}

static fixture_t *make_fixture(bool soft, bool strict) {
    return make_fixture_with(TP_KERNEL_PLUGIN_DIR, soft, strict);
}

/* Every placement line logged so far. */
static const char *placement_lines(fixture_t *f) {
    fflush(f->log);
    return f->log_text;
}

static void free_fixture(fixture_t *f) {
    tp_log_set_callback(NULL, NULL);
    tp_context_destroy(f->context);
    fclose(f->log);
    free(f->log_text);
    free(f);
}

static tp_tensor_t *vector(fixture_t *f, const float *values, int64_t count) {
    tp_tensor_t *t;
    assert_ok(tp_tensor_create(f->context, TP_FLOAT32, TP_SHAPE(count), values,
                               (size_t)count * sizeof(float), &t));
    return t;
}

static const float sample[5] = {-1.5f, 2.0f, -0.25f, 3.0f, 0.0f};
static const float relu_of_sample[5] = {0.0f, 2.0f, 0.0f, 3.0f, 0.0f};

static void assert_values(tp_tensor_t *t, const float *expected, size_t count) {
    float got[16];
    assert_ok(tp_tensor_read(t, got, count * sizeof(float)));
    for (size_t i = 0; i < count; i++) assert_true(fabsf(got[i] - expected[i]) < 1e-6f);
}

static void plugin_devices_win_by_priority(void **state) {
    (void)state;
    fixture_t *f = make_fixture(false, false);
    tp_tensor_t *a = vector(f, sample, 5), *b;
    assert_ok(tp_relu(f->context, a, &b));
    assert_string_equal(tp_tensor_device(b), "/job:localhost/replica:0/task:0/device:ACC:0");
    assert_string_equal(placement_lines(f),
                        "Executing op Relu in device /job:localhost/replica:0/task:0/device:ACC:0\n");
    assert_values(b, relu_of_sample, 5);
    /* The input stays where it was; the copy on ACC:0 was the op's own. */
    assert_string_equal(tp_tensor_device(a), "/job:localhost/replica:0/task:0/device:CPU:0");
    assert_int_equal(tp_context_fallback_count(f->context, NULL), 0);
    tp_tensor_release(a);
    tp_tensor_release(b);
    free_fixture(f);
}

static void scopes_choose_the_device(void **state) {
    (void)state;
    fixture_t *f = make_fixture(false, false);
    tp_tensor_t *a = vector(f, sample, 5), *b, *c, *d, *e;
    assert_ok(tp_device_push(f->context, "/CPU:0"));
    assert_ok(tp_relu(f->context, a, &b));
    assert_ok(tp_device_push(f->context, "/acc:1")); /* nested, and case-insensitive */
    assert_ok(tp_relu(f->context, a, &c));
    assert_ok(tp_device_pop(f->context));
    assert_ok(tp_relu(f->context, a, &d)); /* back in the /CPU:0 scope */
    assert_ok(tp_device_pop(f->context));
    assert_ok(tp_device_push(f->context, "/device:ACC"));
    assert_ok(tp_relu(f->context, a, &e)); /* a partial name: the first ACC */
    assert_ok(tp_device_pop(f->context));
    assert_string_equal(placement_lines(f),
                        "Executing op Relu in device /job:localhost/replica:0/task:0/device:CPU:0\n"
                        "Executing op Relu in device /job:localhost/replica:0/task:0/device:ACC:1\n"
                        "Executing op Relu in device /job:localhost/replica:0/task:0/device:CPU:0\n"
                        "Executing op Relu in device /job:localhost/replica:0/task:0/device:ACC:0\n");
    assert_values(b, relu_of_sample, 5);
    assert_values(c, relu_of_sample, 5);
    assert_error(tp_device_pop(f->context), TP_FAILED_PRECONDITION, "no device scope");
    assert_error(tp_device_push(f->context, "/device:ACC:x"), TP_INVALID_ARGUMENT,
                 "'/device:ACC:x'");
    tp_tensor_t *tensors[] = {a, b, c, d, e};
    for (size_t i = 0; i < 5; i++) tp_tensor_release(tensors[i]);
    free_fixture(f);
}

static void unknown_devices_are_errors_unless_soft(void **state) {
    (void)state;
    fixture_t *f = make_fixture(false, false);
    tp_tensor_t *a = vector(f, sample, 5), *b = NULL;
    assert_ok(tp_device_push(f->context, "/device:GPU:2"));
    assert_error(tp_relu(f->context, a, &b), TP_NOT_FOUND,
                 "Error copying tensor to device: /job:localhost/replica:0/task:0/device:GPU:2. "
                 "/job:localhost/replica:0/task:0/device:GPU:2 unknown device.");
    assert_null(b);
    tp_context_set_soft_device_placement(f->context, true);
    assert_ok(tp_relu(f->context, a, &b));
    assert_ok(tp_device_pop(f->context));
    assert_string_equal(tp_tensor_device(b), "/job:localhost/replica:0/task:0/device:ACC:0");
    assert_int_equal(tp_context_fallback_count(f->context, "Relu"), 1);
    assert_non_null(strstr(warnings, "op Relu cannot run on /job:localhost/replica:0/task:0/"
                                     "device:GPU:2; it falls back to "
                                     "/job:localhost/replica:0/task:0/device:ACC:0"));
    tp_tensor_release(a);
    tp_tensor_release(b);
    free_fixture(f);
}

static void a_device_without_the_kernel_is_named(void **state) {
    (void)state;
    fixture_t *f = make_fixture(false, false);
    tp_tensor_t *a = vector(f, sample, 5), *b = NULL;
    assert_ok(tp_device_push(f->context, "/device:ACC:0"));
    assert_error(tp_sigmoid(f->context, a, &b), TP_INVALID_ARGUMENT,
                 "Could not satisfy device specification '/device:ACC:0' for op Sigmoid: no "
                 "kernel for Sigmoid with T=float32 on ACC devices; device types with a kernel: "
                 "CPU");
    assert_ok(tp_device_pop(f->context));
    assert_null(b);
    tp_tensor_release(a);
    free_fixture(f);
}

static void fallbacks_are_counted_logged_once_and_never_silent(void **state) {
    (void)state;
    fixture_t *f = make_fixture(true, false);
    tp_tensor_t *a = vector(f, sample, 5), *b, *c;
    /* No scope: ACC is the preferred device type, and it has no Sigmoid. */
    assert_ok(tp_sigmoid(f->context, a, &b));
    assert_ok(tp_device_push(f->context, "/device:ACC:0"));
    assert_ok(tp_sigmoid(f->context, b, &c));
    assert_ok(tp_device_pop(f->context));
    assert_string_equal(tp_tensor_device(c), "/job:localhost/replica:0/task:0/device:CPU:0");
    assert_int_equal(tp_context_fallback_count(f->context, "Sigmoid"), 2);
    assert_int_equal(tp_context_fallback_count(f->context, "Relu"), 0);
    tp_tensor_release(b);
    tp_tensor_release(c);
    assert_ok(tp_sigmoid(f->context, a, &b)); /* a third time: counted, not logged again */
    tp_tensor_release(b);
    assert_int_equal(tp_context_fallback_count(f->context, NULL), 3);
    assert_non_null(strstr(warnings, "op Sigmoid cannot run on ACC devices; it falls back to "
                                     "/job:localhost/replica:0/task:0/device:CPU:0\n"));
    assert_non_null(strstr(warnings, "op Sigmoid cannot run on "
                                     "/job:localhost/replica:0/task:0/device:ACC:0; it falls "
                                     "back to /job:localhost/replica:0/task:0/device:CPU:0\n"));
    int lines = 0;
    for (const char *p = warnings; (p = strchr(p, '\n')) != NULL; p++) lines++;
    assert_int_equal(lines, 2);
    tp_tensor_release(a);
    free_fixture(f);
}

static void strict_placement_refuses_fallbacks(void **state) {
    (void)state;
    fixture_t *f = make_fixture(true, true);
    tp_tensor_t *a = vector(f, sample, 5), *b = NULL;
    assert_error(tp_sigmoid(f->context, a, &b), TP_FAILED_PRECONDITION,
                 "strict placement: op Sigmoid would fall back from ACC devices to "
                 "/job:localhost/replica:0/task:0/device:CPU:0");
    assert_ok(tp_relu(f->context, a, &b)); /* no fallback: fine */
    tp_tensor_release(b);
    assert_ok(tp_device_push(f->context, "/cpu:0"));
    assert_ok(tp_sigmoid(f->context, a, &b)); /* asked for: not a fallback */
    assert_ok(tp_device_pop(f->context));
    tp_tensor_release(b);
    tp_tensor_release(a);
    free_fixture(f);
}

/* Strict mode covers a fallback from a scope too: soft placement would move the op off the
 * device the scope asked for (fallbacks_are_counted_logged_once_and_never_silent shows it
 * does without strict), and strict refuses that, leaving nothing run, counted or logged. */
static void strict_placement_refuses_a_scoped_fallback(void **state) {
    (void)state;
    fixture_t *f = make_fixture(true, true);
    tp_tensor_t *a = vector(f, sample, 5), *b = NULL;
    assert_ok(tp_device_push(f->context, "/device:ACC:0")); /* ACC has no Sigmoid */
    assert_error(tp_sigmoid(f->context, a, &b), TP_FAILED_PRECONDITION,
                 "strict placement: op Sigmoid would fall back from "
                 "/job:localhost/replica:0/task:0/device:ACC:0 to "
                 "/job:localhost/replica:0/task:0/device:CPU:0");
    assert_ok(tp_device_pop(f->context));
    assert_null(b);
    assert_ok(tp_device_push(f->context, "/device:GPU:2")); /* no such device */
    assert_error(tp_relu(f->context, a, &b), TP_FAILED_PRECONDITION,
                 "strict placement: op Relu would fall back from "
                 "/job:localhost/replica:0/task:0/device:GPU:2 to "
                 "/job:localhost/replica:0/task:0/device:ACC:0");
    assert_ok(tp_device_pop(f->context));
    assert_null(b);
    assert_int_equal(tp_context_fallback_count(f->context, NULL), 0);
    assert_string_equal(warnings, "");
    assert_true(placement_lines(f) == NULL || placement_lines(f)[0] == '\0');
    tp_tensor_release(a);
    free_fixture(f);
}

/* Two plug-in device types with a Relu kernel: TURBO (priority 200) wins over ACC (100)
 * whichever plug-in is found first, a scope still chooses ACC, and an op neither can run falls
 * back from TURBO devices, the preferred type. */
static void priority_decides_between_plugin_device_types(void **state) {
    (void)state;
    const char *paths[2] = {TP_KERNEL_PLUGIN_DIR ":" TP_TURBO_PLUGIN_DIR,
                            TP_TURBO_PLUGIN_DIR ":" TP_KERNEL_PLUGIN_DIR};
    const char *listings[2] = {
        "PhysicalDevice(name='/physical_device:ACC:0', device_type='ACC')\n"
        "PhysicalDevice(name='/physical_device:ACC:1', device_type='ACC')\n"
        "PhysicalDevice(name='/physical_device:TURBO:0', device_type='TURBO')\n",
        "PhysicalDevice(name='/physical_device:TURBO:0', device_type='TURBO')\n"
        "PhysicalDevice(name='/physical_device:ACC:0', device_type='ACC')\n"
        "PhysicalDevice(name='/physical_device:ACC:1', device_type='ACC')\n"};
    for (int order = 0; order < 2; order++) {
        fixture_t *f = make_fixture_with(paths[order], true, false);
        /* The plug-ins were found in the order of their folders. */
        char listing[1024] = {0};
        FILE *out = fmemopen(listing, sizeof listing - 1, "w");
        assert_ok(tp_list_physical_devices(f->context, NULL, out));
        fclose(out);
        assert_non_null(strstr(listing, listings[order]));

        tp_tensor_t *a = vector(f, sample, 5), *b, *c, *d;
        assert_ok(tp_relu(f->context, a, &b));
        assert_string_equal(tp_tensor_device(b),
                            "/job:localhost/replica:0/task:0/device:TURBO:0");
        assert_values(b, relu_of_sample, 5);
        assert_ok(tp_device_push(f->context, "/device:ACC"));
        assert_ok(tp_relu(f->context, a, &c));
        assert_ok(tp_device_pop(f->context));
        assert_string_equal(tp_tensor_device(c), "/job:localhost/replica:0/task:0/device:ACC:0");
        assert_int_equal(tp_context_fallback_count(f->context, NULL), 0);
        assert_ok(tp_sigmoid(f->context, a, &d));
        assert_string_equal(tp_tensor_device(d), "/job:localhost/replica:0/task:0/device:CPU:0");
        assert_string_equal(warnings, "op Sigmoid cannot run on TURBO devices; it falls back to "
                                      "/job:localhost/replica:0/task:0/device:CPU:0\n");
        tp_tensor_t *tensors[] = {a, b, c, d};
        for (size_t i = 0; i < 4; i++) tp_tensor_release(tensors[i]);
        free_fixture(f);
    }
}

/* Two plug-in device types of equal priority with a Relu kernel, ACC and CTR (both 100): the
 * type of the plug-in found first wins, in TP_PLUGIN_PATH's order of folders. */
static void the_first_found_of_equal_priorities_wins(void **state) {
    (void)state;
    const char *paths[2] = {TP_KERNEL_PLUGIN_DIR ":" TP_CONTRACT_PLUGIN_DIR,
                            TP_CONTRACT_PLUGIN_DIR ":" TP_KERNEL_PLUGIN_DIR};
    const char *devices[2] = {"/job:localhost/replica:0/task:0/device:ACC:0",
                              "/job:localhost/replica:0/task:0/device:CTR:0"};
    for (int order = 0; order < 2; order++) {
        fixture_t *f = make_fixture_with(paths[order], false, false);
        tp_tensor_t *a = vector(f, sample, 5), *b;
        assert_ok(tp_relu(f->context, a, &b));
        assert_string_equal(tp_tensor_device(b), devices[order]);
        assert_values(b, relu_of_sample, 5);
        tp_tensor_release(a);
        tp_tensor_release(b);
        free_fixture(f);
    }
}

static void kernels_are_matched_by_dtype(void **state) {
    (void)state;
    fixture_t *f = make_fixture(false, false);
    const double values[2] = {-1, 1};
    tp_tensor_t *a, *b;
    assert_ok(tp_tensor_create(f->context, TP_FLOAT64, TP_SHAPE(2), values, sizeof values, &a));
    assert_ok(tp_relu(f->context, a, &b)); /* ACC's Relu is float32 only */
    assert_string_equal(tp_tensor_device(b), "/job:localhost/replica:0/task:0/device:CPU:0");
    tp_tensor_release(a);
    tp_tensor_release(b);
    free_fixture(f);
}

/* Placements are remembered per context (launch/placement_cache.h), keyed by op and dtypes:
 * calls that alternate dtypes, scopes and modes get what a fresh search would give, every
 * time, with every fallback still counted and every strict refusal still made. */
static void remembered_placements_match_fresh_ones(void **state) {
    (void)state;
    fixture_t *f = make_fixture(false, false);
    const double values[2] = {-1, 1};
    tp_tensor_t *wide, *narrow = vector(f, sample, 5), *out;
    assert_ok(tp_tensor_create(f->context, TP_FLOAT64, TP_SHAPE(2), values, sizeof values, &wide));
    for (int round = 1; round <= 3; round++) {
        assert_ok(tp_relu(f->context, narrow, &out)); /* float32: ACC has the kernel */
        assert_string_equal(tp_tensor_device(out), "/job:localhost/replica:0/task:0/device:ACC:0");
        assert_values(out, relu_of_sample, 5);
        tp_tensor_release(out);
        assert_ok(tp_relu(f->context, wide, &out)); /* float64: CPU, a fallback each time */
        assert_string_equal(tp_tensor_device(out), "/job:localhost/replica:0/task:0/device:CPU:0");
        tp_tensor_release(out);
        assert_int_equal(tp_context_fallback_count(f->context, "Relu"), round);
        /* A scope still decides after the unscoped call was remembered. */
        assert_ok(tp_device_push(f->context, "/cpu:0"));
        assert_ok(tp_relu(f->context, narrow, &out));
        assert_ok(tp_device_pop(f->context));
        assert_string_equal(tp_tensor_device(out), "/job:localhost/replica:0/task:0/device:CPU:0");
        tp_tensor_release(out);
    }
    assert_int_equal(tp_context_fallback_count(f->context, NULL), 3);
    tp_tensor_release(wide);
    tp_tensor_release(narrow);
    free_fixture(f);

    f = make_fixture(false, true); /* strict: refused every time, never remembered as run */
    narrow = vector(f, sample, 5);
    for (int round = 0; round < 3; round++) {
        out = NULL;
        assert_error(tp_sigmoid(f->context, narrow, &out), TP_FAILED_PRECONDITION,
                     "strict placement: op Sigmoid would fall back from ACC devices");
        assert_null(out);
    }
    assert_int_equal(tp_context_fallback_count(f->context, NULL), 0);
    tp_tensor_release(narrow);
    free_fixture(f);
}

/* The accelerator reports a failed kernel only at its stream's next synchronize and has no
 * events to say which work failed: the runtime synchronizes after each launch (plugin.h), so
 * the failure is the launching op's own, and the device goes on working. */
static void a_device_without_events_fails_the_launch_itself(void **state) {
    (void)state;
    fixture_t *f = make_fixture(false, false);
    const float bad[3] = {1.0f, NAN, 2.0f};
    tp_tensor_t *a = vector(f, bad, 3), *b = NULL;
    assert_error(tp_relu(f->context, a, &b), TP_INTERNAL,
                 "Relu on /job:localhost/replica:0/task:0/device:ACC:0: Relu on ACC met a NaN "
                 "at element 1");
    assert_null(b);
    tp_tensor_t *c, *d = vector(f, sample, 5);
    assert_ok(tp_relu(f->context, d, &c));
    assert_values(c, relu_of_sample, 5);
    assert_ok(tp_context_synchronize(f->context));
    tp_tensor_t *tensors[] = {a, c, d};
    for (size_t i = 0; i < 3; i++) tp_tensor_release(tensors[i]);
    free_fixture(f);
}

/* TP_LOG_DEVICE_PLACEMENT=1 turns the log on without the option. */
static void placement_logging_from_the_environment(void **state) {
    (void)state;
    char *text = NULL;
    size_t length = 0;
    FILE *log = open_memstream(&text, &length);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    options.placement_log = log;
    setenv("TP_LOG_DEVICE_PLACEMENT", "1", 1);
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    unsetenv("TP_LOG_DEVICE_PLACEMENT");
    tp_tensor_t *a, *b;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(5), sample, sizeof sample, &a));
    assert_ok(tp_relu(context, a, &b));
    tp_context_set_log_device_placement(context, false);
    tp_tensor_t *c;
    assert_ok(tp_relu(context, a, &c)); /* not logged */
    fflush(log);
    assert_string_equal(text,
                        "Executing op Relu in device /job:localhost/replica:0/task:0/device:CPU:0\n");
    tp_tensor_release(a);
    tp_tensor_release(b);
    tp_tensor_release(c);
    tp_context_destroy(context);
    fclose(log);
    free(text);
}

typedef struct {
    tp_context_t *context;
    const char *scope;
    int failures;
} worker_t;

/* Scopes are per thread: each thread's ops go where its own scope says. */
static void *run_scoped(void *arg) {
    worker_t *w = arg;
    const float values[2] = {-1, 1};
    for (int round = 0; round < 50; round++) {
        tp_tensor_t *a = NULL, *b = NULL;
        tp_status_t *status = tp_tensor_create(w->context, TP_FLOAT32, TP_SHAPE(2), values,
                                               sizeof values, &a);
        if (status == NULL && w->scope != NULL) status = tp_device_push(w->context, w->scope);
        if (status == NULL) status = tp_relu(w->context, a, &b);
        if (w->scope != NULL) tp_status_free(tp_device_pop(w->context));
        const char *expected = w->scope == NULL || strcmp(w->scope, "/ACC:1") != 0
                                   ? (w->scope == NULL ? "device:ACC:0" : "device:CPU:0")
                                   : "device:ACC:1";
        if (status != NULL || strstr(tp_tensor_device(b), expected) == NULL) w->failures++;
        tp_status_free(status);
        tp_tensor_release(a);
        tp_tensor_release(b);
    }
    return NULL;
}

static void scopes_are_per_thread(void **state) {
    (void)state;
    fixture_t *f = make_fixture(false, false);
    tp_context_set_log_device_placement(f->context, false);
    const char *scopes[] = {NULL, "/CPU:0", "/ACC:1", NULL};
    pthread_t threads[4];
    worker_t workers[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (worker_t){f->context, scopes[i], 0};
        assert_int_equal(pthread_create(&threads[i], NULL, run_scoped, &workers[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failures, 0);
    }
    free_fixture(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plugin_devices_win_by_priority),
        cmocka_unit_test(scopes_choose_the_device),
        cmocka_unit_test(unknown_devices_are_errors_unless_soft),
        cmocka_unit_test(a_device_without_the_kernel_is_named),
        cmocka_unit_test(fallbacks_are_counted_logged_once_and_never_silent),
        cmocka_unit_test(strict_placement_refuses_fallbacks),
        cmocka_unit_test(strict_placement_refuses_a_scoped_fallback),
        cmocka_unit_test(priority_decides_between_plugin_device_types),
        cmocka_unit_test(the_first_found_of_equal_priorities_wins),
        cmocka_unit_test(kernels_are_matched_by_dtype),
        cmocka_unit_test(remembered_placements_match_fresh_ones),
        cmocka_unit_test(a_device_without_events_fails_the_launch_itself),
        cmocka_unit_test(scopes_are_per_thread),
        cmocka_unit_test(placement_logging_from_the_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
