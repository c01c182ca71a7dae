/* SPDX-License-Identifier: Apache-2.0 */
/* This process's link to the other workers of an mpirun job: the communication library loaded
 * on first use (never before: a program that does not ask for several workers does not load
 * MPI), and the collectives the multi-worker strategy builds on. Each collective first tells
 * the other workers which one it entered and waits for theirs, so that a worker that never
 * comes is named at the deadline and a worker in another collective is an error, not a hang. */
#ifndef TP_DISTRIBUTE_WORKER_COMM_H
#define TP_DISTRIBUTE_WORKER_COMM_H

#include <stddef.h>

#include "distribute/comm_abi.h"
#include "tensorplug/tensorplug.h"

typedef struct tp_worker_comm tp_worker_comm_t;

/* The process's communicator: loads libtensorplug_mpi.so (TP_MPI_LIBRARY, else from
 * tensorplug's private folders, base/private_library.h) and joins the job the first time; the
 * job is left at exit. Fails naming the library and the reason when it cannot be loaded or MPI cannot
 * start. Thread-safe. */
tp_status_t *tp_worker_comm_get(tp_worker_comm_t **out);

int tp_worker_comm_rank(const tp_worker_comm_t *comm);
int tp_worker_comm_size(const tp_worker_comm_t *comm);
/* "Open MPI v4.1.4" */
const char *tp_worker_comm_description(const tp_worker_comm_t *comm);
/* The library's operations, for the benchmark's side-by-side calls. */
const tp_comm_ops_t *tp_worker_comm_ops(const tp_worker_comm_t *comm, tp_comm_t **out_comm);

/* Writes the local contribution to elements [begin, end) at `into` (which points at element
 * `begin`): a local reduction done chunk by chunk, while earlier chunks travel. */
typedef void (*tp_worker_fill_fn)(size_t begin, size_t end, void *into, void *arg);

typedef struct tp_worker_all_reduce_args {
    size_t count;          /* elements */
    tp_comm_dtype_t dtype; /* float32 or float64 */
    size_t chunk_elements; /* per chunk; 0: 1 Mi elements */
    double timeout_s;      /* > 0 */
    /* The local contribution: written into `buffer` chunk by chunk by `fill`, or read in place
     * from `source` (`count` elements not overlapping `buffer`), which then costs no copy.
     * Exactly one of the two. */
    tp_worker_fill_fn fill;
    void *fill_arg;
    const void *source;
    /* `count` elements; on success the sum over workers, the same bits on every worker (each
     * element is summed once, by one worker). On a deadline MPI may still read `source` and
     * write `buffer`: the caller hands what holds them to tp_worker_comm_park. */
    void *buffer;
} tp_worker_all_reduce_args_t;

/* Element-wise sum over workers, pipelined in chunks: chunk k+1 is filled while earlier chunks
 * go round the ring. DEADLINE_EXCEEDED names the collective and the workers that did not
 * join; after it the communicator refuses every collective (FAILED_PRECONDITION). */
tp_status_t *tp_worker_all_reduce(tp_worker_comm_t *comm, const tp_worker_all_reduce_args_t *args,
                                  bool *out_abandoned);

/* `bytes` of `buffer` from worker `root` to all, as one collective: every worker must name the
 * same size and root (INVALID_ARGUMENT naming the worker that did not). `what` names it in
 * messages ("broadcast of variables"). */
tp_status_t *tp_worker_broadcast(tp_worker_comm_t *comm, const char *what, void *buffer,
                                 size_t bytes, int root, double timeout_s, bool *out_abandoned);

/* Checks that every worker passes the same `value` (what it is, `what`): INVALID_ARGUMENT
 * naming a worker with another value. A collective like the others. */
tp_status_t *tp_worker_agree(tp_worker_comm_t *comm, const char *what, uint64_t value,
                             double timeout_s);

/* Keeps `object` (a malloc'ed buffer, a tensor) reachable and never frees or releases it: an
 * abandoned collective may still use its memory until the process ends. */
void tp_worker_comm_park(tp_worker_comm_t *comm, void *object);

#endif
