/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TensorFlow's pluggable profiler C API, declared so that plug-ins defining TF_InitProfiler
 * compile. tensorplug does not call TF_InitProfiler yet: it reports it as not supported (one
 * line) and loads the plug-in's devices and kernels regardless.
 */
#ifndef TENSORFLOW_C_EXPERIMENTAL_PLUGGABLE_PROFILER_PLUGGABLE_PROFILER_H_
#define TENSORFLOW_C_EXPERIMENTAL_PLUGGABLE_PROFILER_PLUGGABLE_PROFILER_H_

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_status.h"

#define TP_MAJOR 0
#define TP_MINOR 0
#define TP_PATCH 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TP_Profiler {
    size_t struct_size;
    void *ext;
    const char *device_type;
} TP_Profiler;

#define TP_PROFILER_STRUCT_SIZE TF_OFFSET_OF_END(TP_Profiler, device_type)

typedef struct TP_ProfilerFns {
    size_t struct_size;
    void *ext;
    void (*start)(const TP_Profiler *profiler, TF_Status *status);
    void (*stop)(const TP_Profiler *profiler, TF_Status *status);
    /* With buffer NULL, sets *size_in_bytes; otherwise fills buffer with a serialized XSpace. */
    void (*collect_data_xspace)(const TP_Profiler *profiler, uint8_t *buffer,
                                size_t *size_in_bytes, TF_Status *status);
} TP_ProfilerFns;

#define TP_PROFILER_FNS_STRUCT_SIZE TF_OFFSET_OF_END(TP_ProfilerFns, collect_data_xspace)

typedef struct TF_ProfilerRegistrationParams {
    size_t struct_size;
    void *ext;
    int32_t major_version;
    int32_t minor_version;
    int32_t patch_version;
    TP_Profiler *profiler;
    TP_ProfilerFns *profiler_fns;
    void (*destroy_profiler)(TP_Profiler *profiler);
    void (*destroy_profiler_fns)(TP_ProfilerFns *profiler_fns);
} TF_ProfilerRegistrationParams;

#define TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE \
    TF_OFFSET_OF_END(TF_ProfilerRegistrationParams, destroy_profiler_fns)

/* Defined by a plug-in that has a profiler. */
TF_CAPI_EXPORT void TF_InitProfiler(TF_ProfilerRegistrationParams *params, TF_Status *status);

#ifdef __cplusplus
}
#endif

#endif
