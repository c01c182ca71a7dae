/* A logical device: what placement chooses, tensors live on and kernels run on. Each is a
 * share of one physical device (the whole of it, unless the application split it) with its
 * own stream and its own allocator, so two logical devices of one physical device run and
 * run out of memory independently, as two devices would. */
#ifndef TP_DEVICE_DEVICE_H
#define TP_DEVICE_DEVICE_H

#include <pthread.h>

#include "device/physical_device.h"
#include "memory/bfc_allocator.h"

typedef struct tp_device {
    tp_physical_device_t *physical;
    const tp_device_type_def_t *def; /* the physical device's, for short */
    void *handle;                    /* the physical device's plug-in handle */
    int32_t ordinal;                 /* among the context's logical devices of its type */
    char full_name[96];              /* /job:localhost/replica:0/task:0/device:APU:1 */

    pthread_mutex_t mutex; /* guards the lazy stream and allocator, and the parked error */
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

/* Enqueues a copy of host bytes into device memory. The host buffer must stay valid until the
 * device is synchronized. */
tp_status_t *tp_device_copy_from_host(tp_device_t *device, void *mem, uint64_t offset,
                                      const void *source, uint64_t size);
/* Copies device bytes to host memory and waits for the copy. */
tp_status_t *tp_device_copy_to_host(tp_device_t *device, void *destination, const void *mem,
                                    uint64_t offset, uint64_t size);
/* Copies device memory to another place on the same device or on another device, in stream
 * order (device_copy.c): on the source's stream with the plug-in's own copy within one
 * physical device or between two of one plug-in, the destination's stream then waiting for it
 * by an event; otherwise staged through host memory, the host waiting for the source. */
tp_status_t *tp_device_copy(tp_device_t *source, const void *src_mem, uint64_t src_offset,
                            tp_device_t *destination, void *dst_mem, uint64_t dst_offset,
                            uint64_t size);
/* Keeps `error` (taking it) for the next synchronize of the device to report, unless one is
 * kept already; for a wait that found an error it cannot report itself. */
void tp_device_park_error(tp_device_t *device, tp_status_t *error);
/* Waits for all work queued on the device's stream; reports a parked error first. */
tp_status_t *tp_device_synchronize(tp_device_t *device);
/* Calls fn(arg) once the work queued so far is done: the plug-in's host_callback, or by
 * default after synchronizing the stream. */
tp_status_t *tp_device_then(tp_device_t *device, void (*fn)(void *arg), void *arg);

#endif
