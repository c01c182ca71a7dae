/* SPDX-License-Identifier: Apache-2.0 */
/* The application's configuration of physical devices, before its context makes the logical
 * devices: memory growth, fraction and limit, logical devices, visibility. Each call checks
 * every device it names before it changes any. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "context/context.h"
#include "device/device_name.h"
#include "device/task_identity.h"

/* Under devices_mutex. */
static tp_status_t *still_modifiable(tp_context_t *context, const char *what) {
    if (!atomic_load_explicit(&context->devices_ready, memory_order_relaxed)) return NULL;
    return tp_status_make(TP_FAILED_PRECONDITION, "%s cannot be modified after being initialized",
                          what);
}

static bool spec_matches(const tp_device_spec_t *spec, const tp_physical_device_t *device) {
    if (spec->has_type && strcasecmp(spec->type, device->def->type) != 0) return false;
    return !spec->has_id || spec->id == device->ordinal;
}

/* The physical devices `name` selects (NULL: all): at least one, or an error naming it. */
static tp_status_t *select_devices(const tp_context_t *context, const char *name,
                                   tp_device_spec_t *out_spec) {
    *out_spec = (tp_device_spec_t){0};
    if (name == NULL) return NULL;
    TP_RETURN_IF_ERROR(tp_device_spec_parse(name, out_spec));
    if (!tp_device_spec_is_local(out_spec))
        return tp_status_make(TP_NOT_FOUND, "device '%s' is not in this process (%s)", name,
                              tp_task_identity()->prefix);
    const tp_device_registry_t *registry = &context->registry;
    for (size_t i = 0; i < registry->num_physical_devices; i++)
        if (spec_matches(out_spec, registry->physical_devices[i])) return NULL;
    return tp_status_make(TP_NOT_FOUND, "no physical device matches '%s'", name);
}

typedef enum { SET_GROWTH, SET_FRACTION, SET_LIMIT } memory_option_t;

typedef struct {
    memory_option_t option;
    bool enabled;
    double fraction;
    uint64_t bytes;
} memory_request_t;

static tp_status_t *apply(tp_memory_config_t *config, const tp_physical_device_t *device,
                          const memory_request_t *request) {
    switch (request->option) {
    case SET_GROWTH:
        return tp_memory_config_set_growth(config, device->name, device->memory_bytes,
                                           request->enabled);
    case SET_FRACTION:
        return tp_memory_config_set_fraction(config, device->name, device->memory_bytes,
                                             request->fraction);
    case SET_LIMIT:
        return tp_memory_config_set_limit(config, device->name, device->memory_bytes,
                                          request->bytes);
    }
    return tp_status_make(TP_INTERNAL, "unknown memory option %d", (int)request->option);
}

static tp_status_t *configure_memory(tp_context_t *context, const char *name,
                                     const memory_request_t *request) {
    TP_REQUIRE_ARG(context);
    pthread_mutex_lock(&context->devices_mutex);
    tp_device_spec_t spec;
    tp_status_t *error = still_modifiable(context, "Physical devices");
    if (error == NULL) error = select_devices(context, name, &spec);
    tp_device_registry_t *registry = &context->registry;
    /* A trial on a copy first: these options change no heap state of the configuration. */
    for (int commit = 0; commit < 2 && error == NULL; commit++) {
        for (size_t i = 0; i < registry->num_physical_devices && error == NULL; i++) {
            tp_physical_device_t *device = registry->physical_devices[i];
            if (!spec_matches(&spec, device)) continue;
            tp_memory_config_t trial = device->memory;
            error = apply(commit ? &device->memory : &trial, device, request);
        }
    }
    pthread_mutex_unlock(&context->devices_mutex);
    return error;
}

tp_status_t *tp_context_set_memory_growth(tp_context_t *context, const char *device,
                                          bool enabled) {
    memory_request_t request = {.option = SET_GROWTH, .enabled = enabled};
    return tp_status_annotate(configure_memory(context, device, &request),
                              "tp_context_set_memory_growth");
}

tp_status_t *tp_context_set_memory_fraction(tp_context_t *context, const char *device,
                                            double fraction) {
    memory_request_t request = {.option = SET_FRACTION, .fraction = fraction};
    return tp_status_annotate(configure_memory(context, device, &request),
                              "tp_context_set_memory_fraction");
}

tp_status_t *tp_context_set_memory_limit(tp_context_t *context, const char *device,
                                         uint64_t bytes) {
    memory_request_t request = {.option = SET_LIMIT, .bytes = bytes};
    return tp_status_annotate(configure_memory(context, device, &request),
                              "tp_context_set_memory_limit");
}

tp_status_t *tp_context_set_logical_devices(tp_context_t *context, const char *device,
                                            const uint64_t *memory_limits, size_t count) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(device);
    pthread_mutex_lock(&context->devices_mutex);
    tp_device_spec_t spec;
    tp_status_t *error = still_modifiable(context, "Physical devices");
    if (error == NULL) error = select_devices(context, device, &spec);
    if (error == NULL && !(spec.has_type && spec.has_id))
        error = tp_status_make(TP_INVALID_ARGUMENT,
                               "'%s' names no single device: split one at a time, as in "
                               "'APU:0'",
                               device);
    tp_device_registry_t *registry = &context->registry;
    for (size_t i = 0; i < registry->num_physical_devices && error == NULL; i++) {
        tp_physical_device_t *physical = registry->physical_devices[i];
        if (spec_matches(&spec, physical))
            error = tp_memory_config_set_logical(&physical->memory, physical->name,
                                                 physical->memory_bytes, memory_limits, count);
    }
    pthread_mutex_unlock(&context->devices_mutex);
    return tp_status_annotate(error, "tp_context_set_logical_devices");
}

/* ---- Visible devices --------------------------------------------------------------------- */

/* Marks in `visible` the devices one list entry names. */
static tp_status_t *show_entry(const tp_device_registry_t *registry, const char *entry,
                               bool *visible) {
    tp_device_spec_t spec;
    TP_RETURN_IF_ERROR(tp_device_spec_parse(entry, &spec));
    if (!spec.has_type || !tp_device_spec_is_local(&spec))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "'%s' names no device of this host, as 'APU:1' or 'CPU' do", entry);
    size_t of_type = 0, shown = 0;
    for (size_t i = 0; i < registry->num_physical_devices; i++) {
        const tp_physical_device_t *device = registry->physical_devices[i];
        if (strcasecmp(device->def->type, spec.type) != 0) continue;
        of_type++;
        if (spec_matches(&spec, device)) {
            visible[i] = true;
            shown++;
        }
    }
    if (shown > 0) return NULL;
    if (of_type == 0)
        return tp_status_make(TP_NOT_FOUND, "no %s devices, as '%s' asks for", spec.type, entry);
    return tp_status_make(TP_NOT_FOUND, "no device '%s': there are %zu %s devices, 0 to %zu",
                          entry, of_type, spec.type, of_type - 1);
}

static tp_status_t *parse_visible(const tp_device_registry_t *registry, const char *list,
                                  bool *visible) {
    char *copy = strdup(list);
    if (copy == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_status_t *error = NULL;
    char *rest = copy;
    for (char *entry = rest; error == NULL && entry != NULL; entry = rest) {
        rest = strchr(entry, ',');
        if (rest != NULL) *rest++ = '\0';
        while (*entry == ' ') entry++;
        size_t length = strlen(entry);
        while (length > 0 && entry[length - 1] == ' ') entry[--length] = '\0';
        if (length > 0) error = show_entry(registry, entry, visible);
    }
    free(copy);
    return error;
}

tp_status_t *tp_context_set_visible_devices(tp_context_t *context, const char *devices) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(devices);
    tp_device_registry_t *registry = &context->registry;
    size_t count = registry->num_physical_devices;
    /* Only what the list names stays, so that "CPU:0" hides every plug-in's devices; CPU:0
     * always stays, since host data enters and leaves through it. */
    bool *visible = calloc(count, sizeof *visible);
    tp_status_t *error =
        visible == NULL ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory") : NULL;
    pthread_mutex_lock(&context->devices_mutex);
    if (error == NULL) error = still_modifiable(context, "Visible devices");
    if (error == NULL) error = parse_visible(registry, devices, visible);
    for (size_t i = 0; i < count && error == NULL; i++)
        registry->physical_devices[i]->visible =
            visible[i] || registry->physical_devices[i] == registry->host_physical;
    pthread_mutex_unlock(&context->devices_mutex);
    free(visible);
    return tp_status_annotate(error, "tp_context_set_visible_devices");
}
