/* SPDX-License-Identifier: Apache-2.0 */
/* MatMul on the GPU through CLBlast's GEMM (CLBlastSgemm, CLBlastDgemm), queued on the kernel
 * context's stream like any launch: compute never waits for the device. CLBlast compiles its
 * kernels for a device on the first call there and keeps them for the life of the process. */
#include <stdint.h>
#include <stdio.h>

#include "opencl_device.h"

#ifdef TP_OPENCL_CLBLAST
#include <clblast_c.h>

/* CLBlast's name for a code of its own; its codes above -64 are OpenCL's, named by
 * opencl_error_name. */
static const char *clblast_code_name(CLBlastStatusCode code, char *buffer, size_t capacity) {
    switch (code) {
    case CLBlastNotImplemented: return "CLBlastNotImplemented";
    case CLBlastInvalidMatrixA: return "CLBlastInvalidMatrixA";
    case CLBlastInvalidMatrixB: return "CLBlastInvalidMatrixB";
    case CLBlastInvalidMatrixC: return "CLBlastInvalidMatrixC";
    case CLBlastInvalidDimension: return "CLBlastInvalidDimension";
    case CLBlastInvalidLeadDimA: return "CLBlastInvalidLeadDimA";
    case CLBlastInvalidLeadDimB: return "CLBlastInvalidLeadDimB";
    case CLBlastInvalidLeadDimC: return "CLBlastInvalidLeadDimC";
    case CLBlastInsufficientMemoryA: return "CLBlastInsufficientMemoryA";
    case CLBlastInsufficientMemoryB: return "CLBlastInsufficientMemoryB";
    case CLBlastInsufficientMemoryC: return "CLBlastInsufficientMemoryC";
    case CLBlastInsufficientMemoryTemp: return "CLBlastInsufficientMemoryTemp";
    case CLBlastInvalidLocalMemUsage: return "CLBlastInvalidLocalMemUsage";
    case CLBlastNoDoublePrecision: return "CLBlastNoDoublePrecision";
    case CLBlastDatabaseError: return "CLBlastDatabaseError";
    case CLBlastUnknownError: return "CLBlastUnknownError";
    case CLBlastUnexpectedError: return "CLBlastUnexpectedError";
    default:
        if (code > -64) return opencl_error_name((cl_int)code, buffer, capacity);
        snprintf(buffer, capacity, "CLBlast error %d", (int)code);
        return buffer;
    }
}

/* A CLBlast failure as a status: exhausted memory is the caller's to retry, a missing feature
 * is unimplemented, anything else is a fault. */
static void clblast_fail(tp_plugin_status_t *status, const opencl_device_t *device,
                         const char *call, CLBlastStatusCode code) {
    char buffer[48];
    tp_code_t kind = TP_INTERNAL;
    if (code == CLBlastTempBufferAllocFailure || code == CLBlastOpenCLOutOfResources ||
        code == CLBlastOpenCLOutOfHostMemory)
        kind = TP_RESOURCE_EXHAUSTED;
    else if (code == CLBlastNotImplemented || code == CLBlastNoDoublePrecision)
        kind = TP_UNIMPLEMENTED;
    opencl_host->status_set(status, kind, "MatMul on GPU:%d (%s): %s failed: %s",
                            (int)device->ordinal, device->name, call,
                            clblast_code_name(code, buffer, sizeof buffer));
}

/* The view's offset in elements, which is what CLBlast takes; false when the tensor's last
 * element lies beyond the int that CLBlast's kernels index with. */
static bool element_offset(const tp_tensor_view_t *tensor, size_t element_size,
                           size_t *offset) {
    *offset = (size_t)(tensor->offset / element_size);
    return tensor->offset % element_size == 0 &&
           (uint64_t)*offset + (uint64_t)tensor->num_elements <= (uint64_t)INT32_MAX;
}

/* C = 0 when the product sums no terms (k = 0), as BLAS gives it with beta = 0. */
static void zero_fill(tp_kernel_context_t *context, const tp_tensor_view_t *c, size_t size,
                      tp_plugin_status_t *status) {
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    const unsigned char zero[8] = {0};
    cl_event event;
    cl_int error = clEnqueueFillBuffer(stream->queue, (cl_mem)c->mem, zero, size, c->offset,
                                       c->byte_size, 0, NULL, &event);
    opencl_stream_queued(stream, "MatMul", "clEnqueueFillBuffer", error, event, status);
}

static void matmul(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t a, b, c;
    int32_t transpose_a = 0, transpose_b = 0;
    if (!opencl_input(context, 0, &a, status) || !opencl_input(context, 1, &b, status) ||
        !opencl_output(context, 0, &c, status))
        return;
    opencl_host->kernel_attr_bool(context, "transpose_a", &transpose_a, status);
    opencl_host->kernel_attr_bool(context, "transpose_b", &transpose_b, status);
    if (opencl_failed(status)) return;
    opencl_device_t *device = opencl_host->kernel_device(context);
    bool doubles = c.dtype == TP_FLOAT64;
    if (doubles && !device->has_fp64) {
        opencl_host->status_set(status, TP_UNIMPLEMENTED,
                                "MatMul on GPU:%d (%s): no kernel for float64: the device lacks "
                                "cl_khr_fp64",
                                (int)device->ordinal, device->name);
        return;
    }
    size_t size = doubles ? sizeof(double) : sizeof(float);
    int64_t m = c.dims[0], n = c.dims[1], k = transpose_a ? a.dims[0] : a.dims[1];
    if (m == 0 || n == 0) return;
    if (k == 0) {
        zero_fill(context, &c, size, status);
        return;
    }
    size_t a_offset, b_offset, c_offset;
    if (!element_offset(&a, size, &a_offset) || !element_offset(&b, size, &b_offset) ||
        !element_offset(&c, size, &c_offset)) {
        opencl_host->status_set(status, TP_UNIMPLEMENTED,
                                "MatMul on GPU:%d (%s): matrices of more than 2^31 elements are "
                                "beyond CLBlast's kernels",
                                (int)device->ordinal, device->name);
        return;
    }
    /* Row-major, so the leading dimension of each matrix is its stored column count. */
    size_t lda = (size_t)a.dims[1], ldb = (size_t)b.dims[1], ldc = (size_t)n;
    CLBlastTranspose ta = transpose_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = transpose_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    cl_command_queue queue = stream->queue;
    cl_event event = NULL;
    /* Two threads making CLBlast's first GEMM at once race inside its tuning database
     * (ThreadSanitizer saw it with two GPU replicas training); queueing one GEMM at a time
     * costs little, as a call only queues. */
    static pthread_mutex_t clblast_mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&clblast_mutex);
    CLBlastStatusCode code =
        doubles ? CLBlastDgemm(CLBlastLayoutRowMajor, ta, tb, (size_t)m, (size_t)n, (size_t)k,
                               1.0, (cl_mem)a.mem, a_offset, lda, (cl_mem)b.mem, b_offset, ldb,
                               0.0, (cl_mem)c.mem, c_offset, ldc, &queue, &event)
                : CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, (size_t)m, (size_t)n, (size_t)k,
                               1.0f, (cl_mem)a.mem, a_offset, lda, (cl_mem)b.mem, b_offset, ldb,
                               0.0f, (cl_mem)c.mem, c_offset, ldc, &queue, &event);
    pthread_mutex_unlock(&clblast_mutex);
    if (code != CLBlastSuccess) {
        if (event != NULL) clReleaseEvent(event);
        clblast_fail(status, device, doubles ? "CLBlastDgemm" : "CLBlastSgemm", code);
        return;
    }
    opencl_stream_track(stream, event, "MatMul", status);
}

void opencl_register_matmul_kernels(tp_registrar_t *registrar, bool fp64,
                                    tp_plugin_status_t *status) {
    static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    opencl_register(registrar, "MatMul", "T", floats, fp64 ? 2 : 1, NULL, matmul, status);
}

#else

void opencl_register_matmul_kernels(tp_registrar_t *registrar, bool fp64,
                                    tp_plugin_status_t *status) {
    (void)fp64;
    (void)status;
    opencl_host->log(registrar, TP_LOG_INFO,
                     "the OpenCL plug-in was built without CLBlast: no MatMul kernel on GPU");
}

#endif
