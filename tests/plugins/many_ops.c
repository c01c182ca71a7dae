/* SPDX-License-Identifier: Apache-2.0 */
/* A plug-in with as many ops and kernels as the environment asks: TP_MANY_OPS ops (Op0, Op1,
 * ...; default 1000), each with TP_MANY_KERNELS_PER_OP kernels on the CPU (default 1), so that
 * the cost of registering them can be measured and bounded. */
#include <stdio.h>
#include <stdlib.h>

#include "tensorplug/plugin.h"

static void compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    (void)context;
    (void)status;
}

static size_t count_from(const char *variable, size_t default_count) {
    const char *text = getenv(variable);
    return text != NULL ? (size_t)strtoull(text, NULL, 10) : default_count;
}

static const tp_dtype_t float32_only[] = {TP_FLOAT32};
static const tp_op_attr_def_t type_attr = {.struct_size = sizeof type_attr, .name = "T",
                                           .type = TP_ATTR_DTYPE};
static const tp_op_arg_def_t input = {sizeof input, "x", TP_DTYPE_INVALID, "T", NULL};
static const tp_op_arg_def_t output = {sizeof output, "y", TP_DTYPE_INVALID, "T", NULL};
static const tp_type_constraint_t float32_constraint = {sizeof float32_constraint, "T",
                                                        float32_only, 1};

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    size_t ops = count_from("TP_MANY_OPS", 1000);
    size_t kernels_per_op = count_from("TP_MANY_KERNELS_PER_OP", 1);
    for (size_t o = 0; o < ops; o++) {
        char name[32];
        snprintf(name, sizeof name, "Op%zu", o);
        tp_op_def_t op = {.struct_size = sizeof op, .name = name, .inputs = &input,
                          .num_inputs = 1, .outputs = &output, .num_outputs = 1,
                          .attrs = &type_attr, .num_attrs = 1};
        host->register_op(registrar, &op, status);
        for (size_t k = 0; k < kernels_per_op && host->status_code(status) == TP_OK; k++) {
            tp_kernel_def_t kernel = {.struct_size = sizeof kernel, .op = name,
                                      .device_type = "CPU", .constraints = &float32_constraint,
                                      .num_constraints = 1, .priority = (int32_t)k,
                                      .compute = compute};
            host->register_kernel(registrar, &kernel, status);
        }
        if (host->status_code(status) != TP_OK) return;
    }
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof descriptor, TP_ABI_MAJOR, TP_ABI_MINOR, "many_ops", "1.0.0", init};
    return &descriptor;
}
