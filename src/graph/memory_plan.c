/* SPDX-License-Identifier: Apache-2.0 */
#include "graph/memory_plan.h"

#include <stdlib.h>

#include "base/status.h"

static uint64_t aligned(uint64_t size) {
    return (size + TP_PLAN_ALIGNMENT - 1) / TP_PLAN_ALIGNMENT * TP_PLAN_ALIGNMENT;
}

tp_status_t *tp_memory_plan(tp_planned_value_t *values, int32_t count, uint64_t *out_size) {
    /* The values live now, by offset. */
    int32_t *live = malloc(((size_t)count + 1) * sizeof *live);
    if (live == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    int32_t num_live = 0;
    uint64_t size = 0;
    for (int32_t v = 0; v < count; v++) {
        tp_planned_value_t *value = &values[v];
        int32_t kept = 0;
        for (int32_t l = 0; l < num_live; l++)
            if (values[live[l]].last_step >= value->first_step) live[kept++] = live[l];
        num_live = kept;
        /* The lowest gap between live values that is large enough, else past the last. */
        uint64_t need = aligned(value->size), at = 0;
        int32_t position = 0;
        for (; position < num_live; position++) {
            const tp_planned_value_t *next = &values[live[position]];
            if (next->offset >= at + need) break;
            uint64_t end = next->offset + aligned(next->size);
            if (end > at) at = end;
        }
        value->offset = at;
        for (int32_t l = num_live; l > position; l--) live[l] = live[l - 1];
        live[position] = v;
        num_live++;
        if (at + need > size) size = at + need;
    }
    free(live);
    *out_size = size;
    return NULL;
}
