/* SPDX-License-Identifier: Apache-2.0 */
/* The public queries on a context's plug-ins, physical devices and logical devices. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "context/context.h"
#include "device/device_name.h"
#include "device/task_identity.h"

size_t tp_plugin_count(const tp_context_t *context) {
    return context == NULL ? 0 : context->registry.num_plugins;
}

/* An out struct may come from an older header: its struct_size must cover at least the first
 * field after struct_size (`minimum` bytes), and it gets as much of the answer as it holds. */
static tp_status_t *check_struct_size(const char *function, const char *argument,
                                      const char *type, size_t given, size_t minimum) {
    if (given >= minimum) return NULL;
    return tp_status_make(TP_INVALID_ARGUMENT,
                          "%s: set %s->struct_size to sizeof(%s) first (it is %zu)", function,
                          argument, type, given);
}

static void copy_answer(void *out, const void *answer, size_t given, size_t full) {
    memcpy(out, answer, given < full ? given : full);
}

tp_status_t *tp_plugin_get(const tp_context_t *context, size_t index,
                           tp_plugin_info_t *out_info) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_info);
    TP_RETURN_IF_ERROR(check_struct_size("tp_plugin_get", "out_info", "tp_plugin_info_t",
                                         out_info->struct_size,
                                         offsetof(tp_plugin_info_t, path) + sizeof(char *)));
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
    copy_answer(out_info, &info, info.struct_size, sizeof info);
    return NULL;
}

static bool type_matches(const tp_physical_device_t *device, const char *type) {
    return type == NULL || strcasecmp(device->def->type, type) == 0;
}

size_t tp_physical_device_count(const tp_context_t *context, const char *type) {
    if (context == NULL) return 0;
    size_t count = 0;
    for (size_t i = 0; i < context->registry.num_physical_devices; i++)
        count += type_matches(context->registry.physical_devices[i], type);
    return count;
}

tp_status_t *tp_physical_device_get(const tp_context_t *context, const char *type, size_t index,
                                    const tp_physical_device_t **out_device) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_device);
    size_t seen = 0;
    for (size_t i = 0; i < context->registry.num_physical_devices; i++) {
        const tp_physical_device_t *device = context->registry.physical_devices[i];
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

/* Parses a name that must give a type and an index; `example` shows such a name. */
static tp_status_t *parse_one_device(const char *name, const char *example,
                                     tp_device_spec_t *out_spec) {
    TP_REQUIRE_ARG(name);
    TP_RETURN_IF_ERROR(tp_device_spec_parse(name, out_spec));
    if (!out_spec->has_type || !out_spec->has_id)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "device name '%s' names no single device: it needs a type and an "
                              "index, as in '%s'",
                              name, example);
    return NULL;
}

tp_status_t *tp_physical_device_find(const tp_context_t *context, const char *name,
                                     const tp_physical_device_t **out_device) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(name);
    TP_REQUIRE_ARG(out_device);
    tp_device_spec_t spec;
    TP_RETURN_IF_ERROR(parse_one_device(name, "/physical_device:CPU:0", &spec));
    if (!tp_device_spec_is_local(&spec))
        return tp_status_make(TP_NOT_FOUND, "device '%s' is not in this process (%s)", name,
                              tp_task_identity()->prefix);
    for (size_t i = 0; i < context->registry.num_physical_devices; i++) {
        const tp_physical_device_t *device = context->registry.physical_devices[i];
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

const char *tp_physical_device_driver_version(const tp_physical_device_t *device) {
    return device == NULL ? "" : device->driver_version;
}

int32_t tp_physical_device_compute_units(const tp_physical_device_t *device) {
    return device == NULL ? 0 : device->compute_units;
}

uint64_t tp_physical_device_memory_bytes(const tp_physical_device_t *device) {
    return device == NULL ? 0 : device->memory_bytes;
}

tp_status_t *tp_list_physical_devices(const tp_context_t *context, const char *type, FILE *out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out);
    for (size_t i = 0; i < context->registry.num_physical_devices; i++) {
        const tp_physical_device_t *device = context->registry.physical_devices[i];
        if (!type_matches(device, type)) continue;
        if (fprintf(out, "PhysicalDevice(name='%s', device_type='%s')\n", device->name,
                    device->def->type) < 0)
            return tp_status_make(TP_UNAVAILABLE, "tp_list_physical_devices: writing failed");
    }
    return NULL;
}

/* ---- Logical devices -------------------------------------------------------------------- */

static bool logical_type_matches(const tp_device_t *device, const char *type) {
    return type == NULL || strcasecmp(device->def->type, type) == 0;
}

tp_status_t *tp_logical_device_count(tp_context_t *context, const char *type,
                                     size_t *out_count) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_count);
    TP_RETURN_IF_ERROR(tp_context_devices_ready(context));
    size_t count = 0;
    for (size_t i = 0; i < context->registry.num_devices; i++)
        count += logical_type_matches(context->registry.devices[i], type);
    *out_count = count;
    return NULL;
}

tp_status_t *tp_logical_device_get(tp_context_t *context, const char *type, size_t index,
                                   tp_logical_device_info_t *out_info) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_info);
    TP_RETURN_IF_ERROR(check_struct_size(
        "tp_logical_device_get", "out_info", "tp_logical_device_info_t", out_info->struct_size,
        offsetof(tp_logical_device_info_t, name) + sizeof(char *)));
    TP_RETURN_IF_ERROR(tp_context_devices_ready(context));
    size_t seen = 0;
    for (size_t i = 0; i < context->registry.num_devices; i++) {
        const tp_device_t *device = context->registry.devices[i];
        if (!logical_type_matches(device, type) || seen++ != index) continue;
        tp_logical_device_info_t info = {
            .struct_size = out_info->struct_size,
            .name = device->full_name,
            .device_type = device->def->type,
            .ordinal = device->ordinal,
            .physical_device = device->physical->name,
        };
        copy_answer(out_info, &info, info.struct_size, sizeof info);
        return NULL;
    }
    return tp_status_make(TP_OUT_OF_RANGE,
                          "tp_logical_device_get: index %zu, but there are %zu %s%sdevices",
                          index, seen, type != NULL ? type : "", type != NULL ? " " : "");
}

tp_status_t *tp_list_logical_devices(tp_context_t *context, const char *type, FILE *out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out);
    TP_RETURN_IF_ERROR(tp_context_devices_ready(context));
    for (size_t i = 0; i < context->registry.num_devices; i++) {
        const tp_device_t *device = context->registry.devices[i];
        if (!logical_type_matches(device, type)) continue;
        if (fprintf(out, "LogicalDevice(name='%s', device_type='%s')\n", device->full_name,
                    device->def->type) < 0)
            return tp_status_make(TP_UNAVAILABLE, "tp_list_logical_devices: writing failed");
    }
    return NULL;
}

/* The one logical device `name` names ("APU:1", "/device:CPU:0"). */
tp_status_t *tp_context_find_device(tp_context_t *context, const char *name, tp_device_t **out) {
    TP_REQUIRE_ARG(context);
    tp_device_spec_t spec;
    TP_RETURN_IF_ERROR(parse_one_device(name, "/device:APU:0", &spec));
    TP_RETURN_IF_ERROR(tp_context_devices_ready(context));
    tp_device_t *device = tp_device_registry_find(&context->registry, spec.type,
                                                  (int32_t)spec.id);
    if (device == NULL || spec.id > INT32_MAX || !tp_device_spec_is_local(&spec)) {
        char canonical[128];
        tp_status_free(tp_device_spec_canonical(&spec, canonical, sizeof canonical));
        return tp_status_make(TP_NOT_FOUND, "%s unknown device.", canonical);
    }
    *out = device;
    return NULL;
}

tp_status_t *tp_context_memory_stats(tp_context_t *context, const char *device_name,
                                     tp_memory_stats_t *out_stats) {
    TP_REQUIRE_ARG(out_stats);
    TP_RETURN_IF_ERROR(check_struct_size(
        "tp_context_memory_stats", "out_stats", "tp_memory_stats_t", out_stats->struct_size,
        offsetof(tp_memory_stats_t, bytes_in_use) + sizeof(uint64_t)));
    tp_device_t *device;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_context_find_device(context, device_name, &device),
                                          "tp_context_memory_stats"));
    tp_bfc_stats_t stats;
    tp_device_memory_stats(device, &stats);
    tp_memory_stats_t result = {
        .struct_size = out_stats->struct_size,
        .bytes_in_use = stats.bytes_in_use,
        .peak_bytes_in_use = stats.peak_bytes_in_use,
        .bytes_reserved = stats.bytes_reserved,
        .bytes_limit = stats.bytes_limit,
        .largest_free_block = stats.largest_free_block,
        .num_allocations = stats.live_allocations,
        .total_allocations = stats.total_allocations,
    };
    copy_answer(out_stats, &result, result.struct_size, sizeof result);
    return NULL;
}

tp_status_t *tp_context_reset_peak_memory(tp_context_t *context, const char *device_name) {
    tp_device_t *device;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_context_find_device(context, device_name, &device),
                                          "tp_context_reset_peak_memory"));
    tp_bfc_t *allocator;
    TP_RETURN_IF_ERROR(tp_device_allocator(device, &allocator));
    tp_bfc_reset_peak(allocator);
    return NULL;
}
