/* SPDX-License-Identifier: Apache-2.0 */
/* "Allowing GPU memory growth", with the APU plug-in:
 *
 *   tf.config.gpu.set_per_process_memory_growth()
 *
 * By default the first tensor on a device reserves nearly all of its memory. With growth, the
 * device starts with a small region and adds regions, each twice the last, as tensors need
 * them, never giving memory back. The statistics show it: relu of a 1 MiB tensor, then of a
 * 4 MiB one, on /APU:0 (or device 0 of the type given as the argument: GPU for the OpenCL
 * plug-in).
 *
 * Run it with the plug-in found: TP_PLUGIN_PATH=$PWD/build/plugins build/examples/memory_growth
 * (TP_OPENCL_DEVICE_TYPES=cpu ... memory_growth GPU, with PoCL and no GPU).
 */
#include <stdio.h>
#include <stdlib.h>

#include <tensorplug/tensorplug.h>

static char device_name[64] = "/APU:0";

static void print_memory(tp_context_t *context, const char *when) {
    /* Memory goes back in stream order, once the device is past the work that used it. */
    TP_CHECK(tp_context_synchronize(context));
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    TP_CHECK(tp_context_memory_stats(context, device_name, &stats));
    printf("%-28s in use %5.1f MiB, peak %5.1f MiB, reserved %5.1f MiB of %6.1f MiB\n", when,
           stats.bytes_in_use / 1048576.0, stats.peak_bytes_in_use / 1048576.0,
           stats.bytes_reserved / 1048576.0, stats.bytes_limit / 1048576.0);
}

/* relu of `mebibytes` MiB of zeros, computed on the device. */
static tp_tensor_t *relu_on_device(tp_context_t *context, int64_t mebibytes) {
    int64_t count = mebibytes << 18; /* float32s per MiB */
    float *zeros = calloc((size_t)count, sizeof *zeros);
    if (zeros == NULL) exit(1);
    tp_tensor_t *x, *y;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(count), zeros,
                              (size_t)count * sizeof *zeros, &x));
    free(zeros);
    TP_CHECK(tp_device_push(context, device_name));
    TP_CHECK(tp_relu(context, x, &y)); /* x is copied to the device, then that copy freed */
    TP_CHECK(tp_device_pop(context));
    tp_tensor_release(x);
    TP_CHECK(tp_tensor_wait(y));
    return y;
}

int main(int argc, char **argv) {
    const char *type = argc > 1 ? argv[1] : "APU";
    snprintf(device_name, sizeof device_name, "/%s:0", type);
    tp_context_t *context;
    TP_CHECK(tp_context_create(NULL, &context));
    /* The first statement, before any tensor: every device of the type grows on demand. */
    TP_CHECK(tp_context_set_memory_growth(context, type, true));

    print_memory(context, "before any tensor:");
    tp_tensor_t *small = relu_on_device(context, 1);
    print_memory(context, "after relu of 1 MiB:");
    tp_tensor_t *large = relu_on_device(context, 4);
    print_memory(context, "after relu of 4 MiB:");
    tp_tensor_release(small);
    tp_tensor_release(large);
    TP_CHECK(tp_context_synchronize(context));
    print_memory(context, "after releasing both:");

    tp_context_destroy(context);
    return 0;
}
