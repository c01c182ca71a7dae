/* SPDX-License-Identifier: Apache-2.0 */
#include "context/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/status.h"
#include "profiler/profiler.h"

const char *tp_version(void) { return TP_VERSION_STRING; }

void tp_abi_version(uint32_t *out_major, uint32_t *out_minor) {
    if (out_major != NULL) *out_major = TP_ABI_MAJOR;
    if (out_minor != NULL) *out_minor = TP_ABI_MINOR;
}

/* Reads the caller's options, which may come from an older header with fewer fields. */
static tp_status_t *read_options(const tp_context_options_t *given,
                                 tp_context_options_t *options) {
    *options = (tp_context_options_t)TP_CONTEXT_OPTIONS_INIT;
    if (given == NULL) return NULL;
    if (given->struct_size < offsetof(tp_context_options_t, plugin_path) + sizeof(const char *))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_context_create: options->struct_size is %zu; start from "
                              "TP_CONTEXT_OPTIONS_INIT",
                              given->struct_size);
    size_t size = given->struct_size < sizeof *options ? given->struct_size : sizeof *options;
    memcpy(options, given, size);
    options->struct_size = sizeof *options;
    return NULL;
}

/* A list that does not read as one (a malformed name, CPU:0 hidden) is warned about and every
 * device stays visible, as for any malformed variable; a well-formed list naming a device this
 * host lacks fails the context, since running on other devices than asked would be worse. */
static tp_status_t *apply_visible_devices_from_environment(tp_context_t *context) {
    const char *visible = tp_env_get("TP_VISIBLE_DEVICES");
    if (visible == NULL) return NULL;
    tp_status_t *error = tp_context_set_visible_devices(context, visible);
    if (tp_status_code(error) != TP_INVALID_ARGUMENT) return error;
    char problem[512];
    snprintf(problem, sizeof problem, "is refused (%s)", tp_status_message(error));
    tp_status_free(error);
    tp_env_warn("TP_VISIBLE_DEVICES", visible, problem, "every device stays visible");
    return NULL;
}

tp_status_t *tp_context_create(const tp_context_options_t *options, tp_context_t **out_context) {
    TP_REQUIRE_ARG(out_context);
    tp_context_options_t effective;
    TP_RETURN_IF_ERROR(read_options(options, &effective));
    tp_context_t *context = calloc(1, sizeof *context);
    if (context == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory creating a context");
    tp_status_t *error = tp_device_registry_build(&effective, &context->registry);
    if (error != NULL) {
        free(context);
        return tp_status_annotate(error, "tp_context_create");
    }
    pthread_mutex_init(&context->devices_mutex, NULL);
    atomic_init(&context->devices_ready, false);
    error = apply_visible_devices_from_environment(context);
    if (error != NULL) {
        tp_device_registry_free(&context->registry);
        pthread_mutex_destroy(&context->devices_mutex);
        free(context);
        return tp_status_annotate(error, "tp_context_create: TP_VISIBLE_DEVICES");
    }
    atomic_init(&context->references, 1);
    bool log_from_env = tp_env_flag("TP_LOG_DEVICE_PLACEMENT", false);
    atomic_init(&context->log_device_placement, effective.log_device_placement || log_from_env);
    atomic_init(&context->soft_device_placement, effective.soft_device_placement);
    atomic_init(&context->graph_passes, TP_PASS_ALL);
    context->strict_placement = effective.strict_placement;
    context->placement_log = effective.placement_log;
    pthread_mutex_init(&context->fallback_mutex, NULL);
    atomic_init(&context->placement_cache, NULL);
    tp_profiler_context_created();
    *out_context = context;
    return NULL;
}

tp_status_t *tp_context_initialize_devices(tp_context_t *context) {
    pthread_mutex_lock(&context->devices_mutex);
    tp_status_t *error = NULL;
    if (!atomic_load_explicit(&context->devices_ready, memory_order_relaxed)) {
        error = tp_device_registry_initialize(&context->registry,
                                              tp_memory_config_forced_growth());
        if (error == NULL) atomic_store_explicit(&context->devices_ready, true,
                                                 memory_order_release);
    }
    pthread_mutex_unlock(&context->devices_mutex);
    return error;
}

void tp_context_retain(tp_context_t *context) {
    atomic_fetch_add_explicit(&context->references, 1, memory_order_relaxed);
}

void tp_context_release(tp_context_t *context) {
    if (atomic_fetch_sub_explicit(&context->references, 1, memory_order_acq_rel) != 1) return;
    tp_device_registry_free(&context->registry);
    pthread_mutex_destroy(&context->devices_mutex);
    pthread_mutex_destroy(&context->fallback_mutex);
    for (size_t i = 0; i < context->num_fallbacks; i++) free(context->fallbacks[i]);
    free(context->fallbacks);
    free(atomic_load(&context->placement_cache));
    free(context);
    tp_profiler_context_released();
}

void tp_context_set_log_device_placement(tp_context_t *context, bool enabled) {
    if (context != NULL) atomic_store(&context->log_device_placement, enabled);
}

void tp_context_set_soft_device_placement(tp_context_t *context, bool enabled) {
    if (context != NULL) atomic_store(&context->soft_device_placement, enabled);
}

tp_status_t *tp_context_synchronize(tp_context_t *context) {
    TP_REQUIRE_ARG(context);
    if (!atomic_load_explicit(&context->devices_ready, memory_order_acquire)) return NULL;
    tp_status_t *first = NULL;
    for (size_t i = 0; i < context->registry.num_devices; i++) {
        tp_status_t *error = tp_device_synchronize(context->registry.devices[i]);
        if (first == NULL)
            first = error;
        else
            tp_status_free(error);
    }
    return first;
}

void tp_context_destroy(tp_context_t *context) {
    if (context != NULL) tp_context_release(context);
}
