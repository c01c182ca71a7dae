/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient check cases of the array ops (src/autodiff/gradients_array.c): joined, sliced,
 * padded, tiled and gathered tensors, broadcasting in Select, and sizes of 0 wherever the op
 * allows a dimension to be drawn. Dimensions that a begin, a size or an index depends on are
 * fixed; the others are drawn. */
#include "gradcheck.h"

#define A GRADCHECK_SIZE_A
#define B GRADCHECK_SIZE_B
#define C GRADCHECK_SIZE_C

/* A float64 input (differentiated) of the given dimensions. */
#define F64_IN(r, ...) {TP_FLOAT64, r, {__VA_ARGS__}, GRADCHECK_ANY, 0}
/* Indices in [0, limit), held fixed. */
#define INDEX_IN(dtype, limit, r, ...) {dtype, r, {__VA_ARGS__}, GRADCHECK_INDEX, limit}
#define BOOL_IN(r, ...) {TP_BOOL, r, {__VA_ARGS__}, GRADCHECK_BOOL, 0}
#define SCALAR_F64 {TP_FLOAT64, 0, {0}, GRADCHECK_ANY, 0}

#define INT(n, v) {.name = n, .type = TP_ATTR_INT, .i = (v)}
#define FLOAT(n, v) {.name = n, .type = TP_ATTR_FLOAT, .f = (v)}
#define LIST(n, values) {.name = n, .type = TP_ATTR_INT_LIST, .list = values,                  \
                         .count = (int32_t)(sizeof(values) / sizeof((values)[0]))}
#define SHAPE(n, values) {.name = n, .type = TP_ATTR_SHAPE, .list = values,                    \
                          .count = (int32_t)(sizeof(values) / sizeof((values)[0]))}

static const int64_t block_begin[] = {1, 0}, block_size[] = {3, -1};
static const int64_t cube_begin[] = {2, 0, 1}, cube_size[] = {-1, -1, 2};
static const int64_t empty_begin[] = {1, 0}, empty_size[] = {0, -1};

/* x[::-2, :] */
static const int64_t reverse_begin[] = {0, 0}, reverse_end[] = {0, 0}, reverse_strides[] = {-2, 1};
/* x[1, np.newaxis, :, 1:4:2] */
static const int64_t mixed_begin[] = {1, 0, 0, 1}, mixed_end[] = {2, 0, 0, 4},
                     mixed_strides[] = {1, 1, 1, 2};
/* x[..., -1] */
static const int64_t last_begin[] = {0, -1}, last_end[] = {0, 0};
/* StridedSliceGrad of x[1:4] over (5, 3), and of x[::2, 1:3] over (6, 4). */
static const int64_t rows_shape[] = {5, 3}, rows_begin[] = {1}, rows_end[] = {4};
static const int64_t every_other_shape[] = {6, 4}, every_other_begin[] = {0, 1},
                     every_other_end[] = {0, 3}, every_other_strides[] = {2, 1};

static const int64_t pad_matrix[] = {1, 2, 0, 1}, pad_cube[] = {0, 0, 1, 1, 2, 0};
static const int64_t tile_matrix[] = {2, 3}, tile_cube[] = {1, 4, 0}, tile_vector[] = {3};

static const gradcheck_case_t cases[] = {
    {"Concat", "two matrices along axis 1", {F64_IN(2, A, B), F64_IN(2, A, C)}, 2,
     {INT("axis", 1)}, 1, 0, 0},
    {"Concat", "three inputs along axis -2", {F64_IN(2, A, 3), F64_IN(2, B, 3), F64_IN(2, 1, 3)},
     3, {INT("axis", -2)}, 1, 0, 0},
    {"Concat", "the middle axis of rank 3", {F64_IN(3, 2, A, B), F64_IN(3, 2, C, B)}, 2,
     {INT("axis", 1)}, 1, 0, 0},
    {"Slice", "a block of rows", {F64_IN(2, 5, A)}, 1,
     {LIST("begin", block_begin), LIST("size", block_size)}, 2, 0, 0},
    {"Slice", "rank 3 with sizes to the end", {F64_IN(3, 4, A, 3)}, 1,
     {LIST("begin", cube_begin), LIST("size", cube_size)}, 2, 0, 0},
    {"Slice", "an empty slice", {F64_IN(2, 3, B)}, 1,
     {LIST("begin", empty_begin), LIST("size", empty_size)}, 2, 0, 0},
    {"StridedSlice", "every other row backwards", {F64_IN(2, 6, A)}, 1,
     {LIST("begin", reverse_begin), LIST("end", reverse_end), LIST("strides", reverse_strides),
      INT("begin_mask", 3), INT("end_mask", 3)}, 5, 0, 0},
    {"StridedSlice", "an index, a new axis, a whole dimension and a stride",
     {F64_IN(3, 3, A, 4)}, 1,
     {LIST("begin", mixed_begin), LIST("end", mixed_end), LIST("strides", mixed_strides),
      INT("shrink_axis_mask", 1), INT("new_axis_mask", 2), INT("begin_mask", 4),
      INT("end_mask", 4)}, 7, 0, 0},
    {"StridedSlice", "an ellipsis then the last index", {F64_IN(3, A, B, 3)}, 1,
     {LIST("begin", last_begin), LIST("end", last_end), INT("ellipsis_mask", 1),
      INT("shrink_axis_mask", 2)}, 4, 0, 0},
    {"StridedSliceGrad", "rows 1 to 3 of (5, 3)", {F64_IN(2, 3, 3)}, 1,
     {SHAPE("shape", rows_shape), LIST("begin", rows_begin), LIST("end", rows_end)}, 3, 0, 0},
    {"StridedSliceGrad", "every other row, columns 1 and 2 of (6, 4)", {F64_IN(2, 3, 2)}, 1,
     {SHAPE("shape", every_other_shape), LIST("begin", every_other_begin),
      LIST("end", every_other_end), LIST("strides", every_other_strides), INT("begin_mask", 1),
      INT("end_mask", 1)}, 6, 0, 0},
    {"Gather", "rows of a matrix, indices repeating",
     {F64_IN(2, 5, A), INDEX_IN(TP_INT32, 5, 1, B)}, 2, {INT("axis", 0)}, 1, 0, 0},
    {"Gather", "axis 1 of rank 3 with 2-D int64 indices",
     {F64_IN(3, A, 4, B), INDEX_IN(TP_INT64, 4, 2, 2, C)}, 2, {INT("axis", 1)}, 1, 0, 0},
    {"Gather", "the last axis, scalar index", {F64_IN(2, A, 3), INDEX_IN(TP_INT32, 3, 0, 0)}, 2,
     {INT("axis", -1)}, 1, 0, 0},
    {"UnsortedSegmentSum", "rows into 3 segments",
     {F64_IN(2, A, B), INDEX_IN(TP_INT32, 3, 1, A)}, 2, {INT("num_segments", 3)}, 1, 0, 0},
    {"UnsortedSegmentSum", "2-D ids over rank-3 data",
     {F64_IN(3, 2, A, B), INDEX_IN(TP_INT64, 4, 2, 2, A)}, 2, {INT("num_segments", 4)}, 1, 0,
     0},
    {"Pad", "a matrix", {F64_IN(2, A, B)}, 1,
     {LIST("paddings", pad_matrix), FLOAT("constant_value", 0.5)}, 2, 0, 0},
    {"Pad", "rank 3", {F64_IN(3, A, 2, B)}, 1, {LIST("paddings", pad_cube)}, 1, 0, 0},
    {"Tile", "a matrix", {F64_IN(2, A, B)}, 1, {LIST("multiples", tile_matrix)}, 1, 0, 0},
    {"Tile", "a multiple of 0 and one of 1", {F64_IN(3, A, 1, B)}, 1,
     {LIST("multiples", tile_cube)}, 1, 0, 0},
    {"Tile", "a vector", {F64_IN(1, A)}, 1, {LIST("multiples", tile_vector)}, 1, 0, 0},
    {"Select", "one shape", {BOOL_IN(2, A, B), F64_IN(2, A, B), F64_IN(2, A, B)}, 3, {{0}}, 0,
     0, 0},
    {"Select", "a column condition, a row t and a scalar e",
     {BOOL_IN(2, A, 1), F64_IN(2, 1, B), SCALAR_F64}, 3, {{0}}, 0, 0, 0},
    {"Select", "a scalar condition", {BOOL_IN(0, 0), F64_IN(1, A), F64_IN(1, A)}, 3, {{0}}, 0,
     0, 0},
    {"Select", "a condition of higher rank than t and e",
     {BOOL_IN(3, 2, A, B), F64_IN(2, A, B), F64_IN(1, B)}, 3, {{0}}, 0, 0, 0},
};

const gradcheck_family_t gradcheck_cases_array = {"array", cases,
                                                  sizeof cases / sizeof cases[0]};
