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
 * Run it with the plug-in found: TP_PLUGIN_PATH=build/plugins build/examples/apu_relu.
 * RandomStandardNormal has no APU kernel, so it runs on the CPU; unlike TensorFlow, that
 * fallback is reported on standard error.
 */
#include <tensorplug/tensorplug.h>

int main(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.log_device_placement = true;
    options.placement_log = stdout;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context)); /* plug-ins are registered here */
    TP_CHECK(tp_list_physical_devices(context, NULL, stdout));

    tp_tensor_t *a, *b, *c, *d;
    TP_CHECK(tp_random_normal(context, TP_FLOAT32, TP_SHAPE(5), /*seed=*/1, &a));
    TP_CHECK(tp_relu(context, a, &b));

    TP_CHECK(tp_device_push(context, "/APU:0"));
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
    tp_context_destroy(context);
    return 0;
}
