/* SPDX-License-Identifier: Apache-2.0 */
#include "base/dtype.h"

#include <string.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "tensorplug/float16.h"

typedef struct {
    tp_dtype_t dtype;
    const char *name;
    size_t size;
} dtype_entry_t;

/* In the ABI's order, which is the order tp_dtype_from_name's message lists them in. */
static const dtype_entry_t dtypes[] = {
    {TP_FLOAT32, "float32", 4},   {TP_FLOAT64, "float64", 8}, {TP_INT32, "int32", 4},
    {TP_INT64, "int64", 8},       {TP_UINT8, "uint8", 1},     {TP_BOOL, "bool", 1},
    {TP_FLOAT16, "float16", 2},   {TP_BFLOAT16, "bfloat16", 2}, {TP_INT8, "int8", 1},
    {TP_INT16, "int16", 2},       {TP_UINT16, "uint16", 2},   {TP_UINT32, "uint32", 4},
    {TP_UINT64, "uint64", 8},
};

static const dtype_entry_t *find(tp_dtype_t dtype) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dtype == dtype) return &dtypes[i];
    return NULL;
}

const char *tp_dtype_name(tp_dtype_t dtype) {
    const dtype_entry_t *entry = find(dtype);
    return entry == NULL ? NULL : entry->name;
}

size_t tp_dtype_size(tp_dtype_t dtype) {
    const dtype_entry_t *entry = find(dtype);
    return entry == NULL ? 0 : entry->size;
}

tp_dtype_kind_t tp_dtype_kind(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_FLOAT32: case TP_FLOAT64: case TP_FLOAT16: case TP_BFLOAT16:
        return TP_DTYPE_KIND_FLOAT;
    case TP_INT8: case TP_INT16: case TP_INT32: case TP_INT64: return TP_DTYPE_KIND_SIGNED;
    case TP_UINT8: case TP_UINT16: case TP_UINT32: case TP_UINT64: return TP_DTYPE_KIND_UNSIGNED;
    case TP_BOOL: return TP_DTYPE_KIND_BOOL;
    default: return TP_DTYPE_KIND_INVALID;
    }
}

bool tp_dtype_is_float(tp_dtype_t dtype) { return tp_dtype_kind(dtype) == TP_DTYPE_KIND_FLOAT; }

bool tp_dtype_is_integer(tp_dtype_t dtype) {
    tp_dtype_kind_t kind = tp_dtype_kind(dtype);
    return kind == TP_DTYPE_KIND_SIGNED || kind == TP_DTYPE_KIND_UNSIGNED;
}

tp_dtype_t tp_dtype_newest_of_abi(uint32_t abi_minor) {
    return abi_minor >= 7 ? TP_UINT64 : TP_BOOL;
}

tp_status_t *tp_dtype_from_name(const char *name, tp_dtype_t *out_dtype) {
    TP_REQUIRE_ARG(name);
    TP_REQUIRE_ARG(out_dtype);
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (strcmp(dtypes[i].name, name) == 0) {
            *out_dtype = dtypes[i].dtype;
            return NULL;
        }
    }
    tp_strbuf_t known = TP_STRBUF_INIT;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        tp_strbuf_printf(&known, "%s%s", i == 0 ? "" : ", ", dtypes[i].name);
    tp_status_t *error = tp_status_make(TP_INVALID_ARGUMENT, "unknown dtype '%s' (known: %s)",
                                        name, tp_strbuf_text(&known));
    tp_strbuf_free(&known);
    return error;
}

void tp_dtype_store_double(void *data, tp_dtype_t dtype, int64_t i, double value) {
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
    default: break; /* not a dtype: nothing is written */
    }
}

double tp_dtype_load_double(const void *data, tp_dtype_t dtype, int64_t i) {
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
    default: return 0;
    }
}

tp_status_t *tp_dtype_check_values(tp_dtype_t dtype, const void *data, size_t byte_size,
                                   const char *what) {
    if (dtype != TP_BOOL) return NULL;
    const unsigned char *bytes = data;
    for (size_t i = 0; i < byte_size; i++)
        if (bytes[i] > 1)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "%s: bool element %zu is the byte %u; a bool must be 0 or 1",
                                  what, i, (unsigned)bytes[i]);
    return NULL;
}
