/* A device with kernels, for placement tests: two ACC devices (priority 100) whose memory is
 * host memory, with a Relu kernel for float32 only. Its stream defers errors as an
 * asynchronous device does: a Relu that meets a NaN records the failure on the stream, and the
 * next synchronize reports it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simple_device.h"

static const tp_host_api_t *host;

/* One pending error per process is enough for the tests, which use one stream at a time. */
static char pending_error[256];

static void synchronize_reporting(void *device, void *stream, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    if (pending_error[0] != '\0') {
        host->status_set(status, TP_INTERNAL, "%s", pending_error);
        pending_error[0] = '\0';
    }
}

static void relu(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
    host->kernel_input(context, 0, &x, status);
    host->kernel_output(context, 0, &y, status);
    if (host->status_code(status) != TP_OK) return;
    const float *in = (const float *)((char *)x.mem + x.offset);
    float *out = (float *)((char *)y.mem + y.offset);
    for (int64_t i = 0; i < x.num_elements; i++) {
        if (isnan(in[i]))
            snprintf(pending_error, sizeof pending_error,
                     "%s on ACC met a NaN at element %lld", host->kernel_op_name(context),
                     (long long)i);
        out[i] = in[i] > 0 ? in[i] : 0;
    }
}

static void init(const tp_host_api_t *host_api, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    host = host_api;
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, "ACC", 2, host);
    def.priority = 100;
    def.stream_synchronize = synchronize_reporting;
    host->register_device_type(registrar, &def, status);
    static const tp_dtype_t float32_only[] = {TP_FLOAT32};
    tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    tp_kernel_def_t kernel = {.struct_size = sizeof kernel, .op = "Relu", .device_type = "ACC",
                              .constraints = &constraint, .num_constraints = 1,
                              .compute = relu};
    host->register_kernel(registrar, &kernel, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "accelerator", "1.0.0", init};
    return &descriptor;
}
