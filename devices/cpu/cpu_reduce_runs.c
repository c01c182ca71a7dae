/* SPDX-License-Identifier: Apache-2.0 */
/* Float reductions at the memory limit. The dimensions are merged into alternating kept and
 * reduced groups, and each reduced group is one run over an (outer, reduced, inner) block:
 * with inner == 1 the reduced elements are contiguous and are reduced in independent lanes
 * (which the compiler turns into vector registers); otherwise whole rows of `inner` elements
 * are accumulated into an output row, which vectorises over the inner dimension. Several
 * reduced groups (axes 0 and 2 of a 3-D tensor) are reduced one run after another, the last
 * first, through a temporary.
 *
 * Sums are pairwise (a binary tree of partial sums over blocks), so that the error grows with
 * log2 of the count rather than with the count, as it would in a running total. Max and Min
 * take a NaN and keep it, as TensorFlow's do: v wins over the accumulator when v > acc or v
 * is NaN, and nothing wins over a NaN accumulator. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_reduce_runs.h"

/* Independent accumulators of a contiguous reduction: 16 floats are four SSE or two AVX
 * registers, enough to hide the latency of the additions. */
enum { LANES = 16 };
/* Elements a pairwise sum adds with its lanes before splitting in two. */
enum { PAIRWISE_BASE = 256 };
/* Rows of a row reduction added in a running total before the block enters the pairwise tree,
 * and the bytes of one strip of columns that a task walks down the rows. */
enum { ROW_BLOCK = 8, STRIP_BYTES = 4096 };
/* Elements of a contiguous run that one task reduces when the run is split across cores. */
enum { PART_ELEMENTS = 1 << 16, MAX_PARTS = 64 };

typedef struct {
    cpu_reduce_t op;
    const void *in;
    void *out;
    int64_t outer, length, inner, strips, strip;
    void *partials; /* one per part of a split contiguous run */
    int64_t parts;
    atomic_bool out_of_memory;
} run_t;

static bool is_sum(cpu_reduce_t op) { return op == CPU_REDUCE_SUM || op == CPU_REDUCE_MEAN; }

/* The extreme of a and b that Max (take_larger) or Min keeps: a when it is beyond b or NaN.
 * Written without branches, so that a loop of it may vectorise. */
#define DEFINE_PICK(T, S)                                                                      \
    static inline T pick_##S(bool take_larger, T a, T b) {                                     \
        bool beyond = take_larger ? a > b : a < b;                                             \
        return (beyond | (a != a)) ? a : b;                                                    \
    }
DEFINE_PICK(float, f32)
DEFINE_PICK(double, f64)

/* Max and Min of a contiguous run on x86-64, whose every CPU has SSE2: maxps (or minps) into
 * four accumulators and, beside them, a mask of the NaNs seen (cmpunordps), three instructions
 * per four floats. Written with the intrinsics because gcc keeps the NaN-keeping pick of the
 * portable loop scalar, at a third of a sum's speed. maxps gives its second operand when
 * either is NaN, so the accumulators never hold a NaN and the mask alone says whether the
 * result is one. */
#if defined(__SSE2__)
#include <emmintrin.h>

#define DEFINE_EXTREME_SSE2(T, S, V, W, LOAD, MAX, MIN, UNORDERED, OR, SET1, STORE, MOVEMASK)  \
    static T extreme_sse2_##S(bool take_larger, const T *x, int64_t n) {                       \
        T start = take_larger ? -INFINITY : INFINITY;                                          \
        V acc[4] = {SET1(start), SET1(start), SET1(start), SET1(start)}, nan = SET1(0);        \
        int64_t i = 0;                                                                         \
        if (take_larger)                                                                       \
            for (; i + 4 * W <= n; i += 4 * W)                                                 \
                for (int v = 0; v < 4; v++) {                                                  \
                    V value = LOAD(x + i + v * W);                                             \
                    acc[v] = MAX(value, acc[v]), nan = OR(nan, UNORDERED(value, value));       \
                }                                                                              \
        else                                                                                   \
            for (; i + 4 * W <= n; i += 4 * W)                                                 \
                for (int v = 0; v < 4; v++) {                                                  \
                    V value = LOAD(x + i + v * W);                                             \
                    acc[v] = MIN(value, acc[v]), nan = OR(nan, UNORDERED(value, value));       \
                }                                                                              \
        if (MOVEMASK(nan) != 0) return (T)NAN;                                                 \
        T lanes[4 * W], result = start;                                                        \
        for (int v = 0; v < 4; v++) STORE(lanes + v * W, acc[v]);                              \
        for (int k = 0; k < 4 * W; k++) result = pick_##S(take_larger, lanes[k], result);      \
        for (; i < n; i++) result = pick_##S(take_larger, x[i], result);                       \
        return result;                                                                         \
    }

DEFINE_EXTREME_SSE2(float, f32, __m128, 4, _mm_loadu_ps, _mm_max_ps, _mm_min_ps, _mm_cmpunord_ps,
                    _mm_or_ps, _mm_set1_ps, _mm_storeu_ps, _mm_movemask_ps)
DEFINE_EXTREME_SSE2(double, f64, __m128d, 2, _mm_loadu_pd, _mm_max_pd, _mm_min_pd,
                    _mm_cmpunord_pd, _mm_or_pd, _mm_set1_pd, _mm_storeu_pd, _mm_movemask_pd)
#define EXTREME(S) extreme_sse2_##S
#else
/* Elsewhere, the portable loop. Separate loops for Max and Min, so that neither tests which
 * it is per element. */
#define DEFINE_EXTREME_LANES(T, S)                                                             \
    static T extreme_lanes_##S(bool take_larger, const T *x, int64_t n) {                      \
        T acc[LANES];                                                                          \
        for (int k = 0; k < LANES; k++) acc[k] = take_larger ? -INFINITY : INFINITY;           \
        int64_t i = 0;                                                                         \
        if (take_larger)                                                                       \
            for (; i + LANES <= n; i += LANES)                                                 \
                for (int k = 0; k < LANES; k++) acc[k] = pick_##S(true, x[i + k], acc[k]);     \
        else                                                                                   \
            for (; i + LANES <= n; i += LANES)                                                 \
                for (int k = 0; k < LANES; k++) acc[k] = pick_##S(false, x[i + k], acc[k]);    \
        for (int k = 0; i < n; i++, k++) acc[k] = pick_##S(take_larger, x[i], acc[k]);         \
        for (int k = 1; k < LANES; k++) acc[0] = pick_##S(take_larger, acc[k], acc[0]);        \
        return acc[0];                                                                         \
    }
DEFINE_EXTREME_LANES(float, f32)
DEFINE_EXTREME_LANES(double, f64)
#define EXTREME(S) extreme_lanes_##S
#endif

/* Everything below once per float type: T the type, S its name's suffix. */
#define DEFINE_RUNS(T, S)                                                                      \
    static T pairwise_sum_##S(const T *x, int64_t n) {                                         \
        if (n > PAIRWISE_BASE) {                                                               \
            int64_t half = n / 2 / LANES * LANES;                                              \
            return pairwise_sum_##S(x, half) + pairwise_sum_##S(x + half, n - half);           \
        }                                                                                      \
        T acc[LANES] = {0};                                                                    \
        int64_t i = 0;                                                                         \
        for (; i + LANES <= n; i += LANES)                                                     \
            for (int k = 0; k < LANES; k++) acc[k] += x[i + k];                                \
        for (int k = 0; i < n; i++, k++) acc[k] += x[i];                                       \
        for (int width = LANES / 2; width > 0; width /= 2)                                     \
            for (int k = 0; k < width; k++) acc[k] += acc[k + width];                          \
        return acc[0];                                                                         \
    }                                                                                          \
                                                                                               \
    static T contiguous_##S(cpu_reduce_t op, const T *x, int64_t n) {                          \
        return is_sum(op) ? pairwise_sum_##S(x, n) : EXTREME(S)(op == CPU_REDUCE_MAX, x, n);   \
    }                                                                                          \
                                                                                               \
    /* Outputs [begin, end) of a run with inner == 1, one whole run each. */                   \
    static void whole_runs_##S(void *arg, int64_t begin, int64_t end) {                        \
        run_t *run = arg;                                                                      \
        const T *in = run->in;                                                                 \
        T *out = run->out;                                                                     \
        for (int64_t o = begin; o < end; o++)                                                  \
            out[o] = contiguous_##S(run->op, in + o * run->length, run->length);               \
    }                                                                                          \
                                                                                               \
    /* Parts [begin, end) of output run->strip's contiguous run, into run->partials. */        \
    static void run_parts_##S(void *arg, int64_t begin, int64_t end) {                         \
        run_t *run = arg;                                                                      \
        const T *in = (const T *)run->in + run->strip * run->length;                           \
        for (int64_t p = begin; p < end; p++) {                                                \
            int64_t first = run->length * p / run->parts;                                      \
            int64_t last = run->length * (p + 1) / run->parts;                                 \
            ((T *)run->partials)[p] = contiguous_##S(run->op, in + first, last - first);       \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    static void add_row_##S(T *restrict to, const T *restrict row, int64_t n) {                \
        for (int64_t c = 0; c < n; c++) to[c] += row[c];                                       \
    }                                                                                          \
                                                                                               \
    /* Tasks [begin, end) of a run with inner > 1: task t is strip t % strips of output row    \
     * t / strips, reduced down all run->length rows. A sum keeps a stack of partial rows, one \
     * per level of the pairwise tree, merging two of a level as a binary counter carries. */  \
    static void row_strips_##S(void *arg, int64_t begin, int64_t end) {                        \
        run_t *run = arg;                                                                      \
        int64_t width = STRIP_BYTES / (int64_t)sizeof(T), levels = 2;                          \
        for (int64_t blocks = run->length / ROW_BLOCK; blocks > 0; blocks /= 2) levels++;      \
        T *stack = is_sum(run->op) ? malloc((size_t)(levels * width) * sizeof(T)) : NULL;      \
        if (is_sum(run->op) && stack == NULL) {                                                \
            atomic_store(&run->out_of_memory, true);                                           \
            return;                                                                            \
        }                                                                                      \
        bool take_larger = run->op == CPU_REDUCE_MAX;                                          \
        for (int64_t t = begin; t < end; t++) {                                                \
            int64_t o = t / run->strips, c0 = t % run->strips * width;                         \
            int64_t n = run->inner - c0 < width ? run->inner - c0 : width;                     \
            const T *in = (const T *)run->in + o * run->length * run->inner + c0;              \
            T *out = (T *)run->out + o * run->inner + c0;                                      \
            if (!is_sum(run->op)) {                                                            \
                memcpy(out, in, (size_t)n * sizeof(T));                                        \
                for (int64_t r = 1; r < run->length; r++) {                                    \
                    const T *row = in + r * run->inner;                                        \
                    if (take_larger)                                                           \
                        for (int64_t c = 0; c < n; c++) out[c] = pick_##S(true, row[c], out[c]); \
                    else                                                                       \
                        for (int64_t c = 0; c < n; c++)                                        \
                            out[c] = pick_##S(false, row[c], out[c]);                          \
                }                                                                              \
                continue;                                                                      \
            }                                                                                  \
            int64_t top = 0;                                                                   \
            uint64_t blocks = 0;                                                               \
            for (int64_t r0 = 0; r0 < run->length; r0 += ROW_BLOCK) {                          \
                T *acc = stack + top * width;                                                  \
                memcpy(acc, in + r0 * run->inner, (size_t)n * sizeof(T));                      \
                int64_t rows = run->length - r0 < ROW_BLOCK ? run->length - r0 : ROW_BLOCK;    \
                for (int64_t r = 1; r < rows; r++)                                             \
                    add_row_##S(acc, in + (r0 + r) * run->inner, n);                           \
                top++;                                                                         \
                for (uint64_t m = ++blocks; (m & 1) == 0; m >>= 1, top--)                      \
                    add_row_##S(stack + (top - 2) * width, stack + (top - 1) * width, n);      \
            }                                                                                  \
            for (; top > 1; top--)                                                             \
                add_row_##S(stack + (top - 2) * width, stack + (top - 1) * width, n);          \
            memcpy(out, stack, (size_t)n * sizeof(T));                                         \
        }                                                                                      \
        free(stack);                                                                           \
    }                                                                                          \
                                                                                               \
    /* One run, on every core that pays. */                                                    \
    static bool reduce_run_##S(run_t *run) {                                                   \
        if (run->inner > 1) {                                                                  \
            int64_t width = STRIP_BYTES / (int64_t)sizeof(T);                                  \
            run->strips = (run->inner + width - 1) / width;                                    \
            int64_t per_task = run->length * (run->inner < width ? run->inner : width);        \
            cpu_parallel_for(run->outer * run->strips, per_task, row_strips_##S, run);         \
            return !atomic_load(&run->out_of_memory);                                          \
        }                                                                                      \
        /* Few long runs (all axes) are split into parts, else each run is one task. */        \
        int64_t parts = run->length / PART_ELEMENTS;                                           \
        if (run->outer >= 4 || parts < 2) {                                                    \
            cpu_parallel_for(run->outer, run->length, whole_runs_##S, run);                    \
            return true;                                                                       \
        }                                                                                      \
        T partials[MAX_PARTS];                                                                 \
        run->parts = parts < MAX_PARTS ? parts : MAX_PARTS;                                    \
        run->partials = partials;                                                              \
        for (run->strip = 0; run->strip < run->outer; run->strip++) {                          \
            cpu_parallel_for(run->parts, run->length / run->parts, run_parts_##S, run);        \
            ((T *)run->out)[run->strip] = contiguous_##S(run->op, partials, run->parts);       \
        }                                                                                      \
        return true;                                                                           \
    }

DEFINE_RUNS(float, f32)
DEFINE_RUNS(double, f64)

static bool reduce_run(tp_dtype_t dtype, run_t *run) {
    return dtype == TP_FLOAT32 ? reduce_run_f32(run) : reduce_run_f64(run);
}

static void fill(tp_dtype_t dtype, void *data, int64_t count, double value) {
    for (int64_t i = 0; i < count; i++) {
        if (dtype == TP_FLOAT32)
            ((float *)data)[i] = (float)value;
        else
            ((double *)data)[i] = value;
    }
}

bool cpu_reduce_floats(cpu_reduce_t op, const cpu_tensor_t *x, const bool *reduced,
                       cpu_tensor_t *y, const char *op_name, tp_plugin_status_t *status) {
    tp_dtype_t dtype = x->view.dtype;
    size_t size = dtype == TP_FLOAT32 ? sizeof(float) : sizeof(double);
    int64_t outputs = y->view.num_elements, group = 1;
    /* Merged groups, dimensions of 1 dropped: they change no offset. */
    int64_t dims[TP_MAX_RANK];
    bool merged_reduced[TP_MAX_RANK];
    int32_t n = 0;
    for (int32_t d = 0; d < x->view.rank; d++) {
        if (reduced[d]) group *= x->view.dims[d];
        if (x->view.dims[d] == 1) continue;
        if (n > 0 && merged_reduced[n - 1] == reduced[d]) {
            dims[n - 1] *= x->view.dims[d];
        } else {
            dims[n] = x->view.dims[d];
            merged_reduced[n++] = reduced[d];
        }
    }
    if (x->view.num_elements == 0) {
        /* Nothing reduced into each output: the identity of the reduction. */
        double identity = op == CPU_REDUCE_MAX   ? -INFINITY
                          : op == CPU_REDUCE_MIN ? INFINITY
                          : op == CPU_REDUCE_MEAN ? NAN
                                                  : 0.0;
        fill(dtype, y->data, outputs, identity);
        return true;
    }
    const void *source = x->data;
    bool done = false;
    while (!done) {
        int32_t j = n - 1;
        while (j >= 0 && !merged_reduced[j]) j--;
        if (j < 0) { /* nothing (left) to reduce: the values are the output */
            if (source != y->data) memcpy(y->data, source, (size_t)outputs * size);
            break;
        }
        done = j < 2; /* groups alternate, so no reduced group is left before j */
        run_t run = {.op = op, .in = source, .length = dims[j]};
        run.outer = 1;
        run.inner = 1;
        for (int32_t d = 0; d < j; d++) run.outer *= dims[d];
        for (int32_t d = j + 1; d < n; d++) run.inner *= dims[d];
        atomic_init(&run.out_of_memory, false);
        run.out = done ? y->data : malloc((size_t)(run.outer * run.inner) * size);
        bool ok = run.out != NULL && reduce_run(dtype, &run);
        if (source != x->data) free((void *)source);
        if (!ok) {
            if (run.out != y->data) free(run.out);
            tp_cpu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                    "%s: no host memory for partial results", op_name);
            return false;
        }
        source = run.out;
        /* The run's group is gone; the kept groups on either side of it join. */
        if (j > 0 && j + 1 < n) {
            dims[j - 1] *= dims[j + 1];
            for (int32_t d = j; d + 2 < n; d++) {
                dims[d] = dims[d + 2];
                merged_reduced[d] = merged_reduced[d + 2];
            }
            n -= 2;
        } else {
            for (int32_t d = j; d + 1 < n; d++) {
                dims[d] = dims[d + 1];
                merged_reduced[d] = merged_reduced[d + 1];
            }
            n -= 1;
        }
    }
    if (op == CPU_REDUCE_MEAN) {
        for (int64_t o = 0; o < outputs; o++) {
            if (dtype == TP_FLOAT32)
                ((float *)y->data)[o] = (float)((double)((float *)y->data)[o] / (double)group);
            else
                ((double *)y->data)[o] /= (double)group;
        }
    }
    return true;
}
