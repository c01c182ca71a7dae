/* SPDX-License-Identifier: Apache-2.0 */
/* Memory planning for a graph's intermediate values on one device: each value is live from the
 * step that makes it to the last step that reads it, and values whose lives do not overlap
 * share memory. The executor then takes one block per device and run instead of one
 * allocation per value. */
#ifndef TP_GRAPH_MEMORY_PLAN_H
#define TP_GRAPH_MEMORY_PLAN_H

#include <stdint.h>

#include "tensorplug/tensorplug.h"

/* Offsets in a block are multiples of this, as the plug-in ABI promises for allocations. */
#define TP_PLAN_ALIGNMENT 64u

typedef struct tp_planned_value {
    int32_t first_step, last_step; /* live during [first_step, last_step] */
    uint64_t size;
    uint64_t offset; /* set by tp_memory_plan */
} tp_planned_value_t;

/* Places `values`, given in order of first_step, first fit below the values live at the same
 * time; *out_size is the block they need. */
tp_status_t *tp_memory_plan(tp_planned_value_t *values, int32_t count, uint64_t *out_size);

#endif
