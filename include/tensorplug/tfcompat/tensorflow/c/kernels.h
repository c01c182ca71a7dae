/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TensorFlow's kernel C API: how a plug-in registers kernels for TensorFlow's ops and how a
 * kernel reads its inputs and attributes and produces its outputs. In tensorplug the adapter
 * (libtensorplug_tfcompat) implements these functions over the native kernel interface; see
 * docs/tensorflow-plugins.md for the state of each.
 */
#ifndef TENSORFLOW_C_KERNELS_H_
#define TENSORFLOW_C_KERNELS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/experimental/stream_executor/stream_executor.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TF_KernelBuilder TF_KernelBuilder;
typedef struct TF_OpKernelConstruction TF_OpKernelConstruction;
typedef struct TF_OpKernelContext TF_OpKernelContext;

/* Defined by the plug-in: registers its kernels. Called once, after SE_InitPlugin. */
TF_CAPI_EXPORT void TF_InitKernel(void);

/* ---- Registration ---------------------------------------------------------------------- */

/* A builder for a kernel of `op_name` on `device_name` (a device type, "MY_DEVICE" or "GPU").
 * create_func (optional) makes the instance handed to compute_func; delete_func (optional)
 * frees it. Hand the builder to TF_RegisterKernelBuilder, or free it with
 * TF_DeleteKernelBuilder. */
TF_CAPI_EXPORT extern TF_KernelBuilder *TF_NewKernelBuilder(
    const char *op_name, const char *device_name, void *(*create_func)(TF_OpKernelConstruction *),
    void (*compute_func)(void *, TF_OpKernelContext *), void (*delete_func)(void *));
/* Restricts type attribute `attr_name` to `type`; several calls allow several types. */
TF_CAPI_EXPORT extern void TF_KernelBuilder_TypeConstraint(TF_KernelBuilder *kernel_builder,
                                                           const char *attr_name,
                                                           const TF_DataType type,
                                                           TF_Status *status);
/* Asks for argument `arg_name` in host memory. */
TF_CAPI_EXPORT extern void TF_KernelBuilder_HostMemory(TF_KernelBuilder *kernel_builder,
                                                       const char *arg_name);
TF_CAPI_EXPORT extern void TF_KernelBuilder_Priority(TF_KernelBuilder *kernel_builder,
                                                     int32_t priority_number);
/* Takes ownership of `builder`, whether it succeeds or not; `kernel_name` is a label. */
TF_CAPI_EXPORT extern void TF_RegisterKernelBuilder(const char *kernel_name,
                                                    TF_KernelBuilder *builder,
                                                    TF_Status *status);
/* The same, from a serialized KernelDef (NULL: like TF_RegisterKernelBuilder). */
TF_CAPI_EXPORT extern void TF_RegisterKernelBuilderWithKernelDef(
    const char *serialized_kernel_def, const char *name, TF_KernelBuilder *builder,
    TF_Status *status);
TF_CAPI_EXPORT extern void TF_DeleteKernelBuilder(TF_KernelBuilder *builder);

/* ---- Running a kernel ---------------------------------------------------------------- */

/* The plug-in's own stream the kernel enqueues its work on. */
TF_CAPI_EXPORT extern SP_Stream TF_GetStream(TF_OpKernelContext *ctx, TF_Status *status);
TF_CAPI_EXPORT extern int TF_NumInputs(TF_OpKernelContext *ctx);
TF_CAPI_EXPORT extern int TF_NumOutputs(TF_OpKernelContext *ctx);
/* Input `i` as a new tensor the caller deletes; deleting it frees no device memory.
 * TF_OUT_OF_RANGE for a bad index, leaving *tensor alone. */
TF_CAPI_EXPORT extern void TF_GetInput(TF_OpKernelContext *ctx, int i, TF_Tensor **tensor,
                                       TF_Status *status);

typedef struct {
    size_t struct_size;
    void *priv;
    int start;         /* output */
    int stop;          /* output */
    TF_Status *status; /* output */
} TF_InputRange_Args;
/* A macro rather than a constant, so that the header may be included by several C files. */
#define TF_InputRange_Args_STRUCT_SIZE TF_OFFSET_OF_END(TF_InputRange_Args, status)

/* The inputs [start, stop) that input argument `name` of the op covers. */
TF_CAPI_EXPORT extern void TF_InputRange(TF_OpKernelContext *ctx, const char *name,
                                         TF_InputRange_Args *args);
/* Makes output `i` hold `tensor`'s values. */
TF_CAPI_EXPORT extern void TF_SetOutput(TF_OpKernelContext *ctx, int i, const TF_Tensor *tensor,
                                        TF_Status *status);
/* Record a failure: of the kernel's creation, or of this run, whose outputs then carry it. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_Failure(TF_OpKernelConstruction *ctx,
                                                           TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelContext_Failure(TF_OpKernelContext *ctx,
                                                      TF_Status *status);
TF_CAPI_EXPORT extern TF_DataType TF_ExpectedOutputDataType(TF_OpKernelContext *ctx, int i);
TF_CAPI_EXPORT extern int64_t TF_StepId(TF_OpKernelContext *ctx);
/* Strings owned by the kernel instance. */
TF_CAPI_EXPORT extern TF_StringView TF_GetOpKernelName(TF_OpKernelContext *ctx);
TF_CAPI_EXPORT extern TF_StringView TF_GetOpKernelRequestedInput(TF_OpKernelContext *ctx,
                                                                 size_t index);

/* ---- Attributes, while a kernel is created ------------------------------------------- */

/* list_size: the list's length, -1 for a single value. total_size: bytes of a string (all
 * strings of a list), the rank of a shape (-1 unknown), dimensions of a shape list; else -1. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrSize(TF_OpKernelConstruction *ctx,
                                                               const char *attr_name,
                                                               int32_t *list_size,
                                                               int32_t *total_size,
                                                               TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrType(TF_OpKernelConstruction *ctx,
                                                               const char *attr_name,
                                                               TF_DataType *val,
                                                               TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrInt32(TF_OpKernelConstruction *ctx,
                                                                const char *attr_name,
                                                                int32_t *val, TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrInt64(TF_OpKernelConstruction *ctx,
                                                                const char *attr_name,
                                                                int64_t *val, TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrFloat(TF_OpKernelConstruction *ctx,
                                                                const char *attr_name,
                                                                float *val, TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrBool(TF_OpKernelConstruction *ctx,
                                                               const char *attr_name,
                                                               TF_Bool *val, TF_Status *status);
/* Copies at most max_length bytes and no NUL. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrString(TF_OpKernelConstruction *ctx,
                                                                 const char *attr_name,
                                                                 char *val, size_t max_length,
                                                                 TF_Status *status);
/* A new host tensor the caller deletes. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrTensor(TF_OpKernelConstruction *ctx,
                                                                 const char *attr_name,
                                                                 TF_Tensor **val,
                                                                 TF_Status *status);
/* The list getters copy at most max_vals values. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrTypeList(
    TF_OpKernelConstruction *ctx, const char *attr_name, TF_DataType *vals, int max_vals,
    TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrInt32List(
    TF_OpKernelConstruction *ctx, const char *attr_name, int32_t *vals, int max_vals,
    TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrInt64List(
    TF_OpKernelConstruction *ctx, const char *attr_name, int64_t *vals, int max_vals,
    TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrFloatList(
    TF_OpKernelConstruction *ctx, const char *attr_name, float *vals, int max_vals,
    TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrBoolList(
    TF_OpKernelConstruction *ctx, const char *attr_name, TF_Bool *vals, int max_vals,
    TF_Status *status);
/* vals[i] points into `storage`, lengths[i] is its length (no NUL). */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrStringList(
    TF_OpKernelConstruction *ctx, const char *attr_name, char **vals, size_t *lengths,
    int max_values, void *storage, size_t storage_size, TF_Status *status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrTensorList(
    TF_OpKernelConstruction *ctx, const char *attr_name, TF_Tensor **vals, int max_values,
    TF_Status *status);
TF_CAPI_EXPORT extern bool TF_OpKernelConstruction_HasAttr(TF_OpKernelConstruction *ctx,
                                                           const char *attr_name,
                                                           TF_Status *status);
TF_CAPI_EXPORT extern TF_StringView TF_OpKernelConstruction_GetName(
    TF_OpKernelConstruction *ctx);

/* ---- Memory of a running kernel ------------------------------------------------------- */

/* Output `index` with shape `dims`, a tensor the caller deletes (freeing no device memory). */
TF_CAPI_EXPORT TF_Tensor *TF_AllocateOutput(TF_OpKernelContext *context, int index,
                                            TF_DataType dtype, const int64_t *dims,
                                            int num_dims, size_t len, TF_Status *status);
/* Sets *forwarded_input to the input reused, or -1 when a new output was allocated. */
TF_CAPI_EXPORT TF_Tensor *TF_ForwardInputOrAllocateOutput(
    TF_OpKernelContext *context, const int *candidate_input_indices,
    int num_candidate_input_indices, int output_index, const int64_t *output_dims,
    int output_num_dims, int *forwarded_input, TF_Status *status);
/* Scratch memory, valid until the kernel's work on its stream is done. */
TF_CAPI_EXPORT extern TF_Tensor *TF_AllocateTemp(TF_OpKernelContext *context,
                                                 TF_DataType dtype, const int64_t *dims,
                                                 int num_dims,
                                                 TF_AllocatorAttributes *alloc_attrs,
                                                 TF_Status *status);

#ifdef __cplusplus
}
#endif

#endif
