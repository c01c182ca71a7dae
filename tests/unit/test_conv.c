/* SPDX-License-Identifier: Apache-2.0 */
/* Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, AvgPool and their gradients on
 * the CPU, in float32 (oneDNN) and float64 (im2col and dgemm, plain loops): values against a
 * direct convolution and pooling written here from TensorFlow's definitions, over SAME and
 * VALID padding, strides, dilations, 1x1 filters and batches large enough to be cut up; values
 * worked by hand; empty batches and channels; the tape's gradients against finite
 * differences; many shapes and several threads at once; and every refusal with its message. */
#include "cpu_fixture.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensorplug/training.h"

/* ---- A direct convolution and pooling, by definition ------------------------------------------ */

/* One case: an image [n,h,w,c], a window kh x kw (a filter [kh,kw,c,o]; for pooling o is c),
 * strides, dilations and padding. */
typedef struct {
    int64_t n, h, w, c, kh, kw, o, sh, sw, dh, dw;
    bool same;
} geometry_t;

typedef struct {
    int64_t oh, ow, pad_top, pad_left;
} placement_t;

/* TensorFlow's documented sizes: SAME gives ceil(in / stride) and pads the difference, half
 * before (rounded down); VALID gives ceil((in - dilated window + 1) / stride). */
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static placement_t place(const geometry_t *g) {
    int64_t span_h = (g->kh - 1) * g->dh + 1, span_w = (g->kw - 1) * g->dw + 1;
    placement_t p = {0};
    if (g->same) {
        p.oh = ceil_div(g->h, g->sh);
        p.ow = ceil_div(g->w, g->sw);
        int64_t pad_h = (p.oh - 1) * g->sh + span_h - g->h, pad_w = (p.ow - 1) * g->sw + span_w - g->w;
        p.pad_top = pad_h > 0 ? pad_h / 2 : 0;
        p.pad_left = pad_w > 0 ? pad_w / 2 : 0;
    } else {
        p.oh = ceil_div(g->h - span_h + 1, g->sh);
        p.ow = ceil_div(g->w - span_w + 1, g->sw);
    }
    return p;
}

static int64_t image_index(const geometry_t *g, int64_t n, int64_t y, int64_t x, int64_t c) {
    return ((n * g->h + y) * g->w + x) * g->c + c;
}

/* Runs the statements given for every tap inside the image, with n, oh, ow, kh, kw and the
 * tap's image row and column iy, ix set. */
#define FOR_EACH_TAP(g, p, ...)                                                                \
    for (int64_t n = 0; n < (g)->n; n++)                                                       \
        for (int64_t oh = 0; oh < (p).oh; oh++)                                                \
            for (int64_t ow = 0; ow < (p).ow; ow++)                                            \
                for (int64_t kh = 0; kh < (g)->kh; kh++)                                       \
                    for (int64_t kw = 0; kw < (g)->kw; kw++) {                                 \
                        int64_t iy = oh * (g)->sh - (p).pad_top + kh * (g)->dh;                \
                        int64_t ix = ow * (g)->sw - (p).pad_left + kw * (g)->dw;               \
                        if (iy < 0 || iy >= (g)->h || ix < 0 || ix >= (g)->w) continue;        \
                        __VA_ARGS__                                                            \
                    }

static int64_t output_index(const geometry_t *g, placement_t p, int64_t n, int64_t oh,
                            int64_t ow, int64_t o) {
    return ((n * p.oh + oh) * p.ow + ow) * g->o + o;
}

static int64_t filter_index(const geometry_t *g, int64_t kh, int64_t kw, int64_t c, int64_t o) {
    return ((kh * g->kw + kw) * g->c + c) * g->o + o;
}

static void reference_conv(const geometry_t *g, const double *x, const double *f, double *y) {
    placement_t p = place(g);
    for (int64_t i = 0; i < g->n * p.oh * p.ow * g->o; i++) y[i] = 0;
    FOR_EACH_TAP(g, p, {
        for (int64_t c = 0; c < g->c; c++)
            for (int64_t o = 0; o < g->o; o++)
                y[output_index(g, p, n, oh, ow, o)] +=
                    x[image_index(g, n, iy, ix, c)] * f[filter_index(g, kh, kw, c, o)];
    })
}

static void reference_input_grad(const geometry_t *g, const double *f, const double *dy,
                                 double *dx) {
    placement_t p = place(g);
    for (int64_t i = 0; i < g->n * g->h * g->w * g->c; i++) dx[i] = 0;
    FOR_EACH_TAP(g, p, {
        for (int64_t c = 0; c < g->c; c++)
            for (int64_t o = 0; o < g->o; o++)
                dx[image_index(g, n, iy, ix, c)] +=
                    dy[output_index(g, p, n, oh, ow, o)] * f[filter_index(g, kh, kw, c, o)];
    })
}

static void reference_filter_grad(const geometry_t *g, const double *x, const double *dy,
                                  double *df) {
    placement_t p = place(g);
    for (int64_t i = 0; i < g->kh * g->kw * g->c * g->o; i++) df[i] = 0;
    FOR_EACH_TAP(g, p, {
        for (int64_t c = 0; c < g->c; c++)
            for (int64_t o = 0; o < g->o; o++)
                df[filter_index(g, kh, kw, c, o)] +=
                    x[image_index(g, n, iy, ix, c)] * dy[output_index(g, p, n, oh, ow, o)];
    })
}

/* Pooling: y is the max or the mean of each window's taps inside the image (channel by
 * channel); with dy given, dx receives the gradient instead (to the first maximum, or shared
 * evenly). */
static void reference_pool(const geometry_t *g, bool max, const double *x, const double *dy,
                           double *y, double *dx) {
    placement_t p = place(g);
    int64_t outputs = g->n * p.oh * p.ow * g->c;
    double *best = malloc((size_t)outputs * sizeof *best);
    int64_t *where = malloc((size_t)outputs * sizeof *where);
    double *taps = calloc((size_t)outputs, sizeof *taps);
    assert_non_null(best);
    assert_non_null(where);
    assert_non_null(taps);
    for (int64_t i = 0; i < outputs; i++) best[i] = max ? -INFINITY : 0, where[i] = -1;
    FOR_EACH_TAP(g, p, {
        for (int64_t c = 0; c < g->c; c++) {
            int64_t at = output_index(g, p, n, oh, ow, c), from = image_index(g, n, iy, ix, c);
            taps[at] += 1;
            if (!max)
                best[at] += x != NULL ? x[from] : 0;
            else if (where[at] < 0 || x[from] > best[at])
                best[at] = x[from], where[at] = from;
        }
    })
    if (dy == NULL) {
        for (int64_t i = 0; i < outputs; i++) y[i] = max ? best[i] : best[i] / taps[i];
    } else {
        for (int64_t i = 0; i < g->n * g->h * g->w * g->c; i++) dx[i] = 0;
        if (max) {
            for (int64_t i = 0; i < outputs; i++) dx[where[i]] += dy[i];
        } else {
            FOR_EACH_TAP(g, p, {
                for (int64_t c = 0; c < g->c; c++) {
                    int64_t at = output_index(g, p, n, oh, ow, c);
                    dx[image_index(g, n, iy, ix, c)] += dy[at] / taps[at];
                }
            })
        }
    }
    free(best);
    free(where);
    free(taps);
}

/* ---- Tensors --------------------------------------------------------------------------------- */

/* The tensor's values as doubles (malloc'd), after checking its shape; releases it. */
static double *take(tp_tensor_t *t, tp_shape_t shape) {
    tp_shape_t got = tp_tensor_shape(t);
    bool same = same_shape(got, shape);
    int64_t count = tp_tensor_num_elements(t);
    tp_dtype_t dtype = tp_tensor_dtype(t);
    size_t size = tp_tensor_byte_size(t);
    void *raw = malloc(size > 0 ? size : 1);
    double *values = malloc(count > 0 ? (size_t)count * sizeof *values : 1);
    assert_non_null(raw);
    assert_non_null(values);
    tp_status_t *status = tp_tensor_read(t, raw, size);
    tp_tensor_release(t);
    for (int64_t i = 0; status == NULL && i < count; i++)
        values[i] = dtype == TP_FLOAT32 ? ((float *)raw)[i] : ((double *)raw)[i];
    free(raw);
    if (status != NULL || !same) free(values);
    assert_ok(status);
    if (!same) {
        char g[64], w[64];
        tp_shape_format(&got, g, sizeof g);
        tp_shape_format(&shape, w, sizeof w);
        fail_msg("shape %s, wanted %s", g, w);
    }
    return values;
}

/* Values in [-1, 1) from a fixed generator, so that every run checks the same numbers. */
static double *random_values(int64_t count, uint64_t seed) {
    double *v = malloc(count > 0 ? (size_t)count * sizeof *v : 1);
    assert_non_null(v);
    uint64_t state = seed * 6364136223846793005u + 1442695040888963407u;
    for (int64_t i = 0; i < count; i++) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        v[i] = (double)(state >> 11) / (double)(UINT64_C(1) << 53) * 2 - 1;
    }
    return v;
}

/* Distinct values, a permutation of 0.01 * [0, count): MaxPool's maximum is then unique. */
static double *distinct_values(int64_t count) {
    double *v = malloc(count > 0 ? (size_t)count * sizeof *v : 1);
    assert_non_null(v);
    for (int64_t i = 0; i < count; i++) v[i] = (double)((i * 7919) % count) * 0.01 - 1;
    return v;
}

/* Each value within `tolerance` of the wanted one, relative to max(1, |wanted|); frees got. */
static void expect_values(const char *what, double *got, const double *want, int64_t count,
                          double tolerance) {
    int64_t bad = -1;
    for (int64_t i = 0; i < count && bad < 0; i++) {
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        if (!(fabs(got[i] - want[i]) <= tolerance * scale)) bad = i;
    }
    double value = bad >= 0 ? got[bad] : 0;
    free(got);
    if (bad >= 0)
        fail_msg("%s: element %lld is %.9g, wanted %.9g", what, (long long)bad, value,
                 want[bad]);
}

static double tolerance_for(tp_dtype_t dtype) { return dtype == TP_FLOAT32 ? 2e-5 : 1e-12; }

/* ---- Running the ops ------------------------------------------------------------------------- */

typedef struct {
    int64_t strides[4], dilations[4], ksize[4], sizes[4];
    tp_attr_t attrs[6];
    size_t count;
} attrs_t;

static void conv_attrs(const geometry_t *g, attrs_t *a, const char *sizes_name,
                       tp_shape_t sizes) {
    int64_t strides[4] = {1, g->sh, g->sw, 1}, dilations[4] = {1, g->dh, g->dw, 1};
    memcpy(a->strides, strides, sizeof strides);
    memcpy(a->dilations, dilations, sizeof dilations);
    a->count = 0;
    a->attrs[a->count++] = TP_ATTR_LIST_VALUE("strides", a->strides, 4);
    a->attrs[a->count++] = TP_ATTR_STRING_VALUE("padding", g->same ? "SAME" : "VALID");
    a->attrs[a->count++] = TP_ATTR_LIST_VALUE("dilations", a->dilations, 4);
    if (sizes_name != NULL) {
        memcpy(a->sizes, sizes.dims, sizeof a->sizes);
        a->attrs[a->count++] = (tp_attr_t){.name = sizes_name, .type = TP_ATTR_SHAPE,
                                           .list = a->sizes, .count = 4};
    }
}

static void pool_attrs(const geometry_t *g, attrs_t *a, const char *sizes_name,
                       tp_shape_t sizes) {
    int64_t strides[4] = {1, g->sh, g->sw, 1}, ksize[4] = {1, g->kh, g->kw, 1};
    memcpy(a->strides, strides, sizeof strides);
    memcpy(a->ksize, ksize, sizeof ksize);
    a->count = 0;
    a->attrs[a->count++] = TP_ATTR_LIST_VALUE("ksize", a->ksize, 4);
    a->attrs[a->count++] = TP_ATTR_LIST_VALUE("strides", a->strides, 4);
    a->attrs[a->count++] = TP_ATTR_STRING_VALUE("padding", g->same ? "SAME" : "VALID");
    if (sizes_name != NULL) {
        memcpy(a->sizes, sizes.dims, sizeof a->sizes);
        a->attrs[a->count++] = (tp_attr_t){.name = sizes_name, .type = TP_ATTR_SHAPE,
                                           .list = a->sizes, .count = 4};
    }
}

static tp_tensor_t *run(tp_context_t *c, const char *op, tp_tensor_t *a, tp_tensor_t *b,
                        tp_tensor_t *d, const attrs_t *attrs) {
    tp_tensor_t *inputs[3] = {a, b, d}, *out = NULL;
    size_t count = d != NULL ? 3 : b != NULL ? 2 : 1;
    assert_ok(tp_execute(c, op, inputs, count, attrs->attrs, attrs->count, &out, 1));
    return out;
}

static tp_shape_t image_shape(const geometry_t *g) { return TP_SHAPE(g->n, g->h, g->w, g->c); }
static tp_shape_t filter_shape(const geometry_t *g) {
    return TP_SHAPE(g->kh, g->kw, g->c, g->o);
}
static tp_shape_t output_shape(const geometry_t *g) {
    placement_t p = place(g);
    return TP_SHAPE(g->n, p.oh, p.ow, g->o);
}

static const char *describe(const geometry_t *g, tp_dtype_t dtype, const char *op) {
    static char text[256];
    snprintf(text, sizeof text,
             "%s %s of [%lld,%lld,%lld,%lld] by %lldx%lld->%lld, strides %lld,%lld, dilations "
             "%lld,%lld, %s",
             op, tp_dtype_name(dtype), (long long)g->n, (long long)g->h, (long long)g->w,
             (long long)g->c, (long long)g->kh, (long long)g->kw, (long long)g->o,
             (long long)g->sh, (long long)g->sw, (long long)g->dh, (long long)g->dw,
             g->same ? "SAME" : "VALID");
    return text;
}

/* Conv2D and both its gradient ops against the direct loops, in one dtype. */
static void check_conv(tp_context_t *c, const geometry_t *g, tp_dtype_t dtype, uint64_t seed) {
    tp_shape_t xs = image_shape(g), fs = filter_shape(g), ys = output_shape(g);
    int64_t nx = element_count(xs), nf = element_count(fs), ny = element_count(ys);
    double *x = random_values(nx, seed), *f = random_values(nf, seed + 1);
    double *dy = random_values(ny, seed + 2);
    /* float32 inputs are rounded: the reference starts from the same values. */
    for (int64_t i = 0; dtype == TP_FLOAT32 && i < nx; i++) x[i] = (float)x[i];
    for (int64_t i = 0; dtype == TP_FLOAT32 && i < nf; i++) f[i] = (float)f[i];
    for (int64_t i = 0; dtype == TP_FLOAT32 && i < ny; i++) dy[i] = (float)dy[i];
    double *want_y = malloc((size_t)(ny > 0 ? ny : 1) * sizeof(double));
    double *want_dx = malloc((size_t)(nx > 0 ? nx : 1) * sizeof(double));
    double *want_df = malloc((size_t)(nf > 0 ? nf : 1) * sizeof(double));
    assert_non_null(want_y);
    assert_non_null(want_dx);
    assert_non_null(want_df);
    reference_conv(g, x, f, want_y);
    reference_input_grad(g, f, dy, want_dx);
    reference_filter_grad(g, x, dy, want_df);

    tp_tensor_t *tx = tensor_of_doubles(c, dtype, xs, x), *tf = tensor_of_doubles(c, dtype, fs, f);
    tp_tensor_t *tdy = tensor_of_doubles(c, dtype, ys, dy);
    attrs_t forward, input_grad, filter_grad;
    conv_attrs(g, &forward, NULL, xs);
    conv_attrs(g, &input_grad, "input_sizes", xs);
    conv_attrs(g, &filter_grad, "filter_sizes", fs);
    tp_tensor_t *y = run(c, "Conv2D", tx, tf, NULL, &forward);
    tp_tensor_t *dx = run(c, "Conv2DBackpropInput", tf, tdy, NULL, &input_grad);
    tp_tensor_t *df = run(c, "Conv2DBackpropFilter", tx, tdy, NULL, &filter_grad);
    tp_tensor_release(tx);
    tp_tensor_release(tf);
    tp_tensor_release(tdy);
    double tolerance = tolerance_for(dtype);
    expect_values(describe(g, dtype, "Conv2D"), take(y, ys), want_y, ny, tolerance);
    expect_values(describe(g, dtype, "Conv2DBackpropInput"), take(dx, xs), want_dx, nx,
                  tolerance);
    expect_values(describe(g, dtype, "Conv2DBackpropFilter"), take(df, fs), want_df, nf,
                  tolerance);
    free(x), free(f), free(dy), free(want_y), free(want_dx), free(want_df);
}

/* MaxPool, AvgPool and their gradient ops against the direct loops, in one dtype. */
static void check_pool(tp_context_t *c, const geometry_t *g, tp_dtype_t dtype) {
    tp_shape_t xs = image_shape(g), ys = output_shape(g);
    int64_t nx = element_count(xs), ny = element_count(ys);
    double *x = distinct_values(nx), *dy = random_values(ny, 7);
    for (int64_t i = 0; dtype == TP_FLOAT32 && i < ny; i++) dy[i] = (float)dy[i];
    double *want = malloc((size_t)(nx + ny) * sizeof(double));
    assert_non_null(want);
    tp_tensor_t *tx = tensor_of_doubles(c, dtype, xs, x),
                *tdy = tensor_of_doubles(c, dtype, ys, dy);
    attrs_t attrs, grad_attrs;
    pool_attrs(g, &attrs, NULL, xs);
    pool_attrs(g, &grad_attrs, "orig_input_shape", xs);
    double tolerance = tolerance_for(dtype);
    for (int max = 0; max < 2; max++) {
        tp_tensor_t *y = run(c, max ? "MaxPool" : "AvgPool", tx, NULL, NULL, &attrs);
        tp_tensor_t *dx = max ? run(c, "MaxPoolGrad", tx, y, tdy, &attrs)
                              : run(c, "AvgPoolGrad", tdy, NULL, NULL, &grad_attrs);
        reference_pool(g, max, x, NULL, want, NULL);
        expect_values(describe(g, dtype, max ? "MaxPool" : "AvgPool"), take(y, ys), want, ny,
                      tolerance);
        reference_pool(g, max, x, dy, NULL, want);
        expect_values(describe(g, dtype, max ? "MaxPoolGrad" : "AvgPoolGrad"), take(dx, xs),
                      want, nx, tolerance);
    }
    tp_tensor_release(tx);
    tp_tensor_release(tdy);
    free(x), free(dy), free(want);
}

/* ---- Values ---------------------------------------------------------------------------------- */

static const geometry_t conv_cases[] = {
    /* n  h  w  c  kh kw o  sh sw dh dw same */
    {1, 5, 5, 1, 3, 3, 1, 1, 1, 1, 1, false},
    {2, 7, 6, 3, 3, 3, 4, 1, 1, 1, 1, true},
    {2, 7, 6, 3, 2, 3, 5, 2, 2, 1, 1, true},  /* odd padding: the extra row goes after */
    {2, 8, 9, 2, 3, 3, 3, 2, 1, 1, 1, false}, /* VALID with a remainder */
    {1, 9, 9, 2, 3, 3, 2, 1, 1, 2, 2, true},  /* dilation 2 */
    {1, 9, 8, 2, 2, 3, 3, 1, 2, 2, 1, false}, /* dilation and stride on different axes */
    {2, 9, 9, 3, 3, 3, 2, 2, 2, 2, 2, false}, /* dilation and stride together */
    {3, 5, 5, 4, 1, 1, 6, 1, 1, 1, 1, false}, /* 1x1: the image is the column matrix */
    {2, 6, 6, 3, 1, 1, 2, 2, 2, 1, 1, true},  /* 1x1 with stride */
    {4, 8, 8, 1, 3, 3, 8, 1, 1, 1, 1, true},  /* the digits model's first layer */
    {2, 8, 8, 8, 3, 3, 16, 1, 1, 1, 1, true}, /* and its second */
    {1, 3, 3, 2, 3, 3, 2, 3, 3, 1, 1, true},  /* stride as large as the window */
    {1, 4, 4, 1, 5, 5, 2, 1, 1, 1, 1, true},  /* window larger than the image, SAME */
    {1, 1, 1, 3, 1, 1, 2, 1, 1, 1, 1, false},
    /* Over a million multiply-adds: oneDNN's calls are cut into slices of 2 and 3 images on
     * two threads, and the filter gradient adds the slices' partial sums. */
    {5, 10, 10, 8, 3, 3, 32, 1, 1, 1, 1, true},
};

static void conv_matches_direct_loops(void **state) {
    tp_context_t *c = *state;
    for (size_t i = 0; i < COUNT_OF(conv_cases); i++) {
        check_conv(c, &conv_cases[i], TP_FLOAT32, i * 10);
        check_conv(c, &conv_cases[i], TP_FLOAT64, i * 10);
    }
}

/* 40 float64 images of 28x28x8 need more than one batch of im2col columns (16 MiB), so the
 * filter gradient adds batches up and the input gradient scatters each. */
static void float64_conv_in_several_batches(void **state) {
    geometry_t g = {40, 28, 28, 8, 3, 3, 4, 1, 1, 1, 1, true};
    check_conv(*state, &g, TP_FLOAT64, 99);
}

/* Worked by hand: 1..9 in a 3x3 image by a 2x2 filter of [1, 2; 3, 4]. */
static void conv_by_hand(void **state) {
    tp_context_t *c = *state;
    const double image[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, filter[] = {1, 2, 3, 4};
    for (int d = 0; d < 2; d++) {
        tp_dtype_t dtype = d == 0 ? TP_FLOAT32 : TP_FLOAT64;
        tp_tensor_t *x = tensor_of_doubles(c, dtype, TP_SHAPE(1, 3, 3, 1), image);
        tp_tensor_t *f = tensor_of_doubles(c, dtype, TP_SHAPE(2, 2, 1, 1), filter);
        tp_tensor_t *valid = NULL, *same = NULL, *strided = NULL;
        assert_ok(tp_conv2d(c, x, f, NULL, &valid));
        assert_ok(tp_conv2d(c, x, f, &(tp_conv2d_options_t){.padding = TP_PADDING_SAME}, &same));
        assert_ok(tp_conv2d(c, x, f,
                            &(tp_conv2d_options_t){.padding = TP_PADDING_SAME,
                                                   .stride_height = 2, .stride_width = 2},
                            &strided));
        tp_tensor_release(x);
        tp_tensor_release(f);
        /* 1*1+2*2+4*3+5*4 = 37, then 47, 67, 77. */
        expect_values("VALID", take(valid, TP_SHAPE(1, 2, 2, 1)), (double[]){37, 47, 67, 77}, 4,
                      0);
        /* SAME pads one row and one column after: the last column sees 3,6 and 6,9 only. */
        expect_values("SAME", take(same, TP_SHAPE(1, 3, 3, 1)),
                      (double[]){37, 47, 21, 67, 77, 33, 23, 26, 9}, 9, 0);
        expect_values("SAME, stride 2", take(strided, TP_SHAPE(1, 2, 2, 1)),
                      (double[]){37, 21, 23, 9}, 4, 0);
    }
}

static const geometry_t pool_cases[] = {
    /* n  h  w  c  kh kw o  sh sw dh dw same */
    {2, 5, 5, 3, 2, 2, 3, 2, 2, 1, 1, false},
    {2, 5, 5, 3, 2, 2, 3, 2, 2, 1, 1, true},
    {1, 6, 7, 2, 3, 3, 2, 2, 2, 1, 1, true},
    {1, 6, 6, 2, 3, 2, 2, 1, 1, 1, 1, false}, /* overlapping windows */
    {2, 4, 4, 3, 1, 1, 3, 1, 1, 1, 1, false},
    {1, 5, 5, 1, 3, 3, 1, 3, 3, 1, 1, true},
    {3, 8, 8, 16, 2, 2, 16, 2, 2, 1, 1, true}, /* the digits model's pooling */
    {7, 20, 20, 32, 2, 2, 32, 2, 2, 1, 1, false}, /* large enough to be cut into slices */
    {5, 20, 20, 32, 3, 3, 32, 2, 2, 1, 1, true},
};

static void pooling_matches_direct_loops(void **state) {
    for (size_t i = 0; i < COUNT_OF(pool_cases); i++) {
        check_pool(*state, &pool_cases[i], TP_FLOAT32);
        check_pool(*state, &pool_cases[i], TP_FLOAT64);
    }
}

/* Worked by hand: 1..16 in a 4x4 image; SAME's 3x3 windows by 2 see the padding on the right
 * and bottom, which the average does not count. */
static void pooling_by_hand(void **state) {
    tp_context_t *c = *state;
    double image[16];
    for (int i = 0; i < 16; i++) image[i] = i + 1;
    for (int d = 0; d < 2; d++) {
        tp_tensor_t *x =
            tensor_of_doubles(c, d == 0 ? TP_FLOAT32 : TP_FLOAT64, TP_SHAPE(1, 4, 4, 1), image);
        tp_pool_options_t halve = {.window_height = 2, .window_width = 2};
        tp_pool_options_t same = {.window_height = 3, .window_width = 3, .stride_height = 2,
                                  .stride_width = 2, .padding = TP_PADDING_SAME};
        tp_tensor_t *max = NULL, *avg = NULL, *max_same = NULL, *avg_same = NULL;
        assert_ok(tp_max_pool(c, x, &halve, &max));
        assert_ok(tp_avg_pool(c, x, &halve, &avg));
        assert_ok(tp_max_pool(c, x, &same, &max_same));
        assert_ok(tp_avg_pool(c, x, &same, &avg_same));
        tp_tensor_release(x);
        expect_values("MaxPool 2x2", take(max, TP_SHAPE(1, 2, 2, 1)),
                      (double[]){6, 8, 14, 16}, 4, 0);
        expect_values("AvgPool 2x2", take(avg, TP_SHAPE(1, 2, 2, 1)),
                      (double[]){3.5, 5.5, 11.5, 13.5}, 4, 0);
        /* SAME: 4 / 2 = 2 outputs, padding 1 in all, after: windows rows 0-2 and 2-3. */
        expect_values("MaxPool SAME", take(max_same, TP_SHAPE(1, 2, 2, 1)),
                      (double[]){11, 12, 15, 16}, 4, 0);
        expect_values("AvgPool SAME", take(avg_same, TP_SHAPE(1, 2, 2, 1)),
                      (double[]){6, 7.5, 12, 13.5}, 4, 1e-7);
    }
}

/* An empty batch gives an empty result; no input channels (or no images, for the filter's
 * gradient) give zeros; and nothing is read from the empty tensors. */
static void empty_tensors(void **state) {
    tp_context_t *c = *state;
    for (int d = 0; d < 2; d++) {
        tp_dtype_t dtype = d == 0 ? TP_FLOAT32 : TP_FLOAT64;
        double ones[64];
        for (int i = 0; i < 64; i++) ones[i] = 1;
        geometry_t no_images = {0, 4, 4, 2, 3, 3, 3, 1, 1, 1, 1, true};
        geometry_t no_channels = {2, 4, 4, 0, 3, 3, 3, 1, 1, 1, 1, true};
        attrs_t attrs, filter_attrs;
        conv_attrs(&no_images, &attrs, NULL, TP_SCALAR_SHAPE);
        conv_attrs(&no_images, &filter_attrs, "filter_sizes", filter_shape(&no_images));
        tp_tensor_t *x = tensor_of_doubles(c, dtype, image_shape(&no_images), ones);
        tp_tensor_t *f = tensor_of_doubles(c, dtype, filter_shape(&no_images), ones);
        tp_tensor_t *y = run(c, "Conv2D", x, f, NULL, &attrs);
        tp_tensor_t *df = run(c, "Conv2DBackpropFilter", x, y, NULL, &filter_attrs);
        tp_tensor_t *pooled = NULL;
        assert_ok(tp_max_pool(c, x, &(tp_pool_options_t){.window_height = 2, .window_width = 2},
                              &pooled));
        free(take(y, TP_SHAPE(0, 4, 4, 3)));
        free(take(pooled, TP_SHAPE(0, 2, 2, 2)));
        expect_values("the filter gradient of no images", take(df, TP_SHAPE(3, 3, 2, 3)),
                      (double[18]){0}, 18, 0);
        tp_tensor_release(x);
        tp_tensor_release(f);

        x = tensor_of_doubles(c, dtype, image_shape(&no_channels), ones);
        f = tensor_of_doubles(c, dtype, filter_shape(&no_channels), ones);
        y = run(c, "Conv2D", x, f, NULL, &attrs);
        tp_tensor_release(x);
        tp_tensor_release(f);
        expect_values("a convolution of no channels", take(y, TP_SHAPE(2, 4, 4, 3)),
                      (double[96]){0}, 96, 0);
    }
}

/* ---- Gradients ------------------------------------------------------------------------------- */

/* The tape's gradient of sum(op(x, f) * weights) against central finite differences of the
 * same sum, for every input value, in float64. */
typedef tp_status_t *(*forward_fn)(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *f,
                                   tp_tensor_t **out);

static double weighted_sum(tp_context_t *c, forward_fn forward, tp_tensor_t *x, tp_tensor_t *f,
                           tp_tensor_t *weights, tp_tensor_t **out_loss) {
    tp_tensor_t *y = NULL, *product = NULL, *loss = NULL;
    assert_ok(forward(c, x, f, &y));
    assert_ok(tp_mul(c, y, weights, &product));
    assert_ok(tp_sum(c, product, NULL, 0, false, &loss));
    tp_tensor_release(y);
    tp_tensor_release(product);
    double value = 0;
    assert_ok(tp_tensor_read(loss, &value, sizeof value));
    if (out_loss != NULL)
        *out_loss = loss;
    else
        tp_tensor_release(loss);
    return value;
}

static void check_by_differences(tp_context_t *c, forward_fn forward, tp_shape_t xs,
                                 tp_shape_t fs, tp_shape_t ys, bool distinct, const char *what) {
    int64_t nx = element_count(xs), nf = fs.rank > 0 ? element_count(fs) : 0,
            ny = element_count(ys);
    double *x = distinct ? distinct_values(nx) : random_values(nx, 3);
    double *f = random_values(nf, 4), *w = random_values(ny, 5);
    tp_tensor_t *tw = tensor_of_doubles(c, TP_FLOAT64, ys, w);
    double *values[2] = {x, f};
    tp_shape_t shapes[2] = {xs, fs};
    tp_tensor_t *grads[2] = {NULL, NULL};
    {
        tp_tensor_t *tx = tensor_of_doubles(c, TP_FLOAT64, xs, x);
        tp_tensor_t *tf = nf > 0 ? tensor_of_doubles(c, TP_FLOAT64, fs, f) : NULL;
        tp_tensor_t *sources[2] = {tx, tf}, *loss = NULL;
        tp_tape_t *tape = NULL;
        assert_ok(tp_tape_begin(c, &tape));
        assert_ok(tp_tape_watch(tape, tx));
        if (tf != NULL) assert_ok(tp_tape_watch(tape, tf));
        weighted_sum(c, forward, tx, tf, tw, &loss);
        assert_ok(tp_tape_gradient(tape, loss, sources, tf != NULL ? 2 : 1, grads));
        tp_tape_destroy(tape);
        tp_tensor_release(loss);
        tp_tensor_release(tx);
        tp_tensor_release(tf);
    }
    for (int which = 0; which < (nf > 0 ? 2 : 1); which++) {
        int64_t n = element_count(shapes[which]);
        double *want = malloc((size_t)n * sizeof *want);
        assert_non_null(want);
        const double step = 1e-6;
        for (int64_t i = 0; i < n; i++) {
            double kept = values[which][i], sums[2];
            for (int side = 0; side < 2; side++) {
                values[which][i] = kept + (side == 0 ? step : -step);
                tp_tensor_t *tx = tensor_of_doubles(c, TP_FLOAT64, xs, x);
                tp_tensor_t *tf = nf > 0 ? tensor_of_doubles(c, TP_FLOAT64, fs, f) : NULL;
                sums[side] = weighted_sum(c, forward, tx, tf, tw, NULL);
                tp_tensor_release(tx);
                tp_tensor_release(tf);
            }
            values[which][i] = kept;
            want[i] = (sums[0] - sums[1]) / (2 * step);
        }
        char text[128];
        snprintf(text, sizeof text, "%s: the gradient of the %s", what,
                 which == 0 ? "input" : "filter");
        expect_values(text, take(grads[which], shapes[which]), want, n, 1e-6);
        free(want);
    }
    tp_tensor_release(tw);
    free(x), free(f), free(w);
}

static tp_status_t *conv_same_strided(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *f,
                                      tp_tensor_t **out) {
    return tp_conv2d(c, x, f,
                     &(tp_conv2d_options_t){.padding = TP_PADDING_SAME, .stride_height = 2,
                                            .stride_width = 2},
                     out);
}

static tp_status_t *conv_valid_dilated(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *f,
                                       tp_tensor_t **out) {
    return tp_conv2d(c, x, f, &(tp_conv2d_options_t){.dilation_height = 2, .dilation_width = 2},
                     out);
}

static tp_status_t *max_pool_same(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *f,
                                  tp_tensor_t **out) {
    (void)f;
    return tp_max_pool(c, x,
                       &(tp_pool_options_t){.window_height = 3, .window_width = 3,
                                            .stride_height = 2, .stride_width = 2,
                                            .padding = TP_PADDING_SAME},
                       out);
}

static tp_status_t *avg_pool_same(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *f,
                                  tp_tensor_t **out) {
    (void)f;
    return tp_avg_pool(c, x,
                       &(tp_pool_options_t){.window_height = 2, .window_width = 3,
                                            .stride_height = 1, .stride_width = 2,
                                            .padding = TP_PADDING_SAME},
                       out);
}

static void gradients_match_finite_differences(void **state) {
    tp_context_t *c = *state;
    check_by_differences(c, conv_same_strided, TP_SHAPE(2, 5, 4, 2), TP_SHAPE(3, 3, 2, 3),
                         TP_SHAPE(2, 3, 2, 3), false, "Conv2D SAME, stride 2");
    check_by_differences(c, conv_valid_dilated, TP_SHAPE(1, 6, 5, 2), TP_SHAPE(2, 2, 2, 2),
                         TP_SHAPE(1, 4, 3, 2), false, "Conv2D VALID, dilation 2");
    check_by_differences(c, max_pool_same, TP_SHAPE(2, 5, 5, 2), TP_SCALAR_SHAPE,
                         TP_SHAPE(2, 3, 3, 2), true, "MaxPool SAME");
    check_by_differences(c, avg_pool_same, TP_SHAPE(2, 5, 5, 2), TP_SCALAR_SHAPE,
                         TP_SHAPE(2, 5, 3, 2), false, "AvgPool SAME");
}

/* ---- Many shapes, several threads ------------------------------------------------------------- */

/* More shapes than the oneDNN plan cache keeps (64): old plans are dropped and made again, and
 * every result stays right. */
static void many_shapes(void **state) {
    for (int round = 0; round < 2; round++)
        for (int64_t i = 0; i < 72; i++) {
            geometry_t g = {1 + i % 3, 4 + i % 5, 5 + i / 9, 1 + i % 4, 1 + i % 3, 1 + (i + 1) % 3,
                            1 + i % 5, 1 + i % 2, 1, 1, 1, i % 2 == 0};
            check_conv(*state, &g, TP_FLOAT32, (uint64_t)i);
        }
}

typedef struct {
    tp_context_t *context;
    int first;
    int failures;
} worker_t;

/* One thread's convolutions, some of a shape other threads use at the same time and some of
 * its own, each checked; failures counted, not asserted, off the main thread. */
static void *convolve(void *arg) {
    worker_t *worker = arg;
    for (int i = 0; i < 24; i++) {
        int shape = i % 2 == 0 ? 0 : worker->first + i;
        geometry_t g = {2, 6 + shape % 3, 6, 2 + shape % 2, 3, 3, 4, 1 + shape % 2, 1, 1, 1, true};
        tp_shape_t xs = image_shape(&g), fs = filter_shape(&g), ys = output_shape(&g);
        int64_t nx = element_count(xs), nf = element_count(fs), ny = element_count(ys);
        double *x = random_values(nx, (uint64_t)i), *f = random_values(nf, (uint64_t)i + 1);
        double *want = malloc((size_t)ny * sizeof *want);
        float *got = malloc((size_t)ny * sizeof *got);
        for (int64_t k = 0; k < nx; k++) x[k] = (float)x[k];
        for (int64_t k = 0; k < nf; k++) f[k] = (float)f[k];
        reference_conv(&g, x, f, want);
        float *xf = malloc((size_t)nx * sizeof *xf), *ff = malloc((size_t)nf * sizeof *ff);
        for (int64_t k = 0; k < nx; k++) xf[k] = (float)x[k];
        for (int64_t k = 0; k < nf; k++) ff[k] = (float)f[k];
        tp_tensor_t *tx = NULL, *tf = NULL, *y = NULL;
        tp_status_t *status = tp_tensor_create(worker->context, TP_FLOAT32, xs, xf,
                                               (size_t)nx * sizeof *xf, &tx);
        if (status == NULL)
            status = tp_tensor_create(worker->context, TP_FLOAT32, fs, ff,
                                      (size_t)nf * sizeof *ff, &tf);
        if (status == NULL)
            status = tp_conv2d(worker->context, tx, tf,
                               &(tp_conv2d_options_t){.padding = TP_PADDING_SAME,
                                                      .stride_height = (int32_t)g.sh},
                               &y);
        if (status == NULL) status = tp_tensor_read(y, got, (size_t)ny * sizeof *got);
        if (status != NULL) {
            worker->failures++;
            tp_status_free(status);
        } else {
            for (int64_t k = 0; k < ny; k++)
                if (fabs(got[k] - want[k]) > 2e-5 * (fabs(want[k]) > 1 ? fabs(want[k]) : 1)) {
                    worker->failures++;
                    break;
                }
        }
        tp_tensor_release(tx);
        tp_tensor_release(tf);
        tp_tensor_release(y);
        free(x), free(f), free(want), free(got), free(xf), free(ff);
    }
    return NULL;
}

static void threads_at_once(void **state) {
    enum { THREADS = 4 };
    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker_t){*state, 100 + 30 * t, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, convolve, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(workers[t].failures, 0);
    }
}

/* ---- Refusals -------------------------------------------------------------------------------- */

typedef struct {
    const char *what;
    const char *op;
    tp_shape_t inputs[3];
    int num_inputs;
    int64_t strides[4], dilations[4], ksize[4], sizes[4];
    int num_strides, num_dilations, num_ksize, num_sizes;
    const char *padding, *format;
    const char *fragment;
} refusal_t;

#define IMAGE TP_SHAPE(1, 4, 4, 2)
#define FILTER TP_SHAPE(3, 3, 2, 3)
#define ONES4 {1, 1, 1, 1}

static const refusal_t refusals[] = {
    {"channels", "Conv2D", {IMAGE, TP_SHAPE(3, 3, 3, 3)}, 2, ONES4, {0}, {0}, {0}, 4, 0, 0, 0,
     "SAME", NULL,
     "Conv2D: the input has 2 channels but the filter takes 3 (input [1,4,4,2], filter "
     "[3,3,3,3])"},
    {"stride 0", "Conv2D", {IMAGE, FILTER}, 2, {1, 0, 1, 1}, {0}, {0}, {0}, 4, 0, 0, 0, "SAME",
     NULL, "Conv2D: strides must be between 1 and 2147483647, got [1,0,1,1]"},
    {"3 strides", "Conv2D", {IMAGE, FILTER}, 2, {1, 1, 1}, {0}, {0}, {0}, 3, 0, 0, 0, "SAME",
     NULL, "Conv2D: strides must have 4 values, one per dimension of NHWC, but has 3"},
    {"batch stride", "Conv2D", {IMAGE, FILTER}, 2, {2, 1, 1, 1}, {0}, {0}, {0}, 4, 0, 0, 0,
     "SAME", NULL, "Conv2D: strides must be 1 for the batch and the channels, got [2,1,1,1]"},
    {"channel dilation", "Conv2D", {IMAGE, FILTER}, 2, ONES4, {1, 1, 1, 2}, {0}, {0}, 4, 4, 0,
     0, "SAME", NULL,
     "Conv2D: dilations must be 1 for the batch and the channels, got [1,1,1,2]"},
    {"window larger than the image", "Conv2D", {IMAGE, TP_SHAPE(5, 3, 2, 3)}, 2, ONES4, {0},
     {0}, {0}, 4, 0, 0, 0, "VALID", NULL,
     "Conv2D: with VALID padding the window's height, 5, is larger than the input's height, "
     "4"},
    {"dilated window larger than the image", "Conv2D", {IMAGE, FILTER}, 2, ONES4, {1, 1, 2, 1},
     {0}, {0}, 4, 4, 0, 0, "VALID", NULL,
     "Conv2D: with VALID padding the window's width, 3 dilated by 2 to 5, is larger than the "
     "input's width, 4"},
    {"padding", "Conv2D", {IMAGE, FILTER}, 2, ONES4, {0}, {0}, {0}, 4, 0, 0, 0, "FULL", NULL,
     "Conv2D: padding must be \"SAME\" or \"VALID\", got \"FULL\""},
    {"format", "Conv2D", {IMAGE, FILTER}, 2, ONES4, {0}, {0}, {0}, 4, 0, 0, 0, "SAME", "NCHW",
     "Conv2D: data_format \"NCHW\" is not supported; only \"NHWC\" is"},
    {"rank", "Conv2D", {TP_SHAPE(4, 4, 2), FILTER}, 2, ONES4, {0}, {0}, {0}, 4, 0, 0, 0, "SAME",
     NULL,
     "Conv2D: the input must be 4-dimensional [batch, height, width, channels], got [4,4,2]"},
    {"filter rank", "Conv2D", {IMAGE, TP_SHAPE(3, 2, 3)}, 2, ONES4, {0}, {0}, {0}, 4, 0, 0, 0,
     "SAME", NULL,
     "Conv2D: the filter must be 4-dimensional [height, width, in_channels, out_channels], "
     "got [3,2,3]"},
    {"empty window", "Conv2D", {IMAGE, TP_SHAPE(0, 3, 2, 3)}, 2, ONES4, {0}, {0}, {0}, 4, 0, 0,
     0, "SAME", NULL, "Conv2D: the window's height is 0; it must be at least 1"},
    {"input gradient of another shape", "Conv2DBackpropInput",
     {FILTER, TP_SHAPE(1, 2, 2, 3)}, 2, ONES4, {0}, {0}, {1, 4, 4, 2}, 4, 0, 0, 4, "SAME", NULL,
     "Conv2DBackpropInput: out_backprop is [1,2,2,3], but the Conv2D it follows gives "
     "[1,4,4,3]"},
    {"input_sizes of 3 values", "Conv2DBackpropInput", {FILTER, TP_SHAPE(1, 4, 4, 3)}, 2, ONES4,
     {0}, {0}, {4, 4, 2}, 4, 0, 0, 3, "SAME", NULL,
     "Conv2DBackpropInput: input_sizes must have 4 dimensions, got 3"},
    {"filter gradient of another channel count", "Conv2DBackpropFilter",
     {IMAGE, TP_SHAPE(1, 4, 4, 3)}, 2, ONES4, {0}, {0}, {3, 3, 5, 3}, 4, 0, 0, 4, "SAME", NULL,
     "Conv2DBackpropFilter: the input has 2 channels but the filter takes 5"},
    {"pool window 0", "MaxPool", {IMAGE}, 1, ONES4, {0}, {1, 0, 2, 1}, {0}, 4, 0, 4, 0, "SAME",
     NULL, "MaxPool: ksize must be between 1 and 2147483647, got [1,0,2,1]"},
    {"pool across channels", "AvgPool", {IMAGE}, 1, ONES4, {0}, {1, 2, 2, 2}, {0}, 4, 0, 4, 0,
     "SAME", NULL, "AvgPool: ksize must be 1 for the batch and the channels, got [1,2,2,2]"},
    {"pool window larger than the image", "MaxPool", {IMAGE}, 1, ONES4, {0}, {1, 2, 5, 1}, {0},
     4, 0, 4, 0, "VALID", NULL,
     "MaxPool: with VALID padding the window's width, 5, is larger than the input's width, 4"},
    {"pool padding", "AvgPool", {IMAGE}, 1, ONES4, {0}, {1, 2, 2, 1}, {0}, 4, 0, 4, 0, "same",
     NULL, "AvgPool: padding must be \"SAME\" or \"VALID\", got \"same\""},
    {"MaxPoolGrad of another output", "MaxPoolGrad",
     {IMAGE, TP_SHAPE(1, 2, 2, 2), TP_SHAPE(1, 3, 3, 2)}, 3, {1, 2, 2, 1}, {0}, {1, 2, 2, 1},
     {0}, 4, 0, 4, 0, "VALID", NULL,
     "MaxPoolGrad: grad is [1,3,3,2], but the MaxPool it follows gives [1,2,2,2]"},
    {"AvgPoolGrad of another shape", "AvgPoolGrad", {TP_SHAPE(1, 2, 2, 3)}, 1, {1, 2, 2, 1},
     {0}, {1, 2, 2, 1}, {1, 4, 4, 2}, 4, 0, 4, 4, "VALID", NULL,
     "AvgPoolGrad: grad is [1,2,2,3], but the AvgPool it follows gives [1,2,2,2]"},
    {"negative orig_input_shape", "AvgPoolGrad", {TP_SHAPE(1, 2, 2, 2)}, 1, {1, 2, 2, 1}, {0},
     {1, 2, 2, 1}, {1, -4, 4, 2}, 4, 0, 4, 4, "VALID", NULL,
     "AvgPoolGrad: orig_input_shape [1,-4,4,2] has a negative dimension"},
};

static void refusals_name_the_op_and_the_value(void **state) {
    tp_context_t *c = *state;
    double zeros[128] = {0};
    for (size_t r = 0; r < COUNT_OF(refusals); r++) {
        const refusal_t *test = &refusals[r];
        tp_tensor_t *inputs[3] = {NULL, NULL, NULL};
        for (int i = 0; i < test->num_inputs; i++)
            assert_true(element_count(test->inputs[i]) <= 128);
        for (int i = 0; i < test->num_inputs; i++)
            inputs[i] = tensor_of_doubles(c, TP_FLOAT32, test->inputs[i], zeros);
        bool pool = strstr(test->op, "Pool") != NULL;
        tp_attr_t attrs[6];
        size_t count = 0;
        attrs[count++] = TP_ATTR_LIST_VALUE("strides", test->strides, test->num_strides);
        attrs[count++] = TP_ATTR_STRING_VALUE("padding", test->padding);
        if (test->num_dilations > 0)
            attrs[count++] = TP_ATTR_LIST_VALUE("dilations", test->dilations,
                                                test->num_dilations);
        if (pool) attrs[count++] = TP_ATTR_LIST_VALUE("ksize", test->ksize, test->num_ksize);
        if (test->format != NULL)
            attrs[count++] = TP_ATTR_STRING_VALUE("data_format", test->format);
        if (test->num_sizes > 0) {
            const char *name = strcmp(test->op, "Conv2DBackpropInput") == 0 ? "input_sizes"
                               : strcmp(test->op, "Conv2DBackpropFilter") == 0
                                   ? "filter_sizes"
                                   : "orig_input_shape";
            attrs[count++] = (tp_attr_t){.name = name, .type = TP_ATTR_SHAPE,
                                         .list = test->sizes, .count = test->num_sizes};
        }
        tp_tensor_t *out = NULL;
        tp_status_t *status =
            tp_execute(c, test->op, inputs, (size_t)test->num_inputs, attrs, count, &out, 1);
        for (int i = 0; i < test->num_inputs; i++) tp_tensor_release(inputs[i]);
        if (status == NULL) {
            tp_tensor_release(out);
            fail_msg("%s: accepted", test->what);
        }
        assert_null(out);
        if (tp_status_code(status) != TP_INVALID_ARGUMENT ||
            strstr(tp_status_message(status), test->fragment) == NULL) {
            print_error("%s: got %s '%s'\n", test->what, tp_code_name(tp_status_code(status)),
                        tp_status_message(status));
            tp_status_free(status);
            fail_msg("wanted INVALID_ARGUMENT containing '%s'", test->fragment);
        }
        tp_status_free(status);
    }
}

/* The public functions' own refusals, and the dtypes the ops do not take. */
static void wrapper_refusals(void **state) {
    tp_context_t *c = *state;
    double zeros[64] = {0};
    tp_tensor_t *x = tensor_of_doubles(c, TP_FLOAT32, IMAGE, zeros),
                *f = tensor_of_doubles(c, TP_FLOAT32, FILTER, zeros);
    tp_tensor_t *out = NULL;
    assert_error(tp_conv2d(c, x, f, &(tp_conv2d_options_t){.padding = (tp_padding_t)7}, &out),
                 TP_INVALID_ARGUMENT,
                 "Conv2D: padding 7 is neither TP_PADDING_VALID nor TP_PADDING_SAME");
    assert_error(tp_max_pool(c, x, NULL, &out), TP_INVALID_ARGUMENT,
                 "MaxPool: the options (the window's size) are NULL");
    assert_error(tp_avg_pool(c, x, &(tp_pool_options_t){.window_height = 2}, &out),
                 TP_INVALID_ARGUMENT, "AvgPool: ksize must be between 1 and 2147483647, got "
                                      "[1,2,0,1]");
    assert_error(tp_conv2d(c, x, f, &(tp_conv2d_options_t){.stride_width = -2}, &out),
                 TP_INVALID_ARGUMENT, "Conv2D: strides must be between 1 and 2147483647, got "
                                      "[1,1,-2,1]");
    assert_null(out);
    tp_tensor_release(x);
    tp_tensor_release(f);
    int32_t ints[32] = {0};
    tp_tensor_t *xi = NULL, *fi = NULL;
    assert_ok(tp_tensor_create(c, TP_INT32, IMAGE, ints, sizeof ints, &xi));
    assert_ok(tp_tensor_create(c, TP_INT32, TP_SHAPE(1, 1, 2, 1), ints, 8, &fi));
    assert_error(tp_conv2d(c, xi, fi, NULL, &out), TP_INVALID_ARGUMENT,
                 "Conv2D does not support int32 for 'T'");
    tp_tensor_release(xi);
    tp_tensor_release(fi);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(conv_by_hand),
        TEST(conv_matches_direct_loops),
        TEST(float64_conv_in_several_batches),
        TEST(pooling_by_hand),
        TEST(pooling_matches_direct_loops),
        TEST(empty_tensors),
        TEST(gradients_match_finite_differences),
        TEST(many_shapes),
        TEST(threads_at_once),
        TEST(refusals_name_the_op_and_the_value),
        TEST(wrapper_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
