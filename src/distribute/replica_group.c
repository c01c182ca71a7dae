/* SPDX-License-Identifier: Apache-2.0 */
#include "distribute/replica_group.h"

#include <stdlib.h>

#include "base/status.h"

tp_status_t *tp_replica_group_init(tp_replica_group_t *group, size_t size) {
    *group = (tp_replica_group_t){.size = size};
    group->offers = calloc(size, sizeof *group->offers);
    if (group->offers == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    if (pthread_mutex_init(&group->mutex, NULL) != 0) {
        free(group->offers);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "cannot make a mutex");
    }
    if (pthread_cond_init(&group->changed, NULL) != 0) {
        pthread_mutex_destroy(&group->mutex);
        free(group->offers);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "cannot make a condition variable");
    }
    return NULL;
}

void tp_replica_group_free(tp_replica_group_t *group) {
    pthread_cond_destroy(&group->changed);
    pthread_mutex_destroy(&group->mutex);
    free(group->offers);
}

void tp_replica_group_reset(tp_replica_group_t *group) {
    pthread_mutex_lock(&group->mutex);
    group->arrived = 0;
    group->departed = 0;
    pthread_mutex_unlock(&group->mutex);
}

tp_status_t *tp_replica_group_barrier(tp_replica_group_t *group, size_t replica) {
    pthread_mutex_lock(&group->mutex);
    uint64_t generation = group->generation;
    if (++group->arrived == group->size) {
        group->arrived = 0;
        group->generation++;
        pthread_cond_broadcast(&group->changed);
        pthread_mutex_unlock(&group->mutex);
        return NULL;
    }
    while (generation == group->generation && group->departed == 0)
        pthread_cond_wait(&group->changed, &group->mutex);
    bool passed = generation != group->generation;
    pthread_mutex_unlock(&group->mutex);
    if (passed) return NULL;
    return tp_status_make(TP_ABORTED,
                          "replica %zu: another replica returned without joining the collective "
                          "(each replica must make the same collective calls)",
                          replica);
}

void tp_replica_group_depart(tp_replica_group_t *group) {
    pthread_mutex_lock(&group->mutex);
    group->departed++;
    pthread_cond_broadcast(&group->changed);
    pthread_mutex_unlock(&group->mutex);
}
