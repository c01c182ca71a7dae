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

/* Scratch blocks kept: as many rings as the core keeps in flight, and some. */
enum { SPARE_SCRATCH = 8 };

struct tp_comm {
    MPI_Comm world; /* our own copy */
    int rank, size;
    bool abandoned; /* a request was given up in flight: MPI_Finalize would wait for it */
    tp_comm_request_t *parked; /* requests given up in flight, freed (not waited for) at close */
    unsigned long rings;       /* started: every worker starts them in the same order */
    bool owns_mpi;             /* we called MPI_Init_thread, so we call MPI_Finalize */
    /* Scratch blocks of finished in-place rings, kept for the next ones: a block is megabytes,
     * and memory fresh from the system costs a page fault per 4 KiB on first touch, several
     * times what summing it costs. */
    void *spare[SPARE_SCRATCH];
    size_t spare_bytes[SPARE_SCRATCH];
    int spares;
};

/* A ring of `size` workers over `count` elements: steps 0 .. size-2 reduce-scatter (worker r
 * sends block r - s to its right and adds block r - s - 1 from its left to its own), steps
 * size-1 .. 2 size-3 all-gather (it passes on the finished blocks). */
typedef struct ring {
    const char *source; /* this worker's elements when not in place, else NULL */
    char *buffer;
    size_t count, element;
    tp_comm_dtype_t dtype;
    int tag, step;
    void *scratch; /* in place: the largest block, scratch_bytes; else NULL */
    size_t scratch_bytes;
    bool started;  /* this step's messages are posted */
} ring_t;

struct tp_comm_request {
    tp_comm_t *comm;
    int count;           /* MPI requests */
    MPI_Request *pending;
    int *peer;           /* exchange_notes: the worker each receive is from, else NULL */
    bool *done;          /* by MPI request */
    ring_t *ring;        /* a ring all-reduce, else NULL */
    tp_comm_request_t *next_parked;
};

/* Notes have their tag; each ring in flight one of its own, so that messages of two rings
 * between the same workers never match each other's receives. */
enum { NOTE_TAG = 7, RING_TAG_BASE = 100, RING_TAGS = 30000 };

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
    /* Errors come back as codes, which become statuses, instead of aborting the job; on the
     * application's MPI_COMM_WORLD only when MPI is ours (the application did not start it). */
    if (!initialized) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int code = MPI_Comm_dup(MPI_COMM_WORLD, &comm->world);
    if (code != MPI_SUCCESS) {
        free(comm);
        return fail_mpi(message, capacity, "MPI_Comm_dup", code);
    }
    MPI_Comm_set_errhandler(comm->world, MPI_ERRORS_RETURN);
    comm->owns_mpi = !initialized;
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

/* A scratch block of at least `bytes`: a spare one if one is large enough. */
static void *scratch_take(tp_comm_t *comm, size_t bytes, size_t *out_bytes) {
    for (int i = 0; i < comm->spares; i++)
        if (comm->spare_bytes[i] >= bytes) {
            void *block = comm->spare[i];
            *out_bytes = comm->spare_bytes[i];
            comm->spares--;
            comm->spare[i] = comm->spare[comm->spares];
            comm->spare_bytes[i] = comm->spare_bytes[comm->spares];
            return block;
        }
    *out_bytes = bytes;
    return malloc(bytes);
}

/* Keeps a finished ring's scratch block for the next, in place of the smallest spare one. */
static void scratch_give(tp_comm_t *comm, void *block, size_t bytes) {
    if (block == NULL) return;
    int slot = comm->spares;
    if (slot == SPARE_SCRATCH) {
        slot = 0;
        for (int i = 1; i < SPARE_SCRATCH; i++)
            if (comm->spare_bytes[i] < comm->spare_bytes[slot]) slot = i;
        if (comm->spare_bytes[slot] >= bytes) {
            free(block);
            return;
        }
        free(comm->spare[slot]);
    } else {
        comm->spares++;
    }
    comm->spare[slot] = block;
    comm->spare_bytes[slot] = bytes;
}

static void comm_close(tp_comm_t *comm) {
    if (comm == NULL) return;
    while (comm->parked != NULL) {
        tp_comm_request_t *next = comm->parked->next_parked;
        request_free(comm->parked);
        comm->parked = next;
    }
    for (int i = 0; i < comm->spares; i++) free(comm->spare[i]);
    if (!comm->abandoned) {
        MPI_Comm_free(&comm->world);
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized && comm->owns_mpi) MPI_Finalize();
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
    if (request->ring != NULL)
        scratch_give(request->comm, request->ring->scratch, request->ring->scratch_bytes);
    free(request->ring);
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

/* ---- The ring all-reduce ------------------------------------------------------------------ */


/* [begin, end) of block `block` (any integer, taken modulo size). */
static void block_range(const ring_t *ring, int size, int block, size_t *begin, size_t *end) {
    int b = ((block % size) + size) % size;
    *begin = ring->count * (size_t)b / (size_t)size;
    *end = ring->count * (size_t)(b + 1) / (size_t)size;
}

/* into[i] = received[i] + local[i]; `into` is one of the two (the same address, never a
 * partial overlap). */
static void add_blocks(void *into, const void *received, const void *local, size_t n,
                       tp_comm_dtype_t dtype) {
    if (dtype == TP_COMM_FLOAT64) {
        double *out = into;
        const double *a = received, *b = local;
        for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    } else {
        float *out = into;
        const float *a = received, *b = local;
        for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    }
}

/* Posts step `ring->step`'s send and receive. */
static int ring_post(tp_comm_request_t *request, ring_t *ring, char *message, size_t capacity) {
    tp_comm_t *comm = request->comm;
    const int size = comm->size, rank = comm->rank, s = ring->step;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const bool scatter = s < size - 1;
    const int sent = scatter ? rank - s : rank + 1 - (s - (size - 1));
    const int received = sent - 1;
    size_t sb, se, rb, re;
    block_range(ring, size, sent, &sb, &se);
    block_range(ring, size, received, &rb, &re);
    /* Out of place, a block comes in where its sum goes, and the first one sent is our own
     * elements; in place, a block comes in beside ours. */
    void *into = scatter && ring->scratch != NULL ? ring->scratch
                                                 : ring->buffer + rb * ring->element;
    const char *from = s == 0 && ring->source != NULL ? ring->source : ring->buffer;
    int code = MPI_Irecv(into, (int)((re - rb) * ring->element), MPI_BYTE, left, ring->tag,
                         comm->world, &request->pending[0]);
    if (code == MPI_SUCCESS)
        code = MPI_Isend(from + sb * ring->element, (int)((se - sb) * ring->element),
                         MPI_BYTE, right, ring->tag, comm->world, &request->pending[1]);
    if (code != MPI_SUCCESS) return fail_mpi(message, capacity, "a ring step", code);
    request->done[0] = request->done[1] = false;
    ring->started = true;
    return 0;
}

/* Advances the ring as far as its messages have come; *out_done at the end. */
static int ring_advance(tp_comm_request_t *request, bool *out_done, char *message,
                        size_t capacity) {
    ring_t *ring = request->ring;
    const int size = request->comm->size, last = 2 * (size - 1);
    while (ring->step < last) {
        if (!ring->started && ring_post(request, ring, message, capacity) != 0) return -1;
        for (int i = 0; i < 2; i++) {
            if (request->done[i]) continue;
            int flag = 0;
            int code = MPI_Test(&request->pending[i], &flag, MPI_STATUS_IGNORE);
            if (code != MPI_SUCCESS) return fail_mpi(message, capacity, "MPI_Test", code);
            request->done[i] = flag != 0;
        }
        if (!request->done[0] || !request->done[1]) break;
        if (ring->step < size - 1) {
            /* The block from the left, plus ours: summed once, here, in ring order. */
            size_t rb, re;
            block_range(ring, size, request->comm->rank - ring->step - 1, &rb, &re);
            char *sum = ring->buffer + rb * ring->element;
            if (ring->scratch != NULL)
                add_blocks(sum, ring->scratch, sum, re - rb, ring->dtype);
            else
                add_blocks(sum, sum, ring->source + rb * ring->element, re - rb, ring->dtype);
        }
        ring->step++;
        ring->started = false;
    }
    *out_done = ring->step >= last;
    return 0;
}

static int comm_ring_all_reduce_start(tp_comm_t *comm, const void *source, void *buffer,
                                      size_t count, tp_comm_dtype_t dtype,
                                      tp_comm_request_t **out_request, char *message,
                                      size_t capacity) {
    size_t element = dtype == TP_COMM_FLOAT64 ? 8 : 4;
    /* A block's bytes travel as one message counted in an int. */
    if (count / (size_t)comm->size + 1 > (size_t)0x7fffffff / element)
        return fail(message, capacity, "%zu elements in one ring; blocks must stay below 2 GiB",
                    count);
    if (source == buffer) source = NULL;
    tp_comm_request_t *request = request_new(comm, 2, false);
    ring_t *ring = calloc(1, sizeof *ring);
    size_t scratch_bytes = 0;
    void *scratch = source == NULL && comm->size > 1
                        ? scratch_take(comm, (count / (size_t)comm->size + 1) * element,
                                       &scratch_bytes)
                        : NULL;
    if (request == NULL || ring == NULL || (scratch == NULL && scratch_bytes > 0)) {
        if (request != NULL) request_free(request);
        free(ring);
        free(scratch);
        return fail(message, capacity, "out of host memory");
    }
    *ring = (ring_t){.source = source, .buffer = buffer, .count = count, .element = element,
                     .dtype = dtype, .tag = RING_TAG_BASE + (int)(comm->rings++ % RING_TAGS),
                     .scratch = scratch, .scratch_bytes = scratch_bytes};
    request->ring = ring;
    request->done[0] = request->done[1] = true; /* nothing posted yet */
    /* A ring of one worker has no steps: its sum is its own elements. */
    if (comm->size == 1 && source != NULL) memcpy(buffer, source, count * element);
    *out_request = request;
    bool done = false;
    return ring_advance(request, &done, message, capacity);
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
    if (request->ring != NULL) return ring_advance(request, out_done, message, capacity);
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
    bool unfinished_ring = request->ring != NULL && request->ring->step <
                                                        2 * (request->comm->size - 1);
    for (int i = 0; i < request->count; i++)
        if (!request->done[i] || unfinished_ring) {
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
    .ring_all_reduce_start = comm_ring_all_reduce_start,
    .broadcast_start = comm_broadcast_start,
    .all_reduce_start = comm_all_reduce_start,
    .test = comm_test,
    .release = comm_release,
};

TP_COMM_EXPORT const tp_comm_ops_t *tp_comm_entry(void);

TP_COMM_EXPORT const tp_comm_ops_t *tp_comm_entry(void) {
    return &ops;
}
