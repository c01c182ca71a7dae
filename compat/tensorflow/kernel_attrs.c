/* SPDX-License-Identifier: Apache-2.0 */
/* The attribute getters of TF_OpKernelConstruction, over the host's kernel_attr_* functions,
 * with TensorFlow's semantics: strings are copied without a NUL and cut at max_length, lists
 * are cut at max_vals, a scalar's list_size is -1. */
#include <limits.h>
#include <string.h>

#include "tfc.h"

/* Runs a host getter on the construction's borrowed status; true if it succeeded. */
#define HOST_GET(ctx, getter, ...) \
    (tfc_host->getter((ctx)->context, __VA_ARGS__, (ctx)->host_status), \
     tfc_host->status_code((ctx)->host_status) == TP_OK ? true : clear_host_status(ctx))

static bool clear_host_status(TF_OpKernelConstruction *ctx) {
    tfc_host->status_set(ctx->host_status, TP_OK, "%s", "");
    return false;
}

static void not_found(TF_OpKernelConstruction *ctx, TF_Status *status, const char *function,
                      const char *attr_name, const char *kind) {
    tfc_status_printf(status, TF_INVALID_ARGUMENT, "%s: op %s has no %s attribute '%s'",
                      function, ctx->kernel->tf_op, kind, attr_name != NULL ? attr_name : "");
}

void TF_OpKernelConstruction_GetAttrSize(TF_OpKernelConstruction *ctx, const char *attr_name,
                                         int32_t *list_size, int32_t *total_size,
                                         TF_Status *status) {
    const int64_t *values;
    int32_t count;
    const char *text;
    const void *bytes;
    uint64_t byte_count;
    int64_t i;
    double f;
    tp_dtype_t dtype;
    TF_SetStatus(status, TF_OK, "");
    if (HOST_GET(ctx, kernel_attr_int_list, attr_name, &values, &count)) {
        *list_size = count;
        *total_size = -1;
    } else if (HOST_GET(ctx, kernel_attr_string, attr_name, &text)) {
        size_t length = strlen(text);
        *list_size = -1;
        *total_size = length > INT32_MAX ? INT32_MAX : (int32_t)length;
    } else if (HOST_GET(ctx, kernel_attr_bytes, attr_name, &bytes, &byte_count)) {
        *list_size = -1;
        *total_size = byte_count > INT32_MAX ? INT32_MAX : (int32_t)byte_count;
    } else if (HOST_GET(ctx, kernel_attr_int, attr_name, &i) ||
               HOST_GET(ctx, kernel_attr_float, attr_name, &f) ||
               HOST_GET(ctx, kernel_attr_dtype, attr_name, &dtype)) {
        *list_size = -1;
        *total_size = -1;
    } else {
        not_found(ctx, status, "TF_OpKernelConstruction_GetAttrSize", attr_name, "such");
    }
}

/* The scalar getters differ only in the host's getter, the value's type and its conversion. */
#define SCALAR_GETTER(function, tf_type, host_type, getter, kind, convert)                    \
    void function(TF_OpKernelConstruction *ctx, const char *attr_name, tf_type *val,            \
                  TF_Status *status) {                                                         \
        host_type value;                                                                       \
        if (!HOST_GET(ctx, getter, attr_name, &value)) {                                       \
            not_found(ctx, status, #function, attr_name, kind);                                \
            return;                                                                            \
        }                                                                                      \
        *val = convert(value);                                                                 \
        TF_SetStatus(status, TF_OK, "");                                                       \
    }
#define AS_IS(value) (value)
#define AS_FLOAT(value) ((float)(value))
#define AS_TF_BOOL(value) ((TF_Bool)((value) != 0))

SCALAR_GETTER(TF_OpKernelConstruction_GetAttrType, TF_DataType, tp_dtype_t, kernel_attr_dtype,
              "type", tfc_dtype_from_tp)
SCALAR_GETTER(TF_OpKernelConstruction_GetAttrInt64, int64_t, int64_t, kernel_attr_int, "int",
              AS_IS)
SCALAR_GETTER(TF_OpKernelConstruction_GetAttrFloat, float, double, kernel_attr_float, "float",
              AS_FLOAT)
SCALAR_GETTER(TF_OpKernelConstruction_GetAttrBool, TF_Bool, int32_t, kernel_attr_bool, "bool",
              AS_TF_BOOL)

void TF_OpKernelConstruction_GetAttrInt32(TF_OpKernelConstruction *ctx, const char *attr_name,
                                          int32_t *val, TF_Status *status) {
    int64_t value;
    if (!HOST_GET(ctx, kernel_attr_int, attr_name, &value)) {
        not_found(ctx, status, "TF_OpKernelConstruction_GetAttrInt32", attr_name, "int");
        return;
    }
    if (value < INT32_MIN || value > INT32_MAX) {
        tfc_status_printf(status, TF_INVALID_ARGUMENT,
                          "TF_OpKernelConstruction_GetAttrInt32: '%s' is %lld, out of int32's "
                          "range", attr_name, (long long)value);
        return;
    }
    *val = (int32_t)value;
    TF_SetStatus(status, TF_OK, "");
}

void TF_OpKernelConstruction_GetAttrString(TF_OpKernelConstruction *ctx, const char *attr_name,
                                           char *val, size_t max_length, TF_Status *status) {
    const char *text;
    if (!HOST_GET(ctx, kernel_attr_string, attr_name, &text)) {
        not_found(ctx, status, "TF_OpKernelConstruction_GetAttrString", attr_name, "string");
        return;
    }
    size_t length = strlen(text);
    if (max_length > 0) memcpy(val, text, length < max_length ? length : max_length);
    TF_SetStatus(status, TF_OK, "");
}

/* Copies at most max_vals of the int list `attr_name` through `store`. */
static bool get_int_list(TF_OpKernelConstruction *ctx, const char *attr_name, int max_vals,
                         const int64_t **out_values, int32_t *out_count, TF_Status *status,
                         const char *function) {
    if (!HOST_GET(ctx, kernel_attr_int_list, attr_name, out_values, out_count)) {
        not_found(ctx, status, function, attr_name, "int list");
        return false;
    }
    if (max_vals < *out_count) *out_count = max_vals < 0 ? 0 : max_vals;
    TF_SetStatus(status, TF_OK, "");
    return true;
}

void TF_OpKernelConstruction_GetAttrInt64List(TF_OpKernelConstruction *ctx,
                                              const char *attr_name, int64_t *vals, int max_vals,
                                              TF_Status *status) {
    const int64_t *values;
    int32_t count;
    if (get_int_list(ctx, attr_name, max_vals, &values, &count, status,
                     "TF_OpKernelConstruction_GetAttrInt64List") &&
        count > 0)
        memcpy(vals, values, (size_t)count * sizeof *vals);
}

void TF_OpKernelConstruction_GetAttrInt32List(TF_OpKernelConstruction *ctx,
                                              const char *attr_name, int32_t *vals, int max_vals,
                                              TF_Status *status) {
    const int64_t *values;
    int32_t count;
    if (!get_int_list(ctx, attr_name, max_vals, &values, &count, status,
                      "TF_OpKernelConstruction_GetAttrInt32List"))
        return;
    for (int32_t i = 0; i < count; i++) {
        if (values[i] < INT32_MIN || values[i] > INT32_MAX) {
            tfc_status_printf(status, TF_INVALID_ARGUMENT,
                              "TF_OpKernelConstruction_GetAttrInt32List: '%s'[%d] is out of "
                              "int32's range", attr_name, (int)i);
            return;
        }
        vals[i] = (int32_t)values[i];
    }
}

bool TF_OpKernelConstruction_HasAttr(TF_OpKernelConstruction *ctx, const char *attr_name,
                                     TF_Status *status) {
    int32_t list_size, total_size;
    TF_OpKernelConstruction_GetAttrSize(ctx, attr_name, &list_size, &total_size, status);
    bool found = TF_GetCode(status) == TF_OK;
    TF_SetStatus(status, TF_OK, "");
    return found;
}

TF_StringView TF_OpKernelConstruction_GetName(TF_OpKernelConstruction *ctx) {
    /* An eager op has no node name; the kernel's op name stands for it. */
    TF_StringView name = {ctx->kernel->tf_op, strlen(ctx->kernel->tf_op)};
    return name;
}

void TF_OpKernelConstruction_Failure(TF_OpKernelConstruction *ctx, TF_Status *status) {
    if (ctx->failure.code == TF_OK && TF_GetCode(status) != TF_OK)
        TF_SetStatus(&ctx->failure, TF_GetCode(status), TF_Message(status));
}
