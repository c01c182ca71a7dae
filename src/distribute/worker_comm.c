/* SPDX-License-Identifier: Apache-2.0 */
/* Loading the communication library on demand and joining the job once per process. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/status.h"
#include "distribute/worker_comm_internal.h"

#define TP_MPI_LIBRARY_FILE "libtensorplug_mpi.so"

static tp_worker_comm_t worker;
static pthread_mutex_t open_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool opened;

/* The library's path beside the one holding this code (libtensorplug.so), or its bare name
 * for the loader's search when this code is in a program. */
static void library_path(char *path, size_t capacity) {
    const char *chosen = tp_env_get("TP_MPI_LIBRARY");
    if (chosen != NULL) {
        snprintf(path, capacity, "%s", chosen);
        return;
    }
    Dl_info info;
    const char *slash = NULL;
    if (dladdr((void *)library_path, &info) != 0 && info.dli_fname != NULL &&
        strstr(info.dli_fname, "libtensorplug") != NULL)
        slash = strrchr(info.dli_fname, '/');
    if (slash != NULL)
        snprintf(path, capacity, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                 TP_MPI_LIBRARY_FILE);
    else
        snprintf(path, capacity, "%s", TP_MPI_LIBRARY_FILE);
}

static void leave_job(void) {
    pthread_mutex_lock(&worker.mutex);
    worker.ops->close(worker.comm);
    for (size_t i = 0; i < worker.num_parked; i++) free(worker.parked[i]);
    free(worker.parked);
    worker.parked = NULL;
    worker.num_parked = 0;
    snprintf(worker.broken, sizeof worker.broken, "the process is leaving the job");
    pthread_mutex_unlock(&worker.mutex);
}

static tp_status_t *join_job(void) {
    char path[4096];
    library_path(path, sizeof path);
    /* Global, so that MPI's own components, which it dlopens, resolve against libmpi. */
    void *library = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (library == NULL)
        return tp_status_make(TP_UNAVAILABLE,
                              "cannot load the MPI communication library '%s' (%s); a "
                              "multi-worker strategy needs it, and it needs Open MPI "
                              "(libopenmpi3)",
                              path, dlerror());
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

void tp_worker_comm_park_locked(tp_worker_comm_t *comm, void *buffer) {
    if (buffer == NULL) return;
    if (comm->num_parked == comm->parked_capacity) {
        size_t capacity = comm->parked_capacity * 2 + 4;
        void **grown = realloc(comm->parked, capacity * sizeof *grown);
        if (grown == NULL) return; /* leaked rather than freed: MPI may still write it */
        comm->parked = grown;
        comm->parked_capacity = capacity;
    }
    comm->parked[comm->num_parked++] = buffer;
}

void tp_worker_comm_park(tp_worker_comm_t *comm, void *buffer) {
    pthread_mutex_lock(&comm->mutex);
    tp_worker_comm_park_locked(comm, buffer);
    pthread_mutex_unlock(&comm->mutex);
}
