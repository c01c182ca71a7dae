/* SPDX-License-Identifier: Apache-2.0 */
/* "Using GPUs": Using a single GPU on a multi-GPU system, when the device does not exist.
 *
 *   with tf.device('/device:GPU:2'):
 *     a = tf.constant(...); b = tf.constant(...)
 *     c = tf.matmul(a, b)
 *   RuntimeError: Error copying tensor to device: /job:localhost/replica:0/task:0/device:GPU:2.
 *   /job:localhost/replica:0/task:0/device:GPU:2 unknown device.
 *
 * The error is a status, not an abort: the program reports it and goes on.
 */
#include <tensorplug/tensorplug.h>

int main(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.log_device_placement = true;
    options.placement_log = stdout;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));

    const float values[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    tp_tensor_t *a, *b, *c = NULL;
    TP_CHECK(tp_device_push(context, "/device:GPU:2"));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 3), values, sizeof values, &a));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(3, 2), values, sizeof values, &b));
    tp_status_t *status = tp_matmul(context, a, b, false, false, &c);
    TP_CHECK(tp_device_pop(context));
    int exit_code = 0;
    if (status != NULL) {
        printf("RuntimeError: %s\n", tp_status_message(status));
        tp_status_free(status);
    } else {
        printf("unexpectedly ran on %s\n", tp_tensor_device(c));
        tp_tensor_release(c);
        exit_code = 1;
    }
    tp_tensor_release(a);
    tp_tensor_release(b);
    tp_context_destroy(context);
    return exit_code;
}
