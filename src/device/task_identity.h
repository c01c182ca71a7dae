/* SPDX-License-Identifier: Apache-2.0 */
/* Which task of which job this process is, for device names. A process that mpirun started is
 * worker K of N ("/job:worker/replica:0/task:K"); any other is "/job:localhost/replica:0/task:0".
 * Read from the variables mpirun sets, so that naming never needs MPI itself loaded. */
#ifndef TP_DEVICE_TASK_IDENTITY_H
#define TP_DEVICE_TASK_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tp_task_identity {
    const char *job; /* "localhost" or "worker" */
    int task;        /* this process's index in the job */
    int num_tasks;   /* the job's processes; 1 outside mpirun */
    char prefix[64]; /* "/job:worker/replica:0/task:3" */
} tp_task_identity_t;

/* The process's identity, decided once from the environment (OMPI_COMM_WORLD_RANK and _SIZE,
 * or PMI_RANK and PMI_SIZE). Values that do not make a task of a job are warned about once and
 * the process stays localhost task 0. Thread-safe. */
const tp_task_identity_t *tp_task_identity(void);

/* Whether a device name's job and task (as parsed; absent ones given as NULL and -1) name this
 * process: "localhost" task 0 always does, as does the process's own job and task. */
bool tp_task_is_self(const char *job, long long task);

#endif
