/* SPDX-License-Identifier: Apache-2.0 */
#include "device/device_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/dtype.h"
#include "base/env.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "op/op.h"
#include "plugin/discovery.h"
#include "plugin/op_names.h"
#include "plugin/plugin_library.h"
#include "plugin/plugin_selection.h"
#include "plugin/plugin_status.h"

typedef struct {
    tp_device_registry_t *registry;
    size_t plugins_capacity;
    size_t devices_capacity;
} builder_t;

static bool add_device(builder_t *builder, tp_physical_device_t *device) {
    tp_device_registry_t *registry = builder->registry;
    if (registry->num_physical_devices == builder->devices_capacity) {
        size_t capacity = builder->devices_capacity == 0 ? 8 : builder->devices_capacity * 2;
        tp_physical_device_t **grown =
            realloc(registry->physical_devices, capacity * sizeof *grown);
        if (grown == NULL) return false;
        registry->physical_devices = grown;
        builder->devices_capacity = capacity;
    }
    registry->physical_devices[registry->num_physical_devices++] = device;
    return true;
}

/* The plug-in already in the registry that registered `type`, or NULL. */
static const tp_plugin_entry_t *owner_of_type(const tp_device_registry_t *registry,
                                              const char *type) {
    for (size_t i = 0; i < registry->num_plugins; i++) {
        const tp_plugin_entry_t *entry = &registry->plugins[i];
        if (entry->refusal != NULL) continue;
        for (size_t t = 0; t < entry->record->num_device_types; t++)
            if (strcasecmp(entry->record->device_types[t].type, type) == 0) return entry;
    }
    return NULL;
}

/* The used plug-in already in the registry named `name`, or NULL. */
static const tp_plugin_entry_t *used_plugin_named(const tp_device_registry_t *registry,
                                                  const char *name) {
    for (size_t i = 0; i < registry->num_plugins; i++)
        if (registry->plugins[i].refusal == NULL &&
            strcmp(registry->plugins[i].record->name, name) == 0)
            return &registry->plugins[i];
    return NULL;
}

/* Whether this context uses a plug-in it found, apart from any fault of the plug-in's: not a
 * copy of one found earlier on the path (the first found is used, as for programs on PATH),
 * and not switched off by TP_PLUGINS. */
static bool chosen(const tp_device_registry_t *registry, const tp_plugin_record_t *record) {
    return record->builtin || (used_plugin_named(registry, record->name) == NULL &&
                               tp_plugin_selection_allows(record->name));
}

/* Why chosen() said no, for `tensorplug plugins`. Not logged: both reasons are the user's
 * doing. NULL only when out of host memory. */
static char *why_not_chosen(const tp_device_registry_t *registry,
                            const tp_plugin_record_t *record) {
    tp_strbuf_t reason = TP_STRBUF_INIT;
    const tp_plugin_entry_t *earlier = used_plugin_named(registry, record->name);
    if (earlier != NULL)
        tp_strbuf_printf(&reason, "not used: plug-in '%s' was found first at %s", record->name,
                         earlier->record->path);
    else
        tp_strbuf_printf(&reason, "switched off: TP_PLUGINS does not name '%s'", record->name);
    return tp_strbuf_take(&reason);
}

/* An op `name` that the built-in ops, `own` or a plug-in already used defines. */
static const tp_op_def_t *find_known_op(const tp_device_registry_t *registry,
                                        const tp_plugin_record_t *own, const char *name,
                                        const tp_plugin_record_t **out_owner) {
    const tp_op_t *builtin = tp_builtin_op_find(name);
    *out_owner = NULL;
    if (builtin != NULL) return builtin->def;
    for (size_t i = 0; i <= registry->num_plugins; i++) {
        const tp_plugin_record_t *record = i < registry->num_plugins ? registry->plugins[i].record
                                                                     : own;
        if (i < registry->num_plugins && registry->plugins[i].refusal != NULL) continue;
        const tp_op_def_t *op = tp_plugin_record_find_op(record, name);
        if (op != NULL) {
            *out_owner = record;
            return op;
        }
    }
    return NULL;
}

static bool is_known_type(const tp_device_registry_t *registry, const tp_plugin_record_t *own,
                          const char *type) {
    for (size_t t = 0; t < own->num_device_types; t++)
        if (strcasecmp(own->device_types[t].type, type) == 0) return true;
    return owner_of_type(registry, type) != NULL;
}

/* A plug-in's ops must be new, and its kernels must implement known ops on known device
 * types with constraints on the op's dtype attributes. */
static void check_ops_and_kernels(const tp_device_registry_t *registry,
                                  const tp_plugin_record_t *record, tp_strbuf_t *refusal) {
    const tp_plugin_record_t *owner;
    for (size_t o = 0; o < record->num_ops && refusal->length == 0; o++) {
        const char *name = record->ops[o].name;
        if (tp_builtin_op_find(name) != NULL) {
            tp_strbuf_printf(refusal, "op %s is a built-in op", name);
        } else {
            for (size_t i = 0; i < registry->num_plugins; i++) {
                const tp_plugin_entry_t *entry = &registry->plugins[i];
                if (entry->refusal == NULL && refusal->length == 0 &&
                    tp_plugin_record_find_op(entry->record, name) != NULL)
                    tp_strbuf_printf(refusal, "op %s is already registered by %s", name,
                                     entry->record->path);
            }
        }
    }
    for (size_t k = 0; k < record->num_kernels && refusal->length == 0; k++) {
        const tp_kernel_def_t *kernel = &record->kernels[k];
        const tp_op_def_t *op = find_known_op(registry, record, kernel->op, &owner);
        if (op == NULL) {
            tp_strbuf_printf(refusal, "kernel for unknown op %s", kernel->op);
        } else if (!is_known_type(registry, record, kernel->device_type)) {
            tp_strbuf_printf(refusal, "kernel for op %s on unknown device type '%s'", kernel->op,
                             kernel->device_type);
        } else {
            for (size_t c = 0; c < kernel->num_constraints && refusal->length == 0; c++) {
                const char *attr = kernel->constraints[c].attr;
                int index = tp_op_attr_index(op, attr);
                if (index < 0 || op->attrs[index].type != TP_ATTR_DTYPE)
                    tp_strbuf_printf(refusal, "kernel for op %s on %s constrains '%s', which is "
                                     "not a dtype attribute of %s", kernel->op,
                                     kernel->device_type, attr, kernel->op);
            }
        }
    }
}

/* Opens every device of one plug-in, or none: on failure the devices opened so far are closed
 * and the reason is returned. */
static tp_status_t *open_plugin_devices(builder_t *builder, const tp_plugin_record_t *record) {
    tp_device_registry_t *registry = builder->registry;
    size_t first_device = registry->num_physical_devices;
    tp_status_t *error = NULL;
    for (size_t t = 0; t < record->num_device_types && error == NULL; t++) {
        const tp_device_type_def_t *def = &record->device_types[t];
        tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
        int32_t count = def->device_count(def->type_state, &status);
        error = tp_plugin_status_check(&status, "device_count of %s", def->type);
        if (error == NULL && count < 0)
            error = tp_status_make(TP_INVALID_ARGUMENT, "device_count of %s returned %d",
                                   def->type, (int)count);
        for (int32_t ordinal = 0; error == NULL && ordinal < count; ordinal++) {
            tp_physical_device_t *device;
            error = tp_physical_device_open(record, def, ordinal, &device);
            if (error == NULL && !add_device(builder, device)) {
                tp_physical_device_close(device);
                error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
            }
        }
    }
    if (error != NULL) {
        while (registry->num_physical_devices > first_device)
            tp_physical_device_close(registry->physical_devices[--registry->num_physical_devices]);
    }
    return error;
}

static char *join_device_types(const tp_plugin_record_t *record) {
    tp_strbuf_t types = TP_STRBUF_INIT;
    for (size_t t = 0; t < record->num_device_types; t++) {
        if (t > 0) tp_strbuf_puts(&types, ",");
        tp_strbuf_puts(&types, record->device_types[t].type);
    }
    return tp_strbuf_take(&types);
}

/* Adds one plug-in to the registry: used, or refused with its reason. Fails only when out of
 * host memory. */
static tp_status_t *add_plugin(builder_t *builder, const tp_plugin_record_t *record) {
    tp_device_registry_t *registry = builder->registry;
    for (size_t i = 0; i < registry->num_plugins; i++)
        if (registry->plugins[i].record == record) return NULL; /* found twice on the path */
    if (registry->num_plugins == builder->plugins_capacity) {
        size_t capacity = builder->plugins_capacity == 0 ? 8 : builder->plugins_capacity * 2;
        tp_plugin_entry_t *grown = realloc(registry->plugins, capacity * sizeof *grown);
        if (grown == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
        registry->plugins = grown;
        builder->plugins_capacity = capacity;
    }
    tp_plugin_entry_t entry = {record, NULL, join_device_types(record)};
    if (entry.device_types == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");

    if (record->refusal == NULL && !chosen(registry, record)) {
        entry.refusal = why_not_chosen(registry, record);
        if (entry.refusal == NULL) {
            free(entry.device_types);
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
        }
        registry->plugins[registry->num_plugins++] = entry;
        return NULL;
    }
    tp_strbuf_t refusal = TP_STRBUF_INIT;
    if (record->refusal != NULL) {
        tp_strbuf_puts(&refusal, record->refusal);
    } else {
        for (size_t t = 0; t < record->num_device_types && refusal.length == 0; t++) {
            const char *type = record->device_types[t].type;
            const tp_plugin_entry_t *owner = owner_of_type(registry, type);
            if (owner != NULL)
                tp_strbuf_printf(&refusal, "device type '%s' is already registered by %s%s",
                                 type, owner->record->builtin ? "the built-in plug-in " : "",
                                 owner->record->builtin ? owner->record->name
                                                        : owner->record->path);
        }
        if (refusal.length == 0) check_ops_and_kernels(registry, record, &refusal);
        if (refusal.length == 0) {
            tp_status_t *error = open_plugin_devices(builder, record);
            if (error != NULL) tp_strbuf_puts(&refusal, tp_status_message(error));
            tp_status_free(error);
        }
    }
    if (tp_strbuf_failed(&refusal)) {
        free(entry.device_types);
        tp_strbuf_free(&refusal);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    }
    if (refusal.length > 0) {
        entry.refusal = tp_strbuf_take(&refusal);
        tp_plugin_library_log_refusal(record, entry.refusal);
    }
    tp_strbuf_free(&refusal);
    registry->plugins[registry->num_plugins++] = entry;
    return NULL;
}

/* Whether the registry being built will use `record`, asked before the plug-in's init runs. */
static bool plugin_wanted(const tp_plugin_record_t *record, void *arg) {
    const builder_t *builder = arg;
    return chosen(builder->registry, record);
}

/* A name in TP_PLUGINS that no plug-in found has is most likely mistyped. */
static void warn_about_missing_selection(const tp_device_registry_t *registry) {
    const char **names = malloc((registry->num_plugins + 1) * sizeof *names);
    if (names == NULL) return; /* a warning's worth of memory is not worth failing over */
    for (size_t i = 0; i < registry->num_plugins; i++) names[i] = registry->plugins[i].record->name;
    char missing[512], problem[600];
    size_t num_missing =
        tp_plugin_selection_missing(names, registry->num_plugins, missing, sizeof missing);
    free(names);
    if (num_missing == 0) return;
    snprintf(problem, sizeof problem, "names %s, which no plug-in found has", missing);
    tp_env_warn("TP_PLUGINS", tp_env_get("TP_PLUGINS"), problem,
                "the plug-ins it names that were found are used");
}

static tp_status_t *add_plugin_files(builder_t *builder, const tp_context_options_t *options) {
    bool from_environment = options->plugin_path == NULL;
    const char *search_path =
        from_environment ? tp_env_get("TP_PLUGIN_PATH") : options->plugin_path;
    tp_path_list_t files;
    TP_RETURN_IF_ERROR(tp_plugin_discover(search_path, from_environment,
                                          !options->skip_installed_plugins, &files));
    tp_status_t *error = NULL;
    for (size_t i = 0; i < files.count && error == NULL; i++) {
        const tp_plugin_record_t *record;
        error = tp_plugin_library_load(files.paths[i], plugin_wanted, builder, &record);
        if (error == NULL) error = add_plugin(builder, record);
    }
    tp_path_list_free(&files);
    if (error == NULL) warn_about_missing_selection(builder->registry);
    return error;
}

/* The device type `name` of the used plug-ins. */
static const tp_device_type_def_t *find_type(const tp_device_registry_t *registry,
                                             const char *name) {
    const tp_plugin_entry_t *owner = owner_of_type(registry, name);
    if (owner == NULL) return NULL;
    for (size_t t = 0; t < owner->record->num_device_types; t++)
        if (strcasecmp(owner->record->device_types[t].type, name) == 0)
            return &owner->record->device_types[t];
    return NULL;
}

/* By op, then in registration order: qsort is not stable, and of two kernels of equal
 * priority the one registered first must win whatever order qsort leaves them in. */
static int compare_kernel_entries(const void *a, const void *b) {
    const tp_kernel_entry_t *x = a, *y = b;
    uintptr_t x_op = (uintptr_t)x->op, y_op = (uintptr_t)y->op;
    if (x_op != y_op) return (x_op > y_op) - (x_op < y_op);
    return (x->sequence > y->sequence) - (x->sequence < y->sequence);
}

/* Indexes the kernels of the used plug-ins, sorted by op so that a lookup is a binary search;
 * their ops and types were checked when each plug-in was added. */
static tp_status_t *index_kernels(tp_device_registry_t *registry) {
    size_t total = 0;
    for (size_t i = 0; i < registry->num_plugins; i++)
        if (registry->plugins[i].refusal == NULL) total += registry->plugins[i].record->num_kernels;
    registry->kernels = calloc(total + 1, sizeof *registry->kernels);
    if (registry->kernels == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory indexing kernels");
    for (size_t i = 0; i < registry->num_plugins; i++) {
        const tp_plugin_entry_t *entry = &registry->plugins[i];
        if (entry->refusal != NULL) continue;
        for (size_t k = 0; k < entry->record->num_kernels; k++) {
            const tp_kernel_def_t *kernel = &entry->record->kernels[k];
            const tp_plugin_record_t *owner;
            tp_kernel_entry_t indexed = {find_known_op(registry, entry->record, kernel->op, &owner),
                                         find_type(registry, kernel->device_type), kernel,
                                         registry->num_kernels,
                                         tp_dtype_newest_of_abi(entry->record->abi_minor)};
            if (indexed.op != NULL && indexed.device_type != NULL)
                registry->kernels[registry->num_kernels++] = indexed;
        }
    }
    qsort(registry->kernels, registry->num_kernels, sizeof *registry->kernels,
          compare_kernel_entries);
    return NULL;
}

tp_status_t *tp_device_registry_build(const tp_context_options_t *options,
                                      tp_device_registry_t *out_registry) {
    tp_device_registry_t registry = {0};
    builder_t builder = {&registry, 0, 0};
    const tp_plugin_record_t *const *builtins = NULL;
    size_t num_builtins = 0;
    tp_status_t *error = tp_plugin_library_builtins(&builtins, &num_builtins);
    for (size_t i = 0; i < num_builtins && error == NULL; i++)
        error = add_plugin(&builder, builtins[i]);
    if (error == NULL && !options->no_plugins) error = add_plugin_files(&builder, options);
    for (size_t i = 0; i < registry.num_physical_devices && error == NULL; i++) {
        tp_physical_device_t *device = registry.physical_devices[i];
        if (device->plugin->builtin && strcmp(device->def->type, "CPU") == 0 &&
            device->ordinal == 0)
            registry.host_physical = device;
    }
    /* The host's memory is shared with everything else on the machine: it grows on demand
     * instead of being reserved up front. The built-in CPU's handles are host addresses. */
    if (registry.host_physical != NULL) {
        registry.host_physical->grows_by_default = true;
        registry.host_physical->host_addressed = true;
    }
    if (error == NULL && registry.host_physical == NULL)
        error = tp_status_make(TP_INTERNAL, "the built-in CPU device is missing");
    if (error == NULL) error = index_kernels(&registry);
    if (error != NULL) {
        tp_device_registry_free(&registry);
        return error;
    }
    *out_registry = registry;
    return NULL;
}

static void destroy_logical_devices(tp_device_registry_t *registry) {
    /* A device's deferred frees may wait for another device's work (a copy from the host's
     * memory): all are carried out while every device is still open. */
    for (size_t i = 0; i < registry->num_devices; i++)
        tp_device_finish_deferred(registry->devices[i]);
    for (size_t i = registry->num_devices; i > 0; i--) tp_device_destroy(registry->devices[i - 1]);
    free(registry->devices);
    registry->devices = NULL;
    registry->num_devices = 0;
    registry->host_device = NULL;
}

/* Logical devices of `type` made so far, so the next one gets the next ordinal. */
static int32_t count_of_type(const tp_device_registry_t *registry, const char *type) {
    int32_t count = 0;
    for (size_t i = 0; i < registry->num_devices; i++)
        count += strcmp(registry->devices[i]->def->type, type) == 0;
    return count;
}

tp_status_t *tp_device_registry_initialize(tp_device_registry_t *registry, tp_growth_t forced) {
    size_t total = 0;
    for (size_t i = 0; i < registry->num_physical_devices; i++)
        if (registry->physical_devices[i]->visible)
            total += tp_memory_config_num_devices(&registry->physical_devices[i]->memory);
    registry->devices = calloc(total + 1, sizeof *registry->devices);
    if (registry->devices == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory making devices");
    tp_status_t *error = NULL;
    for (size_t i = 0; i < registry->num_physical_devices && error == NULL; i++) {
        tp_physical_device_t *physical = registry->physical_devices[i];
        if (!physical->visible) continue;
        size_t count = tp_memory_config_num_devices(&physical->memory);
        for (size_t d = 0; d < count && error == NULL; d++) {
            tp_bfc_options_t options =
                tp_memory_config_allocator(&physical->memory, d, physical->memory_bytes,
                                           physical->grows_by_default, forced);
            options.max_region = physical->max_allocation;
            tp_device_t *device;
            error = tp_device_create(physical, count_of_type(registry, physical->def->type),
                                     &options, &device);
            if (error == NULL) registry->devices[registry->num_devices++] = device;
        }
    }
    if (error == NULL) registry->host_device = tp_device_registry_find(registry, "CPU", 0);
    if (error == NULL && (registry->host_device == NULL ||
                          registry->host_device->physical != registry->host_physical))
        error = tp_status_make(TP_INTERNAL, "logical CPU:0 is not on the host's CPU");
    if (error != NULL) destroy_logical_devices(registry);
    return error;
}

tp_device_t *tp_device_registry_find(const tp_device_registry_t *registry, const char *type,
                                     int32_t ordinal) {
    for (size_t i = 0; i < registry->num_devices; i++) {
        tp_device_t *device = registry->devices[i];
        if (device->ordinal == ordinal && strcasecmp(device->def->type, type) == 0) return device;
    }
    return NULL;
}

void tp_device_registry_free(tp_device_registry_t *registry) {
    destroy_logical_devices(registry);
    /* Close in reverse, so plug-ins see their devices released in the order opposite to
     * opening. */
    for (size_t i = registry->num_physical_devices; i > 0; i--)
        tp_physical_device_close(registry->physical_devices[i - 1]);
    for (size_t i = 0; i < registry->num_plugins; i++) {
        free(registry->plugins[i].refusal);
        free(registry->plugins[i].device_types);
    }
    free(registry->physical_devices);
    free(registry->plugins);
    free(registry->kernels);
    *registry = (tp_device_registry_t){0};
}
