/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel builders: TensorFlow's registration calls, turned into native kernel registrations
 * of the plug-in being loaded. A registration tensorplug cannot honour is skipped with one
 * line naming it and why; the plug-in's other kernels and devices load regardless. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc.h"

enum { MAX_CONSTRAINTS = 8, MAX_DTYPES = 32 };

typedef struct builder_constraint {
    char *attr;
    TF_DataType dtypes[MAX_DTYPES];
    size_t count;
} builder_constraint_t;

struct TF_KernelBuilder {
    char *op, *device_type;
    void *(*create)(TF_OpKernelConstruction *);
    void (*compute)(void *, TF_OpKernelContext *);
    void (*destroy)(void *);
    int32_t priority;
    builder_constraint_t constraints[MAX_CONSTRAINTS];
    size_t num_constraints;
    char *host_memory_arg; /* the first argument asked for in host memory */
    const char *problem;   /* a reason the builder cannot become a kernel, found while built */
};

/* Every kernel of every plug-in, reachable for the life of the process. */
static tfc_kernel_t *all_kernels;

TF_KernelBuilder *TF_NewKernelBuilder(const char *op_name, const char *device_name,
                                      void *(*create_func)(TF_OpKernelConstruction *),
                                      void (*compute_func)(void *, TF_OpKernelContext *),
                                      void (*delete_func)(void *)) {
    if (op_name == NULL || device_name == NULL || compute_func == NULL) return NULL;
    TF_KernelBuilder *builder = calloc(1, sizeof *builder);
    if (builder == NULL) return NULL;
    builder->op = strdup(op_name);
    builder->device_type = strdup(device_name);
    if (builder->op == NULL || builder->device_type == NULL) {
        TF_DeleteKernelBuilder(builder);
        return NULL;
    }
    builder->create = create_func;
    builder->compute = compute_func;
    builder->destroy = delete_func;
    return builder;
}

void TF_DeleteKernelBuilder(TF_KernelBuilder *builder) {
    if (builder == NULL) return;
    for (size_t i = 0; i < builder->num_constraints; i++) free(builder->constraints[i].attr);
    free(builder->op);
    free(builder->device_type);
    free(builder->host_memory_arg);
    free(builder);
}

void TF_KernelBuilder_TypeConstraint(TF_KernelBuilder *kernel_builder, const char *attr_name,
                                     const TF_DataType type, TF_Status *status) {
    if (kernel_builder == NULL || attr_name == NULL) {
        tfc_status_printf(status, TF_INVALID_ARGUMENT,
                          "TF_KernelBuilder_TypeConstraint: NULL builder or attribute name");
        return;
    }
    builder_constraint_t *constraint = NULL;
    for (size_t i = 0; i < kernel_builder->num_constraints; i++)
        if (strcmp(kernel_builder->constraints[i].attr, attr_name) == 0)
            constraint = &kernel_builder->constraints[i];
    if (constraint == NULL) {
        if (kernel_builder->num_constraints == MAX_CONSTRAINTS) {
            tfc_status_printf(status, TF_RESOURCE_EXHAUSTED,
                              "TF_KernelBuilder_TypeConstraint: more than %d type attributes",
                              MAX_CONSTRAINTS);
            return;
        }
        char *attr = strdup(attr_name);
        if (attr == NULL) {
            tfc_status_printf(status, TF_RESOURCE_EXHAUSTED,
                              "TF_KernelBuilder_TypeConstraint: out of memory");
            return;
        }
        constraint = &kernel_builder->constraints[kernel_builder->num_constraints++];
        constraint->attr = attr;
        constraint->count = 0;
    }
    for (size_t i = 0; i < constraint->count; i++)
        if (constraint->dtypes[i] == type) {
            TF_SetStatus(status, TF_OK, "");
            return;
        }
    if (constraint->count == MAX_DTYPES) {
        tfc_status_printf(status, TF_RESOURCE_EXHAUSTED,
                          "TF_KernelBuilder_TypeConstraint: more than %d dtypes for '%s'",
                          MAX_DTYPES, attr_name);
        return;
    }
    constraint->dtypes[constraint->count++] = type;
    TF_SetStatus(status, TF_OK, "");
}

void TF_KernelBuilder_HostMemory(TF_KernelBuilder *kernel_builder, const char *arg_name) {
    if (kernel_builder == NULL || arg_name == NULL || kernel_builder->host_memory_arg != NULL)
        return;
    kernel_builder->host_memory_arg = strdup(arg_name);
    if (kernel_builder->host_memory_arg == NULL) kernel_builder->problem = "out of host memory";
}

void TF_KernelBuilder_Priority(TF_KernelBuilder *kernel_builder, int32_t priority_number) {
    if (kernel_builder != NULL) kernel_builder->priority = priority_number;
}

static void skip(const tfc_plugin_t *plugin, const char *kernel_name,
                 const TF_KernelBuilder *builder, const char *why) {
    tfc_host->log(plugin->registrar, TP_LOG_WARNING,
                  "skipped TensorFlow kernel '%s' (op %s on %s): %s", kernel_name,
                  builder->op, builder->device_type, why);
}

/* The builder's constraints in tensorplug's dtypes; false when a constraint keeps no dtype. A
 * dtype tensorplug lacks is dropped with one line. */
static bool translate_constraints(const tfc_plugin_t *plugin, const char *kernel_name,
                                  const TF_KernelBuilder *builder, tp_type_constraint_t *out,
                                  tp_dtype_t (*dtypes)[MAX_DTYPES]) {
    for (size_t i = 0; i < builder->num_constraints; i++) {
        const builder_constraint_t *constraint = &builder->constraints[i];
        size_t kept = 0;
        for (size_t j = 0; j < constraint->count; j++) {
            tp_dtype_t dtype = tfc_dtype_to_tp(constraint->dtypes[j]);
            if (dtype != TP_DTYPE_INVALID) {
                dtypes[i][kept++] = dtype;
                continue;
            }
            char why[128];
            snprintf(why, sizeof why, "tensorplug has no dtype for TensorFlow's dtype %d of '%s'",
                     (int)constraint->dtypes[j], constraint->attr);
            skip(plugin, kernel_name, builder, why);
        }
        if (kept == 0) return false;
        out[i] = (tp_type_constraint_t){.struct_size = sizeof out[i], .attr = constraint->attr,
                                        .dtypes = dtypes[i], .num_dtypes = kept};
    }
    return true;
}

/* Registers `builder` with the host as a native kernel, or explains in one line why not. */
static void register_builder(tfc_plugin_t *plugin, const char *kernel_name,
                             const TF_KernelBuilder *builder, TF_Status *status) {
    const char *tp_op = tfc_op_to_tp(builder->op);
    char why[160];
    if (builder->problem != NULL) {
        skip(plugin, kernel_name, builder, builder->problem);
        return;
    }
    if (tp_op == NULL) {
        snprintf(why, sizeof why, "tensorplug has no op matching TensorFlow's %.64s",
                 builder->op);
        skip(plugin, kernel_name, builder, why);
        return;
    }
    if (strcmp(builder->device_type, plugin->type) != 0) {
        snprintf(why, sizeof why, "the device type is not this plug-in's (%s)", plugin->type);
        skip(plugin, kernel_name, builder, why);
        return;
    }
    if (builder->host_memory_arg != NULL) {
        snprintf(why, sizeof why,
                 "it wants argument '%.64s' in host memory, which tensorplug cannot give yet",
                 builder->host_memory_arg);
        skip(plugin, kernel_name, builder, why);
        return;
    }
    tp_type_constraint_t constraints[MAX_CONSTRAINTS];
    tp_dtype_t dtypes[MAX_CONSTRAINTS][MAX_DTYPES];
    /* Each dtype dropped had its line; a kernel left with none is skipped without another. */
    if (!translate_constraints(plugin, kernel_name, builder, constraints, dtypes)) return;
    tfc_kernel_t *kernel = calloc(1, sizeof *kernel);
    if (kernel != NULL) {
        kernel->name = strdup(kernel_name);
        kernel->tf_op = strdup(builder->op);
    }
    if (kernel == NULL || kernel->name == NULL || kernel->tf_op == NULL) {
        if (kernel != NULL) {
            free(kernel->name);
            free(kernel->tf_op);
        }
        free(kernel);
        tfc_status_printf(status, TF_RESOURCE_EXHAUSTED,
                          "TF_RegisterKernelBuilder: out of host memory");
        return;
    }
    kernel->plugin = plugin;
    kernel->create = builder->create;
    kernel->compute = builder->compute;
    kernel->destroy = builder->destroy;
    tp_kernel_def_t def = {.struct_size = sizeof def,
                           .op = tp_op,
                           .device_type = plugin->type,
                           .constraints = constraints,
                           .num_constraints = builder->num_constraints,
                           .priority = builder->priority,
                           .kernel_state = kernel,
                           .create = tfc_kernel_create,
                           .compute = tfc_kernel_compute,
                           .destroy = tfc_kernel_destroy,
                           /* TensorFlow makes an OpKernel once and keeps it, and requires its
                            * Compute to be safe on several threads at once: so do we. */
                           .flags = TP_KERNEL_REUSE_INSTANCE | TP_KERNEL_CONCURRENT_COMPUTE};
    plugin->host->register_kernel(plugin->registrar, &def, plugin->host_status);
    if (plugin->host->status_code(plugin->host_status) != TP_OK) {
        /* The host said why; the plug-in's init reports it, as for a native plug-in. */
        free(kernel->name);
        free(kernel->tf_op);
        free(kernel);
        tfc_status_printf(status, TF_INVALID_ARGUMENT,
                          "TF_RegisterKernelBuilder: tensorplug refused kernel '%s'", kernel_name);
        return;
    }
    kernel->next = all_kernels;
    all_kernels = kernel;
}

void TF_RegisterKernelBuilder(const char *kernel_name, TF_KernelBuilder *builder,
                              TF_Status *status) {
    TF_SetStatus(status, TF_OK, "");
    tfc_plugin_t *plugin = tfc_loading_plugin;
    if (builder == NULL) {
        tfc_status_printf(status, TF_INVALID_ARGUMENT, "TF_RegisterKernelBuilder: NULL builder");
        return;
    }
    if (plugin == NULL) {
        tfc_status_printf(status, TF_FAILED_PRECONDITION,
                          "TF_RegisterKernelBuilder: kernels register only from TF_InitKernel");
    } else {
        register_builder(plugin, kernel_name != NULL ? kernel_name : builder->op, builder, status);
    }
    TF_DeleteKernelBuilder(builder);
}

void TF_RegisterKernelBuilderWithKernelDef(const char *serialized_kernel_def, const char *name,
                                           TF_KernelBuilder *builder, TF_Status *status) {
    if (serialized_kernel_def == NULL) {
        TF_RegisterKernelBuilder(name, builder, status);
        return;
    }
    TF_SetStatus(status, TF_OK, "");
    if (builder != NULL && tfc_loading_plugin != NULL)
        skip(tfc_loading_plugin, name != NULL ? name : builder->op, builder,
             "it comes as a serialized KernelDef, which tensorplug does not read");
    TF_DeleteKernelBuilder(builder);
}
