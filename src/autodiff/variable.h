/* SPDX-License-Identifier: Apache-2.0 */
/* Variables as the rest of the core sees them. */
#ifndef TP_AUTODIFF_VARIABLE_H
#define TP_AUTODIFF_VARIABLE_H

#include "device/device.h"
#include "tensorplug/training.h"

/* The current value, a new reference, without telling any tape. */
tp_status_t *tp_variable_read_untaped(tp_variable_t *variable, tp_tensor_t **out);
tp_device_t *tp_variable_device_handle(const tp_variable_t *variable);
/* The context it belongs to (not retained). */
tp_context_t *tp_variable_context(const tp_variable_t *variable);
/* value := value - alpha * delta (alpha a scalar of the variable's dtype, delta of its shape),
 * in one pass where its device has a GradientDescentUpdate kernel. Not seen by tapes. */
tp_status_t *tp_variable_descend(tp_variable_t *variable, tp_tensor_t *alpha, tp_tensor_t *delta);

#endif
