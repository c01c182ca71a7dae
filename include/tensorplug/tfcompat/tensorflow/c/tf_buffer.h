/* SPDX-License-Identifier: Apache-2.0 */
/* TF_Buffer: bytes with an optional deallocator, as TensorFlow's C API passes them. */
#ifndef TENSORFLOW_C_TF_BUFFER_H_
#define TENSORFLOW_C_TF_BUFFER_H_

#include <stddef.h>

#include "tensorflow/c/c_api_macros.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TF_Buffer {
    const void *data;
    size_t length;
    /* Called by TF_DeleteBuffer on data and length when not NULL. */
    void (*data_deallocator)(void *data, size_t length);
} TF_Buffer;

/* A buffer holding a copy of the `proto_len` bytes at `proto`. */
TF_CAPI_EXPORT extern TF_Buffer *TF_NewBufferFromString(const void *proto, size_t proto_len);
/* An empty buffer. */
TF_CAPI_EXPORT extern TF_Buffer *TF_NewBuffer(void);
TF_CAPI_EXPORT extern void TF_DeleteBuffer(TF_Buffer *buffer);
TF_CAPI_EXPORT extern TF_Buffer TF_GetBuffer(TF_Buffer *buffer);

#ifdef __cplusplus
}
#endif

#endif
