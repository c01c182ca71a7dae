/* SPDX-License-Identifier: Apache-2.0 */
/* The mirrored strategy's insides, shared by its run loop and its collectives. */
#ifndef TP_DISTRIBUTE_STRATEGY_H
#define TP_DISTRIBUTE_STRATEGY_H

#include <stdatomic.h>

#include "device/device.h"
#include "distribute/replica_group.h"
#include "tensorplug/training.h"

struct tp_mirrored_strategy {
    tp_context_t *context; /* retained */
    size_t num_replicas;
    tp_device_t **devices; /* by replica */
    atomic_bool running;
    uint64_t steps; /* runs so far, for the profile; changed only while running */
    tp_replica_group_t group;
};

struct tp_replica {
    tp_mirrored_strategy_t *strategy;
    size_t index;
    tp_replica_fn_t fn;
    void *user_data;
    tp_status_t *result;
    /* Its failure followed from another replica's: reported only if none other is. */
    bool failed_by_another;
};

/* The device of replica `index`. */
static inline tp_device_t *tp_replica_device_handle(const tp_replica_context_t *replica) {
    return replica->strategy->devices[replica->index];
}

#endif
