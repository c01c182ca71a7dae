/* SPDX-License-Identifier: Apache-2.0 */
/* Collectives between workers, each in two phases: the workers exchange notes saying which
 * collective they entered (its number, kind, size), which names at the deadline the workers
 * that never came and turns mismatched calls into errors; then the data moves, by nonblocking
 * operations polled against the same deadline. */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "distribute/worker_comm_internal.h"

typedef enum { KIND_ALL_REDUCE = 1, KIND_BROADCAST = 2, KIND_AGREE = 3 } kind_t;

/* What a worker says on entering a collective; every field must match (value only for
 * KIND_AGREE, where it is what the workers must agree on). */
typedef struct note {
    uint64_t sequence;
    uint32_t kind, dtype;
    uint64_t count; /* elements or bytes */
    int64_t root;
    uint64_t value;
} note_t;

static const char *kind_name(uint32_t kind) {
    switch (kind) {
    case KIND_ALL_REDUCE: return "all-reduce";
    case KIND_BROADCAST: return "broadcast";
    case KIND_AGREE: return "agreement";
    default: return "unknown collective";
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Between polls: yield while a wait is young (the others are likely about to come, and with
 * more workers than cores they need the core), then sleep briefly. */
static void pause_poll(double waited_s) {
    if (waited_s < 0.05) {
        sched_yield();
        return;
    }
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
}

/* Polls `request` until it completes or `deadline` passes (*out_late). */
static tp_status_t *poll_until(tp_worker_comm_t *comm, tp_comm_request_t *request,
                               double deadline, bool *out_late) {
    char message[512];
    double start = now_s();
    for (;;) {
        bool done = false;
        if (comm->ops->test(request, &done, message, sizeof message) != 0)
            return tp_status_make(TP_INTERNAL, "%s", message);
        if (done) return NULL;
        double t = now_s();
        if (t > deadline) {
            *out_late = true;
            return NULL;
        }
        pause_poll(t - start);
    }
}

/* Marks the communicator unusable (with comm->mutex held). */
static void break_comm(tp_worker_comm_t *comm, const char *why) {
    snprintf(comm->broken, sizeof comm->broken, "%s", why);
}

static void describe(const note_t *note, char *out, size_t capacity) {
    if (note->kind == KIND_ALL_REDUCE)
        snprintf(out, capacity, "all-reduce #%llu of %llu %s elements",
                 (unsigned long long)note->sequence, (unsigned long long)note->count,
                 note->dtype == TP_COMM_FLOAT64 ? "float64" : "float32");
    else if (note->kind == KIND_BROADCAST)
        snprintf(out, capacity, "broadcast #%llu of %llu bytes from worker %lld",
                 (unsigned long long)note->sequence, (unsigned long long)note->count,
                 (long long)note->root);
    else
        snprintf(out, capacity, "%s #%llu", kind_name(note->kind),
                 (unsigned long long)note->sequence);
}

/* The note phase, with comm->mutex held: every worker's note, checked against ours. */
static tp_status_t *meet(tp_worker_comm_t *comm, note_t *mine, const char *what,
                         double deadline) {
    mine->sequence = ++comm->sequence;
    note_t *notes = calloc((size_t)comm->size, sizeof *notes);
    if (notes == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    char message[512], mine_text[160];
    describe(mine, mine_text, sizeof mine_text);
    tp_comm_request_t *request = NULL;
    if (comm->ops->exchange_notes(comm->comm, mine, notes, sizeof *mine, &request, message,
                                  sizeof message) != 0) {
        free(notes);
        return tp_status_make(TP_INTERNAL, "%s (%s): %s", what, mine_text, message);
    }
    bool late = false;
    tp_status_t *error = poll_until(comm, request, deadline, &late);
    if (error == NULL && late) {
        int missing[16];
        size_t count = comm->ops->missing_notes(request, missing, 16);
        char list[160] = "";
        size_t used = 0;
        for (size_t i = 0; i < count && i < 16 && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", i == 0 ? "" : ", ",
                                     missing[i]);
        if (count > 16 && used < sizeof list)
            snprintf(list + used, sizeof list - used, " and %zu more", count - 16);
        error = tp_status_make(TP_DEADLINE_EXCEEDED,
                               "%s (%s) on worker %d: worker%s %s of %d did not join within "
                               "the collective timeout",
                               what, mine_text, comm->rank, count == 1 ? "" : "s",
                               list, comm->size);
        break_comm(comm, tp_status_message(error));
        comm->ops->release(request); /* parked by the library */
        tp_worker_comm_park_locked(comm, notes);
        return error;
    }
    comm->ops->release(request);
    for (int r = 0; r < comm->size && error == NULL; r++) {
        const note_t *theirs = &notes[r];
        if (memcmp(theirs, mine, sizeof *mine) == 0) continue;
        char theirs_text[160];
        describe(theirs, theirs_text, sizeof theirs_text);
        if (theirs->kind == KIND_AGREE && mine->kind == KIND_AGREE)
            error = tp_status_make(TP_INVALID_ARGUMENT,
                                   "%s: worker %d has %llu where worker %d has %llu", what, r,
                                   (unsigned long long)theirs->value, comm->rank,
                                   (unsigned long long)mine->value);
        else
            error = tp_status_make(TP_INVALID_ARGUMENT,
                                   "%s: worker %d entered %s where worker %d entered %s (every "
                                   "worker must make the same collective calls)",
                                   what, r, theirs_text, comm->rank, mine_text);
    }
    free(notes);
    return error;
}

/* Refuses a collective on a broken communicator (comm->mutex held). */
static tp_status_t *usable(const tp_worker_comm_t *comm, const char *what) {
    if (comm->broken[0] == '\0') return NULL;
    return tp_status_make(TP_FAILED_PRECONDITION,
                          "%s: this worker can no longer take part in collectives since an "
                          "earlier one failed (%s); restart the job (from its last checkpoint)",
                          what, comm->broken);
}

/* The deadline passed in the data phase, after every worker's note came. */
static tp_status_t *late_after_joining(const tp_worker_comm_t *comm, const char *what,
                                       const char *kind) {
    return tp_status_make(TP_DEADLINE_EXCEEDED,
                          "%s (%s #%llu) on worker %d did not complete within the collective "
                          "timeout although all %d workers joined it (a worker may have died "
                          "or stopped inside it)",
                          what, kind, (unsigned long long)comm->sequence, comm->rank,
                          comm->size);
}

static size_t element_size(tp_comm_dtype_t dtype) {
    return dtype == TP_COMM_FLOAT64 ? 8 : 4;
}

enum { PIPELINE_DEPTH = 4 };

/* Polls every ring in flight (each test moves its ring on) until `oldest` completes. */
static int finish_oldest(tp_worker_comm_t *comm, tp_comm_request_t **flight, size_t in_flight,
                         double deadline, bool *out_late, char *message, size_t capacity) {
    double start = now_s();
    for (;;) {
        bool oldest_done = false;
        for (size_t i = 0; i < in_flight; i++) {
            bool done = false;
            if (comm->ops->test(flight[i], &done, message, capacity) != 0) return -1;
            if (i == 0) oldest_done = done;
        }
        if (oldest_done) break;
        double t = now_s();
        if (t > deadline) {
            *out_late = true;
            return -1;
        }
        pause_poll(t - start);
    }
    comm->ops->release(flight[0]);
    memmove(flight, flight + 1, (in_flight - 1) * sizeof *flight);
    return 0;
}

/* The data phase of an all-reduce (comm->mutex held): a ring per chunk, started in chunk order
 * on every worker, up to PIPELINE_DEPTH in flight, chunk k+1 filled (the local reduction), or
 * read where it lies, while earlier ones travel. */
static tp_status_t *pipeline(tp_worker_comm_t *comm, const tp_worker_all_reduce_args_t *args,
                             const char *what, double deadline, bool *out_abandoned) {
    const size_t chunk = args->chunk_elements != 0 ? args->chunk_elements : (size_t)1 << 20;
    const size_t size = element_size(args->dtype);
    tp_comm_request_t *flight[PIPELINE_DEPTH];
    size_t in_flight = 0;
    char message[512] = "";
    bool late = false;
    int failed = 0;
    for (size_t begin = 0; begin < args->count && failed == 0; begin += chunk) {
        if (in_flight == PIPELINE_DEPTH) {
            failed = finish_oldest(comm, flight, in_flight, deadline, &late, message,
                                   sizeof message);
            if (failed != 0) break;
            in_flight--;
        }
        size_t end = args->count - begin > chunk ? begin + chunk : args->count;
        char *at = (char *)args->buffer + begin * size;
        const char *source = NULL;
        if (args->source != NULL)
            source = (const char *)args->source + begin * size;
        else
            args->fill(begin, end, at, args->fill_arg);
        failed = comm->ops->ring_all_reduce_start(comm->comm, source, at, end - begin,
                                                  args->dtype, &flight[in_flight], message,
                                                  sizeof message);
        if (failed == 0) in_flight++;
    }
    while (in_flight > 0 && failed == 0) {
        failed = finish_oldest(comm, flight, in_flight, deadline, &late, message,
                               sizeof message);
        if (failed == 0) in_flight--;
    }
    if (failed == 0) return NULL;
    /* Rings already started cannot be withdrawn: give them up with the buffer. */
    for (size_t i = 0; i < in_flight; i++) comm->ops->release(flight[i]);
    *out_abandoned = in_flight > 0;
    tp_status_t *error;
    if (late)
        error = late_after_joining(comm, what, "all-reduce");
    else
        error = tp_status_make(TP_INTERNAL, "%s on worker %d: %s", what, comm->rank, message);
    break_comm(comm, tp_status_message(error));
    return error;
}

tp_status_t *tp_worker_all_reduce(tp_worker_comm_t *comm, const tp_worker_all_reduce_args_t *args,
                                  bool *out_abandoned) {
    const char *what = "multi-worker all-reduce";
    *out_abandoned = false;
    if (args->timeout_s <= 0 || (args->fill == NULL) == (args->source == NULL) ||
        args->buffer == NULL ||
        (args->dtype != TP_COMM_FLOAT32 && args->dtype != TP_COMM_FLOAT64))
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: invalid arguments", what);
    double deadline = now_s() + args->timeout_s;
    pthread_mutex_lock(&comm->mutex);
    tp_status_t *error = usable(comm, what);
    note_t note = {.kind = KIND_ALL_REDUCE, .dtype = (uint32_t)args->dtype,
                   .count = args->count, .root = -1};
    if (error == NULL) error = meet(comm, &note, what, deadline);
    if (error == NULL && args->count > 0)
        error = pipeline(comm, args, what, deadline, out_abandoned);
    pthread_mutex_unlock(&comm->mutex);
    return error;
}

tp_status_t *tp_worker_broadcast(tp_worker_comm_t *comm, const char *what, void *buffer,
                                 size_t bytes, int root, double timeout_s, bool *out_abandoned) {
    *out_abandoned = false;
    if (timeout_s <= 0 || (buffer == NULL && bytes > 0))
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: invalid arguments", what);
    double deadline = now_s() + timeout_s;
    pthread_mutex_lock(&comm->mutex);
    tp_status_t *error = usable(comm, what);
    note_t note = {.kind = KIND_BROADCAST, .count = bytes, .root = root};
    if (error == NULL) error = meet(comm, &note, what, deadline);
    tp_comm_request_t *request = NULL;
    char message[512];
    if (error == NULL && bytes > 0 &&
        comm->ops->broadcast_start(comm->comm, buffer, bytes, root, &request, message,
                                   sizeof message) != 0)
        error = tp_status_make(TP_INTERNAL, "%s on worker %d: %s", what, comm->rank, message);
    bool late = false;
    if (error == NULL && request != NULL) error = poll_until(comm, request, deadline, &late);
    if (error == NULL && late) {
        error = late_after_joining(comm, what, "broadcast");
        break_comm(comm, tp_status_message(error));
        *out_abandoned = true;
    }
    if (request != NULL) comm->ops->release(request);
    pthread_mutex_unlock(&comm->mutex);
    return error;
}

tp_status_t *tp_worker_agree(tp_worker_comm_t *comm, const char *what, uint64_t value,
                             double timeout_s) {
    double deadline = now_s() + timeout_s;
    pthread_mutex_lock(&comm->mutex);
    tp_status_t *error = usable(comm, what);
    note_t note = {.kind = KIND_AGREE, .root = -1, .value = value};
    if (error == NULL) error = meet(comm, &note, what, deadline);
    pthread_mutex_unlock(&comm->mutex);
    return error;
}
