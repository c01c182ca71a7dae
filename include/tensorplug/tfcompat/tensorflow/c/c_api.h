/* SPDX-License-Identifier: Apache-2.0 */
/* The part of TensorFlow's c_api.h that plug-ins use: TF_Buffer and TF_StringView. The rest of
 * that header (graphs, sessions) is outside what tensorplug offers plug-ins. */
#ifndef TENSORFLOW_C_C_API_H_
#define TENSORFLOW_C_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_buffer.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A string that is not NUL-terminated: `len` bytes at `data`. */
typedef struct TF_StringView {
    const char *data;
    size_t len;
} TF_StringView;

#ifdef __cplusplus
}
#endif

#endif
