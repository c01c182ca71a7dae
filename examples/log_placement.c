/* SPDX-License-Identifier: Apache-2.0 */
/* "Using GPUs": Logging device placement.
 *
 *   tf.debugging.set_log_device_placement(True)
 *   a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name='a')
 *   b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name='b')
 *   c = tf.matmul(a, b)
 *   print(c)
 */
#include <tensorplug/tensorplug.h>

int main(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.log_device_placement = true;
    options.placement_log = stdout;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));

    const float values[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    tp_tensor_t *a, *b, *c;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 3), values, sizeof values, &a));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(3, 2), values, sizeof values, &b));
    TP_CHECK(tp_matmul(context, a, b, false, false, &c));
    TP_CHECK(tp_tensor_print(c, stdout));

    tp_tensor_release(a);
    tp_tensor_release(b);
    tp_tensor_release(c);
    tp_context_destroy(context);
    return 0;
}
