/* SPDX-License-Identifier: Apache-2.0 */
#include "base/shape.h"

#include <stdio.h>

#include "base/status.h"

bool tp_shape_equal(const tp_shape_t *a, const tp_shape_t *b) {
    if (a->rank != b->rank) return false;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

tp_status_t *tp_shape_num_elements(const tp_shape_t *shape, int64_t *out_count) {
    TP_REQUIRE_ARG(shape);
    TP_REQUIRE_ARG(out_count);
    if (shape->rank < 0 || shape->rank > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "shape rank %d is outside 0..%d",
                              (int)shape->rank, TP_MAX_RANK);
    int64_t count = 1;
    for (int32_t i = 0; i < shape->rank; i++) {
        int64_t dim = shape->dims[i];
        if (dim < 0)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "shape dimension %d is negative (%lld)", (int)i, (long long)dim);
        if (dim != 0 && count > INT64_MAX / dim) {
            char text[256];
            tp_shape_format(shape, text, sizeof text);
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "shape %s has more elements than fit in 64 bits", text);
        }
        count *= dim;
    }
    *out_count = count;
    return NULL;
}

int tp_shape_format(const tp_shape_t *shape, char *buffer, size_t capacity) {
    /* 8 dimensions of at most 20 digits with separators fit easily. */
    char text[256] = "(invalid)";
    if (shape != NULL && shape->rank >= 0 && shape->rank <= TP_MAX_RANK) {
        size_t used = 0;
        text[used++] = '(';
        for (int32_t i = 0; i < shape->rank; i++)
            used += (size_t)snprintf(text + used, sizeof text - used, i == 0 ? "%lld" : ", %lld",
                                     (long long)shape->dims[i]);
        snprintf(text + used, sizeof text - used, shape->rank == 1 ? ",)" : ")");
    }
    if (buffer == NULL || capacity == 0) return snprintf(NULL, 0, "%s", text);
    return snprintf(buffer, capacity, "%s", text);
}
