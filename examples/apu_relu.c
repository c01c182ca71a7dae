/* SPDX-License-Identifier: Apache-2.0 */
/* The plug-in page's snippet, with the APU plug-in installed:
 *
 *   tf.config.list_physical_devices()  # APU device is visible to TensorFlow.
 *   a = tf.random.normal(shape=[5], dtype=tf.float32)  # Runs on CPU.
 *   b = tf.nn.relu(a)         # Runs on APU.
 *   with tf.device("/APU:0"):
 *     c = tf.nn.relu(a)       # Runs on APU.
 *   with tf.device("/CPU:0"):
 *     c = tf.nn.relu(a)       # Runs on CPU.
 *
 *   @tf.function  # Defining a tf.function
 *   def run():
 *     d = tf.random.uniform(shape=[100], dtype=tf.float32)  # Runs on CPU.
 *     e = tf.nn.relu(d)        # Runs on APU.
 *
 *   run()  # PluggableDevices also work with tf.function and graph mode.
 *
 * Run it with the plug-in found: TP_PLUGIN_PATH=$PWD/build/plugins build/examples/apu_relu.
 * RandomStandardNormal has no APU kernel, so it runs on the CPU; unlike TensorFlow, that
 * fallback is reported on standard error. In the traced function, scopes place both nodes
 * explicitly, so the graph's placement lines show CPU and APU without a fallback. The seed is
 * fixed, so the program prints the same at every run; within a run, each call of run() draws
 * new values, as a random op in a tf.function does.
 *
 * With a device type as its argument, the same program on that device: `apu_relu GPU` with the
 * OpenCL plug-in (TP_PLUGIN_PATH=$PWD/build/plugins TP_OPENCL_DEVICE_TYPES=cpu for PoCL). The
 * GPU has a RandomStandardNormal kernel, so there `a` is drawn on the GPU, with the values the
 * CPU draws for the seed.
 */
#include <stdio.h>

#include <tensorplug/tensorplug.h>

/* "/APU:0", or the device the program's argument names. */
static char device[32] = "/APU:0";

/* The body of run(): recorded once into a graph, not run, on the first call. */
static tp_status_t *run_body(tp_context_t *context, tp_tensor_t *const *inputs,
                             size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                             void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *d = NULL;
    tp_status_t *error = tp_device_push(context, "/CPU:0");
    if (error != NULL) return error;
    error = tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(100), /*seed=*/2, &d);
    tp_status_free(tp_device_pop(context));
    if (error == NULL) error = tp_device_push(context, device);
    if (error == NULL) {
        error = tp_relu(context, d, &outputs[0]);
        tp_status_free(tp_device_pop(context));
    }
    tp_tensor_release(d);
    return error;
}

/* A hundred values are too many to compare by eye; their range and first few are enough. */
static void print_summary(const char *label, tp_tensor_t *e) {
    float values[100];
    TP_CHECK(tp_tensor_read(e, values, sizeof values)); /* waits for the APU */
    float min = values[0], max = values[0];
    int nonnegative = 0;
    for (int i = 0; i < 100; i++) {
        if (values[i] < min) min = values[i];
        if (values[i] > max) max = values[i];
        nonnegative += values[i] >= 0.0f;
    }
    printf("%s on %s: %d of 100 nonnegative, min %.6f, max %.6f, first %.6f %.6f %.6f\n",
           label, tp_tensor_device(e), nonnegative, (double)min, (double)max,
           (double)values[0], (double)values[1], (double)values[2]);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(device, sizeof device, "/%s:0", argv[1]);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.log_device_placement = true;
    options.placement_log = stdout;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context)); /* plug-ins are registered here */
    TP_CHECK(tp_list_physical_devices(context, NULL, stdout));

    tp_tensor_t *a, *b, *c, *d;
    TP_CHECK(tp_random_normal(context, TP_FLOAT32, TP_SHAPE(5), /*seed=*/1, &a));
    TP_CHECK(tp_relu(context, a, &b));

    TP_CHECK(tp_device_push(context, device));
    TP_CHECK(tp_relu(context, a, &c));
    TP_CHECK(tp_device_pop(context));

    TP_CHECK(tp_device_push(context, "/CPU:0"));
    TP_CHECK(tp_relu(context, a, &d));
    TP_CHECK(tp_device_pop(context));

    printf("a = ");
    TP_CHECK(tp_tensor_print(a, stdout));
    printf("b = relu(a) on %s:\n", tp_tensor_device(b));
    TP_CHECK(tp_tensor_print(b, stdout)); /* waits for the APU */

    tp_tensor_release(a);
    tp_tensor_release(b);
    tp_tensor_release(c);
    tp_tensor_release(d);

    tp_function_t *run;
    TP_CHECK(tp_function_create(context, "run", run_body, 1, NULL, &run));
    tp_tensor_t *e1, *e2;
    TP_CHECK(tp_function_call(run, NULL, 0, &e1, 1)); /* traces, places and runs the graph */
    TP_CHECK(tp_function_call(run, NULL, 0, &e2, 1)); /* runs the same graph */
    printf("run() called twice, traced %zu time(s)\n", tp_function_trace_count(run));
    print_summary("e = run()", e1);
    print_summary("e = run() again", e2);
    tp_tensor_release(e1);
    tp_tensor_release(e2);
    tp_function_destroy(run);
    tp_context_destroy(context);
    return 0;
}
