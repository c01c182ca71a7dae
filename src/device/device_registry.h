/* SPDX-License-Identifier: Apache-2.0 */
/* A context's view of the plug-ins and their devices: which plug-ins its search found, which
 * it uses and why it refused the others, the physical devices of those it uses and the logical
 * devices made of them. */
#ifndef TP_DEVICE_DEVICE_REGISTRY_H
#define TP_DEVICE_DEVICE_REGISTRY_H

#include "device/device.h"
#include "device/physical_device.h"
#include "plugin/plugin_record.h"
#include "tensorplug/tensorplug.h"

typedef struct tp_plugin_entry {
    const tp_plugin_record_t *record;
    char *refusal;      /* NULL when the plug-in is used */
    char *device_types; /* "APU,XPU" */
} tp_plugin_entry_t;

/* A kernel of a used plug-in with its op and device type resolved, so that looking kernels up
 * compares pointers, not names. */
typedef struct tp_kernel_entry {
    const tp_op_def_t *op;
    const tp_device_type_def_t *device_type;
    const tp_kernel_def_t *kernel;
    /* Its place in registration order (the built-ins, then the plug-ins in discovery order,
     * each in the order of its register_kernel calls), which breaks ties of priority. */
    size_t sequence;
    /* The last dtype its plug-in's ABI version has: the kernel runs no call with a later one
     * (plugin.h), whatever its constraints leave open. */
    tp_dtype_t newest_dtype;
} tp_kernel_entry_t;

typedef struct tp_device_registry {
    tp_plugin_entry_t *plugins;
    size_t num_plugins;
    /* By plug-in order, then type order, then ordinal. */
    tp_physical_device_t **physical_devices;
    size_t num_physical_devices;
    tp_physical_device_t *host_physical; /* CPU:0 */
    /* The logical devices ops run on, made by tp_device_registry_initialize from the visible
     * physical devices in their order, numbered per type from 0. Empty until then. */
    tp_device_t **devices;
    size_t num_devices;
    tp_device_t *host_device; /* logical CPU:0, a share of physical CPU:0 */
    tp_kernel_entry_t *kernels; /* sorted by op, then sequence */
    size_t num_kernels;
} tp_device_registry_t;

/* Finds, loads and checks the plug-ins the options ask for and opens their devices. A plug-in
 * that cannot be used is refused with a logged reason; only running out of host memory or a
 * missing CPU device fails. */
tp_status_t *tp_device_registry_build(const tp_context_options_t *options,
                                      tp_device_registry_t *out_registry);
/* Makes the logical devices from the physical devices' configuration; `forced` is
 * TP_FORCE_ALLOW_GROWTH's verdict. All or nothing. */
tp_status_t *tp_device_registry_initialize(tp_device_registry_t *registry, tp_growth_t forced);
/* The logical devices of one type (NULL: all), by ordinal. */
tp_device_t *tp_device_registry_find(const tp_device_registry_t *registry, const char *type,
                                     int32_t ordinal);
/* Closes every device. */
void tp_device_registry_free(tp_device_registry_t *registry);

#endif
