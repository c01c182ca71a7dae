/* SPDX-License-Identifier: Apache-2.0 */
/* Conv2D on the APU: float32 convolutions are placed on APU:0 by priority (the placement log
 * says so) and give the CPU's values; float64 ones, which the APU has no kernel for, stay on
 * the CPU; a scope puts one on APU:1; the kernel runs on the queue thread after the op
 * returned. Run with TP_APU_DEVICES=2 and TP_APU_LATENCY_US=200. */
#include "../unit/test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../unit/device_support.h"

typedef struct {
    tp_context_t *context;
    char *log_text;
    size_t log_length;
    FILE *log;
    size_t seen; /* how much of the log new_placement_lines has returned */
    char lines[4096];
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    if (f == NULL) return -1;
    f->log = open_memstream(&f->log_text, &f->log_length);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    options.log_device_placement = true;
    options.placement_log = f->log;
    tp_log_set_level(TP_LOG_ERROR); /* the fallbacks of ops the APU lacks are expected */
    *state = f;
    return create_context_state((void **)&f->context, &options);
}

static int teardown(void **state) {
    fixture_t *f = *state;
    uint64_t in_use = f->context != NULL ? tensor_bytes_in_use(f->context) : 0;
    tp_context_destroy(f->context);
    fclose(f->log);
    free(f->log_text);
    free(f);
    return in_use == 0 ? 0 : -1;
}

/* The placement lines logged since the last call, as one string (valid until the next). */
static const char *new_placement_lines(fixture_t *f) {
    fflush(f->log);
    snprintf(f->lines, sizeof f->lines, "%s", f->log_text + f->seen);
    f->seen = f->log_length;
    return f->lines;
}

static tp_tensor_t *random_tensor(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape,
                                  int64_t seed) {
    tp_tensor_t *t = NULL;
    assert_ok(tp_device_push(c, "/CPU:0"));
    tp_status_t *status = tp_random_normal(c, dtype, shape, seed, &t);
    assert_ok(tp_device_pop(c));
    assert_ok(status);
    return t;
}

typedef struct {
    tp_shape_t input, filter;
    tp_conv2d_options_t options;
} conv_case_t;

/* The digits model's layers, SAME and VALID, strides, dilations, 1x1, a window larger than
 * the image, and an empty batch. */
static const conv_case_t cases[] = {
    {TP_SHAPE(4, 8, 8, 1), TP_SHAPE(3, 3, 1, 8), {.padding = TP_PADDING_SAME}},
    {TP_SHAPE(2, 8, 8, 8), TP_SHAPE(3, 3, 8, 16), {.padding = TP_PADDING_SAME}},
    /* SAME pads one row and one column, after the image. */
    {TP_SHAPE(2, 7, 6, 3), TP_SHAPE(2, 3, 3, 4), {.stride_height = 2, .stride_width = 2,
                                                  .padding = TP_PADDING_SAME}},
    {TP_SHAPE(1, 9, 8, 2), TP_SHAPE(3, 3, 2, 3), {.dilation_height = 2, .dilation_width = 2}},
    {TP_SHAPE(2, 9, 9, 3), TP_SHAPE(2, 3, 3, 2), {.stride_height = 2, .dilation_width = 3}},
    {TP_SHAPE(3, 5, 5, 4), TP_SHAPE(1, 1, 4, 6), {0}},
    {TP_SHAPE(1, 3, 3, 2), TP_SHAPE(5, 5, 2, 2), {.padding = TP_PADDING_SAME}},
    {TP_SHAPE(0, 4, 4, 2), TP_SHAPE(3, 3, 2, 2), {.padding = TP_PADDING_SAME}},
};

static void conv2d_runs_on_the_apu_as_on_the_cpu(void **state) {
    fixture_t *f = *state;
    tp_context_t *c = f->context;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const conv_case_t *k = &cases[i];
        tp_tensor_t *x = random_tensor(c, TP_FLOAT32, k->input, 10 + (int64_t)i);
        tp_tensor_t *w = random_tensor(c, TP_FLOAT32, k->filter, 20 + (int64_t)i);
        new_placement_lines(f);
        tp_tensor_t *on_apu = NULL, *on_cpu = NULL;
        assert_ok(tp_conv2d(c, x, w, &k->options, &on_apu));
        assert_string_equal(new_placement_lines(f),
                            "Executing op Conv2D in device "
                            "/job:localhost/replica:0/task:0/device:APU:0\n");
        assert_string_equal(tp_tensor_device(on_apu),
                            "/job:localhost/replica:0/task:0/device:APU:0");
        assert_ok(tp_device_push(c, "/CPU:0"));
        assert_ok(tp_conv2d(c, x, w, &k->options, &on_cpu));
        assert_ok(tp_device_pop(c));
        assert_string_equal(new_placement_lines(f),
                            "Executing op Conv2D in device "
                            "/job:localhost/replica:0/task:0/device:CPU:0\n");
        tp_shape_t a = tp_tensor_shape(on_apu), b = tp_tensor_shape(on_cpu);
        assert_int_equal(a.rank, 4);
        for (int d = 0; d < 4; d++) assert_int_equal(a.dims[d], b.dims[d]);
        size_t count = (size_t)tp_tensor_num_elements(on_apu);
        float *got = malloc(count * sizeof(float) + 1), *want = malloc(count * sizeof(float) + 1);
        assert_non_null(got);
        assert_non_null(want);
        assert_ok(tp_tensor_read(on_apu, got, count * sizeof(float))); /* waits for the APU */
        assert_ok(tp_tensor_read(on_cpu, want, count * sizeof(float)));
        /* The same sums in another order (oneDNN blocks the channels): float32 rounding. */
        float worst = 0;
        for (size_t e = 0; e < count; e++)
            worst = fmaxf(worst, fabsf(got[e] - want[e]) / fmaxf(1.0f, fabsf(want[e])));
        free(got);
        free(want);
        if (!(worst < 1e-5f)) fail_msg("case %zu: the APU's values differ by %g", i, worst);
        tp_tensor_release(x);
        tp_tensor_release(w);
        tp_tensor_release(on_apu);
        tp_tensor_release(on_cpu);
    }
}

/* Worked by hand: 1..9 in a 3x3 image by a 2x2 filter [1, 2; 3, 4], VALID. */
static void conv2d_on_the_apu_by_hand(void **state) {
    fixture_t *f = *state;
    tp_context_t *c = f->context;
    const float image[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, filter[4] = {1, 2, 3, 4};
    tp_tensor_t *x = NULL, *w = NULL, *y = NULL;
    assert_ok(tp_tensor_create(c, TP_FLOAT32, TP_SHAPE(1, 3, 3, 1), image, sizeof image, &x));
    assert_ok(tp_tensor_create(c, TP_FLOAT32, TP_SHAPE(2, 2, 1, 1), filter, sizeof filter, &w));
    assert_ok(tp_conv2d(c, x, w, NULL, &y));
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:APU:0");
    /* Queued behind 200 us of latency: not done when the op returned. */
    bool ready = true;
    assert_ok(tp_tensor_query(y, &ready));
    assert_false(ready);
    float got[4];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[0] == 37 && got[1] == 47 && got[2] == 67 && got[3] == 77);
    tp_tensor_release(x);
    tp_tensor_release(w);
    tp_tensor_release(y);
}

/* The APU has Conv2D for float32 only: float64 runs on the CPU; and a scope picks APU:1. */
static void float64_stays_on_the_cpu_and_scopes_pick_the_apu(void **state) {
    fixture_t *f = *state;
    tp_context_t *c = f->context;
    tp_tensor_t *x = random_tensor(c, TP_FLOAT64, TP_SHAPE(1, 4, 4, 2), 1);
    tp_tensor_t *w = random_tensor(c, TP_FLOAT64, TP_SHAPE(3, 3, 2, 2), 2);
    tp_tensor_t *y = NULL;
    new_placement_lines(f);
    assert_ok(tp_conv2d(c, x, w, NULL, &y));
    assert_string_equal(new_placement_lines(f),
                        "Executing op Conv2D in device "
                        "/job:localhost/replica:0/task:0/device:CPU:0\n");
    tp_tensor_release(x);
    tp_tensor_release(w);
    tp_tensor_release(y);

    x = random_tensor(c, TP_FLOAT32, TP_SHAPE(1, 4, 4, 2), 3);
    w = random_tensor(c, TP_FLOAT32, TP_SHAPE(3, 3, 2, 2), 4);
    new_placement_lines(f);
    assert_ok(tp_device_push(c, "/device:APU:1"));
    assert_ok(tp_conv2d(c, x, w, NULL, &y));
    assert_ok(tp_device_pop(c));
    assert_string_equal(new_placement_lines(f),
                        "Executing op Conv2D in device "
                        "/job:localhost/replica:0/task:0/device:APU:1\n");
    float got[8];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    tp_tensor_release(x);
    tp_tensor_release(w);
    tp_tensor_release(y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(conv2d_runs_on_the_apu_as_on_the_cpu, setup, teardown),
        cmocka_unit_test_setup_teardown(conv2d_on_the_apu_by_hand, setup, teardown),
        cmocka_unit_test_setup_teardown(float64_stays_on_the_cpu_and_scopes_pick_the_apu, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
