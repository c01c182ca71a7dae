/* SPDX-License-Identifier: Apache-2.0 */
/* MatMul and BatchMatMulV2 through OpenBLAS's cblas_sgemm and cblas_dgemm: a real BLAS,
 * threaded by OpenBLAS; float32 batches where oneDNN's batched matmul takes them
 * (cpu_onednn_matmul.c). float16 and bfloat16 reach sgemm as float32 (cpu_staging.c): their
 * products accumulate in float32 and each result is rounded to nearest even once. */
#include <cblas.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_onednn.h"
#include "cpu_thread_pool.h"

/* A product's two inputs, its output and its two transpose attributes (MatMul's transpose_a
 * and transpose_b, BatchMatMulV2's adj_x and adj_y); false with `status` set when one is
 * missing. */
static bool product_operands(tp_kernel_context_t *context, const char *transpose_a_attr,
                             const char *transpose_b_attr, cpu_tensor_t *a, cpu_tensor_t *b,
                             cpu_tensor_t *c, int32_t *transpose_a, int32_t *transpose_b,
                             tp_plugin_status_t *status) {
    if (!cpu_input(context, 0, a, status) || !cpu_input(context, 1, b, status) ||
        !cpu_output(context, 0, c, status))
        return false;
    tp_cpu_host->kernel_attr_bool(context, transpose_a_attr, transpose_a, status);
    tp_cpu_host->kernel_attr_bool(context, transpose_b_attr, transpose_b, status);
    return !cpu_failed(status);
}

static void matmul(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_pool_park(); /* OpenBLAS brings threads of its own */
    cpu_tensor_t a, b, c;
    int32_t transpose_a = 0, transpose_b = 0;
    if (!product_operands(context, "transpose_a", "transpose_b", &a, &b, &c, &transpose_a,
                          &transpose_b, status))
        return;
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

/* ---- BatchMatMulV2 ---------------------------------------------------------------------- */

/* Where product `index` of the output's batch finds its matrix in an operand of `rank`
 * dimensions: the operand's batch dimensions are the output's last ones, and a dimension of 1
 * repeats its matrix. Counted in matrices. */
static int64_t operand_matrix(const cpu_tensor_t *operand, const cpu_tensor_t *out,
                              int64_t index) {
    int32_t out_batch = out->view.rank - 2, batch = operand->view.rank - 2;
    int64_t matrix = 0, stride = 1;
    for (int32_t d = out_batch - 1; d >= 0; d--) {
        int64_t coordinate = index % out->view.dims[d];
        index /= out->view.dims[d];
        int32_t own = d - (out_batch - batch);
        if (own < 0) break;
        if (operand->view.dims[own] != 1) matrix += coordinate * stride;
        stride *= operand->view.dims[own];
    }
    return matrix;
}

/* float32 batches whose operands are whole or one matrix through oneDNN's batched matmul;
 * the rest one GEMM per product, each threaded by OpenBLAS as MatMul's is. */
static void batch_matmul(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_pool_park(); /* OpenBLAS and oneDNN bring threads of their own */
    cpu_tensor_t x, y, z;
    int32_t adj_x = 0, adj_y = 0;
    if (!product_operands(context, "adj_x", "adj_y", &x, &y, &z, &adj_x, &adj_y, status)) return;
    const int64_t *xm = x.view.dims + x.view.rank - 2, *ym = y.view.dims + y.view.rank - 2;
    int64_t m = z.view.dims[z.view.rank - 2], n = z.view.dims[z.view.rank - 1];
    int64_t k = adj_x ? xm[0] : xm[1];
    if (z.view.num_elements == 0) return;
    if (k == 0) { /* sums of nothing; and a BLAS refuses a leading dimension of 0 */
        memset(z.data, 0, (size_t)z.view.byte_size);
        return;
    }
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
        tp_cpu_host->status_set(status, TP_UNIMPLEMENTED,
                                "BatchMatMulV2: matrix dimensions above 2^31 are beyond the "
                                "BLAS interface");
        return;
    }
    if (cpu_onednn_batch_matmul(&x, &y, &z, adj_x, adj_y, status)) return;
    int lda = (int)xm[1], ldb = (int)ym[1], ldc = (int)n;
    enum CBLAS_TRANSPOSE ta = adj_x ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = adj_y ? CblasTrans : CblasNoTrans;
    int64_t x_size = xm[0] * xm[1], y_size = ym[0] * ym[1], z_size = m * n;
    int64_t products = z.view.num_elements / z_size;
    for (int64_t p = 0; p < products; p++) {
        int64_t xi = operand_matrix(&x, &z, p) * x_size, yi = operand_matrix(&y, &z, p) * y_size;
        if (z.view.dtype == TP_FLOAT32)
            cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, 1.0f,
                        (const float *)x.data + xi, lda, (const float *)y.data + yi, ldb, 0.0f,
                        (float *)z.data + p * z_size, ldc);
        else
            cblas_dgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, 1.0,
                        (const double *)x.data + xi, lda, (const double *)y.data + yi, ldb, 0.0,
                        (double *)z.data + p * z_size, ldc);
    }
}

void cpu_register_matmul_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "MatMul", "T", CPU_FLOATS, matmul, status);
    cpu_register(registrar, "BatchMatMulV2", "T", CPU_FLOATS, batch_matmul, status);
}
