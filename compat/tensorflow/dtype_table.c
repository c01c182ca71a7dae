/* SPDX-License-Identifier: Apache-2.0 */
/* TensorFlow's dtype numbers and tensorplug's name the same types differently (TF_UINT8 is 4,
 * TP_UINT8 is 5): every dtype crossing the adapter goes through this one table. */
#include "tfc.h"

static const struct {
    TF_DataType tf;
    tp_dtype_t tp;
} dtypes[] = {
    {TF_FLOAT, TP_FLOAT32}, {TF_DOUBLE, TP_FLOAT64}, {TF_INT32, TP_INT32},
    {TF_UINT8, TP_UINT8},   {TF_INT64, TP_INT64},    {TF_BOOL, TP_BOOL},
    {TF_HALF, TP_FLOAT16},  {TF_BFLOAT16, TP_BFLOAT16}, {TF_INT8, TP_INT8},
    {TF_INT16, TP_INT16},   {TF_UINT16, TP_UINT16},  {TF_UINT32, TP_UINT32},
    {TF_UINT64, TP_UINT64},
};

tp_dtype_t tfc_dtype_to_tp(TF_DataType dtype) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].tf == dtype) return dtypes[i].tp;
    return TP_DTYPE_INVALID;
}

TF_DataType tfc_dtype_from_tp(tp_dtype_t dtype) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].tp == dtype) return dtypes[i].tf;
    return (TF_DataType)0;
}
