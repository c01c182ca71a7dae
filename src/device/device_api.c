/* The public queries on a context's plug-ins and physical devices. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "context/context.h"

size_t tp_plugin_count(const tp_context_t *context) {
    return context == NULL ? 0 : context->registry.num_plugins;
}

tp_status_t *tp_plugin_get(const tp_context_t *context, size_t index,
                           tp_plugin_info_t *out_info) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_info);
    if (out_info->struct_size < offsetof(tp_plugin_info_t, path) + sizeof(const char *))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_plugin_get: set out_info->struct_size to "
                              "sizeof(tp_plugin_info_t) first (it is %zu)",
                              out_info->struct_size);
    if (index >= context->registry.num_plugins)
        return tp_status_make(TP_OUT_OF_RANGE, "tp_plugin_get: index %zu, but %zu plug-ins",
                              index, context->registry.num_plugins);
    const tp_plugin_entry_t *entry = &context->registry.plugins[index];
    const tp_plugin_record_t *record = entry->record;
    bool loaded = entry->refusal == NULL;
    tp_plugin_info_t info = {
        .struct_size = out_info->struct_size,
        .path = record->path,
        .loaded = loaded,
        .reason = loaded ? "" : entry->refusal,
        .name = record->name,
        .version = record->version,
        .abi_major = record->abi_major,
        .abi_minor = record->abi_minor,
        .device_types = entry->device_types,
        .num_ops = record->num_ops,
        .num_kernels = record->num_kernels,
        .has_graph_pass = record->has_graph_pass,
    };
    size_t size = info.struct_size < sizeof info ? info.struct_size : sizeof info;
    memcpy(out_info, &info, size);
    return NULL;
}

static bool type_matches(const tp_physical_device_t *device, const char *type) {
    return type == NULL || strcasecmp(device->def->type, type) == 0;
}

size_t tp_physical_device_count(const tp_context_t *context, const char *type) {
    if (context == NULL) return 0;
    size_t count = 0;
    for (size_t i = 0; i < context->registry.num_devices; i++)
        count += type_matches(context->registry.devices[i], type);
    return count;
}

tp_status_t *tp_physical_device_get(const tp_context_t *context, const char *type, size_t index,
                                    const tp_physical_device_t **out_device) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_device);
    size_t seen = 0;
    for (size_t i = 0; i < context->registry.num_devices; i++) {
        const tp_physical_device_t *device = context->registry.devices[i];
        if (!type_matches(device, type)) continue;
        if (seen++ == index) {
            *out_device = device;
            return NULL;
        }
    }
    return tp_status_make(TP_OUT_OF_RANGE,
                          "tp_physical_device_get: index %zu, but there are %zu %s%sdevices",
                          index, seen, type != NULL ? type : "", type != NULL ? " " : "");
}

tp_status_t *tp_physical_device_find(const tp_context_t *context, const char *name,
                                     const tp_physical_device_t **out_device) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(name);
    TP_REQUIRE_ARG(out_device);
    tp_device_spec_t spec;
    TP_RETURN_IF_ERROR(tp_device_spec_parse(name, &spec));
    if (!spec.has_type || !spec.has_id)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "device name '%s' names no single device: it needs a type and an "
                              "index, as in '/physical_device:CPU:0'",
                              name);
    if ((spec.has_job && strcmp(spec.job, "localhost") != 0) ||
        (spec.has_replica && spec.replica != 0) || (spec.has_task && spec.task != 0))
        return tp_status_make(TP_NOT_FOUND, "device '%s' is not on this host "
                                            "(/job:localhost/replica:0/task:0)", name);
    for (size_t i = 0; i < context->registry.num_devices; i++) {
        const tp_physical_device_t *device = context->registry.devices[i];
        if (type_matches(device, spec.type) && device->ordinal == spec.id) {
            *out_device = device;
            return NULL;
        }
    }
    char canonical[128];
    tp_status_free(tp_device_spec_canonical(&spec, canonical, sizeof canonical));
    return tp_status_make(TP_NOT_FOUND, "%s unknown device.", canonical);
}

const char *tp_physical_device_name(const tp_physical_device_t *device) {
    return device == NULL ? "" : device->name;
}

const char *tp_physical_device_full_name(const tp_physical_device_t *device) {
    return device == NULL ? "" : device->full_name;
}

const char *tp_physical_device_type(const tp_physical_device_t *device) {
    return device == NULL ? "" : device->def->type;
}

int32_t tp_physical_device_ordinal(const tp_physical_device_t *device) {
    return device == NULL ? -1 : device->ordinal;
}

const char *tp_physical_device_hardware_name(const tp_physical_device_t *device) {
    return device == NULL ? "" : device->hardware_name;
}

const char *tp_physical_device_vendor(const tp_physical_device_t *device) {
    return device == NULL ? "" : device->vendor;
}

uint64_t tp_physical_device_memory_bytes(const tp_physical_device_t *device) {
    return device == NULL ? 0 : device->memory_bytes;
}

tp_status_t *tp_list_physical_devices(const tp_context_t *context, const char *type, FILE *out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out);
    for (size_t i = 0; i < context->registry.num_devices; i++) {
        const tp_physical_device_t *device = context->registry.devices[i];
        if (!type_matches(device, type)) continue;
        if (fprintf(out, "PhysicalDevice(name='%s', device_type='%s')\n", device->name,
                    device->def->type) < 0)
            return tp_status_make(TP_UNAVAILABLE, "tp_list_physical_devices: writing failed");
    }
    return NULL;
}
