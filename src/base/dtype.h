/* SPDX-License-Identifier: Apache-2.0 */
/* What the core knows of each dtype beyond its name and size, and checks on element values
 * that the dtype alone defines. */
#ifndef TP_BASE_DTYPE_H
#define TP_BASE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorplug/tensorplug.h"

typedef enum tp_dtype_kind {
    TP_DTYPE_KIND_INVALID,
    TP_DTYPE_KIND_FLOAT,    /* float32, float64, float16, bfloat16 */
    TP_DTYPE_KIND_SIGNED,   /* int8 ... int64 */
    TP_DTYPE_KIND_UNSIGNED, /* uint8 ... uint64 */
    TP_DTYPE_KIND_BOOL
} tp_dtype_kind_t;

tp_dtype_kind_t tp_dtype_kind(tp_dtype_t dtype);
bool tp_dtype_is_float(tp_dtype_t dtype);
bool tp_dtype_is_integer(tp_dtype_t dtype);

/* The last dtype a plug-in built against ABI 1.`abi_minor` knows: the dtypes are numbered in
 * the order they were added, so it knows those up to this one (TP_BOOL before 1.7). */
tp_dtype_t tp_dtype_newest_of_abi(uint32_t abi_minor);

/* Element i of `data` of `dtype` written from, and read as, a double. The value written must
 * be one the dtype holds where it is an integer (whole and in range; a bool takes value != 0);
 * the 16-bit floats round to nearest even (tensorplug/float16.h). A 64-bit integer beyond 2^53
 * reads rounded. An invalid dtype writes nothing and reads 0. */
void tp_dtype_store_double(void *data, tp_dtype_t dtype, int64_t i, double value);
double tp_dtype_load_double(const void *data, tp_dtype_t dtype, int64_t i);

/* For TP_BOOL data, an INVALID_ARGUMENT status naming `what` and the first byte that is
 * neither 0 nor 1 (kernels read bools as C's bool, for which any other byte is undefined);
 * NULL for valid data and for every other dtype. */
tp_status_t *tp_dtype_check_values(tp_dtype_t dtype, const void *data, size_t byte_size,
                                   const char *what);

#endif
