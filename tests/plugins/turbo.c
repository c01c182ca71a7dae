/* SPDX-License-Identifier: Apache-2.0 */
/* A second accelerator type for placement tests: one TURBO device (priority 200, above the
 * test accelerator's ACC at 100) whose memory is host memory, with a float32 Relu kernel. With
 * both loaded, the type's priority alone must decide where an op both have a kernel for runs,
 * whichever plug-in was found first. */
#include <string.h>

#include "simple_device.h"

static const tp_host_api_t *host;

static void relu(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
    host->kernel_input(context, 0, &x, status);
    host->kernel_output(context, 0, &y, status);
    if (host->status_code(status) != TP_OK) return;
    const float *in = (const float *)((const char *)x.mem + x.offset);
    float *out = (float *)((char *)y.mem + y.offset);
    for (int64_t i = 0; i < x.num_elements; i++) out[i] = in[i] > 0 ? in[i] : 0;
}

static void init(const tp_host_api_t *host_api, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    host = host_api;
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, "TURBO", 1, host);
    def.priority = 200;
    host->register_device_type(registrar, &def, status);
    static const tp_dtype_t float32_only[] = {TP_FLOAT32};
    tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    tp_kernel_def_t kernel = {.struct_size = sizeof kernel, .op = "Relu", .device_type = "TURBO",
                              .constraints = &constraint, .num_constraints = 1,
                              .compute = relu};
    host->register_kernel(registrar, &kernel, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "turbo", "1.0.0", init};
    return &descriptor;
}
