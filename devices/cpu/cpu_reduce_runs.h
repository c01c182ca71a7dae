/* SPDX-License-Identifier: Apache-2.0 */
/* Float reductions (Sum, Mean, Max, Min, Prod) as runs of (outer, reduced, inner) blocks
 * (cpu_reduce_runs.c), used by cpu_reduction.c. */
#ifndef TP_DEVICES_CPU_REDUCE_RUNS_H
#define TP_DEVICES_CPU_REDUCE_RUNS_H

#include <stdbool.h>

#include "cpu_kernels.h"

typedef enum {
    CPU_REDUCE_SUM,
    CPU_REDUCE_MEAN,
    CPU_REDUCE_MAX,
    CPU_REDUCE_MIN,
    CPU_REDUCE_PROD
} cpu_reduce_t;

/* Reduces float32 or float64 `x` over the dimensions d with reduced[d] into `y` (its kept
 * dimensions in order, row-major). Sums are pairwise; Max and Min propagate NaN; the reduction
 * of nothing is 0 for Sum, NaN for Mean (0 / 0), -inf for Max, inf for Min and 1 for Prod.
 * False with `status` set, naming `op`, when out of host memory. */
bool cpu_reduce_floats(cpu_reduce_t op, const cpu_tensor_t *x, const bool *reduced,
                       cpu_tensor_t *y, const char *op_name, tp_plugin_status_t *status);

#endif
