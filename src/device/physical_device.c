#include "device/physical_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "plugin/abi_sizes.h"
#include "plugin/plugin_status.h"

static char *copy_text(const char *text, const char *fallback) {
    return strdup(text != NULL && text[0] != '\0' ? text : fallback);
}

static void park_error(tp_physical_device_t *device, tp_status_t *error) {
    if (error == NULL) return;
    pthread_mutex_lock(&device->mutex);
    if (device->parked_error == NULL) {
        device->parked_error = error;
        error = NULL;
    }
    pthread_mutex_unlock(&device->mutex);
    tp_status_free(error);
}

static tp_status_t *take_parked_error(tp_physical_device_t *device) {
    pthread_mutex_lock(&device->mutex);
    tp_status_t *error = device->parked_error;
    device->parked_error = NULL;
    pthread_mutex_unlock(&device->mutex);
    return error;
}

tp_status_t *tp_physical_device_open(const tp_plugin_record_t *plugin,
                                     const tp_device_type_def_t *def, int32_t ordinal,
                                     tp_physical_device_t **out_device) {
    tp_physical_device_t *device = calloc(1, sizeof *device);
    if (device == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory opening %s:%d",
                              def->type, (int)ordinal);
    device->def = def;
    device->plugin = plugin;
    device->ordinal = ordinal;
    snprintf(device->name, sizeof device->name, "/physical_device:%s:%d", def->type, (int)ordinal);
    snprintf(device->full_name, sizeof device->full_name,
             "/job:localhost/replica:0/task:0/device:%s:%d", def->type, (int)ordinal);

    tp_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    def->device_init(def->type_state, ordinal, &info, &device->handle, &status);
    tp_status_t *error = tp_plugin_status_check(&status, "device_init of %s", device->name);
    if (error != NULL) {
        free(device);
        return error;
    }
    device->hardware_name = copy_text(info.hardware_name, def->type);
    device->vendor = copy_text(info.vendor, "unknown");
    device->memory_bytes = info.memory_bytes;
    if (device->hardware_name == NULL || device->vendor == NULL ||
        pthread_mutex_init(&device->mutex, NULL) != 0) {
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory opening %s",
                               device->name);
        def->device_release(device->handle);
        free(device->hardware_name);
        free(device->vendor);
        free(device);
        return error;
    }
    atomic_init(&device->bytes_in_use, 0);
    atomic_init(&device->live_allocations, 0);
    *out_device = device;
    return NULL;
}

void tp_physical_device_close(tp_physical_device_t *device) {
    if (device == NULL) return;
    if (device->stream != NULL) {
        tp_status_t *status = tp_physical_device_synchronize_all(device);
        if (status != NULL) {
            tp_log_message(TP_LOG_WARNING, "closing %s: %s", device->name,
                           tp_status_message(status));
            tp_status_free(status);
        }
        device->def->stream_destroy(device->handle, device->stream);
    }
    tp_bfc_destroy(device->allocator); /* its regions go back before the device does */
    tp_status_t *parked = take_parked_error(device);
    if (parked != NULL) {
        tp_log_message(TP_LOG_WARNING, "closing %s: an error nobody waited for: %s", device->name,
                       tp_status_message(parked));
        tp_status_free(parked);
    }
    int_fast64_t leaked = atomic_load(&device->live_allocations);
    if (leaked != 0)
        tp_log_message(TP_LOG_WARNING, "closing %s with %lld allocations (%lld bytes) still live",
               device->name, (long long)leaked, (long long)atomic_load(&device->bytes_in_use));
    device->def->device_release(device->handle);
    pthread_mutex_destroy(&device->mutex);
    free(device->hardware_name);
    free(device->vendor);
    free(device);
}

/* The device's one stream, created on first use so that listing devices costs no stream. */
tp_status_t *tp_physical_device_stream(tp_physical_device_t *device, void **out_stream) {
    pthread_mutex_lock(&device->mutex);
    tp_status_t *error = NULL;
    if (device->stream == NULL) {
        tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
        void *stream = NULL;
        device->def->stream_create(device->handle, &stream, &status);
        error = tp_plugin_status_check(&status, "stream_create on %s", device->name);
        if (error == NULL && stream == NULL)
            error = tp_status_make(TP_INTERNAL, "stream_create on %s returned no stream",
                                   device->name);
        if (error == NULL) device->stream = stream;
    }
    *out_stream = device->stream;
    pthread_mutex_unlock(&device->mutex);
    return error;
}

tp_status_t *tp_physical_device_allocate(tp_physical_device_t *device, uint64_t size,
                                         void **out_mem) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    void *mem = NULL;
    device->def->allocate(device->handle, size, &mem, &status);
    tp_status_t *error = tp_plugin_status_check(&status, "allocating %llu bytes on %s",
                                                (unsigned long long)size, device->full_name);
    if (error == NULL && mem == NULL)
        error = tp_status_make(TP_RESOURCE_EXHAUSTED,
                               "allocating %llu bytes on %s: the device returned no memory",
                               (unsigned long long)size, device->full_name);
    if (error != NULL) return error;
    atomic_fetch_add(&device->bytes_in_use, (int_fast64_t)size);
    atomic_fetch_add(&device->live_allocations, 1);
    *out_mem = mem;
    return NULL;
}

void tp_physical_device_deallocate(tp_physical_device_t *device, void *mem, uint64_t size) {
    if (mem == NULL) return;
    device->def->deallocate(device->handle, mem);
    atomic_fetch_sub(&device->bytes_in_use, (int_fast64_t)size);
    atomic_fetch_sub(&device->live_allocations, 1);
}

/* ---- The tensor allocator ------------------------------------------------------------ */

static tp_status_t *raw_allocate(void *state, uint64_t size, void **out_mem) {
    return tp_physical_device_allocate(state, size, out_mem);
}

static void raw_deallocate(void *state, void *mem, uint64_t size) {
    tp_physical_device_deallocate(state, mem, size);
}

/* By default a device's allocator takes nearly all of it in one region, leaving a small
 * reserve for the plug-in's own needs: 1/50 of the memory, at least 16 MiB, at most half. */
static tp_bfc_options_t default_allocator_options(const tp_physical_device_t *device) {
    uint64_t total = device->memory_bytes > 0 ? device->memory_bytes : UINT64_C(1) << 32;
    if (device->grows_by_default) return (tp_bfc_options_t){total, true, (uint64_t)2 << 20};
    uint64_t reserve = total / 50 > ((uint64_t)16 << 20) ? total / 50 : (uint64_t)16 << 20;
    if (reserve > total / 2) reserve = total / 2;
    return (tp_bfc_options_t){total - reserve, false, 0};
}

tp_status_t *tp_physical_device_allocator(tp_physical_device_t *device, tp_bfc_t **out) {
    pthread_mutex_lock(&device->mutex);
    tp_status_t *error = NULL;
    if (device->allocator == NULL) {
        char name[64];
        snprintf(name, sizeof name, "%s_%d_bfc", device->def->type, (int)device->ordinal);
        tp_bfc_options_t options = default_allocator_options(device);
        error = tp_bfc_create(name, (tp_bfc_backend_t){raw_allocate, raw_deallocate, device},
                              &options, &device->allocator);
    }
    *out = device->allocator;
    pthread_mutex_unlock(&device->mutex);
    return error;
}

uint64_t tp_physical_device_tensor_bytes(tp_physical_device_t *device) {
    pthread_mutex_lock(&device->mutex);
    tp_bfc_t *allocator = device->allocator;
    pthread_mutex_unlock(&device->mutex);
    if (allocator == NULL) return 0;
    tp_bfc_stats_t stats;
    tp_bfc_get_stats(allocator, &stats);
    return stats.bytes_in_use;
}

typedef struct {
    tp_bfc_t *allocator;
    void *mem;
    uint64_t offset;
} pending_free_t;

static void free_when_done(void *arg) {
    pending_free_t *pending = arg;
    tp_bfc_free(pending->allocator, pending->mem, pending->offset);
    free(pending);
}

void tp_physical_device_free_in_order(tp_physical_device_t *device, void *mem, uint64_t offset) {
    tp_bfc_t *allocator = device->allocator; /* set before any chunk of it existed */
    pending_free_t *pending =
        device->def->host_callback != NULL ? malloc(sizeof *pending) : NULL;
    tp_status_t *error = NULL;
    if (pending != NULL) {
        *pending = (pending_free_t){allocator, mem, offset};
        error = tp_physical_device_then(device, free_when_done, pending);
        if (error == NULL) return;
        free(pending);
    }
    /* No host callback, no memory to wait with, or the stream failed: wait here, then free.
     * An error the wait finds belongs to the work before it, and is kept for whoever waits
     * next. */
    park_error(device, error);
    park_error(device, tp_physical_device_synchronize(device));
    tp_bfc_free(allocator, mem, offset);
}

tp_status_t *tp_physical_device_copy_from_host(tp_physical_device_t *device, void *mem,
                                               uint64_t offset, const void *source,
                                               uint64_t size) {
    void *stream;
    TP_RETURN_IF_ERROR(tp_physical_device_stream(device, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->memcpy_host_to_device(device->handle, stream, mem, offset, source, size, &status);
    return tp_plugin_status_check(&status, "copying %llu bytes to %s",
                                  (unsigned long long)size, device->full_name);
}

tp_status_t *tp_physical_device_copy_to_host(tp_physical_device_t *device, void *destination,
                                             const void *mem, uint64_t offset, uint64_t size) {
    void *stream;
    TP_RETURN_IF_ERROR(tp_physical_device_stream(device, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->memcpy_device_to_host(device->handle, stream, destination, mem, offset, size,
                                       &status);
    TP_RETURN_IF_ERROR(tp_plugin_status_check(&status, "copying %llu bytes from %s",
                                              (unsigned long long)size, device->full_name));
    return tp_physical_device_synchronize(device);
}

tp_status_t *tp_physical_device_synchronize(tp_physical_device_t *device) {
    void *stream;
    TP_RETURN_IF_ERROR(tp_physical_device_stream(device, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->stream_synchronize(device->handle, stream, &status);
    tp_status_t *error = tp_plugin_status_check(&status, "waiting for %s", device->full_name);
    tp_status_t *parked = take_parked_error(device);
    if (parked == NULL) return error;
    tp_status_free(error);
    return parked;
}

tp_status_t *tp_physical_device_copy(tp_physical_device_t *source, const void *src_mem,
                                     uint64_t src_offset, tp_physical_device_t *destination,
                                     void *dst_mem, uint64_t dst_offset, uint64_t size) {
    if (size == 0) return NULL;
    if (source == destination && source->def->memcpy_device_to_device != NULL) {
        void *stream;
        TP_RETURN_IF_ERROR(tp_physical_device_stream(source, &stream));
        tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
        source->def->memcpy_device_to_device(source->handle, stream, dst_mem, dst_offset,
                                             src_mem, src_offset, size, &status);
        return tp_plugin_status_check(&status, "copying %llu bytes within %s",
                                      (unsigned long long)size, source->full_name);
    }
    void *staging = size <= SIZE_MAX ? malloc((size_t)size) : NULL;
    if (staging == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED,
                              "copying %llu bytes from %s to %s: no host memory to stage them in",
                              (unsigned long long)size, source->full_name,
                              destination->full_name);
    tp_status_t *error =
        tp_physical_device_copy_to_host(source, staging, src_mem, src_offset, size);
    if (error == NULL)
        error = tp_physical_device_copy_from_host(destination, dst_mem, dst_offset, staging, size);
    /* The staging buffer must outlive the copy out of it. */
    if (error == NULL) error = tp_physical_device_synchronize(destination);
    free(staging);
    return error;
}

tp_status_t *tp_physical_device_synchronize_all(tp_physical_device_t *device) {
    if (device->def->device_synchronize == NULL) {
        if (device->stream == NULL) return NULL; /* nothing was ever queued */
        return tp_physical_device_synchronize(device);
    }
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->device_synchronize(device->handle, &status);
    return tp_plugin_status_check(&status, "waiting for all of %s", device->full_name);
}

void tp_physical_device_memory_usage(tp_physical_device_t *device, uint64_t *out_free,
                                     uint64_t *out_total) {
    if (device->def->memory_usage != NULL) {
        uint64_t free_bytes = 0, total_bytes = 0;
        device->def->memory_usage(device->handle, &free_bytes, &total_bytes);
        *out_free = free_bytes;
        *out_total = total_bytes;
        return;
    }
    uint64_t used = (uint64_t)atomic_load(&device->bytes_in_use);
    *out_total = device->memory_bytes;
    *out_free = used < device->memory_bytes ? device->memory_bytes - used : 0;
}

tp_status_t *tp_physical_device_then(tp_physical_device_t *device, void (*fn)(void *arg),
                                     void *arg) {
    if (device->def->host_callback == NULL) {
        TP_RETURN_IF_ERROR(tp_physical_device_synchronize(device));
        fn(arg);
        return NULL;
    }
    void *stream;
    TP_RETURN_IF_ERROR(tp_physical_device_stream(device, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->host_callback(device->handle, stream, fn, arg, &status);
    return tp_plugin_status_check(&status, "host_callback on %s", device->full_name);
}
