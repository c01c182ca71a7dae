/* SPDX-License-Identifier: Apache-2.0 */
/* A physical device as the core holds it: the plug-in's device handle behind its function
 * table, what it reported about itself, its raw memory counters and the application's
 * configuration of it. Work runs on the logical devices made from it (device/device.h). */
#ifndef TP_DEVICE_PHYSICAL_DEVICE_H
#define TP_DEVICE_PHYSICAL_DEVICE_H

#include <stdatomic.h>

#include "memory/memory_config.h"
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
    char *driver_version;       /* "" when the plug-in does not say */
    int32_t compute_units;      /* 0 when the plug-in does not say */
    uint64_t memory_bytes;      /* 0 when the plug-in does not say */
    uint64_t max_allocation;    /* the most one allocate serves; 0: no limit but memory */

    /* What the application asked of the device before its context initialized the logical
     * devices (guarded by the context). */
    tp_memory_config_t memory;
    bool visible;
    bool grows_by_default;      /* the host's CPU, or a device that says its memory is the
                                 * host's: shared with everything else */
    bool host_addressed;        /* its memory handles are host addresses: the built-in CPU */

    /* Raw memory handed out, by tp_physical_device_allocate. */
    atomic_int_fast64_t bytes_in_use;
    atomic_int_fast64_t live_allocations;
};

/* Opens device `ordinal` of a registered type; the device's strings are copied. */
tp_status_t *tp_physical_device_open(const tp_plugin_record_t *plugin,
                                     const tp_device_type_def_t *def, int32_t ordinal,
                                     tp_physical_device_t **out_device);
/* Releases the plug-in's handle; its logical devices must be gone. */
void tp_physical_device_close(tp_physical_device_t *device);

/* Raw device memory; `size` > 0. */
tp_status_t *tp_physical_device_allocate(tp_physical_device_t *device, uint64_t size,
                                         void **out_mem);
void tp_physical_device_deallocate(tp_physical_device_t *device, void *mem, uint64_t size);
/* Waits for all the device's work with the plug-in's device_synchronize; without it, there is
 * nothing beyond the logical devices' streams to wait for. */
tp_status_t *tp_physical_device_synchronize(tp_physical_device_t *device);
/* Free and total device memory: the plug-in's memory_usage, or by default the total it
 * reported at init less what the host has allocated. */
void tp_physical_device_memory_usage(tp_physical_device_t *device, uint64_t *out_free,
                                     uint64_t *out_total);

#endif
