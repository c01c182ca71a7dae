/* SPDX-License-Identifier: Apache-2.0 */
/* A logical device: what placement chooses, tensors live on and kernels run on. Each is a
 * share of one physical device (the whole of it, unless the application split it) with its
 * own stream and its own allocator, so two logical devices of one physical device run and
 * run out of memory independently, as two devices would. */
#ifndef TP_DEVICE_DEVICE_H
#define TP_DEVICE_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "device/physical_device.h"
#include "memory/bfc_allocator.h"

typedef struct tp_device {
    tp_physical_device_t *physical;
    const tp_device_type_def_t *def; /* the physical device's, for short */
    void *handle;                    /* the physical device's plug-in handle */
    int32_t ordinal;                 /* among the context's logical devices of its type */
    char full_name[96];              /* /job:localhost/replica:0/task:0/device:APU:1 */

    /* Guards the making of the lazy stream and allocator, and the spare events. The two
     * pointers are atomic so that every op after the first reads them without the lock. */
    pthread_mutex_t mutex;
    /* Held from queueing a launch or copy to recording the event after it, so that the event
     * covers that work alone (see tp_completion_record). Unused on a synchronous device. */
    pthread_mutex_t queue_mutex;
    bool synchronous;      /* the plug-in declared TP_DEVICE_SYNCHRONOUS */
    void **spare_events;   /* events that are past, for the next launch */
    size_t num_spare_events, spare_capacity;
    _Atomic(void *) stream;
    tp_bfc_options_t allocator_options;
    _Atomic(tp_bfc_t *) allocator; /* created with the first tensor */
    /* Guards the deferred list and last_work (device_memory.c): what waits for work on the
     * device's memory before it frees memory, in the order it was deferred, and the completion
     * of the last work recorded on the stream, whose end is the end of all work queued before
     * it. */
    pthread_mutex_t deferred_mutex;
    struct tp_deferred *deferred; /* a ring of deferred_capacity from deferred_first */
    size_t deferred_first, deferred_count, deferred_capacity;
    /* deferred_count, also written under the lock but read without it, so that a device with
     * nothing deferred (the synchronous CPU, nearly always) takes no lock per tensor. */
    atomic_size_t deferred_waiting;
    uint64_t deferred_done;       /* how many were ever carried out, for synchronize */
    struct tp_completion *last_work;
    /* Kernel instances kept for the device (kernel_instances.h): read without a lock, added
     * under instances_mutex, which also makes them one at a time. */
    pthread_mutex_t instances_mutex;
    _Atomic(struct tp_kernel_instances *) instances;
} tp_device_t;

/* A logical device of `physical` whose tensors are served under `allocator_options`. */
tp_status_t *tp_device_create(tp_physical_device_t *physical, int32_t ordinal,
                              const tp_bfc_options_t *allocator_options, tp_device_t **out);
/* Waits for the device's work and returns its stream and memory to the physical device. */
void tp_device_destroy(tp_device_t *device);

/* The device's stream, created on first use. */
tp_status_t *tp_device_stream(tp_device_t *device, void **out_stream);

struct tp_completion;

/* ---- Tensor memory (device_memory.c) ------------------------------------------------------- */

/* The device's tensor allocator, created on first use. */
tp_status_t *tp_device_allocator(tp_device_t *device, tp_bfc_t **out);
/* `size` > 0 bytes of the tensor allocator. Memory whose frees were deferred is taken back
 * first as far as its work is done; when the allocator is short, the oldest deferred frees are
 * waited for, one by one, before out of memory is reported. */
tp_status_t *tp_device_allocate(tp_device_t *device, uint64_t size, tp_bfc_block_t *out);
/* The allocator's statistics, after taking back what deferred frees whose work is done hold;
 * zeros with the configured limit before the first tensor. */
void tp_device_memory_stats(tp_device_t *device, tp_bfc_stats_t *out);
/* Returns a chunk of the tensor allocator once the work queued so far that may read or write
 * it is done: the device's own (up to its last recorded completion), and other devices' that
 * tp_device_defer put before it. Without waiting and without a host callback: the chunk waits
 * in the device's deferred list, taken back at an allocation, the memory statistics or a
 * synchronize. */
void tp_device_free_in_order(tp_device_t *device, tp_bfc_chunk_t *chunk);
/* Calls fn(arg) once `after` (NULL: nothing) and everything deferred on the device before it
 * are done, on whichever thread takes them back then, with the deferred list locked: fn frees
 * memory, and neither waits for a device nor defers. With `fn` NULL it only holds back what is
 * deferred later: work of another device's stream that reads or writes this device's memory
 * is deferred so, and the memory is freed no sooner. */
void tp_device_defer(tp_device_t *device, struct tp_completion *after, void (*fn)(void *arg),
                     void *arg);
/* Called by tp_completion_record with the queue held: `done` is the last work queued on the
 * stream so far. */
void tp_device_note_work(tp_device_t *device, struct tp_completion *done);
/* Waits for everything deferred on the device so far and carries it out, and settles the last
 * recorded work; for synchronize and for closing the device. */
void tp_device_finish_deferred(tp_device_t *device);

/* Whether the device's memory handles are host addresses, a block's bytes at (char *)mem +
 * offset: the built-in CPU's, which any device's host copies can read and write directly. */
static inline bool tp_device_host_addressed(const tp_device_t *device) {
    return device->physical->host_addressed;
}
/* Whether the plug-in declared the device TP_DEVICE_SYNCHRONOUS. */
static inline bool tp_device_is_synchronous(const tp_device_t *device) {
    return device->synchronous;
}
/* Brackets queueing work and recording the event that reports its failure, so that no other
 * thread's work comes between; no-ops on a synchronous device. */
void tp_device_lock_queue(tp_device_t *device);
void tp_device_unlock_queue(tp_device_t *device);
/* An event of the device that is past (a spare one, or a new one) / back for reuse. */
tp_status_t *tp_device_take_event(tp_device_t *device, void **out_event);
void tp_device_give_event(tp_device_t *device, void *event);

/* ---- Copies and waits ----------------------------------------------------------------------- */

/* Enqueues a copy of host bytes into device memory; *out_done is the copy's completion
 * (device/completion.h; NULL when it is done already). The host buffer must stay valid until
 * the copy is done. With `out_done` NULL, waits for the copy instead. */
tp_status_t *tp_device_copy_from_host(tp_device_t *device, void *mem, uint64_t offset,
                                      const void *source, uint64_t size,
                                      struct tp_completion **out_done);
/* Copies device bytes to host memory and waits for the copy (not for the values' producer:
 * the caller waits for that first); a failure of the copy is returned. */
tp_status_t *tp_device_copy_to_host(tp_device_t *device, void *destination, const void *mem,
                                    uint64_t offset, uint64_t size);
/* Copies device memory to another place on the same device or on another device, in stream
 * order (device_copy.c), once the values are ready (`source_done`, their completion, may be
 * NULL): on the source's stream with the plug-in's own copy within one physical device or
 * between two of one plug-in, the destination's stream then waiting for it by an event;
 * otherwise staged through host memory, the host waiting for the source. *out_done is the
 * copy's completion, which fails when the source's does; a failure known already is
 * returned instead. */
tp_status_t *tp_device_copy(tp_device_t *source, const void *src_mem, uint64_t src_offset,
                            struct tp_completion *source_done, tp_device_t *destination,
                            void *dst_mem, uint64_t dst_offset, uint64_t size,
                            struct tp_completion **out_done);
/* Waits for all work queued on the device's stream, and carries out what was deferred until
 * then (tp_device_finish_deferred). */
tp_status_t *tp_device_synchronize(tp_device_t *device);
/* Calls fn(arg) once the work queued so far is done: the plug-in's host_callback, or by
 * default after synchronizing the stream. */
tp_status_t *tp_device_then(tp_device_t *device, void (*fn)(void *arg), void *arg);

#endif
