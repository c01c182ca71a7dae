/* SPDX-License-Identifier: Apache-2.0 */
/* The replicas of one run as a group that meets at barriers: what a collective needs to hand
 * tensors between replica threads, and to fail rather than hang when a replica never comes. */
#ifndef TP_DISTRIBUTE_REPLICA_GROUP_H
#define TP_DISTRIBUTE_REPLICA_GROUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorplug/tensorplug.h"

/* What a replica brings to a collective. */
typedef struct tp_replica_offer {
    tp_tensor_t *const *values;
    size_t count;
} tp_replica_offer_t;

typedef struct tp_replica_group {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    size_t size;
    size_t arrived;      /* at the current barrier */
    uint64_t generation; /* barriers passed */
    size_t departed;     /* replicas whose function returned */
    tp_replica_offer_t *offers; /* by replica */
} tp_replica_group_t;

tp_status_t *tp_replica_group_init(tp_replica_group_t *group, size_t size);
void tp_replica_group_free(tp_replica_group_t *group);
/* Readies the group for a new run. */
void tp_replica_group_reset(tp_replica_group_t *group);

/* Waits until every replica has arrived. Fails, naming `replica`, when one returned instead:
 * then the collective can never complete. */
tp_status_t *tp_replica_group_barrier(tp_replica_group_t *group, size_t replica);
/* A replica's function returned: wakes those waiting for it. */
void tp_replica_group_depart(tp_replica_group_t *group);

#endif
