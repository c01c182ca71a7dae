/* SPDX-License-Identifier: Apache-2.0 */
/* float64 convolutions as matrix products. Each output pixel's window, laid out as one row of
 * KH*KW*C values in the filter's HWIO order (im2col), makes the convolution a product of that
 * column matrix and the filter seen as a [KH*KW*C, O] matrix:
 *     output      = columns @ filter
 *     columns'    = output_grad @ filter^T, scattered back onto the image (col2im)
 *     filter_grad = columns^T @ output_grad
 * The column matrix is built for a batch of images at a time, so that it stays near
 * COLUMN_BYTES however large the input. */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_conv.h"
#include "cpu_kernels.h"
#include "cpu_thread_pool.h"

enum { COLUMN_BYTES = 16 << 20 };

typedef struct {
    const cpu_window_t *w;
    int64_t row_size; /* KH*KW*C */
    const double *image; /* the batch's first image */
    double *columns;
} columns_job_t;

/* The image offset of tap (kh, kw) of output pixel (oh, ow), or -1 where it falls on padding. */
static int64_t tap_offset(const cpu_window_t *w, int64_t oh, int64_t ow, int64_t kh, int64_t kw) {
    int64_t ih = oh * w->stride_h - w->pad_top + kh * w->dilation_h;
    int64_t iw = ow * w->stride_w - w->pad_left + kw * w->dilation_w;
    if (ih < 0 || ih >= w->in_h || iw < 0 || iw >= w->in_w) return -1;
    return (ih * w->in_w + iw) * w->channels;
}

/* Rows [begin, end) of the batch's column matrix; a row is one output pixel of one image. */
static void im2col_rows(void *arg, int64_t begin, int64_t end) {
    const columns_job_t *job = arg;
    const cpu_window_t *w = job->w;
    int64_t pixels = w->out_h * w->out_w, image_size = w->in_h * w->in_w * w->channels;
    size_t tap_bytes = (size_t)w->channels * sizeof(double);
    for (int64_t row = begin; row < end; row++) {
        int64_t n = row / pixels, oh = row % pixels / w->out_w, ow = row % w->out_w;
        const double *image = job->image + n * image_size;
        double *out = job->columns + row * job->row_size;
        for (int64_t kh = 0; kh < w->window_h; kh++)
            for (int64_t kw = 0; kw < w->window_w; kw++, out += w->channels) {
                int64_t offset = tap_offset(w, oh, ow, kh, kw);
                if (offset < 0)
                    memset(out, 0, tap_bytes);
                else
                    memcpy(out, image + offset, tap_bytes);
            }
    }
}

/* Adds each column row back onto the taps it came from, for images [begin, end) of the batch:
 * images are written by one thread each, so no two threads add to one value. */
static void col2im_images(void *arg, int64_t begin, int64_t end) {
    const columns_job_t *job = arg;
    const cpu_window_t *w = job->w;
    int64_t pixels = w->out_h * w->out_w, image_size = w->in_h * w->in_w * w->channels;
    double *batch = (double *)job->image; /* written here: the input grad's batch */
    for (int64_t n = begin; n < end; n++) {
        double *image = batch + n * image_size;
        for (int64_t pixel = 0; pixel < pixels; pixel++) {
            int64_t oh = pixel / w->out_w, ow = pixel % w->out_w;
            const double *row = job->columns + (n * pixels + pixel) * job->row_size;
            for (int64_t kh = 0; kh < w->window_h; kh++)
                for (int64_t kw = 0; kw < w->window_w; kw++, row += w->channels) {
                    int64_t offset = tap_offset(w, oh, ow, kh, kw);
                    if (offset < 0) continue;
                    for (int64_t c = 0; c < w->channels; c++) image[offset + c] += row[c];
                }
        }
    }
}

/* How the product is cut: images per batch, and whether the image itself is the column matrix
 * (a 1x1 filter, stride 1, no padding). */
typedef struct {
    int64_t row_size, pixels, images_per_batch;
    bool image_is_columns;
    double *columns;
} plan_t;

static bool plan(const cpu_window_t *w, const char *op_name, plan_t *out,
                 tp_plugin_status_t *status) {
    out->row_size = w->window_h * w->window_w * w->channels;
    out->pixels = w->out_h * w->out_w;
    out->image_is_columns = w->window_h == 1 && w->window_w == 1 && w->stride_h == 1 &&
                            w->stride_w == 1 && w->pad_top == 0 && w->pad_left == 0;
    if (out->row_size > INT_MAX || w->out_channels > INT_MAX || out->pixels > INT_MAX) {
        tp_cpu_host->status_set(status, TP_UNIMPLEMENTED,
                                "%s: a window of %lld values, %lld output channels or %lld "
                                "output pixels per image is beyond the BLAS interface (2^31)",
                                op_name, (long long)out->row_size, (long long)w->out_channels,
                                (long long)out->pixels);
        return false;
    }
    int64_t per_image;
    if (__builtin_mul_overflow(out->pixels * out->row_size, (int64_t)sizeof(double),
                               &per_image)) {
        tp_cpu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "%s: the im2col columns of one image (%lld x %lld) are too "
                                "large", op_name, (long long)out->pixels,
                                (long long)out->row_size);
        return false;
    }
    int64_t images = per_image > 0 ? COLUMN_BYTES / per_image : w->batch;
    if (images < 1) images = 1;
    if (images > INT_MAX / (out->pixels > 0 ? out->pixels : 1))
        images = INT_MAX / (out->pixels > 0 ? out->pixels : 1);
    out->images_per_batch = images < w->batch ? images : w->batch;
    out->columns = NULL;
    if (out->image_is_columns) return true;
    out->columns = malloc((size_t)(out->images_per_batch * per_image));
    if (out->columns == NULL) {
        tp_cpu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "%s: no host memory for %lld bytes of im2col columns", op_name,
                                (long long)(out->images_per_batch * per_image));
        return false;
    }
    return true;
}

/* The number of images in the batch that starts at image `first`. */
static int64_t images_from(const cpu_window_t *w, const plan_t *p, int64_t first) {
    int64_t left = w->batch - first;
    return left < p->images_per_batch ? left : p->images_per_batch;
}

/* The column matrix of images [first, first + count) of `input`. */
static const double *columns_of(const cpu_window_t *w, const plan_t *p, const double *input,
                                int64_t first, int64_t count) {
    const double *image = input + first * w->in_h * w->in_w * w->channels;
    if (p->image_is_columns) return image;
    columns_job_t job = {w, p->row_size, image, p->columns};
    cpu_parallel_for(count * p->pixels, p->row_size, im2col_rows, &job);
    return p->columns;
}

bool cpu_conv_gemm_forward(const cpu_window_t *w, const double *input, const double *filter,
                           double *output, const char *op_name, tp_plugin_status_t *status) {
    cpu_pool_park(); /* OpenBLAS brings threads of its own */
    plan_t p;
    if (!plan(w, op_name, &p, status)) return false;
    for (int64_t first = 0; first < w->batch; first += p.images_per_batch) {
        int64_t count = images_from(w, &p, first);
        const double *columns = columns_of(w, &p, input, first, count);
        int rows = (int)(count * p.pixels), k = (int)p.row_size, o = (int)w->out_channels;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, o, k, 1.0, columns, k,
                    filter, o, 0.0, output + first * p.pixels * o, o);
    }
    free(p.columns);
    return true;
}

bool cpu_conv_gemm_input_grad(const cpu_window_t *w, const double *filter,
                              const double *output_grad, double *input_grad,
                              const char *op_name, tp_plugin_status_t *status) {
    cpu_pool_park(); /* OpenBLAS brings threads of its own */
    plan_t p;
    if (!plan(w, op_name, &p, status)) return false;
    int64_t image_size = w->in_h * w->in_w * w->channels;
    if (!p.image_is_columns)
        memset(input_grad, 0, (size_t)(w->batch * image_size) * sizeof(double));
    for (int64_t first = 0; first < w->batch; first += p.images_per_batch) {
        int64_t count = images_from(w, &p, first);
        int rows = (int)(count * p.pixels), k = (int)p.row_size, o = (int)w->out_channels;
        double *target = p.image_is_columns ? input_grad + first * image_size : p.columns;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, o, 1.0,
                    output_grad + first * p.pixels * o, o, filter, o, 0.0, target, k);
        if (p.image_is_columns) continue;
        columns_job_t job = {w, p.row_size, input_grad + first * image_size, p.columns};
        cpu_parallel_for(count, p.pixels * p.row_size, col2im_images, &job);
    }
    free(p.columns);
    return true;
}

bool cpu_conv_gemm_filter_grad(const cpu_window_t *w, const double *input,
                               const double *output_grad, double *filter_grad,
                               const char *op_name, tp_plugin_status_t *status) {
    cpu_pool_park(); /* OpenBLAS brings threads of its own */
    plan_t p;
    if (!plan(w, op_name, &p, status)) return false;
    for (int64_t first = 0; first < w->batch; first += p.images_per_batch) {
        int64_t count = images_from(w, &p, first);
        const double *columns = columns_of(w, &p, input, first, count);
        int rows = (int)(count * p.pixels), k = (int)p.row_size, o = (int)w->out_channels;
        /* The first batch writes the gradient, the others add to it. */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, o, rows, 1.0, columns, k,
                    output_grad + first * p.pixels * o, o, first == 0 ? 0.0 : 1.0, filter_grad,
                    o);
    }
    free(p.columns);
    return true;
}
