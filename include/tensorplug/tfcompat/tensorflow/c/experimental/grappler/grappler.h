/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TensorFlow's graph optimization C API. tensorplug declares it so that plug-ins defining
 * TF_InitGraph compile, but does not run such optimizers yet: it reports TF_InitGraph as not
 * supported (one line) and loads the plug-in's devices and kernels regardless. The functions
 * below return TF_UNIMPLEMENTED naming themselves (docs/tensorflow-plugins.md).
 */
#ifndef TENSORFLOW_C_EXPERIMENTAL_GRAPPLER_GRAPPLER_H_
#define TENSORFLOW_C_EXPERIMENTAL_GRAPPLER_GRAPPLER_H_

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_status.h"

#define GO_MAJOR 0
#define GO_MINOR 0
#define GO_PATCH 1

#ifdef __cplusplus
extern "C" {
#endif

typedef enum TF_TriState {
    TF_TriState_Default = 0,
    TF_TriState_Off,
    TF_TriState_On
} TF_TriState;

typedef struct TF_GrapplerItem TF_GrapplerItem;

/* Which of TensorFlow's own optimizers to switch off or on for the plug-in's device. */
typedef struct TP_OptimizerConfigs {
    size_t struct_size;
    void *ext;
    TF_TriState disable_model_pruning;
    TF_TriState implementation_selector;
    TF_TriState function_optimization;
    TF_TriState common_subgraph_elimination;
    TF_TriState arithmetic_optimization;
    TF_TriState debug_stripper;
    TF_TriState constant_folding;
    TF_TriState shape_optimization;
    TF_TriState auto_mixed_precision;
    TF_TriState auto_mixed_precision_mkl;
    TF_TriState pin_to_host_optimization;
    TF_TriState layout_optimizer;
    TF_TriState remapping;
    TF_TriState loop_optimization;
    TF_TriState dependency_optimization;
    TF_TriState auto_parallel;
    TF_TriState memory_optimization;
    TF_TriState scoped_allocator_optimization;
} TP_OptimizerConfigs;

#define TP_OPTIMIZER_CONFIGS_STRUCT_SIZE \
    TF_OFFSET_OF_END(TP_OptimizerConfigs, scoped_allocator_optimization)

/* optimize_func gets a serialized GraphDef and returns one. */
typedef struct TP_Optimizer {
    size_t struct_size;
    void *ext;
    void *(*create_func)(void); /* optional */
    void (*optimize_func)(void *, const TF_Buffer *, const TF_GrapplerItem *, TF_Buffer *,
                          TF_Status *);
    void (*destroy_func)(void *); /* required when create_func is given */
} TP_Optimizer;

#define TP_OPTIMIZER_STRUCT_SIZE TF_OFFSET_OF_END(TP_Optimizer, destroy_func)

typedef struct TP_OptimizerRegistrationParams {
    size_t struct_size;
    void *ext;
    int32_t major_version;
    int32_t minor_version;
    int32_t patch_version;
    const char *device_type;
    TP_OptimizerConfigs *optimizer_configs;
    TP_Optimizer *optimizer;
} TP_OptimizerRegistrationParams;

#define TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE \
    TF_OFFSET_OF_END(TP_OptimizerRegistrationParams, optimizer)

/* Defined by a plug-in that has a graph optimizer. */
TF_CAPI_EXPORT extern void TF_InitGraph(TP_OptimizerRegistrationParams *params,
                                        TF_Status *status);

TF_CAPI_EXPORT extern void TF_GetNodesToPreserveListSize(const TF_GrapplerItem *item,
                                                         int *num_values, size_t *storage_size,
                                                         TF_Status *status);
TF_CAPI_EXPORT extern void TF_GetNodesToPreserveList(const TF_GrapplerItem *item, char **values,
                                                     size_t *lengths, int num_values,
                                                     void *storage, size_t storage_size,
                                                     TF_Status *status);
TF_CAPI_EXPORT extern void TF_GetFetchNodesListSize(const TF_GrapplerItem *item,
                                                    int *num_values, size_t *storage_size,
                                                    TF_Status *status);
TF_CAPI_EXPORT extern void TF_GetFetchNodesList(const TF_GrapplerItem *item, char **values,
                                                size_t *lengths, int num_values, void *storage,
                                                size_t storage_size, TF_Status *status);

typedef struct TF_GraphProperties TF_GraphProperties;

TF_CAPI_EXPORT extern TF_GraphProperties *TF_NewGraphProperties(const TF_GrapplerItem *item);
TF_CAPI_EXPORT extern void TF_DeleteGraphProperties(TF_GraphProperties *graph_properties);
TF_CAPI_EXPORT extern void TF_InferStatically(TF_GraphProperties *graph_properties,
                                              TF_Bool assume_valid_feeds,
                                              TF_Bool aggressive_shape_inference,
                                              TF_Bool include_input_tensor_values,
                                              TF_Bool include_output_tensor_values,
                                              TF_Status *s);
TF_CAPI_EXPORT extern void TF_GetInputPropertiesListSize(TF_GraphProperties *graph_properties,
                                                         const char *name, int *num_values,
                                                         TF_Status *status);
TF_CAPI_EXPORT extern void TF_GetOutputPropertiesListSize(TF_GraphProperties *graph_properties,
                                                          const char *name, int *num_values,
                                                          TF_Status *status);
TF_CAPI_EXPORT extern void TF_GetInputPropertiesList(TF_GraphProperties *graph_properties,
                                                     const char *name, TF_Buffer **properties,
                                                     int num_values, TF_Status *status);
TF_CAPI_EXPORT extern void TF_GetOutputPropertiesList(TF_GraphProperties *graph_properties,
                                                      const char *name, TF_Buffer **properties,
                                                      int num_values, TF_Status *status);

typedef struct TF_FunctionLibraryDefinition TF_FunctionLibraryDefinition;

TF_CAPI_EXPORT extern TF_FunctionLibraryDefinition *TF_NewFunctionLibraryDefinition(
    TF_Buffer *graph_buf, TF_Status *status);
TF_CAPI_EXPORT extern void TF_DeleteFunctionLibraryDefinition(
    TF_FunctionLibraryDefinition *fn_lib);
TF_CAPI_EXPORT extern void TF_LookUpOpDef(TF_FunctionLibraryDefinition *fn_lib,
                                          const char *name, TF_Buffer *buf, TF_Status *s);

#ifdef __cplusplus
}
#endif

#endif
