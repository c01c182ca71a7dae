/* SPDX-License-Identifier: Apache-2.0 */
/* Transpose on the GPU, from kernels/layout.cl, for every dtype: elements move as bytes of
 * their size, so the result is the CPU's bit for bit. compute only queues work; it never
 * waits for the device. */
#include <string.h>

#include "opencl_device.h"

/* The kernels transpose_1, transpose_4 and transpose_8, by element size. */
static int32_t transpose_ids[3];

/* Output dimension d of `dims` walks the input by walk[d] elements. Dimensions of length 1
 * walk nowhere, and an output dimension whose walk steps over the whole of the next one is
 * one longer dimension with it; so the kernel divides less, and a transpose that moves
 * nothing is found to be a copy. Returns the rank left. */
static int32_t simplify(int32_t rank, const int64_t *dims, const int64_t *walk,
                        cl_long out_dims[8], cl_long out_walk[8]) {
    int32_t kept = 0;
    for (int32_t d = 0; d < rank; d++) {
        if (dims[d] == 1) continue;
        if (kept > 0 && out_walk[kept - 1] == walk[d] * dims[d]) {
            out_dims[kept - 1] *= dims[d];
            out_walk[kept - 1] = walk[d];
            continue;
        }
        out_dims[kept] = dims[d];
        out_walk[kept] = walk[d];
        kept++;
    }
    return kept;
}

static void transpose(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x, y;
    if (!opencl_input(context, 0, &x, status) || !opencl_output(context, 0, &y, status)) return;
    const int64_t *perm = NULL;
    int32_t count = 0;
    opencl_host->kernel_attr_int_list(context, "perm", &perm, &count, status);
    if (opencl_failed(status) || y.num_elements == 0) return;
    int32_t rank = x.rank;
    int64_t x_strides[TP_MAX_RANK], walk[TP_MAX_RANK], stride = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        x_strides[d] = stride;
        stride *= x.dims[d];
    }
    /* Output dimension d walks input dimension perm[d] (reversed when perm is empty). */
    for (int32_t d = 0; d < rank; d++) walk[d] = x_strides[count == 0 ? rank - 1 - d : perm[d]];
    cl_long dims8[8] = {0}, walk8[8] = {0};
    cl_int kept = simplify(rank, y.dims, walk, dims8, walk8);
    if (kept == 0 || (kept == 1 && walk8[0] == 1)) {
        opencl_copy_tensor(context, "Transpose", &x, &y, status);
        return;
    }
    uint64_t size = y.byte_size / (uint64_t)y.num_elements;
    int32_t id = transpose_ids[size == 1 ? 0 : size == 4 ? 1 : 2];
    cl_mem x_mem = (cl_mem)x.mem, y_mem = (cl_mem)y.mem;
    cl_ulong n = (cl_ulong)y.num_elements;
    cl_long8 packed[2];
    memcpy(&packed[0], dims8, sizeof packed[0]);
    memcpy(&packed[1], walk8, sizeof packed[1]);
    const opencl_arg_t args[] = {OPENCL_ARG(x_mem),     OPENCL_ARG(x.offset), OPENCL_ARG(y_mem),
                                 OPENCL_ARG(y.offset),  OPENCL_ARG(n),        OPENCL_ARG(kept),
                                 OPENCL_ARG(packed[0]), OPENCL_ARG(packed[1])};
    opencl_launch(context, "Transpose", id, args, sizeof args / sizeof *args, (size_t)n, 0,
                  status);
}

void opencl_register_layout_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    static const char *const names[3] = {"transpose_1", "transpose_4", "transpose_8"};
    for (int i = 0; i < 3 && !opencl_failed(status); i++)
        transpose_ids[i] = opencl_kernel_id("layout", names[i], status);
    /* float64 moves as 8 bytes, so it needs no cl_khr_fp64. */
    static const tp_dtype_t all_types[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32,
                                           TP_INT64,   TP_UINT8,   TP_BOOL};
    opencl_register(registrar, "Transpose", "T", all_types, 6, NULL, transpose, status);
}
