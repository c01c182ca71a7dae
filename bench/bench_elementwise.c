/* SPDX-License-Identifier: Apache-2.0 */
/* The cheap element-wise ops on 16M float32 elements, beside memcpy of the same bytes in the
 * same run: each op's bytes (every input read, the output written) per second as a fraction
 * of memcpy's (the source read, the destination written). Rounds rotate the order of the
 * rows, and each figure is the median of its rounds, so that a noisy machine moves them all
 * alike. TP_CPU_THREADS sets the kernels' threads (default: every core). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"

enum { ROWS = 4096, COLUMNS = 4096, N = ROWS * COLUMNS, ROUNDS = 15 };

typedef struct {
    tp_context_t *context;
    tp_tensor_t *x, *y, *row, *condition;
    float *source, *destination;
} inputs_t;

typedef enum {
    MEMCPY, C_RELU, RELU, NEG, ABS, SQUARE, ADD, SUB, MUL, DIV, ADD_ROW, BIAS_ADD, CAST, GREATER,
    SELECT, NUM_ROWS
} row_t;

static const char *const names[NUM_ROWS] = {
    "memcpy", "plain C Relu loop", "Relu", "Neg", "Abs", "Square", "Add", "Sub", "Mul", "Div",
    "Add [4096,4096]+[4096]", "BiasAdd", "Cast to int32", "Greater", "Select",
};

/* Bytes each row moves: inputs read plus output written. */
static double bytes_of(row_t row) {
    switch (row) {
    case ADD: case SUB: case MUL: case DIV: return 12.0 * N;
    case GREATER: return 9.0 * N;                 /* two float32 in, a bool out */
    case SELECT: return 13.0 * N;                 /* a bool and two float32 in */
    default: return 8.0 * N;                      /* one float32 in, four bytes out */
    }
}

static double run(row_t row, inputs_t *in) {
    tp_context_t *c = in->context;
    tp_tensor_t *out = NULL;
    double start = now_seconds();
    switch (row) {
    case MEMCPY: memcpy(in->destination, in->source, (size_t)N * sizeof(float)); break;
    case C_RELU:
        for (int64_t i = 0; i < N; i++)
            in->destination[i] = in->source[i] < 0 ? 0.0f : in->source[i];
        break;
    case RELU: TP_CHECK(tp_relu(c, in->x, &out)); break;
    case NEG: TP_CHECK(tp_neg(c, in->x, &out)); break;
    case ABS: TP_CHECK(tp_abs(c, in->x, &out)); break;
    case SQUARE: TP_CHECK(tp_square(c, in->x, &out)); break;
    case ADD: TP_CHECK(tp_add(c, in->x, in->y, &out)); break;
    case SUB: TP_CHECK(tp_sub(c, in->x, in->y, &out)); break;
    case MUL: TP_CHECK(tp_mul(c, in->x, in->y, &out)); break;
    case DIV: TP_CHECK(tp_div(c, in->x, in->y, &out)); break;
    case ADD_ROW: TP_CHECK(tp_add(c, in->x, in->row, &out)); break;
    case BIAS_ADD: TP_CHECK(tp_bias_add(c, in->x, in->row, &out)); break;
    case CAST: TP_CHECK(tp_cast(c, in->x, TP_INT32, &out)); break;
    case GREATER: TP_CHECK(tp_greater(c, in->x, in->y, &out)); break;
    case SELECT: TP_CHECK(tp_select(c, in->condition, in->x, in->y, &out)); break;
    case NUM_ROWS: break;
    }
    if (out != NULL) TP_CHECK(tp_tensor_wait(out));
    double seconds = now_seconds() - start;
    tp_tensor_release(out);
    return seconds;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    inputs_t in = {.context = bench_cpu_context()};
    in.source = malloc((size_t)N * sizeof(float));
    in.destination = malloc((size_t)N * sizeof(float));
    float *other = malloc((size_t)N * sizeof(float));
    unsigned char *flags = malloc(N);
    if (in.source == NULL || in.destination == NULL || other == NULL || flags == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < N; i++) {
        in.source[i] = (float)(i % 1000) - 499.5f;
        other[i] = (float)(i % 13) + 1.0f;
        flags[i] = (unsigned char)(i % 3 == 0);
    }
    memset(in.destination, 0, (size_t)N * sizeof(float)); /* faulted in, as a pooled output is */
    TP_CHECK(tp_tensor_create(in.context, TP_FLOAT32, TP_SHAPE(ROWS, COLUMNS), in.source,
                              (size_t)N * sizeof(float), &in.x));
    TP_CHECK(tp_tensor_create(in.context, TP_FLOAT32, TP_SHAPE(ROWS, COLUMNS), other,
                              (size_t)N * sizeof(float), &in.y));
    TP_CHECK(tp_tensor_create(in.context, TP_FLOAT32, TP_SHAPE(COLUMNS), other,
                              COLUMNS * sizeof(float), &in.row));
    TP_CHECK(tp_tensor_create(in.context, TP_BOOL, TP_SHAPE(ROWS, COLUMNS), flags, N,
                              &in.condition));

    static double seconds[NUM_ROWS][ROUNDS];
    for (int r = 0; r < NUM_ROWS; r++) run((row_t)r, &in); /* warm: pages, pooled blocks */
    for (int round = 0; round < ROUNDS; round++)
        for (int k = 0; k < NUM_ROWS; k++) {
            int r = (k + round) % NUM_ROWS;
            seconds[r][round] = run((row_t)r, &in);
        }
    double median[NUM_ROWS];
    for (int r = 0; r < NUM_ROWS; r++) {
        qsort(seconds[r], ROUNDS, sizeof(double), by_value);
        median[r] = seconds[r][ROUNDS / 2];
    }
    double memcpy_rate = bytes_of(MEMCPY) / median[MEMCPY];
    printf("element-wise, 16M float32 (%dx%d), median of %d rounds\n", ROWS, COLUMNS, ROUNDS);
    printf("%-24s %9s %8s %10s\n", "row", "ms", "GB/s", "x memcpy");
    for (int r = 0; r < NUM_ROWS; r++) {
        double rate = bytes_of((row_t)r) / median[r];
        printf("%-24s %9.2f %8.1f %9.2fx\n", names[r], median[r] * 1e3, rate * 1e-9,
               rate / memcpy_rate);
    }
    tp_tensor_release(in.x);
    tp_tensor_release(in.y);
    tp_tensor_release(in.row);
    tp_tensor_release(in.condition);
    tp_context_destroy(in.context);
    free(in.source);
    free(in.destination);
    free(other);
    free(flags);
    return 0;
}
