/* SPDX-License-Identifier: Apache-2.0 */
/* TensorFlow's strided slice, planned: the spec's entries (a range, an index that shrinks its
 * dimension away, a new axis of size 1, or an ellipsis standing for every dimension no entry
 * names) are expanded to one range per dimension of the input, each clamped to the dimension the
 * way Python clamps a slice. With no ellipsis given, one is implied after the last entry. */
#include "op/strided_slice.h"

#include <stdbool.h>

#include "base/status.h"
#include "op/shape_functions.h"

/* What one entry of the result's shape comes from. */
enum { FROM_NEW_AXIS = -1, FROM_SHRUNK = -2 };

static bool bit(int64_t mask, int32_t i) { return ((mask >> i) & 1) != 0; }

static tp_status_t *check_mask(const char *op, const char *name, int64_t mask, int32_t count) {
    /* A bit past the entries would be ignored silently (TensorFlow does): it is a mistake. */
    if (mask < 0 || (count < 63 && (mask >> count) != 0))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: %s is %lld, but only bits 0..%d name entries of the spec",
                              op, name, (long long)mask, (int)count - 1);
    return NULL;
}

static tp_status_t *check_spec(const char *op, const tp_strided_slice_spec_t *spec) {
    if (spec->count < 0 || spec->count > TP_STRIDED_SLICE_MAX_ENTRIES)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %d entries in begin, end and strides; "
                              "at most %d", op, (int)spec->count, TP_STRIDED_SLICE_MAX_ENTRIES);
    TP_RETURN_IF_ERROR(check_mask(op, "begin_mask", spec->begin_mask, spec->count));
    TP_RETURN_IF_ERROR(check_mask(op, "end_mask", spec->end_mask, spec->count));
    TP_RETURN_IF_ERROR(check_mask(op, "ellipsis_mask", spec->ellipsis_mask, spec->count));
    TP_RETURN_IF_ERROR(check_mask(op, "new_axis_mask", spec->new_axis_mask, spec->count));
    TP_RETURN_IF_ERROR(check_mask(op, "shrink_axis_mask", spec->shrink_axis_mask, spec->count));
    if ((spec->ellipsis_mask & (spec->ellipsis_mask - 1)) != 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: ellipsis_mask %lld sets more than one "
                              "ellipsis", op, (long long)spec->ellipsis_mask);
    for (int32_t i = 0; i < spec->count; i++) {
        bool selects = !bit(spec->ellipsis_mask, i) && !bit(spec->new_axis_mask, i);
        int64_t stride = spec->strides == NULL ? 1 : spec->strides[i];
        if (selects && stride == 0)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: strides[%d] is 0", op, (int)i);
        if (selects && bit(spec->shrink_axis_mask, i) && stride < 0)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "%s: strides[%d] is %lld, but entry %d is a single index "
                                  "(shrink_axis_mask) and must step forward",
                                  op, (int)i, (long long)stride, (int)i);
    }
    return NULL;
}

/* Where begin or end lands in a dimension of `size` for a step of `stride`: masked, the end
 * the step starts from or runs to; else counted from the back when negative, then clamped to
 * the indices the step can start at (forward: 0..size; backward: -1..size-1). */
static int64_t clamp_bound(int64_t value, bool masked, bool is_begin, int64_t stride,
                           int64_t size) {
    int64_t low = stride > 0 ? 0 : -1, high = stride > 0 ? size : size - 1;
    if (masked) return (stride > 0) == is_begin ? low : high;
    int64_t forward = value < 0 ? value + size : value;
    return forward < low ? low : forward > high ? high : forward;
}

/* Entry `i` of the spec over input dimension `d`. */
static tp_status_t *plan_entry(const char *op, const tp_shape_t *input,
                               const tp_strided_slice_spec_t *spec, int32_t i, int32_t d,
                               tp_strided_slice_plan_t *out) {
    int64_t size = input->dims[d];
    int64_t stride = spec->strides == NULL ? 1 : spec->strides[i];
    if (bit(spec->shrink_axis_mask, i)) {
        int64_t index = spec->begin[i] < 0 ? spec->begin[i] + size : spec->begin[i];
        if (index < 0 || index >= size)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "%s: begin[%d] = %lld is out of bounds for dimension %d of "
                                  "size %lld",
                                  op, (int)i, (long long)spec->begin[i], (int)d, (long long)size);
        out->begin[d] = index;
        out->stride[d] = 1;
        out->count[d] = 1;
        return NULL;
    }
    int64_t first = clamp_bound(spec->begin[i], bit(spec->begin_mask, i), true, stride, size);
    int64_t last = clamp_bound(spec->end[i], bit(spec->end_mask, i), false, stride, size);
    int64_t span = last - first;
    int64_t count = 0;
    if (span != 0 && (span < 0) == (stride < 0))
        count = span / stride + (span % stride != 0 ? 1 : 0);
    out->begin[d] = count > 0 ? first : 0;
    out->stride[d] = stride;
    out->count[d] = count;
    return NULL;
}

tp_status_t *tp_strided_slice_plan(const char *op, const tp_shape_t *input,
                                   const tp_strided_slice_spec_t *spec,
                                   tp_strided_slice_plan_t *out) {
    TP_RETURN_IF_ERROR(check_spec(op, spec));
    int64_t ellipsis = spec->ellipsis_mask;
    int32_t entries = spec->count;
    if (ellipsis == 0) ellipsis = (int64_t)1 << entries++; /* the implied one, at the end */
    /* New axes after the ellipsis take no input dimension: the ellipsis covers more. */
    int32_t new_after_ellipsis = 0;
    bool seen = false;
    for (int32_t i = 0; i < spec->count; i++) {
        if (seen && !bit(ellipsis, i) && bit(spec->new_axis_mask, i)) new_after_ellipsis++;
        seen = seen || bit(ellipsis, i);
    }
    int32_t from[2 * TP_STRIDED_SLICE_MAX_ENTRIES + TP_MAX_RANK];
    int32_t num_from = 0, d = 0;
    for (int32_t i = 0; i < entries; i++) {
        if (bit(ellipsis, i)) {
            int32_t named_after = entries - 1 - i - new_after_ellipsis;
            for (; d < input->rank - named_after; d++) {
                out->begin[d] = 0;
                out->stride[d] = 1;
                out->count[d] = input->dims[d];
                from[num_from++] = d;
            }
        } else if (bit(spec->new_axis_mask, i)) {
            from[num_from++] = FROM_NEW_AXIS;
        } else {
            if (d >= input->rank) {
                char text[256];
                return tp_status_make(TP_INVALID_ARGUMENT,
                                      "%s: the spec names more dimensions than the input %s "
                                      "has (entry %d would be dimension %d)",
                                      op, tp_shape_text(input, text, sizeof text), (int)i, (int)d);
            }
            TP_RETURN_IF_ERROR(plan_entry(op, input, spec, i, d, out));
            from[num_from++] = bit(spec->shrink_axis_mask, i) ? FROM_SHRUNK : d;
            d++;
        }
    }
    tp_shape_t result = {.rank = 0};
    for (int32_t k = 0; k < num_from; k++) {
        if (from[k] == FROM_SHRUNK) continue;
        if (result.rank == TP_MAX_RANK)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "%s: the result would have more than %d dimensions", op,
                                  TP_MAX_RANK);
        result.dims[result.rank++] = from[k] == FROM_NEW_AXIS ? 1 : out->count[from[k]];
    }
    out->result = result;
    return NULL;
}
