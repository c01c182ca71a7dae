/* SPDX-License-Identifier: Apache-2.0 */
/* Eager execution's internal entry points beside tp_execute (tensorplug.h). */
#ifndef TP_EAGER_EXECUTE_H
#define TP_EAGER_EXECUTE_H

#include "context/context.h"
#include "kernel/kernel_context.h"
#include "launch/launch.h"

/* tp_execute with the outputs on `device`: run there if it has a kernel for the op, else on
 * CPU:0 and copied to it (execute_on.c). */
tp_status_t *tp_execute_on(tp_context_t *context, tp_device_t *device, const char *op,
                           tp_tensor_t *const *inputs, size_t num_inputs, const tp_attr_t *attrs,
                           size_t num_attrs, tp_tensor_t **outputs, size_t num_outputs);
/* var - alpha * delta on `device` (alpha a scalar): one GradientDescentUpdate where the device
 * has a kernel for it, else a Mul and a Sub there, which round alike for float32 and float64. */
tp_status_t *tp_execute_descent_on(tp_context_t *context, tp_device_t *device, tp_tensor_t *var,
                                   tp_tensor_t *alpha, tp_tensor_t *delta, tp_tensor_t **out);

#endif
