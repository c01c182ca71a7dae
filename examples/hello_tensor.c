/* SPDX-License-Identifier: Apache-2.0 */
/* The README's example: list the devices, make a tensor, print it. */
#include <tensorplug/tensorplug.h>

int main(void) {
    tp_context_t *context;
    TP_CHECK(tp_context_create(NULL, &context)); /* plug-ins are found and registered here */
    TP_CHECK(tp_list_physical_devices(context, NULL, stdout));

    const float values[] = {22, 28, 49, 64};
    tp_tensor_t *c;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 2), values, sizeof values, &c));
    printf("c lives on %s\n", tp_tensor_device(c));
    TP_CHECK(tp_tensor_print(c, stdout));

    tp_tensor_release(c);
    tp_context_destroy(context);
    return 0;
}
