/* SPDX-License-Identifier: Apache-2.0 */
/* Prints Relu of (-3, 3) computed on GPU:0: one process, so that each run builds the OpenCL
 * plug-in's program anew, from the disk cache or its source (test_opencl_cli.sh). */
#include <stdio.h>

#include "tensorplug/tensorplug.h"

int main(void) {
    tp_context_t *context;
    TP_CHECK(tp_context_create(NULL, &context));
    const float values[] = {-3.0f, 3.0f};
    tp_tensor_t *x, *y;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2), values, sizeof values, &x));
    TP_CHECK(tp_device_push(context, "/GPU:0"));
    TP_CHECK(tp_relu(context, x, &y));
    TP_CHECK(tp_device_pop(context));
    TP_CHECK(tp_tensor_print(y, stdout));
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_context_destroy(context);
    return 0;
}
