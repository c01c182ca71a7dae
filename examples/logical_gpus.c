/* SPDX-License-Identifier: Apache-2.0 */
/* "Using GPUs": limiting GPU memory with logical devices, each with a hard memory limit.
 *
 *   gpus = tf.config.list_physical_devices('GPU')
 *   tf.config.set_logical_device_configuration(
 *       gpus[0],
 *       [tf.config.LogicalDeviceConfiguration(memory_limit=64),
 *        tf.config.LogicalDeviceConfiguration(memory_limit=64)])
 *   logical_gpus = tf.config.list_logical_devices('GPU')
 *   print(len(gpus), "Physical GPU,", len(logical_gpus), "Logical GPUs")
 *
 * Physical GPU:0 becomes logical GPU:0 and GPU:1, 64 MiB each (the document takes 1024; 64
 * keeps the example small). 48 MiB fit on GPU:0; 48 more do not, however large the device,
 * and are an out-of-memory status; GPU:1, with its own limit, takes them.
 *
 * Run it with the OpenCL plug-in found: TP_PLUGIN_PATH=$PWD/build/plugins build/examples/
 * logical_gpus (add TP_OPENCL_DEVICE_TYPES=cpu on a machine whose only OpenCL device is PoCL's).
 * A device type as its argument runs it on that type instead ("APU").
 */
#include <stdio.h>

#include <tensorplug/tensorplug.h>

enum { MEBIBYTE = 1 << 20, CHUNK_MIB = 48 };

static void print_memory(tp_context_t *context, const char *device) {
    TP_CHECK(tp_context_synchronize(context)); /* memory goes back in stream order */
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    TP_CHECK(tp_context_memory_stats(context, device, &stats));
    printf("  %s: in use %.1f MiB, limit %.1f MiB\n", device,
           (double)stats.bytes_in_use / MEBIBYTE, (double)stats.bytes_limit / MEBIBYTE);
}

/* A tensor of CHUNK_MIB MiB of ones on `device`, filled there from the scalar `one`. */
static tp_status_t *ones_on(tp_context_t *context, const char *device, tp_tensor_t *one,
                            tp_tensor_t **out) {
    int64_t count = (int64_t)CHUNK_MIB * MEBIBYTE / (int64_t)sizeof(float);
    TP_CHECK(tp_device_push(context, device));
    tp_status_t *status = tp_fill(context, TP_SHAPE(count), one, out);
    TP_CHECK(tp_device_pop(context));
    if (status == NULL) status = tp_tensor_wait(*out);
    return status;
}

int main(int argc, char **argv) {
    const char *type = argc > 1 ? argv[1] : "GPU";
    char physical[32], devices[2][32];
    snprintf(physical, sizeof physical, "%s:0", type);
    snprintf(devices[0], sizeof devices[0], "/device:%s:0", type);
    snprintf(devices[1], sizeof devices[1], "/device:%s:1", type);
    tp_context_t *context;
    TP_CHECK(tp_context_create(NULL, &context));
    if (tp_physical_device_count(context, type) == 0) {
        printf("no %s device: install its plug-in (see the comment at the top)\n", type);
        tp_context_destroy(context);
        return 1;
    }
    const uint64_t limits[2] = {64ull * MEBIBYTE, 64ull * MEBIBYTE};
    TP_CHECK(tp_context_set_logical_devices(context, physical, limits, 2));
    size_t physical_count = tp_physical_device_count(context, type), logical_count = 0;
    TP_CHECK(tp_logical_device_count(context, type, &logical_count));
    printf("%zu Physical %s, %zu Logical %ss\n", physical_count, type, logical_count, type);
    TP_CHECK(tp_list_logical_devices(context, type, stdout));

    const float one_value = 1.0f;
    tp_tensor_t *one;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &one_value, sizeof one_value,
                              &one));

    tp_tensor_t *first, *second = NULL, *elsewhere;
    TP_CHECK(ones_on(context, devices[0], one, &first));
    printf("%d MiB on %s:\n", CHUNK_MIB, devices[0]);
    print_memory(context, devices[0]);
    tp_status_t *status = ones_on(context, devices[0], one, &second);
    printf("%d MiB more on %s: %s\n", CHUNK_MIB, devices[0],
           status != NULL ? tp_code_name(tp_status_code(status)) : "OK");
    tp_status_free(status);
    tp_tensor_release(second);
    TP_CHECK(ones_on(context, devices[1], one, &elsewhere));
    printf("%d MiB on %s instead:\n", CHUNK_MIB, devices[1]);
    print_memory(context, devices[0]);
    print_memory(context, devices[1]);

    tp_tensor_release(first);
    tp_tensor_release(elsewhere);
    tp_tensor_release(one);
    printf("after releasing both:\n");
    print_memory(context, devices[0]);
    print_memory(context, devices[1]);
    tp_context_destroy(context);
    return 0;
}
