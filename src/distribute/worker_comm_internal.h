/* SPDX-License-Identifier: Apache-2.0 */
/* The worker communicator's state, shared by its loader (worker_comm.c) and its collectives
 * (worker_collectives.c). */
#ifndef TP_DISTRIBUTE_WORKER_COMM_INTERNAL_H
#define TP_DISTRIBUTE_WORKER_COMM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "distribute/worker_comm.h"

struct tp_worker_comm {
    const tp_comm_ops_t *ops;
    tp_comm_t *comm;
    int rank, size;
    char description[128];
    pthread_mutex_t mutex; /* one collective at a time; guards what follows */
    uint64_t sequence;     /* collectives entered */
    char broken[320];      /* why no collective can run any more; "" while they can */
    void **parked;         /* what an abandoned collective may still use; never freed */
    size_t num_parked, parked_capacity;
};

/* tp_worker_comm_park with comm->mutex held. */
void tp_worker_comm_park_locked(tp_worker_comm_t *comm, void *object);

#endif
