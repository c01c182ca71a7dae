/* SPDX-License-Identifier: Apache-2.0 */
/* "Using multiple GPUs", without tf.distribute.Strategy: the computation replicated on two
 * devices by hand and the replicas' results summed on the CPU.
 *
 *   tf.debugging.set_log_device_placement(True)
 *   c = []
 *   for d in ['/device:GPU:2', '/device:GPU:3']:
 *     with tf.device(d):
 *       a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
 *       b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2])
 *       c.append(tf.matmul(a, b))
 *   with tf.device('/cpu:0'):
 *     sum = tf.add_n(c)
 *   print(sum)
 *
 * Here the two devices are the host's CPU split into two logical devices, CPU:0 and CPU:1, so
 * that the program runs on any machine. Then, if two APUs are installed
 * (TP_PLUGIN_PATH=$PWD/build/plugins TP_APU_DEVICES=2), the same shape of program with Relu, the
 * APU's one kernel, on APU:0 and APU:1: the values cross from the CPU to each APU and back.
 */
#include <tensorplug/tensorplug.h>

static const float values[6] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};

/* a @ b on `device`, with a and b made in its scope as the snippet makes them. */
static tp_tensor_t *matmul_on(tp_context_t *context, const char *device) {
    tp_tensor_t *a, *b, *c;
    TP_CHECK(tp_device_push(context, device));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 3), values, sizeof values, &a));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(3, 2), values, sizeof values, &b));
    TP_CHECK(tp_matmul(context, a, b, false, false, &c));
    TP_CHECK(tp_device_pop(context));
    tp_tensor_release(a);
    tp_tensor_release(b);
    return c;
}

/* relu(x - 3) on `device`: the subtraction has no APU kernel and runs on the CPU. */
static tp_tensor_t *relu_on(tp_context_t *context, const char *device, tp_tensor_t *x,
                            tp_tensor_t *three) {
    tp_tensor_t *shifted, *y;
    TP_CHECK(tp_sub(context, x, three, &shifted));
    TP_CHECK(tp_device_push(context, device));
    TP_CHECK(tp_relu(context, shifted, &y));
    TP_CHECK(tp_device_pop(context));
    tp_tensor_release(shifted);
    return y;
}

/* Sums the replicas' results on /cpu:0 and prints the sum. */
static void add_on_cpu(tp_context_t *context, tp_tensor_t *const *replicas) {
    tp_tensor_t *sum;
    TP_CHECK(tp_device_push(context, "/cpu:0"));
    TP_CHECK(tp_add_n(context, replicas, 2, &sum));
    TP_CHECK(tp_device_pop(context));
    TP_CHECK(tp_tensor_print(sum, stdout));
    tp_tensor_release(sum);
}

int main(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.log_device_placement = true;
    options.placement_log = stdout;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));
    const uint64_t halves[2] = {256u << 20, 256u << 20};
    TP_CHECK(tp_context_set_logical_devices(context, "CPU:0", halves, 2));

    tp_tensor_t *c[2] = {matmul_on(context, "/device:CPU:0"),
                         matmul_on(context, "/device:CPU:1")};
    add_on_cpu(context, c);
    tp_tensor_release(c[0]);
    tp_tensor_release(c[1]);

    if (tp_physical_device_count(context, "APU") < 2) {
        printf("(the APU part needs two APUs: "
               "TP_PLUGIN_PATH=$PWD/build/plugins TP_APU_DEVICES=2)\n");
        tp_context_destroy(context);
        return 0;
    }
    const float data[4] = {1.0f, 2.0f, 4.0f, 8.0f}, three_value = 3.0f;
    tp_tensor_t *x, *three;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 2), data, sizeof data, &x));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &three_value,
                              sizeof three_value, &three));
    tp_tensor_t *r[2] = {relu_on(context, "/device:APU:0", x, three),
                         relu_on(context, "/device:APU:1", x, three)};
    add_on_cpu(context, r);
    tp_tensor_release(r[0]);
    tp_tensor_release(r[1]);
    tp_tensor_release(x);
    tp_tensor_release(three);
    tp_context_destroy(context);
    return 0;
}
