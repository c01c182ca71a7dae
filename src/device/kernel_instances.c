/* SPDX-License-Identifier: Apache-2.0 */
#include "device/kernel_instances.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

/* Chained buckets that only grow until the device closes: a reader walks a chain without a
 * lock, since an entry is complete before its bucket's head points at it (release order) and
 * nothing is unlinked while launches can run. */
enum { BUCKETS = 1024 };

struct tp_kernel_instances {
    size_t count; /* under the device's instances_mutex */
    _Atomic(tp_kept_instance_t *) buckets[BUCKETS];
};

static bool is_key(const tp_kept_instance_t *entry, const tp_instance_key_t *key) {
    return entry->hash == key->hash && entry->kernel == key->kernel &&
           entry->key_size == key->size && memcmp(entry->key, key->bytes, key->size) == 0;
}

static tp_kept_instance_t *find_in(struct tp_kernel_instances *table,
                                   const tp_instance_key_t *key) {
    tp_kept_instance_t *entry =
        atomic_load_explicit(&table->buckets[key->hash % BUCKETS], memory_order_acquire);
    while (entry != NULL && !is_key(entry, key)) entry = entry->next;
    return entry;
}

tp_kept_instance_t *tp_device_find_instance(tp_device_t *device, const tp_instance_key_t *key) {
    struct tp_kernel_instances *table =
        atomic_load_explicit(&device->instances, memory_order_acquire);
    return table == NULL ? NULL : find_in(table, key);
}

/* The device's table, made if need be; called with instances_mutex held. */
static struct tp_kernel_instances *table_of(tp_device_t *device) {
    struct tp_kernel_instances *table =
        atomic_load_explicit(&device->instances, memory_order_relaxed);
    if (table != NULL) return table;
    table = calloc(1, sizeof *table);
    if (table != NULL) atomic_store_explicit(&device->instances, table, memory_order_release);
    return table;
}

static tp_status_t *out_of_memory(const tp_device_t *device) {
    return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory keeping a kernel instance "
                          "for %s", device->full_name);
}

/* Keeps `instance` for `key` in `table`; called with instances_mutex held. */
static tp_status_t *insert(tp_device_t *device, struct tp_kernel_instances *table,
                           const tp_instance_key_t *key, void *instance,
                           tp_kept_instance_t **out) {
    tp_kept_instance_t *entry = malloc(sizeof *entry + key->size);
    if (entry == NULL) return out_of_memory(device);
    if (pthread_mutex_init(&entry->compute_mutex, NULL) != 0) {
        free(entry);
        return out_of_memory(device);
    }
    entry->kernel = key->kernel;
    entry->instance = instance;
    entry->serialized = (key->kernel->flags & TP_KERNEL_CONCURRENT_COMPUTE) == 0;
    entry->hash = key->hash;
    entry->key_size = key->size;
    memcpy(entry->key, key->bytes, key->size);
    _Atomic(tp_kept_instance_t *) *bucket = &table->buckets[key->hash % BUCKETS];
    entry->next = atomic_load_explicit(bucket, memory_order_relaxed);
    atomic_store_explicit(bucket, entry, memory_order_release);
    table->count++;
    *out = entry;
    return NULL;
}

tp_status_t *tp_device_keep_instance(tp_device_t *device, const tp_instance_key_t *key,
                                     tp_status_t *(*make)(void *arg, void **out_instance),
                                     void *arg, tp_kept_instance_t **out) {
    *out = NULL;
    pthread_mutex_lock(&device->instances_mutex);
    struct tp_kernel_instances *table = table_of(device);
    tp_status_t *error = NULL;
    if (table == NULL) {
        error = out_of_memory(device);
    } else if ((*out = find_in(table, key)) == NULL && table->count < TP_MAX_KEPT_INSTANCES) {
        /* Made with the lock held: a create may compile for a long time, and a second launch
         * of the same key should wait for it rather than compile again. */
        void *instance = NULL;
        error = make(arg, &instance);
        if (error == NULL) {
            error = insert(device, table, key, instance, out);
            if (error != NULL && key->kernel->destroy != NULL) key->kernel->destroy(instance);
        }
    }
    pthread_mutex_unlock(&device->instances_mutex);
    return error;
}

void tp_device_drop_instances(tp_device_t *device) {
    struct tp_kernel_instances *table = atomic_load(&device->instances);
    if (table == NULL) return;
    for (size_t b = 0; b < BUCKETS; b++) {
        tp_kept_instance_t *entry = atomic_load_explicit(&table->buckets[b], memory_order_relaxed);
        while (entry != NULL) {
            tp_kept_instance_t *next = entry->next;
            if (entry->kernel->destroy != NULL) entry->kernel->destroy(entry->instance);
            pthread_mutex_destroy(&entry->compute_mutex);
            free(entry);
            entry = next;
        }
    }
    free(table);
    atomic_store(&device->instances, NULL);
}
