/* SPDX-License-Identifier: Apache-2.0 */
/* tensorplug's TensorFlow compatibility headers: the macros every other header uses. Names and
 * meanings follow TensorFlow's plug-in C API so that a plug-in's source builds unchanged. */
#ifndef TENSORFLOW_C_C_API_MACROS_H_
#define TENSORFLOW_C_C_API_MACROS_H_

#include <stddef.h>

#if defined(_WIN32)
#define TF_CAPI_EXPORT __declspec(dllexport)
#else
#define TF_CAPI_EXPORT __attribute__((visibility("default")))
#endif

/* One byte, so that the structs keep TensorFlow's layout whatever bool is in C. */
#define TF_Bool unsigned char

/* Where member `member` of struct `type` ends: the value of every *_STRUCT_SIZE macro. */
#define TF_OFFSET_OF_END(type, member) \
    (offsetof(type, member) + sizeof(((type *)0)->member))

#endif
