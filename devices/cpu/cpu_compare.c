/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels that compare elements: Equal, NotEqual, Less, LessEqual, Greater and GreaterEqual
 * (NumPy broadcasting, bool results), Select (NumPy's where: the condition, t and e broadcast
 * together) and ArgMax and ArgMin. Comparisons follow IEEE 754: NaN is unequal to everything,
 * itself included, and neither less nor greater than anything; -0 equals +0. */
#include <stdbool.h>
#include <string.h>

#include "cpu_kernels.h"

/* ---- Broadcasting ---------------------------------------------------------------------------- */

enum { MAX_OPERANDS = 3 };

/* The output's dimensions and, per operand, its element strides along them (0 where it is
 * broadcast). The output is walked by rows of its last dimension. */
typedef struct {
    int32_t rank;
    int64_t dims[TP_MAX_RANK];
    int64_t strides[MAX_OPERANDS][TP_MAX_RANK];
    int32_t operands;
} broadcast_t;

static void broadcast_init(broadcast_t *b, const tp_tensor_view_t *out,
                           const cpu_tensor_t *operands, int32_t count) {
    b->rank = out->rank > 0 ? out->rank : 1;
    b->operands = count;
    for (int32_t d = 0; d < b->rank; d++) b->dims[d] = out->rank > 0 ? out->dims[d] : 1;
    for (int32_t k = 0; k < count; k++)
        cpu_broadcast_strides(&operands[k].view, b->rank, b->strides[k]);
}

/* Where each operand's part of output row `row` starts. */
static void row_offsets(const broadcast_t *b, int64_t row, int64_t *offsets) {
    for (int32_t k = 0; k < b->operands; k++) offsets[k] = 0;
    for (int32_t d = b->rank - 2; d >= 0; d--) {
        int64_t coordinate = row % b->dims[d];
        row /= b->dims[d];
        for (int32_t k = 0; k < b->operands; k++) offsets[k] += coordinate * b->strides[k][d];
    }
}

static int64_t row_count(const broadcast_t *b) {
    return cpu_dims_product(b->dims, 0, b->rank - 1);
}

/* ---- Comparisons ----------------------------------------------------------------------------- */

typedef enum { EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL } comparison_t;

typedef struct {
    broadcast_t shape;
    comparison_t op;
    tp_dtype_t dtype;
    const void *x, *y;
    bool *z;
} compare_job_t;

/* Along a row each operand either advances (step 1) or repeats one element (step 0). Each
 * case is its own loop, so that the compiler vectorises it: indexing by k * sx with sx unknown
 * would make every load a gather. */
#define COMPARE_LOOP(OPERATOR)                                                                 \
    do {                                                                                       \
        bool *restrict zr = z;                                                                 \
        if (sx && sy) {                                                                        \
            for (int64_t k = 0; k < inner; k++) zr[k] = x[k] OPERATOR y[k];                    \
        } else if (sx) {                                                                       \
            for (int64_t k = 0; k < inner; k++) zr[k] = x[k] OPERATOR y[0];                    \
        } else if (sy) {                                                                       \
            for (int64_t k = 0; k < inner; k++) zr[k] = x[0] OPERATOR y[k];                    \
        } else {                                                                               \
            for (int64_t k = 0; k < inner; k++) zr[k] = x[0] OPERATOR y[0];                    \
        }                                                                                      \
    } while (0)

#define COMPARE_ROW(T)                                                                         \
    do {                                                                                       \
        const T *x = (const T *)job->x + at[0], *y = (const T *)job->y + at[1];                \
        switch (job->op) {                                                                     \
        case EQUAL: COMPARE_LOOP(==); break;                                                   \
        case NOT_EQUAL: COMPARE_LOOP(!=); break;                                               \
        case LESS: COMPARE_LOOP(<); break;                                                     \
        case LESS_EQUAL: COMPARE_LOOP(<=); break;                                              \
        case GREATER: COMPARE_LOOP(>); break;                                                  \
        case GREATER_EQUAL: COMPARE_LOOP(>=); break;                                           \
        }                                                                                      \
    } while (0)

static void compare_rows(void *arg, int64_t begin, int64_t end) {
    const compare_job_t *job = arg;
    int32_t last = job->shape.rank - 1;
    int64_t inner = job->shape.dims[last];
    int64_t sx = job->shape.strides[0][last] != 0, sy = job->shape.strides[1][last] != 0;
    for (int64_t row = begin; row < end; row++) {
        int64_t at[MAX_OPERANDS];
        row_offsets(&job->shape, row, at);
        bool *z = job->z + row * inner;
        switch (job->dtype) {
        case TP_FLOAT32: COMPARE_ROW(float); break;
        case TP_FLOAT64: COMPARE_ROW(double); break;
#define INTEGER_CASE(dt, T, U, is_signed)                                                       \
    case dt: COMPARE_ROW(T); break;
            CPU_FOR_EACH_INTEGER(INTEGER_CASE)
#undef INTEGER_CASE
        case TP_BOOL: COMPARE_ROW(bool); break;
        default: break;
        }
    }
}

static void run_comparison(comparison_t op, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    cpu_tensor_t operands[2], z;
    if (!cpu_input(context, 0, &operands[0], status) ||
        !cpu_input(context, 1, &operands[1], status) || !cpu_output(context, 0, &z, status))
        return;
    if (z.view.num_elements == 0) return;
    compare_job_t job = {.op = op, .dtype = operands[0].view.dtype, .x = operands[0].data,
                         .y = operands[1].data, .z = z.data};
    broadcast_init(&job.shape, &z.view, operands, 2);
    cpu_parallel_for(row_count(&job.shape), job.shape.dims[job.shape.rank - 1], compare_rows,
                     &job);
}

#define COMPARISON_KERNEL(name, op)                                                            \
    static void name(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) { \
        (void)kernel;                                                                          \
        run_comparison(op, context, status);                                                   \
    }
COMPARISON_KERNEL(equal, EQUAL)
COMPARISON_KERNEL(not_equal, NOT_EQUAL)
COMPARISON_KERNEL(less, LESS)
COMPARISON_KERNEL(less_equal, LESS_EQUAL)
COMPARISON_KERNEL(greater, GREATER)
COMPARISON_KERNEL(greater_equal, GREATER_EQUAL)

/* ---- Select ---------------------------------------------------------------------------------- */

typedef struct {
    broadcast_t shape;
    const bool *condition;
    const char *t, *e;
    char *out;
    size_t size;
} select_job_t;

/* Each element copied from t or e by size, the size a constant in each case. */
#define SELECT_LOOP(SIZE)                                                                      \
    for (int64_t k = 0; k < inner; k++) {                                                      \
        const char *from = condition[k * sc] ? t + k * st * (SIZE) : e + k * se * (SIZE);      \
        memcpy(out + k * (SIZE), from, (SIZE));                                                \
    }

/* The same where no operand is broadcast along the row, with elements as unsigned integers of
 * their size: both values loaded and one kept through a mask made from the condition (a bool
 * is 0 or 1), where the loop above branches on each condition; gcc does not vectorise a
 * `c ? t[k] : e[k]` whose loads it may not speculate. */
#define SELECT_DENSE(U)                                                                        \
    do {                                                                                       \
        const U *restrict tu = (const U *)t, *restrict eu = (const U *)e;                      \
        const unsigned char *restrict cu = (const unsigned char *)condition;                   \
        U *restrict ou = (U *)out;                                                             \
        for (int64_t k = 0; k < inner; k++) {                                                  \
            U mask = (U)0 - (U)cu[k];                                                          \
            ou[k] = (U)((tu[k] & mask) | (eu[k] & (U)~mask));                                  \
        }                                                                                      \
    } while (0)

static void select_rows(void *arg, int64_t begin, int64_t end) {
    const select_job_t *job = arg;
    int32_t last = job->shape.rank - 1;
    int64_t inner = job->shape.dims[last];
    int64_t sc = job->shape.strides[0][last] != 0, st = job->shape.strides[1][last] != 0,
            se = job->shape.strides[2][last] != 0;
    size_t size = job->size;
    for (int64_t row = begin; row < end; row++) {
        int64_t at[MAX_OPERANDS];
        row_offsets(&job->shape, row, at);
        const bool *condition = job->condition + at[0];
        const char *t = job->t + (size_t)at[1] * size, *e = job->e + (size_t)at[2] * size;
        char *out = job->out + (size_t)(row * inner) * size;
        if (sc && st && se && (size == 1 || size == 2 || size == 4 || size == 8)) {
            switch (size) {
            case 1: SELECT_DENSE(uint8_t); break;
            case 2: SELECT_DENSE(uint16_t); break;
            case 4: SELECT_DENSE(uint32_t); break;
            default: SELECT_DENSE(uint64_t); break;
            }
            continue;
        }
        switch (size) {
        case 1: SELECT_LOOP(1); break;
        case 2: SELECT_LOOP(2); break;
        case 4: SELECT_LOOP(4); break;
        case 8: SELECT_LOOP(8); break;
        default: SELECT_LOOP(size); break;
        }
    }
}

static void select_kernel(void *kernel, tp_kernel_context_t *context,
                          tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t operands[3], y;
    for (int32_t k = 0; k < 3; k++)
        if (!cpu_input(context, k, &operands[k], status)) return;
    if (!cpu_output(context, 0, &y, status) || y.view.num_elements == 0) return;
    select_job_t job = {.condition = operands[0].data, .t = operands[1].data,
                        .e = operands[2].data, .out = y.data,
                        .size = cpu_element_size(&y.view)};
    broadcast_init(&job.shape, &y.view, operands, 3);
    cpu_parallel_for(row_count(&job.shape), job.shape.dims[job.shape.rank - 1], select_rows,
                     &job);
}

/* ---- ArgMax and ArgMin ----------------------------------------------------------------------- */

/* The input seen as [outer, n, inner]; one search along n per (outer, inner) position. Ties go
 * to the first index. NaN counts as beyond every number, so the first NaN wins either search,
 * as in NumPy (and as Max propagates NaN here); TensorFlow leaves NaN's index unspecified. */
typedef struct {
    bool largest;
    tp_dtype_t dtype, index_dtype;
    const void *x;
    void *y;
    int64_t n, inner;
} arg_job_t;

#define IS_NAN(v) ((v) != (v))
#define NEVER_NAN(v) false

#define ARG_SEARCH(T, NAN_TEST)                                                                \
    do {                                                                                       \
        const T *p = (const T *)job->x + (position / job->inner) * job->n * job->inner +       \
                     position % job->inner;                                                    \
        T best = p[0];                                                                         \
        for (int64_t k = 1; k < job->n && !NAN_TEST(best); k++) {                              \
            T v = p[k * job->inner];                                                           \
            if (NAN_TEST(v) || (job->largest ? v > best : v < best)) {                         \
                best = v;                                                                      \
                found = k;                                                                     \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static void arg_positions(void *arg, int64_t begin, int64_t end) {
    const arg_job_t *job = arg;
    for (int64_t position = begin; position < end; position++) {
        int64_t found = 0;
        switch (job->dtype) {
        case TP_FLOAT32: ARG_SEARCH(float, IS_NAN); break;
        case TP_FLOAT64: ARG_SEARCH(double, IS_NAN); break;
#define INTEGER_CASE(dt, T, U, is_signed)                                                       \
    case dt: ARG_SEARCH(T, NEVER_NAN); break;
            CPU_FOR_EACH_INTEGER(INTEGER_CASE)
#undef INTEGER_CASE
        default: break;
        }
        if (job->index_dtype == TP_INT32)
            ((int32_t *)job->y)[position] = (int32_t)found;
        else
            ((int64_t *)job->y)[position] = found;
    }
}

static void run_arg_search(bool largest, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    cpu_tensor_t x, y;
    int64_t axis = 0;
    tp_cpu_host->kernel_attr_int(context, "axis", &axis, status);
    if (cpu_failed(status) || !cpu_input(context, 0, &x, status) ||
        !cpu_output(context, 0, &y, status))
        return;
    if (axis < 0) axis += x.view.rank;
    int64_t inner = cpu_dims_product(x.view.dims, (int32_t)axis + 1, x.view.rank);
    arg_job_t job = {largest, x.view.dtype, y.view.dtype, x.data, y.data, x.view.dims[axis],
                     inner};
    cpu_parallel_for(y.view.num_elements, job.n, arg_positions, &job);
}

static void arg_max(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    run_arg_search(true, context, status);
}

static void arg_min(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    run_arg_search(false, context, status);
}

void cpu_register_compare_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    /* float16 and bfloat16 are compared as the float32 values they are (cpu_staging.c). */
    cpu_register(registrar, "Equal", "T", CPU_ALL, equal, status);
    cpu_register(registrar, "NotEqual", "T", CPU_ALL, not_equal, status);
    cpu_register(registrar, "Less", "T", CPU_NUMBERS, less, status);
    cpu_register(registrar, "LessEqual", "T", CPU_NUMBERS, less_equal, status);
    cpu_register(registrar, "Greater", "T", CPU_NUMBERS, greater, status);
    cpu_register(registrar, "GreaterEqual", "T", CPU_NUMBERS, greater_equal, status);
    cpu_register(registrar, "ArgMax", "T", CPU_NUMBERS, arg_max, status);
    cpu_register(registrar, "ArgMin", "T", CPU_NUMBERS, arg_min, status);
    /* Select copies by element size: every dtype. */
    cpu_register(registrar, "Select", NULL, NULL, 0, select_kernel, status);
}
