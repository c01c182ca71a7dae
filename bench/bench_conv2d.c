/* SPDX-License-Identifier: Apache-2.0 */
/* Conv2D float32 throughput, NHWC, stride 1, SAME: tp_conv2d beside three ways of computing the
 * same convolution in the same run, called directly:
 *   - oneDNN as the CPU device uses it: the filter reordered from HWIO into the layout oneDNN
 *     picks ("any"), then its convolution (brgconv on AVX-512 machines);
 *   - oneDNN handed the HWIO filter as it is, which makes it fall back to its gemm convolution;
 *   - im2col over OpenBLAS's cblas_sgemm, the other way the issue offered.
 * Primitives and buffers are made once, outside the timing, as a program calling oneDNN would;
 * the filter's reorder is timed, since training changes the filter at every step. The shapes
 * are the digits CNN's two layers at batches 32 to 128 and a larger 28x28 layer. Every method's
 * output is compared with tp_conv2d's before it is timed. Then each convolution is followed by a
 * small matrix product, as in a training step, through tensorplug and directly. */
#include <cblas.h>
#include <dnnl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

typedef struct {
    int n, h, w, c, k, o;
} shape_t;

static void check_dnnl(dnnl_status_t status, const char *what) {
    if (status == dnnl_success) return;
    fprintf(stderr, "oneDNN failed at %s: status %d\n", what, (int)status);
    exit(1);
}

static void *allocate(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == NULL) exit(1);
    return p;
}

/* ---- oneDNN, called directly ------------------------------------------------------------------ */

typedef struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t conv, reorder; /* reorder: NULL when the filter is used as it is */
    dnnl_memory_t src, user_filter, filter, dst;
} direct_t;

static void direct_make(direct_t *d, const shape_t *s, bool blocked, float *x, float *f,
                        float *y) {
    check_dnnl(dnnl_engine_create(&d->engine, dnnl_cpu, 0), "the engine");
    check_dnnl(dnnl_stream_create(&d->stream, d->engine, dnnl_stream_default_flags), "a stream");
    dnnl_memory_desc_t src, filter, any, dst;
    dnnl_dims_t src_dims = {s->n, s->c, s->h, s->w}, filter_dims = {s->o, s->c, s->k, s->k};
    dnnl_dims_t dst_dims = {s->n, s->o, s->h, s->w};
    check_dnnl(dnnl_memory_desc_init_by_tag(&src, 4, src_dims, dnnl_f32, dnnl_nhwc), "src");
    check_dnnl(dnnl_memory_desc_init_by_tag(&filter, 4, filter_dims, dnnl_f32, dnnl_hwio), "w");
    check_dnnl(dnnl_memory_desc_init_by_tag(&any, 4, filter_dims, dnnl_f32, dnnl_format_tag_any),
               "any");
    check_dnnl(dnnl_memory_desc_init_by_tag(&dst, 4, dst_dims, dnnl_f32, dnnl_nhwc), "dst");
    int pad = (s->k - 1) / 2;
    dnnl_dims_t strides = {1, 1}, dilates = {0, 0}, before = {pad, pad};
    dnnl_dims_t after = {s->k - 1 - pad, s->k - 1 - pad};
    dnnl_convolution_desc_t desc;
    check_dnnl(dnnl_dilated_convolution_forward_desc_init(
                   &desc, dnnl_forward_training, dnnl_convolution_direct, &src,
                   blocked ? &any : &filter, NULL, &dst, strides, dilates, before, after),
               "the convolution descriptor");
    dnnl_primitive_desc_t pd;
    check_dnnl(dnnl_primitive_desc_create(&pd, &desc, NULL, d->engine, NULL), "the convolution");
    check_dnnl(dnnl_primitive_create(&d->conv, pd), "the primitive");
    const dnnl_memory_desc_t *chosen = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    check_dnnl(dnnl_memory_create(&d->src, &src, d->engine, x), "src memory");
    check_dnnl(dnnl_memory_create(&d->user_filter, &filter, d->engine, f), "filter memory");
    check_dnnl(dnnl_memory_create(&d->dst, &dst, d->engine, y), "dst memory");
    d->reorder = NULL;
    d->filter = d->user_filter;
    if (!dnnl_memory_desc_equal(chosen, &filter)) {
        check_dnnl(dnnl_memory_create(&d->filter, chosen, d->engine, DNNL_MEMORY_ALLOCATE),
                   "blocked filter memory");
        dnnl_primitive_desc_t reorder_pd;
        check_dnnl(dnnl_reorder_primitive_desc_create(&reorder_pd, &filter, d->engine, chosen,
                                                      d->engine, NULL),
                   "the reorder");
        check_dnnl(dnnl_primitive_create(&d->reorder, reorder_pd), "the reorder primitive");
        dnnl_primitive_desc_destroy(reorder_pd);
    }
    dnnl_primitive_desc_destroy(pd);
}

static void direct_run(direct_t *d) {
    if (d->reorder != NULL) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, d->user_filter}, {DNNL_ARG_TO, d->filter}};
        check_dnnl(dnnl_primitive_execute(d->reorder, d->stream, 2, args), "the reorder");
    }
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, d->src}, {DNNL_ARG_WEIGHTS, d->filter}, {DNNL_ARG_DST, d->dst}};
    check_dnnl(dnnl_primitive_execute(d->conv, d->stream, 3, args), "the convolution");
    check_dnnl(dnnl_stream_wait(d->stream), "the wait");
}

static void direct_destroy(direct_t *d) {
    if (d->filter != d->user_filter) dnnl_memory_destroy(d->filter);
    dnnl_memory_destroy(d->src);
    dnnl_memory_destroy(d->user_filter);
    dnnl_memory_destroy(d->dst);
    dnnl_primitive_destroy(d->conv);
    dnnl_primitive_destroy(d->reorder);
    dnnl_stream_destroy(d->stream);
    dnnl_engine_destroy(d->engine);
}

/* ---- im2col and sgemm ------------------------------------------------------------------------ */

/* Each output pixel's k x k x c window as one row (zeros on the padding), then the rows times
 * the filter as a [k*k*c, o] matrix. */
static void im2col_conv(const shape_t *s, const float *x, const float *f, float *y,
                        float *columns) {
    int pad = (s->k - 1) / 2, row_size = s->k * s->k * s->c;
    size_t tap = (size_t)s->c * sizeof(float);
    for (int n = 0; n < s->n; n++)
        for (int oh = 0; oh < s->h; oh++)
            for (int ow = 0; ow < s->w; ow++) {
                float *row = columns + (((size_t)n * s->h + oh) * s->w + ow) * row_size;
                for (int kh = 0; kh < s->k; kh++)
                    for (int kw = 0; kw < s->k; kw++, row += s->c) {
                        int ih = oh - pad + kh, iw = ow - pad + kw;
                        if (ih < 0 || ih >= s->h || iw < 0 || iw >= s->w)
                            memset(row, 0, tap);
                        else
                            memcpy(row, x + (((size_t)n * s->h + ih) * s->w + iw) * s->c, tap);
                    }
            }
    int rows = s->n * s->h * s->w;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, s->o, row_size, 1.0f, columns,
                row_size, f, s->o, 0.0f, y, s->o);
}

/* ---- Measuring ------------------------------------------------------------------------------- */

/* The last three: each convolution followed by a 128 x 128 x 128 sgemm, as a training step
 * alternates convolutions and matrix products: the CPU device's threads against oneDNN's
 * OpenMP team, whose threads spin on the cores for a while after each call. */
typedef enum {
    TENSORPLUG,
    ONEDNN_BLOCKED,
    ONEDNN_HWIO,
    IM2COL,
    TENSORPLUG_THEN_MATMUL,
    ONEDNN_THEN_SGEMM,
    SGEMM,
    NUM_METHODS
} method_t;

static const char *const method_names[] = {
    "tp_conv2d",          "oneDNN direct",        "oneDNN, HWIO filter", "im2col + sgemm",
    "tp_conv2d, tp_matmul", "oneDNN direct, sgemm", "the sgemm alone"};

enum { GEMM_N = 128 };

typedef struct {
    const shape_t *s;
    tp_context_t *context;
    tp_tensor_t *x, *f, *ga, *gb;
    float *hx, *hf, *hy, *columns, *gemm[3];
    direct_t blocked, hwio;
} bench_t;

static void run_once(bench_t *b, method_t method) {
    tp_tensor_t *y;
    switch (method) {
    case TENSORPLUG:
    case TENSORPLUG_THEN_MATMUL:
        TP_CHECK(tp_conv2d(b->context, b->x, b->f,
                           &(tp_conv2d_options_t){.padding = TP_PADDING_SAME}, &y));
        TP_CHECK(tp_tensor_wait(y));
        tp_tensor_release(y);
        if (method == TENSORPLUG) break;
        TP_CHECK(tp_matmul(b->context, b->ga, b->gb, false, false, &y));
        TP_CHECK(tp_tensor_wait(y));
        tp_tensor_release(y);
        break;
    case ONEDNN_BLOCKED:
    case ONEDNN_THEN_SGEMM:
        direct_run(&b->blocked);
        if (method == ONEDNN_BLOCKED) break;
        /* fall through */
    case SGEMM:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, GEMM_N, GEMM_N, GEMM_N, 1.0f,
                    b->gemm[0], GEMM_N, b->gemm[1], GEMM_N, 0.0f, b->gemm[2], GEMM_N);
        break;
    case ONEDNN_HWIO: direct_run(&b->hwio); break;
    case IM2COL: im2col_conv(b->s, b->hx, b->hf, b->hy, b->columns); break;
    default: break;
    }
}

/* The largest difference between a method's output and tp_conv2d's. */
static double difference(bench_t *b, method_t method, const float *reference, size_t count) {
    memset(b->hy, 0, count * sizeof(float));
    run_once(b, method);
    double worst = 0;
    for (size_t i = 0; i < count; i++) worst = fmax(worst, fabs((double)b->hy[i] - reference[i]));
    return worst;
}

/* Seconds per call of each method: the methods take turns, each timing a few calls (about
 * 2 ms) per turn, for about TURN_SECONDS in all, and each keeps its quickest turn. On a
 * machine that other work shares, the quickest turn is the one least disturbed, and taking
 * turns lets every method see the same moments. */
enum { TURN_SECONDS = 3 };

static void seconds_per_call(bench_t *b, double flops, double *best) {
    int calls = (int)(flops / 2e7); /* about 2 ms at 20 GFLOP/s */
    if (calls < 1) calls = 1;
    if (calls > 200) calls = 200;
    for (method_t m = 0; m < NUM_METHODS; m++) {
        run_once(b, m); /* warm: oneDNN compiles its kernels, tensorplug makes its plans */
        best[m] = 1e30;
    }
    double start = now_seconds();
    do {
        for (method_t m = 0; m < NUM_METHODS; m++) {
            double t0 = now_seconds();
            for (int i = 0; i < calls; i++) run_once(b, m);
            double t = (now_seconds() - t0) / calls;
            if (t < best[m]) best[m] = t;
        }
    } while (now_seconds() - start < TURN_SECONDS);
}

static void measure(tp_context_t *context, const shape_t *s) {
    size_t nx = (size_t)s->n * s->h * s->w * s->c, nf = (size_t)s->k * s->k * s->c * s->o;
    size_t ny = (size_t)s->n * s->h * s->w * s->o;
    bench_t b = {.s = s, .context = context};
    b.hx = allocate(nx * sizeof(float));
    b.hf = allocate(nf * sizeof(float));
    b.hy = allocate(ny * sizeof(float));
    b.columns = allocate(ny / s->o * s->k * s->k * s->c * sizeof(float));
    float *reference = allocate(ny * sizeof(float));
    for (size_t i = 0; i < nx; i++) b.hx[i] = (float)(i % 13) * 0.125f - 0.75f;
    for (size_t i = 0; i < nf; i++) b.hf[i] = (float)(i % 7) * 0.0625f - 0.1875f;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(s->n, s->h, s->w, s->c), b.hx,
                              nx * sizeof(float), &b.x));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(s->k, s->k, s->c, s->o), b.hf,
                              nf * sizeof(float), &b.f));
    for (int i = 0; i < 3; i++) {
        b.gemm[i] = allocate(GEMM_N * GEMM_N * sizeof(float));
        for (int k = 0; k < GEMM_N * GEMM_N; k++) b.gemm[i][k] = (float)(k % 5) * 0.25f;
    }
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(GEMM_N, GEMM_N), b.gemm[0],
                              GEMM_N * GEMM_N * sizeof(float), &b.ga));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(GEMM_N, GEMM_N), b.gemm[1],
                              GEMM_N * GEMM_N * sizeof(float), &b.gb));
    direct_make(&b.blocked, s, true, b.hx, b.hf, b.hy);
    direct_make(&b.hwio, s, false, b.hx, b.hf, b.hy);

    tp_tensor_t *y;
    TP_CHECK(tp_conv2d(context, b.x, b.f, &(tp_conv2d_options_t){.padding = TP_PADDING_SAME},
                       &y));
    TP_CHECK(tp_tensor_read(y, reference, ny * sizeof(float)));
    tp_tensor_release(y);
    double worst = 0;
    for (method_t m = ONEDNN_BLOCKED; m <= IM2COL; m++)
        worst = fmax(worst, difference(&b, m, reference, ny));

    double flops = 2.0 * (double)ny * s->k * s->k * s->c;
    printf("  [%d,%d,%d,%d] by %dx%dx%d->%d, %.1f MFLOP per call; largest difference from "
           "tp_conv2d %.1e\n",
           s->n, s->h, s->w, s->c, s->k, s->k, s->c, s->o, flops * 1e-6, worst);
    double best[NUM_METHODS];
    seconds_per_call(&b, flops, best);
    for (method_t m = TENSORPLUG; m <= IM2COL; m++)
        printf("    %-22s %9.1f us  %7.1f GFLOP/s  %9.0f images/s  (%5.2fx tp_conv2d's time)\n",
               method_names[m], best[m] * 1e6, flops / best[m] * 1e-9, s->n / best[m],
               best[m] / best[TENSORPLUG]);
    for (method_t m = TENSORPLUG_THEN_MATMUL; m <= ONEDNN_THEN_SGEMM; m++) {
        double alone = best[m == TENSORPLUG_THEN_MATMUL ? TENSORPLUG : ONEDNN_BLOCKED];
        printf("    %-22s %9.1f us  (the convolution alone and the sgemm alone: %.1f us)\n",
               method_names[m], best[m] * 1e6, (alone + best[SGEMM]) * 1e6);
    }
    direct_destroy(&b.blocked);
    direct_destroy(&b.hwio);
    tp_tensor_release(b.x);
    tp_tensor_release(b.f);
    tp_tensor_release(b.ga);
    tp_tensor_release(b.gb);
    for (int i = 0; i < 3; i++) free(b.gemm[i]);
    free(b.hx), free(b.hf), free(b.hy), free(b.columns), free(reference);
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    tp_context_t *context = bench_cpu_context();
    static const shape_t shapes[] = {
        {32, 8, 8, 1, 3, 32},   {64, 8, 8, 1, 3, 32},   {128, 8, 8, 1, 3, 32},
        {32, 8, 8, 32, 3, 64},  {64, 8, 8, 32, 3, 64},  {128, 8, 8, 32, 3, 64},
        {32, 28, 28, 32, 3, 64},
    };
    printf("Conv2D float32, NHWC, stride 1, SAME (the quickest of turns taken for %d s; %d "
           "OpenBLAS threads, oneDNN's OpenMP default)\n",
           TURN_SECONDS, openblas_get_num_threads());
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) measure(context, &shapes[i]);
    tp_context_destroy(context);
    return 0;
}
