/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FusedBatchNorm and FusedBatchNormGrad over channels-last tensors ([N, C] or NHWC): each
 * channel is normalised over the M = N (H W) values it has. Statistics are summed in double,
 * the variance in a second pass over (x - mean)^2 rather than from sums of squares, which would
 * cancel catastrophically when the mean is large against the deviation.
 *
 * Training (TensorFlow's semantics): y = scale (x - mean) / sqrt(var + epsilon) + offset with
 * the batch's mean and biased variance; batch_mean and batch_variance are the running averages
 * (1 - f) input + f batch, with f = exponential_avg_factor (f = 1: the batch's own values), the
 * batch's variance there corrected by M / (M - 1) (Bessel; M / 1 for M = 1). An empty batch has
 * no statistics: NaN, as TensorFlow gives. Inference: the given mean and variance normalise,
 * and batch_mean and batch_variance pass them through.
 *
 * FusedBatchNormGrad takes, besides y_backprop, the gradients reaching batch_mean and
 * batch_variance, so that every output is differentiated exactly; it keeps no reserve space
 * from the forward pass but recomputes the batch's mean and variance from x (one more pass over
 * x, against two passes over x and dy that the gradient makes anyway), so the forward op's
 * outputs are all ordinary tensors.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu_kernels.h"

typedef struct {
    double epsilon, factor;
    bool training;
} batch_norm_attrs_t;

static bool read_attrs(tp_kernel_context_t *context, batch_norm_attrs_t *out,
                       tp_plugin_status_t *status) {
    int32_t training = 0;
    tp_cpu_host->kernel_attr_float(context, "epsilon", &out->epsilon, status);
    if (!cpu_failed(status))
        tp_cpu_host->kernel_attr_float(context, "exponential_avg_factor", &out->factor, status);
    if (!cpu_failed(status))
        tp_cpu_host->kernel_attr_bool(context, "is_training", &training, status);
    out->training = training != 0;
    return !cpu_failed(status);
}

/* Rows of channels: x viewed as [rows, channels]. */
typedef struct {
    tp_dtype_t dtype;
    int64_t rows, channels;
} layout_t;

static layout_t layout_of(const tp_tensor_view_t *x) {
    layout_t layout = {x->dtype, cpu_dims_product(x->dims, 0, x->rank - 1),
                       x->dims[x->rank - 1]};
    return layout;
}

/* Per-channel mean and biased variance of x, into mean[C] and variance[C]. */
static void batch_statistics(const layout_t *l, const void *x, double *mean, double *variance) {
    for (int64_t c = 0; c < l->channels; c++) mean[c] = variance[c] = 0;
    for (int64_t r = 0; r < l->rows; r++)
        for (int64_t c = 0; c < l->channels; c++)
            mean[c] += cpu_load_float(x, l->dtype, r * l->channels + c);
    for (int64_t c = 0; c < l->channels; c++) mean[c] /= (double)l->rows;
    for (int64_t r = 0; r < l->rows; r++) {
        for (int64_t c = 0; c < l->channels; c++) {
            double d = cpu_load_float(x, l->dtype, r * l->channels + c) - mean[c];
            variance[c] += d * d;
        }
    }
    for (int64_t c = 0; c < l->channels; c++) variance[c] /= (double)l->rows;
}

/* Bessel's correction M / (M - 1) of a batch's variance over M rows (M / 1 for M = 1): the
 * forward pass applies it to batch_variance, and the gradient differentiates through it. */
static double bessel_factor(int64_t rows) {
    return (double)rows / (double)(rows > 1 ? rows - 1 : 1);
}

/* `arrays` arrays of C doubles in one allocation; false with RESOURCE_EXHAUSTED on `status`. */
static bool scratch(const char *op, int64_t channels, int64_t arrays, double **out,
                    tp_plugin_status_t *status) {
    size_t count = channels > 0 ? (size_t)(channels * arrays) : 1;
    *out = malloc(count * sizeof **out);
    if (*out == NULL)
        tp_cpu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "%s: out of host memory for the statistics of %lld channels", op,
                                (long long)channels);
    return *out != NULL;
}

/* y = scale (x - mean) inv + offset, over a slice of rows. */
typedef struct {
    layout_t layout;
    const void *x, *scale, *offset;
    const double *mean, *inv;
    void *y;
} normalize_job_t;

static void normalize_rows(void *arg, int64_t begin, int64_t end) {
    const normalize_job_t *job = arg;
    const layout_t *l = &job->layout;
    for (int64_t r = begin; r < end; r++) {
        for (int64_t c = 0; c < l->channels; c++) {
            int64_t i = r * l->channels + c;
            double centred = cpu_load_float(job->x, l->dtype, i) - job->mean[c];
            double value = cpu_load_float(job->scale, l->dtype, c) * centred * job->inv[c] +
                           cpu_load_float(job->offset, l->dtype, c);
            cpu_store_float(job->y, l->dtype, i, value);
        }
    }
}

static void fused_batch_norm(void *kernel, tp_kernel_context_t *context,
                             tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, scale, offset, mean_in, variance_in, y, batch_mean, batch_variance;
    batch_norm_attrs_t attrs;
    if (!cpu_input(context, 0, &x, status) || !cpu_input(context, 1, &scale, status) ||
        !cpu_input(context, 2, &offset, status) || !cpu_input(context, 3, &mean_in, status) ||
        !cpu_input(context, 4, &variance_in, status) || !cpu_output(context, 0, &y, status) ||
        !cpu_output(context, 1, &batch_mean, status) ||
        !cpu_output(context, 2, &batch_variance, status) || !read_attrs(context, &attrs, status))
        return;
    layout_t l = layout_of(&x.view);
    double *stats;
    if (!scratch("FusedBatchNorm", l.channels, 3, &stats, status)) return;
    double *mean = stats, *variance = stats + l.channels, *inv = stats + 2 * l.channels;
    tp_dtype_t t = l.dtype;
    if (attrs.training) {
        batch_statistics(&l, x.data, mean, variance);
        double bessel = bessel_factor(l.rows);
        for (int64_t c = 0; c < l.channels; c++) {
            double m = mean[c], v = variance[c] * bessel;
            if (attrs.factor != 1) {
                m = (1 - attrs.factor) * cpu_load_float(mean_in.data, t, c) + attrs.factor * m;
                v = (1 - attrs.factor) * cpu_load_float(variance_in.data, t, c) + attrs.factor * v;
            }
            cpu_store_float(batch_mean.data, t, c, l.rows > 0 ? m : NAN);
            cpu_store_float(batch_variance.data, t, c, l.rows > 0 ? v : NAN);
        }
    } else {
        for (int64_t c = 0; c < l.channels; c++) {
            mean[c] = cpu_load_float(mean_in.data, t, c);
            variance[c] = cpu_load_float(variance_in.data, t, c);
            cpu_store_float(batch_mean.data, t, c, mean[c]);
            cpu_store_float(batch_variance.data, t, c, variance[c]);
        }
    }
    for (int64_t c = 0; c < l.channels; c++) inv[c] = 1 / sqrt(variance[c] + attrs.epsilon);
    normalize_job_t job = {l, x.data, scale.data, offset.data, mean, inv, y.data};
    cpu_parallel_for(l.rows, 2 * l.channels + 1, normalize_rows, &job);
    free(stats);
}

/*
 * The gradient. With x^ = (x - mean) inv and per channel sums over the M rows:
 *   offset_backprop = sum(dy),  scale_backprop = sum(dy x^);
 *   training:  x_backprop = scale inv (dy - sum(dy) / M - x^ sum(dy x^) / M)
 *                           + f dmean / M + 2 f bessel dvar (x - mean) / M,
 *              the last two the paths through batch_mean and batch_variance;
 *   inference: x_backprop = scale inv dy (batch_mean and batch_variance do not depend on x).
 */
typedef struct {
    layout_t layout;
    bool training;
    const void *dy, *x, *scale;
    const double *mean, *inv, *sum_dy, *sum_dy_xhat, *from_mean, *from_variance;
    void *dx;
} gradient_job_t;

static void gradient_rows(void *arg, int64_t begin, int64_t end) {
    const gradient_job_t *job = arg;
    const layout_t *l = &job->layout;
    tp_dtype_t t = l->dtype;
    double count = (double)l->rows;
    for (int64_t r = begin; r < end; r++) {
        for (int64_t c = 0; c < l->channels; c++) {
            int64_t i = r * l->channels + c;
            double centred = cpu_load_float(job->x, t, i) - job->mean[c];
            double dy = cpu_load_float(job->dy, t, i);
            double through_y = cpu_load_float(job->scale, t, c) * job->inv[c];
            double value;
            if (job->training)
                value = through_y * (dy - job->sum_dy[c] / count -
                                     centred * job->inv[c] * job->sum_dy_xhat[c] / count) +
                        job->from_mean[c] + job->from_variance[c] * centred;
            else
                value = through_y * dy;
            cpu_store_float(job->dx, t, i, value);
        }
    }
}

static void fused_batch_norm_grad(void *kernel, tp_kernel_context_t *context,
                                  tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t dy, x, scale, mean_in, variance_in, dmean, dvariance, dx, dscale, doffset;
    batch_norm_attrs_t attrs;
    if (!cpu_input(context, 0, &dy, status) || !cpu_input(context, 1, &x, status) ||
        !cpu_input(context, 2, &scale, status) || !cpu_input(context, 3, &mean_in, status) ||
        !cpu_input(context, 4, &variance_in, status) || !cpu_input(context, 5, &dmean, status) ||
        !cpu_input(context, 6, &dvariance, status) || !cpu_output(context, 0, &dx, status) ||
        !cpu_output(context, 1, &dscale, status) || !cpu_output(context, 2, &doffset, status) ||
        !read_attrs(context, &attrs, status))
        return;
    layout_t l = layout_of(&x.view);
    tp_dtype_t t = l.dtype;
    double *stats;
    if (!scratch("FusedBatchNormGrad", l.channels, 7, &stats, status)) return;
    double *mean = stats, *variance = stats + l.channels, *inv = stats + 2 * l.channels;
    double *sum_dy = stats + 3 * l.channels, *sum_dy_xhat = stats + 4 * l.channels;
    double *from_mean = stats + 5 * l.channels, *from_variance = stats + 6 * l.channels;
    if (attrs.training) {
        batch_statistics(&l, x.data, mean, variance);
    } else {
        for (int64_t c = 0; c < l.channels; c++) {
            mean[c] = cpu_load_float(mean_in.data, t, c);
            variance[c] = cpu_load_float(variance_in.data, t, c);
        }
    }
    for (int64_t c = 0; c < l.channels; c++) {
        inv[c] = 1 / sqrt(variance[c] + attrs.epsilon);
        sum_dy[c] = sum_dy_xhat[c] = 0;
    }
    for (int64_t r = 0; r < l.rows; r++) {
        for (int64_t c = 0; c < l.channels; c++) {
            int64_t i = r * l.channels + c;
            double g = cpu_load_float(dy.data, t, i);
            sum_dy[c] += g;
            sum_dy_xhat[c] += g * (cpu_load_float(x.data, t, i) - mean[c]) * inv[c];
        }
    }
    double count = (double)l.rows;
    double bessel = bessel_factor(l.rows);
    for (int64_t c = 0; c < l.channels; c++) {
        cpu_store_float(doffset.data, t, c, sum_dy[c]);
        cpu_store_float(dscale.data, t, c, sum_dy_xhat[c]);
        from_mean[c] = l.rows > 0 ? attrs.factor * cpu_load_float(dmean.data, t, c) / count : 0;
        from_variance[c] = l.rows > 0 ? 2 * attrs.factor * bessel *
                                            cpu_load_float(dvariance.data, t, c) / count
                                      : 0;
    }
    gradient_job_t job = {l,      attrs.training, dy.data,     x.data,    scale.data,
                          mean,   inv,            sum_dy,      sum_dy_xhat, from_mean,
                          from_variance,          dx.data};
    cpu_parallel_for(l.rows, 4 * l.channels + 1, gradient_rows, &job);
    free(stats);
}

void cpu_register_batch_norm_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "FusedBatchNorm", "T", CPU_FLOATS, fused_batch_norm, status);
    cpu_register(registrar, "FusedBatchNormGrad", "T", CPU_FLOATS, fused_batch_norm_grad, status);
}
