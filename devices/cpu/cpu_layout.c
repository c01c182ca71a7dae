/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels that move elements without computing: Identity and Reshape (a plain copy: the
 * shapes differ, the row-major bytes do not) and Transpose. */
#include <string.h>

#include "cpu_kernels.h"

void cpu_copy_kernel(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    if (x.view.byte_size > 0) memcpy(y.data, x.data, x.view.byte_size);
}

static void transpose(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    const int64_t *perm = NULL;
    int32_t count = 0;
    tp_cpu_host->kernel_attr_int_list(context, "perm", &perm, &count, status);
    if (cpu_failed(status)) return;
    int32_t rank = x.view.rank;
    int64_t x_strides[TP_MAX_RANK];
    cpu_row_major_strides(rank, x.view.dims, x_strides);
    /* Output dimension d walks input dimension perm[d] (reversed when perm is empty). */
    int64_t walk[TP_MAX_RANK];
    for (int32_t d = 0; d < rank; d++)
        walk[d] = x_strides[count == 0 ? rank - 1 - d : perm[d]];
    size_t size = cpu_element_size(&x.view);
    for (int64_t i = 0; i < y.view.num_elements; i++) {
        int64_t rest = i, source = 0;
        for (int32_t d = rank - 1; d >= 0; d--) {
            source += (rest % y.view.dims[d]) * walk[d];
            rest /= y.view.dims[d];
        }
        memcpy((char *)y.data + (size_t)i * size, (const char *)x.data + (size_t)source * size,
               size);
    }
}

void cpu_register_layout_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register_native(registrar, "Reshape", "T", CPU_ALL, cpu_copy_kernel, status);
    cpu_register_native(registrar, "Transpose", "T", CPU_ALL, transpose, status);
}
