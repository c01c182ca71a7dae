/* SPDX-License-Identifier: Apache-2.0 */
/* MY_DEVICE's kernels, registered by TF_InitKernel as a TensorFlow plug-in registers them.
 * Each checks its tensors' device addresses when it runs (an address the host made up, or a
 * host address, fails the kernel instead of being read) and queues its arithmetic on the
 * stream TF_GetStream gives, behind the copies that bring its inputs. Also registered, to be
 * skipped with one line each: a kernel for an op tensorplug lacks, one for a dtype it lacks,
 * and one that wants host memory. The FAILING_DEVICE build has Relu, Neg, which always
 * fails, and Abs, which asks for an output of the wrong shape. */
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

void *my_device_data(TF_OpKernelContext *ctx, const TF_Tensor *tensor) {
    size_t bytes = TF_TensorByteSize(tensor);
    if (bytes == 0) return NULL;
    void *data = my_device_host_address(TF_TensorData(tensor), bytes);
    if (data == NULL) fail(ctx, TF_INTERNAL, "a tensor outside " DEVICE_TYPE "'s memory");
    return data;
}

void my_device_queue(TF_OpKernelContext *ctx, my_task_fn fn, void *work) {
    TF_Status *status = TF_NewStatus();
    SP_Stream stream = status != NULL ? TF_GetStream(ctx, status) : NULL;
    if (stream == NULL || !my_stream_is_mine(stream)) {
        fail(ctx, TF_INTERNAL, "TF_GetStream gave no stream of " DEVICE_TYPE);
        free(work);
    } else if (!my_stream_enqueue(stream, fn, work)) {
        fail(ctx, TF_RESOURCE_EXHAUSTED, "no memory to queue a kernel");
        free(work);
    }
    TF_DeleteStatus(status);
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

typedef struct relu_work {
    const void *in;
    void *out;
    int64_t n;
    TF_DataType dtype;
} relu_work_t;

/* max(x, 0) that keeps NaN, as the CPU's Relu does. */
static void run_relu(void *opaque) {
    relu_work_t *w = opaque;
    for (int64_t i = 0; i < w->n; i++) {
        if (w->dtype == TF_FLOAT) {
            float x = ((const float *)w->in)[i];
            ((float *)w->out)[i] = x < 0 ? 0.0f : x;
        } else {
            double x = ((const double *)w->in)[i];
            ((double *)w->out)[i] = x < 0 ? 0.0 : x;
        }
    }
    free(w);
}

static void relu_compute(void *kernel, TF_OpKernelContext *ctx) {
    (void)kernel;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x, *y;
    if (unary_begin(ctx, status, &x, &y) && TF_TensorElementCount(x) > 0) {
        relu_work_t *w = malloc(sizeof *w);
        if (w != NULL) {
            *w = (relu_work_t){my_device_data(ctx, x), my_device_data(ctx, y),
                               TF_TensorElementCount(x), TF_TensorType(x)};
            if (w->in != NULL && w->out != NULL) my_device_queue(ctx, run_relu, w);
            else free(w);
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

typedef struct matmul_work {
    const float *a, *b;
    float *c;
    int64_t m, k, n;
    TF_Bool transpose_a, transpose_b;
} matmul_work_t;

/* Each sum in order of k, in float. */
static void run_matmul(void *opaque) {
    matmul_work_t *w = opaque;
    for (int64_t i = 0; i < w->m; i++) {
        for (int64_t j = 0; j < w->n; j++) {
            float sum = 0.0f;
            for (int64_t p = 0; p < w->k; p++) {
                float va = w->transpose_a ? w->a[p * w->m + i] : w->a[i * w->k + p];
                float vb = w->transpose_b ? w->b[j * w->k + p] : w->b[p * w->n + j];
                sum += va * vb;
            }
            w->c[i * w->n + j] = sum;
        }
    }
    free(w);
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
        matmul_work_t *w = c != NULL && m * n > 0 ? malloc(sizeof *w) : NULL;
        if (w != NULL) {
            *w = (matmul_work_t){k > 0 ? my_device_data(ctx, a) : NULL,
                                 k > 0 ? my_device_data(ctx, b) : NULL, my_device_data(ctx, c),
                                 m, k, n, kernel->transpose_a, kernel->transpose_b};
            if (w->c != NULL && (k == 0 || (w->a != NULL && w->b != NULL)))
                my_device_queue(ctx, run_matmul, w);
            else
                free(w);
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

typedef struct add_work {
    const char *x, *y;
    char *z;
    TF_DataType dtype;
    int rank;
    int64_t dims[MAX_DIMS], x_dims[MAX_DIMS], y_dims[MAX_DIMS]; /* aligned right, 1-padded */
} add_work_t;

/* The element of an input of dims `in_dims` (padded to the output's rank) that output element
 * `flat` reads. */
static int64_t broadcast_index(const int64_t *in_dims, const int64_t *dims, int rank,
                               int64_t flat) {
    int64_t index = 0, stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int64_t coordinate = flat % dims[d];
        flat /= dims[d];
        index += (in_dims[d] == 1 ? 0 : coordinate) * stride;
        stride *= in_dims[d];
    }
    return index;
}

static void run_add(void *opaque) {
    add_work_t *w = opaque;
    int64_t count = 1;
    for (int d = 0; d < w->rank; d++) count *= w->dims[d];
    for (int64_t i = 0; i < count; i++) {
        int64_t ix = broadcast_index(w->x_dims, w->dims, w->rank, i);
        int64_t iy = broadcast_index(w->y_dims, w->dims, w->rank, i);
        if (w->dtype == TF_FLOAT)
            ((float *)w->z)[i] = ((const float *)w->x)[ix] + ((const float *)w->y)[iy];
        else /* int32, wrapping as the CPU's does */
            ((int32_t *)w->z)[i] = (int32_t)((uint32_t)((const int32_t *)w->x)[ix] +
                                             (uint32_t)((const int32_t *)w->y)[iy]);
    }
    free(w);
}

/* The output shape of x + y, and both inputs' dims padded to its rank; 0 if they do not
 * broadcast. */
static int broadcast_shape(const TF_Tensor *x, const TF_Tensor *y, add_work_t *w) {
    int rx = TF_NumDims(x), ry = TF_NumDims(y);
    w->rank = rx > ry ? rx : ry;
    if (w->rank > MAX_DIMS) return 0;
    for (int d = 0; d < w->rank; d++) {
        w->x_dims[d] = d - (w->rank - rx) >= 0 ? TF_Dim(x, d - (w->rank - rx)) : 1;
        w->y_dims[d] = d - (w->rank - ry) >= 0 ? TF_Dim(y, d - (w->rank - ry)) : 1;
        if (w->x_dims[d] != w->y_dims[d] && w->x_dims[d] != 1 && w->y_dims[d] != 1) return 0;
        w->dims[d] = w->x_dims[d] == 1 ? w->y_dims[d] : w->x_dims[d];
    }
    return 1;
}

static void add_compute(void *kernel, TF_OpKernelContext *ctx) {
    (void)kernel;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x = NULL, *y = NULL, *z = NULL;
    add_work_t *w = calloc(1, sizeof *w);
    if (w == NULL) TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "AddV2: out of memory");
    if (TF_GetCode(status) == TF_OK) TF_GetInput(ctx, 0, &x, status);
    if (TF_GetCode(status) == TF_OK) TF_GetInput(ctx, 1, &y, status);
    if (TF_GetCode(status) == TF_OK && !broadcast_shape(x, y, w))
        TF_SetStatus(status, TF_INVALID_ARGUMENT, "AddV2: the shapes do not broadcast");
    if (TF_GetCode(status) == TF_OK) {
        int64_t count = 1;
        for (int d = 0; d < w->rank; d++) count *= w->dims[d];
        w->dtype = TF_TensorType(x);
        z = TF_AllocateOutput(ctx, 0, w->dtype, w->dims, w->rank,
                              (size_t)count * TF_DataTypeSize(w->dtype), status);
        if (z != NULL && count > 0) {
            w->x = my_device_data(ctx, x);
            w->y = my_device_data(ctx, y);
            w->z = my_device_data(ctx, z);
            if (w->x != NULL && w->y != NULL && w->z != NULL) {
                my_device_queue(ctx, run_add, w);
                w = NULL;
            }
        }
    }
    if (TF_GetCode(status) != TF_OK) TF_OpKernelContext_Failure(ctx, status);
    free(w);
    TF_DeleteTensor(x);
    TF_DeleteTensor(y);
    TF_DeleteTensor(z);
    TF_DeleteStatus(status);
}

/* ---- Square: computed into a temporary on the kernel's stream, then set as the output ------ */

typedef struct square_work {
    const float *in;
    float *out;
    int64_t n;
} square_work_t;

static void run_square(void *opaque) {
    square_work_t *w = opaque;
    for (int64_t i = 0; i < w->n; i++) w->out[i] = w->in[i] * w->in[i];
    free(w);
}

static void square_compute(void *kernel, TF_OpKernelContext *ctx) {
    (void)kernel;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x = NULL, *temp = NULL;
    TF_GetInput(ctx, 0, &x, status);
    if (TF_GetCode(status) == TF_OK) {
        int64_t dims[MAX_DIMS];
        int rank = TF_NumDims(x);
        for (int d = 0; d < rank && d < MAX_DIMS; d++) dims[d] = TF_Dim(x, d);
        TF_AllocatorAttributes attributes = {TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE, 0};
        temp = TF_AllocateTemp(ctx, TF_FLOAT, dims, rank, &attributes, status);
    }
    if (TF_GetCode(status) == TF_OK && TF_TensorElementCount(x) > 0) {
        square_work_t *w = malloc(sizeof *w);
        if (w != NULL) {
            *w = (square_work_t){my_device_data(ctx, x), my_device_data(ctx, temp),
                                 TF_TensorElementCount(x)};
            if (w->in != NULL && w->out != NULL) my_device_queue(ctx, run_square, w);
            else free(w);
        }
    }
    /* The output is another buffer: the host copies the temporary into it, on the stream. */
    if (TF_GetCode(status) == TF_OK) TF_SetOutput(ctx, 0, temp, status);
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

/* ---- Abs: asks for an output of another shape than the op's, which must fail clearly ------ */

static void wrong_shape_compute(void *kernel, TF_OpKernelContext *ctx) {
    (void)kernel;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x = NULL;
    TF_GetInput(ctx, 0, &x, status);
    if (TF_GetCode(status) == TF_OK) {
        int64_t dims[2] = {TF_Dim(x, 0), 1};
        TF_Tensor *y = TF_AllocateOutput(ctx, 0, TF_FLOAT, dims, 2, 0, status);
        TF_DeleteTensor(y);
    }
    if (TF_GetCode(status) != TF_OK) TF_OpKernelContext_Failure(ctx, status);
    TF_DeleteTensor(x);
    TF_DeleteStatus(status);
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
        fprintf(stderr, DEVICE_TYPE ": registering %s failed: %s\n", op, TF_Message(status));
    TF_DeleteStatus(status);
}

void TF_InitKernel(void) {
    static const TF_DataType float_only[] = {TF_FLOAT};
    static const TF_DataType floats[] = {TF_FLOAT, TF_DOUBLE};
    add_kernel("Relu", NULL, relu_compute, NULL, floats, 2, NULL);
#ifdef MY_DEVICE_FAILING
    add_kernel("Neg", NULL, neg_compute, NULL, float_only, 1, NULL);
    add_kernel("Abs", NULL, wrong_shape_compute, NULL, float_only, 1, NULL);
    (void)matmul_create, (void)matmul_compute, (void)matmul_delete, (void)add_compute,
        (void)square_compute;
#else
    static const TF_DataType add_types[] = {TF_FLOAT, TF_INT32};
    static const TF_DataType strings[] = {TF_STRING};
    (void)neg_compute, (void)wrong_shape_compute;
    add_kernel("MatMul", matmul_create, matmul_compute, matmul_delete, float_only, 1, NULL);
    add_kernel("AddV2", NULL, add_compute, NULL, add_types, 2, NULL);
    add_kernel("Square", NULL, square_compute, NULL, float_only, 1, NULL);
    my_device_register_pool();
    /* Each skipped, with one line. */
    add_kernel("Conv3D", NULL, relu_compute, NULL, float_only, 1, NULL);
    add_kernel("Identity", NULL, relu_compute, NULL, strings, 1, NULL);
    add_kernel("Sqrt", NULL, relu_compute, NULL, float_only, 1, "x");
#endif
}

/* A graph optimizer, which tensorplug reports as not supported and loads the plug-in without. */
void TF_InitGraph(TP_OptimizerRegistrationParams *params, TF_Status *status) {
    (void)params;
    TF_SetStatus(status, TF_OK, "");
}
