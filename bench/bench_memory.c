/* SPDX-License-Identifier: Apache-2.0 */
/* Device memory: the BFC allocator against glibc's malloc/free on the same sequence of
 * requests, and eager Relu into a fresh output at every call against a memcpy of the same
 * bytes, each pair measured in the same run. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "memory/bfc_allocator.h"
#include "tensorplug/tensorplug.h"

/* ---- Allocate/free pairs --------------------------------------------------------------------
 * A window of LIVE allocations: each step frees the oldest and allocates a new size, drawn
 * log-uniformly from 256 B to 64 MiB with a fixed seed, so both allocators see exactly the
 * same requests with the same number live. */

enum { LIVE = 16, STEPS = 1 << 16, BATCH = 256 };

static uint64_t sizes[STEPS];

static void draw_sizes(void) {
    uint64_t state = 0x2545f4914f6cdd1dULL;
    for (int i = 0; i < STEPS; i++) {
        state ^= state << 13; /* xorshift64 */
        state ^= state >> 7;
        state ^= state << 17;
        double unit = (double)(state >> 11) / (double)(UINT64_C(1) << 53);
        sizes[i] = (uint64_t)exp2(8.0 + unit * 18.0); /* 2^8 .. 2^26, uniform in the exponent */
    }
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, size_t count) {
    qsort(values, count, sizeof *values, compare_doubles);
    return values[count / 2];
}

typedef struct {
    void *ptr[LIVE];
    tp_bfc_block_t block[LIVE];
    uint64_t size[LIVE];
    uint64_t in_use, peak_in_use;
} window_t;

static void track(window_t *window, int slot, uint64_t size) {
    window->in_use = window->in_use - window->size[slot] + size;
    window->size[slot] = size;
    if (window->in_use > window->peak_in_use) window->peak_in_use = window->in_use;
}

/* One step: returns what `slot` holds, then allocates `size` bytes into it. Both allocators
 * are called through this pointer, so both pay the same indirect call. */
typedef void (*step_t)(void *allocator, window_t *window, int slot, uint64_t size);

static void malloc_step(void *allocator, window_t *window, int slot, uint64_t size) {
    (void)allocator;
    free(window->ptr[slot]);
    window->ptr[slot] = malloc(size);
    if (window->ptr[slot] == NULL) exit(1);
    *(volatile char *)window->ptr[slot] = 1; /* as a tensor's first write would */
}

static void bfc_step(void *allocator, window_t *window, int slot, uint64_t size) {
    tp_bfc_block_t *block = &window->block[slot];
    if (block->chunk != NULL) tp_bfc_free(block->chunk);
    TP_CHECK(tp_bfc_allocate(allocator, size, block));
    /* The same first write as malloc's block gets: the regions are host memory here. */
    *((volatile char *)block->mem + block->offset) = 1;
}

/* Median ns per pair over batches of BATCH steps; the window is left holding LIVE blocks. */
static double time_pairs(step_t step, void *allocator, window_t *window) {
    static double batch_ns[STEPS / BATCH];
    for (int b = 0; b < STEPS / BATCH; b++) {
        double start = now_seconds();
        for (int i = b * BATCH; i < (b + 1) * BATCH; i++)
            step(allocator, window, i % LIVE, sizes[i]);
        batch_ns[b] = (now_seconds() - start) * 1e9 / BATCH;
        for (int i = b * BATCH; i < (b + 1) * BATCH; i++) track(window, i % LIVE, sizes[i]);
    }
    return median(batch_ns, STEPS / BATCH);
}

static double malloc_pairs(uint64_t *out_peak_in_use) {
    window_t window = {0};
    double ns = time_pairs(malloc_step, NULL, &window);
    for (int slot = 0; slot < LIVE; slot++) free(window.ptr[slot]);
    *out_peak_in_use = window.peak_in_use;
    return ns;
}

/* The BFC's regions come from the host, as the CPU device's do. */
static tp_status_t *host_allocate(void *state, uint64_t size, void **out_mem) {
    (void)state;
    *out_mem = malloc(size);
    if (*out_mem == NULL) exit(1); /* the host is out of memory: no figure is worth giving */
    *(volatile char *)*out_mem = 1;
    return NULL;
}

static void host_deallocate(void *state, void *mem, uint64_t size) {
    (void)state;
    (void)size;
    free(mem);
}

static double bfc_pairs(tp_bfc_t *bfc, uint64_t *out_peak_in_use) {
    window_t window = {0};
    double ns = time_pairs(bfc_step, bfc, &window);
    for (int slot = 0; slot < LIVE; slot++) tp_bfc_free(window.block[slot].chunk);
    *out_peak_in_use = window.peak_in_use;
    return ns;
}

static void allocate_free_pairs(void) {
    draw_sizes();
    printf("allocate/free pairs, 256 B to 64 MiB log-uniform, %d live, %d steps (best of 3 "
           "medians of batches of %d)\n",
           LIVE, STEPS, BATCH);
    /* The best of three medians: on a shared machine a whole run can land on a busy core. */
    uint64_t peak_in_use;
    double malloc_ns = 1e30, bfc_ns = 1e30;
    for (int r = 0; r < 3; r++) {
        double ns = malloc_pairs(&peak_in_use);
        if (ns < malloc_ns) malloc_ns = ns;
    }
    printf("  %-34s %8.1f ns/pair\n", "baseline: glibc malloc/free", malloc_ns);

    tp_bfc_options_t options = {UINT64_C(1) << 34, true, UINT64_C(2) << 20, 0};
    tp_bfc_t *bfc;
    TP_CHECK(tp_bfc_create("bench_bfc", (tp_bfc_backend_t){host_allocate, host_deallocate, NULL},
                           &options, &bfc));
    for (int r = 0; r < 3; r++) {
        double ns = bfc_pairs(bfc, &peak_in_use);
        if (ns < bfc_ns) bfc_ns = ns;
    }
    tp_bfc_stats_t stats;
    tp_bfc_get_stats(bfc, &stats);
    printf("  %-34s %8.1f ns/pair   (%.2fx malloc's time; target: at most 100 ns and faster "
           "than malloc)\n",
           "BFC allocator (growth)", bfc_ns, bfc_ns / malloc_ns);
    printf("  %-34s %8.2f        (reserved %.0f MiB, peak in use %.0f MiB)\n",
           "peak reserved / peak in use", (double)stats.bytes_reserved / (double)peak_in_use,
           (double)stats.bytes_reserved / 1048576.0, (double)peak_in_use / 1048576.0);
    tp_bfc_destroy(bfc);
}

/* ---- Fresh-output Relu ---------------------------------------------------------------------- */

/* Tells the compiler that `p`, and what it points to, is used here: a copy into a buffer that
 * is never read is otherwise removed (clang does), and the baseline measures nothing. */
static inline void escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

enum { RELU_ELEMENTS = 16 << 20, RELU_REPEATS = 20 };

static void fresh_output_relu(void) {
    size_t bytes = (size_t)RELU_ELEMENTS * sizeof(float);
    float *source = malloc(bytes), *target = malloc(bytes);
    if (source == NULL || target == NULL) exit(1);
    for (size_t i = 0; i < RELU_ELEMENTS; i++) source[i] = (float)(i % 13) - 6.0f;
    memcpy(target, source, bytes);

    /* Bytes moved: each reads the input once and writes the output once. */
    double moved = 2.0 * (double)bytes * 1e-9;
    double copy = 1e30, fresh_copy = 1e30, relu = 1e30;
    for (int r = 0; r < RELU_REPEATS; r++) {
        double start = now_seconds();
        memcpy(target, source, bytes);
        escape(target);
        double t = now_seconds() - start;
        if (t < copy) copy = t;

        start = now_seconds();
        float *fresh = malloc(bytes);
        if (fresh == NULL) exit(1);
        memcpy(fresh, source, bytes);
        escape(fresh);
        t = now_seconds() - start;
        free(fresh);
        if (t < fresh_copy) fresh_copy = t;
    }

    tp_context_t *context = bench_cpu_context();
    tp_tensor_t *x;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(RELU_ELEMENTS), source, bytes, &x));
    for (int r = 0; r < RELU_REPEATS; r++) {
        double start = now_seconds();
        tp_tensor_t *y;
        TP_CHECK(tp_relu(context, x, &y));
        TP_CHECK(tp_tensor_wait(y));
        double t = now_seconds() - start;
        tp_tensor_release(y);
        if (t < relu) relu = t;
    }
    printf("eager Relu, 16M float32 (64 MiB), a fresh output at every call (best of %d)\n",
           RELU_REPEATS);
    printf("  %-42s %7.1f GB/s\n", "baseline: memcpy into a warm buffer", moved / copy);
    printf("  %-42s %7.1f GB/s\n", "memcpy into a fresh malloc (page faults)", moved / fresh_copy);
    printf("  %-42s %7.1f GB/s   (%.0f%% of memcpy; target: at least 80%%)\n",
           "tp_relu, output from the CPU's allocator", moved / relu, 100.0 * copy / relu);
    tp_tensor_release(x);
    tp_context_destroy(context);
    free(source);
    free(target);
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    allocate_free_pairs();
    fresh_output_relu();
    return 0;
}
