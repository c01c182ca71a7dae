/* SPDX-License-Identifier: Apache-2.0 */
/* The memory fraction, with the APU plug-in:
 *
 *   tf.config.gpu.set_per_process_memory_fraction(0.4)
 *
 * Each APU reserves 40% of its memory at the first tensor, and never more: a tensor that does
 * not fit is an out-of-memory status, and once memory is freed the same request succeeds.
 *
 * Run it with the plug-in found: TP_PLUGIN_PATH=$PWD/build/plugins build/examples/memory_fraction
 * (TP_APU_MEMORY=1G, the default, gives each APU 1 GiB).
 */
#include <stdlib.h>

#include <tensorplug/tensorplug.h>

static void print_memory(tp_context_t *context, const char *when) {
    /* Memory goes back in stream order, once the device is past the work that used it. */
    TP_CHECK(tp_context_synchronize(context));
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    TP_CHECK(tp_context_memory_stats(context, "/device:APU:0", &stats));
    printf("%s\n  in use %.1f MiB, reserved %.1f MiB, limit %.1f MiB, largest free block "
           "%.1f MiB\n",
           when, stats.bytes_in_use / 1048576.0, stats.bytes_reserved / 1048576.0,
           stats.bytes_limit / 1048576.0, stats.largest_free_block / 1048576.0);
}

/* relu of `mebibytes` MiB of zeros, on /APU:0. */
static tp_status_t *zeros_on_apu(tp_context_t *context, float *zeros, int64_t mebibytes,
                                 tp_tensor_t **out) {
    tp_tensor_t *x;
    int64_t count = mebibytes << 18;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(count), zeros,
                              (size_t)count * sizeof(float), &x));
    TP_CHECK(tp_device_push(context, "/APU:0"));
    tp_status_t *status = tp_relu(context, x, out);
    TP_CHECK(tp_device_pop(context));
    tp_tensor_release(x);
    if (status == NULL) status = tp_tensor_wait(*out);
    return status;
}

int main(void) {
    tp_context_t *context;
    TP_CHECK(tp_context_create(NULL, &context));
    TP_CHECK(tp_context_set_memory_fraction(context, "APU", 0.4));
    print_memory(context, "before any tensor:");

    float *zeros = calloc((size_t)200 << 18, sizeof *zeros);
    if (zeros == NULL) return 1;
    tp_tensor_t *first = NULL, *second = NULL;
    TP_CHECK(zeros_on_apu(context, zeros, 200, &first));
    print_memory(context, "after relu of 200 MiB (its input's copy is freed):");

    /* Relu of 150 MiB needs 300 MiB at once on the APU: the input's copy and the output. */
    tp_status_t *status = zeros_on_apu(context, zeros, 150, &second);
    printf("relu of 150 MiB next to it: %s\n%s\n", tp_code_name(tp_status_code(status)),
           tp_status_message(status));
    tp_status_free(status);

    tp_tensor_release(first);
    TP_CHECK(tp_context_synchronize(context));
    print_memory(context, "after releasing the 200 MiB:");
    TP_CHECK(zeros_on_apu(context, zeros, 150, &second));
    print_memory(context, "relu of 150 MiB now fits:");

    free(zeros);
    tp_tensor_release(second);
    tp_context_destroy(context);
    return 0;
}
