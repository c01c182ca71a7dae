/* SPDX-License-Identifier: Apache-2.0 */
/* A plug-in built against ABI 1.6, before the dtypes of 1.7 (float16 ... uint64) existed: its
 * descriptor says 1.6, and its kernels know the dtypes float32, float64, int32, int64, uint8
 * and bool alone. One device type, OLD (priority 100), with
 *   - Neg, registered with no dtype constraint at all;
 *   - Cast, constrained on SrcT (float32) but not on DstT;
 *   - its own op OldTwice (y = 2x) whose attribute T allows any dtype, and a kernel for it with
 *     no constraint.
 * Each kernel fails, naming the dtype, if the host ever hands it one that 1.6 did not have:
 * the runtime must keep later dtypes away from it (plugin.h), and the test (test_old_abi.c)
 * sees both that it does and that the 1.6 dtypes still run here. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simple_device.h"

static const tp_host_api_t *host;

static void *data_of(const tp_tensor_view_t *view) {
    return view->mem == NULL ? NULL : (char *)view->mem + view->offset;
}

static bool views(tp_kernel_context_t *context, tp_tensor_view_t *x, tp_tensor_view_t *y,
                  tp_plugin_status_t *status) {
    x->struct_size = sizeof *x;
    y->struct_size = sizeof *y;
    host->kernel_input(context, 0, x, status);
    host->kernel_output(context, 0, y, status);
    return host->status_code(status) == TP_OK;
}

static void refuse(tp_kernel_context_t *context, tp_dtype_t dtype, tp_plugin_status_t *status) {
    host->status_set(status, TP_INTERNAL,
                     "%s on OLD was handed dtype %d, which plug-in ABI 1.6 does not have",
                     host->kernel_op_name(context), (int)dtype);
}

/* y = scale * x, for the dtypes of 1.6. */
static void scale(tp_kernel_context_t *context, int scale_by, tp_plugin_status_t *status) {
    tp_tensor_view_t x, y;
    if (!views(context, &x, &y, status)) return;
    if (x.dtype > TP_BOOL) {
        refuse(context, x.dtype, status);
        return;
    }
    const void *in = data_of(&x);
    void *out = data_of(&y);
    for (int64_t i = 0; i < x.num_elements; i++) {
        switch (x.dtype) {
        case TP_FLOAT32: ((float *)out)[i] = (float)scale_by * ((const float *)in)[i]; break;
        case TP_FLOAT64: ((double *)out)[i] = scale_by * ((const double *)in)[i]; break;
        case TP_INT32:
            ((int32_t *)out)[i] =
                (int32_t)((uint32_t)scale_by * (uint32_t)((const int32_t *)in)[i]);
            break;
        case TP_INT64:
            ((int64_t *)out)[i] =
                (int64_t)((uint64_t)scale_by * (uint64_t)((const int64_t *)in)[i]);
            break;
        case TP_UINT8:
            ((uint8_t *)out)[i] = (uint8_t)((unsigned)scale_by * ((const uint8_t *)in)[i]);
            break;
        default: ((bool *)out)[i] = ((const bool *)in)[i]; break; /* x or x */
        }
    }
}

static void neg(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    scale(context, -1, status);
}

static void twice(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    scale(context, 2, status);
}

/* From float32 to a dtype of 1.6. */
static void cast(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x, y;
    if (!views(context, &x, &y, status)) return;
    const float *in = data_of(&x);
    void *out = data_of(&y);
    if (y.dtype > TP_BOOL) {
        refuse(context, y.dtype, status);
        return;
    }
    for (int64_t i = 0; i < x.num_elements; i++) {
        float v = in[i];
        switch (y.dtype) {
        case TP_FLOAT32: ((float *)out)[i] = v; break;
        case TP_FLOAT64: ((double *)out)[i] = v; break;
        /* The test's values are small whole numbers: a plain conversion is defined. */
        case TP_INT32: ((int32_t *)out)[i] = (int32_t)v; break;
        case TP_INT64: ((int64_t *)out)[i] = (int64_t)v; break;
        case TP_UINT8: ((uint8_t *)out)[i] = (uint8_t)v; break;
        default: ((bool *)out)[i] = v != 0; break;
        }
    }
}

static void init(const tp_host_api_t *host_api, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    host = host_api;
    simple_device_register(host, registrar, "OLD", 1, 100, status);

    tp_kernel_def_t unconstrained_neg = {.struct_size = sizeof unconstrained_neg, .op = "Neg",
                                         .device_type = "OLD", .compute = neg};
    host->register_kernel(registrar, &unconstrained_neg, status);

    static const tp_dtype_t from_float32[] = {TP_FLOAT32};
    tp_type_constraint_t source = {sizeof source, "SrcT", from_float32, 1};
    tp_kernel_def_t cast_kernel = {.struct_size = sizeof cast_kernel, .op = "Cast",
                                   .device_type = "OLD", .constraints = &source,
                                   .num_constraints = 1, .compute = cast};
    host->register_kernel(registrar, &cast_kernel, status);

    tp_op_arg_def_t x = {sizeof x, "x", TP_DTYPE_INVALID, "T", NULL};
    tp_op_arg_def_t y = {sizeof y, "y", TP_DTYPE_INVALID, "T", NULL};
    tp_op_attr_def_t any_type = {.struct_size = sizeof any_type, .name = "T",
                                 .type = TP_ATTR_DTYPE};
    tp_op_def_t op = {.struct_size = sizeof op, .name = "OldTwice", .inputs = &x,
                      .num_inputs = 1, .outputs = &y, .num_outputs = 1, .attrs = &any_type,
                      .num_attrs = 1};
    host->register_op(registrar, &op, status);
    tp_kernel_def_t twice_kernel = {.struct_size = sizeof twice_kernel, .op = "OldTwice",
                                    .device_type = "OLD", .compute = twice};
    host->register_kernel(registrar, &twice_kernel, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, 6, "abi_1_6", "1.6.0", init};
    return &descriptor;
}
