/* SPDX-License-Identifier: Apache-2.0 */
/* (g) A well-formed plug-in: two XPU devices and one new op. */
#include <string.h>

#include "simple_device.h"

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, "XPU", 2, host);
    host->register_device_type(registrar, &def, status);

    static const tp_dtype_t float_types[] = {TP_FLOAT32, TP_FLOAT64};
    const tp_op_attr_def_t attrs[] = {
        {.struct_size = sizeof(tp_op_attr_def_t), .name = "T", .type = TP_ATTR_DTYPE,
         .allowed_dtypes = float_types, .num_allowed_dtypes = 2},
        {.struct_size = sizeof(tp_op_attr_def_t), .name = "factor", .type = TP_ATTR_FLOAT,
         .has_default = 1, .default_float = 2.0},
    };
    const tp_op_arg_def_t input = {sizeof(tp_op_arg_def_t), "x", TP_DTYPE_INVALID, "T", NULL};
    const tp_op_arg_def_t output = {sizeof(tp_op_arg_def_t), "y", TP_DTYPE_INVALID, "T", NULL};
    const tp_op_def_t scale = {.struct_size = sizeof(tp_op_def_t), .name = "XpuScale",
                               .inputs = &input, .num_inputs = 1, .outputs = &output,
                               .num_outputs = 1, .attrs = attrs, .num_attrs = 2};
    host->register_op(registrar, &scale, status);
    host->log(registrar, TP_LOG_DEBUG, "registered XPU and XpuScale");
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "good", "2.3.4", init};
    return &descriptor;
}
