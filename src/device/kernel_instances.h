/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel instances a logical device keeps (TP_KERNEL_REUSE_INSTANCE): one per kernel and
 * key, made by the first launch that needs it and destroyed when the device closes. The device
 * layer knows a key only as bytes; the launch layer makes them from a call's attributes and
 * dtypes (launch/kernel_instance.h). */
#ifndef TP_DEVICE_KERNEL_INSTANCES_H
#define TP_DEVICE_KERNEL_INSTANCES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "device/device.h"

typedef struct tp_instance_key {
    const tp_kernel_def_t *kernel;
    const unsigned char *bytes;
    size_t size;
    uint64_t hash; /* of kernel and bytes */
} tp_instance_key_t;

typedef struct tp_kept_instance {
    struct tp_kept_instance *next; /* in its bucket; set before the entry is published */
    const tp_kernel_def_t *kernel;
    void *instance; /* what create returned */
    /* Held around compute unless the kernel declared TP_KERNEL_CONCURRENT_COMPUTE. */
    bool serialized;
    pthread_mutex_t compute_mutex;
    uint64_t hash;
    size_t key_size;
    unsigned char key[];
} tp_kept_instance_t;

/* The most instances one device keeps; past it, launches make one-launch instances. */
enum { TP_MAX_KEPT_INSTANCES = 4096 };

/* The instance kept on `device` for `key`, or NULL. Lock-free: an entry, once published, stays
 * unchanged until the device closes. */
tp_kept_instance_t *tp_device_find_instance(tp_device_t *device, const tp_instance_key_t *key);

/* The instance for `key`, made now by make(arg, &instance) unless another thread made it first:
 * makes run one at a time per device, so one key is made once. A make that fails is returned
 * and nothing is kept. *out is NULL, with no error and no make, when the device keeps
 * TP_MAX_KEPT_INSTANCES already. */
tp_status_t *tp_device_keep_instance(tp_device_t *device, const tp_instance_key_t *key,
                                     tp_status_t *(*make)(void *arg, void **out_instance),
                                     void *arg, tp_kept_instance_t **out);

/* Destroys every kept instance (the kernels' destroy) and frees the table; for closing the
 * device, once no launch can run on it and its work is done. */
void tp_device_drop_instances(tp_device_t *device);

#endif
