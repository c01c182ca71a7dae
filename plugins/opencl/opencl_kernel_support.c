/* SPDX-License-Identifier: Apache-2.0 */
/* What every kernel file of the plug-in needs: reading a kernel's tensors, a status test, the
 * names and sizes of dtypes as the .cl files spell them, a scalar attribute's bytes, the kernel
 * for a dtype, a device-side copy, a device-side check of the input, and registration with a
 * create that shares the op's table with compute. */
#include <string.h>

#include "opencl_device.h"

bool opencl_failed(const tp_plugin_status_t *status) {
    return opencl_host->status_code(status) != TP_OK;
}

bool opencl_input(tp_kernel_context_t *context, int32_t index, tp_tensor_view_t *view,
                  tp_plugin_status_t *status) {
    *view = (tp_tensor_view_t){.struct_size = sizeof *view};
    opencl_host->kernel_input(context, index, view, status);
    return !opencl_failed(status);
}

bool opencl_output(tp_kernel_context_t *context, int32_t index, tp_tensor_view_t *view,
                   tp_plugin_status_t *status) {
    *view = (tp_tensor_view_t){.struct_size = sizeof *view};
    opencl_host->kernel_output(context, index, view, status);
    return !opencl_failed(status);
}

const char *opencl_dtype_suffix(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_FLOAT32: return "float32";
    case TP_FLOAT64: return "float64";
    case TP_INT32: return "int32";
    case TP_INT64: return "int64";
    case TP_UINT8: return "uint8";
    case TP_BOOL: return "bool";
    default: return NULL;
    }
}

size_t opencl_dtype_size(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_FLOAT64:
    case TP_INT64: return 8;
    case TP_FLOAT32:
    case TP_INT32: return 4;
    default: return 1;
    }
}

int opencl_size_index(tp_dtype_t dtype) {
    size_t size = opencl_dtype_size(dtype);
    return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
}

cl_ulong opencl_scalar_bits(tp_dtype_t dtype, double value) {
    cl_ulong bits = 0;
    /* Each conversion only for its own dtype: another's range may not hold the value. */
    switch (dtype) {
    case TP_FLOAT32: {
        float f = (float)value;
        memcpy(&bits, &f, sizeof f);
        break;
    }
    case TP_FLOAT64: memcpy(&bits, &value, sizeof value); break;
    case TP_INT32: {
        int32_t i = (int32_t)value;
        memcpy(&bits, &i, sizeof i);
        break;
    }
    case TP_INT64: {
        int64_t l = (int64_t)value;
        memcpy(&bits, &l, sizeof l);
        break;
    }
    case TP_BOOL: bits = value != 0; break;
    default: bits = (unsigned char)(int64_t)value; break;
    }
    return bits;
}

void *opencl_share_op(void *kernel_state, tp_kernel_context_t *context,
                      tp_plugin_status_t *status) {
    (void)context;
    (void)status;
    return kernel_state;
}

int32_t opencl_kernel_for(const char *op, const int32_t *ids, tp_dtype_t dtype,
                          tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const opencl_device_t *device = opencl_host->kernel_device(context);
    int32_t id = (int)dtype >= 0 && (int)dtype < OPENCL_NUM_DTYPES ? ids[dtype] : -1;
    if (id >= 0 && (dtype != TP_FLOAT64 || device->has_fp64)) return id;
    const char *name = opencl_dtype_suffix(dtype);
    opencl_host->status_set(status, TP_UNIMPLEMENTED, "%s on GPU:%d (%s): no kernel for %s%s", op,
                            (int)device->ordinal, device->name, name != NULL ? name : "this dtype",
                            dtype == TP_FLOAT64 ? ": the device lacks cl_khr_fp64" : "");
    return -1;
}

void opencl_copy_tensor(tp_kernel_context_t *context, const char *what,
                        const tp_tensor_view_t *x, const tp_tensor_view_t *y,
                        tp_plugin_status_t *status) {
    if (y->byte_size == 0) return;
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    cl_event event;
    cl_int error = clEnqueueCopyBuffer(stream->queue, (cl_mem)x->mem, (cl_mem)y->mem, x->offset,
                                       y->offset, y->byte_size, 0, NULL, &event);
    opencl_stream_queued(stream, what, "clEnqueueCopyBuffer", error, event, status);
}

bool opencl_launch_check(tp_kernel_context_t *context, const char *what, int32_t id,
                         opencl_arg_t *args, size_t num_args, opencl_describe_fn describe,
                         tp_plugin_status_t *status) {
    opencl_device_t *device = opencl_host->kernel_device(context);
    const cl_long zeros[OPENCL_RECORD_SIZE] = {0};
    cl_int error = CL_SUCCESS;
    cl_mem record = clCreateBuffer(device->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                   sizeof zeros, (void *)zeros, &error);
    if (record == NULL || error != CL_SUCCESS) {
        opencl_fail(status, device, what, "clCreateBuffer", error);
        return false;
    }
    args[num_args] = OPENCL_ARG(record);
    if (opencl_launch(context, what, id, args, num_args + 1, 1, 0, status))
        opencl_stream_check_record(opencl_host->kernel_stream(context), record, what, describe,
                                   status);
    clReleaseMemObject(record); /* OpenCL keeps it while queued commands use it */
    return !opencl_failed(status);
}

void opencl_register(tp_registrar_t *registrar, const char *op, const char *attr,
                     const tp_dtype_t *dtypes, size_t num_dtypes, void *state,
                     opencl_compute_fn compute, tp_plugin_status_t *status) {
    if (opencl_failed(status) || num_dtypes == 0) return;
    const tp_type_constraint_t constraint = {sizeof constraint, attr, dtypes, num_dtypes};
    const tp_kernel_def_t def = {.struct_size = sizeof def,
                                 .op = op,
                                 .device_type = "GPU",
                                 .constraints = &constraint,
                                 .num_constraints = 1,
                                 .kernel_state = state,
                                 .create = opencl_share_op,
                                 .compute = compute};
    opencl_host->register_kernel(registrar, &def, status);
}

void opencl_broadcast_strides(const tp_tensor_view_t *view, int32_t rank, const int64_t *dims,
                              cl_long *strides) {
    int64_t running = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        int32_t own = d - (rank - view->rank);
        int64_t dim = own >= 0 ? view->dims[own] : 1;
        strides[d] = dim == 1 && dims[d] != 1 ? 0 : running;
        running *= dim;
    }
}
