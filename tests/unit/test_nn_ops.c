/* SPDX-License-Identifier: Apache-2.0 */
/* The ops of src/op/ops_nn.c on the CPU: LogSoftmax, the softmax cross-entropy losses,
 * FusedBatchNorm and Dropout, each against a naive computation written here (the direct
 * formulas, without the kernels' stabilising steps), with logits of 1e4, every refusal with its
 * code and message, and every gradient (Softmax's too) against central finite differences in
 * float64 through the tape. The fixture fails a test that leaves device memory in use. */
#include "cpu_fixture.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensorplug/training.h"

/* ---- Tensors in and out ---------------------------------------------------------------------- */

#define TENSOR(c, dtype, shape, ...)                                                           \
    tensor_of_doubles((c), (dtype), (shape), (const double[]){__VA_ARGS__})

/* Every value within `tolerance` (relative, and absolute below 1) of `want`. */
static void expect_close(tp_tensor_t *t, const double *want, int64_t count, double tolerance) {
    assert_int_equal(tp_tensor_num_elements(t), count);
    double *got = read_doubles(t, NULL);
    for (int64_t i = 0; i < count; i++) {
        if (!(fabs(got[i] - want[i]) <= tolerance * fmax(1, fabs(want[i])))) {
            double g = got[i];
            free(got);
            fail_msg("element %lld: %.17g, wanted %.17g", (long long)i, g, want[i]);
        }
    }
    free(got);
}

/* ---- Naive references ------------------------------------------------------------------------ */

/* softmax of one row straight from the definition: exp(x) / sum(exp(x)). */
static void naive_softmax(const double *x, int64_t width, double *p) {
    double total = 0;
    for (int64_t j = 0; j < width; j++) total += exp(x[j]);
    for (int64_t j = 0; j < width; j++) p[j] = exp(x[j]) / total;
}

/* ---- LogSoftmax ------------------------------------------------------------------------------ */

static void log_softmax_is_the_log_of_softmax(void **state) {
    tp_context_t *c = *state;
    const double x[] = {1, 2, 3, -1, 0.5, 0, 0, 0, 0, 0, -3, 2.5};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < 2; d++) {
        tp_tensor_t *logits = tensor_of_doubles(c, dtypes[d], TP_SHAPE(3, 4), x), *y = NULL;
        assert_ok(tp_log_softmax(c, logits, &y));
        assert_int_equal(tp_tensor_dtype(y), dtypes[d]);
        assert_tensor_shape(y, TP_SHAPE(3, 4));
        double want[12];
        for (int r = 0; r < 3; r++) {
            naive_softmax(x + 4 * r, 4, want + 4 * r);
            for (int j = 0; j < 4; j++) want[4 * r + j] = log(want[4 * r + j]);
        }
        expect_close(y, want, 12, dtypes[d] == TP_FLOAT32 ? 1e-6 : 1e-14);
        tp_tensor_release(logits);
        tp_tensor_release(y);
    }
}

/* exp(1e4) overflows; the shift by the row's maximum keeps every value exact. */
static void log_softmax_of_huge_logits_is_finite(void **state) {
    tp_context_t *c = *state;
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < 2; d++) {
        tp_tensor_t *logits = TENSOR(c, dtypes[d], TP_SHAPE(2, 3), 1e4, 1e4 - 1, 1e4 - 3, -1e4,
                                     0, 1e4),
                    *y = NULL;
        assert_ok(tp_log_softmax(c, logits, &y));
        double small[3];
        naive_softmax((const double[]){0, -1, -3}, 3, small);
        const double want[] = {log(small[0]), log(small[1]), log(small[2]), -2e4, -1e4, 0};
        expect_close(y, want, 6, dtypes[d] == TP_FLOAT32 ? 1e-6 : 1e-14);
        tp_tensor_release(logits);
        tp_tensor_release(y);
    }
}

static void log_softmax_refuses_scalars_and_integers(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *scalar = TENSOR(c, TP_FLOAT32, TP_SCALAR_SHAPE, 1), *y;
    tp_tensor_t *ints = TENSOR(c, TP_INT32, TP_SHAPE(2), 1, 2);
    assert_op_fails(y, tp_log_softmax(c, scalar, &y), TP_INVALID_ARGUMENT,
                    "LogSoftmax: logits must have rank >= 1");
    assert_op_fails(y, tp_log_softmax(c, ints, &y), TP_INVALID_ARGUMENT,
                    "LogSoftmax does not support int32");
    tp_tensor_release(scalar);
    tp_tensor_release(ints);
}

/* ---- Softmax cross-entropy ------------------------------------------------------------------- */

/* loss = -sum(labels log(softmax)), backprop = softmax - labels, from the definitions. */
static void naive_cross_entropy(const double *features, const double *labels, int64_t rows,
                                int64_t width, double *loss, double *backprop) {
    for (int64_t r = 0; r < rows; r++) {
        double p[16];
        naive_softmax(features + r * width, width, p);
        loss[r] = 0;
        for (int64_t j = 0; j < width; j++) {
            loss[r] -= labels[r * width + j] * log(p[j]);
            backprop[r * width + j] = p[j] - labels[r * width + j];
        }
    }
}

static void softmax_cross_entropy_matches_the_definition(void **state) {
    tp_context_t *c = *state;
    const double features[] = {1, 2, 3, 1, 1, 1, -2, 0.5, 4};
    const double labels[] = {0, 0, 1, 0.5, 0.5, 0, 0.1, 0.2, 0.7};
    double want_loss[3], want_backprop[9];
    naive_cross_entropy(features, labels, 3, 3, want_loss, want_backprop);
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < 2; d++) {
        tp_tensor_t *f = tensor_of_doubles(c, dtypes[d], TP_SHAPE(3, 3), features);
        tp_tensor_t *l = tensor_of_doubles(c, dtypes[d], TP_SHAPE(3, 3), labels);
        tp_tensor_t *loss = NULL, *backprop = NULL;
        assert_ok(tp_softmax_cross_entropy_with_logits(c, f, l, &loss, &backprop));
        assert_tensor_shape(loss, TP_SHAPE(3));
        assert_tensor_shape(backprop, TP_SHAPE(3, 3));
        double tolerance = dtypes[d] == TP_FLOAT32 ? 1e-6 : 1e-14;
        expect_close(loss, want_loss, 3, tolerance);
        expect_close(backprop, want_backprop, 9, tolerance);
        /* Without the backprop output. */
        tp_tensor_release(loss);
        assert_ok(tp_softmax_cross_entropy_with_logits(c, f, l, &loss, NULL));
        expect_close(loss, want_loss, 3, tolerance);
        tp_tensor_release(f);
        tp_tensor_release(l);
        tp_tensor_release(loss);
        tp_tensor_release(backprop);
    }
}

/* Logits 1e4 apart: softmax is one-hot to double precision, and the loss of the other class is
 * the gap itself, where exp() alone would overflow to inf / inf. */
static void cross_entropy_of_huge_logits_is_exact(void **state) {
    tp_context_t *c = *state;
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < 2; d++) {
        tp_tensor_t *f = TENSOR(c, dtypes[d], TP_SHAPE(2, 3), 1e4, 0, -1e4, 1e4, 1e4, 1e4);
        tp_tensor_t *l = TENSOR(c, dtypes[d], TP_SHAPE(2, 3), 0, 1, 0, 1, 0, 0);
        tp_tensor_t *sparse = TENSOR(c, TP_INT32, TP_SHAPE(2), 1, 0);
        tp_tensor_t *loss = NULL, *backprop = NULL, *sparse_loss = NULL, *sparse_backprop = NULL;
        assert_ok(tp_softmax_cross_entropy_with_logits(c, f, l, &loss, &backprop));
        assert_ok(tp_sparse_softmax_cross_entropy_with_logits(c, f, sparse, &sparse_loss,
                                                              &sparse_backprop));
        const double want_loss[] = {1e4, log(3.0)};
        const double third = 1.0 / 3;
        const double want_backprop[] = {1, -1, 0, third - 1, third, third};
        double tolerance = dtypes[d] == TP_FLOAT32 ? 1e-6 : 1e-14;
        expect_close(loss, want_loss, 2, tolerance);
        expect_close(backprop, want_backprop, 6, tolerance);
        expect_close(sparse_loss, want_loss, 2, tolerance);
        expect_close(sparse_backprop, want_backprop, 6, tolerance);
        tp_tensor_t *all[] = {f, l, sparse, loss, backprop, sparse_loss, sparse_backprop};
        for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
    }
}

/* Sparse labels give the loss of their one-hot rows, with int32 and int64 labels. */
static void sparse_cross_entropy_matches_one_hot_labels(void **state) {
    tp_context_t *c = *state;
    const double features[] = {0.5, -1, 2, 0, 3, 3, 1, -4, 0.25, 0.75, -0.5, 2};
    const double one_hot[] = {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0};
    double want_loss[3], want_backprop[12];
    naive_cross_entropy(features, one_hot, 3, 4, want_loss, want_backprop);
    const tp_dtype_t label_dtypes[] = {TP_INT32, TP_INT64};
    for (size_t d = 0; d < 2; d++) {
        tp_tensor_t *f = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(3, 4), features);
        tp_tensor_t *labels = TENSOR(c, label_dtypes[d], TP_SHAPE(3), 3, 0, 2);
        tp_tensor_t *loss = NULL, *backprop = NULL;
        assert_ok(tp_sparse_softmax_cross_entropy_with_logits(c, f, labels, &loss, &backprop));
        expect_close(loss, want_loss, 3, 1e-14);
        expect_close(backprop, want_backprop, 12, 1e-14);
        tp_tensor_release(f);
        tp_tensor_release(labels);
        tp_tensor_release(loss);
        tp_tensor_release(backprop);
    }
}

static void cross_entropy_refuses_labels_out_of_range(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *f = TENSOR(c, TP_FLOAT32, TP_SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    tp_tensor_t *high = TENSOR(c, TP_INT64, TP_SHAPE(3), 0, 2, 5);
    tp_tensor_t *negative = TENSOR(c, TP_INT32, TP_SHAPE(3), 0, -1, 3);
    tp_tensor_t *loss, *backprop = NULL;
    assert_op_fails(loss,
                    tp_sparse_softmax_cross_entropy_with_logits(c, f, high, &loss, &backprop),
                    TP_INVALID_ARGUMENT,
                    "SparseSoftmaxCrossEntropyWithLogits: row 2 has label 5, outside the valid "
                    "range [0, 3)");
    assert_null(backprop);
    assert_op_fails(loss, tp_sparse_softmax_cross_entropy(c, negative, f, &loss),
                    TP_INVALID_ARGUMENT, "row 1 has label -1, outside the valid range [0, 3)");
    tp_tensor_release(f);
    tp_tensor_release(high);
    tp_tensor_release(negative);
}

static void cross_entropy_refuses_mismatched_shapes_and_dtypes(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *f = TENSOR(c, TP_FLOAT32, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tp_tensor_t *wide = TENSOR(c, TP_FLOAT32, TP_SHAPE(2, 4), 0, 0, 0, 1, 0, 0, 0, 1);
    tp_tensor_t *vector = TENSOR(c, TP_FLOAT32, TP_SHAPE(3), 1, 2, 3);
    tp_tensor_t *f64 = TENSOR(c, TP_FLOAT64, TP_SHAPE(2, 3), 0, 0, 1, 0, 1, 0);
    tp_tensor_t *three_labels = TENSOR(c, TP_INT32, TP_SHAPE(3), 0, 1, 2);
    tp_tensor_t *float_labels = TENSOR(c, TP_FLOAT32, TP_SHAPE(2), 0, 1);
    tp_tensor_t *loss;
    assert_op_fails(loss, tp_softmax_cross_entropy_with_logits(c, f, wide, &loss, NULL),
                    TP_INVALID_ARGUMENT,
                    "SoftmaxCrossEntropyWithLogits: features and labels must be matrices "
                    "[batch, classes] of one shape; got features [2,3] and labels [2,4]");
    assert_op_fails(loss, tp_softmax_cross_entropy_with_logits(c, vector, vector, &loss, NULL),
                    TP_INVALID_ARGUMENT, "got features [3] and labels [3]");
    assert_op_fails(loss, tp_softmax_cross_entropy_with_logits(c, f, f64, &loss, NULL),
                    TP_INVALID_ARGUMENT, "SoftmaxCrossEntropyWithLogits: input 1 ('labels') is "
                                         "float64");
    assert_op_fails(loss,
                    tp_sparse_softmax_cross_entropy_with_logits(c, f, three_labels, &loss, NULL),
                    TP_INVALID_ARGUMENT,
                    "SparseSoftmaxCrossEntropyWithLogits: features must be a matrix [batch, "
                    "classes] and labels a vector [batch]; got features [2,3] and labels [3]");
    assert_op_fails(loss,
                    tp_sparse_softmax_cross_entropy_with_logits(c, f, float_labels, &loss, NULL),
                    TP_INVALID_ARGUMENT,
                    "SparseSoftmaxCrossEntropyWithLogits does not support float32 for "
                    "'Tlabels'");
    tp_tensor_t *all[] = {f, wide, vector, f64, three_labels, float_labels};
    for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
}

/* A NaN or infinite loss fails in the kernel, naming the op and the first bad row. */
static void a_loss_that_is_not_finite_is_an_error_naming_the_row(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *nan_row = TENSOR(c, TP_FLOAT32, TP_SHAPE(3, 2), 1, 2, 3, 4, 5, NAN);
    tp_tensor_t *labels = TENSOR(c, TP_FLOAT32, TP_SHAPE(3, 2), 1, 0, 0, 1, 0.5, 0.5);
    tp_tensor_t *infinite = TENSOR(c, TP_FLOAT64, TP_SHAPE(2, 2), 1, 2, -INFINITY, 0);
    tp_tensor_t *sparse = TENSOR(c, TP_INT32, TP_SHAPE(2), 0, 0);
    tp_tensor_t *loss;
    assert_op_fails(loss, tp_softmax_cross_entropy_with_logits(c, nan_row, labels, &loss, NULL),
                    TP_INVALID_ARGUMENT,
                    "SoftmaxCrossEntropyWithLogits: the loss of row 2 is NaN");
    assert_op_fails(loss,
                    tp_sparse_softmax_cross_entropy_with_logits(c, infinite, sparse, &loss, NULL),
                    TP_INVALID_ARGUMENT,
                    "SparseSoftmaxCrossEntropyWithLogits: the loss of row 1 is +inf");
    /* A -inf logit where the label is 0 costs nothing: 0 log 0 = 0. */
    tp_tensor_t *fine = TENSOR(c, TP_INT32, TP_SHAPE(2), 0, 1);
    assert_ok(tp_sparse_softmax_cross_entropy_with_logits(c, infinite, fine, &loss, NULL));
    const double want[] = {log(1 + exp(1.0)), 0};
    expect_close(loss, want, 2, 1e-14);
    tp_tensor_release(loss);
    tp_tensor_t *all[] = {nan_row, labels, infinite, sparse, fine};
    for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
}

/* training.h's losses: the mean over the batch of the ops' per-row losses. */
static void mean_losses_average_the_rows(void **state) {
    tp_context_t *c = *state;
    const double features[] = {1, 2, 3, 1, 1, 1};
    const double labels[] = {0, 0, 1, 1, 0, 0};
    double want_loss[2], backprop[6];
    naive_cross_entropy(features, labels, 2, 3, want_loss, backprop);
    tp_tensor_t *f = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(2, 3), features);
    tp_tensor_t *l = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(2, 3), labels);
    tp_tensor_t *sparse = TENSOR(c, TP_INT64, TP_SHAPE(2), 2, 0);
    tp_tensor_t *mean = NULL, *sparse_mean = NULL;
    assert_ok(tp_softmax_cross_entropy(c, l, f, &mean));
    assert_ok(tp_sparse_softmax_cross_entropy(c, sparse, f, &sparse_mean));
    assert_tensor_shape(mean, TP_SCALAR_SHAPE);
    const double want = (want_loss[0] + want_loss[1]) / 2;
    expect_close(mean, &want, 1, 1e-14);
    expect_close(sparse_mean, &want, 1, 1e-14);
    tp_tensor_t *unused = NULL;
    assert_op_fails(unused, tp_softmax_cross_entropy(NULL, l, f, &unused), TP_INVALID_ARGUMENT,
                    "tp_softmax_cross_entropy: argument 'context' is NULL");
    assert_error(tp_sparse_softmax_cross_entropy(c, sparse, f, NULL), TP_INVALID_ARGUMENT,
                 "tp_sparse_softmax_cross_entropy: argument 'mean_loss' is NULL");
    tp_tensor_t *all[] = {f, l, sparse, mean, sparse_mean};
    for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
}

/* ---- FusedBatchNorm -------------------------------------------------------------------------- */

typedef struct {
    double epsilon, factor;
    bool training;
} batch_norm_t;

/* FusedBatchNorm from its definition, channel by channel over x [rows, channels]. */
static void naive_batch_norm(const double *x, int64_t rows, int64_t channels,
                             const double *scale, const double *offset, const double *mean_in,
                             const double *variance_in, batch_norm_t attrs, double *y,
                             double *batch_mean, double *batch_variance) {
    for (int64_t c = 0; c < channels; c++) {
        double mean = mean_in[c], variance = variance_in[c];
        if (attrs.training) {
            mean = variance = 0;
            for (int64_t r = 0; r < rows; r++) mean += x[r * channels + c] / (double)rows;
            for (int64_t r = 0; r < rows; r++)
                variance += pow(x[r * channels + c] - mean, 2) / (double)rows;
            double unbiased = rows > 1 ? variance * (double)rows / (double)(rows - 1) : variance;
            batch_mean[c] = (1 - attrs.factor) * mean_in[c] + attrs.factor * mean;
            batch_variance[c] = (1 - attrs.factor) * variance_in[c] + attrs.factor * unbiased;
        } else {
            batch_mean[c] = mean;
            batch_variance[c] = variance;
        }
        for (int64_t r = 0; r < rows; r++)
            y[r * channels + c] = scale[c] * (x[r * channels + c] - mean) /
                                      sqrt(variance + attrs.epsilon) +
                                  offset[c];
    }
}

static void check_batch_norm(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape,
                             batch_norm_t attrs) {
    int64_t n = element_count(shape), channels = shape.dims[shape.rank - 1];
    int64_t rows = n / channels;
    double x[96], scale[8], offset[8], mean[8], variance[8];
    assert_true(n <= 96 && channels <= 8);
    for (int64_t i = 0; i < n; i++) x[i] = 3 + sin(1.7 * (double)i) * (1 + (double)(i % 3));
    for (int64_t k = 0; k < channels; k++) {
        scale[k] = 0.5 + 0.25 * (double)k;
        offset[k] = 1 - 0.5 * (double)k;
        mean[k] = 2.5 + 0.1 * (double)k;
        variance[k] = 1.5 + 0.2 * (double)k;
    }
    double want_y[96], want_mean[8], want_variance[8];
    naive_batch_norm(x, rows, channels, scale, offset, mean, variance, attrs, want_y, want_mean,
                     want_variance);
    tp_shape_t vector = TP_SHAPE(channels);
    tp_tensor_t *tx = tensor_of_doubles(c, dtype, shape, x),
                *ts = tensor_of_doubles(c, dtype, vector, scale);
    tp_tensor_t *to = tensor_of_doubles(c, dtype, vector, offset),
                *tm = tensor_of_doubles(c, dtype, vector, mean);
    tp_tensor_t *tv = tensor_of_doubles(c, dtype, vector, variance);
    tp_tensor_t *y = NULL, *batch_mean = NULL, *batch_variance = NULL;
    assert_ok(tp_fused_batch_norm(c, tx, ts, to, tm, tv, attrs.epsilon, attrs.training,
                                  attrs.factor, &y, &batch_mean, &batch_variance));
    assert_tensor_shape(y, shape);
    assert_tensor_shape(batch_mean, vector);
    double tolerance = dtype == TP_FLOAT32 ? 1e-5 : 1e-12;
    expect_close(y, want_y, n, tolerance);
    expect_close(batch_mean, want_mean, channels, tolerance);
    expect_close(batch_variance, want_variance, channels, tolerance);
    tp_tensor_t *all[] = {tx, ts, to, tm, tv, y, batch_mean, batch_variance};
    for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
}

static void fused_batch_norm_matches_the_definition(void **state) {
    tp_context_t *c = *state;
    const batch_norm_t modes[] = {{1e-3, 1, true}, {1e-4, 0.25, true}, {0.01, 1, false}};
    const tp_shape_t shapes[] = {TP_SHAPE(6, 3), TP_SHAPE(2, 3, 2, 4), TP_SHAPE(1, 2)};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t m = 0; m < COUNT_OF(modes); m++)
        for (size_t s = 0; s < COUNT_OF(shapes); s++)
            for (size_t d = 0; d < 2; d++) check_batch_norm(c, dtypes[d], shapes[s], modes[m]);
}

/* A batch of one has variance 0: y is the offset, and Bessel's n / (n - 1) is taken as 1. An
 * empty batch has no statistics: NaN, as TensorFlow gives. */
static void fused_batch_norm_of_one_and_of_no_rows(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = TENSOR(c, TP_FLOAT64, TP_SHAPE(1, 2), 5, -7);
    tp_tensor_t *scale = TENSOR(c, TP_FLOAT64, TP_SHAPE(2), 2, 3);
    tp_tensor_t *offset = TENSOR(c, TP_FLOAT64, TP_SHAPE(2), 0.5, -0.5);
    tp_tensor_t *stats = TENSOR(c, TP_FLOAT64, TP_SHAPE(2), 1, 1);
    tp_tensor_t *y = NULL, *mean = NULL, *variance = NULL;
    assert_ok(tp_fused_batch_norm(c, x, scale, offset, stats, stats, 1e-3, true, 1, &y, &mean,
                                  &variance));
    expect_close(y, (const double[]){0.5, -0.5}, 2, 0);
    expect_close(mean, (const double[]){5, -7}, 2, 0);
    expect_close(variance, (const double[]){0, 0}, 2, 0);
    tp_tensor_release(y);
    tp_tensor_release(mean);
    tp_tensor_release(variance);
    tp_tensor_t *empty = NULL;
    assert_ok(tp_tensor_create(c, TP_FLOAT64, TP_SHAPE(0, 2), NULL, 0, &empty));
    assert_ok(tp_fused_batch_norm(c, empty, scale, offset, stats, stats, 1e-3, true, 1, &y,
                                  &mean, NULL));
    assert_tensor_shape(y, TP_SHAPE(0, 2));
    double *m = read_doubles(mean, NULL);
    assert_true(isnan(m[0]) && isnan(m[1]));
    free(m);
    tp_tensor_t *all[] = {x, scale, offset, stats, y, mean, empty};
    for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
}

static void fused_batch_norm_refuses_bad_shapes_and_attributes(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x3 = TENSOR(c, TP_FLOAT32, TP_SHAPE(1, 2, 2), 1, 2, 3, 4);
    tp_tensor_t *x = TENSOR(c, TP_FLOAT32, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_t *two = TENSOR(c, TP_FLOAT32, TP_SHAPE(2), 1, 1);
    tp_tensor_t *three = TENSOR(c, TP_FLOAT32, TP_SHAPE(3), 1, 1, 1);
    tp_tensor_t *y;
    assert_op_fails(y, tp_fused_batch_norm(c, x3, two, two, two, two, 1e-3, true, 1, &y, NULL,
                                           NULL),
                    TP_INVALID_ARGUMENT,
                    "FusedBatchNorm: x must be [batch, channels] or NHWC [batch, height, width, "
                    "channels]; got [1,2,2]");
    assert_op_fails(y, tp_fused_batch_norm(c, x, two, two, two, three, 1e-3, true, 1, &y, NULL,
                                           NULL),
                    TP_INVALID_ARGUMENT,
                    "FusedBatchNorm: variance must be a vector of x's 2 channels [2]; got [3] "
                    "for x [2,2]");
    assert_op_fails(y, tp_fused_batch_norm(c, x, two, two, two, two, -1, true, 1, &y, NULL,
                                           NULL),
                    TP_INVALID_ARGUMENT, "FusedBatchNorm: epsilon must be a finite number >= 0, "
                                         "not -1");
    assert_op_fails(y, tp_fused_batch_norm(c, x, two, two, two, two, 1e-3, true, 1.5, &y, NULL,
                                           NULL),
                    TP_INVALID_ARGUMENT,
                    "FusedBatchNorm: exponential_avg_factor must be in [0, 1], not 1.5");
    assert_op_fails(y, tp_fused_batch_norm(c, x, two, two, two, two, NAN, true, 1, &y, NULL,
                                           NULL),
                    TP_INVALID_ARGUMENT, "epsilon must be a finite number >= 0, not nan");
    tp_tensor_t *all[] = {x3, x, two, three};
    for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
}

/* ---- Dropout --------------------------------------------------------------------------------- */

/* Dropout keeps element i where RandomUniform float32 with its seed draws >= rate (another op,
 * the independent reference), scales kept values by 1 / (1 - rate), and keeps about 1 - rate. */
static void dropout_keeps_where_the_uniform_stream_reaches_the_rate(void **state) {
    tp_context_t *c = *state;
    enum { N = 10007 };
    double *x = malloc(N * sizeof *x);
    assert_non_null(x);
    for (int i = 0; i < N; i++) x[i] = (double)(i % 17) - 8.5;
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < 2; d++) {
        const double rate = 0.3;
        tp_tensor_t *tx = tensor_of_doubles(c, dtypes[d], TP_SHAPE(N), x), *y = NULL, *mask = NULL;
        tp_tensor_t *uniform = NULL;
        assert_ok(tp_dropout(c, tx, rate, 77, &y, &mask));
        assert_ok(tp_random_uniform(c, TP_FLOAT32, TP_SHAPE(N), 77, &uniform));
        double *ys = read_doubles(y, NULL), *ms = read_doubles(mask, NULL),
               *us = read_doubles(uniform, NULL);
        double scale = dtypes[d] == TP_FLOAT32 ? (double)(float)(1 / (1 - rate)) : 1 / (1 - rate);
        int kept = 0;
        for (int i = 0; i < N; i++) {
            bool keep = us[i] >= rate;
            double want_y = dtypes[d] == TP_FLOAT32 ? (double)((float)x[i] * (float)scale)
                                                    : x[i] * scale;
            if (ms[i] != (keep ? scale : 0) || ys[i] != (keep ? want_y : 0))
                fail_msg("%s element %d: y %.9g, mask %.9g, uniform %.9g",
                         tp_dtype_name(dtypes[d]), i, ys[i], ms[i], us[i]);
            kept += keep;
        }
        /* Binomial(N, 0.7): deviation 46; five of them. */
        assert_true(fabs(kept - 0.7 * N) < 230);
        free(ys);
        free(ms);
        free(us);
        tp_tensor_t *all[] = {tx, y, mask, uniform};
        for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
    }
    free(x);
}

static void dropout_at_rate_zero_is_the_identity(void **state) {
    tp_context_t *c = *state;
    const float x[] = {1.5f, -0.0f, NAN, -3e38f, 1e-45f};
    tp_tensor_t *tx = NULL, *y = NULL, *mask = NULL;
    assert_ok(tp_tensor_create(c, TP_FLOAT32, TP_SHAPE(5), x, sizeof x, &tx));
    assert_ok(tp_dropout(c, tx, 0, 123, &y, &mask));
    float got[5];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_memory_equal(got, x, sizeof x); /* bit for bit: -0 and NaN included */
    expect_close(mask, (const double[]){1, 1, 1, 1, 1}, 5, 0);
    tp_tensor_release(tx);
    tp_tensor_release(y);
    tp_tensor_release(mask);
}

/* One seed gives one mask; another seed another. */
static void dropout_masks_follow_the_seed(void **state) {
    tp_context_t *c = *state;
    enum { N = 256 };
    double x[N];
    for (int i = 0; i < N; i++) x[i] = 1;
    tp_tensor_t *tx = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(N), x);
    double *masks[3];
    const int64_t seeds[] = {5, 5, 6};
    for (int k = 0; k < 3; k++) {
        tp_tensor_t *y = NULL;
        assert_ok(tp_dropout(c, tx, 0.5, seeds[k], &y, NULL));
        masks[k] = read_doubles(y, NULL);
        tp_tensor_release(y);
    }
    int same = 0, other = 0;
    for (int i = 0; i < N; i++) {
        same += masks[0][i] == masks[1][i];
        other += masks[0][i] == masks[2][i];
    }
    assert_int_equal(same, N);
    assert_true(other < N * 3 / 4); /* about half agree by chance */
    for (int k = 0; k < 3; k++) free(masks[k]);
    tp_tensor_release(tx);
}

static void dropout_refuses_rates_outside_zero_to_one(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = TENSOR(c, TP_FLOAT32, TP_SHAPE(2), 1, 2), *y;
    tp_tensor_t *ints = TENSOR(c, TP_INT32, TP_SHAPE(2), 1, 2);
    assert_op_fails(y, tp_dropout(c, x, 1, 0, &y, NULL), TP_INVALID_ARGUMENT,
                    "Dropout: rate must be in [0, 1), not 1");
    assert_op_fails(y, tp_dropout(c, x, -0.25, 0, &y, NULL), TP_INVALID_ARGUMENT,
                    "Dropout: rate must be in [0, 1), not -0.25");
    assert_op_fails(y, tp_dropout(c, x, NAN, 0, &y, NULL), TP_INVALID_ARGUMENT,
                    "Dropout: rate must be in [0, 1), not nan");
    assert_op_fails(y, tp_dropout(c, ints, 0.5, 0, &y, NULL), TP_INVALID_ARGUMENT,
                    "Dropout does not support int32");
    tp_tensor_release(x);
    tp_tensor_release(ints);
}

/* In a traced function, Dropout is stateful like the random ops: the first call draws the
 * eager mask, the next a new one. */
static tp_status_t *dropout_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                 size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                 void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    return tp_dropout(context, inputs[0], 0.5, 9, &outputs[0], NULL);
}

static void a_traced_dropout_draws_a_new_mask_per_call(void **state) {
    tp_context_t *c = *state;
    enum { N = 64 };
    double x[N];
    for (int i = 0; i < N; i++) x[i] = 1;
    tp_tensor_t *tx = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(N), x), *eager = NULL,
                *first = NULL, *second = NULL;
    assert_ok(tp_dropout(c, tx, 0.5, 9, &eager, NULL));
    tp_function_t *function = NULL;
    assert_ok(tp_function_create(c, "dropout", dropout_body, 1, NULL, &function));
    assert_ok(tp_function_call(function, &tx, 1, &first, 1));
    assert_ok(tp_function_call(function, &tx, 1, &second, 1));
    double *e = read_doubles(eager, NULL), *a = read_doubles(first, NULL),
           *b = read_doubles(second, NULL);
    int same_first = 0, same_second = 0;
    for (int i = 0; i < N; i++) {
        same_first += e[i] == a[i];
        same_second += e[i] == b[i];
    }
    assert_int_equal(same_first, N);
    assert_true(same_second < N);
    free(e);
    free(a);
    free(b);
    tp_function_destroy(function);
    tp_tensor_release(tx);
    tp_tensor_release(eager);
    tp_tensor_release(first);
    tp_tensor_release(second);
}

/* ---- Gradients against finite differences ---------------------------------------------------- */

enum { MAX_INPUTS = 7, MAX_OUTPUTS = 3 };

typedef enum { ANY, POSITIVE, PROBABILITIES, LABELS } value_kind_t;

typedef struct {
    tp_dtype_t dtype; /* float64 inputs are differentiated, others held */
    tp_shape_t shape;
    value_kind_t kind;
} input_t;

typedef struct {
    const char *label;
    const char *op;
    int num_inputs, num_outputs;
    input_t inputs[MAX_INPUTS];
    tp_attr_t attrs[3];
    int num_attrs;
} gradient_case_t;

/* Input i's values: ANY in +-[0.2, 1.2], POSITIVE in [0.5, 1.5], PROBABILITIES rows along the
 * last axis that sum to one, LABELS class indices below the last dimension of input 0. */
static double *input_values(const gradient_case_t *test, int i) {
    const input_t *in = &test->inputs[i];
    int64_t n = element_count(in->shape);
    double *v = malloc((size_t)n * sizeof *v + 1);
    assert_non_null(v);
    for (int64_t k = 0; k < n; k++) {
        double unit = fmod(0.6180339887 * (double)(k + 1) * (double)(i + 2), 1.0);
        switch (in->kind) {
        case ANY: v[k] = (k % 3 == 1 ? -1 : 1) * (0.2 + unit); break;
        case POSITIVE: v[k] = 0.5 + unit; break;
        case PROBABILITIES: v[k] = 0.1 + unit; break;
        case LABELS: {
            const tp_shape_t *f = &test->inputs[0].shape;
            v[k] = (double)((k * 7 + 3) % f->dims[f->rank - 1]);
            break;
        }
        }
    }
    int64_t width = in->shape.dims[in->shape.rank - 1];
    if (in->kind == PROBABILITIES && width > 0) {
        for (int64_t r = 0; r < n / width; r++) {
            double total = 0;
            for (int64_t j = 0; j < width; j++) total += v[r * width + j];
            for (int64_t j = 0; j < width; j++) v[r * width + j] /= total;
        }
    }
    return v;
}

/* f = sum over outputs o and elements k of w(o, k) out_o[k], weights of both signs. */
static tp_status_t *objective(tp_context_t *c, const gradient_case_t *test,
                              tp_tensor_t *const *inputs, tp_tensor_t **out) {
    tp_tensor_t *outputs[MAX_OUTPUTS] = {NULL}, *total = NULL;
    tp_status_t *error = tp_execute(c, test->op, inputs, (size_t)test->num_inputs, test->attrs,
                                    (size_t)test->num_attrs, outputs,
                                    (size_t)test->num_outputs);
    for (int o = 0; o < test->num_outputs && error == NULL; o++) {
        int64_t n = tp_tensor_num_elements(outputs[o]);
        double *w = malloc((size_t)n * sizeof *w + 1);
        assert_non_null(w);
        for (int64_t k = 0; k < n; k++)
            w[k] = (k % 2 ? -1 : 1) * (0.3 + fmod(0.7548776662 * (double)(k + 1 + 5 * o), 1.0));
        tp_tensor_t *weights = tensor_of_doubles(c, TP_FLOAT64, tp_tensor_shape(outputs[o]), w);
        free(w);
        tp_tensor_t *weighted = NULL, *sum = NULL, *next = NULL;
        error = tp_mul(c, outputs[o], weights, &weighted);
        if (error == NULL) error = tp_sum(c, weighted, NULL, 0, false, &sum);
        if (error == NULL && total != NULL) error = tp_add(c, total, sum, &next);
        if (error == NULL) {
            tp_tensor_release(total);
            total = next != NULL ? next : tp_tensor_retain(sum);
        }
        tp_tensor_release(weights);
        tp_tensor_release(weighted);
        tp_tensor_release(sum);
    }
    for (int o = 0; o < test->num_outputs; o++) tp_tensor_release(outputs[o]);
    if (error != NULL) {
        tp_tensor_release(total);
        return error;
    }
    *out = total;
    return NULL;
}

static double evaluate(tp_context_t *c, const gradient_case_t *test, double *const *values) {
    tp_tensor_t *inputs[MAX_INPUTS] = {NULL}, *f = NULL;
    for (int i = 0; i < test->num_inputs; i++)
        inputs[i] = tensor_of_doubles(c, test->inputs[i].dtype, test->inputs[i].shape, values[i]);
    assert_ok(objective(c, test, inputs, &f));
    double *value = read_doubles(f, NULL), result = value[0];
    free(value);
    tp_tensor_release(f);
    for (int i = 0; i < test->num_inputs; i++) tp_tensor_release(inputs[i]);
    return result;
}

/* The tape's gradient of f with respect to every float64 input equals (f(x+h) - f(x-h)) / 2h
 * to 1e-6, relative above 1. */
static void check_gradient(tp_context_t *c, const gradient_case_t *test) {
    const double h = 1e-6;
    double *values[MAX_INPUTS] = {NULL};
    tp_tensor_t *inputs[MAX_INPUTS] = {NULL}, *sources[MAX_INPUTS] = {NULL};
    tp_tensor_t *grads[MAX_INPUTS] = {NULL}, *f = NULL;
    int num_sources = 0, source_of[MAX_INPUTS];
    for (int i = 0; i < test->num_inputs; i++) {
        values[i] = input_values(test, i);
        inputs[i] = tensor_of_doubles(c, test->inputs[i].dtype, test->inputs[i].shape, values[i]);
        source_of[i] = test->inputs[i].dtype == TP_FLOAT64 ? num_sources : -1;
        if (source_of[i] >= 0) sources[num_sources++] = inputs[i];
    }
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    for (int s = 0; s < num_sources; s++) assert_ok(tp_tape_watch(tape, sources[s]));
    tp_status_t *error = objective(c, test, inputs, &f);
    if (error == NULL)
        error = tp_tape_gradient(tape, f, sources, (size_t)num_sources, grads);
    tp_tape_destroy(tape);
    tp_tensor_release(f);
    for (int i = 0; i < test->num_inputs; i++) tp_tensor_release(inputs[i]);
    if (error != NULL) print_error("in %s:\n", test->label);
    assert_ok(error);
    bool ok = true;
    for (int i = 0; i < test->num_inputs; i++) {
        if (source_of[i] < 0) continue;
        tp_tensor_t *grad = grads[source_of[i]];
        assert_tensor_shape(grad, test->inputs[i].shape);
        double *analytic = read_doubles(grad, NULL);
        int64_t n = element_count(test->inputs[i].shape);
        for (int64_t k = 0; k < n; k++) {
            double saved = values[i][k];
            values[i][k] = saved + h;
            double plus = evaluate(c, test, values);
            values[i][k] = saved - h;
            double minus = evaluate(c, test, values);
            values[i][k] = saved;
            double numeric = (plus - minus) / (2 * h);
            if (!(fabs(analytic[k] - numeric) <= 1e-6 * fmax(1, fabs(numeric)))) {
                print_error("%s: input %d element %lld: tape %.12g, finite differences %.12g\n",
                            test->label, i, (long long)k, analytic[k], numeric);
                ok = false;
            }
        }
        free(analytic);
    }
    for (int s = 0; s < num_sources; s++) tp_tensor_release(grads[s]);
    for (int i = 0; i < test->num_inputs; i++) free(values[i]);
    if (!ok) fail_msg("%s: the gradient differs from finite differences", test->label);
}

#define F64_IN(kind, ...) {TP_FLOAT64, {TP_SHAPE_NARGS_(__VA_ARGS__), {__VA_ARGS__}}, kind}
/* Attributes as plain initializers: the TP_ATTR_*_VALUE compound literals are not constant
 * expressions, which a static table needs. */
#define FLOAT_ATTR(n, v) {.name = (n), .type = TP_ATTR_FLOAT, .f = (v)}
#define INT_ATTR(n, v) {.name = (n), .type = TP_ATTR_INT, .i = (v)}
#define BOOL_ATTR(n, v) {.name = (n), .type = TP_ATTR_BOOL, .i = (v)}
#define BATCH_NORM_ATTRS(epsilon, training, factor)                                            \
    {FLOAT_ATTR("epsilon", epsilon), BOOL_ATTR("is_training", training),                       \
     FLOAT_ATTR("exponential_avg_factor", factor)},                                            \
        3

static const gradient_case_t softmax_cases[] = {
    {"Softmax of a matrix", "Softmax", 1, 1, {F64_IN(ANY, 3, 4)}, {{0}}, 0},
    {"Softmax of a vector", "Softmax", 1, 1, {F64_IN(ANY, 5)}, {{0}}, 0},
    {"LogSoftmax of a matrix", "LogSoftmax", 1, 1, {F64_IN(ANY, 3, 4)}, {{0}}, 0},
    {"LogSoftmax over the last axis of rank 3", "LogSoftmax", 1, 1, {F64_IN(ANY, 2, 2, 3)},
     {{0}}, 0},
    {"SoftmaxCrossEntropyWithLogits, both outputs, both inputs",
     "SoftmaxCrossEntropyWithLogits", 2, 2,
     {F64_IN(ANY, 3, 4), F64_IN(PROBABILITIES, 3, 4)}, {{0}}, 0},
    {"SparseSoftmaxCrossEntropyWithLogits, int64 labels", "SparseSoftmaxCrossEntropyWithLogits",
     2, 2, {F64_IN(ANY, 4, 3), {TP_INT64, {1, {4}}, LABELS}}, {{0}}, 0},
    {"SparseSoftmaxCrossEntropyWithLogits, int32 labels", "SparseSoftmaxCrossEntropyWithLogits",
     2, 2, {F64_IN(ANY, 2, 5), {TP_INT32, {1, {2}}, LABELS}}, {{0}}, 0},
};

#define BATCH_NORM_INPUTS(...)                                                                 \
    {F64_IN(ANY, __VA_ARGS__), F64_IN(ANY, 3), F64_IN(ANY, 3), F64_IN(ANY, 3),                 \
     F64_IN(POSITIVE, 3)}

static const gradient_case_t batch_norm_cases[] = {
    {"FusedBatchNorm training [N, C]", "FusedBatchNorm", 5, 3, BATCH_NORM_INPUTS(4, 3),
     BATCH_NORM_ATTRS(1e-3, true, 1)},
    {"FusedBatchNorm training NHWC with a running average", "FusedBatchNorm", 5, 3,
     BATCH_NORM_INPUTS(2, 2, 1, 3), BATCH_NORM_ATTRS(1e-2, true, 0.3)},
    {"FusedBatchNorm training, a batch of one", "FusedBatchNorm", 5, 3, BATCH_NORM_INPUTS(1, 3),
     BATCH_NORM_ATTRS(0.5, true, 0.6)},
    {"FusedBatchNorm inference [N, C]", "FusedBatchNorm", 5, 3, BATCH_NORM_INPUTS(3, 3),
     BATCH_NORM_ATTRS(1e-3, false, 1)},
    {"FusedBatchNorm inference NHWC", "FusedBatchNorm", 5, 3, BATCH_NORM_INPUTS(1, 2, 2, 3),
     BATCH_NORM_ATTRS(0.1, false, 0.5)},
};

static const gradient_case_t dropout_cases[] = {
    {"Dropout at rate 0.4", "Dropout", 1, 2, {F64_IN(ANY, 5, 4)},
     {FLOAT_ATTR("rate", 0.4), INT_ATTR("seed", 3)}, 2},
    {"Dropout at rate 0", "Dropout", 1, 2, {F64_IN(ANY, 7)},
     {FLOAT_ATTR("rate", 0.0), INT_ATTR("seed", 3)}, 2},
};

static void softmax_family_gradients_match_finite_differences(void **state) {
    for (size_t t = 0; t < COUNT_OF(softmax_cases); t++) check_gradient(*state, &softmax_cases[t]);
}

static void batch_norm_gradients_match_finite_differences(void **state) {
    for (size_t t = 0; t < COUNT_OF(batch_norm_cases); t++)
        check_gradient(*state, &batch_norm_cases[t]);
}

static void dropout_gradient_matches_finite_differences(void **state) {
    for (size_t t = 0; t < COUNT_OF(dropout_cases); t++) check_gradient(*state, &dropout_cases[t]);
}

/* The gradient multiplies by the forward pass's own mask: elements dropped going forward get
 * nothing back. */
static void dropout_gradient_reuses_the_forward_mask(void **state) {
    tp_context_t *c = *state;
    enum { N = 50 };
    double x[N];
    for (int i = 0; i < N; i++) x[i] = 0.5 + i;
    tp_tensor_t *tx = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(N), x), *y = NULL, *mask = NULL;
    tp_tensor_t *sum = NULL, *grad = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, tx));
    assert_ok(tp_dropout(c, tx, 0.5, 1234, &y, &mask));
    assert_ok(tp_sum(c, y, NULL, 0, false, &sum));
    assert_ok(tp_tape_gradient(tape, sum, &tx, 1, &grad));
    tp_tape_destroy(tape);
    double *g = read_doubles(grad, NULL), *m = read_doubles(mask, NULL);
    int dropped = 0;
    for (int i = 0; i < N; i++) {
        assert_true(g[i] == m[i]);
        dropped += m[i] == 0;
    }
    assert_true(dropped > 0 && dropped < N);
    free(g);
    free(m);
    tp_tensor_t *all[] = {tx, y, mask, sum, grad};
    for (size_t k = 0; k < COUNT_OF(all); k++) tp_tensor_release(all[k]);
}

/* A classifier's step: the mean sparse loss's gradient for the logits is (softmax - one_hot)
 * / batch, TensorFlow's, in float32 with logits of 1e4. */
static void mean_sparse_loss_gradient_is_softmax_minus_one_hot(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *logits = TENSOR(c, TP_FLOAT32, TP_SHAPE(2, 3), 1e4, 0, -1e4, 0, 1, 2);
    tp_tensor_t *labels = TENSOR(c, TP_INT32, TP_SHAPE(2), 1, 2), *loss = NULL, *grad = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, logits));
    assert_ok(tp_sparse_softmax_cross_entropy(c, labels, logits, &loss));
    assert_ok(tp_tape_gradient(tape, loss, &logits, 1, &grad));
    tp_tape_destroy(tape);
    double p[3];
    naive_softmax((const double[]){0, 1, 2}, 3, p);
    const double want[] = {0.5, -0.5, 0, p[0] / 2, p[1] / 2, (p[2] - 1) / 2};
    expect_close(grad, want, 6, 1e-6);
    expect_close(loss, (const double[]){(1e4 - log(p[2])) / 2}, 1, 1e-6);
    tp_tensor_release(logits);
    tp_tensor_release(labels);
    tp_tensor_release(loss);
    tp_tensor_release(grad);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(log_softmax_is_the_log_of_softmax),
        TEST(log_softmax_of_huge_logits_is_finite),
        TEST(log_softmax_refuses_scalars_and_integers),
        TEST(softmax_cross_entropy_matches_the_definition),
        TEST(cross_entropy_of_huge_logits_is_exact),
        TEST(sparse_cross_entropy_matches_one_hot_labels),
        TEST(cross_entropy_refuses_labels_out_of_range),
        TEST(cross_entropy_refuses_mismatched_shapes_and_dtypes),
        TEST(a_loss_that_is_not_finite_is_an_error_naming_the_row),
        TEST(mean_losses_average_the_rows),
        TEST(fused_batch_norm_matches_the_definition),
        TEST(fused_batch_norm_of_one_and_of_no_rows),
        TEST(fused_batch_norm_refuses_bad_shapes_and_attributes),
        TEST(dropout_keeps_where_the_uniform_stream_reaches_the_rate),
        TEST(dropout_at_rate_zero_is_the_identity),
        TEST(dropout_masks_follow_the_seed),
        TEST(dropout_refuses_rates_outside_zero_to_one),
        TEST(a_traced_dropout_draws_a_new_mask_per_call),
        TEST(softmax_family_gradients_match_finite_differences),
        TEST(batch_norm_gradients_match_finite_differences),
        TEST(dropout_gradient_matches_finite_differences),
        TEST(dropout_gradient_reuses_the_forward_mask),
        TEST(mean_sparse_loss_gradient_is_softmax_minus_one_hot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
