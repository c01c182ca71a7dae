/* SPDX-License-Identifier: Apache-2.0 */
/* The interface between the core's multi-worker collectives and a communication library
 * (libtensorplug_mpi.so), which the core dlopens only when a program asks for several workers.
 * Plain C types only: the library includes this header and the system's, never the core's, and
 * calls nothing of the core, so data flows one way. Every operation is nonblocking: the core
 * polls requests, so that it can give up at a deadline and say which workers never came.
 * Functions return 0 on success, or -1 with a message in `message` (at most `capacity` bytes,
 * NUL-terminated). */
#ifndef TP_DISTRIBUTE_COMM_ABI_H
#define TP_DISTRIBUTE_COMM_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP_COMM_ABI_VERSION 2u
#define TP_COMM_ENTRY_SYMBOL "tp_comm_entry"

typedef enum tp_comm_dtype { TP_COMM_FLOAT32 = 1, TP_COMM_FLOAT64 = 2 } tp_comm_dtype_t;

typedef struct tp_comm tp_comm_t;                 /* the library's, one per process */
typedef struct tp_comm_request tp_comm_request_t; /* one operation in flight */

typedef struct tp_comm_ops {
    size_t struct_size;
    uint32_t abi_version; /* TP_COMM_ABI_VERSION */
    /* Joins the job (MPI_Init_thread, unless the application started MPI): this process is
     * worker *out_rank of *out_size. At most once per process; `description` receives the
     * implementation's name and version. */
    int (*open)(tp_comm_t **out_comm, int *out_rank, int *out_size, char *description,
                size_t description_capacity, char *message, size_t capacity);
    /* Leaves the job (MPI_Finalize, when open started MPI; an application that started it
     * finalizes it). Not after a request was abandoned: a collective still in flight would
     * make it wait forever, so the library then returns without finalizing. */
    void (*close)(tp_comm_t *comm);

    /* Copies `note` (note_bytes) to notes[own rank], sends it from there to every other worker
     * and receives each one's into notes[rank * note_bytes]: how workers tell each other which
     * collective they entered. `notes` must live as long as the request. */
    int (*exchange_notes)(tp_comm_t *comm, const void *note, void *notes, size_t note_bytes,
                          tp_comm_request_t **out_request, char *message, size_t capacity);
    /* The workers whose note has not arrived yet: up to `capacity_ranks` of them in `ranks`;
     * returns how many there are. Only for a request of exchange_notes, tested at least once. */
    size_t (*missing_notes)(tp_comm_request_t *request, int *ranks, size_t capacity_ranks);

    /* Element-wise sum over workers of this worker's `count` elements into buffer[count], by a
     * ring: the elements are cut in one block per worker, each block summed once, along the
     * ring in a fixed order, by point-to-point messages (tag-separated, so several may be in
     * flight), then passed round whole. Every worker gets the same bits, which MPI_Allreduce
     * does not promise. This worker's elements are read from `source` when it is not NULL (it
     * must not overlap `buffer`, whose values are then never read: no copy of the input and no
     * scratch block), else from `buffer` (in place). Advanced by test. */
    int (*ring_all_reduce_start)(tp_comm_t *comm, const void *source, void *buffer, size_t count,
                                 tp_comm_dtype_t dtype, tp_comm_request_t **out_request,
                                 char *message, size_t capacity);
    /* `bytes` from worker `root` to every worker (MPI_Bcast). */
    int (*broadcast_start)(tp_comm_t *comm, void *buffer, size_t bytes, int root,
                           tp_comm_request_t **out_request, char *message, size_t capacity);
    /* Element-wise sum over workers, in place (MPI_Allreduce), for comparison by the benchmark:
     * its rounding may differ between workers, so the collectives do not use it. */
    int (*all_reduce_start)(tp_comm_t *comm, void *buffer, size_t count, tp_comm_dtype_t dtype,
                            tp_comm_request_t **out_request, char *message, size_t capacity);

    /* Progress: *out_done tells whether the request completed. */
    int (*test)(tp_comm_request_t *request, bool *out_done, char *message, size_t capacity);
    /* Frees a completed request. An incomplete one is abandoned: the library keeps it and its
     * buffers' use to itself (the caller must keep the buffers alive), and the process can no
     * longer close the job cleanly. */
    void (*release)(tp_comm_request_t *request);
} tp_comm_ops_t;

/* The one symbol the library exports. */
typedef const tp_comm_ops_t *(*tp_comm_entry_fn)(void);

#endif
