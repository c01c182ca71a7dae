/* SPDX-License-Identifier: Apache-2.0 */
/* Losses: what training minimises, built from ordinary ops so that tapes differentiate them. */
#include "base/shape.h"
#include "base/status.h"
#include "tensor/tensor.h"
#include "tensorplug/training.h"

tp_status_t *tp_mean_squared_error(tp_context_t *context, tp_tensor_t *y_true,
                                   tp_tensor_t *y_pred, tp_tensor_t **out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(y_true);
    TP_REQUIRE_ARG(y_pred);
    TP_REQUIRE_ARG(out);
    if (!tp_shape_equal(&y_true->shape, &y_pred->shape)) {
        char a[128], b[128];
        tp_shape_format(&y_true->shape, a, sizeof a);
        tp_shape_format(&y_pred->shape, b, sizeof b);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_mean_squared_error: y_true has shape %s, y_pred %s; they must "
                              "match",
                              a, b);
    }
    tp_tensor_t *error_values, *squares;
    TP_RETURN_IF_ERROR(tp_sub(context, y_pred, y_true, &error_values));
    tp_status_t *error = tp_square(context, error_values, &squares);
    tp_tensor_release(error_values);
    if (error != NULL) return error;
    error = tp_mean(context, squares, NULL, 0, false, out);
    tp_tensor_release(squares);
    return error;
}
