/* SPDX-License-Identifier: Apache-2.0 */
/* The array ops on the CPU (ArgMax, ArgMin, Concat, Slice, StridedSlice, Gather,
 * UnsortedSegmentSum, OneHot, Pad, Tile, Select and the comparisons): values against results
 * worked out by hand (StridedSlice's as NumPy's x[...] gives them), negative axes, dimensions of
 * size 0, every dtype for the ops that only move elements, the multi-threaded paths against a
 * plain loop, and every refusal's code and message. */
#include "cpu_fixture.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Making and reading tensors -------------------------------------------------------------- */

#define F32(c, shape, ...) TENSOR_OF(c, TP_FLOAT32, float, shape, __VA_ARGS__)
#define F64(c, shape, ...) TENSOR_OF(c, TP_FLOAT64, double, shape, __VA_ARGS__)
#define I32(c, shape, ...) TENSOR_OF(c, TP_INT32, int32_t, shape, __VA_ARGS__)
#define I64(c, shape, ...) TENSOR_OF(c, TP_INT64, int64_t, shape, __VA_ARGS__)
#define U8(c, shape, ...) TENSOR_OF(c, TP_UINT8, uint8_t, shape, __VA_ARGS__)
#define BOOLS(c, shape, ...) TENSOR_OF(c, TP_BOOL, bool, shape, __VA_ARGS__)

/* A tensor of `shape` whose element k is k, in `dtype` (float32, float64, int32 or int64). */
static tp_tensor_t *iota(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape) {
    int64_t count = element_count(shape);
    size_t size = (size_t)count * tp_dtype_size(dtype);
    void *data = malloc(size + 1);
    assert_non_null(data);
    for (int64_t k = 0; k < count; k++) {
        switch (dtype) {
        case TP_FLOAT32: ((float *)data)[k] = (float)k; break;
        case TP_FLOAT64: ((double *)data)[k] = (double)k; break;
        case TP_INT32: ((int32_t *)data)[k] = (int32_t)k; break;
        case TP_INT64: ((int64_t *)data)[k] = k; break;
        default: fail_msg("iota of dtype %d", (int)dtype);
        }
    }
    tp_tensor_t *tensor = tensor_of_bytes(c, dtype, shape, data, size);
    free(data);
    return tensor;
}

/* Checks the tensor's dtype, shape and bytes against `want` and releases it. Bytes, not values:
 * copies must be exact, NaN payloads and -0 included. */
static void expect_tensor(tp_tensor_t *tensor, tp_dtype_t dtype, tp_shape_t shape,
                          const void *want, size_t size) {
    assert_non_null(tensor);
    tp_shape_t got_shape = tp_tensor_shape(tensor);
    tp_dtype_t got_dtype = tp_tensor_dtype(tensor);
    size_t got_size = tp_tensor_byte_size(tensor);
    unsigned char *got = malloc(got_size + 1);
    assert_non_null(got);
    tp_status_t *status = tp_tensor_read(tensor, got, got_size);
    tp_tensor_release(tensor);
    assert_ok(status);
    char a[128], b[128];
    tp_shape_format(&got_shape, a, sizeof a);
    tp_shape_format(&shape, b, sizeof b);
    bool ok = got_dtype == dtype && same_shape(got_shape, shape) && got_size == size &&
              (size == 0 || memcmp(got, want, size) == 0);
    if (!ok) {
        print_error("got %s %s (%zu bytes), wanted %s %s (%zu bytes)\n", tp_dtype_name(got_dtype),
                    a, got_size, tp_dtype_name(dtype), b, size);
        size_t element = tp_dtype_size(dtype);
        for (size_t k = 0; element > 0 && (k + 1) * element <= size && k < 64; k++) {
            double g = 0, w = 0;
            if ((k + 1) * element <= got_size) {
                switch (dtype) {
                case TP_FLOAT32: g = ((float *)got)[k], w = ((const float *)want)[k]; break;
                case TP_FLOAT64: g = ((double *)got)[k], w = ((const double *)want)[k]; break;
                case TP_INT32: g = ((int32_t *)got)[k], w = ((const int32_t *)want)[k]; break;
                case TP_INT64:
                    g = (double)((int64_t *)got)[k], w = (double)((const int64_t *)want)[k];
                    break;
                default: g = got[k], w = ((const unsigned char *)want)[k]; break;
                }
            }
            print_error("  element %zu: got %g, wanted %g\n", k, g, w);
        }
        free(got);
        fail();
    }
    free(got);
}

#define EXPECT(t, dtype, ctype, shape, ...)                                                    \
    expect_tensor((t), (dtype), (shape), (const ctype[]){__VA_ARGS__},                         \
                  sizeof((const ctype[]){__VA_ARGS__}))
#define EXPECT_F32(t, shape, ...) EXPECT(t, TP_FLOAT32, float, shape, __VA_ARGS__)
#define EXPECT_F64(t, shape, ...) EXPECT(t, TP_FLOAT64, double, shape, __VA_ARGS__)
#define EXPECT_I32(t, shape, ...) EXPECT(t, TP_INT32, int32_t, shape, __VA_ARGS__)
#define EXPECT_I64(t, shape, ...) EXPECT(t, TP_INT64, int64_t, shape, __VA_ARGS__)
#define EXPECT_U8(t, shape, ...) EXPECT(t, TP_UINT8, uint8_t, shape, __VA_ARGS__)
#define EXPECT_BOOLS(t, shape, ...) EXPECT(t, TP_BOOL, bool, shape, __VA_ARGS__)
/* An empty tensor of that dtype and shape. */
#define EXPECT_EMPTY(t, dtype, shape) expect_tensor((t), (dtype), (shape), "", 0)

#define LIST(...) ((const int64_t[]){__VA_ARGS__})

static void release_all(tp_tensor_t **tensors, size_t count) {
    for (size_t i = 0; i < count; i++) tp_tensor_release(tensors[i]);
}

/* ---- ArgMax and ArgMin ----------------------------------------------------------------------- */

static void argmax_and_argmin_find_the_first_extreme_along_an_axis(void **state) {
    tp_context_t *c = *state;
    /* [[1, 5, 5], [7, -2, 7]]: ties at 5 and at 7 give the first index. */
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 3), 1, 5, 5, 7, -2, 7), *y;
    assert_ok(tp_argmax(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(3), 1, 0, 1);
    assert_ok(tp_argmax(c, x, 1, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(2), 1, 0);
    assert_ok(tp_argmax(c, x, -1, TP_INT32, &y));
    EXPECT_I32(y, TP_SHAPE(2), 1, 0);
    assert_ok(tp_argmin(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(3), 0, 1, 0);
    assert_ok(tp_argmin(c, x, -2, TP_INT32, &y));
    EXPECT_I32(y, TP_SHAPE(3), 0, 1, 0);
    assert_ok(tp_argmin(c, x, 1, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(2), 0, 1);
    tp_tensor_release(x);
    /* The middle axis of [2, 2, 2]: searches along a stride of 2. */
    x = F32(c, TP_SHAPE(2, 2, 2), 0, 9, 8, 1, 5, 5, 3, 7);
    assert_ok(tp_argmax(c, x, 1, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(2, 2), 1, 0, 0, 1);
    assert_ok(tp_argmin(c, x, 1, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(2, 2), 0, 1, 1, 0);
    tp_tensor_release(x);
}

static void argmax_and_argmin_give_the_first_nan(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(3, 3), 1, NAN, 3, 2, 9, NAN, NAN, -1, 5), *y;
    assert_ok(tp_argmax(c, x, 1, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(3), 1, 2, 0);
    assert_ok(tp_argmin(c, x, 1, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(3), 1, 2, 0);
    /* Along axis 0: column 0 is (1, 2, NaN), column 1 (NaN, 9, -1), column 2 (3, NaN, 5). */
    assert_ok(tp_argmax(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(3), 2, 0, 1);
    tp_tensor_release(x);
    x = F32(c, TP_SHAPE(3), -INFINITY, INFINITY, 0);
    assert_ok(tp_argmax(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SCALAR_SHAPE, 1);
    assert_ok(tp_argmin(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SCALAR_SHAPE, 0);
    tp_tensor_release(x);
}

static void argmax_and_argmin_on_integers_compare_exactly(void **state) {
    tp_context_t *c = *state;
    /* INT64_MAX - 1 and INT64_MAX are one double apart: compared as int64 they differ. */
    tp_tensor_t *x = I64(c, TP_SHAPE(4), INT64_MIN, INT64_MAX - 1, INT64_MAX, INT64_MIN), *y;
    assert_ok(tp_argmax(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SCALAR_SHAPE, 2);
    assert_ok(tp_argmin(c, x, 0, TP_INT32, &y));
    EXPECT_I32(y, TP_SCALAR_SHAPE, 0);
    tp_tensor_release(x);
    x = U8(c, TP_SHAPE(3), 3, 255, 0);
    assert_ok(tp_argmax(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SCALAR_SHAPE, 1);
    assert_ok(tp_argmin(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SCALAR_SHAPE, 2);
    tp_tensor_release(x);
    x = I32(c, TP_SHAPE(2, 2), -5, 4, -6, 4);
    assert_ok(tp_argmin(c, x, 0, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(2), 1, 0);
    tp_tensor_release(x);
}

static void argmax_keeps_an_empty_dimension_that_is_not_searched(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(0, 3), NULL, 0), *y;
    assert_ok(tp_argmax(c, x, 1, TP_INT64, &y));
    EXPECT_EMPTY(y, TP_INT64, TP_SHAPE(0));
    assert_op_fails(y, tp_argmax(c, x, 0, TP_INT64, &y), TP_INVALID_ARGUMENT,
                    "ArgMax: axis 0 of the input [0,3] is empty");
    tp_tensor_release(x);
}

static void argmax_and_argmin_refuse_bad_calls(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *scalar = F32(c, TP_SCALAR_SHAPE, 1), *x = F32(c, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_t *flags = BOOLS(c, TP_SHAPE(2), true, false), *y;
    assert_op_fails(y, tp_argmax(c, scalar, 0, TP_INT64, &y), TP_INVALID_ARGUMENT,
                    "ArgMax: the input is a scalar");
    assert_op_fails(y, tp_argmin(c, x, 2, TP_INT64, &y), TP_INVALID_ARGUMENT,
                    "ArgMin: axis 2 is out of range for a tensor of rank 2 (allowed: [-2, 2))");
    assert_op_fails(y, tp_argmax(c, x, -3, TP_INT64, &y), TP_INVALID_ARGUMENT,
                    "ArgMax: axis -3 is out of range");
    assert_op_fails(y, tp_argmax(c, x, 0, TP_FLOAT32, &y), TP_INVALID_ARGUMENT,
                    "ArgMax does not support float32 for 'output_type'");
    assert_op_fails(y, tp_argmax(c, flags, 0, TP_INT64, &y), TP_INVALID_ARGUMENT,
                    "ArgMax does not support bool for 'T'");
    tp_tensor_release(scalar);
    tp_tensor_release(x);
    tp_tensor_release(flags);
}

/* ---- Concat ---------------------------------------------------------------------------------- */

static void concat_joins_along_any_axis(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = I64(c, TP_SHAPE(2, 2), 1, 2, 3, 4), *b = I64(c, TP_SHAPE(2, 1), 5, 6);
    tp_tensor_t *row = I64(c, TP_SHAPE(1, 2), 7, 8), *y;
    assert_ok(tp_concat(c, (tp_tensor_t *[]){a, b}, 2, 1, &y));
    EXPECT_I64(y, TP_SHAPE(2, 3), 1, 2, 5, 3, 4, 6);
    assert_ok(tp_concat(c, (tp_tensor_t *[]){b, a, b}, 3, -1, &y));
    EXPECT_I64(y, TP_SHAPE(2, 4), 5, 1, 2, 5, 6, 3, 4, 6);
    assert_ok(tp_concat(c, (tp_tensor_t *[]){a, row}, 2, 0, &y));
    EXPECT_I64(y, TP_SHAPE(3, 2), 1, 2, 3, 4, 7, 8);
    assert_ok(tp_concat(c, (tp_tensor_t *[]){a}, 1, 0, &y));
    EXPECT_I64(y, TP_SHAPE(2, 2), 1, 2, 3, 4);
    release_all((tp_tensor_t *[]){a, b, row}, 3);
    /* The middle axis of rank 3, float64. */
    a = F64(c, TP_SHAPE(2, 1, 2), 0, 1, 2, 3);
    b = F64(c, TP_SHAPE(2, 2, 2), 10, 11, 12, 13, 14, 15, 16, 17);
    assert_ok(tp_concat(c, (tp_tensor_t *[]){a, b}, 2, 1, &y));
    EXPECT_F64(y, TP_SHAPE(2, 3, 2), 0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17);
    release_all((tp_tensor_t *[]){a, b}, 2);
}

static void concat_takes_every_dtype_and_empty_inputs(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = BOOLS(c, TP_SHAPE(2), true, false),
                *none = tensor_of_bytes(c, TP_BOOL, TP_SHAPE(0), NULL, 0);
    tp_tensor_t *b = BOOLS(c, TP_SHAPE(1), true), *y;
    assert_ok(tp_concat(c, (tp_tensor_t *[]){a, none, b}, 3, 0, &y));
    EXPECT_BOOLS(y, TP_SHAPE(3), true, false, true);
    release_all((tp_tensor_t *[]){a, none, b}, 3);
    a = U8(c, TP_SHAPE(1, 2), 1, 2);
    b = U8(c, TP_SHAPE(1, 1), 3);
    assert_ok(tp_concat(c, (tp_tensor_t *[]){a, b}, 2, 1, &y));
    EXPECT_U8(y, TP_SHAPE(1, 3), 1, 2, 3);
    release_all((tp_tensor_t *[]){a, b}, 2);
    a = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(0, 2), NULL, 0);
    b = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(0, 3), NULL, 0);
    assert_ok(tp_concat(c, (tp_tensor_t *[]){a, b}, 2, 1, &y));
    EXPECT_EMPTY(y, TP_FLOAT32, TP_SHAPE(0, 5));
    release_all((tp_tensor_t *[]){a, b}, 2);
}

static void concat_refuses_bad_calls(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *scalar = F32(c, TP_SCALAR_SHAPE, 1), *a = F32(c, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_t *b = F32(c, TP_SHAPE(3, 1), 1, 2, 3), *v = F32(c, TP_SHAPE(2), 1, 2);
    tp_tensor_t *ints = I32(c, TP_SHAPE(2, 1), 1, 2), *y;
    assert_op_fails(y, tp_concat(c, (tp_tensor_t *[]){scalar, scalar}, 2, 0, &y),
                    TP_INVALID_ARGUMENT, "Concat: input 0 is a scalar");
    assert_op_fails(y, tp_concat(c, (tp_tensor_t *[]){a, b}, 2, 1, &y), TP_INVALID_ARGUMENT,
                    "Concat: input 1 is [3,1] and input 0 is [2,2]; they must agree in every "
                    "dimension but axis 1");
    assert_op_fails(y, tp_concat(c, (tp_tensor_t *[]){a, v}, 2, 0, &y), TP_INVALID_ARGUMENT,
                    "Concat: input 1 is [2] and input 0 is [2,2]");
    assert_op_fails(y, tp_concat(c, (tp_tensor_t *[]){a, a}, 2, 2, &y), TP_INVALID_ARGUMENT,
                    "Concat: axis 2 is out of range for a tensor of rank 2");
    assert_op_fails(y, tp_concat(c, (tp_tensor_t *[]){a, ints}, 2, 1, &y), TP_INVALID_ARGUMENT,
                    "Concat: input 1 ('values') is int32, but T is float32");
    assert_op_fails(y, tp_concat(c, NULL, 0, 0, &y), TP_INVALID_ARGUMENT,
                    "Concat: 'values' needs at least one tensor");
    release_all((tp_tensor_t *[]){scalar, a, b, v, ints}, 5);
}

/* ---- Slice ----------------------------------------------------------------------------------- */

static void slice_takes_a_block(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = iota(c, TP_INT32, TP_SHAPE(3, 4)), *y;
    assert_ok(tp_slice(c, x, LIST(1, 1), LIST(2, -1), 2, &y));
    EXPECT_I32(y, TP_SHAPE(2, 3), 5, 6, 7, 9, 10, 11);
    assert_ok(tp_slice(c, x, LIST(0, 2), LIST(3, 1), 2, &y));
    EXPECT_I32(y, TP_SHAPE(3, 1), 2, 6, 10);
    assert_ok(tp_slice(c, x, LIST(3, 0), LIST(0, 4), 2, &y));
    EXPECT_EMPTY(y, TP_INT32, TP_SHAPE(0, 4));
    assert_ok(tp_slice(c, x, LIST(0, 0), LIST(-1, -1), 2, &y));
    EXPECT_I32(y, TP_SHAPE(3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    tp_tensor_release(x);
    x = F64(c, TP_SCALAR_SHAPE, 2.5);
    assert_ok(tp_slice(c, x, NULL, NULL, 0, &y));
    EXPECT_F64(y, TP_SCALAR_SHAPE, 2.5);
    tp_tensor_release(x);
    x = BOOLS(c, TP_SHAPE(4), true, false, false, true);
    assert_ok(tp_slice(c, x, LIST(2), LIST(2), 1, &y));
    EXPECT_BOOLS(y, TP_SHAPE(2), false, true);
    tp_tensor_release(x);
}

static void slice_refuses_bad_bounds(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = iota(c, TP_INT32, TP_SHAPE(3, 4)), *y;
    assert_op_fails(y, tp_slice(c, x, LIST(0, 5), LIST(1, 1), 2, &y), TP_INVALID_ARGUMENT,
                    "Slice: begin[1] = 5 is outside [0, 4] for the input [3,4]");
    assert_op_fails(y, tp_slice(c, x, LIST(-1, 0), LIST(1, 1), 2, &y), TP_INVALID_ARGUMENT,
                    "Slice: begin[0] = -1 is outside [0, 3]");
    assert_op_fails(y, tp_slice(c, x, LIST(1, 1), LIST(2, 4), 2, &y), TP_INVALID_ARGUMENT,
                    "Slice: size[1] = 4 is outside [0, 3] (or -1: to the end) for begin[1] = 1 "
                    "in the input [3,4]");
    assert_op_fails(y, tp_slice(c, x, LIST(0, 0), LIST(-2, 1), 2, &y), TP_INVALID_ARGUMENT,
                    "Slice: size[0] = -2 is outside [0, 3]");
    assert_op_fails(y, tp_slice(c, x, LIST(0), LIST(1), 1, &y), TP_INVALID_ARGUMENT,
                    "Slice: begin has 1 entries, but the input [3,4] needs 2");
    int64_t nine[9] = {0};
    assert_op_fails(y, tp_slice(c, x, nine, nine, 9, &y), TP_INVALID_ARGUMENT,
                    "Slice: begin has 9 entries; at most 8");
    tp_tensor_release(x);
}

/* ---- StridedSlice ---------------------------------------------------------------------------- */

/* x = arange(24).reshape(2, 3, 4); each case is a NumPy expression and what NumPy gives. */
static void strided_slice_follows_python_slicing(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = iota(c, TP_INT64, TP_SHAPE(2, 3, 4)), *y;
    /* x[1, ::-1, 1:3] */
    tp_strided_slice_masks_t masks = {.begin_mask = 2, .end_mask = 2, .shrink_axis_mask = 1};
    assert_ok(tp_strided_slice(c, x, LIST(1, 0, 1), LIST(0, 0, 3), LIST(1, -1, 1), 3, &masks,
                               &y));
    EXPECT_I64(y, TP_SHAPE(3, 2), 21, 22, 17, 18, 13, 14);
    /* x[:, -2:, ::2] */
    masks = (tp_strided_slice_masks_t){.begin_mask = 5, .end_mask = 7};
    assert_ok(tp_strided_slice(c, x, LIST(0, -2, 0), LIST(0, 0, 0), LIST(1, 1, 2), 3, &masks,
                               &y));
    EXPECT_I64(y, TP_SHAPE(2, 2, 2), 4, 6, 8, 10, 16, 18, 20, 22);
    /* x[:, :, -1:-5:-3]: the end clamps to "before the first", 3 then 0. */
    masks = (tp_strided_slice_masks_t){.begin_mask = 3, .end_mask = 3};
    assert_ok(tp_strided_slice(c, x, LIST(0, 0, -1), LIST(0, 0, -5), LIST(1, 1, -3), 3, &masks,
                               &y));
    EXPECT_I64(y, TP_SHAPE(2, 3, 2), 3, 0, 7, 4, 11, 8, 15, 12, 19, 16, 23, 20);
    /* x[1, 1:-100:-1, 5:0:-2]: both bounds clamped. */
    masks = (tp_strided_slice_masks_t){.shrink_axis_mask = 1};
    assert_ok(tp_strided_slice(c, x, LIST(1, 1, 5), LIST(0, -100, 0), LIST(1, -1, -2), 3, &masks,
                               &y));
    EXPECT_I64(y, TP_SHAPE(2, 2), 19, 17, 15, 13);
    /* x[0, 10:-10]: an empty range. */
    masks = (tp_strided_slice_masks_t){.shrink_axis_mask = 1};
    assert_ok(tp_strided_slice(c, x, LIST(0, 10), LIST(0, -10), NULL, 2, &masks, &y));
    EXPECT_EMPTY(y, TP_INT64, TP_SHAPE(0, 4));
    /* x[1]: dimensions no entry names are taken whole. */
    assert_ok(tp_strided_slice(c, x, LIST(1), LIST(2), NULL, 1, NULL, &y));
    EXPECT_I64(y, TP_SHAPE(1, 3, 4), 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23);
    tp_tensor_release(x);
}

static void strided_slice_expands_an_ellipsis_and_new_axes(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = iota(c, TP_INT64, TP_SHAPE(2, 3, 4)), *y;
    /* x[..., 1] */
    tp_strided_slice_masks_t masks = {.ellipsis_mask = 1, .shrink_axis_mask = 2};
    assert_ok(tp_strided_slice(c, x, LIST(0, 1), LIST(0, 2), NULL, 2, &masks, &y));
    EXPECT_I64(y, TP_SHAPE(2, 3), 1, 5, 9, 13, 17, 21);
    /* x[np.newaxis, 0, ..., np.newaxis, -1]: the new axis after the ellipsis takes no
     * dimension from it. */
    masks = (tp_strided_slice_masks_t){.new_axis_mask = 9, .shrink_axis_mask = 18,
                                       .ellipsis_mask = 4};
    assert_ok(tp_strided_slice(c, x, LIST(0, 0, 0, 0, -1), LIST(0, 1, 0, 0, 0), NULL, 5, &masks,
                               &y));
    EXPECT_I64(y, TP_SHAPE(1, 3, 1), 3, 7, 11);
    /* x[...]: everything. */
    masks = (tp_strided_slice_masks_t){.ellipsis_mask = 1};
    assert_ok(tp_strided_slice(c, x, LIST(0), LIST(0), NULL, 1, &masks, &y));
    EXPECT_I64(y, TP_SHAPE(2, 3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
               17, 18, 19, 20, 21, 22, 23);
    /* x[-1, -1, -1]: a scalar. */
    masks = (tp_strided_slice_masks_t){.shrink_axis_mask = 7};
    assert_ok(tp_strided_slice(c, x, LIST(-1, -1, -1), LIST(0, 0, 0), NULL, 3, &masks, &y));
    EXPECT_I64(y, TP_SCALAR_SHAPE, 23);
    tp_tensor_release(x);
    /* A scalar gains a dimension: s[np.newaxis]. */
    x = F32(c, TP_SCALAR_SHAPE, 4.5f);
    masks = (tp_strided_slice_masks_t){.new_axis_mask = 1};
    assert_ok(tp_strided_slice(c, x, LIST(0), LIST(0), NULL, 1, &masks, &y));
    EXPECT_F32(y, TP_SHAPE(1), 4.5f);
    tp_tensor_release(x);
    /* y[7:2:-2] of a vector of bools. */
    x = BOOLS(c, TP_SHAPE(10), false, false, false, true, false, false, false, true, false,
              false);
    assert_ok(tp_strided_slice(c, x, LIST(7), LIST(2), LIST(-2), 1, NULL, &y));
    EXPECT_BOOLS(y, TP_SHAPE(3), true, false, true);
    tp_tensor_release(x);
}

static void strided_slice_refuses_bad_specs(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = iota(c, TP_INT64, TP_SHAPE(2, 3, 4)), *y;
    assert_op_fails(y, tp_strided_slice(c, x, LIST(0, 0), LIST(1, 1), LIST(1, 0), 2, NULL, &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: strides[1] is 0");
    tp_strided_slice_masks_t masks = {.shrink_axis_mask = 1};
    assert_op_fails(y, tp_strided_slice(c, x, LIST(2), LIST(3), NULL, 1, &masks, &y),
                    TP_INVALID_ARGUMENT,
                    "StridedSlice: begin[0] = 2 is out of bounds for dimension 0 of size 2");
    assert_op_fails(y, tp_strided_slice(c, x, LIST(-3), LIST(0), NULL, 1, &masks, &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: begin[0] = -3 is out of bounds");
    assert_op_fails(y, tp_strided_slice(c, x, LIST(0), LIST(1), LIST(-1), 1, &masks, &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: strides[0] is -1, but entry 0 is a "
                    "single index (shrink_axis_mask) and must step forward");
    masks = (tp_strided_slice_masks_t){.ellipsis_mask = 3};
    assert_op_fails(y, tp_strided_slice(c, x, LIST(0, 0), LIST(0, 0), NULL, 2, &masks, &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: ellipsis_mask 3 sets more than one "
                    "ellipsis");
    masks = (tp_strided_slice_masks_t){.begin_mask = 8};
    assert_op_fails(y, tp_strided_slice(c, x, LIST(0, 0), LIST(1, 1), NULL, 2, &masks, &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: begin_mask is 8, but only bits 0..1 "
                    "name entries of the spec");
    masks = (tp_strided_slice_masks_t){.end_mask = -1};
    assert_op_fails(y, tp_strided_slice(c, x, LIST(0), LIST(1), NULL, 1, &masks, &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: end_mask is -1");
    assert_op_fails(y, tp_strided_slice(c, x, LIST(0, 0, 0, 0), LIST(1, 1, 1, 1), NULL, 4, NULL,
                                        &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: the spec names more dimensions than "
                    "the input [2,3,4] has (entry 3 would be dimension 3)");
    masks = (tp_strided_slice_masks_t){.new_axis_mask = 63};
    int64_t zeros[6] = {0};
    assert_op_fails(y, tp_strided_slice(c, x, zeros, zeros, NULL, 6, &masks, &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: the result would have more than 8 "
                    "dimensions");
    int64_t many[33] = {0};
    assert_op_fails(y, tp_strided_slice(c, x, many, many, NULL, 33, NULL, &y),
                    TP_INVALID_ARGUMENT, "StridedSlice: 33 entries in begin, end and strides; "
                    "at most 32");
    /* begin, end and strides of different lengths, through tp_execute. */
    tp_attr_t attrs[2] = {TP_ATTR_LIST_VALUE("begin", LIST(0, 0), 2),
                          TP_ATTR_LIST_VALUE("end", LIST(1), 1)};
    assert_op_fails(y, tp_execute(c, "StridedSlice", &x, 1, attrs, 2, &y, 1),
                    TP_INVALID_ARGUMENT, "StridedSlice: begin, end and strides must have as "
                    "many entries, but have 2, 1 and 0");
    tp_tensor_release(x);
}

/* ---- Gather and UnsortedSegmentSum ----------------------------------------------------------- */

static void gather_takes_slices_along_an_axis(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *params = F32(c, TP_SHAPE(3, 2), 1, 2, 3, 4, 5, 6), *y;
    tp_tensor_t *rows = I32(c, TP_SHAPE(2), 2, 0), *pairs = I64(c, TP_SHAPE(2, 2), 1, 0, 0, 1);
    tp_tensor_t *one = I64(c, TP_SCALAR_SHAPE, 1),
                *none = tensor_of_bytes(c, TP_INT32, TP_SHAPE(0), NULL, 0);
    tp_tensor_t *again = I32(c, TP_SHAPE(3), 1, 1, 1);
    assert_ok(tp_gather(c, params, rows, 0, &y));
    EXPECT_F32(y, TP_SHAPE(2, 2), 5, 6, 1, 2);
    /* Along axis 1 with 2-D indices: [3] + [2, 2]. */
    assert_ok(tp_gather(c, params, pairs, 1, &y));
    EXPECT_F32(y, TP_SHAPE(3, 2, 2), 2, 1, 1, 2, 4, 3, 3, 4, 6, 5, 5, 6);
    assert_ok(tp_gather(c, params, pairs, -1, &y));
    EXPECT_F32(y, TP_SHAPE(3, 2, 2), 2, 1, 1, 2, 4, 3, 3, 4, 6, 5, 5, 6);
    assert_ok(tp_gather(c, params, one, 0, &y));
    EXPECT_F32(y, TP_SHAPE(2), 3, 4);
    assert_ok(tp_gather(c, params, again, 0, &y));
    EXPECT_F32(y, TP_SHAPE(3, 2), 3, 4, 3, 4, 3, 4);
    assert_ok(tp_gather(c, params, none, 0, &y));
    EXPECT_EMPTY(y, TP_FLOAT32, TP_SHAPE(0, 2));
    tp_tensor_release(params);
    params = BOOLS(c, TP_SHAPE(3), true, false, true);
    assert_ok(tp_gather(c, params, pairs, 0, &y));
    EXPECT_BOOLS(y, TP_SHAPE(2, 2), false, true, true, false);
    release_all((tp_tensor_t *[]){params, rows, pairs, one, none, again}, 6);
}

static void gather_names_a_bad_index_and_its_place(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *params = F32(c, TP_SHAPE(3, 2), 1, 2, 3, 4, 5, 6), *y;
    tp_tensor_t *bad = I32(c, TP_SHAPE(2, 2), 0, 1, 3, 0), *negative = I64(c, TP_SHAPE(1), -1);
    tp_tensor_t *scalar = I64(c, TP_SCALAR_SHAPE, 7), *floats = F32(c, TP_SHAPE(1), 0);
    tp_tensor_t *empty = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(0, 2), NULL, 0);
    tp_tensor_t *zero = I32(c, TP_SHAPE(1), 0);
    assert_op_fails(y, tp_gather(c, params, bad, 0, &y), TP_INVALID_ARGUMENT,
                    "Gather: indices[1,0] = 3 is not in [0, 3)");
    assert_op_fails(y, tp_gather(c, params, negative, 0, &y), TP_INVALID_ARGUMENT,
                    "Gather: indices[0] = -1 is not in [0, 3)");
    assert_op_fails(y, tp_gather(c, params, scalar, 1, &y), TP_INVALID_ARGUMENT,
                    "Gather: indices = 7 is not in [0, 2)");
    assert_op_fails(y, tp_gather(c, empty, zero, 0, &y), TP_INVALID_ARGUMENT,
                    "Gather: indices[0] = 0 is not in [0, 0)");
    assert_op_fails(y, tp_gather(c, params, zero, 2, &y), TP_INVALID_ARGUMENT,
                    "Gather: axis 2 is out of range for a tensor of rank 2");
    assert_op_fails(y, tp_gather(c, params, floats, 0, &y), TP_INVALID_ARGUMENT,
                    "Gather does not support float32 for 'Tindices'");
    tp_tensor_t *one = F32(c, TP_SCALAR_SHAPE, 1);
    assert_op_fails(y, tp_gather(c, one, zero, 0, &y), TP_INVALID_ARGUMENT,
                    "Gather: params is a scalar");
    tp_tensor_release(one);
    tp_tensor_t *deep =
        tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(1, 1, 1, 1, 1, 1, 1, 1), (float[]){0}, 4);
    tp_tensor_t *matrix = I32(c, TP_SHAPE(1, 1), 0);
    assert_op_fails(y, tp_gather(c, deep, matrix, 0, &y), TP_INVALID_ARGUMENT,
                    "Gather: params [1,1,1,1,1,1,1,1] with indices [1,1] would give rank 9; at "
                    "most 8");
    release_all((tp_tensor_t *[]){params, bad, negative, scalar, floats, empty, zero, deep,
                                  matrix},
                9);
}

static void unsorted_segment_sum_adds_rows_by_id(void **state) {
    tp_context_t *c = *state;
    /* Rows 0 and 2 go to segment 1, row 3 to 0, row 1 (id -1) nowhere; segment 2 stays 0. */
    tp_tensor_t *data = F64(c, TP_SHAPE(4, 2), 1, 2, 3, 4, 5, 6, 7, 8), *y;
    tp_tensor_t *ids = I32(c, TP_SHAPE(4), 1, -1, 1, 0);
    assert_ok(tp_unsorted_segment_sum(c, data, ids, 3, &y));
    EXPECT_F64(y, TP_SHAPE(3, 2), 7, 8, 6, 8, 0, 0);
    release_all((tp_tensor_t *[]){data, ids}, 2);
    /* 2-D ids over all of data: a histogram weighted by the values. */
    data = I32(c, TP_SHAPE(2, 2), 1, 2, 3, 4);
    ids = I64(c, TP_SHAPE(2, 2), 0, 0, 1, 0);
    assert_ok(tp_unsorted_segment_sum(c, data, ids, 2, &y));
    EXPECT_I32(y, TP_SHAPE(2), 7, 3);
    release_all((tp_tensor_t *[]){data, ids}, 2);
    /* No ids: every segment is 0. */
    data = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(0, 3), NULL, 0);
    ids = tensor_of_bytes(c, TP_INT32, TP_SHAPE(0), NULL, 0);
    assert_ok(tp_unsorted_segment_sum(c, data, ids, 2, &y));
    EXPECT_F32(y, TP_SHAPE(2, 3), 0, 0, 0, 0, 0, 0);
    release_all((tp_tensor_t *[]){data, ids}, 2);
}

static void unsorted_segment_sum_refuses_bad_calls(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *data = F32(c, TP_SHAPE(4, 2), 1, 2, 3, 4, 5, 6, 7, 8), *y;
    tp_tensor_t *ids = I32(c, TP_SHAPE(4), 0, 1, 3, 0), *short_ids = I32(c, TP_SHAPE(3), 0, 1, 2);
    tp_tensor_t *flags = BOOLS(c, TP_SHAPE(4), true, true, true, true);
    assert_op_fails(y, tp_unsorted_segment_sum(c, data, ids, 3, &y), TP_INVALID_ARGUMENT,
                    "UnsortedSegmentSum: segment_ids[2] = 3 is not in [0, 3)");
    assert_op_fails(y, tp_unsorted_segment_sum(c, data, short_ids, 3, &y), TP_INVALID_ARGUMENT,
                    "UnsortedSegmentSum: segment_ids [3] must be the leading dimensions of data "
                    "[4,2]");
    assert_op_fails(y, tp_unsorted_segment_sum(c, data, ids, -1, &y), TP_INVALID_ARGUMENT,
                    "UnsortedSegmentSum: num_segments is -1; it must be >= 0");
    assert_op_fails(y, tp_unsorted_segment_sum(c, flags, ids, 4, &y), TP_INVALID_ARGUMENT,
                    "UnsortedSegmentSum does not support bool for 'T'");
    release_all((tp_tensor_t *[]){data, ids, short_ids, flags}, 4);
}

/* ---- OneHot ---------------------------------------------------------------------------------- */

static void one_hot_marks_each_index(void **state) {
    tp_context_t *c = *state;
    /* 5 is outside [0, 3): its row is all off_value. */
    tp_tensor_t *indices = I32(c, TP_SHAPE(3), 0, 2, 5), *y;
    assert_ok(tp_one_hot(c, indices, 3, 1, 0, -1, TP_FLOAT32, &y));
    EXPECT_F32(y, TP_SHAPE(3, 3), 1, 0, 0, 0, 0, 1, 0, 0, 0);
    assert_ok(tp_one_hot(c, indices, 3, 1, 0, 0, TP_FLOAT32, &y));
    EXPECT_F32(y, TP_SHAPE(3, 3), 1, 0, 0, 0, 0, 0, 0, 1, 0);
    assert_ok(tp_one_hot(c, indices, 0, 1, 0, -1, TP_FLOAT64, &y));
    EXPECT_EMPTY(y, TP_FLOAT64, TP_SHAPE(3, 0));
    tp_tensor_release(indices);
    /* [[1, -1], [0, 1]] with on 5, off -1, the new axis last, then in the middle. */
    indices = I64(c, TP_SHAPE(2, 2), 1, -1, 0, 1);
    assert_ok(tp_one_hot(c, indices, 2, 5, -1, -1, TP_INT32, &y));
    EXPECT_I32(y, TP_SHAPE(2, 2, 2), -1, 5, -1, -1, 5, -1, -1, 5);
    assert_ok(tp_one_hot(c, indices, 2, 5, -1, 1, TP_INT64, &y));
    EXPECT_I64(y, TP_SHAPE(2, 2, 2), -1, -1, 5, -1, 5, -1, -1, 5);
    tp_tensor_release(indices);
    indices = U8(c, TP_SCALAR_SHAPE, 1);
    assert_ok(tp_one_hot(c, indices, 3, 1, 0, -1, TP_BOOL, &y));
    EXPECT_BOOLS(y, TP_SHAPE(3), false, true, false);
    assert_ok(tp_one_hot(c, indices, 2, 255, 7, 0, TP_UINT8, &y));
    EXPECT_U8(y, TP_SHAPE(2), 7, 255);
    tp_tensor_release(indices);
}

static void one_hot_refuses_bad_calls(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *indices = I32(c, TP_SHAPE(3), 0, 2, 5), *floats = F32(c, TP_SHAPE(1), 0), *y;
    assert_op_fails(y, tp_one_hot(c, indices, -1, 1, 0, -1, TP_FLOAT32, &y),
                    TP_INVALID_ARGUMENT, "OneHot: depth is -1; it must be >= 0");
    assert_op_fails(y, tp_one_hot(c, indices, 3, 1, 0, 2, TP_FLOAT32, &y), TP_INVALID_ARGUMENT,
                    "OneHot: axis 2 is out of range for indices of rank 1 (allowed: -1 or [0, "
                    "1])");
    assert_op_fails(y, tp_one_hot(c, indices, 3, 1, 0, -2, TP_FLOAT32, &y), TP_INVALID_ARGUMENT,
                    "OneHot: axis -2 is out of range");
    assert_op_fails(y, tp_one_hot(c, indices, 3, 1.5, 0, -1, TP_INT32, &y), TP_INVALID_ARGUMENT,
                    "OneHot: on_value 1.5 is not a value of int32");
    assert_op_fails(y, tp_one_hot(c, indices, 3, 1, 2, -1, TP_BOOL, &y), TP_INVALID_ARGUMENT,
                    "OneHot: off_value 2 is not a value of bool");
    assert_op_fails(y, tp_one_hot(c, indices, 3, 256, 0, -1, TP_UINT8, &y), TP_INVALID_ARGUMENT,
                    "OneHot: on_value 256 is not a value of uint8");
    assert_op_fails(y, tp_one_hot(c, indices, 3, NAN, 0, -1, TP_INT64, &y), TP_INVALID_ARGUMENT,
                    "OneHot: on_value nan is not a value of int64");
    assert_op_fails(y, tp_one_hot(c, floats, 3, 1, 0, -1, TP_FLOAT32, &y), TP_INVALID_ARGUMENT,
                    "OneHot does not support float32 for 'TI'");
    tp_tensor_t *deep =
        tensor_of_bytes(c, TP_INT32, TP_SHAPE(1, 1, 1, 1, 1, 1, 1, 1), (int32_t[]){0}, 4);
    assert_op_fails(y, tp_one_hot(c, deep, 3, 1, 0, -1, TP_FLOAT32, &y), TP_INVALID_ARGUMENT,
                    "OneHot: indices of rank 8 would give rank 9; at most 8");
    release_all((tp_tensor_t *[]){indices, floats, deep}, 3);
}

/* ---- Pad and Tile ---------------------------------------------------------------------------- */

static void pad_surrounds_with_a_constant(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(2, 2), 1, 2, 3, 4), *y;
    assert_ok(tp_pad(c, x, LIST(1, 0, 0, 2), 2, 9, &y));
    EXPECT_I32(y, TP_SHAPE(3, 4), 9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9);
    assert_ok(tp_pad(c, x, LIST(0, 0, 0, 0), 2, 0, &y));
    EXPECT_I32(y, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_release(x);
    x = tensor_of_bytes(c, TP_FLOAT64, TP_SHAPE(0, 2), NULL, 0);
    assert_ok(tp_pad(c, x, LIST(1, 1, 0, 0), 2, 0.5, &y));
    EXPECT_F64(y, TP_SHAPE(2, 2), 0.5, 0.5, 0.5, 0.5);
    tp_tensor_release(x);
    x = BOOLS(c, TP_SHAPE(1), false);
    assert_ok(tp_pad(c, x, LIST(2, 1), 1, 1, &y));
    EXPECT_BOOLS(y, TP_SHAPE(4), true, true, false, true);
    tp_tensor_release(x);
    x = F32(c, TP_SCALAR_SHAPE, -3);
    assert_ok(tp_pad(c, x, NULL, 0, 1, &y));
    EXPECT_F32(y, TP_SCALAR_SHAPE, -3);
    tp_tensor_release(x);
    /* -0 is written as -0. */
    x = F32(c, TP_SHAPE(1), 1);
    assert_ok(tp_pad(c, x, LIST(1, 0), 1, -0.0, &y));
    EXPECT_F32(y, TP_SHAPE(2), -0.0f, 1);
    tp_tensor_release(x);
}

static void pad_refuses_bad_paddings_and_constants(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(2, 2), 1, 2, 3, 4), *y;
    assert_op_fails(y, tp_pad(c, x, LIST(0, 0, 1, -1), 2, 0, &y), TP_INVALID_ARGUMENT,
                    "Pad: paddings [0,0,1,-1] has a negative entry for dimension 1 (1, -1)");
    assert_op_fails(y, tp_pad(c, x, LIST(1, 1), 1, 0, &y), TP_INVALID_ARGUMENT,
                    "Pad: paddings has 2 entries, but the input [2,2] needs 4");
    assert_op_fails(y, tp_pad(c, x, LIST(1, 1, 1, 1), 2, 0.5, &y), TP_INVALID_ARGUMENT,
                    "Pad: constant_value 0.5 is not a value of int32");
    assert_op_fails(y, tp_pad(c, x, LIST(1, 1, 1, 1), 2, 3e9, &y), TP_INVALID_ARGUMENT,
                    "Pad: constant_value 3e+09 is not a value of int32");
    assert_op_fails(y, tp_pad(c, x, LIST(INT64_MAX, 0, 0, 0), 2, 0, &y), TP_INVALID_ARGUMENT,
                    "Pad: dimension 0 grows past 2^63");
    tp_tensor_release(x);
}

static void tile_repeats_along_each_dimension(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(2, 2), 1, 2, 3, 4), *y;
    assert_ok(tp_tile(c, x, LIST(2, 3), 2, &y));
    EXPECT_I32(y, TP_SHAPE(4, 6), 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3,
               4, 3, 4);
    assert_ok(tp_tile(c, x, LIST(1, 0), 2, &y));
    EXPECT_EMPTY(y, TP_INT32, TP_SHAPE(2, 0));
    assert_ok(tp_tile(c, x, LIST(1, 1), 2, &y));
    EXPECT_I32(y, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_release(x);
    x = U8(c, TP_SHAPE(3), 7, 8, 9);
    assert_ok(tp_tile(c, x, LIST(2), 1, &y));
    EXPECT_U8(y, TP_SHAPE(6), 7, 8, 9, 7, 8, 9);
    tp_tensor_release(x);
    x = F64(c, TP_SHAPE(2, 1, 1), 1.5, -2.5);
    assert_ok(tp_tile(c, x, LIST(1, 2, 2), 3, &y));
    EXPECT_F64(y, TP_SHAPE(2, 2, 2), 1.5, 1.5, 1.5, 1.5, -2.5, -2.5, -2.5, -2.5);
    tp_tensor_release(x);
}

static void tile_refuses_bad_multiples(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(2, 2), 1, 2, 3, 4), *y;
    assert_op_fails(y, tp_tile(c, x, LIST(2, -1), 2, &y), TP_INVALID_ARGUMENT,
                    "Tile: multiples [2,-1] has -1 for dimension 1; each must be >= 0");
    assert_op_fails(y, tp_tile(c, x, LIST(2), 1, &y), TP_INVALID_ARGUMENT,
                    "Tile: multiples has 1 entries, but the input [2,2] needs 2");
    assert_op_fails(y, tp_tile(c, x, LIST(INT64_MAX / 2 + 1, 1), 2, &y), TP_INVALID_ARGUMENT,
                    "Tile: dimension 0 grows past 2^63");
    tp_tensor_release(x);
}

/* ---- Select ---------------------------------------------------------------------------------- */

static void select_picks_by_a_broadcast_condition(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *cond = BOOLS(c, TP_SHAPE(2, 3), true, false, true, false, false, true);
    tp_tensor_t *t = iota(c, TP_FLOAT32, TP_SHAPE(2, 3)), *minus = F32(c, TP_SCALAR_SHAPE, -1);
    tp_tensor_t *row = BOOLS(c, TP_SHAPE(3), true, false, false);
    tp_tensor_t *column = F32(c, TP_SHAPE(2, 1), 10, 20), *y;
    assert_ok(tp_select(c, cond, t, minus, &y));
    EXPECT_F32(y, TP_SHAPE(2, 3), 0, -1, 2, -1, -1, 5);
    assert_ok(tp_select(c, row, t, column, &y));
    EXPECT_F32(y, TP_SHAPE(2, 3), 0, 10, 10, 3, 20, 20);
    release_all((tp_tensor_t *[]){cond, t, minus, row, column}, 5);
    /* Only the condition and t have 2 dimensions between them; e is a scalar. */
    cond = BOOLS(c, TP_SHAPE(2, 1), false, true);
    t = I64(c, TP_SHAPE(1, 3), 1, 2, 3);
    tp_tensor_t *zero = I64(c, TP_SCALAR_SHAPE, 0);
    assert_ok(tp_select(c, cond, t, zero, &y));
    EXPECT_I64(y, TP_SHAPE(2, 3), 0, 0, 0, 1, 2, 3);
    tp_tensor_t *yes = BOOLS(c, TP_SCALAR_SHAPE, true),
                *none = tensor_of_bytes(c, TP_INT64, TP_SHAPE(0), NULL, 0);
    assert_ok(tp_select(c, yes, none, zero, &y));
    EXPECT_EMPTY(y, TP_INT64, TP_SHAPE(0));
    release_all((tp_tensor_t *[]){cond, t, zero, yes, none}, 5);
}

static void select_refuses_bad_calls(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *cond = BOOLS(c, TP_SHAPE(4), true, false, true, false);
    tp_tensor_t *two = F32(c, TP_SHAPE(2), 1, 2), *three = F32(c, TP_SHAPE(3), 1, 2, 3);
    tp_tensor_t *ints = I32(c, TP_SHAPE(2), 1, 2), *y;
    assert_op_fails(y, tp_select(c, two, two, two, &y), TP_INVALID_ARGUMENT,
                    "Select: input 0 ('condition') must be bool, not float32");
    assert_op_fails(y, tp_select(c, cond, two, three, &y), TP_INVALID_ARGUMENT,
                    "Select: t and e: Incompatible shapes: [2] vs. [3]");
    assert_op_fails(y, tp_select(c, cond, two, two, &y), TP_INVALID_ARGUMENT,
                    "Select: the condition and the values: Incompatible shapes: [4] vs. [2]");
    assert_op_fails(y, tp_select(c, cond, two, ints, &y), TP_INVALID_ARGUMENT,
                    "Select: input 2 ('e') is int32, but T is float32");
    release_all((tp_tensor_t *[]){cond, two, three, ints}, 4);
}

/* ---- Comparisons ----------------------------------------------------------------------------- */

typedef tp_status_t *(*compare_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t *,
                                   tp_tensor_t **);

static void comparisons_broadcast_and_treat_nan_as_unordered(void **state) {
    tp_context_t *c = *state;
    /* [[1, NaN], [-0, 3]] against [1, 0]. */
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 2), 1, NAN, -0.0f, 3), *v = F32(c, TP_SHAPE(2), 1, 0);
    static const compare_fn fns[] = {tp_equal, tp_not_equal, tp_less,
                                     tp_less_equal, tp_greater, tp_greater_equal};
    static const bool want[6][4] = {
        {true, false, false, false}, {false, true, true, true}, {false, false, true, false},
        {true, false, true, false},  {false, false, false, true}, {true, false, false, true}};
    for (size_t f = 0; f < COUNT_OF(fns); f++) {
        tp_tensor_t *y;
        assert_ok(fns[f](c, x, v, &y));
        expect_tensor(y, TP_BOOL, TP_SHAPE(2, 2), want[f], sizeof want[f]);
    }
    tp_tensor_release(x);
    tp_tensor_release(v);
}

static void comparisons_of_integers_and_bools_are_exact(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(3), -1, 0, 1), *zero = I32(c, TP_SCALAR_SHAPE, 0), *y;
    assert_ok(tp_less(c, x, zero, &y));
    EXPECT_BOOLS(y, TP_SHAPE(3), true, false, false);
    assert_ok(tp_greater_equal(c, zero, x, &y));
    EXPECT_BOOLS(y, TP_SHAPE(3), true, true, false);
    release_all((tp_tensor_t *[]){x, zero}, 2);
    /* One double apart: as int64 they differ. */
    x = I64(c, TP_SHAPE(2), INT64_MAX, INT64_MAX - 1);
    tp_tensor_t *top = I64(c, TP_SHAPE(1), INT64_MAX);
    assert_ok(tp_equal(c, x, top, &y));
    EXPECT_BOOLS(y, TP_SHAPE(2), true, false);
    assert_ok(tp_less(c, x, top, &y));
    EXPECT_BOOLS(y, TP_SHAPE(2), false, true);
    release_all((tp_tensor_t *[]){x, top}, 2);
    tp_tensor_t *a = BOOLS(c, TP_SHAPE(2), true, false), *b = BOOLS(c, TP_SHAPE(2, 1), true, false);
    assert_ok(tp_equal(c, a, b, &y));
    EXPECT_BOOLS(y, TP_SHAPE(2, 2), true, false, false, true);
    assert_ok(tp_not_equal(c, a, b, &y));
    EXPECT_BOOLS(y, TP_SHAPE(2, 2), false, true, true, false);
    release_all((tp_tensor_t *[]){a, b}, 2);
    a = U8(c, TP_SHAPE(2), 200, 100);
    b = U8(c, TP_SHAPE(2), 100, 200);
    assert_ok(tp_greater(c, a, b, &y));
    EXPECT_BOOLS(y, TP_SHAPE(2), true, false);
    release_all((tp_tensor_t *[]){a, b}, 2);
    a = tensor_of_bytes(c, TP_FLOAT64, TP_SHAPE(0, 3), NULL, 0);
    b = F64(c, TP_SHAPE(3), 1, 2, 3);
    assert_ok(tp_less_equal(c, a, b, &y));
    EXPECT_EMPTY(y, TP_BOOL, TP_SHAPE(0, 3));
    release_all((tp_tensor_t *[]){a, b}, 2);
}

static void comparisons_refuse_bad_calls(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *flags = BOOLS(c, TP_SHAPE(2), true, false), *two = F32(c, TP_SHAPE(2), 1, 2);
    tp_tensor_t *three = F32(c, TP_SHAPE(3), 1, 2, 3), *ints = I32(c, TP_SHAPE(2), 1, 2), *y;
    assert_op_fails(y, tp_less(c, flags, flags, &y), TP_INVALID_ARGUMENT,
                    "Less does not support bool for 'T'");
    assert_op_fails(y, tp_equal(c, two, three, &y), TP_INVALID_ARGUMENT,
                    "Equal: Incompatible shapes: [2] vs. [3]");
    assert_op_fails(y, tp_greater(c, two, ints, &y), TP_INVALID_ARGUMENT,
                    "Greater: input 1 ('y') is int32, but T is float32");
    release_all((tp_tensor_t *[]){flags, two, three, ints}, 4);
}

/* ---- Every dtype ----------------------------------------------------------------------------- */

/* The result of an op that only moves elements, against `from`: element k of the result is
 * element from[k] of x, or all zero bytes where from[k] is -1. Releases the result. */
static void expect_moved(tp_tensor_t *y, tp_dtype_t dtype, tp_shape_t shape,
                         const unsigned char *x, const int64_t *from) {
    size_t size = tp_dtype_size(dtype);
    int64_t count = element_count(shape);
    unsigned char *want = calloc((size_t)count * size + 1, 1);
    assert_non_null(want);
    for (int64_t k = 0; k < count; k++)
        if (from[k] >= 0) memcpy(want + (size_t)k * size, x + (size_t)from[k] * size, size);
    expect_tensor(y, dtype, shape, want, (size_t)count * size);
    free(want);
}

/* Concat, Slice, StridedSlice, Tile, Gather, Pad and Select copy elements by their size alone:
 * on every dtype the runtime has (1, 2, 4 and 8 bytes), each result holds exactly the bytes of
 * the input elements it should, whatever they mean (NaN payloads included). */
static void layout_ops_copy_every_dtype_bytewise(void **state) {
    tp_context_t *c = *state;
    for (int d = 1; tp_dtype_name((tp_dtype_t)d) != NULL; d++) {
        tp_dtype_t dtype = (tp_dtype_t)d;
        size_t size = tp_dtype_size(dtype);
        /* x is (3, 4); its bytes a pattern with no zero element (bool: 0 and 1). */
        unsigned char bytes[12 * 8];
        for (size_t b = 0; b < 12 * size; b++)
            bytes[b] = dtype == TP_BOOL ? (unsigned char)(b % 3 != 1)
                                        : (unsigned char)(b * 37 + 11);
        tp_tensor_t *x = tensor_of_bytes(c, dtype, TP_SHAPE(3, 4), bytes, 12 * size), *y;
        int64_t from[24];
        /* concat([x, x], axis 1) */
        for (int64_t k = 0; k < 24; k++) from[k] = (k / 8) * 4 + (k % 8) % 4;
        assert_ok(tp_concat(c, (tp_tensor_t *[]){x, x}, 2, 1, &y));
        expect_moved(y, dtype, TP_SHAPE(3, 8), bytes, from);
        /* x[1:3, 1:3] */
        for (int64_t k = 0; k < 4; k++) from[k] = (k / 2 + 1) * 4 + k % 2 + 1;
        assert_ok(tp_slice(c, x, LIST(1, 1), LIST(2, 2), 2, &y));
        expect_moved(y, dtype, TP_SHAPE(2, 2), bytes, from);
        /* x[::-1, 1::2] */
        for (int64_t k = 0; k < 6; k++) from[k] = (2 - k / 2) * 4 + 1 + 2 * (k % 2);
        tp_strided_slice_masks_t masks = {.begin_mask = 1, .end_mask = 3};
        assert_ok(tp_strided_slice(c, x, LIST(0, 1), LIST(0, 0), LIST(-1, 2), 2, &masks, &y));
        expect_moved(y, dtype, TP_SHAPE(3, 2), bytes, from);
        /* tile(x, (2, 1)) */
        for (int64_t k = 0; k < 24; k++) from[k] = k % 12;
        assert_ok(tp_tile(c, x, LIST(2, 1), 2, &y));
        expect_moved(y, dtype, TP_SHAPE(6, 4), bytes, from);
        /* gather(x, [3, 0], axis 1) */
        tp_tensor_t *indices = I32(c, TP_SHAPE(2), 3, 0);
        for (int64_t k = 0; k < 6; k++) from[k] = (k / 2) * 4 + (k % 2 == 0 ? 3 : 0);
        assert_ok(tp_gather(c, x, indices, 1, &y));
        expect_moved(y, dtype, TP_SHAPE(3, 2), bytes, from);
        tp_tensor_release(indices);
        /* pad(x, ((1, 0), (0, 1))) with 0: zero bytes in every dtype */
        for (int64_t k = 0; k < 20; k++)
            from[k] = k / 5 == 0 || k % 5 == 4 ? -1 : (k / 5 - 1) * 4 + k % 5;
        assert_ok(tp_pad(c, x, LIST(1, 0, 0, 1), 2, 0, &y));
        expect_moved(y, dtype, TP_SHAPE(4, 5), bytes, from);
        /* select([t, f, f, t], x, x[::-1]) */
        tp_tensor_t *flags = BOOLS(c, TP_SHAPE(4), true, false, false, true), *reversed;
        masks = (tp_strided_slice_masks_t){.begin_mask = 1, .end_mask = 1};
        assert_ok(tp_strided_slice(c, x, LIST(0), LIST(0), LIST(-1), 1, &masks, &reversed));
        for (int64_t k = 0; k < 12; k++)
            from[k] = k % 4 == 0 || k % 4 == 3 ? k : (2 - k / 4) * 4 + k % 4;
        assert_ok(tp_select(c, flags, x, reversed, &y));
        expect_moved(y, dtype, TP_SHAPE(3, 4), bytes, from);
        release_all((tp_tensor_t *[]){flags, reversed, x}, 3);
    }
}

/* ---- Large tensors: the multi-threaded paths against plain loops ----------------------------- */

enum { ROWS = 300, COLUMNS = 257 };

/* The values of a float32 tensor of `shape` (malloc'd); releases the tensor. */
static float *take_floats(tp_tensor_t *tensor, tp_shape_t shape) {
    assert_non_null(tensor);
    assert_int_equal(tp_tensor_dtype(tensor), TP_FLOAT32);
    assert_true(same_shape(tp_tensor_shape(tensor), shape));
    size_t size = tp_tensor_byte_size(tensor);
    float *values = malloc(size + 1);
    assert_non_null(values);
    tp_status_t *status = tp_tensor_read(tensor, values, size);
    tp_tensor_release(tensor);
    assert_ok(status);
    return values;
}

/* got[r, k] == want(r, k) for every element of a [rows, columns] result. */
#define CHECK_EVERY(got, rows, columns, want)                                                  \
    do {                                                                                       \
        for (int64_t r = 0; r < (rows); r++)                                                   \
            for (int64_t k = 0; k < (columns); k++)                                            \
                if ((got)[r * (columns) + k] != (float)(want))                                 \
                    fail_msg("%s at [%lld, %lld]: got %g, wanted %g", #got, (long long)r,      \
                             (long long)k, (double)(got)[r * (columns) + k], (double)(want));  \
        free(got);                                                                             \
    } while (0)

static void large_copies_match_plain_loops(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = iota(c, TP_FLOAT32, TP_SHAPE(ROWS, COLUMNS)), *y;
    assert_ok(tp_slice(c, x, LIST(7, 3), LIST(280, 250), 2, &y));
    float *slice = take_floats(y, TP_SHAPE(280, 250));
    CHECK_EVERY(slice, 280, 250, (r + 7) * COLUMNS + k + 3);
    /* x[290:5:-3, ::2]: rows 290, 287, ..., 8 and the even columns. */
    tp_strided_slice_masks_t masks = {.begin_mask = 2, .end_mask = 2};
    assert_ok(tp_strided_slice(c, x, LIST(290, 0), LIST(5, 0), LIST(-3, 2), 2, &masks, &y));
    float *strided = take_floats(y, TP_SHAPE(95, 129));
    CHECK_EVERY(strided, 95, 129, (290 - 3 * r) * COLUMNS + 2 * k);
    assert_ok(tp_tile(c, x, LIST(2, 1), 2, &y));
    float *tiled = take_floats(y, TP_SHAPE(2 * ROWS, COLUMNS));
    CHECK_EVERY(tiled, 2 * ROWS, COLUMNS, (r % ROWS) * COLUMNS + k);
    assert_ok(tp_concat(c, (tp_tensor_t *[]){x, x}, 2, 1, &y));
    float *joined = take_floats(y, TP_SHAPE(ROWS, 2 * COLUMNS));
    CHECK_EVERY(joined, ROWS, 2 * COLUMNS, r * COLUMNS + k % COLUMNS);
    assert_ok(tp_pad(c, x, LIST(2, 3, 4, 5), 2, -1, &y));
    float *padded = take_floats(y, TP_SHAPE(ROWS + 5, COLUMNS + 9));
    CHECK_EVERY(padded, ROWS + 5, COLUMNS + 9,
                r < 2 || r >= ROWS + 2 || k < 4 || k >= COLUMNS + 4
                    ? -1 : (r - 2) * COLUMNS + (k - 4));
    tp_tensor_release(x);
}

static void large_index_ops_match_plain_loops(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = iota(c, TP_FLOAT32, TP_SHAPE(ROWS, COLUMNS)), *y;
    int64_t rows[400], columns[ROWS];
    for (int64_t k = 0; k < 400; k++) rows[k] = (k * 7) % ROWS;
    for (int64_t k = 0; k < ROWS; k++) columns[k] = (k * 5) % COLUMNS;
    tp_tensor_t *row_ids = tensor_of_bytes(c, TP_INT64, TP_SHAPE(400), rows, sizeof rows);
    tp_tensor_t *column_ids = tensor_of_bytes(c, TP_INT64, TP_SHAPE(ROWS), columns, sizeof columns);
    assert_ok(tp_gather(c, x, row_ids, 0, &y));
    float *by_row = take_floats(y, TP_SHAPE(400, COLUMNS));
    CHECK_EVERY(by_row, 400, COLUMNS, rows[r] * COLUMNS + k);
    assert_ok(tp_gather(c, x, column_ids, 1, &y));
    float *by_column = take_floats(y, TP_SHAPE(ROWS, ROWS));
    CHECK_EVERY(by_column, ROWS, ROWS, r * COLUMNS + columns[k]);
    /* Select every third element of x, else -1. */
    bool *flags = malloc(ROWS * COLUMNS);
    assert_non_null(flags);
    for (int64_t k = 0; k < ROWS * COLUMNS; k++) flags[k] = k % 3 == 0;
    tp_tensor_t *cond = tensor_of_bytes(c, TP_BOOL, TP_SHAPE(ROWS, COLUMNS), flags, ROWS * COLUMNS);
    free(flags);
    tp_tensor_t *minus = F32(c, TP_SCALAR_SHAPE, -1);
    assert_ok(tp_select(c, cond, x, minus, &y));
    float *selected = take_floats(y, TP_SHAPE(ROWS, COLUMNS));
    CHECK_EVERY(selected, ROWS, COLUMNS, (r * COLUMNS + k) % 3 == 0 ? r * COLUMNS + k : -1);
    /* Less against a row: x[r, k] < 300 k. */
    float limits[COLUMNS];
    for (int64_t k = 0; k < COLUMNS; k++) limits[k] = (float)(300 * k);
    tp_tensor_t *row = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(COLUMNS), limits, sizeof limits);
    tp_tensor_t *less;
    assert_ok(tp_less(c, x, row, &less));
    tp_tensor_t *as_float;
    assert_ok(tp_cast(c, less, TP_FLOAT32, &as_float));
    tp_tensor_release(less);
    float *compared = take_floats(as_float, TP_SHAPE(ROWS, COLUMNS));
    CHECK_EVERY(compared, ROWS, COLUMNS, r * COLUMNS + k < 300 * k ? 1 : 0);
    release_all((tp_tensor_t *[]){x, row_ids, column_ids, cond, minus, row}, 6);
}

static void large_searches_and_sums_match_plain_loops(void **state) {
    tp_context_t *c = *state;
    /* x[r, k] = (37 r + 11 k) mod 300: each column holds every value once (37 is a unit mod
     * 300), so its largest is where 37 r + 11 k = 299 (mod 300). */
    float *values = malloc(ROWS * COLUMNS * sizeof *values);
    assert_non_null(values);
    for (int64_t r = 0; r < ROWS; r++)
        for (int64_t k = 0; k < COLUMNS; k++)
            values[r * COLUMNS + k] = (float)((37 * r + 11 * k) % ROWS);
    tp_tensor_t *x = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(ROWS, COLUMNS), values,
                                     ROWS * COLUMNS * sizeof *values);
    tp_tensor_t *y;
    assert_ok(tp_argmax(c, x, 0, TP_INT64, &y));
    int64_t found[COLUMNS];
    assert_ok(tp_tensor_read(y, found, sizeof found));
    tp_tensor_release(y);
    for (int64_t k = 0; k < COLUMNS; k++) {
        int64_t want = 0;
        for (int64_t r = 0; r < ROWS; r++)
            if (values[r * COLUMNS + k] > values[want * COLUMNS + k]) want = r;
        if (found[k] != want) fail_msg("column %lld: argmax %lld, wanted %lld", (long long)k,
                                       (long long)found[k], (long long)want);
    }
    free(values);
    tp_tensor_release(x);
    /* 2000 rows of 64 summed into 7 segments by row mod 7, split by columns over threads. */
    enum { DATA_ROWS = 2000, WIDTH = 64, SEGMENTS = 7 };
    tp_tensor_t *data = iota(c, TP_FLOAT32, TP_SHAPE(DATA_ROWS, WIDTH));
    int32_t ids[DATA_ROWS];
    for (int32_t r = 0; r < DATA_ROWS; r++) ids[r] = r % SEGMENTS;
    tp_tensor_t *segment_ids = tensor_of_bytes(c, TP_INT32, TP_SHAPE(DATA_ROWS), ids, sizeof ids);
    assert_ok(tp_unsorted_segment_sum(c, data, segment_ids, SEGMENTS, &y));
    float *sums = take_floats(y, TP_SHAPE(SEGMENTS, WIDTH));
    for (int64_t s = 0; s < SEGMENTS; s++) {
        for (int64_t k = 0; k < WIDTH; k++) {
            float want = 0;
            for (int64_t r = s; r < DATA_ROWS; r += SEGMENTS) want += (float)(r * WIDTH + k);
            if (sums[s * WIDTH + k] != want)
                fail_msg("segment %lld column %lld: %g, wanted %g", (long long)s, (long long)k,
                         (double)sums[s * WIDTH + k], (double)want);
        }
    }
    free(sums);
    release_all((tp_tensor_t *[]){data, segment_ids}, 2);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(argmax_and_argmin_find_the_first_extreme_along_an_axis),
        TEST(argmax_and_argmin_give_the_first_nan),
        TEST(argmax_and_argmin_on_integers_compare_exactly),
        TEST(argmax_keeps_an_empty_dimension_that_is_not_searched),
        TEST(argmax_and_argmin_refuse_bad_calls),
        TEST(concat_joins_along_any_axis),
        TEST(concat_takes_every_dtype_and_empty_inputs),
        TEST(concat_refuses_bad_calls),
        TEST(slice_takes_a_block),
        TEST(slice_refuses_bad_bounds),
        TEST(strided_slice_follows_python_slicing),
        TEST(strided_slice_expands_an_ellipsis_and_new_axes),
        TEST(strided_slice_refuses_bad_specs),
        TEST(gather_takes_slices_along_an_axis),
        TEST(gather_names_a_bad_index_and_its_place),
        TEST(unsorted_segment_sum_adds_rows_by_id),
        TEST(unsorted_segment_sum_refuses_bad_calls),
        TEST(one_hot_marks_each_index),
        TEST(one_hot_refuses_bad_calls),
        TEST(pad_surrounds_with_a_constant),
        TEST(pad_refuses_bad_paddings_and_constants),
        TEST(tile_repeats_along_each_dimension),
        TEST(tile_refuses_bad_multiples),
        TEST(select_picks_by_a_broadcast_condition),
        TEST(select_refuses_bad_calls),
        TEST(comparisons_broadcast_and_treat_nan_as_unordered),
        TEST(comparisons_of_integers_and_bools_are_exact),
        TEST(comparisons_refuse_bad_calls),
        TEST(layout_ops_copy_every_dtype_bytewise),
        TEST(large_copies_match_plain_loops),
        TEST(large_index_ops_match_plain_loops),
        TEST(large_searches_and_sums_match_plain_loops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
