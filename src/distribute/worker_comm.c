/* SPDX-License-Identifier: Apache-2.0 */
/* Loading the communication library on demand and joining the job once per process. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/private_library.h"
#include "base/status.h"
#include "distribute/worker_comm_internal.h"

#define TP_MPI_LIBRARY_FILE "libtensorplug_mpi.so"

static tp_worker_comm_t worker;
static pthread_mutex_t open_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool opened;

/* Opens the library: TP_MPI_LIBRARY alone when it is set, else the first of tensorplug's
 * private folders (base/private_library.h) that has it. */
static void *open_library(const char **out_path, char *error, size_t capacity) {
    static char paths[TP_PRIVATE_LIBRARY_CANDIDATES][TP_PRIVATE_LIBRARY_PATH_CAPACITY];
    const char *chosen = tp_env_get("TP_MPI_LIBRARY");
    int count = 1;
    if (chosen != NULL)
        snprintf(paths[0], sizeof paths[0], "%s", chosen);
    else
        count = tp_private_library_candidates(TP_MPI_LIBRARY_FILE, paths);
    return tp_private_library_open(paths, count, out_path, error, capacity);
}

static void leave_job(void) {
    pthread_mutex_lock(&worker.mutex);
    /* What is parked stays: an abandoned collective's MPI requests are never completed, so
     * MPI may use that memory until the very end. */
    worker.ops->close(worker.comm);
    snprintf(worker.broken, sizeof worker.broken, "the process is leaving the job");
    pthread_mutex_unlock(&worker.mutex);
}

static tp_status_t *join_job(void) {
    const char *path = NULL;
    char error[512];
    void *library = open_library(&path, error, sizeof error);
    if (library == NULL)
        return tp_status_make(TP_UNAVAILABLE,
                              "cannot load the MPI communication library '%s' (%s); a "
                              "multi-worker strategy needs it: install the tensorplug-mpi "
                              "package, and Open MPI (libopenmpi3) with it",
                              path, error);
    tp_comm_entry_fn entry = NULL;
    *(void **)&entry = dlsym(library, TP_COMM_ENTRY_SYMBOL);
    const tp_comm_ops_t *ops = entry != NULL ? entry() : NULL;
    if (ops == NULL || ops->struct_size < sizeof *ops || ops->abi_version != TP_COMM_ABI_VERSION)
        /* Not unloaded: a library half-initialised is safer left mapped. */
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "'%s' is not a communication library of this tensorplug (%s)",
                              path, ops == NULL ? "no entry point" : "another interface version");
    char message[512] = "";
    if (ops->open(&worker.comm, &worker.rank, &worker.size, worker.description,
                  sizeof worker.description, message, sizeof message) != 0)
        return tp_status_make(TP_UNAVAILABLE, "joining the job through '%s': %s", path, message);
    if (pthread_mutex_init(&worker.mutex, NULL) != 0) {
        ops->close(worker.comm);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "cannot make a mutex");
    }
    worker.ops = ops;
    atexit(leave_job);
    return NULL;
}

tp_status_t *tp_worker_comm_get(tp_worker_comm_t **out) {
    TP_REQUIRE_ARG(out);
    pthread_mutex_lock(&open_mutex);
    tp_status_t *error = opened ? NULL : join_job();
    opened = opened || error == NULL;
    pthread_mutex_unlock(&open_mutex);
    if (error == NULL) *out = &worker;
    return error;
}

int tp_worker_comm_rank(const tp_worker_comm_t *comm) { return comm->rank; }

int tp_worker_comm_size(const tp_worker_comm_t *comm) { return comm->size; }

const char *tp_worker_comm_description(const tp_worker_comm_t *comm) {
    return comm->description;
}

const tp_comm_ops_t *tp_worker_comm_ops(const tp_worker_comm_t *comm, tp_comm_t **out_comm) {
    *out_comm = comm->comm;
    return comm->ops;
}

void tp_worker_comm_park_locked(tp_worker_comm_t *comm, void *object) {
    if (object == NULL) return;
    if (comm->num_parked == comm->parked_capacity) {
        size_t capacity = comm->parked_capacity * 2 + 4;
        void **grown = realloc(comm->parked, capacity * sizeof *grown);
        if (grown == NULL) return; /* lost track of rather than freed: MPI may still use it */
        comm->parked = grown;
        comm->parked_capacity = capacity;
    }
    comm->parked[comm->num_parked++] = object;
}

void tp_worker_comm_park(tp_worker_comm_t *comm, void *object) {
    pthread_mutex_lock(&comm->mutex);
    tp_worker_comm_park_locked(comm, object);
    pthread_mutex_unlock(&comm->mutex);
}
