/* SPDX-License-Identifier: Apache-2.0 */
/* What a StridedSlice's begin, end, strides and masks select of a shape, with TensorFlow's
 * rules: shared by StridedSlice's shape function and StridedSliceGrad's. */
#ifndef TP_OP_STRIDED_SLICE_H
#define TP_OP_STRIDED_SLICE_H

#include "tensorplug/tensorplug.h"

/* Entries a spec may have: each real dimension, each new axis and one ellipsis fit easily. */
enum { TP_STRIDED_SLICE_MAX_ENTRIES = 32 };

typedef struct tp_strided_slice_spec {
    const int64_t *begin, *end, *strides; /* `count` each; strides NULL: all 1 */
    int32_t count;
    int64_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
} tp_strided_slice_spec_t;

/* The selection, per dimension of the input: the first index read, the step, and how many. */
typedef struct tp_strided_slice_plan {
    int64_t begin[TP_MAX_RANK], stride[TP_MAX_RANK], count[TP_MAX_RANK];
    tp_shape_t result; /* with new axes added and shrunk axes removed */
} tp_strided_slice_plan_t;

/* Plans `spec` over `input`; a bad spec is INVALID_ARGUMENT naming `op` and the bad value. */
tp_status_t *tp_strided_slice_plan(const char *op, const tp_shape_t *input,
                                   const tp_strided_slice_spec_t *spec,
                                   tp_strided_slice_plan_t *out);

#endif
