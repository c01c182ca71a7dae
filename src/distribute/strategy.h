/* SPDX-License-Identifier: Apache-2.0 */
/* The mirrored strategy's insides, shared by its run loop and its collectives. */
#ifndef TP_DISTRIBUTE_STRATEGY_H
#define TP_DISTRIBUTE_STRATEGY_H

#include <stdatomic.h>

#include "device/device.h"
#include "distribute/replica_group.h"
#include "distribute/worker_comm.h"
#include "tensorplug/training.h"

struct tp_mirrored_strategy {
    tp_context_t *context; /* retained */
    size_t num_replicas;
    tp_device_t **devices; /* by replica */
    atomic_bool running;
    uint64_t steps; /* runs so far, for the profile; changed only while running */
    tp_replica_group_t group;
    /* Several workers (multi_worker_strategy.c); NULL workers: this process alone. */
    tp_worker_comm_t *workers;
    size_t worker_index, num_workers;
    tp_multi_worker_options_t options;
    /* The all-reduce's hand-over from the local leader (replica 0) to the other local
     * replicas: its results on the host and its failure. Written before a barrier, read
     * after it. */
    tp_tensor_t **leader_results;
    tp_status_t *leader_error;
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

/* Frees the multi-worker part of a strategy. */
void tp_multi_worker_strategy_free(tp_mirrored_strategy_t *strategy);

/* tp_replica_all_reduce's work across workers, after the first barrier and the offers' check:
 * every local replica calls it. */
tp_status_t *tp_multi_worker_all_reduce(tp_replica_context_t *replica, tp_reduce_op_t op,
                                        size_t count, tp_tensor_t **out);
/* After the all-reduce's last barrier: the leader lets go of what it handed over. */
void tp_multi_worker_all_reduce_end(tp_replica_context_t *replica, size_t count);

#endif
