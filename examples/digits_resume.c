/* SPDX-License-Identifier: Apache-2.0 */
/* The digits driver's training state across processes and restarts: checkpoints of every
 * weight and the optimizer's state, written by worker 0, and the start of a run, where every
 * worker takes worker 0's state (restored from the last checkpoint when there is one). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "digits_common.h"

enum { MAX_STATE = 1024 };

tp_status_t *digits_checkpoint_save(const char *path, tp_variable_t *const *state,
                                    size_t count) {
    /* Mirrored copies share a name and a value: the archive keeps each name once. */
    tp_variable_t *unique[MAX_STATE];
    size_t kept = 0;
    for (size_t i = 0; i < count && kept < MAX_STATE; i++) {
        bool seen = false;
        for (size_t k = 0; k < kept && !seen; k++)
            seen = strcmp(tp_variable_name(unique[k]), tp_variable_name(state[i])) == 0;
        if (!seen) unique[kept++] = state[i];
    }
    /* Written beside the old file and renamed over it, so a crash mid-write leaves the old. */
    return tp_checkpoint_save(path, unique, NULL, kept);
}

tp_status_t *digits_state_start(tp_context_t *c, tp_mirrored_strategy_t *strategy,
                                const char *path, tp_variable_t *const *state, size_t count,
                                bool *out_restored) {
    tp_status_t *error = NULL;
    *out_restored = false;
    if (path != NULL && tp_mirrored_strategy_worker_index(strategy) == 0 &&
        access(path, F_OK) == 0) {
        error = tp_checkpoint_load(c, path, state, NULL, count);
        *out_restored = error == NULL;
    }
    /* Every worker comes to the broadcast, so a failure on worker 0 is reported after it. */
    tp_status_t *broadcast = tp_mirrored_strategy_broadcast_variables(strategy, state, count);
    if (error == NULL) return broadcast;
    tp_status_free(broadcast);
    return error;
}
