/* SPDX-License-Identifier: Apache-2.0 */
/* TF_Tensor: a typed, shaped buffer. In a kernel the buffer may be device memory (an address
 * the plug-in gave), which only the plug-in reads. */
#ifndef TENSORFLOW_C_TF_TENSOR_H_
#define TENSORFLOW_C_TF_TENSOR_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a kernel wants memory allocated (TF_AllocateTemp). */
typedef struct TF_AllocatorAttributes {
    size_t struct_size;
    TF_Bool on_host; /* host memory instead of the device's */
} TF_AllocatorAttributes;

#define TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE TF_OFFSET_OF_END(TF_AllocatorAttributes, on_host)

typedef struct TF_Tensor TF_Tensor;

/* A tensor over caller-provided `data` of `len` bytes; `deallocator(data, len, arg)` runs when
 * the tensor is deleted (or at once when creation fails). */
TF_CAPI_EXPORT extern TF_Tensor *TF_NewTensor(TF_DataType dtype, const int64_t *dims,
                                              int num_dims, void *data, size_t len,
                                              void (*deallocator)(void *data, size_t len,
                                                                  void *arg),
                                              void *deallocator_arg);
/* A tensor over `len` bytes of new, aligned host memory. */
TF_CAPI_EXPORT extern TF_Tensor *TF_AllocateTensor(TF_DataType dtype, const int64_t *dims,
                                                   int num_dims, size_t len);
/* Never moves here: returns NULL, as TensorFlow does when it cannot. */
TF_CAPI_EXPORT extern TF_Tensor *TF_TensorMaybeMove(TF_Tensor *tensor);
TF_CAPI_EXPORT extern void TF_DeleteTensor(TF_Tensor *tensor);
TF_CAPI_EXPORT extern TF_DataType TF_TensorType(const TF_Tensor *tensor);
/* Changes the shape only; the byte size stays. */
TF_CAPI_EXPORT extern void TF_SetShape(TF_Tensor *tensor, const int64_t *dims, int num_dims);
TF_CAPI_EXPORT extern int TF_NumDims(const TF_Tensor *tensor);
TF_CAPI_EXPORT extern int64_t TF_Dim(const TF_Tensor *tensor, int dim_index);
TF_CAPI_EXPORT extern size_t TF_TensorByteSize(const TF_Tensor *tensor);
TF_CAPI_EXPORT extern void *TF_TensorData(const TF_Tensor *tensor);
TF_CAPI_EXPORT extern int64_t TF_TensorElementCount(const TF_Tensor *tensor);
/* Makes `to` share `from`'s buffer with another dtype and shape of the same byte size. */
TF_CAPI_EXPORT extern void TF_TensorBitcastFrom(const TF_Tensor *from, TF_DataType type,
                                                TF_Tensor *to, const int64_t *new_dims,
                                                int num_new_dims, TF_Status *status);
TF_CAPI_EXPORT extern bool TF_TensorIsAligned(const TF_Tensor *tensor);

#ifdef __cplusplus
}
#endif

#endif
