/* SPDX-License-Identifier: Apache-2.0 */
/* Convolution and pooling kernels of tensorplug's OpenCL plug-in, over NHWC images: Conv2D,
 * Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad.
 *
 * One work-item per element of the result, each summing what reaches it: the gradients gather
 * (each input or filter element walks the outputs that read it) rather than scatter, so no two
 * work-items write one element and no atomics are needed, and every sum has a fixed order.
 *
 * The window arrives as a long16 (opencl_conv.c packs it): batch, in_h, in_w, channels,
 * window_h, window_w, out_channels, out_h, out_w, stride_h, stride_w, dilation_h, dilation_w,
 * pad_top, pad_left. Padding is never read, as TensorFlow does: a max is taken, and an
 * average counted, over the taps that lie inside the image. float32 sums run in the math type
 * (double where the device has it) and are rounded once. */

#define WINDOW(w)                                                                                  \
    long in_h = (w).s1, in_w = (w).s2, channels = (w).s3, window_h = (w).s4,                       \
         window_w = (w).s5, out_channels = (w).s6, out_h = (w).s7, out_w = (w).s8,                 \
         stride_h = (w).s9, stride_w = (w).sa, dilation_h = (w).sb, dilation_w = (w).sc,           \
         pad_top = (w).sd, pad_left = (w).se;                                                      \
    (void)in_h; (void)in_w; (void)channels; (void)window_h; (void)window_w; (void)out_channels;    \
    (void)out_h; (void)out_w; (void)stride_h; (void)stride_w; (void)dilation_h; (void)dilation_w;  \
    (void)pad_top; (void)pad_left;

/* The first output position along one dimension whose window can reach input position `at`,
 * and one past the last: [first, last) clamped to [0, outs). */
static void covering(long at, long pad, long window, long stride, long outs, long *first,
                     long *last) {
    long low = at + pad - window + 1; /* top = o * stride - pad > at - window */
    long f = low <= 0 ? 0 : (low + stride - 1) / stride;
    long l = (at + pad) / stride + 1; /* top <= at */
    *first = f;
    *last = l < outs ? l : outs;
}

#define CONV_KERNELS(T, A, suffix)                                                                 \
    __kernel void conv2d_##suffix(__global const char *x_base, ulong x_offset,                     \
                                  __global const char *f_base, ulong f_offset,                     \
                                  __global char *y_base, ulong y_offset, ulong n, long16 w) {      \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        WINDOW(w)                                                                                  \
        __global const T *x = CONST_AT(T, x_base, x_offset);                                       \
        __global const T *f = CONST_AT(T, f_base, f_offset);                                       \
        long o = (long)(i % (ulong)out_channels), t = (long)(i / (ulong)out_channels);             \
        long ow = t % out_w, oh = (t / out_w) % out_h, image = t / out_w / out_h;                  \
        A sum = 0;                                                                                 \
        for (long kh = 0; kh < window_h; kh++) {                                                   \
            long ih = oh * stride_h - pad_top + kh * dilation_h;                                   \
            if (ih < 0 || ih >= in_h) continue;                                                    \
            for (long kw = 0; kw < window_w; kw++) {                                               \
                long iw = ow * stride_w - pad_left + kw * dilation_w;                              \
                if (iw < 0 || iw >= in_w) continue;                                                \
                __global const T *pixel = x + ((image * in_h + ih) * in_w + iw) * channels;        \
                __global const T *taps = f + (kh * window_w + kw) * channels * out_channels + o;   \
                for (long c = 0; c < channels; c++)                                                \
                    sum += (A)pixel[c] * (A)taps[c * out_channels];                                \
            }                                                                                      \
        }                                                                                          \
        AT(T, y_base, y_offset)[i] = (T)sum;                                                       \
    }                                                                                              \
                                                                                                   \
    /* The input's gradient: element (image, ih, iw, c) gathers every output it was read by. */    \
    __kernel void conv2d_input_grad_##suffix(__global const char *f_base, ulong f_offset,          \
                                             __global const char *g_base, ulong g_offset,          \
                                             __global char *y_base, ulong y_offset, ulong n,       \
                                             long16 w) {                                           \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        WINDOW(w)                                                                                  \
        __global const T *f = CONST_AT(T, f_base, f_offset);                                       \
        __global const T *g = CONST_AT(T, g_base, g_offset);                                       \
        long c = (long)(i % (ulong)channels), t = (long)(i / (ulong)channels);                     \
        long iw = t % in_w, ih = (t / in_w) % in_h, image = t / in_w / in_h;                       \
        A sum = 0;                                                                                 \
        for (long kh = 0; kh < window_h; kh++) {                                                   \
            long th = ih + pad_top - kh * dilation_h;                                              \
            if (th < 0 || th % stride_h != 0 || th / stride_h >= out_h) continue;                  \
            long oh = th / stride_h;                                                               \
            for (long kw = 0; kw < window_w; kw++) {                                               \
                long tw = iw + pad_left - kw * dilation_w;                                         \
                if (tw < 0 || tw % stride_w != 0 || tw / stride_w >= out_w) continue;              \
                long ow = tw / stride_w;                                                           \
                __global const T *grad = g + ((image * out_h + oh) * out_w + ow) * out_channels;   \
                __global const T *taps = f + ((kh * window_w + kw) * channels + c) * out_channels; \
                for (long o = 0; o < out_channels; o++) sum += (A)grad[o] * (A)taps[o];            \
            }                                                                                      \
        }                                                                                          \
        AT(T, y_base, y_offset)[i] = (T)sum;                                                       \
    }                                                                                              \
                                                                                                   \
    /* The filter's gradient: tap (kh, kw, c, o) sums input times output gradient over every      \
     * image and output pixel. */                                                                  \
    __kernel void conv2d_filter_grad_##suffix(__global const char *x_base, ulong x_offset,         \
                                              __global const char *g_base, ulong g_offset,         \
                                              __global char *y_base, ulong y_offset, ulong n,      \
                                              long16 w) {                                          \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        WINDOW(w)                                                                                  \
        __global const T *x = CONST_AT(T, x_base, x_offset);                                       \
        __global const T *g = CONST_AT(T, g_base, g_offset);                                       \
        long o = (long)(i % (ulong)out_channels), t = (long)(i / (ulong)out_channels);             \
        long c = t % channels, kw = (t / channels) % window_w, kh = t / channels / window_w;       \
        A sum = 0;                                                                                 \
        for (long image = 0; image < w.s0; image++)                                                \
            for (long oh = 0; oh < out_h; oh++) {                                                  \
                long ih = oh * stride_h - pad_top + kh * dilation_h;                               \
                if (ih < 0 || ih >= in_h) continue;                                                \
                for (long ow = 0; ow < out_w; ow++) {                                              \
                    long iw = ow * stride_w - pad_left + kw * dilation_w;                          \
                    if (iw < 0 || iw >= in_w) continue;                                            \
                    sum += (A)x[((image * in_h + ih) * in_w + iw) * channels + c] *                \
                           (A)g[((image * out_h + oh) * out_w + ow) * out_channels + o];           \
                }                                                                                  \
            }                                                                                      \
        AT(T, y_base, y_offset)[i] = (T)sum;                                                       \
    }

/* The taps of output pixel (oh, ow) inside the image: rows [h0, h1), columns [w0, w1). */
#define TAPS(oh, ow)                                                                               \
    long top = (oh) * stride_h - pad_top, left = (ow) * stride_w - pad_left;                       \
    long h0 = max(top, 0L), h1 = min(top + window_h, in_h);                                        \
    long w0 = max(left, 0L), w1 = min(left + window_w, in_w);

/* The image's offset of the first largest tap of output pixel (oh, ow), channel c, as the CPU
 * picks it: a later tap replaces it only when strictly larger. */
#define FIRST_MAX(T, x, oh, ow, c, result)                                                         \
    {                                                                                              \
        TAPS(oh, ow)                                                                               \
        long top_tap = (h0 * in_w + w0) * channels + (c);                                          \
        for (long th = h0; th < h1; th++)                                                          \
            for (long tw = w0; tw < w1; tw++) {                                                    \
                long at = (th * in_w + tw) * channels + (c);                                       \
                if ((x)[at] > (x)[top_tap]) top_tap = at;                                          \
            }                                                                                      \
        (result) = top_tap;                                                                        \
    }

#define POOL_KERNELS(T, A, suffix)                                                                 \
    __kernel void max_pool_##suffix(__global const char *x_base, ulong x_offset,                   \
                                    __global char *y_base, ulong y_offset, ulong n, long16 w) {    \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        WINDOW(w)                                                                                  \
        long c = (long)(i % (ulong)channels), t = (long)(i / (ulong)channels);                     \
        long ow = t % out_w, oh = (t / out_w) % out_h, image = t / out_w / out_h;                  \
        __global const T *x = CONST_AT(T, x_base, x_offset) + image * in_h * in_w * channels;      \
        long best;                                                                                 \
        FIRST_MAX(T, x, oh, ow, c, best)                                                           \
        AT(T, y_base, y_offset)[i] = x[best];                                                      \
    }                                                                                              \
                                                                                                   \
    __kernel void avg_pool_##suffix(__global const char *x_base, ulong x_offset,                   \
                                    __global char *y_base, ulong y_offset, ulong n, long16 w) {    \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        WINDOW(w)                                                                                  \
        long c = (long)(i % (ulong)channels), t = (long)(i / (ulong)channels);                     \
        long ow = t % out_w, oh = (t / out_w) % out_h, image = t / out_w / out_h;                  \
        __global const T *x = CONST_AT(T, x_base, x_offset) + image * in_h * in_w * channels;      \
        TAPS(oh, ow)                                                                               \
        A sum = 0;                                                                                 \
        for (long ih = h0; ih < h1; ih++)                                                          \
            for (long iw = w0; iw < w1; iw++) sum += (A)x[(ih * in_w + iw) * channels + c];        \
        AT(T, y_base, y_offset)[i] = (T)(sum / (A)((h1 - h0) * (w1 - w0)));                        \
    }                                                                                              \
                                                                                                   \
    /* Input element (image, ih, iw, c) gathers the gradient of every output pixel whose first    \
     * largest tap it is, in the CPU's order of output pixels. */                                  \
    __kernel void max_pool_grad_##suffix(__global const char *x_base, ulong x_offset,              \
                                         __global const char *g_base, ulong g_offset,              \
                                         __global char *y_base, ulong y_offset, ulong n,           \
                                         long16 w) {                                               \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        WINDOW(w)                                                                                  \
        long c = (long)(i % (ulong)channels), t = (long)(i / (ulong)channels);                     \
        long iw = t % in_w, ih = (t / in_w) % in_h, image = t / in_w / in_h;                       \
        __global const T *x = CONST_AT(T, x_base, x_offset) + image * in_h * in_w * channels;      \
        __global const T *g =                                                                      \
            CONST_AT(T, g_base, g_offset) + image * out_h * out_w * channels;                      \
        long mine = (ih * in_w + iw) * channels + c, oh0, oh1, ow0, ow1;                           \
        covering(ih, pad_top, window_h, stride_h, out_h, &oh0, &oh1);                              \
        covering(iw, pad_left, window_w, stride_w, out_w, &ow0, &ow1);                             \
        T sum = 0;                                                                                 \
        for (long oh = oh0; oh < oh1; oh++)                                                        \
            for (long ow = ow0; ow < ow1; ow++) {                                                  \
                long best;                                                                         \
                FIRST_MAX(T, x, oh, ow, c, best)                                                   \
                if (best == mine) sum += g[(oh * out_w + ow) * channels + c];                      \
            }                                                                                      \
        AT(T, y_base, y_offset)[i] = sum;                                                          \
    }                                                                                              \
                                                                                                   \
    __kernel void avg_pool_grad_##suffix(__global const char *g_base, ulong g_offset,              \
                                         __global char *y_base, ulong y_offset, ulong n,           \
                                         long16 w) {                                               \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        WINDOW(w)                                                                                  \
        long c = (long)(i % (ulong)channels), t = (long)(i / (ulong)channels);                     \
        long iw = t % in_w, ih = (t / in_w) % in_h, image = t / in_w / in_h;                       \
        __global const T *g =                                                                      \
            CONST_AT(T, g_base, g_offset) + image * out_h * out_w * channels;                      \
        long oh0, oh1, ow0, ow1;                                                                   \
        covering(ih, pad_top, window_h, stride_h, out_h, &oh0, &oh1);                              \
        covering(iw, pad_left, window_w, stride_w, out_w, &ow0, &ow1);                             \
        T sum = 0;                                                                                 \
        for (long oh = oh0; oh < oh1; oh++)                                                        \
            for (long ow = ow0; ow < ow1; ow++) {                                                  \
                TAPS(oh, ow)                                                                       \
                sum += g[(oh * out_w + ow) * channels + c] / (T)((h1 - h0) * (w1 - w0));           \
            }                                                                                      \
        AT(T, y_base, y_offset)[i] = sum;                                                          \
    }

CONV_KERNELS(float, MATH_TYPE_float, float32)
POOL_KERNELS(float, MATH_TYPE_float, float32)
#ifdef TP_FP64
CONV_KERNELS(double, double, float64)
POOL_KERNELS(double, double, float64)
#endif
