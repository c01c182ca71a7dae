/* SPDX-License-Identifier: Apache-2.0 */
/* The training step of a Dense(256, relu) then Dense(10) network on 784 inputs, mean squared
 * error and plain gradient descent, written directly with cblas_sgemm and loops: the limit a
 * runtime's step is measured against (bench_distribute.c, bench/compare/). C that C++ also
 * compiles, header-only so that each benchmark builds it with its own flags. */
#ifndef TP_BENCH_MLP_DIRECT_H
#define TP_BENCH_MLP_DIRECT_H

#include <cblas.h>
#include <stdlib.h>

enum { MLP_FEATURES = 784, MLP_HIDDEN = 256, MLP_UNITS = 10 };

typedef struct {
    float *w1, *b1, *w2, *b2; /* the weights, shared by every share of a batch */
} mlp_weights_t;

/* One share of a batch: `rows` of the batch's `batch_rows`, whose loss is the mean over the
 * whole batch, so that the shares' gradients add up to the batch's. */
typedef struct {
    const mlp_weights_t *weights;
    const float *x, *y; /* this share's rows */
    int rows, batch_rows;
    float *z1, *h, *z2, *d2, *dh; /* rows x ... scratch */
    float *dw1, *db1, *dw2, *db2; /* this share's gradients */
} mlp_share_t;

static inline float *mlp_floats(size_t count) {
    float *p = (float *)calloc(count, sizeof(float));
    if (p == NULL) abort(); /* a benchmark without memory has nothing to measure */
    return p;
}

static inline void mlp_share_init(mlp_share_t *s, const mlp_weights_t *weights, int rows,
                                  int batch_rows) {
    s->weights = weights;
    s->x = s->y = NULL;
    s->rows = rows;
    s->batch_rows = batch_rows;
    s->z1 = mlp_floats((size_t)rows * MLP_HIDDEN);
    s->h = mlp_floats((size_t)rows * MLP_HIDDEN);
    s->z2 = mlp_floats((size_t)rows * MLP_UNITS);
    s->d2 = mlp_floats((size_t)rows * MLP_UNITS);
    s->dh = mlp_floats((size_t)rows * MLP_HIDDEN);
    s->dw1 = mlp_floats((size_t)MLP_FEATURES * MLP_HIDDEN);
    s->db1 = mlp_floats(MLP_HIDDEN);
    s->dw2 = mlp_floats((size_t)MLP_HIDDEN * MLP_UNITS);
    s->db2 = mlp_floats(MLP_UNITS);
}

static inline void mlp_share_free(mlp_share_t *s) {
    free(s->z1);
    free(s->h);
    free(s->z2);
    free(s->d2);
    free(s->dh);
    free(s->dw1);
    free(s->db1);
    free(s->dw2);
    free(s->db2);
}

/* The gradients of mean((y - prediction)^2) over the batch from this share's rows: 5 sgemm
 * calls (x is not trained, so no dx). */
static inline void mlp_share_step(mlp_share_t *s) {
    const mlp_weights_t *w = s->weights;
    const int m = s->rows, H = MLP_HIDDEN, U = MLP_UNITS, F = MLP_FEATURES;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, H, F, 1.0f, s->x, F, w->w1, H,
                0.0f, s->z1, H);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < H; j++) {
            float z = s->z1[i * H + j] + w->b1[j];
            s->z1[i * H + j] = z;
            s->h[i * H + j] = z > 0 ? z : 0;
        }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, U, H, 1.0f, s->h, H, w->w2, U,
                0.0f, s->z2, U);
    const float scale = 2.0f / (float)(s->batch_rows * U);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < U; j++)
            s->d2[i * U + j] = (s->z2[i * U + j] + w->b2[j] - s->y[i * U + j]) * scale;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, U, m, 1.0f, s->h, H, s->d2, U, 0.0f,
                s->dw2, U);
    for (int j = 0; j < U; j++) s->db2[j] = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < U; j++) s->db2[j] += s->d2[i * U + j];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, H, U, 1.0f, s->d2, U, w->w2, U,
                0.0f, s->dh, H);
    for (int j = 0; j < H; j++) s->db1[j] = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < H; j++) {
            float d = s->z1[i * H + j] > 0 ? s->dh[i * H + j] : 0;
            s->dh[i * H + j] = d;
            s->db1[j] += d;
        }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, F, H, m, 1.0f, s->x, F, s->dh, H, 0.0f,
                s->dw1, H);
}

/* Which of a share's gradients: 0 dw1, 1 db1, 2 dw2, 3 db2. */
static inline const float *mlp_share_gradient(const mlp_share_t *s, int which) {
    const float *gradients[] = {s->dw1, s->db1, s->dw2, s->db2};
    return gradients[which];
}

/* w -= learning_rate * (the sum of `count` (1 or 2) shares' gradients `which`), n values. */
static inline void mlp_apply(float *w, const mlp_share_t *shares, int count, int which, size_t n,
                             float learning_rate) {
    const float *first = mlp_share_gradient(&shares[0], which);
    if (count == 1) {
        for (size_t i = 0; i < n; i++) w[i] -= learning_rate * first[i];
        return;
    }
    const float *second = mlp_share_gradient(&shares[1], which);
    for (size_t i = 0; i < n; i++) w[i] -= learning_rate * (first[i] + second[i]);
}

/* The update of every weight from `count` shares' gradients. */
static inline void mlp_apply_all(const mlp_weights_t *w, const mlp_share_t *shares, int count,
                                 float learning_rate) {
    mlp_apply(w->w1, shares, count, 0, (size_t)MLP_FEATURES * MLP_HIDDEN, learning_rate);
    mlp_apply(w->b1, shares, count, 1, MLP_HIDDEN, learning_rate);
    mlp_apply(w->w2, shares, count, 2, (size_t)MLP_HIDDEN * MLP_UNITS, learning_rate);
    mlp_apply(w->b2, shares, count, 3, MLP_UNITS, learning_rate);
}

#endif
