/* A physical device as the core drives it: the plug-in's device handle behind its function
 * table, with a lazily created stream and byte counters. */
#ifndef TP_DEVICE_PHYSICAL_DEVICE_H
#define TP_DEVICE_PHYSICAL_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>

#include "memory/bfc_allocator.h"
#include "plugin/plugin_record.h"
#include "tensorplug/tensorplug.h"

struct tp_physical_device {
    const tp_device_type_def_t *def;
    const tp_plugin_record_t *plugin;
    void *handle;               /* the plug-in's, from device_init */
    int32_t ordinal;
    char name[64];              /* /physical_device:APU:0 */
    char full_name[96];         /* /job:localhost/replica:0/task:0/device:APU:0 */
    char *hardware_name;
    char *vendor;
    uint64_t memory_bytes;

    pthread_mutex_t mutex;      /* guards the lazy creation of the stream and allocator */
    void *stream;
    /* Tensor memory, created on the first tensor allocation: grows on demand where
     * `grows_by_default` (the host's CPU), else reserves nearly all the device at once. */
    tp_bfc_t *allocator;
    bool grows_by_default;
    /* An error that a wait nobody was told about found (freeing memory waits, for one); the
     * next synchronize reports it. Guarded by `mutex`. */
    tp_status_t *parked_error;
    atomic_int_fast64_t bytes_in_use;
    atomic_int_fast64_t live_allocations;
};

/* Opens device `ordinal` of a registered type; the device's strings are copied. */
tp_status_t *tp_physical_device_open(const tp_plugin_record_t *plugin,
                                     const tp_device_type_def_t *def, int32_t ordinal,
                                     tp_physical_device_t **out_device);
/* Waits for the device's work, destroys its stream and releases the plug-in's handle. */
void tp_physical_device_close(tp_physical_device_t *device);

/* The device's stream, created on first use. */
tp_status_t *tp_physical_device_stream(tp_physical_device_t *device, void **out_stream);

/* Raw device memory; `size` > 0. */
tp_status_t *tp_physical_device_allocate(tp_physical_device_t *device, uint64_t size,
                                         void **out_mem);
void tp_physical_device_deallocate(tp_physical_device_t *device, void *mem, uint64_t size);
/* The device's tensor allocator, created on first use. */
tp_status_t *tp_physical_device_allocator(tp_physical_device_t *device, tp_bfc_t **out);
/* Returns a chunk of the tensor allocator once the work queued on the device's stream so far
 * is done, so that a kernel still reading it is not disturbed. */
void tp_physical_device_free_in_order(tp_physical_device_t *device, void *mem, uint64_t offset);
/* Bytes of tensor memory in use on the device (0 before the first tensor). */
uint64_t tp_physical_device_tensor_bytes(tp_physical_device_t *device);

/* Enqueues a copy of host bytes into device memory. The host buffer must stay valid until the
 * device is synchronized. */
tp_status_t *tp_physical_device_copy_from_host(tp_physical_device_t *device, void *mem,
                                               uint64_t offset, const void *source,
                                               uint64_t size);
/* Copies device bytes to host memory and waits for the copy. */
tp_status_t *tp_physical_device_copy_to_host(tp_physical_device_t *device, void *destination,
                                             const void *mem, uint64_t offset, uint64_t size);
/* Copies device memory to another place on the same device or on another device: in stream
 * order with the plug-in's memcpy_device_to_device within one device, otherwise staged through
 * host memory (waiting for both copies). */
tp_status_t *tp_physical_device_copy(tp_physical_device_t *source, const void *src_mem,
                                     uint64_t src_offset, tp_physical_device_t *destination,
                                     void *dst_mem, uint64_t dst_offset, uint64_t size);
/* Waits for all work queued on the device's stream. */
tp_status_t *tp_physical_device_synchronize(tp_physical_device_t *device);
/* Waits for all work on the device: the plug-in's device_synchronize, or by default the
 * stream the host created. */
tp_status_t *tp_physical_device_synchronize_all(tp_physical_device_t *device);
/* Free and total device memory: the plug-in's memory_usage, or by default the total it
 * reported at init less what the host has allocated. */
void tp_physical_device_memory_usage(tp_physical_device_t *device, uint64_t *out_free,
                                     uint64_t *out_total);
/* Calls fn(arg) once the work queued so far is done: the plug-in's host_callback, or by
 * default after synchronizing the stream. */
tp_status_t *tp_physical_device_then(tp_physical_device_t *device, void (*fn)(void *arg),
                                     void *arg);

#endif
