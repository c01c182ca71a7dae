/* SPDX-License-Identifier: Apache-2.0 */
/* "Using GPUs": soft device placement.
 *
 *   tf.config.set_soft_device_placement(True)
 *   tf.debugging.set_log_device_placement(True)
 *   with tf.device('/device:GPU:2'):
 *     a = tf.constant(...); b = tf.constant(...)
 *     c = tf.matmul(a, b)
 *   print(c)
 *
 * Unlike TensorFlow, the fallback is not silent: a warning says where MatMul went instead,
 * and the context counts it.
 */
#include <tensorplug/tensorplug.h>

int main(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.soft_device_placement = true;
    options.log_device_placement = true;
    options.placement_log = stdout;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));

    const float values[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    tp_tensor_t *a, *b, *c;
    TP_CHECK(tp_device_push(context, "/device:GPU:2"));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 3), values, sizeof values, &a));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(3, 2), values, sizeof values, &b));
    TP_CHECK(tp_matmul(context, a, b, false, false, &c));
    TP_CHECK(tp_device_pop(context));
    TP_CHECK(tp_tensor_print(c, stdout));
    printf("fallbacks: %llu\n", (unsigned long long)tp_context_fallback_count(context, NULL));

    tp_tensor_release(a);
    tp_tensor_release(b);
    tp_tensor_release(c);
    tp_context_destroy(context);
    return 0;
}
