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
#define DTYPE(n, v) {.name = n, .type = TP_ATTR_DTYPE, .i = (v)}
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
    {.op = "Concat", .what = "two matrices along axis 1", .num_inputs = 2,
     .inputs = {F64_IN(2, A, B), F64_IN(2, A, C)}, .num_attrs = 1, .attrs = {INT("axis", 1)}},
    {.op = "Concat", .what = "three inputs along axis -2", .num_inputs = 3,
     .inputs = {F64_IN(2, A, 3), F64_IN(2, B, 3), F64_IN(2, 1, 3)}, .num_attrs = 1,
     .attrs = {INT("axis", -2)}},
    {.op = "Concat", .what = "the middle axis of rank 3", .num_inputs = 2,
     .inputs = {F64_IN(3, 2, A, B), F64_IN(3, 2, C, B)}, .num_attrs = 1,
     .attrs = {INT("axis", 1)}},
    {.op = "Slice", .what = "a block of rows", .num_inputs = 1, .inputs = {F64_IN(2, 5, A)},
     .num_attrs = 2, .attrs = {LIST("begin", block_begin), LIST("size", block_size)}},
    {.op = "Slice", .what = "rank 3 with sizes to the end", .num_inputs = 1,
     .inputs = {F64_IN(3, 4, A, 3)}, .num_attrs = 2,
     .attrs = {LIST("begin", cube_begin), LIST("size", cube_size)}},
    {.op = "Slice", .what = "an empty slice", .num_inputs = 1, .inputs = {F64_IN(2, 3, B)},
     .num_attrs = 2, .attrs = {LIST("begin", empty_begin), LIST("size", empty_size)}},
    {.op = "StridedSlice", .what = "every other row backwards", .num_inputs = 1,
     .inputs = {F64_IN(2, 6, A)}, .num_attrs = 5,
     .attrs = {LIST("begin", reverse_begin), LIST("end", reverse_end),
               LIST("strides", reverse_strides), INT("begin_mask", 3), INT("end_mask", 3)}},
    {.op = "StridedSlice", .what = "an index, a new axis, a whole dimension and a stride",
     .num_inputs = 1, .inputs = {F64_IN(3, 3, A, 4)}, .num_attrs = 7,
     .attrs = {LIST("begin", mixed_begin), LIST("end", mixed_end),
               LIST("strides", mixed_strides), INT("shrink_axis_mask", 1),
               INT("new_axis_mask", 2), INT("begin_mask", 4), INT("end_mask", 4)}},
    {.op = "StridedSlice", .what = "an ellipsis then the last index", .num_inputs = 1,
     .inputs = {F64_IN(3, A, B, 3)}, .num_attrs = 4,
     .attrs = {LIST("begin", last_begin), LIST("end", last_end), INT("ellipsis_mask", 1),
               INT("shrink_axis_mask", 2)}},
    {.op = "StridedSliceGrad", .what = "rows 1 to 3 of (5, 3)", .num_inputs = 1,
     .inputs = {F64_IN(2, 3, 3)}, .num_attrs = 3,
     .attrs = {SHAPE("shape", rows_shape), LIST("begin", rows_begin), LIST("end", rows_end)}},
    {.op = "StridedSliceGrad", .what = "every other row, columns 1 and 2 of (6, 4)",
     .num_inputs = 1, .inputs = {F64_IN(2, 3, 2)}, .num_attrs = 6,
     .attrs = {SHAPE("shape", every_other_shape), LIST("begin", every_other_begin),
               LIST("end", every_other_end), LIST("strides", every_other_strides),
               INT("begin_mask", 1), INT("end_mask", 1)}},
    {.op = "Gather", .what = "rows of a matrix, indices repeating", .num_inputs = 2,
     .inputs = {F64_IN(2, 5, A), INDEX_IN(TP_INT32, 5, 1, B)}, .num_attrs = 1,
     .attrs = {INT("axis", 0)}},
    {.op = "Gather", .what = "axis 1 of rank 3 with 2-D int64 indices", .num_inputs = 2,
     .inputs = {F64_IN(3, A, 4, B), INDEX_IN(TP_INT64, 4, 2, 2, C)}, .num_attrs = 1,
     .attrs = {INT("axis", 1)}},
    {.op = "Gather", .what = "the last axis, a scalar index", .num_inputs = 2,
     .inputs = {F64_IN(2, A, 3), INDEX_IN(TP_INT32, 3, 0, 0)}, .num_attrs = 1,
     .attrs = {INT("axis", -1)}},
    {.op = "UnsortedSegmentSum", .what = "rows into 3 segments", .num_inputs = 2,
     .inputs = {F64_IN(2, A, B), INDEX_IN(TP_INT32, 3, 1, A)}, .num_attrs = 1,
     .attrs = {INT("num_segments", 3)}},
    {.op = "UnsortedSegmentSum", .what = "2-D ids over rank-3 data", .num_inputs = 2,
     .inputs = {F64_IN(3, 2, A, B), INDEX_IN(TP_INT64, 4, 2, 2, A)}, .num_attrs = 1,
     .attrs = {INT("num_segments", 4)}},
    {.op = "OneHot", .what = "no gradient: its indices are not differentiable", .num_inputs = 1,
     .inputs = {INDEX_IN(TP_INT32, 4, 2, A, B)}, .num_attrs = 2,
     .attrs = {INT("depth", 3), DTYPE("T", TP_FLOAT64)}},
    {.op = "Pad", .what = "a matrix", .num_inputs = 1, .inputs = {F64_IN(2, A, B)},
     .num_attrs = 2, .attrs = {LIST("paddings", pad_matrix), FLOAT("constant_value", 0.5)}},
    {.op = "Pad", .what = "rank 3", .num_inputs = 1, .inputs = {F64_IN(3, A, 2, B)},
     .num_attrs = 1, .attrs = {LIST("paddings", pad_cube)}},
    {.op = "Tile", .what = "a matrix", .num_inputs = 1, .inputs = {F64_IN(2, A, B)},
     .num_attrs = 1, .attrs = {LIST("multiples", tile_matrix)}},
    {.op = "Tile", .what = "a multiple of 0 and one of 1", .num_inputs = 1,
     .inputs = {F64_IN(3, A, 1, B)}, .num_attrs = 1, .attrs = {LIST("multiples", tile_cube)}},
    {.op = "Tile", .what = "a vector", .num_inputs = 1, .inputs = {F64_IN(1, A)},
     .num_attrs = 1, .attrs = {LIST("multiples", tile_vector)}},
    {.op = "Select", .what = "one shape", .num_inputs = 3,
     .inputs = {BOOL_IN(2, A, B), F64_IN(2, A, B), F64_IN(2, A, B)}},
    {.op = "Select", .what = "a column condition, a row t and a scalar e", .num_inputs = 3,
     .inputs = {BOOL_IN(2, A, 1), F64_IN(2, 1, B), SCALAR_F64}},
    {.op = "Select", .what = "a scalar condition", .num_inputs = 3,
     .inputs = {BOOL_IN(0, 0), F64_IN(1, A), F64_IN(1, A)}},
    {.op = "Select", .what = "a condition of higher rank than t and e", .num_inputs = 3,
     .inputs = {BOOL_IN(3, 2, A, B), F64_IN(2, A, B), F64_IN(1, B)}},
};

const gradcheck_family_t gradcheck_cases_array = {"array", cases,
                                                  sizeof cases / sizeof cases[0]};
