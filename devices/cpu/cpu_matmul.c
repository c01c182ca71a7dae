/* SPDX-License-Identifier: Apache-2.0 */
/* MatMul through OpenBLAS's cblas_sgemm and cblas_dgemm: a real BLAS, threaded by OpenBLAS.
 * float16 and bfloat16 reach sgemm as float32 (cpu_staging.c): their products accumulate in
 * float32 and each result is rounded to nearest even once. */
#include <cblas.h>

#include "cpu_kernels.h"

static void matmul(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t a, b, c;
    if (!cpu_input(context, 0, &a, status) || !cpu_input(context, 1, &b, status) ||
        !cpu_output(context, 0, &c, status))
        return;
    int32_t transpose_a = 0, transpose_b = 0;
    tp_cpu_host->kernel_attr_bool(context, "transpose_a", &transpose_a, status);
    tp_cpu_host->kernel_attr_bool(context, "transpose_b", &transpose_b, status);
    if (cpu_failed(status)) return;
    int64_t m = c.view.dims[0], n = c.view.dims[1];
    int64_t k = transpose_a ? a.view.dims[0] : a.view.dims[1];
    if (m == 0 || n == 0) return;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
        tp_cpu_host->status_set(status, TP_UNIMPLEMENTED,
                                "MatMul: dimensions above 2^31 are beyond the BLAS interface");
        return;
    }
    /* Row-major, so the leading dimension of each matrix is its stored column count. */
    int lda = (int)a.view.dims[1], ldb = (int)b.view.dims[1], ldc = (int)n;
    enum CBLAS_TRANSPOSE ta = transpose_a ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = transpose_b ? CblasTrans : CblasNoTrans;
    if (c.view.dtype == TP_FLOAT32)
        cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, 1.0f, a.data, lda, b.data,
                    ldb, 0.0f, c.data, ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, 1.0, a.data, lda, b.data,
                    ldb, 0.0, c.data, ldc);
}

void cpu_register_matmul_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "MatMul", "T", CPU_FLOATS, matmul, status);
}
