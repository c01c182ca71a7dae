/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor values as text, the way NumPy prints an array and TensorFlow prints a tensor. */
#ifndef TP_TENSOR_TENSOR_FORMAT_H
#define TP_TENSOR_TENSOR_FORMAT_H

#include "base/strbuf.h"
#include "tensorplug/tensorplug.h"

/* Appends the text of the values of a tensor of `dtype` and `shape`, laid out row-major at
 * `values` on the host: "[[22. 28.]\n [49. 64.]]", or "3.0" for a scalar. Follows NumPy's
 * defaults: 8 digits of precision at most, shortest round-trip digits, one width for all
 * elements, scientific notation for wide ranges, lines of at most 75 columns, and arrays of
 * more than 1000 elements summarised by their first and last 3 items per axis. The caller has
 * checked dtype and shape. */
void tp_format_values(tp_strbuf_t *out, tp_dtype_t dtype, const tp_shape_t *shape,
                      const void *values);

#endif
