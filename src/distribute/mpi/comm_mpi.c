/* SPDX-License-Identifier: Apache-2.0 */
/* libtensorplug_mpi.so: the communication interface of comm_abi.h over MPI. It sees only that
 * header and mpi.h; the core dlopens it when a program asks for several workers, so a program
 * that never does never loads MPI. Collectives run on a communicator of their own (a copy of
 * MPI_COMM_WORLD), so they cannot match an application's own MPI traffic. */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distribute/comm_abi.h"

#define TP_COMM_EXPORT __attribute__((visibility("default")))

struct tp_comm {
    MPI_Comm world; /* our own copy */
    int rank, size;
    bool abandoned; /* a request was given up in flight: MPI_Finalize would wait for it */
    tp_comm_request_t *parked; /* requests given up in flight, freed (not waited for) at close */
};

struct tp_comm_request {
    tp_comm_t *comm;
    int count;           /* MPI requests */
    MPI_Request *pending;
    int *peer;           /* exchange_notes: the worker each receive is from, else NULL */
    bool *done;          /* by MPI request */
    tp_comm_request_t *next_parked;
};

enum { NOTE_TAG = 7 };

static int fail(char *message, size_t capacity, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *message, size_t capacity, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(message, capacity, format, args);
    va_end(args);
    return -1;
}

/* An MPI error code as text, after `what`. */
static int fail_mpi(char *message, size_t capacity, const char *what, int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) snprintf(text, sizeof text, "?");
    return fail(message, capacity, "%s failed: %s (MPI error %d)", what, text, code);
}

static int comm_open(tp_comm_t **out_comm, int *out_rank, int *out_size, char *description,
                     size_t description_capacity, char *message, size_t capacity) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        /* One thread calls MPI at a time (the core serializes its collectives). */
        int provided = 0;
        int code = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (code != MPI_SUCCESS) return fail_mpi(message, capacity, "MPI_Init_thread", code);
        if (provided < MPI_THREAD_SERIALIZED)
            return fail(message, capacity, "MPI offers thread level %d; serialized calls from "
                        "several threads (%d) are needed", provided, MPI_THREAD_SERIALIZED);
    }
    tp_comm_t *comm = calloc(1, sizeof *comm);
    if (comm == NULL) return fail(message, capacity, "out of host memory");
    /* Errors come back as codes, which become statuses, instead of aborting the job. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int code = MPI_Comm_dup(MPI_COMM_WORLD, &comm->world);
    if (code != MPI_SUCCESS) {
        free(comm);
        return fail_mpi(message, capacity, "MPI_Comm_dup", code);
    }
    MPI_Comm_set_errhandler(comm->world, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm->world, &comm->rank);
    MPI_Comm_size(comm->world, &comm->size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    version[strcspn(version, ",\n")] = '\0'; /* "Open MPI v4.1.4" */
    snprintf(description, description_capacity, "%s", version);
    *out_comm = comm;
    *out_rank = comm->rank;
    *out_size = comm->size;
    return 0;
}

static void request_free(tp_comm_request_t *request);

static void comm_close(tp_comm_t *comm) {
    if (comm == NULL) return;
    while (comm->parked != NULL) {
        tp_comm_request_t *next = comm->parked->next_parked;
        request_free(comm->parked);
        comm->parked = next;
    }
    if (!comm->abandoned) {
        MPI_Comm_free(&comm->world);
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
    }
    free(comm);
}

static tp_comm_request_t *request_new(tp_comm_t *comm, int count, bool with_peers) {
    tp_comm_request_t *request = calloc(1, sizeof *request);
    if (request == NULL) return NULL;
    request->comm = comm;
    request->count = count;
    request->pending = calloc((size_t)(count > 0 ? count : 1), sizeof *request->pending);
    request->done = calloc((size_t)(count > 0 ? count : 1), sizeof *request->done);
    request->peer = with_peers ? calloc((size_t)(count > 0 ? count : 1), sizeof(int)) : NULL;
    if (request->pending == NULL || request->done == NULL || (with_peers && !request->peer)) {
        free(request->pending);
        free(request->done);
        free(request->peer);
        free(request);
        return NULL;
    }
    for (int i = 0; i < count; i++) request->pending[i] = MPI_REQUEST_NULL;
    return request;
}

static void request_free(tp_comm_request_t *request) {
    free(request->pending);
    free(request->done);
    free(request->peer);
    free(request);
}

/* Receives come first in `pending` (peer[i] says from whom), then sends. */
static int comm_exchange_notes(tp_comm_t *comm, const void *note, void *notes, size_t note_bytes,
                               tp_comm_request_t **out_request, char *message, size_t capacity) {
    if (note_bytes > (size_t)1 << 20)
        return fail(message, capacity, "a note of %zu bytes is too long", note_bytes);
    int peers = comm->size - 1;
    tp_comm_request_t *request = request_new(comm, 2 * peers, true);
    if (request == NULL) return fail(message, capacity, "out of host memory");
    memcpy((char *)notes + (size_t)comm->rank * note_bytes, note, note_bytes);
    int posted = 0, code = MPI_SUCCESS;
    for (int r = 0; r < comm->size && code == MPI_SUCCESS; r++) {
        if (r == comm->rank) continue;
        request->peer[posted] = r;
        code = MPI_Irecv((char *)notes + (size_t)r * note_bytes, (int)note_bytes, MPI_BYTE, r,
                         NOTE_TAG, comm->world, &request->pending[posted]);
        if (code == MPI_SUCCESS) posted++;
    }
    for (int r = 0; r < comm->size && code == MPI_SUCCESS; r++) {
        if (r == comm->rank) continue;
        request->peer[posted] = r;
        /* From our own slot, which lives as long as the request, not from the caller's. */
        code = MPI_Isend((char *)notes + (size_t)comm->rank * note_bytes, (int)note_bytes,
                         MPI_BYTE, r, NOTE_TAG, comm->world,
                         &request->pending[posted]);
        if (code == MPI_SUCCESS) posted++;
    }
    if (code != MPI_SUCCESS) {
        /* Posted receives cannot be recalled safely once peers may match them. */
        comm->abandoned = comm->abandoned || posted > 0;
        if (posted == 0) request_free(request);
        return fail_mpi(message, capacity, "posting the collective's notes", code);
    }
    *out_request = request;
    return 0;
}

static size_t comm_missing_notes(tp_comm_request_t *request, int *ranks, size_t capacity_ranks) {
    size_t missing = 0;
    int receives = request->count / 2;
    for (int i = 0; i < receives; i++) {
        if (request->done[i]) continue;
        if (missing < capacity_ranks) ranks[missing] = request->peer[i];
        missing++;
    }
    return missing;
}

static MPI_Datatype mpi_type(tp_comm_dtype_t dtype) {
    return dtype == TP_COMM_FLOAT64 ? MPI_DOUBLE : MPI_FLOAT;
}

/* Counts beyond int's range would need derived datatypes; the core sends chunks far below it. */
static int check_count(size_t count, char *message, size_t capacity) {
    if (count > (size_t)0x7fffffff)
        return fail(message, capacity, "%zu elements in one operation; at most 2^31 - 1", count);
    return 0;
}

/* A request of one MPI request made by `start`'s result `code`. */
static int single(tp_comm_t *comm, int code, MPI_Request pending, const char *what,
                  tp_comm_request_t **out_request, char *message, size_t capacity) {
    if (code != MPI_SUCCESS) return fail_mpi(message, capacity, what, code);
    tp_comm_request_t *request = request_new(comm, 1, false);
    if (request == NULL) {
        MPI_Wait(&pending, MPI_STATUS_IGNORE);
        return fail(message, capacity, "out of host memory");
    }
    request->pending[0] = pending;
    *out_request = request;
    return 0;
}

static int comm_reduce_scatter_start(tp_comm_t *comm, const void *send, void *recv,
                                     size_t count, tp_comm_dtype_t dtype,
                                     tp_comm_request_t **out_request, char *message,
                                     size_t capacity) {
    if (check_count(count, message, capacity) != 0) return -1;
    MPI_Request pending = MPI_REQUEST_NULL;
    int code = MPI_Ireduce_scatter_block(send, recv, (int)count, mpi_type(dtype), MPI_SUM,
                                         comm->world, &pending);
    return single(comm, code, pending, "MPI_Ireduce_scatter_block", out_request, message,
                  capacity);
}

static int comm_all_gather_start(tp_comm_t *comm, void *buffer, size_t count,
                                 tp_comm_dtype_t dtype, tp_comm_request_t **out_request,
                                 char *message, size_t capacity) {
    if (check_count(count, message, capacity) != 0) return -1;
    MPI_Request pending = MPI_REQUEST_NULL;
    int code = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, (int)count,
                              mpi_type(dtype), comm->world, &pending);
    return single(comm, code, pending, "MPI_Iallgather", out_request, message, capacity);
}

static int comm_broadcast_start(tp_comm_t *comm, void *buffer, size_t bytes, int root,
                                tp_comm_request_t **out_request, char *message, size_t capacity) {
    if (check_count(bytes, message, capacity) != 0) return -1;
    if (root < 0 || root >= comm->size)
        return fail(message, capacity, "no worker %d in a job of %d", root, comm->size);
    MPI_Request pending = MPI_REQUEST_NULL;
    int code = MPI_Ibcast(buffer, (int)bytes, MPI_BYTE, root, comm->world, &pending);
    return single(comm, code, pending, "MPI_Ibcast", out_request, message, capacity);
}

static int comm_all_reduce_start(tp_comm_t *comm, void *buffer, size_t count,
                                 tp_comm_dtype_t dtype, tp_comm_request_t **out_request,
                                 char *message, size_t capacity) {
    if (check_count(count, message, capacity) != 0) return -1;
    MPI_Request pending = MPI_REQUEST_NULL;
    int code = MPI_Iallreduce(MPI_IN_PLACE, buffer, (int)count, mpi_type(dtype), MPI_SUM,
                              comm->world, &pending);
    return single(comm, code, pending, "MPI_Iallreduce", out_request, message, capacity);
}

static int comm_test(tp_comm_request_t *request, bool *out_done, char *message,
                     size_t capacity) {
    bool all = true;
    for (int i = 0; i < request->count; i++) {
        if (request->done[i]) continue;
        int flag = 0;
        int code = MPI_Test(&request->pending[i], &flag, MPI_STATUS_IGNORE);
        if (code != MPI_SUCCESS) return fail_mpi(message, capacity, "MPI_Test", code);
        request->done[i] = flag != 0;
        all = all && request->done[i];
    }
    *out_done = all;
    return 0;
}

static void comm_release(tp_comm_request_t *request) {
    if (request == NULL) return;
    for (int i = 0; i < request->count; i++)
        if (!request->done[i]) {
            /* Still in flight: MPI owns its buffers until it completes, which may be never. */
            request->comm->abandoned = true;
            request->next_parked = request->comm->parked;
            request->comm->parked = request;
            return;
        }
    request_free(request);
}

static const tp_comm_ops_t ops = {
    .struct_size = sizeof(tp_comm_ops_t),
    .abi_version = TP_COMM_ABI_VERSION,
    .open = comm_open,
    .close = comm_close,
    .exchange_notes = comm_exchange_notes,
    .missing_notes = comm_missing_notes,
    .reduce_scatter_start = comm_reduce_scatter_start,
    .all_gather_start = comm_all_gather_start,
    .broadcast_start = comm_broadcast_start,
    .all_reduce_start = comm_all_reduce_start,
    .test = comm_test,
    .release = comm_release,
};

TP_COMM_EXPORT const tp_comm_ops_t *tp_comm_entry(void);

TP_COMM_EXPORT const tp_comm_ops_t *tp_comm_entry(void) {
    return &ops;
}
