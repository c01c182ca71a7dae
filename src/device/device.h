/* A logical device: what placement chooses, tensors live on and kernels run on. Each is a
 * share of one physical device (the whole of it, unless the application split it) with its
 * own stream and its own allocator, so two logical devices of one physical device run and
 * run out of memory independently, as two devices would. */
#ifndef TP_DEVICE_DEVICE_H
#define TP_DEVICE_DEVICE_H

#include <pthread.h>
#include <stdbool.h>

#include "device/physical_device.h"
#include "memory/bfc_allocator.h"

typedef struct tp_device {
    tp_physical_device_t *physical;
    const tp_device_type_def_t *def; /* the physical device's, for short */
    void *handle;                    /* the physical device's plug-in handle */
    int32_t ordinal;                 /* among the context's logical devices of its type */
    char full_name[96];              /* /job:localhost/replica:0/task:0/device:APU:1 */

    pthread_mutex_t mutex; /* guards the lazy stream and allocator, the parked error, events */
    /* Held from queueing a launch or copy to recording the event after it, so that the event
     * covers that work alone (see tp_completion_record). Unused on a synchronous device. */
    pthread_mutex_t queue_mutex;
    bool synchronous;      /* the plug-in declared TP_DEVICE_SYNCHRONOUS */
    void **spare_events;   /* events that are past, for the next launch */
    size_t num_spare_events, spare_capacity;
    void *stream;
    tp_bfc_options_t allocator_options;
    tp_bfc_t *allocator; /* created with the first tensor */
    /* An error that a wait nobody was told about found (freeing memory waits, for one); the
     * next synchronize reports it. */
    tp_status_t *parked_error;
} tp_device_t;

/* A logical device of `physical` whose tensors are served under `allocator_options`. */
tp_status_t *tp_device_create(tp_physical_device_t *physical, int32_t ordinal,
                              const tp_bfc_options_t *allocator_options, tp_device_t **out);
/* Waits for the device's work and returns its stream and memory to the physical device. */
void tp_device_destroy(tp_device_t *device);

/* The device's stream, created on first use. */
tp_status_t *tp_device_stream(tp_device_t *device, void **out_stream);
/* The device's tensor allocator, created on first use. */
tp_status_t *tp_device_allocator(tp_device_t *device, tp_bfc_t **out);
/* The allocator's statistics; zeros with the configured limit before the first tensor. */
void tp_device_memory_stats(tp_device_t *device, tp_bfc_stats_t *out);
/* Returns a chunk of the tensor allocator once the work queued on the device's stream so far
 * is done, so that a kernel still reading it is not disturbed. */
void tp_device_free_in_order(tp_device_t *device, tp_bfc_chunk_t *chunk);

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

struct tp_completion;

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
/* Keeps `error` (taking it) for the next synchronize of the device to report, unless one is
 * kept already; for a wait that found an error it cannot report itself. Under the 1.4 failure
 * contract such an error belongs to no tensor: a plug-in reports failed work through events. */
void tp_device_park_error(tp_device_t *device, tp_status_t *error);
/* Waits for all work queued on the device's stream; reports a parked error first. */
tp_status_t *tp_device_synchronize(tp_device_t *device);
/* Calls fn(arg) once the work queued so far is done: the plug-in's host_callback, or by
 * default after synchronizing the stream. */
tp_status_t *tp_device_then(tp_device_t *device, void (*fn)(void *arg), void *arg);

#endif
