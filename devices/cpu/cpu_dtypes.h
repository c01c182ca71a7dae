/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU's dtypes in one place: the lists its kernels register for, the integer dtypes as a
 * list to expand code over, and integer elements widened to 64 bits for code written once for
 * all of them. float16 and bfloat16 run the kernels' float32 code (cpu_staging.c), so the
 * element-wise code below knows float32 and float64 as its floats. */
#ifndef TP_DEVICES_CPU_DTYPES_H
#define TP_DEVICES_CPU_DTYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "tensorplug/plugin.h"

/* Use as `static const tp_dtype_t floats[] = {CPU_FLOAT_DTYPES};`. */
#define CPU_FLOAT_DTYPES TP_FLOAT32, TP_FLOAT64, TP_FLOAT16, TP_BFLOAT16
#define CPU_INTEGER_DTYPES                                                                     \
    TP_INT32, TP_INT64, TP_INT8, TP_INT16, TP_UINT8, TP_UINT16, TP_UINT32, TP_UINT64
#define CPU_NUMBER_DTYPES CPU_FLOAT_DTYPES, CPU_INTEGER_DTYPES
#define CPU_ALL_DTYPES CPU_NUMBER_DTYPES, TP_BOOL

/* The same lists as arrays with their lengths, for a registration's dtypes:
 * cpu_register(registrar, "MaxPool", "T", CPU_FLOATS, max_pool, status). */
extern const tp_dtype_t cpu_float_dtypes[], cpu_number_dtypes[], cpu_all_dtypes[];
extern const size_t cpu_num_float_dtypes, cpu_num_number_dtypes, cpu_num_all_dtypes;
#define CPU_FLOATS cpu_float_dtypes, cpu_num_float_dtypes
#define CPU_NUMBERS cpu_number_dtypes, cpu_num_number_dtypes
#define CPU_ALL cpu_all_dtypes, cpu_num_all_dtypes

/* X(dtype, C type, unsigned type its arithmetic wraps in, signed) for each integer dtype. The
 * arithmetic type is never narrower than unsigned int, so that no operand is promoted to int,
 * whose overflow would be undefined (uint16_t * uint16_t is). */
#define CPU_FOR_EACH_INTEGER(X)                                                                \
    X(TP_INT8, int8_t, uint32_t, true)                                                         \
    X(TP_INT16, int16_t, uint32_t, true)                                                       \
    X(TP_INT32, int32_t, uint32_t, true)                                                       \
    X(TP_INT64, int64_t, uint64_t, true)                                                       \
    X(TP_UINT8, uint8_t, uint32_t, false)                                                      \
    X(TP_UINT16, uint16_t, uint32_t, false)                                                    \
    X(TP_UINT32, uint32_t, uint32_t, false)                                                    \
    X(TP_UINT64, uint64_t, uint64_t, false)

/* An integer value widened to 64 bits, as uint64_t so that wrapping arithmetic on it is
 * defined: sign-extended from a signed type, zero-extended from an unsigned one. A signed
 * value is read back as (int64_t); storing keeps the dtype's low bits (modulo 2^bits, which
 * is also how gcc and clang convert to a narrower signed type). */
#define CPU_WIDEN(is_signed, value)                                                            \
    ((is_signed) ? (uint64_t)(int64_t)(value) : (uint64_t)(value))

static inline bool cpu_is_half(tp_dtype_t dtype) {
    return dtype == TP_FLOAT16 || dtype == TP_BFLOAT16;
}

static inline bool cpu_is_integer(tp_dtype_t dtype) {
    switch (dtype) {
#define CPU_INTEGER_CASE(dt, T, U, is_signed) case dt:
        CPU_FOR_EACH_INTEGER(CPU_INTEGER_CASE)
#undef CPU_INTEGER_CASE
        return true;
    default: return false;
    }
}

static inline bool cpu_is_signed(tp_dtype_t dtype) {
    return dtype == TP_INT8 || dtype == TP_INT16 || dtype == TP_INT32 || dtype == TP_INT64;
}

/* Element i of an integer or bool tensor, widened. */
static inline uint64_t cpu_load_integer(const void *data, tp_dtype_t dtype, int64_t i) {
    switch (dtype) {
#define CPU_LOAD_CASE(dt, T, U, is_signed)                                                     \
    case dt: return CPU_WIDEN(is_signed, ((const T *)data)[i]);
        CPU_FOR_EACH_INTEGER(CPU_LOAD_CASE)
#undef CPU_LOAD_CASE
    case TP_BOOL: return ((const bool *)data)[i];
    default: return 0;
    }
}

/* Stores the dtype's low bits of a widened value into element i; a bool gets value != 0. */
static inline void cpu_store_integer(void *data, tp_dtype_t dtype, int64_t i, uint64_t value) {
    switch (dtype) {
#define CPU_STORE_CASE(dt, T, U, is_signed)                                                    \
    case dt: ((T *)data)[i] = (T)value; break;
        CPU_FOR_EACH_INTEGER(CPU_STORE_CASE)
#undef CPU_STORE_CASE
    case TP_BOOL: ((bool *)data)[i] = value != 0; break;
    default: break;
    }
}

/* Element i of a float32 or float64 tensor, as a double: the kernels' floats (16-bit floats
 * arrive as float32, cpu_staging.c). */
static inline double cpu_load_float(const void *data, tp_dtype_t dtype, int64_t i) {
    return dtype == TP_FLOAT32 ? (double)((const float *)data)[i] : ((const double *)data)[i];
}

/* Stores `value` into element i of a float32 (rounded) or float64 tensor. */
static inline void cpu_store_float(void *data, tp_dtype_t dtype, int64_t i, double value) {
    if (dtype == TP_FLOAT32)
        ((float *)data)[i] = (float)value;
    else
        ((double *)data)[i] = value;
}

/* The bits of an integer dtype's values. */
static inline int cpu_integer_bits(tp_dtype_t dtype) {
    switch (dtype) {
#define CPU_BITS_CASE(dt, T, U, is_signed)                                                     \
    case dt: return (int)(8 * sizeof(T));
        CPU_FOR_EACH_INTEGER(CPU_BITS_CASE)
#undef CPU_BITS_CASE
    default: return 0;
    }
}

/* The smallest and the largest value of an integer dtype, widened. */
static inline uint64_t cpu_integer_min(tp_dtype_t dtype) {
    return cpu_is_signed(dtype) ? (uint64_t)0 - ((uint64_t)1 << (cpu_integer_bits(dtype) - 1))
                                : 0;
}

static inline uint64_t cpu_integer_max(tp_dtype_t dtype) {
    int bits = cpu_integer_bits(dtype) - (cpu_is_signed(dtype) ? 1 : 0);
    return bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
}

#endif
