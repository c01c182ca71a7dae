/* SPDX-License-Identifier: Apache-2.0 */
/* What the CPU's oneDNN users share (cpu_onednn.c: convolutions and poolings;
 * cpu_onednn_matmul.c: batched matrix products). */
#ifndef TP_DEVICES_CPU_ONEDNN_H
#define TP_DEVICES_CPU_ONEDNN_H

#include <dnnl.h>

#include "cpu_kernels.h"

/* Where a scratchpad handed to oneDNN starts: on a page. oneDNN 2.6 sizes a scratchpad as if it
 * started on a wider boundary than the cache line: its AVX2 1x1 filter gradient with a stride
 * wrote up to 36 bytes past a scratchpad that started on 64 bytes but not on 128 (heap
 * corruption in test_conv), and nothing past one that starts on a page. */
enum { CPU_ONEDNN_SCRATCH_ALIGNMENT = 4096 };

/* oneDNN's CPU engine, made once; NULL with `status` set, naming `op_name`, where oneDNN has
 * none. */
dnnl_engine_t cpu_onednn_engine(const char *op_name, tp_plugin_status_t *status);

/* libgomp's, declared here because omp.h is the compiler's (clang has none for libgomp). The
 * oneDNN users run it on one OpenMP thread per call, in slices on the CPU's own pool. */
void omp_set_num_threads(int threads);
int omp_get_max_threads(void);

/* BatchMatMulV2 of float32 where each operand's batch is the output's or one matrix, through
 * oneDNN (cpu_onednn_matmul.c): true when it took the call (done, or `status` set), false for
 * other dtypes and batches that broadcast against each other, untouched. x, y and z as the
 * kernel reads them; z is not empty and the products sum at least one term. */
bool cpu_onednn_batch_matmul(const cpu_tensor_t *x, const cpu_tensor_t *y, cpu_tensor_t *z,
                             bool adj_x, bool adj_y, tp_plugin_status_t *status);

#endif
