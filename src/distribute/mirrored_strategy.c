/* SPDX-License-Identifier: Apache-2.0 */
/* The mirrored strategy: a replica per device, each run on its own host thread inside a device
 * scope on its device, so that every op of the step lands there. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/profile_hooks.h"
#include "base/status.h"
#include "context/context.h"
#include "distribute/strategy.h"

tp_status_t *tp_mirrored_strategy_create(tp_context_t *context, const char *const *devices,
                                         size_t count, tp_mirrored_strategy_t **out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(devices);
    TP_REQUIRE_ARG(out);
    if (count == 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_mirrored_strategy_create: at least one device is needed");
    tp_device_t **found = calloc(count, sizeof *found);
    if (found == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED,
                              "tp_mirrored_strategy_create: out of host memory");
    for (size_t i = 0; i < count; i++) {
        tp_status_t *error = devices[i] == NULL
                                 ? tp_status_make(TP_INVALID_ARGUMENT, "device %zu is NULL", i)
                                 : tp_context_find_device(context, devices[i], &found[i]);
        for (size_t k = 0; k < i && error == NULL; k++)
            if (found[k] == found[i])
                error = tp_status_make(TP_INVALID_ARGUMENT,
                                       "%s is named twice (devices %zu and %zu)",
                                       found[i]->full_name, k, i);
        if (error != NULL) {
            free(found);
            return tp_status_annotate(error, "tp_mirrored_strategy_create");
        }
    }
    tp_mirrored_strategy_t *strategy = calloc(1, sizeof *strategy);
    tp_status_t *error = strategy == NULL ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host "
                                                           "memory")
                                          : tp_replica_group_init(&strategy->group, count);
    if (error != NULL) {
        free(strategy);
        free(found);
        return tp_status_annotate(error, "tp_mirrored_strategy_create");
    }
    strategy->context = context;
    tp_context_retain(context);
    strategy->num_replicas = count;
    strategy->devices = found;
    atomic_init(&strategy->running, false);
    *out = strategy;
    return NULL;
}

void tp_mirrored_strategy_destroy(tp_mirrored_strategy_t *strategy) {
    if (strategy == NULL) return;
    tp_multi_worker_strategy_free(strategy);
    tp_replica_group_free(&strategy->group);
    tp_context_release(strategy->context);
    free(strategy->devices);
    free(strategy);
}

size_t tp_mirrored_strategy_num_replicas(const tp_mirrored_strategy_t *strategy) {
    return strategy != NULL ? strategy->num_replicas : 0;
}

const char *tp_mirrored_strategy_device(const tp_mirrored_strategy_t *strategy, size_t replica) {
    if (strategy == NULL || replica >= strategy->num_replicas) return NULL;
    return strategy->devices[replica]->full_name;
}

size_t tp_replica_index(const tp_replica_context_t *replica) {
    return replica->index;
}

tp_context_t *tp_replica_context(const tp_replica_context_t *replica) {
    return replica->strategy->context;
}

const char *tp_replica_device(const tp_replica_context_t *replica) {
    return tp_replica_device_handle(replica)->full_name;
}

static void *run_replica(void *arg) {
    tp_replica_context_t *replica = arg;
    tp_context_t *context = replica->strategy->context;
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    if (profile != NULL) profile->replica_begin(replica->index, tp_replica_device_handle(replica));
    replica->result = tp_device_push(context, tp_replica_device(replica));
    if (replica->result == NULL) {
        replica->result = replica->fn(replica, replica->user_data);
        tp_status_free(tp_device_pop(context));
    }
    if (profile != NULL)
        profile->replica_end(replica->index, tp_replica_device_handle(replica), begin_ns);
    tp_replica_group_depart(&replica->strategy->group);
    return NULL;
}

/* The first failure by replica order, preferring one that did not merely follow another's. */
static tp_status_t *first_failure(tp_replica_context_t *replicas, size_t count) {
    size_t chosen = count;
    for (size_t r = 0; r < count && chosen == count; r++)
        if (replicas[r].result != NULL && !replicas[r].failed_by_another) chosen = r;
    for (size_t r = 0; r < count && chosen == count; r++)
        if (replicas[r].result != NULL) chosen = r;
    tp_status_t *error = NULL;
    for (size_t r = 0; r < count; r++) {
        if (r == chosen)
            error = tp_status_annotate(replicas[r].result, "replica %zu on %s", r,
                                       tp_replica_device(&replicas[r]));
        else
            tp_status_free(replicas[r].result);
    }
    return error;
}

tp_status_t *tp_mirrored_strategy_run(tp_mirrored_strategy_t *strategy, tp_replica_fn_t fn,
                                      void *user_data) {
    TP_REQUIRE_ARG(strategy);
    TP_REQUIRE_ARG(fn);
    size_t count = strategy->num_replicas;
    tp_replica_context_t *replicas = calloc(count, sizeof *replicas);
    pthread_t *threads = calloc(count, sizeof *threads);
    bool *started = calloc(count, sizeof *started);
    if (replicas == NULL || threads == NULL || started == NULL) {
        free(replicas);
        free(threads);
        free(started);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "tp_mirrored_strategy_run: out of host "
                              "memory");
    }
    if (atomic_exchange(&strategy->running, true)) {
        free(replicas);
        free(threads);
        free(started);
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "tp_mirrored_strategy_run: the strategy is running already (one "
                              "run at a time)");
    }
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    uint64_t step = ++strategy->steps;
    tp_replica_group_reset(&strategy->group);
    for (size_t r = 0; r < count; r++) {
        replicas[r] = (tp_replica_context_t){strategy, r, fn, user_data, NULL, false};
        started[r] = pthread_create(&threads[r], NULL, run_replica, &replicas[r]) == 0;
        if (!started[r]) {
            replicas[r].result = tp_status_make(TP_RESOURCE_EXHAUSTED, "cannot start a thread");
            tp_replica_group_depart(&strategy->group);
        }
    }
    for (size_t r = 0; r < count; r++)
        if (started[r]) pthread_join(threads[r], NULL);
    atomic_store(&strategy->running, false);
    if (profile != NULL) profile->mirrored_step(step, count, begin_ns);
    tp_status_t *error = first_failure(replicas, count);
    free(replicas);
    free(threads);
    free(started);
    return error;
}
