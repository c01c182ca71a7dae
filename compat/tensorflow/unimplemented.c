/* SPDX-License-Identifier: Apache-2.0 */
/* Functions of kernels.h and grappler.h that the adapter declares but does not do yet. Each
 * answers TF_UNIMPLEMENTED with its own name and the reason, so that a plug-in calling one
 * fails clearly instead of at load time; docs/tensorflow-plugins.md lists them. */
#include "tfc.h"
#include "tensorflow/c/experimental/grappler/grappler.h"

#define NO_ATTR_KIND "tensorplug has no attribute of this kind to read"
#define NO_GRAPPLER "TensorFlow graph optimizers (TF_InitGraph) are not run by tensorplug yet"

void TF_OpKernelConstruction_GetAttrTensor(TF_OpKernelConstruction *ctx, const char *attr_name,
                                           TF_Tensor **val, TF_Status *status) {
    (void)ctx, (void)attr_name, (void)val;
    tfc_unimplemented(status, "TF_OpKernelConstruction_GetAttrTensor", NO_ATTR_KIND);
}

void TF_OpKernelConstruction_GetAttrTypeList(TF_OpKernelConstruction *ctx, const char *attr_name,
                                             TF_DataType *vals, int max_vals,
                                             TF_Status *status) {
    (void)ctx, (void)attr_name, (void)vals, (void)max_vals;
    tfc_unimplemented(status, "TF_OpKernelConstruction_GetAttrTypeList", NO_ATTR_KIND);
}

void TF_OpKernelConstruction_GetAttrFloatList(TF_OpKernelConstruction *ctx,
                                              const char *attr_name, float *vals, int max_vals,
                                              TF_Status *status) {
    (void)ctx, (void)attr_name, (void)vals, (void)max_vals;
    tfc_unimplemented(status, "TF_OpKernelConstruction_GetAttrFloatList", NO_ATTR_KIND);
}

void TF_OpKernelConstruction_GetAttrBoolList(TF_OpKernelConstruction *ctx, const char *attr_name,
                                             TF_Bool *vals, int max_vals, TF_Status *status) {
    (void)ctx, (void)attr_name, (void)vals, (void)max_vals;
    tfc_unimplemented(status, "TF_OpKernelConstruction_GetAttrBoolList", NO_ATTR_KIND);
}

void TF_OpKernelConstruction_GetAttrStringList(TF_OpKernelConstruction *ctx,
                                               const char *attr_name, char **vals,
                                               size_t *lengths, int max_values, void *storage,
                                               size_t storage_size, TF_Status *status) {
    (void)ctx, (void)attr_name, (void)vals, (void)lengths, (void)max_values, (void)storage,
        (void)storage_size;
    tfc_unimplemented(status, "TF_OpKernelConstruction_GetAttrStringList", NO_ATTR_KIND);
}

void TF_OpKernelConstruction_GetAttrTensorList(TF_OpKernelConstruction *ctx,
                                               const char *attr_name, TF_Tensor **vals,
                                               int max_values, TF_Status *status) {
    (void)ctx, (void)attr_name, (void)vals, (void)max_values;
    tfc_unimplemented(status, "TF_OpKernelConstruction_GetAttrTensorList", NO_ATTR_KIND);
}

/* ---- grappler.h: reachable only from an optimizer, which tensorplug never runs ---------- */

void TF_GetNodesToPreserveListSize(const TF_GrapplerItem *item, int *num_values,
                                   size_t *storage_size, TF_Status *status) {
    (void)item, (void)num_values, (void)storage_size;
    tfc_unimplemented(status, "TF_GetNodesToPreserveListSize", NO_GRAPPLER);
}

void TF_GetNodesToPreserveList(const TF_GrapplerItem *item, char **values, size_t *lengths,
                               int num_values, void *storage, size_t storage_size,
                               TF_Status *status) {
    (void)item, (void)values, (void)lengths, (void)num_values, (void)storage, (void)storage_size;
    tfc_unimplemented(status, "TF_GetNodesToPreserveList", NO_GRAPPLER);
}

void TF_GetFetchNodesListSize(const TF_GrapplerItem *item, int *num_values,
                              size_t *storage_size, TF_Status *status) {
    (void)item, (void)num_values, (void)storage_size;
    tfc_unimplemented(status, "TF_GetFetchNodesListSize", NO_GRAPPLER);
}

void TF_GetFetchNodesList(const TF_GrapplerItem *item, char **values, size_t *lengths,
                          int num_values, void *storage, size_t storage_size,
                          TF_Status *status) {
    (void)item, (void)values, (void)lengths, (void)num_values, (void)storage, (void)storage_size;
    tfc_unimplemented(status, "TF_GetFetchNodesList", NO_GRAPPLER);
}

TF_GraphProperties *TF_NewGraphProperties(const TF_GrapplerItem *item) {
    /* No status to fill: NULL says there are no properties. */
    (void)item;
    return NULL;
}

void TF_DeleteGraphProperties(TF_GraphProperties *graph_properties) { (void)graph_properties; }

void TF_InferStatically(TF_GraphProperties *graph_properties, TF_Bool assume_valid_feeds,
                        TF_Bool aggressive_shape_inference, TF_Bool include_input_tensor_values,
                        TF_Bool include_output_tensor_values, TF_Status *s) {
    (void)graph_properties, (void)assume_valid_feeds, (void)aggressive_shape_inference,
        (void)include_input_tensor_values, (void)include_output_tensor_values;
    tfc_unimplemented(s, "TF_InferStatically", NO_GRAPPLER);
}

void TF_GetInputPropertiesListSize(TF_GraphProperties *graph_properties, const char *name,
                                   int *num_values, TF_Status *status) {
    (void)graph_properties, (void)name, (void)num_values;
    tfc_unimplemented(status, "TF_GetInputPropertiesListSize", NO_GRAPPLER);
}

void TF_GetOutputPropertiesListSize(TF_GraphProperties *graph_properties, const char *name,
                                    int *num_values, TF_Status *status) {
    (void)graph_properties, (void)name, (void)num_values;
    tfc_unimplemented(status, "TF_GetOutputPropertiesListSize", NO_GRAPPLER);
}

void TF_GetInputPropertiesList(TF_GraphProperties *graph_properties, const char *name,
                               TF_Buffer **properties, int num_values, TF_Status *status) {
    (void)graph_properties, (void)name, (void)properties, (void)num_values;
    tfc_unimplemented(status, "TF_GetInputPropertiesList", NO_GRAPPLER);
}

void TF_GetOutputPropertiesList(TF_GraphProperties *graph_properties, const char *name,
                                TF_Buffer **properties, int num_values, TF_Status *status) {
    (void)graph_properties, (void)name, (void)properties, (void)num_values;
    tfc_unimplemented(status, "TF_GetOutputPropertiesList", NO_GRAPPLER);
}

TF_FunctionLibraryDefinition *TF_NewFunctionLibraryDefinition(TF_Buffer *graph_buf,
                                                              TF_Status *status) {
    (void)graph_buf;
    tfc_unimplemented(status, "TF_NewFunctionLibraryDefinition", NO_GRAPPLER);
    return NULL;
}

void TF_DeleteFunctionLibraryDefinition(TF_FunctionLibraryDefinition *fn_lib) { (void)fn_lib; }

void TF_LookUpOpDef(TF_FunctionLibraryDefinition *fn_lib, const char *name, TF_Buffer *buf,
                    TF_Status *s) {
    (void)fn_lib, (void)name, (void)buf;
    tfc_unimplemented(s, "TF_LookUpOpDef", NO_GRAPPLER);
}
