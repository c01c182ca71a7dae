/* SPDX-License-Identifier: Apache-2.0 */
/* What the CPU's kernels share: the host table, tensor access and a parallel loop. */
#ifndef TP_DEVICES_CPU_KERNELS_H
#define TP_DEVICES_CPU_KERNELS_H

#include <stdbool.h>

#include "cpu_dtypes.h"
#include "tensorplug/plugin.h"

extern const tp_host_api_t *tp_cpu_host;

/* A tensor of a kernel call, with its data as a host pointer (the CPU's memory handles are
 * host pointers). */
typedef struct {
    tp_tensor_view_t view;
    void *data;
} cpu_tensor_t;

bool cpu_input(tp_kernel_context_t *context, int32_t index, cpu_tensor_t *out,
               tp_plugin_status_t *status);
bool cpu_output(tp_kernel_context_t *context, int32_t index, cpu_tensor_t *out,
                tp_plugin_status_t *status);
bool cpu_failed(const tp_plugin_status_t *status);

/* Calls fn over [0, count) in slices on both (all) cores when count * cost is large enough to
 * pay for the threads, else on the calling thread. */
/* Reads TP_CPU_THREADS, once, before the first kernel runs. */
void cpu_configure_threads(tp_registrar_t *registrar);
typedef void (*cpu_range_fn)(void *arg, int64_t begin, int64_t end);
void cpu_parallel_for(int64_t count, int64_t cost_per_item, cpu_range_fn fn, void *arg);

/* Registers one kernel for `op` on the CPU for the dtypes listed for attribute `attr` (NULL:
 * no constraint). float16 and bfloat16 among them run compute's float32 code on float32
 * copies, rounded back once when it returns (cpu_staging.c): compute never sees them. */
void cpu_register(tp_registrar_t *registrar, const char *op, const char *attr,
                  const tp_dtype_t *dtypes, size_t num_dtypes,
                  void (*compute)(void *, tp_kernel_context_t *, tp_plugin_status_t *),
                  tp_plugin_status_t *status);
/* The same for a kernel that handles every listed dtype itself, 16-bit floats included: one
 * that moves bytes, converts (Cast) or makes values (Fill, random). */
void cpu_register_native(tp_registrar_t *registrar, const char *op, const char *attr,
                         const tp_dtype_t *dtypes, size_t num_dtypes,
                         void (*compute)(void *, tp_kernel_context_t *, tp_plugin_status_t *),
                         tp_plugin_status_t *status);
/* Both of the above: one kernel with its state and create (NULL for a plain one). */
void cpu_register_kernel(tp_registrar_t *registrar, const char *op, const char *attr,
                         const tp_dtype_t *dtypes, size_t num_dtypes, void *kernel_state,
                         void *(*create)(void *, tp_kernel_context_t *, tp_plugin_status_t *),
                         void (*compute)(void *, tp_kernel_context_t *, tp_plugin_status_t *),
                         tp_plugin_status_t *status);
/* Called by cpu_input and cpu_output: while a staged kernel runs on 16-bit floats, replaces a
 * 16-bit tensor by its float32 stand-in; false with `status` set when out of memory. */
bool cpu_stage(bool input, int32_t index, tp_kernel_context_t *context, cpu_tensor_t *tensor,
               tp_plugin_status_t *status);

/* Writes `value` into element i as Cast converts a float64 to `dtype`, any dtype: a 16-bit
 * float rounded to nearest even, an integer saturated (cpu_elementwise.c). */
void cpu_store_double(void *data, tp_dtype_t dtype, int64_t i, double value);
/* The element strides of `view` along an output of `rank` dimensions that it broadcasts to
 * (NumPy's rule: aligned to the output's last dimensions), 0 along those it is broadcast over
 * (cpu_elementwise.c). */
void cpu_broadcast_strides(const tp_tensor_view_t *view, int32_t rank, int64_t *strides);

/* Copies input 0 to output 0 byte for byte: Identity, and Reshape. */
void cpu_copy_kernel(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status);

/* Each file's kernels. */
void cpu_register_elementwise_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_matmul_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_reduction_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_layout_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_random_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_activation_grad_kernels(tp_registrar_t *registrar,
                                          tp_plugin_status_t *status);
void cpu_register_softmax_loss_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_batch_norm_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_dropout_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_optimizer_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_array_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_gather_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_compare_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);

/* Helpers of the kernels that work on any dtype by element size (cpu_array.c). */
/* Bytes per element of a view; 0 for an empty one. */
size_t cpu_element_size(const tp_tensor_view_t *view);
/* Element strides of a dense row-major tensor. */
void cpu_row_major_strides(int32_t rank, const int64_t *dims, int64_t *strides);
/* The product of dims[begin, end): 1 where that range is empty. */
int64_t cpu_dims_product(const int64_t *dims, int32_t begin, int32_t end);
/* Writes the `size` bytes at `value` to each of `count` elements at `data`. */
void cpu_fill_elements(void *data, int64_t count, const void *value, size_t size);
/* `value` as one element of `dtype` (at most 16 bytes) at `out`, which is aligned for any
 * dtype (it is stored through the dtype's C type); fails naming `op` for a dtype it cannot
 * write. */
bool cpu_scalar_bytes(tp_dtype_t dtype, double value, void *out, const char *op,
                      tp_plugin_status_t *status);
void cpu_register_conv_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_pool_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_transcendental_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void cpu_register_softmax_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);

#endif
