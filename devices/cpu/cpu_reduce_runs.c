/* SPDX-License-Identifier: Apache-2.0 */
/* Float reductions at the memory limit. The dimensions are merged into alternating kept and
 * reduced groups, and each reduced group is one run over an (outer, reduced, inner) block:
 * with inner == 1 the reduced elements are contiguous and are reduced in independent vector
 * accumulators; otherwise whole rows of `inner` elements are combined into an output row,
 * column by column. Several reduced groups (axes 0 and 2 of a 3-D tensor) are reduced one run
 * after another, the last first, through a temporary. The loops themselves are cpu_math.h's,
 * on the widest vectors the CPU has (AVX-512F, AVX2, SSE2), chosen once.
 *
 * Sums are pairwise (a binary tree of partial sums over blocks), so that the error grows with
 * log2 of the count rather than with the count, as it would in a running total. Max and Min
 * take a NaN and keep it, as TensorFlow's do. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_math.h"
#include "cpu_reduce_runs.h"

/* Rows of a row reduction combined in one pass (cpu_math.h's rows loop adds eight as a tree)
 * before the block enters the pairwise tree, and the bytes of one strip of columns that a
 * task walks down the rows. */
enum { ROW_BLOCK = 8, STRIP_BYTES = 4096 };
/* Elements of a contiguous run that one task reduces when the run is split across cores. */
enum { PART_ELEMENTS = 1 << 16, MAX_PARTS = 64 };

typedef struct {
    cpu_math_reduce_t op;
    const cpu_math_t *math;
    const void *in;
    void *out;
    int64_t outer, length, inner, strips, strip;
    void *partials; /* one per part of a split contiguous run */
    int64_t parts;
    atomic_bool out_of_memory;
} run_t;

/* Everything below once per float type: T the type, S its name's suffix in cpu_math_t. */
#define DEFINE_RUNS(T, S)                                                                      \
    /* Outputs [begin, end) of a run with inner == 1, one whole run each. */                   \
    static void whole_runs_##S(void *arg, int64_t begin, int64_t end) {                        \
        run_t *run = arg;                                                                      \
        const T *in = run->in;                                                                 \
        T *out = run->out;                                                                     \
        for (int64_t o = begin; o < end; o++)                                                  \
            out[o] = run->math->reduce_##S(run->op, in + o * run->length, run->length);        \
    }                                                                                          \
                                                                                               \
    /* Parts [begin, end) of output run->strip's contiguous run, into run->partials. */        \
    static void run_parts_##S(void *arg, int64_t begin, int64_t end) {                         \
        run_t *run = arg;                                                                      \
        const T *in = (const T *)run->in + run->strip * run->length;                           \
        for (int64_t p = begin; p < end; p++) {                                                \
            int64_t first = run->length * p / run->parts;                                      \
            int64_t last = run->length * (p + 1) / run->parts;                                 \
            ((T *)run->partials)[p] = run->math->reduce_##S(run->op, in + first, last - first); \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* Tasks [begin, end) of a run with inner > 1: task t is strip t % strips of output row    \
     * t / strips, reduced down all run->length rows, ROW_BLOCK at a time. A sum keeps a stack \
     * of partial rows, one per level of the pairwise tree, merging two of a level as a binary \
     * counter carries. */                                                                     \
    static void row_strips_##S(void *arg, int64_t begin, int64_t end) {                        \
        run_t *run = arg;                                                                      \
        bool sum = run->op == CPU_MATH_SUM;                                                    \
        int64_t width = STRIP_BYTES / (int64_t)sizeof(T), levels = 2;                          \
        for (int64_t blocks = run->length / ROW_BLOCK; blocks > 0; blocks /= 2) levels++;      \
        T *stack = sum ? malloc((size_t)(levels * width) * sizeof(T)) : NULL;                  \
        if (sum && stack == NULL) {                                                            \
            atomic_store(&run->out_of_memory, true);                                           \
            return;                                                                            \
        }                                                                                      \
        for (int64_t t = begin; t < end; t++) {                                                \
            int64_t o = t / run->strips, c0 = t % run->strips * width;                         \
            int64_t n = run->inner - c0 < width ? run->inner - c0 : width;                     \
            const T *in = (const T *)run->in + o * run->length * run->inner + c0;              \
            T *out = (T *)run->out + o * run->inner + c0;                                      \
            int64_t top = 0;                                                                   \
            uint64_t blocks = 0;                                                               \
            for (int64_t r0 = 0; r0 < run->length; r0 += ROW_BLOCK) {                          \
                int64_t rows = run->length - r0 < ROW_BLOCK ? run->length - r0 : ROW_BLOCK;    \
                const T *block = in + r0 * run->inner;                                         \
                if (!sum) {                                                                    \
                    run->math->rows_##S(run->op, out, block, run->inner, rows, n, r0 > 0);     \
                    continue;                                                                  \
                }                                                                              \
                run->math->rows_##S(run->op, stack + top * width, block, run->inner, rows, n,  \
                                    false);                                                    \
                top++;                                                                         \
                for (uint64_t m = ++blocks; (m & 1) == 0; m >>= 1, top--)                      \
                    run->math->rows_##S(run->op, stack + (top - 2) * width,                    \
                                        stack + (top - 1) * width, 0, 1, n, true);             \
            }                                                                                  \
            if (!sum) continue;                                                                \
            for (; top > 1; top--)                                                             \
                run->math->rows_##S(run->op, stack + (top - 2) * width,                        \
                                    stack + (top - 1) * width, 0, 1, n, true);                 \
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
            ((T *)run->out)[run->strip] = run->math->reduce_##S(run->op, partials, run->parts); \
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
        double identity = op == CPU_REDUCE_MAX    ? -INFINITY
                          : op == CPU_REDUCE_MIN  ? INFINITY
                          : op == CPU_REDUCE_MEAN ? NAN
                          : op == CPU_REDUCE_PROD ? 1.0
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
        static const cpu_math_reduce_t loops[] = {
            [CPU_REDUCE_SUM] = CPU_MATH_SUM, [CPU_REDUCE_MEAN] = CPU_MATH_SUM,
            [CPU_REDUCE_MAX] = CPU_MATH_MAX, [CPU_REDUCE_MIN] = CPU_MATH_MIN,
            [CPU_REDUCE_PROD] = CPU_MATH_PROD};
        run_t run = {.op = loops[op], .math = cpu_math(), .in = source, .length = dims[j]};
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
