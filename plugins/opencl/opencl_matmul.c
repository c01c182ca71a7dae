/* SPDX-License-Identifier: Apache-2.0 */
/* MatMul on the GPU through CLBlast's GEMM (CLBlastSgemm, CLBlastDgemm), and BatchMatMulV2
 * through its batched GEMM (CLBlastSgemmBatched, CLBlastDgemmBatched), queued on the kernel
 * context's stream like any launch: MatMul's compute never waits for the device. CLBlast
 * compiles its kernels for a device on the first call there and keeps them for the life of the
 * process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "opencl_device.h"

#ifdef TP_OPENCL_CLBLAST
#include <clblast_c.h>

/* Two threads making CLBlast's first GEMM at once race inside its tuning database
 * (ThreadSanitizer saw it with two GPU replicas training); queueing one GEMM at a time costs
 * little, as a call only queues. */
static pthread_mutex_t clblast_mutex = PTHREAD_MUTEX_INITIALIZER;

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
                         const char *op, const char *call, CLBlastStatusCode code) {
    char buffer[48];
    tp_code_t kind = TP_INTERNAL;
    if (code == CLBlastTempBufferAllocFailure || code == CLBlastOpenCLOutOfResources ||
        code == CLBlastOpenCLOutOfHostMemory)
        kind = TP_RESOURCE_EXHAUSTED;
    else if (code == CLBlastNotImplemented || code == CLBlastNoDoublePrecision)
        kind = TP_UNIMPLEMENTED;
    opencl_host->status_set(status, kind, "%s on GPU:%d (%s): %s failed: %s", op,
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

/* False with `status` set where the device has no doubles (cl_khr_fp64) for a float64 op. */
static bool has_dtype(const opencl_device_t *device, bool doubles, const char *op,
                      tp_plugin_status_t *status) {
    if (!doubles || device->has_fp64) return true;
    opencl_host->status_set(status, TP_UNIMPLEMENTED,
                            "%s on GPU:%d (%s): no kernel for float64: the device lacks "
                            "cl_khr_fp64",
                            op, (int)device->ordinal, device->name);
    return false;
}

/* The three operands' offsets in elements; false with `status` set where one lies beyond
 * what CLBlast's kernels index. */
static bool element_offsets(const opencl_device_t *device, const char *op,
                            const tp_tensor_view_t *a, const tp_tensor_view_t *b,
                            const tp_tensor_view_t *c, size_t size, size_t *a_offset,
                            size_t *b_offset, size_t *c_offset, tp_plugin_status_t *status) {
    if (element_offset(a, size, a_offset) && element_offset(b, size, b_offset) &&
        element_offset(c, size, c_offset))
        return true;
    opencl_host->status_set(status, TP_UNIMPLEMENTED,
                            "%s on GPU:%d (%s): matrices of more than 2^31 elements are beyond "
                            "CLBlast's kernels",
                            op, (int)device->ordinal, device->name);
    return false;
}

/* C = 0 when the product sums no terms (k = 0), as BLAS gives it with beta = 0. */
static void zero_fill(tp_kernel_context_t *context, const char *op, const tp_tensor_view_t *c,
                      size_t size, tp_plugin_status_t *status) {
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    const unsigned char zero[8] = {0};
    cl_event event;
    cl_int error = clEnqueueFillBuffer(stream->queue, (cl_mem)c->mem, zero, size, c->offset,
                                       c->byte_size, 0, NULL, &event);
    opencl_stream_queued(stream, op, "clEnqueueFillBuffer", error, event, status);
}

/* A product's two inputs, its output and its two transpose attributes (MatMul's transpose_a
 * and transpose_b, BatchMatMulV2's adj_x and adj_y); false with `status` set when one is
 * missing. */
static bool product_operands(tp_kernel_context_t *context, const char *transpose_a_attr,
                             const char *transpose_b_attr, tp_tensor_view_t *a,
                             tp_tensor_view_t *b, tp_tensor_view_t *c, int32_t *transpose_a,
                             int32_t *transpose_b, tp_plugin_status_t *status) {
    if (!opencl_input(context, 0, a, status) || !opencl_input(context, 1, b, status) ||
        !opencl_output(context, 0, c, status))
        return false;
    opencl_host->kernel_attr_bool(context, transpose_a_attr, transpose_a, status);
    opencl_host->kernel_attr_bool(context, transpose_b_attr, transpose_b, status);
    return !opencl_failed(status);
}

static void matmul(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t a, b, c;
    int32_t transpose_a = 0, transpose_b = 0;
    if (!product_operands(context, "transpose_a", "transpose_b", &a, &b, &c, &transpose_a,
                          &transpose_b, status))
        return;
    opencl_device_t *device = opencl_host->kernel_device(context);
    bool doubles = c.dtype == TP_FLOAT64;
    if (!has_dtype(device, doubles, "MatMul", status)) return;
    size_t size = doubles ? sizeof(double) : sizeof(float);
    int64_t m = c.dims[0], n = c.dims[1], k = transpose_a ? a.dims[0] : a.dims[1];
    if (m == 0 || n == 0) return;
    if (k == 0) {
        zero_fill(context, "MatMul", &c, size, status);
        return;
    }
    size_t a_offset, b_offset, c_offset;
    if (!element_offsets(device, "MatMul", &a, &b, &c, size, &a_offset, &b_offset, &c_offset,
                         status))
        return;
    /* Row-major, so the leading dimension of each matrix is its stored column count. */
    size_t lda = (size_t)a.dims[1], ldb = (size_t)b.dims[1], ldc = (size_t)n;
    CLBlastTranspose ta = transpose_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = transpose_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    cl_command_queue queue = stream->queue;
    cl_event event = NULL;
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
        clblast_fail(status, device, "MatMul", doubles ? "CLBlastDgemm" : "CLBlastSgemm", code);
        return;
    }
    opencl_stream_track(stream, event, "MatMul", status);
}

/* ---- BatchMatMulV2 ---------------------------------------------------------------------- */

/* Where product `index` of the output's batch finds its matrix in `operand`, counted in
 * matrices: the operand's batch dimensions are the output's last ones, and a dimension of 1
 * repeats its matrix. */
static size_t operand_matrix(const tp_tensor_view_t *operand, const tp_tensor_view_t *out,
                             int64_t index) {
    int32_t out_batch = out->rank - 2, batch = operand->rank - 2;
    int64_t matrix = 0, stride = 1;
    for (int32_t d = out_batch - 1; d >= 0 && d - (out_batch - batch) >= 0; d--) {
        int64_t coordinate = index % out->dims[d];
        index /= out->dims[d];
        int64_t own = operand->dims[d - (out_batch - batch)];
        if (own != 1) matrix += coordinate * stride;
        stride *= own;
    }
    return (size_t)matrix;
}

/* Every product in one CLBlast batched GEMM, each product's matrices found by offset, which
 * is how a broadcast batch dimension repeats one. CLBlast copies the offsets and scalars to the
 * device before it returns, with a blocking write that also waits for the stream's earlier
 * work: unlike MatMul, this launch waits for the device, which is the price of one kernel
 * for the whole batch instead of a GEMM per product. */
static void batch_matmul(void *kernel, tp_kernel_context_t *context,
                         tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x, y, z;
    int32_t adj_x = 0, adj_y = 0;
    if (!product_operands(context, "adj_x", "adj_y", &x, &y, &z, &adj_x, &adj_y, status)) return;
    opencl_device_t *device = opencl_host->kernel_device(context);
    bool doubles = z.dtype == TP_FLOAT64;
    if (!has_dtype(device, doubles, "BatchMatMulV2", status)) return;
    size_t size = doubles ? sizeof(double) : sizeof(float);
    const int64_t *xm = x.dims + x.rank - 2, *ym = y.dims + y.rank - 2;
    int64_t m = z.dims[z.rank - 2], n = z.dims[z.rank - 1], k = adj_x ? xm[0] : xm[1];
    if (z.num_elements == 0) return;
    if (k == 0) {
        zero_fill(context, "BatchMatMulV2", &z, size, status);
        return;
    }
    size_t x_base, y_base, z_base;
    if (!element_offsets(device, "BatchMatMulV2", &x, &y, &z, size, &x_base, &y_base, &z_base,
                         status))
        return;
    size_t products = (size_t)(z.num_elements / (m * n));
    size_t *offsets = malloc(3 * products * sizeof *offsets);
    double *scalars = malloc(2 * products * sizeof *scalars); /* alphas, betas: as doubles */
    if (offsets == NULL || scalars == NULL) {
        free(offsets), free(scalars);
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "BatchMatMulV2 on GPU:%d: out of host memory for %zu products",
                                (int)device->ordinal, products);
        return;
    }
    size_t *x_offsets = offsets, *y_offsets = offsets + products, *z_offsets = y_offsets + products;
    float *float_scalars = (float *)scalars;
    for (size_t p = 0; p < products; p++) {
        x_offsets[p] = x_base + operand_matrix(&x, &z, (int64_t)p) * (size_t)(xm[0] * xm[1]);
        y_offsets[p] = y_base + operand_matrix(&y, &z, (int64_t)p) * (size_t)(ym[0] * ym[1]);
        z_offsets[p] = z_base + p * (size_t)(m * n);
        if (doubles)
            scalars[p] = 1.0, scalars[products + p] = 0.0;
        else
            float_scalars[p] = 1.0f, float_scalars[products + p] = 0.0f;
    }
    CLBlastTranspose ta = adj_x ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = adj_y ? CLBlastTransposeYes : CLBlastTransposeNo;
    size_t lda = (size_t)xm[1], ldb = (size_t)ym[1], ldc = (size_t)n;
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    cl_command_queue queue = stream->queue;
    cl_event event = NULL;
    pthread_mutex_lock(&clblast_mutex);
    CLBlastStatusCode code =
        doubles ? CLBlastDgemmBatched(CLBlastLayoutRowMajor, ta, tb, (size_t)m, (size_t)n,
                                      (size_t)k, scalars, (cl_mem)x.mem, x_offsets, lda,
                                      (cl_mem)y.mem, y_offsets, ldb, scalars + products,
                                      (cl_mem)z.mem, z_offsets, ldc, products, &queue, &event)
                : CLBlastSgemmBatched(CLBlastLayoutRowMajor, ta, tb, (size_t)m, (size_t)n,
                                      (size_t)k, float_scalars, (cl_mem)x.mem, x_offsets, lda,
                                      (cl_mem)y.mem, y_offsets, ldb, float_scalars + products,
                                      (cl_mem)z.mem, z_offsets, ldc, products, &queue, &event);
    pthread_mutex_unlock(&clblast_mutex);
    free(offsets), free(scalars);
    if (code != CLBlastSuccess) {
        if (event != NULL) clReleaseEvent(event);
        clblast_fail(status, device, "BatchMatMulV2",
                     doubles ? "CLBlastDgemmBatched" : "CLBlastSgemmBatched", code);
        return;
    }
    opencl_stream_track(stream, event, "BatchMatMulV2", status);
}

void opencl_register_matmul_kernels(tp_registrar_t *registrar, bool fp64,
                                    tp_plugin_status_t *status) {
    static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    opencl_register(registrar, "MatMul", "T", floats, fp64 ? 2 : 1, NULL, matmul, status);
    opencl_register(registrar, "BatchMatMulV2", "T", floats, fp64 ? 2 : 1, NULL, batch_matmul,
                    status);
}

#else

void opencl_register_matmul_kernels(tp_registrar_t *registrar, bool fp64,
                                    tp_plugin_status_t *status) {
    (void)fp64;
    (void)status;
    opencl_host->log(registrar, TP_LOG_INFO,
                     "the OpenCL plug-in was built without CLBlast: no MatMul or BatchMatMulV2 "
                     "kernel on GPU");
}

#endif
