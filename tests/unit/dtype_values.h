/* SPDX-License-Identifier: Apache-2.0 */
/* Elements of every dtype to and from doubles, for tests that write their values as numbers:
 * a value stored must be exact in its dtype (the 16-bit floats round to nearest even through
 * tensorplug/float16.h), and a value loaded is exact unless it is a 64-bit integer beyond
 * 2^53. An invalid dtype fails the test. */
#ifndef TP_TESTS_DTYPE_VALUES_H
#define TP_TESTS_DTYPE_VALUES_H

#include <stdbool.h>
#include <stdint.h>

#include "tensorplug/float16.h"
#include "test_support.h"

static inline void store_double(void *data, tp_dtype_t dtype, int64_t i, double value) {
    switch (dtype) {
    case TP_FLOAT32: ((float *)data)[i] = (float)value; break;
    case TP_FLOAT64: ((double *)data)[i] = value; break;
    case TP_FLOAT16: ((uint16_t *)data)[i] = tp_float16_from_double(value); break;
    case TP_BFLOAT16: ((uint16_t *)data)[i] = tp_bfloat16_from_double(value); break;
    case TP_INT8: ((int8_t *)data)[i] = (int8_t)value; break;
    case TP_INT16: ((int16_t *)data)[i] = (int16_t)value; break;
    case TP_INT32: ((int32_t *)data)[i] = (int32_t)value; break;
    case TP_INT64: ((int64_t *)data)[i] = (int64_t)value; break;
    case TP_UINT8: ((uint8_t *)data)[i] = (uint8_t)value; break;
    case TP_UINT16: ((uint16_t *)data)[i] = (uint16_t)value; break;
    case TP_UINT32: ((uint32_t *)data)[i] = (uint32_t)value; break;
    case TP_UINT64: ((uint64_t *)data)[i] = (uint64_t)value; break;
    case TP_BOOL: ((bool *)data)[i] = value != 0; break;
    default: fail_msg("unexpected dtype %d", (int)dtype);
    }
}

static inline double load_double(const void *data, tp_dtype_t dtype, int64_t i) {
    switch (dtype) {
    case TP_FLOAT32: return ((const float *)data)[i];
    case TP_FLOAT64: return ((const double *)data)[i];
    case TP_FLOAT16: return tp_float16_to_float(((const uint16_t *)data)[i]);
    case TP_BFLOAT16: return tp_bfloat16_to_float(((const uint16_t *)data)[i]);
    case TP_INT8: return ((const int8_t *)data)[i];
    case TP_INT16: return ((const int16_t *)data)[i];
    case TP_INT32: return ((const int32_t *)data)[i];
    case TP_INT64: return (double)((const int64_t *)data)[i];
    case TP_UINT8: return ((const uint8_t *)data)[i];
    case TP_UINT16: return ((const uint16_t *)data)[i];
    case TP_UINT32: return ((const uint32_t *)data)[i];
    case TP_UINT64: return (double)((const uint64_t *)data)[i];
    case TP_BOOL: return ((const bool *)data)[i];
    default: fail_msg("unexpected dtype %d", (int)dtype);
    }
    return 0;
}

#endif
