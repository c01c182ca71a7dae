/* SPDX-License-Identifier: Apache-2.0 */
#include "base/dtype.h"

#include <string.h>

#include "base/status.h"

typedef struct {
    tp_dtype_t dtype;
    const char *name;
    size_t size;
} dtype_entry_t;

static const dtype_entry_t dtypes[] = {
    {TP_FLOAT32, "float32", 4}, {TP_FLOAT64, "float64", 8}, {TP_INT32, "int32", 4},
    {TP_INT64, "int64", 8},     {TP_UINT8, "uint8", 1},     {TP_BOOL, "bool", 1},
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

tp_status_t *tp_dtype_from_name(const char *name, tp_dtype_t *out_dtype) {
    TP_REQUIRE_ARG(name);
    TP_REQUIRE_ARG(out_dtype);
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (strcmp(dtypes[i].name, name) == 0) {
            *out_dtype = dtypes[i].dtype;
            return NULL;
        }
    }
    return tp_status_make(TP_INVALID_ARGUMENT,
                          "unknown dtype '%s' (known: float32, float64, int32, int64, uint8, bool)",
                          name);
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
