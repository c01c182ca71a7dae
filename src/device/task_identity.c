/* SPDX-License-Identifier: Apache-2.0 */
#include "device/task_identity.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"

static tp_task_identity_t identity;
static pthread_once_t identity_once = PTHREAD_ONCE_INIT;

/* A whole number in [0, INT32_MAX), or -1. */
static int parse_index(const char *text) {
    if (text == NULL) return -1;
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0 || value >= 2147483647L)
        return -1;
    return (int)value;
}

/* From one launcher's pair of variables: true when both are set and make sense together. */
static bool read_pair(const char *rank_name, const char *size_name) {
    const char *rank_text = tp_env_get(rank_name), *size_text = tp_env_get(size_name);
    if (rank_text == NULL && size_text == NULL) return false;
    int rank = parse_index(rank_text), size = parse_index(size_text);
    if (rank < 0 || size < 1 || rank >= size) {
        char value[96];
        snprintf(value, sizeof value, "%s, %s=%s", rank_text != NULL ? rank_text : "",
                 size_name, size_text != NULL ? size_text : "(unset)");
        tp_env_warn(rank_name, value, "is not a worker index below the job's size",
                    "naming devices /job:localhost/replica:0/task:0");
        return false;
    }
    identity.job = "worker";
    identity.task = rank;
    identity.num_tasks = size;
    return true;
}

static void decide(void) {
    identity.job = "localhost";
    identity.task = 0;
    identity.num_tasks = 1;
    if (!read_pair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"))
        read_pair("PMI_RANK", "PMI_SIZE");
    snprintf(identity.prefix, sizeof identity.prefix, "/job:%s/replica:0/task:%d", identity.job,
             identity.task);
}

const tp_task_identity_t *tp_task_identity(void) {
    pthread_once(&identity_once, decide);
    return &identity;
}

bool tp_task_is_self(const char *job, long long task) {
    const tp_task_identity_t *self = tp_task_identity();
    if (job == NULL || strcmp(job, self->job) == 0) return task < 0 || task == self->task;
    return strcmp(job, "localhost") == 0 && task <= 0;
}
