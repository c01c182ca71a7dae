/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL plug-in's kernels for image models (convolution, pooling, losses, comparisons,
 * batched matrix products and the element-wise ops training needs), each run on PoCL's GPU:0
 * and on the CPU device with the same inputs and attributes: the GPU's results must equal the
 * CPU's (exactly for integers and booleans, to a stated tolerance for floats, whose sums run in
 * another order there), and bad input must fail with the CPU's message. */
#include "../unit/test_support.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tp_context_t *make_context(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_OPENCL_PLUGIN;
    options.skip_installed_plugins = true;
    tp_context_t *context = NULL;
    assert_ok(tp_context_create(&options, &context));
    return context;
}

/* `count` values in [-1, 1), all different (ties would let a max pick either), from `seed`. */
static double *values(int64_t count, uint64_t seed) {
    double *v = malloc((size_t)(count > 0 ? count : 1) * sizeof *v);
    assert_non_null(v);
    for (int64_t i = 0; i < count; i++) {
        uint64_t k = ((uint64_t)i * 2654435761u + seed * 40503u) % 1000003u;
        v[i] = (double)k / 500001.5 - 1.0 + (double)i * 1e-9;
    }
    return v;
}

/* A tensor of `dtype` (float32, float64, int32, int64) holding `v` converted. */
static tp_tensor_t *make(tp_context_t *context, tp_dtype_t dtype, tp_shape_t shape,
                         const double *v) {
    int64_t count;
    assert_ok(tp_shape_num_elements(&shape, &count));
    size_t size = dtype == TP_FLOAT32 || dtype == TP_INT32 ? 4 : 8;
    unsigned char *bytes = malloc((size_t)(count > 0 ? count : 1) * size);
    assert_non_null(bytes);
    for (int64_t i = 0; i < count; i++) {
        if (dtype == TP_FLOAT32) ((float *)bytes)[i] = (float)v[i];
        if (dtype == TP_FLOAT64) ((double *)bytes)[i] = v[i];
        /* The float cases' NaN is 0 in the integer ones: converting it is undefined. */
        double whole = isnan(v[i]) ? 0 : v[i];
        if (dtype == TP_INT32) ((int32_t *)bytes)[i] = (int32_t)whole;
        if (dtype == TP_INT64) ((int64_t *)bytes)[i] = (int64_t)whole;
    }
    tp_tensor_t *t = NULL;
    assert_ok(tp_tensor_create(context, dtype, shape, bytes, (size_t)count * size, &t));
    free(bytes);
    return t;
}

/* Output `o` of GPU and CPU against each other: floats within `tolerance` relative to
 * max(1, |cpu|) (NaN only where the CPU has NaN), everything else byte for byte. */
static void compare_output(const char *what, int o, tp_tensor_t *gpu, tp_tensor_t *cpu,
                           double tolerance) {
    assert_int_equal(tp_tensor_dtype(gpu), tp_tensor_dtype(cpu));
    assert_int_equal(tp_tensor_num_elements(gpu), tp_tensor_num_elements(cpu));
    if (strstr(tp_tensor_device(gpu), "GPU:0") == NULL)
        fail_msg("%s output %d ran on %s, not on the GPU", what, o, tp_tensor_device(gpu));
    size_t size = tp_tensor_byte_size(cpu);
    unsigned char *g = malloc(size + 1), *c = malloc(size + 1);
    assert_non_null(g);
    assert_non_null(c);
    assert_ok(tp_tensor_read(gpu, g, size));
    assert_ok(tp_tensor_read(cpu, c, size));
    tp_dtype_t dtype = tp_tensor_dtype(cpu);
    int64_t n = tp_tensor_num_elements(cpu);
    for (int64_t i = 0; i < n; i++) {
        double a, b;
        if (dtype == TP_FLOAT32) {
            a = ((float *)g)[i];
            b = ((float *)c)[i];
        } else if (dtype == TP_FLOAT64) {
            a = ((double *)g)[i];
            b = ((double *)c)[i];
        } else {
            break;
        }
        bool same = isnan(b) ? isnan(a) : a == b || fabs(a - b) <= tolerance * fmax(1, fabs(b));
        if (!same) {
            free(g), free(c);
            fail_msg("%s %s output %d element %lld: GPU %.17g, CPU %.17g", what,
                     tp_dtype_name(dtype), o, (long long)i, a, b);
        }
    }
    if (dtype != TP_FLOAT32 && dtype != TP_FLOAT64 && memcmp(g, c, size) != 0) {
        free(g), free(c);
        fail_msg("%s %s output %d: the GPU's bytes differ from the CPU's", what,
                 tp_dtype_name(dtype), o);
    }
    free(g), free(c);
}

/* Runs `op` on the GPU and on the CPU and compares its `num_outputs` outputs. */
static void both(tp_context_t *context, const char *op, tp_tensor_t *const *inputs,
                 size_t num_inputs, const tp_attr_t *attrs, size_t num_attrs,
                 size_t num_outputs, double tolerance) {
    tp_tensor_t *out[2][4] = {{NULL}};
    const char *const devices[] = {"/GPU:0", "/CPU:0"};
    for (int d = 0; d < 2; d++) {
        assert_ok(tp_device_push(context, devices[d]));
        tp_status_t *status =
            tp_execute(context, op, inputs, num_inputs, attrs, num_attrs, out[d], num_outputs);
        assert_ok(tp_device_pop(context));
        if (status != NULL)
            fail_msg("%s on %s: %s", op, devices[d], tp_status_message(status));
    }
    for (size_t o = 0; o < num_outputs; o++) {
        compare_output(op, (int)o, out[0][o], out[1][o], tolerance);
        tp_tensor_release(out[0][o]);
        tp_tensor_release(out[1][o]);
    }
}

/* Runs `op` on both devices and expects each to fail with `code` and `fragment`, found when
 * the call returns or when its first output is read. */
static void both_fail(tp_context_t *context, const char *op, tp_tensor_t *const *inputs,
                      size_t num_inputs, const tp_attr_t *attrs, size_t num_attrs,
                      size_t num_outputs, tp_code_t code, const char *fragment) {
    const char *const devices[] = {"/GPU:0", "/CPU:0"};
    for (int d = 0; d < 2; d++) {
        tp_tensor_t *out[4] = {NULL};
        assert_ok(tp_device_push(context, devices[d]));
        tp_status_t *status =
            tp_execute(context, op, inputs, num_inputs, attrs, num_attrs, out, num_outputs);
        assert_ok(tp_device_pop(context));
        if (status == NULL) {
            status = tp_tensor_wait(out[0]);
            if (d == 0 && strstr(tp_tensor_device(out[0]), "GPU:0") == NULL)
                fail_msg("%s ran on %s, not on the GPU", op, tp_tensor_device(out[0]));
        }
        assert_error(status, code, fragment);
        for (size_t o = 0; o < num_outputs; o++) tp_tensor_release(out[o]);
    }
}

/* Whether this GPU has float64 kernels (cl_khr_fp64). */
static bool has_fp64(tp_context_t *context) {
    const double one = 1;
    tp_tensor_t *x = make(context, TP_FLOAT64, TP_SHAPE(1), &one), *y = NULL;
    assert_ok(tp_device_push(context, "/GPU:0"));
    assert_ok(tp_neg(context, x, &y));
    assert_ok(tp_device_pop(context));
    bool on_gpu = strstr(tp_tensor_device(y), "GPU:0") != NULL;
    tp_tensor_release(x);
    tp_tensor_release(y);
    return on_gpu;
}

static int num_float_dtypes(tp_context_t *context) { return has_fp64(context) ? 2 : 1; }
static const tp_dtype_t float_dtypes[] = {TP_FLOAT32, TP_FLOAT64};
/* float32 sums run in double on the GPU where it can, in float on the CPU (oneDNN). */
static double float_tolerance(tp_dtype_t dtype) { return dtype == TP_FLOAT32 ? 2e-5 : 1e-12; }

/* ---- Batched matrix products ---------------------------------------------------------------- */

/* BatchMatMulV2 through CLBlast's batched GEMM against the CPU's GEMM per product: each
 * adjoint, batch dimensions broadcast both ways, a matrix against a batch, empty sums. */
static void batch_matmul_matches_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    const struct {
        tp_shape_t x, y;
        bool adj_x, adj_y;
    } cases[] = {
        {TP_SHAPE(3, 5, 4), TP_SHAPE(3, 4, 6), false, false},
        {TP_SHAPE(2, 1, 4, 5), TP_SHAPE(3, 4, 6), true, false},
        {TP_SHAPE(2, 5, 4), TP_SHAPE(6, 4), false, true},
        {TP_SHAPE(7, 5), TP_SHAPE(2, 3, 6, 7), true, true},
        {TP_SHAPE(2, 3, 0), TP_SHAPE(2, 0, 4), false, false},
    };
    double *xv = values(2 * 3 * 4 * 6 * 7, 71), *yv = values(2 * 3 * 4 * 6 * 7, 72);
    for (int d = 0; d < num_float_dtypes(context); d++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            tp_tensor_t *inputs[2] = {make(context, float_dtypes[d], cases[i].x, xv),
                                      make(context, float_dtypes[d], cases[i].y, yv)};
            tp_attr_t attrs[2] = {TP_ATTR_BOOL_VALUE("adj_x", cases[i].adj_x),
                                  TP_ATTR_BOOL_VALUE("adj_y", cases[i].adj_y)};
            both(context, "BatchMatMulV2", inputs, 2, attrs, 2, 1,
                 float_tolerance(float_dtypes[d]));
            tp_tensor_release(inputs[0]), tp_tensor_release(inputs[1]);
        }
    free(xv), free(yv);
    tp_context_destroy(context);
}

/* ---- Convolution and pooling ----------------------------------------------------------------- */

typedef struct {
    int64_t n, h, w, c, kh, kw, o, sh, sw, dh, dw;
    bool same;
} geometry_t;

static int64_t out_size(int64_t size, int64_t k, int64_t s, int64_t d, bool same) {
    int64_t span = (k - 1) * d + 1;
    if (same) return (size + s - 1) / s;
    return size >= span ? (size - span) / s + 1 : 0;
}

static const geometry_t geometries[] = {
    /* n  h  w  c  kh kw o  sh sw dh dw same */
    {1, 5, 5, 1, 3, 3, 1, 1, 1, 1, 1, false},
    {2, 7, 6, 3, 3, 3, 4, 1, 1, 1, 1, true},
    {2, 7, 6, 3, 3, 2, 5, 2, 2, 1, 1, true},  /* odd padding: the extra row goes after */
    {2, 8, 9, 2, 3, 3, 3, 2, 1, 1, 1, false}, /* VALID with a remainder */
    {1, 9, 9, 2, 3, 3, 2, 1, 1, 2, 2, true},  /* dilation */
    {2, 9, 8, 2, 2, 3, 3, 2, 2, 2, 1, false}, /* dilation and stride together */
    {0, 5, 5, 2, 3, 3, 2, 1, 1, 1, 1, true},  /* no images */
    {2, 4, 4, 0, 3, 3, 2, 1, 1, 1, 1, true},  /* no channels: the sums are over nothing */
};

static void conv_and_its_gradients_match_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    for (int d = 0; d < num_float_dtypes(context); d++) {
        tp_dtype_t dtype = float_dtypes[d];
        for (size_t i = 0; i < sizeof geometries / sizeof geometries[0]; i++) {
            const geometry_t *g = &geometries[i];
            int64_t oh = out_size(g->h, g->kh, g->sh, g->dh, g->same);
            int64_t ow = out_size(g->w, g->kw, g->sw, g->dw, g->same);
            tp_shape_t xs = TP_SHAPE(g->n, g->h, g->w, g->c);
            tp_shape_t fs = TP_SHAPE(g->kh, g->kw, g->c, g->o);
            tp_shape_t ys = TP_SHAPE(g->n, oh, ow, g->o);
            double *xv = values(g->n * g->h * g->w * g->c, 1 + i);
            double *fv = values(g->kh * g->kw * g->c * g->o, 2 + i);
            double *yv = values(g->n * oh * ow * g->o, 3 + i);
            tp_tensor_t *x = make(context, dtype, xs, xv), *f = make(context, dtype, fs, fv);
            tp_tensor_t *dy = make(context, dtype, ys, yv);
            int64_t strides[4] = {1, g->sh, g->sw, 1}, dilations[4] = {1, g->dh, g->dw, 1};
            tp_attr_t attrs[4] = {TP_ATTR_LIST_VALUE("strides", strides, 4),
                                  TP_ATTR_STRING_VALUE("padding", g->same ? "SAME" : "VALID"),
                                  TP_ATTR_LIST_VALUE("dilations", dilations, 4)};
            double tolerance = float_tolerance(dtype);
            both(context, "Conv2D", (tp_tensor_t *[]){x, f}, 2, attrs, 3, 1, tolerance);
            attrs[3] = (tp_attr_t){.name = "input_sizes", .type = TP_ATTR_SHAPE,
                                   .list = xs.dims, .count = 4};
            both(context, "Conv2DBackpropInput", (tp_tensor_t *[]){f, dy}, 2, attrs, 4, 1,
                 tolerance);
            attrs[3] = (tp_attr_t){.name = "filter_sizes", .type = TP_ATTR_SHAPE,
                                   .list = fs.dims, .count = 4};
            both(context, "Conv2DBackpropFilter", (tp_tensor_t *[]){x, dy}, 2, attrs, 4, 1,
                 tolerance);
            tp_tensor_release(x), tp_tensor_release(f), tp_tensor_release(dy);
            free(xv), free(fv), free(yv);
        }
    }
    tp_context_destroy(context);
}

static void pooling_and_its_gradients_match_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    /* window, strides and padding: n, h, w, c, kh, kw, -, sh, sw */
    static const geometry_t pools[] = {
        {2, 6, 6, 3, 2, 2, 0, 2, 2, 1, 1, false}, {2, 7, 5, 2, 3, 3, 0, 2, 2, 1, 1, true},
        {1, 7, 7, 2, 3, 2, 0, 1, 2, 1, 1, true},  {2, 8, 8, 1, 3, 3, 0, 3, 3, 1, 1, false},
        {0, 4, 4, 2, 2, 2, 0, 2, 2, 1, 1, true},
    };
    for (int d = 0; d < num_float_dtypes(context); d++) {
        tp_dtype_t dtype = float_dtypes[d];
        for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++) {
            const geometry_t *g = &pools[i];
            int64_t oh = out_size(g->h, g->kh, g->sh, 1, g->same);
            int64_t ow = out_size(g->w, g->kw, g->sw, 1, g->same);
            tp_shape_t xs = TP_SHAPE(g->n, g->h, g->w, g->c), ys = TP_SHAPE(g->n, oh, ow, g->c);
            double *xv = values(g->n * g->h * g->w * g->c, 5 + i);
            double *yv = values(g->n * oh * ow * g->c, 6 + i);
            tp_tensor_t *x = make(context, dtype, xs, xv), *dy = make(context, dtype, ys, yv);
            int64_t strides[4] = {1, g->sh, g->sw, 1}, ksize[4] = {1, g->kh, g->kw, 1};
            tp_attr_t attrs[4] = {TP_ATTR_LIST_VALUE("ksize", ksize, 4),
                                  TP_ATTR_LIST_VALUE("strides", strides, 4),
                                  TP_ATTR_STRING_VALUE("padding", g->same ? "SAME" : "VALID"),
                                  {.name = "orig_input_shape", .type = TP_ATTR_SHAPE,
                                   .list = xs.dims, .count = 4}};
            double tolerance = float_tolerance(dtype);
            both(context, "MaxPool", (tp_tensor_t *[]){x}, 1, attrs, 3, 1, 0);
            both(context, "AvgPool", (tp_tensor_t *[]){x}, 1, attrs, 3, 1, tolerance);
            tp_tensor_t *y = NULL;
            assert_ok(tp_device_push(context, "/CPU:0"));
            assert_ok(tp_execute(context, "MaxPool", (tp_tensor_t *[]){x}, 1, attrs, 3, &y, 1));
            assert_ok(tp_device_pop(context));
            both(context, "MaxPoolGrad", (tp_tensor_t *[]){x, y, dy}, 3, attrs, 3, 1, tolerance);
            both(context, "AvgPoolGrad", (tp_tensor_t *[]){dy}, 1, attrs, 4, 1, tolerance);
            tp_tensor_release(y), tp_tensor_release(x), tp_tensor_release(dy);
            free(xv), free(yv);
        }
    }
    tp_context_destroy(context);
}

static void bad_window_attributes_fail_as_on_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    double v[3 * 3 * 2 * 2] = {0}; /* room for the largest of the three tensors */
    tp_tensor_t *x = make(context, TP_FLOAT32, TP_SHAPE(2, 4, 4, 1), v);
    tp_tensor_t *f = make(context, TP_FLOAT32, TP_SHAPE(3, 3, 1, 2), v);
    int64_t strides[4] = {1, 0, 1, 1};
    tp_attr_t attrs[2] = {TP_ATTR_LIST_VALUE("strides", strides, 4),
                          TP_ATTR_STRING_VALUE("padding", "SAME")};
    both_fail(context, "Conv2D", (tp_tensor_t *[]){x, f}, 2, attrs, 2, 1, TP_INVALID_ARGUMENT,
              "strides");
    tp_tensor_t *wrong = make(context, TP_FLOAT32, TP_SHAPE(3, 3, 2, 2), v);
    strides[1] = 1;
    both_fail(context, "Conv2D", (tp_tensor_t *[]){x, wrong}, 2, attrs, 2, 1,
              TP_INVALID_ARGUMENT, "Conv2D");
    tp_tensor_release(x), tp_tensor_release(f), tp_tensor_release(wrong);
    tp_context_destroy(context);
}


/* ---- Element-wise, reductions, comparisons ------------------------------------------------- */

/* Special values that each op must treat as the CPU does: zeros of both signs, infinities and
 * NaN, then ordinary numbers. */
static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 2.5, -3.75,
                                  1e-30, 4.0, 0.25};
enum { NUM_SPECIALS = sizeof specials / sizeof specials[0] };

/* The specials as `dtype` holds them, a [12], and b [3, 1, 12] holding them in another order,
 * so that a broadcast against b meets every pair; integers take a non-finite special's index
 * in its place. */
static void special_operands(tp_context_t *context, tp_dtype_t dtype, tp_tensor_t **a,
                             tp_tensor_t **b) {
    bool is_float = dtype == TP_FLOAT32 || dtype == TP_FLOAT64;
    double safe[NUM_SPECIALS], grid[3 * NUM_SPECIALS];
    for (int i = 0; i < NUM_SPECIALS; i++)
        safe[i] = is_float || isfinite(specials[i]) ? specials[i] : (double)i;
    for (int i = 0; i < 3 * NUM_SPECIALS; i++) {
        double v = specials[(i * 5 + 1) % NUM_SPECIALS];
        grid[i] = is_float || isfinite(v) ? v : (double)i;
    }
    *a = make(context, dtype, TP_SHAPE(NUM_SPECIALS), safe);
    *b = make(context, dtype, TP_SHAPE(3, 1, NUM_SPECIALS), grid);
}

static void rsqrt_sign_and_min_match_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    for (int d = 0; d < num_float_dtypes(context); d++) {
        tp_tensor_t *x = make(context, float_dtypes[d], TP_SHAPE(NUM_SPECIALS), specials);
        both(context, "Rsqrt", (tp_tensor_t *[]){x}, 1, NULL, 0, 1, 0);
        both(context, "Sign", (tp_tensor_t *[]){x}, 1, NULL, 0, 1, 0);
        tp_tensor_release(x);
    }
    const double integers[] = {5, -7, 0, 2147483647.0, -2147483648.0, 3};
    for (int i = 0; i < 2; i++) {
        tp_tensor_t *x = make(context, i ? TP_INT64 : TP_INT32, TP_SHAPE(6), integers);
        both(context, "Sign", (tp_tensor_t *[]){x}, 1, NULL, 0, 1, 0);
        tp_tensor_release(x);
    }
    /* Min over each axis, all axes and none, with a NaN in one column. */
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_FLOAT64};
    double *v = values(3 * 50 * 7, 9);
    v[8] = NAN;
    for (size_t k = 0; k < (has_fp64(context) ? 4u : 3u); k++) {
        tp_tensor_t *x = make(context, dtypes[k], TP_SHAPE(3, 50, 7), v);
        int64_t axes[3][2] = {{1, 0}, {0, 2}, {-1, 0}};
        int32_t counts[3] = {1, 2, 1};
        for (int a = 0; a < 3; a++) {
            tp_attr_t attr = TP_ATTR_LIST_VALUE("axis", axes[a], counts[a]);
            both(context, "Min", (tp_tensor_t *[]){x}, 1, &attr, 1, 1, 0);
        }
        tp_attr_t all = TP_ATTR_LIST_VALUE("axis", axes[0], 0);
        both(context, "Min", (tp_tensor_t *[]){x}, 1, &all, 1, 1, 0);
        tp_tensor_release(x);
    }
    free(v);
    tp_context_destroy(context);
}

/* Maximum and Minimum of every pair of specials, broadcast [12] against [3, 1, 12]; Prod over
 * each axis set of values from 1 to 3 in magnitude (integers wrap as on the CPU), with a 0 and
 * a NaN among them. */
static void maximum_minimum_and_prod_match_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_FLOAT64};
    double *v = values(3 * 20 * 7, 13);
    for (int i = 0; i < 3 * 20 * 7; i++) v[i] = v[i] * 3 + (v[i] < 0 ? -1 : 1) * 0.5;
    v[10] = 0;
    v[33] = NAN;
    for (size_t k = 0; k < (has_fp64(context) ? 4u : 3u); k++) {
        tp_tensor_t *a = NULL, *b = NULL;
        special_operands(context, dtypes[k], &a, &b);
        both(context, "Maximum", (tp_tensor_t *[]){a, b}, 2, NULL, 0, 1, 0);
        both(context, "Minimum", (tp_tensor_t *[]){b, a}, 2, NULL, 0, 1, 0);
        tp_tensor_release(a), tp_tensor_release(b);
        tp_tensor_t *x = make(context, dtypes[k], TP_SHAPE(3, 20, 7), v);
        int64_t axes[3][2] = {{1, 0}, {0, 2}, {-1, 0}};
        int32_t counts[3] = {1, 2, 1};
        for (int s = 0; s < 3; s++) {
            tp_attr_t attr = TP_ATTR_LIST_VALUE("axis", axes[s], counts[s]);
            both(context, "Prod", (tp_tensor_t *[]){x}, 1, &attr, 1, 1, 1e-5);
        }
        tp_attr_t all = TP_ATTR_LIST_VALUE("axis", axes[0], 0);
        both(context, "Prod", (tp_tensor_t *[]){x}, 1, &all, 1, 1, 1e-5);
        tp_tensor_release(x);
    }
    free(v);
    tp_context_destroy(context);
}

static void comparisons_and_searches_match_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    static const char *const comparisons[] = {"Equal", "NotEqual", "Less", "LessEqual",
                                              "Greater", "GreaterEqual"};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_FLOAT64};
    /* a [12] against b [3,1,12] broadcast, and against itself: every pair of specials. */
    for (size_t k = 0; k < (has_fp64(context) ? 4u : 3u); k++) {
        tp_tensor_t *a = NULL, *b = NULL;
        special_operands(context, dtypes[k], &a, &b);
        for (size_t c = 0; c < sizeof comparisons / sizeof comparisons[0]; c++) {
            both(context, comparisons[c], (tp_tensor_t *[]){a, b}, 2, NULL, 0, 1, 0);
            both(context, comparisons[c], (tp_tensor_t *[]){a, a}, 2, NULL, 0, 1, 0);
        }
        /* ArgMax and ArgMin along each axis of [3, 1, 12], in both index dtypes; the NaN
         * wins, ties go to the first. */
        for (int64_t axis = -1; axis < 3; axis++)
            for (int index = 0; index < 2; index++) {
                tp_attr_t attrs[2] = {
                    TP_ATTR_INT_VALUE("axis", axis),
                    TP_ATTR_DTYPE_VALUE("output_type", index ? TP_INT64 : TP_INT32)};
                both(context, "ArgMax", (tp_tensor_t *[]){b}, 1, attrs, 2, 1, 0);
                both(context, "ArgMin", (tp_tensor_t *[]){b}, 1, attrs, 2, 1, 0);
            }
        tp_tensor_release(a), tp_tensor_release(b);
    }
    tp_context_destroy(context);
}

/* ---- Softmax and the losses ------------------------------------------------------------------ */

static void log_softmax_and_the_losses_match_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    enum { ROWS = 37, CLASSES = 10 };
    double *logits = values(ROWS * CLASSES, 11), *dense = values(ROWS * CLASSES, 12);
    double sparse[ROWS];
    for (int r = 0; r < ROWS; r++) {
        sparse[r] = (r * 7) % CLASSES;
        for (int j = 0; j < CLASSES; j++) {
            logits[r * CLASSES + j] *= 20; /* large enough that exp would overflow unshifted */
            dense[r * CLASSES + j] = fabs(dense[r * CLASSES + j]) / CLASSES;
        }
    }
    for (int d = 0; d < num_float_dtypes(context); d++) {
        tp_dtype_t dtype = float_dtypes[d];
        /* float32: the CPU's LogSoftmax runs in float through SLEEF, the GPU's in double. */
        double tolerance = dtype == TP_FLOAT32 ? 4 * FLT_EPSILON : 1e-13;
        tp_tensor_t *x = make(context, dtype, TP_SHAPE(ROWS, CLASSES), logits);
        tp_tensor_t *labels = make(context, dtype, TP_SHAPE(ROWS, CLASSES), dense);
        both(context, "LogSoftmax", (tp_tensor_t *[]){x}, 1, NULL, 0, 1, tolerance);
        both(context, "SoftmaxCrossEntropyWithLogits", (tp_tensor_t *[]){x, labels}, 2, NULL, 0,
             2, tolerance);
        for (int index = 0; index < 2; index++) {
            tp_tensor_t *classes = make(context, index ? TP_INT64 : TP_INT32, TP_SHAPE(ROWS),
                                        sparse);
            both(context, "SparseSoftmaxCrossEntropyWithLogits", (tp_tensor_t *[]){x, classes},
                 2, NULL, 0, 2, tolerance);
            tp_tensor_release(classes);
        }
        tp_tensor_release(x), tp_tensor_release(labels);
    }
    free(logits), free(dense);
    tp_context_destroy(context);
}

/* A label outside [0, classes) names its row and value on the GPU as on the CPU, found on the
 * device; so does a loss that is not finite. The device goes on afterwards. */
static void bad_labels_and_infinite_losses_fail_as_on_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    const double logits[] = {0.5, 1, -1, 2, 0, 0, 3, 1, -2};
    const double labels[] = {2, 7, -1};
    tp_tensor_t *x = make(context, TP_FLOAT32, TP_SHAPE(3, 3), logits);
    for (int index = 0; index < 2; index++) {
        tp_tensor_t *l = make(context, index ? TP_INT64 : TP_INT32, TP_SHAPE(3), labels);
        both_fail(context, "SparseSoftmaxCrossEntropyWithLogits", (tp_tensor_t *[]){x, l}, 2,
                  NULL, 0, 2, TP_INVALID_ARGUMENT,
                  "row 1 has label 7, outside the valid range [0, 3) of the 3 classes");
        tp_tensor_release(l);
    }
    const double infinite[] = {0.5, 1, -1, INFINITY, 0, 0, 3, 1, -2};
    const double good[] = {2, 0, 1};
    tp_tensor_t *bad = make(context, TP_FLOAT32, TP_SHAPE(3, 3), infinite);
    tp_tensor_t *l = make(context, TP_INT32, TP_SHAPE(3), good);
    both_fail(context, "SparseSoftmaxCrossEntropyWithLogits", (tp_tensor_t *[]){bad, l}, 2, NULL,
              0, 2, TP_INVALID_ARGUMENT, "the loss of row 1 is NaN; that row's features");
    /* The device goes on. */
    both(context, "SparseSoftmaxCrossEntropyWithLogits", (tp_tensor_t *[]){x, l}, 2, NULL, 0, 2,
         0);
    tp_tensor_release(l), tp_tensor_release(bad), tp_tensor_release(x);
    tp_context_destroy(context);
}

/* ---- Array ops ------------------------------------------------------------------------------- */

/* Concat, Slice, Pad and Select move bytes: the GPU's equal the CPU's exactly, in every
 * dtype with a kernel, with broadcasting, empty pieces and negative axes. */
static void array_ops_match_the_cpu_exactly(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_FLOAT64};
    double *v = values(4 * 3 * 5, 21);
    for (int i = 0; i < 4 * 3 * 5; i++) v[i] *= 100;
    for (size_t k = 0; k < (has_fp64(context) ? 4u : 3u); k++) {
        tp_tensor_t *a = make(context, dtypes[k], TP_SHAPE(4, 3, 5), v);
        tp_tensor_t *b = make(context, dtypes[k], TP_SHAPE(4, 2, 5), v + 7);
        tp_tensor_t *empty = make(context, dtypes[k], TP_SHAPE(4, 0, 5), v);
        for (int64_t axis = -1; axis < 3; axis++) {
            tp_attr_t attrs[2] = {TP_ATTR_INT_VALUE("N", 2), TP_ATTR_INT_VALUE("axis", axis)};
            both(context, "Concat", (tp_tensor_t *[]){a, a}, 2, attrs, 2, 1, 0);
        }
        tp_attr_t concat_attrs[2] = {TP_ATTR_INT_VALUE("N", 3), TP_ATTR_INT_VALUE("axis", 1)};
        both(context, "Concat", (tp_tensor_t *[]){a, empty, b}, 3, concat_attrs, 2, 1, 0);

        int64_t begin[3] = {1, 0, 2}, size[3] = {2, 3, 2};
        tp_attr_t slice_attrs[2] = {TP_ATTR_LIST_VALUE("begin", begin, 3),
                                    TP_ATTR_LIST_VALUE("size", size, 3)};
        both(context, "Slice", (tp_tensor_t *[]){a}, 1, slice_attrs, 2, 1, 0);

        int64_t paddings[6] = {1, 0, 0, 2, 3, 1};
        tp_attr_t pad_attrs[2] = {TP_ATTR_LIST_VALUE("paddings", paddings, 6),
                                  TP_ATTR_FLOAT_VALUE("constant_value", 7)};
        both(context, "Pad", (tp_tensor_t *[]){a}, 1, pad_attrs, 2, 1, 0);
        both(context, "Pad", (tp_tensor_t *[]){a}, 1, pad_attrs, 1, 1, 0);

        /* Select with a condition [3, 1] broadcast against t [4, 3, 5] and e [5]. */
        tp_tensor_t *condition = NULL;
        bool flags[3] = {true, false, true};
        assert_ok(tp_tensor_create(context, TP_BOOL, TP_SHAPE(3, 1), flags, sizeof flags,
                                   &condition));
        tp_tensor_t *e = make(context, dtypes[k], TP_SHAPE(5), v + 30);
        both(context, "Select", (tp_tensor_t *[]){condition, a, e}, 3, NULL, 0, 1, 0);
        tp_tensor_release(condition), tp_tensor_release(e);
        tp_tensor_release(a), tp_tensor_release(b), tp_tensor_release(empty);
    }
    free(v);
    tp_context_destroy(context);
}

/* ---- Gather and OneHot ----------------------------------------------------------------------- */

static void gather_and_one_hot_match_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    double *v = values(4 * 3 * 5, 31);
    const double picks[6] = {2, 0, 3, 3, 1, 0}, hot[6] = {2, 0, 9, -1, 1, 4};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_FLOAT64};
    for (size_t k = 0; k < (has_fp64(context) ? 4u : 3u); k++) {
        tp_tensor_t *params = make(context, dtypes[k], TP_SHAPE(4, 3, 5), v);
        for (int index = 0; index < 2; index++) {
            tp_dtype_t index_dtype = index ? TP_INT64 : TP_INT32;
            tp_tensor_t *flat = make(context, index_dtype, TP_SHAPE(6), picks);
            tp_tensor_t *grid = make(context, index_dtype, TP_SHAPE(2, 3), picks);
            for (int64_t axis = 0; axis < 3; axis++) {
                tp_attr_t attr = TP_ATTR_INT_VALUE("axis", axis);
                tp_tensor_t *indices = axis == 0 ? grid : flat;
                if (axis == 1) {
                    tp_tensor_release(flat);
                    const double small[4] = {2, 0, 1, 1};
                    flat = make(context, index_dtype, TP_SHAPE(4), small);
                    indices = flat;
                }
                both(context, "Gather", (tp_tensor_t *[]){params, indices}, 2, &attr, 1, 1, 0);
            }
            tp_tensor_release(flat), tp_tensor_release(grid);
            /* OneHot: out-of-range indices leave their rows off, on both. */
            tp_tensor_t *labels = make(context, index_dtype, TP_SHAPE(2, 3), hot);
            for (int64_t axis = -1; axis < 2; axis++) {
                tp_attr_t attrs[5] = {TP_ATTR_INT_VALUE("depth", 5),
                                      TP_ATTR_INT_VALUE("axis", axis),
                                      TP_ATTR_FLOAT_VALUE("on_value", 3),
                                      TP_ATTR_FLOAT_VALUE("off_value", -2),
                                      TP_ATTR_DTYPE_VALUE("T", dtypes[k])};
                both(context, "OneHot", (tp_tensor_t *[]){labels}, 1, attrs, 5, 1, 0);
            }
            tp_tensor_release(labels);
        }
        tp_tensor_release(params);
    }
    free(v);
    tp_context_destroy(context);
}

/* An index outside the gathered dimension names its value and coordinates, as on the CPU. */
static void a_bad_gather_index_fails_as_on_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    double *v = values(4 * 3, 32);
    const double picks[6] = {2, 0, 3, 1, 4, 0};
    tp_tensor_t *params = make(context, TP_FLOAT32, TP_SHAPE(4, 3), v);
    tp_tensor_t *indices = make(context, TP_INT32, TP_SHAPE(2, 3), picks);
    tp_attr_t attr = TP_ATTR_INT_VALUE("axis", 0);
    both_fail(context, "Gather", (tp_tensor_t *[]){params, indices}, 2, &attr, 1, 1,
              TP_INVALID_ARGUMENT, "indices[1,1] = 4 is not in [0, 4)");
    tp_tensor_release(params), tp_tensor_release(indices);
    free(v);
    tp_context_destroy(context);
}

/* ---- Dropout --------------------------------------------------------------------------------- */

/* The GPU drops exactly the elements the CPU drops for a seed (the same Philox words), and
 * scales the rest alike; rate 0 keeps everything. */
static void dropout_draws_the_cpus_mask(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    double *v = values(1003, 41);
    const double rates[] = {0.0, 0.25, 0.5, 1.0 / 3.0, 0.9};
    for (int d = 0; d < num_float_dtypes(context); d++) {
        tp_tensor_t *x = make(context, float_dtypes[d], TP_SHAPE(17, 59), v);
        for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
            int64_t seed = -INT64_C(0x0123456789abcdef) + (int64_t)r;
            tp_attr_t attrs[2] = {TP_ATTR_FLOAT_VALUE("rate", rates[r]),
                                  TP_ATTR_INT_VALUE("seed", seed)};
            both(context, "Dropout", (tp_tensor_t *[]){x}, 1, attrs, 2, 2, 0);
        }
        tp_tensor_release(x);
    }
    free(v);
    tp_context_destroy(context);
}

/* UnsortedSegmentSum adds rows in the CPU's order, so even float sums match exactly; a negative
 * id drops its row, and an id past the segments names itself. */
static void unsorted_segment_sum_matches_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    double *v = values(7 * 5, 51);
    const double ids[7] = {2, 0, -1, 2, 3, 0, 2}, bad[7] = {2, 0, 1, 2, 5, 0, 2};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_FLOAT64};
    for (size_t k = 0; k < (has_fp64(context) ? 4u : 3u); k++) {
        bool is_float = dtypes[k] == TP_FLOAT32 || dtypes[k] == TP_FLOAT64;
        double scaled[7 * 5];
        for (int i = 0; i < 7 * 5; i++) scaled[i] = is_float ? v[i] : v[i] * 1e9;
        tp_tensor_t *data = make(context, dtypes[k], TP_SHAPE(7, 5), scaled);
        for (int index = 0; index < 2; index++) {
            tp_tensor_t *segments = make(context, index ? TP_INT64 : TP_INT32, TP_SHAPE(7), ids);
            tp_attr_t attr = TP_ATTR_INT_VALUE("num_segments", 4);
            both(context, "UnsortedSegmentSum", (tp_tensor_t *[]){data, segments}, 2, &attr, 1,
                 1, 0);
            tp_tensor_release(segments);
            segments = make(context, index ? TP_INT64 : TP_INT32, TP_SHAPE(7), bad);
            both_fail(context, "UnsortedSegmentSum", (tp_tensor_t *[]){data, segments}, 2, &attr,
                      1, 1, TP_INVALID_ARGUMENT, "segment_ids[4] = 5 is not in [0, 4)");
            tp_tensor_release(segments);
        }
        tp_tensor_release(data);
    }
    free(v);
    tp_context_destroy(context);
}

/* ---- FusedBatchNorm -------------------------------------------------------------------------- */

/* Training and inference, forward and gradient, against the CPU: the statistics are double sums
 * in the CPU's order, so only the last rounding may differ. */
static void fused_batch_norm_matches_the_cpu(void **state) {
    (void)state;
    tp_context_t *context = make_context();
    if (!has_fp64(context)) {
        tp_context_destroy(context);
        skip();
    }
    enum { N = 3, H = 4, W = 5, C = 6 };
    double *xv = values(N * H * W * C, 61), *dyv = values(N * H * W * C, 62);
    double *cv = values(5 * C, 63);
    for (int c = 0; c < C; c++) cv[4 * C + c] = fabs(cv[4 * C + c]) + 0.5; /* variances */
    for (int d = 0; d < 2; d++) {
        tp_dtype_t dtype = float_dtypes[d];
        double tolerance = dtype == TP_FLOAT32 ? 1e-6 : 1e-12;
        tp_tensor_t *x = make(context, dtype, TP_SHAPE(N, H, W, C), xv);
        tp_tensor_t *dy = make(context, dtype, TP_SHAPE(N, H, W, C), dyv);
        tp_tensor_t *per_channel[5];
        for (int k = 0; k < 5; k++)
            per_channel[k] = make(context, dtype, TP_SHAPE(C), cv + k * C);
        for (int training = 0; training < 2; training++)
            for (int f = 0; f < 2; f++) {
                tp_attr_t attrs[3] = {TP_ATTR_FLOAT_VALUE("epsilon", 1e-3),
                                      TP_ATTR_FLOAT_VALUE("exponential_avg_factor",
                                                          f ? 0.25 : 1.0),
                                      TP_ATTR_BOOL_VALUE("is_training", training)};
                both(context, "FusedBatchNorm",
                     (tp_tensor_t *[]){x, per_channel[0], per_channel[1], per_channel[3],
                                       per_channel[4]},
                     5, attrs, 3, 3, tolerance);
                both(context, "FusedBatchNormGrad",
                     (tp_tensor_t *[]){dy, x, per_channel[0], per_channel[3], per_channel[4],
                                       per_channel[1], per_channel[2]},
                     7, attrs, 3, 3, tolerance);
            }
        for (int k = 0; k < 5; k++) tp_tensor_release(per_channel[k]);
        tp_tensor_release(x), tp_tensor_release(dy);
    }
    free(xv), free(dyv), free(cv);
    tp_context_destroy(context);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_and_its_gradients_match_the_cpu),
        cmocka_unit_test(pooling_and_its_gradients_match_the_cpu),
        cmocka_unit_test(bad_window_attributes_fail_as_on_the_cpu),
        cmocka_unit_test(rsqrt_sign_and_min_match_the_cpu),
        cmocka_unit_test(maximum_minimum_and_prod_match_the_cpu),
        cmocka_unit_test(comparisons_and_searches_match_the_cpu),
        cmocka_unit_test(log_softmax_and_the_losses_match_the_cpu),
        cmocka_unit_test(bad_labels_and_infinite_losses_fail_as_on_the_cpu),
        cmocka_unit_test(array_ops_match_the_cpu_exactly),
        cmocka_unit_test(gather_and_one_hot_match_the_cpu),
        cmocka_unit_test(a_bad_gather_index_fails_as_on_the_cpu),
        cmocka_unit_test(dropout_draws_the_cpus_mask),
        cmocka_unit_test(unsorted_segment_sum_matches_the_cpu),
        cmocka_unit_test(fused_batch_norm_matches_the_cpu),
        cmocka_unit_test(batch_matmul_matches_the_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
