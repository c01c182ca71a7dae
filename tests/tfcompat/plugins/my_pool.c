/* SPDX-License-Identifier: Apache-2.0 */
/* MY_DEVICE's MaxPool (NHWC, float), whose create_func reads its attributes the ways
 * TensorFlow's kernels do, and writes down what each getter gave, for the test program to
 * compare with TensorFlow's documented semantics (my_device_attribute_report). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my_device.h"
#include "tensorflow/c/kernels.h"

typedef struct pool {
    int32_t window[4], strides[4];
    int same; /* padding SAME, else VALID */
} pool_t;

static char report[1024];

__attribute__((visibility("default"))) const char *my_device_attribute_report(void);
const char *my_device_attribute_report(void) { return report; }

static void note(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *format, ...) {
    size_t used = strlen(report);
    va_list args;
    va_start(args, format);
    vsnprintf(report + used, sizeof report - used, format, args);
    va_end(args);
}

/* Reads the attributes; the first run's readings are the report. */
static void *pool_create(TF_OpKernelConstruction *ctx) {
    pool_t *pool = calloc(1, sizeof *pool);
    TF_Status *status = TF_NewStatus();
    if (pool == NULL || status == NULL) {
        free(pool);
        TF_DeleteStatus(status);
        return NULL;
    }
    int first = report[0] == '\0';
    int32_t list_size = 0, total_size = 0;
    TF_OpKernelConstruction_GetAttrSize(ctx, "ksize", &list_size, &total_size, status);
    if (first) note("ksize size %d/%d; ", (int)list_size, (int)total_size);
    TF_OpKernelConstruction_GetAttrInt32List(ctx, "ksize", pool->window, 4, status);
    /* Two values asked for: the rest of the array stays as it was. */
    int64_t strides[4] = {77, 77, 77, 77};
    TF_OpKernelConstruction_GetAttrInt64List(ctx, "strides", strides, 2, status);
    if (first)
        note("strides cut at 2: %lld %lld %lld; ", (long long)strides[0], (long long)strides[1],
             (long long)strides[2]);
    TF_OpKernelConstruction_GetAttrInt32List(ctx, "strides", pool->strides, 4, status);
    TF_OpKernelConstruction_GetAttrSize(ctx, "padding", &list_size, &total_size, status);
    if (first) note("padding size %d/%d; ", (int)list_size, (int)total_size);
    char padding[8];
    memset(padding, '#', sizeof padding);
    TF_OpKernelConstruction_GetAttrString(ctx, "padding", padding, 3, status);
    if (first) note("padding cut at 3: %.4s; ", padding);
    memset(padding, '#', sizeof padding);
    TF_OpKernelConstruction_GetAttrString(ctx, "padding", padding, sizeof padding, status);
    pool->same = strncmp(padding, "SAME", 4) == 0;
    if (first) note("padding: %.5s; ", padding);
    TF_DataType type = 0;
    TF_OpKernelConstruction_GetAttrType(ctx, "T", &type, status);
    if (first) note("T %d; ", (int)type);
    if (first)
        note("has padding %d, has nothing %d; ",
             (int)TF_OpKernelConstruction_HasAttr(ctx, "padding", status),
             (int)TF_OpKernelConstruction_HasAttr(ctx, "nothing", status));
    if (first) {
        int32_t missing = 5;
        TF_OpKernelConstruction_GetAttrInt32(ctx, "nothing", &missing, status);
        note("int32 nothing: code %d, left %d; ", (int)TF_GetCode(status), (int)missing);
        TF_DataType types[2];
        TF_OpKernelConstruction_GetAttrTypeList(ctx, "T", types, 2, status);
        note("type list: code %d, %s", (int)TF_GetCode(status), TF_Message(status));
    }
    TF_SetStatus(status, TF_OK, "");
    TF_DeleteStatus(status);
    return pool;
}

typedef struct pool_work {
    const float *in;
    float *out;
    int64_t n, h, w, c, oh, ow;
    int32_t kh, kw, sh, sw;
    int64_t pad_top, pad_left;
} pool_work_t;

static void run_pool(void *opaque) {
    pool_work_t *p = opaque;
    for (int64_t b = 0; b < p->n; b++)
        for (int64_t y = 0; y < p->oh; y++)
            for (int64_t x = 0; x < p->ow; x++)
                for (int64_t ch = 0; ch < p->c; ch++) {
                    float best = 0.0f;
                    int any = 0;
                    for (int32_t i = 0; i < p->kh; i++)
                        for (int32_t j = 0; j < p->kw; j++) {
                            int64_t iy = y * p->sh + i - p->pad_top;
                            int64_t ix = x * p->sw + j - p->pad_left;
                            if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) continue;
                            float v = p->in[((b * p->h + iy) * p->w + ix) * p->c + ch];
                            if (!any || v > best || v != v) best = v;
                            any = 1;
                        }
                    p->out[((b * p->oh + y) * p->ow + x) * p->c + ch] = best;
                }
    free(p);
}

/* Output size and padding before, as TensorFlow computes them. */
static int64_t out_size(int64_t size, int32_t window, int32_t stride, int same, int64_t *pad) {
    int64_t out = same ? (size + stride - 1) / stride : (size - window) / stride + 1;
    int64_t needed = (out - 1) * stride + window - size;
    *pad = same && needed > 0 ? needed / 2 : 0;
    return out;
}

static void pool_compute(void *kernel, TF_OpKernelContext *ctx) {
    const pool_t *pool = kernel;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x = NULL, *y = NULL;
    TF_GetInput(ctx, 0, &x, status);
    if (TF_GetCode(status) == TF_OK) {
        pool_work_t *p = malloc(sizeof *p);
        if (p == NULL) {
            TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "MaxPool: out of memory");
        } else {
            *p = (pool_work_t){.n = TF_Dim(x, 0), .h = TF_Dim(x, 1), .w = TF_Dim(x, 2),
                               .c = TF_Dim(x, 3), .kh = pool->window[1], .kw = pool->window[2],
                               .sh = pool->strides[1], .sw = pool->strides[2]};
            p->oh = out_size(p->h, p->kh, p->sh, pool->same, &p->pad_top);
            p->ow = out_size(p->w, p->kw, p->sw, pool->same, &p->pad_left);
            int64_t dims[4] = {p->n, p->oh, p->ow, p->c};
            y = TF_AllocateOutput(ctx, 0, TF_FLOAT, dims, 4, 0, status);
            p->in = y != NULL ? (const float *)my_device_data(ctx, x) : NULL;
            p->out = p->in != NULL ? my_device_data(ctx, y) : NULL;
            if (p->out != NULL && TF_TensorElementCount(y) > 0)
                my_device_queue(ctx, run_pool, p);
            else
                free(p);
        }
    }
    if (TF_GetCode(status) != TF_OK) TF_OpKernelContext_Failure(ctx, status);
    TF_DeleteTensor(x);
    TF_DeleteTensor(y);
    TF_DeleteStatus(status);
}

static void pool_delete(void *kernel) { free(kernel); }

void my_device_register_pool(void) {
    TF_Status *status = TF_NewStatus();
    TF_KernelBuilder *builder =
        TF_NewKernelBuilder("MaxPool", DEVICE_TYPE, pool_create, pool_compute, pool_delete);
    TF_KernelBuilder_TypeConstraint(builder, "T", TF_FLOAT, status);
    TF_RegisterKernelBuilder("MaxPool", builder, status);
    TF_DeleteStatus(status);
}
