/* SPDX-License-Identifier: Apache-2.0 */
/* Checks on element values that the dtype alone defines. */
#ifndef TP_BASE_DTYPE_H
#define TP_BASE_DTYPE_H

#include <stddef.h>

#include "tensorplug/tensorplug.h"

/* For TP_BOOL data, an INVALID_ARGUMENT status naming `what` and the first byte that is
 * neither 0 nor 1 (kernels read bools as C's bool, for which any other byte is undefined);
 * NULL for valid data and for every other dtype. */
tp_status_t *tp_dtype_check_values(tp_dtype_t dtype, const void *data, size_t byte_size,
                                   const char *what);

#endif
