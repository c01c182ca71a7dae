/* SPDX-License-Identifier: Apache-2.0 */
/* MY_DEVICE's kernels, registered by TF_InitKernel as a TensorFlow plug-in registers them.
 * Each reads its inputs' device addresses through my_device_host_address, so an address the
 * host made up, or a host address, fails the kernel instead of being read. Also registered,
 * to be skipped with one line each: a kernel for an op tensorplug lacks, one for a dtype it
 * lacks, and one that wants host memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my_device.h"
#include "tensorflow/c/experimental/grappler/grappler.h"
#include "tensorflow/c/kernels.h"

enum { MAX_DIMS = 8 };

static void fail(TF_OpKernelContext *ctx, TF_Code code, const char *message) {
    TF_Status *status = TF_NewStatus();
    if (status == NULL) return;
    TF_SetStatus(status, code, message);
    TF_OpKernelContext_Failure(ctx, status);
    TF_DeleteStatus(status);
}

/* The host address of a tensor's data on the device; NULL, with the kernel failed, if the
 * tensor is not in the device's memory. */
static void *data_of(TF_OpKernelContext *ctx, const TF_Tensor *tensor) {
    size_t bytes = TF_TensorByteSize(tensor);
    if (bytes == 0) return NULL;
    void *data = my_device_host_address(TF_TensorData(tensor), bytes);
    if (data == NULL) fail(ctx, TF_INTERNAL, "a tensor outside " DEVICE_TYPE "'s memory");
    return data;
}

/* Input 0 and an output of its shape: what every element-wise kernel starts with. */
static int unary_begin(TF_OpKernelContext *ctx, TF_Status *status, TF_Tensor **x,
                       TF_Tensor **y) {
    *x = NULL;
    *y = NULL;
    TF_GetInput(ctx, 0, x, status);
    if (TF_GetCode(status) != TF_OK) return 0;
    int64_t dims[MAX_DIMS];
    int rank = TF_NumDims(*x);
    for (int d = 0; d < rank && d < MAX_DIMS; d++) dims[d] = TF_Dim(*x, d);
    *y = TF_AllocateOutput(ctx, 0, TF_TensorType(*x), dims, rank, TF_TensorByteSize(*x),
                           status);
    return TF_GetCode(status) == TF_OK;
}

static void relu_compute(void *kernel, TF_OpKernelContext *ctx) {
    (void)kernel;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x, *y;
    if (unary_begin(ctx, status, &x, &y)) {
        void *in = data_of(ctx, x), *out = data_of(ctx, y);
        int64_t n = TF_TensorElementCount(x);
        if (in != NULL && out != NULL && TF_TensorType(x) == TF_FLOAT) {
            for (int64_t i = 0; i < n; i++)
                ((float *)out)[i] = ((float *)in)[i] > 0 ? ((float *)in)[i] : 0.0f;
        } else if (in != NULL && out != NULL) {
            for (int64_t i = 0; i < n; i++)
                ((double *)out)[i] = ((double *)in)[i] > 0 ? ((double *)in)[i] : 0.0;
        }
    }
    if (TF_GetCode(status) != TF_OK) TF_OpKernelContext_Failure(ctx, status);
    TF_DeleteTensor(x);
    TF_DeleteTensor(y);
    TF_DeleteStatus(status);
}

/* ---- MatMul: transposes read once, when the kernel is created ---------------------------- */

typedef struct matmul {
    TF_Bool transpose_a, transpose_b;
} matmul_t;

static void *matmul_create(TF_OpKernelConstruction *construction) {
    matmul_t *kernel = calloc(1, sizeof *kernel);
    TF_Status *status = TF_NewStatus();
    if (kernel != NULL) {
        TF_OpKernelConstruction_GetAttrBool(construction, "transpose_a", &kernel->transpose_a,
                                            status);
        if (TF_GetCode(status) == TF_OK)
            TF_OpKernelConstruction_GetAttrBool(construction, "transpose_b",
                                                &kernel->transpose_b, status);
        if (TF_GetCode(status) != TF_OK) TF_OpKernelConstruction_Failure(construction, status);
    }
    TF_DeleteStatus(status);
    return kernel;
}

static void matmul_compute(void *opaque, TF_OpKernelContext *ctx) {
    const matmul_t *kernel = opaque;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *a = NULL, *b = NULL, *c = NULL;
    TF_GetInput(ctx, 0, &a, status);
    if (TF_GetCode(status) == TF_OK) TF_GetInput(ctx, 1, &b, status);
    if (TF_GetCode(status) == TF_OK) {
        int64_t m = TF_Dim(a, kernel->transpose_a ? 1 : 0);
        int64_t k = TF_Dim(a, kernel->transpose_a ? 0 : 1);
        int64_t n = TF_Dim(b, kernel->transpose_b ? 0 : 1);
        int64_t dims[2] = {m, n};
        c = TF_AllocateOutput(ctx, 0, TF_FLOAT, dims, 2, (size_t)(m * n) * sizeof(float),
                              status);
        const float *pa = c != NULL ? data_of(ctx, a) : NULL;
        const float *pb = pa != NULL ? data_of(ctx, b) : NULL;
        float *pc = pb != NULL ? data_of(ctx, c) : NULL;
        /* Each sum in order of k, in float, as the CPU device sums. */
        for (int64_t i = 0; pc != NULL && i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                float sum = 0.0f;
                for (int64_t p = 0; p < k; p++) {
                    float va = kernel->transpose_a ? pa[p * m + i] : pa[i * k + p];
                    float vb = kernel->transpose_b ? pb[j * k + p] : pb[p * n + j];
                    sum += va * vb;
                }
                pc[i * n + j] = sum;
            }
        }
    }
    if (TF_GetCode(status) != TF_OK) TF_OpKernelContext_Failure(ctx, status);
    TF_DeleteTensor(a);
    TF_DeleteTensor(b);
    TF_DeleteTensor(c);
    TF_DeleteStatus(status);
}

static void matmul_delete(void *kernel) { free(kernel); }

/* ---- AddV2, broadcasting as NumPy does ----------------------------------------------------- */

/* The element of `t` (of rank `rank`, dims aligned right against `out_dims`) that output index
 * `flat` reads. */
static int64_t broadcast_index(const TF_Tensor *t, const int64_t *out_dims, int out_rank,
                               int64_t flat) {
    int rank = TF_NumDims(t);
    int64_t index = 0, stride = 1;
    for (int d = out_rank - 1; d >= 0; d--) {
        int64_t coordinate = flat % out_dims[d];
        flat /= out_dims[d];
        int td = d - (out_rank - rank);
        if (td < 0) continue;
        int64_t size = TF_Dim(t, td);
        index += (size == 1 ? 0 : coordinate) * stride;
        stride *= size;
    }
    return index;
}

static void add_compute(void *kernel, TF_OpKernelContext *ctx) {
    (void)kernel;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x = NULL, *y = NULL, *z = NULL;
    TF_GetInput(ctx, 0, &x, status);
    if (TF_GetCode(status) == TF_OK) TF_GetInput(ctx, 1, &y, status);
    int64_t dims[MAX_DIMS];
    int rank = 0;
    if (TF_GetCode(status) == TF_OK) {
        int rx = TF_NumDims(x), ry = TF_NumDims(y);
        rank = rx > ry ? rx : ry;
        for (int d = 0; d < rank; d++) {
            int64_t dx = d - (rank - rx) >= 0 ? TF_Dim(x, d - (rank - rx)) : 1;
            int64_t dy = d - (rank - ry) >= 0 ? TF_Dim(y, d - (rank - ry)) : 1;
            if (dx != dy && dx != 1 && dy != 1) {
                TF_SetStatus(status, TF_INVALID_ARGUMENT, "AddV2: shapes do not broadcast");
                break;
            }
            dims[d] = dx == 1 ? dy : dx;
        }
    }
    if (TF_GetCode(status) == TF_OK) {
        int64_t count = 1;
        for (int d = 0; d < rank; d++) count *= dims[d];
        size_t element = TF_DataTypeSize(TF_TensorType(x));
        z = TF_AllocateOutput(ctx, 0, TF_TensorType(x), dims, rank, (size_t)count * element,
                              status);
        const char *px = z != NULL ? data_of(ctx, x) : NULL;
        const char *py = px != NULL ? data_of(ctx, y) : NULL;
        char *pz = py != NULL ? data_of(ctx, z) : NULL;
        for (int64_t i = 0; pz != NULL && i < count; i++) {
            int64_t ix = broadcast_index(x, dims, rank, i), iy = broadcast_index(y, dims, rank, i);
            if (TF_TensorType(x) == TF_FLOAT)
                ((float *)pz)[i] = ((const float *)px)[ix] + ((const float *)py)[iy];
            else
                ((int32_t *)pz)[i] = (int32_t)((uint32_t)((const int32_t *)px)[ix] +
                                               (uint32_t)((const int32_t *)py)[iy]);
        }
    }
    if (TF_GetCode(status) != TF_OK) TF_OpKernelContext_Failure(ctx, status);
    TF_DeleteTensor(x);
    TF_DeleteTensor(y);
    TF_DeleteTensor(z);
    TF_DeleteStatus(status);
}

/* ---- Square: computed into a temporary on the kernel's stream, then set as the output ------ */

static void square_compute(void *kernel, TF_OpKernelContext *ctx) {
    (void)kernel;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x = NULL, *temp = NULL;
    SP_Stream stream = TF_GetStream(ctx, status);
    if (TF_GetCode(status) == TF_OK && !my_device_is_stream(stream))
        TF_SetStatus(status, TF_INTERNAL, "TF_GetStream gave a stream that is not mine");
    if (TF_GetCode(status) == TF_OK) TF_GetInput(ctx, 0, &x, status);
    if (TF_GetCode(status) == TF_OK) {
        int64_t dims[MAX_DIMS];
        int rank = TF_NumDims(x);
        for (int d = 0; d < rank && d < MAX_DIMS; d++) dims[d] = TF_Dim(x, d);
        TF_AllocatorAttributes attributes = {TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE, 0};
        temp = TF_AllocateTemp(ctx, TF_FLOAT, dims, rank, &attributes, status);
    }
    if (TF_GetCode(status) == TF_OK) {
        const float *in = data_of(ctx, x);
        float *out = in != NULL ? data_of(ctx, temp) : NULL;
        int64_t n = TF_TensorElementCount(x);
        for (int64_t i = 0; out != NULL && i < n; i++) out[i] = in[i] * in[i];
        /* The output is another buffer: the host copies the temporary into it. */
        if (out != NULL) TF_SetOutput(ctx, 0, temp, status);
    }
    if (TF_GetCode(status) != TF_OK) TF_OpKernelContext_Failure(ctx, status);
    TF_DeleteTensor(x);
    TF_DeleteTensor(temp);
    TF_DeleteStatus(status);
}

/* ---- Neg: always fails, so that the failure's path is seen ------------------------------- */

static void neg_compute(void *kernel, TF_OpKernelContext *ctx) {
    (void)kernel;
    fail(ctx, TF_DATA_LOSS, DEVICE_TYPE "'s Neg always fails");
}

/* ---- Registration ------------------------------------------------------------------------- */

static void add_kernel(const char *op, void *(*create)(TF_OpKernelConstruction *),
                       void (*compute)(void *, TF_OpKernelContext *), void (*destroy)(void *),
                       const TF_DataType *types, int num_types, const char *host_memory) {
    TF_Status *status = TF_NewStatus();
    TF_KernelBuilder *builder = TF_NewKernelBuilder(op, DEVICE_TYPE, create, compute, destroy);
    for (int i = 0; i < num_types && TF_GetCode(status) == TF_OK; i++)
        TF_KernelBuilder_TypeConstraint(builder, "T", types[i], status);
    if (host_memory != NULL) TF_KernelBuilder_HostMemory(builder, host_memory);
    if (TF_GetCode(status) == TF_OK) TF_RegisterKernelBuilder(op, builder, status);
    else TF_DeleteKernelBuilder(builder);
    if (TF_GetCode(status) != TF_OK)
        fprintf(stderr, "my_device: registering %s failed: %s\n", op, TF_Message(status));
    TF_DeleteStatus(status);
}

void TF_InitKernel(void) {
    static const TF_DataType floats[] = {TF_FLOAT, TF_DOUBLE};
    static const TF_DataType float_only[] = {TF_FLOAT};
    static const TF_DataType add_types[] = {TF_FLOAT, TF_INT32};
    static const TF_DataType strings[] = {TF_STRING};
    add_kernel("Relu", NULL, relu_compute, NULL, floats, 2, NULL);
    add_kernel("MatMul", matmul_create, matmul_compute, matmul_delete, float_only, 1, NULL);
    add_kernel("AddV2", NULL, add_compute, NULL, add_types, 2, NULL);
    add_kernel("Square", NULL, square_compute, NULL, float_only, 1, NULL);
    add_kernel("Neg", NULL, neg_compute, NULL, float_only, 1, NULL);
    /* Each skipped, with one line. */
    add_kernel("Conv3D", NULL, relu_compute, NULL, float_only, 1, NULL);
    add_kernel("Identity", NULL, relu_compute, NULL, strings, 1, NULL);
    add_kernel("Sqrt", NULL, relu_compute, NULL, float_only, 1, "x");
}

/* A graph optimizer, which tensorplug reports as not supported and loads the plug-in without. */
void TF_InitGraph(TP_OptimizerRegistrationParams *params, TF_Status *status) {
    (void)params;
    TF_SetStatus(status, TF_OK, "");
}
