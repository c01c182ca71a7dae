/* SPDX-License-Identifier: Apache-2.0 */
#include "device/physical_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/printable.h"
#include "base/status.h"
#include "device/task_identity.h"
#include "plugin/plugin_status.h"

/* The plug-in's text, escaped: device listings print it as it is kept. */
static char *copy_text(const char *text, const char *fallback) {
    if (text == NULL || text[0] == '\0') return strdup(fallback);
    size_t capacity = strlen(text) * TP_PRINTABLE_EXPANSION + 1;
    char *shown = malloc(capacity);
    if (shown != NULL) tp_printable_copy(shown, capacity, text);
    return shown;
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
             "%s/device:%s:%d", tp_task_identity()->prefix, def->type, (int)ordinal);

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
    device->driver_version = copy_text(info.driver_version, "");
    device->compute_units = info.compute_units > 0 ? info.compute_units : 0;
    device->memory_bytes = info.memory_bytes;
    device->max_allocation = info.max_allocation_bytes;
    device->grows_by_default = (info.flags & TP_DEVICE_INFO_HOST_MEMORY) != 0;
    if (device->hardware_name == NULL || device->vendor == NULL ||
        device->driver_version == NULL) {
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory opening %s",
                               device->name);
        def->device_release(device->handle);
        free(device->hardware_name);
        free(device->vendor);
        free(device->driver_version);
        free(device);
        return error;
    }
    device->memory = (tp_memory_config_t)TP_MEMORY_CONFIG_INIT;
    device->visible = true;
    atomic_init(&device->bytes_in_use, 0);
    atomic_init(&device->live_allocations, 0);
    *out_device = device;
    return NULL;
}

tp_status_t *tp_physical_device_synchronize(tp_physical_device_t *device) {
    if (device->def->device_synchronize == NULL) return NULL;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->device_synchronize(device->handle, &status);
    return tp_plugin_status_check(&status, "waiting for all of %s", device->name);
}

void tp_physical_device_close(tp_physical_device_t *device) {
    if (device == NULL) return;
    tp_status_t *status = tp_physical_device_synchronize(device);
    if (status != NULL) {
        tp_log_message(TP_LOG_WARNING, "closing %s: %s", device->name, tp_status_message(status));
        tp_status_free(status);
    }
    int_fast64_t leaked = atomic_load(&device->live_allocations);
    if (leaked != 0)
        tp_log_message(TP_LOG_WARNING, "closing %s with %lld allocations (%lld bytes) still live",
                       device->name, (long long)leaked,
                       (long long)atomic_load(&device->bytes_in_use));
    device->def->device_release(device->handle);
    tp_memory_config_free(&device->memory);
    free(device->hardware_name);
    free(device->vendor);
    free(device->driver_version);
    free(device);
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
