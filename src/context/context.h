/* SPDX-License-Identifier: Apache-2.0 */
/* The context: the devices one application uses, and what keeps them alive. */
#ifndef TP_CONTEXT_CONTEXT_H
#define TP_CONTEXT_CONTEXT_H

#include <stdatomic.h>

#include "device/device_registry.h"
#include "tensorplug/tensorplug.h"

#include <pthread.h>
#include <stdio.h>

/* Fallbacks of one op from the device placement preferred to the one it ran on. Each record
 * is allocated alone and kept until the context goes, so a cached placement may count on it
 * with an atomic add and no lock. */
typedef struct tp_fallback_record {
    char op[64];
    char from[96];
    char to[96];
    _Atomic uint64_t count;
} tp_fallback_record_t;

typedef struct tp_placement_cache tp_placement_cache_t;

struct tp_context {
    /* One reference for the application, one per live tensor: destroying a context whose
     * tensors are still alive defers the release of its devices to the last tensor. */
    atomic_int references;
    tp_device_registry_t registry;
    /* The logical devices are made on first use (tp_context_devices_ready); until then the
     * application may configure the physical devices, under `devices_mutex`. */
    pthread_mutex_t devices_mutex;
    atomic_bool devices_ready;

    atomic_bool log_device_placement;
    atomic_bool soft_device_placement;
    bool strict_placement;
    atomic_uint graph_passes; /* TP_PASS_* bits switched on */
    FILE *placement_log;

    pthread_mutex_t fallback_mutex;
    tp_fallback_record_t **fallbacks; /* grown under fallback_mutex; records never move */
    size_t num_fallbacks, fallbacks_capacity;

    /* Placements already made (launch/placement_cache.h): one block, made at first use. */
    _Atomic(struct tp_placement_cache *) placement_cache;
};

/* Makes the logical devices if they are not made yet; after it, configuring the physical
 * devices fails. */
tp_status_t *tp_context_initialize_devices(tp_context_t *context);
static inline tp_status_t *tp_context_devices_ready(tp_context_t *context) {
    if (atomic_load_explicit(&context->devices_ready, memory_order_acquire)) return NULL;
    return tp_context_initialize_devices(context);
}

/* The logical device named `name` in any accepted form ("APU:1", "/device:CPU:0"); makes the
 * logical devices if need be. "... unknown device." when there is none. */
tp_status_t *tp_context_find_device(tp_context_t *context, const char *name, tp_device_t **out);

void tp_context_retain(tp_context_t *context);
void tp_context_release(tp_context_t *context);

#endif
