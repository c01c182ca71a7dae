/* SPDX-License-Identifier: Apache-2.0 */
/* FusedBatchNorm and FusedBatchNormGrad of tensorplug's OpenCL plug-in over channels-last
 * tensors seen as [rows, channels], computed as the CPU computes them: statistics summed in
 * double, row by row in the CPU's order (one work-item per channel), the variance in a second
 * pass over (x - mean)^2; then one work-item per element. Only with -DTP_FP64: the CPU's sums
 * are in double, and float sums would not be its results.
 *
 * The statistics live in a scratch buffer of doubles: mean[C], inv[C] (1 / sqrt(var + eps)),
 * then for the gradient sum_dy[C], sum_dy_xhat[C], from_mean[C], from_variance[C]. */
#ifdef TP_FP64

/* mean and inv per channel, from the batch (training) or the given mean and variance; with
 * `write_outputs`, batch_mean and batch_variance as FusedBatchNorm gives them. */
#define BN_STATS(T, suffix)                                                                        \
    __kernel void bn_stats_##suffix(                                                               \
        __global const char *x_base, ulong x_offset, __global const char *m_base, ulong m_offset,  \
        __global const char *v_base, ulong v_offset, __global double *stats,                       \
        __global char *bm_base, ulong bm_offset, __global char *bv_base, ulong bv_offset,          \
        long rows, long channels,                                                                  \
        int training, int write_outputs, double factor, double epsilon) {                          \
        long c = (long)get_global_id(0);                                                           \
        if (c >= channels) return;                                                                 \
        __global const T *x = CONST_AT(T, x_base, x_offset);                                       \
        double given_mean = (double)CONST_AT(T, m_base, m_offset)[c];                              \
        double given_variance = (double)CONST_AT(T, v_base, v_offset)[c];                          \
        double mean = given_mean, variance = given_variance;                                       \
        if (training) {                                                                            \
            mean = 0;                                                                              \
            variance = 0;                                                                          \
            for (long r = 0; r < rows; r++) mean += (double)x[r * channels + c];                   \
            mean /= (double)rows;                                                                  \
            for (long r = 0; r < rows; r++) {                                                      \
                double d = (double)x[r * channels + c] - mean;                                     \
                variance += d * d;                                                                 \
            }                                                                                      \
            variance /= (double)rows;                                                              \
        }                                                                                          \
        stats[c] = mean;                                                                           \
        stats[channels + c] = 1 / sqrt(variance + epsilon);                                        \
        if (!write_outputs) return;                                                                \
        double out_mean = mean, out_variance = variance;                                           \
        if (training) {                                                                            \
            double bessel = (double)rows / (double)(rows > 1 ? rows - 1 : 1);                      \
            out_variance = variance * bessel;                                                      \
            if (factor != 1) {                                                                     \
                out_mean = (1 - factor) * given_mean + factor * out_mean;                          \
                out_variance = (1 - factor) * given_variance + factor * out_variance;              \
            }                                                                                      \
            if (rows == 0) out_mean = out_variance = NAN;                                          \
        }                                                                                          \
        AT(T, bm_base, bm_offset)[c] = (T)out_mean;                                                \
        AT(T, bv_base, bv_offset)[c] = (T)out_variance;                                            \
    }

#define BN_NORMALIZE(T, suffix)                                                                    \
    __kernel void bn_normalize_##suffix(                                                           \
        __global const char *x_base, ulong x_offset, __global const char *s_base, ulong s_offset,  \
        __global const char *o_base, ulong o_offset, __global const double *stats,                 \
        __global char *y_base, ulong y_offset, ulong n, long channels) {                           \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        long c = (long)i % channels;                                                               \
        double centred = (double)CONST_AT(T, x_base, x_offset)[i] - stats[c];                      \
        double value = (double)CONST_AT(T, s_base, s_offset)[c] * centred * stats[channels + c] +  \
                       (double)CONST_AT(T, o_base, o_offset)[c];                                   \
        AT(T, y_base, y_offset)[i] = (T)value;                                                     \
    }

/* Per channel: offset_backprop = sum(dy), scale_backprop = sum(dy x^), and the paths through
 * batch_mean and batch_variance. */
#define BN_GRAD_SUMS(T, suffix)                                                                    \
    __kernel void bn_grad_sums_##suffix(                                                           \
        __global const char *dy_base, ulong dy_offset, __global const char *x_base,                \
        ulong x_offset, __global const char *dm_base, ulong dm_offset,                             \
        __global const char *dv_base, ulong dv_offset, __global double *stats,                     \
        __global char *ds_base, ulong ds_offset, __global char *do_base, ulong do_offset,          \
        long rows, long channels, double factor) {                                                 \
        long c = (long)get_global_id(0);                                                           \
        if (c >= channels) return;                                                                 \
        __global const T *dy = CONST_AT(T, dy_base, dy_offset);                                    \
        __global const T *x = CONST_AT(T, x_base, x_offset);                                       \
        double mean = stats[c], inv = stats[channels + c], sum_dy = 0, sum_dy_xhat = 0;            \
        for (long r = 0; r < rows; r++) {                                                          \
            double g = (double)dy[r * channels + c];                                               \
            sum_dy += g;                                                                           \
            sum_dy_xhat += g * ((double)x[r * channels + c] - mean) * inv;                         \
        }                                                                                          \
        double count = (double)rows, bessel = count / (rows > 1 ? count - 1 : 1);                  \
        stats[2 * channels + c] = sum_dy;                                                          \
        stats[3 * channels + c] = sum_dy_xhat;                                                     \
        stats[4 * channels + c] =                                                                  \
            rows > 0 ? factor * (double)CONST_AT(T, dm_base, dm_offset)[c] / count : 0;            \
        stats[5 * channels + c] =                                                                  \
            rows > 0 ? 2 * factor * bessel * (double)CONST_AT(T, dv_base, dv_offset)[c] / count    \
                     : 0;                                                                          \
        AT(T, do_base, do_offset)[c] = (T)sum_dy;                                                  \
        AT(T, ds_base, ds_offset)[c] = (T)sum_dy_xhat;                                             \
    }

#define BN_GRAD(T, suffix)                                                                         \
    __kernel void bn_grad_##suffix(                                                                \
        __global const char *dy_base, ulong dy_offset, __global const char *x_base,                \
        ulong x_offset, __global const char *s_base, ulong s_offset,                               \
        __global const double *stats, __global char *dx_base, ulong dx_offset, ulong n,            \
        long rows, long channels, int training) {                                                  \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        long c = (long)i % channels;                                                               \
        double mean = stats[c], inv = stats[channels + c], count = (double)rows;                   \
        double centred = (double)CONST_AT(T, x_base, x_offset)[i] - mean;                          \
        double dy = (double)CONST_AT(T, dy_base, dy_offset)[i];                                    \
        double through_y = (double)CONST_AT(T, s_base, s_offset)[c] * inv;                         \
        double value = through_y * dy;                                                             \
        if (training)                                                                              \
            value = through_y * (dy - stats[2 * channels + c] / count -                            \
                                 centred * inv * stats[3 * channels + c] / count) +                \
                    stats[4 * channels + c] + stats[5 * channels + c] * centred;                   \
        AT(T, dx_base, dx_offset)[i] = (T)value;                                                   \
    }

#define BATCH_NORM(T, suffix)                                                                      \
    BN_STATS(T, suffix) BN_NORMALIZE(T, suffix) BN_GRAD_SUMS(T, suffix) BN_GRAD(T, suffix)

BATCH_NORM(float, float32)
BATCH_NORM(double, float64)

#endif
