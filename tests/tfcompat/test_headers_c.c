/* SPDX-License-Identifier: Apache-2.0 */
/* The compatibility headers compile as C11 with every warning the project enables, and keep
 * TensorFlow's layout (layout_checks.h fails the build otherwise). At run time: the
 * *_STRUCT_SIZE macros are usable as values, as a plug-in uses them. */
#include <stdio.h>

#include "layout_checks.h"

int main(void) {
    SP_Device device = {SP_DEVICE_STRUCT_SIZE, NULL, 0, NULL, NULL, NULL, NULL};
    TF_InputRange_Args args = {TF_InputRange_Args_STRUCT_SIZE, NULL, 0, 0, NULL};
    if (device.struct_size != offsetof(SP_Device, pci_bus_id) + sizeof(const char *) ||
        args.struct_size != sizeof args) {
        fprintf(stderr, "struct sizes: SP_Device %zu, TF_InputRange_Args %zu\n",
                device.struct_size, args.struct_size);
        return 1;
    }
    printf("compatibility headers: C layout ok\n");
    return 0;
}
