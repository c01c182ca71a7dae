/* SPDX-License-Identifier: Apache-2.0 */
#include "device/device.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/profile_hooks.h"
#include "base/status.h"
#include "device/completion.h"
#include "device/kernel_instances.h"
#include "device/task_identity.h"
#include "plugin/plugin_status.h"

/* All of the device's mutexes, or none. */
static bool init_mutexes(tp_device_t *device) {
    pthread_mutex_t *mutexes[] = {&device->mutex, &device->queue_mutex, &device->deferred_mutex,
                                  &device->instances_mutex};
    size_t made = 0, count = sizeof mutexes / sizeof *mutexes;
    while (made < count && pthread_mutex_init(mutexes[made], NULL) == 0) made++;
    if (made == count) return true;
    while (made > 0) pthread_mutex_destroy(mutexes[--made]);
    return false;
}

tp_status_t *tp_device_create(tp_physical_device_t *physical, int32_t ordinal,
                              const tp_bfc_options_t *allocator_options, tp_device_t **out) {
    tp_device_t *device = calloc(1, sizeof *device);
    if (device != NULL && !init_mutexes(device)) {
        free(device);
        device = NULL;
    }
    if (device == NULL) {
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory opening %s:%d",
                              physical->def->type, (int)ordinal);
    }
    device->physical = physical;
    device->def = physical->def;
    device->handle = physical->handle;
    device->ordinal = ordinal;
    device->synchronous = (physical->def->flags & TP_DEVICE_SYNCHRONOUS) != 0;
    snprintf(device->full_name, sizeof device->full_name,
             "%s/device:%s:%d", tp_task_identity()->prefix, physical->def->type, (int)ordinal);
    device->allocator_options = *allocator_options;
    *out = device;
    return NULL;
}

void tp_device_destroy(tp_device_t *device) {
    if (device == NULL) return;
    if (device->stream != NULL) {
        tp_status_t *status = tp_device_synchronize(device);
        if (status != NULL) {
            tp_log_message(TP_LOG_WARNING, "closing %s: %s", device->full_name,
                           tp_status_message(status));
            tp_status_free(status);
        }
    }
    /* After the work that used them, before the stream they may refer to. */
    tp_device_drop_instances(device);
    if (device->stream != NULL) device->def->stream_destroy(device->handle, device->stream);
    tp_device_finish_deferred(device);
    free(device->deferred);
    tp_completion_release(device->last_work); /* settled by the above: it holds no event */
    for (size_t i = 0; i < device->num_spare_events; i++)
        device->def->event_destroy(device->handle, device->spare_events[i]);
    free(device->spare_events);
    tp_bfc_destroy(device->allocator); /* its regions go back before the device does */
    pthread_mutex_destroy(&device->instances_mutex);
    pthread_mutex_destroy(&device->deferred_mutex);
    pthread_mutex_destroy(&device->queue_mutex);
    pthread_mutex_destroy(&device->mutex);
    free(device);
}

void tp_device_lock_queue(tp_device_t *device) {
    if (!device->synchronous) pthread_mutex_lock(&device->queue_mutex);
}

void tp_device_unlock_queue(tp_device_t *device) {
    if (!device->synchronous) pthread_mutex_unlock(&device->queue_mutex);
}

tp_status_t *tp_device_take_event(tp_device_t *device, void **out_event) {
    pthread_mutex_lock(&device->mutex);
    void *event = device->num_spare_events > 0
                      ? device->spare_events[--device->num_spare_events]
                      : NULL;
    pthread_mutex_unlock(&device->mutex);
    if (event != NULL) {
        *out_event = event;
        return NULL;
    }
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->event_create(device->handle, &event, &status);
    TP_RETURN_IF_ERROR(tp_plugin_status_check(&status, "event_create on %s", device->full_name));
    if (event == NULL)
        return tp_status_make(TP_INTERNAL, "event_create on %s returned no event",
                              device->full_name);
    *out_event = event;
    return NULL;
}

/* Up to this many spare events a device keeps; more are destroyed. Enough for the launches
 * several threads keep in flight, without holding on to a burst's worth forever. */
#define MAX_SPARE_EVENTS 256

void tp_device_give_event(tp_device_t *device, void *event) {
    pthread_mutex_lock(&device->mutex);
    if (device->num_spare_events == device->spare_capacity &&
        device->spare_capacity < MAX_SPARE_EVENTS) {
        size_t capacity = device->spare_capacity == 0 ? 16 : device->spare_capacity * 2;
        void **grown = realloc(device->spare_events, capacity * sizeof *grown);
        if (grown != NULL) {
            device->spare_events = grown;
            device->spare_capacity = capacity;
        }
    }
    bool kept = device->num_spare_events < device->spare_capacity;
    if (kept) device->spare_events[device->num_spare_events++] = event;
    pthread_mutex_unlock(&device->mutex);
    if (!kept) device->def->event_destroy(device->handle, event);
}

/* The device's one stream, created on first use so that listing devices costs no stream. */
tp_status_t *tp_device_stream(tp_device_t *device, void **out_stream) {
    void *made = atomic_load_explicit(&device->stream, memory_order_acquire);
    if (made != NULL) {
        *out_stream = made;
        return NULL;
    }
    pthread_mutex_lock(&device->mutex);
    tp_status_t *error = NULL;
    if (device->stream == NULL) {
        tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
        void *stream = NULL;
        device->def->stream_create(device->handle, &stream, &status);
        error = tp_plugin_status_check(&status, "stream_create on %s", device->full_name);
        if (error == NULL && stream == NULL)
            error = tp_status_make(TP_INTERNAL, "stream_create on %s returned no stream",
                                   device->full_name);
        if (error == NULL) atomic_store_explicit(&device->stream, stream, memory_order_release);
    }
    *out_stream = device->stream;
    pthread_mutex_unlock(&device->mutex);
    return error;
}

/* ---- Copies and waits ---------------------------------------------------------------------- */

tp_status_t *tp_device_copy_from_host(tp_device_t *device, void *mem, uint64_t offset,
                                      const void *source, uint64_t size,
                                      tp_completion_t **out_done) {
    void *stream;
    TP_RETURN_IF_ERROR(tp_device_stream(device, &stream));
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    tp_device_lock_queue(device);
    device->def->memcpy_host_to_device(device->handle, stream, mem, offset, source, size, &status);
    tp_status_t *error = tp_plugin_status_check(&status, "copying %llu bytes to %s",
                                                (unsigned long long)size, device->full_name);
    tp_completion_t *done = NULL;
    if (error == NULL) error = tp_completion_record(device, "copy from the host", NULL, 0, &done);
    tp_device_unlock_queue(device);
    if (out_done != NULL) {
        *out_done = done;
    } else {
        if (error == NULL) error = tp_completion_wait(done);
        tp_completion_release(done);
    }
    if (profile != NULL && error == NULL) profile->host_copy(device, false, size, begin_ns);
    return error;
}

tp_status_t *tp_device_copy_to_host(tp_device_t *device, void *destination, const void *mem,
                                    uint64_t offset, uint64_t size) {
    void *stream;
    TP_RETURN_IF_ERROR(tp_device_stream(device, &stream));
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    tp_completion_t *done = NULL;
    tp_device_lock_queue(device);
    device->def->memcpy_device_to_host(device->handle, stream, destination, mem, offset, size,
                                       &status);
    tp_status_t *error = tp_plugin_status_check(&status, "copying %llu bytes from %s",
                                                (unsigned long long)size, device->full_name);
    if (error == NULL) error = tp_completion_record(device, "copy to the host", NULL, 0, &done);
    tp_device_unlock_queue(device);
    if (error == NULL) error = tp_completion_wait(done);
    tp_completion_release(done);
    if (profile != NULL && error == NULL) profile->host_copy(device, true, size, begin_ns);
    return error;
}

tp_status_t *tp_device_synchronize(tp_device_t *device) {
    void *stream;
    TP_RETURN_IF_ERROR(tp_device_stream(device, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->stream_synchronize(device->handle, stream, &status);
    tp_device_finish_deferred(device);
    return tp_plugin_status_check(&status, "waiting for %s", device->full_name);
}

tp_status_t *tp_device_then(tp_device_t *device, void (*fn)(void *arg), void *arg) {
    if (device->def->host_callback == NULL) {
        TP_RETURN_IF_ERROR(tp_device_synchronize(device));
        fn(arg);
        return NULL;
    }
    void *stream;
    TP_RETURN_IF_ERROR(tp_device_stream(device, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->host_callback(device->handle, stream, fn, arg, &status);
    return tp_plugin_status_check(&status, "host_callback on %s", device->full_name);
}
