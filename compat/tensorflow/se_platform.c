/* SPDX-License-Identifier: Apache-2.0 */
/* SE_InitPlugin driven the way TensorFlow drives it: the host allocates and zeroes the
 * platform and function tables and sets their sizes, the plug-in fills them, and the host
 * checks every required callback before it uses any. Where TensorFlow aborts the process on a
 * failed check, this reports it and tears down what was made, in reverse. */
#include <stdio.h>
#include <string.h>

#include "tfc.h"

/* TensorFlow's rule for platform names and types: [A-Z][A-Z_]*. tensorplug also limits device
 * type names to 31 characters. */
static bool is_valid_platform_name(const char *name) {
    if (name == NULL || name[0] < 'A' || name[0] > 'Z') return false;
    size_t length = 0;
    for (; name[length] != '\0'; length++) {
        char c = name[length];
        if (length >= 31 || !((c >= 'A' && c <= 'Z') || c == '_')) return false;
    }
    return true;
}

typedef struct required_member {
    const char *name;
    size_t offset;
} required_member_t;

#define MEMBER(type, member) {#member, offsetof(type, member)}

static const required_member_t required_platform_fns[] = {
    MEMBER(SP_PlatformFns, get_device_count),
    MEMBER(SP_PlatformFns, create_device),
    MEMBER(SP_PlatformFns, destroy_device),
    MEMBER(SP_PlatformFns, create_device_fns),
    MEMBER(SP_PlatformFns, destroy_device_fns),
    MEMBER(SP_PlatformFns, create_stream_executor),
    MEMBER(SP_PlatformFns, destroy_stream_executor),
};

static const required_member_t required_stream_executor[] = {
    MEMBER(SP_StreamExecutor, allocate),
    MEMBER(SP_StreamExecutor, deallocate),
    MEMBER(SP_StreamExecutor, host_memory_allocate),
    MEMBER(SP_StreamExecutor, host_memory_deallocate),
    MEMBER(SP_StreamExecutor, get_allocator_stats),
    MEMBER(SP_StreamExecutor, device_memory_usage),
    MEMBER(SP_StreamExecutor, create_stream),
    MEMBER(SP_StreamExecutor, destroy_stream),
    MEMBER(SP_StreamExecutor, create_stream_dependency),
    MEMBER(SP_StreamExecutor, get_stream_status),
    MEMBER(SP_StreamExecutor, create_event),
    MEMBER(SP_StreamExecutor, destroy_event),
    MEMBER(SP_StreamExecutor, get_event_status),
    MEMBER(SP_StreamExecutor, record_event),
    MEMBER(SP_StreamExecutor, wait_for_event),
    MEMBER(SP_StreamExecutor, memcpy_dtoh),
    MEMBER(SP_StreamExecutor, memcpy_htod),
    MEMBER(SP_StreamExecutor, sync_memcpy_dtoh),
    MEMBER(SP_StreamExecutor, sync_memcpy_htod),
    MEMBER(SP_StreamExecutor, block_host_for_event),
    MEMBER(SP_StreamExecutor, synchronize_all_activity),
    MEMBER(SP_StreamExecutor, host_callback),
};

/* The first required function pointer that is NULL, by name; NULL when all are set. A member
 * past the struct_size the plug-in set counts as NULL. */
static const char *missing_member(const void *table, size_t struct_size,
                                  const required_member_t *members, size_t count) {
    for (size_t i = 0; i < count; i++) {
        void (*function)(void);
        if (members[i].offset + sizeof function > struct_size) return members[i].name;
        memcpy(&function, (const char *)table + members[i].offset, sizeof function);
        if (function == NULL) return members[i].name;
    }
    return NULL;
}

/* How far tfc_platform_init got, so that teardown undoes exactly that. */
enum { MADE_NOTHING, MADE_PLATFORM, MADE_DEVICE_FNS, MADE_STREAM_EXECUTOR, MADE_TIMER_FNS };

static void teardown_from(tfc_plugin_t *plugin, int made) {
    const SP_Platform *platform = &plugin->platform;
    if (made >= MADE_TIMER_FNS && plugin->has_timer_fns)
        plugin->platform_fns.destroy_timer_fns(platform, &plugin->timer_fns);
    if (made >= MADE_STREAM_EXECUTOR)
        plugin->platform_fns.destroy_stream_executor(platform, &plugin->stream_executor);
    if (made >= MADE_DEVICE_FNS)
        plugin->platform_fns.destroy_device_fns(platform, &plugin->device_fns);
    if (made >= MADE_PLATFORM) {
        if (plugin->params.destroy_platform_fns != NULL)
            plugin->params.destroy_platform_fns(&plugin->platform_fns);
        if (plugin->params.destroy_platform != NULL)
            plugin->params.destroy_platform(&plugin->platform);
    }
}

void tfc_platform_teardown(tfc_plugin_t *plugin) { teardown_from(plugin, MADE_TIMER_FNS); }

static bool check_platform(tfc_plugin_t *plugin, TF_Status *status) {
    const SP_Platform *platform = &plugin->platform;
    if (plugin->params.struct_size == 0 || platform->struct_size == 0 ||
        plugin->platform_fns.struct_size == 0) {
        tfc_status_printf(status, TF_FAILED_PRECONDITION,
                          "SE_InitPlugin left struct_size 0 in %s",
                          plugin->params.struct_size == 0 ? "SE_PlatformRegistrationParams"
                          : platform->struct_size == 0    ? "SP_Platform"
                                                          : "SP_PlatformFns");
        return false;
    }
    if (platform->struct_size < TF_OFFSET_OF_END(SP_Platform, supports_unified_memory)) {
        tfc_status_printf(status, TF_FAILED_PRECONDITION,
                          "SP_Platform.struct_size is %zu, too small to hold its name and type",
                          platform->struct_size);
        return false;
    }
    const char *bad = !is_valid_platform_name(platform->name) ? "name"
                      : !is_valid_platform_name(platform->type) ? "type"
                                                                : NULL;
    if (bad != NULL) {
        const char *value = bad[0] == 'n' ? platform->name : platform->type;
        tfc_status_printf(status, TF_FAILED_PRECONDITION,
                          "SP_Platform.%s '%.64s' is not [A-Z][A-Z_]* of at most 31 characters",
                          bad, value == NULL ? "(null)" : value);
        return false;
    }
    const char *missing =
        missing_member(&plugin->platform_fns, plugin->platform_fns.struct_size,
                       required_platform_fns,
                       sizeof required_platform_fns / sizeof required_platform_fns[0]);
    if (missing != NULL || plugin->params.destroy_platform == NULL ||
        plugin->params.destroy_platform_fns == NULL) {
        tfc_status_printf(status, TF_FAILED_PRECONDITION, "%s%s is not set, and it is required",
                          missing != NULL ? "SP_PlatformFns." : "SE_PlatformRegistrationParams.",
                          missing != NULL                          ? missing
                          : plugin->params.destroy_platform == NULL ? "destroy_platform"
                                                                    : "destroy_platform_fns");
        return false;
    }
    snprintf(plugin->type, sizeof plugin->type, "%s", platform->type);
    return true;
}

/* Runs one of the plug-in's create functions and reports its failure as `what` failing. */
static bool plugin_call_ok(TF_Status *status, const char *what) {
    if (TF_GetCode(status) == TF_OK) return true;
    char message[900];
    snprintf(message, sizeof message, "%s", TF_Message(status));
    tfc_status_printf(status, TF_GetCode(status), "%s failed: %s", what, message);
    return false;
}

void tfc_platform_init(tfc_plugin_t *plugin,
                       void (*init)(SE_PlatformRegistrationParams *, TF_Status *),
                       TF_Status *status) {
    SE_PlatformRegistrationParams *params = &plugin->params;
    memset(params, 0, sizeof *params);
    memset(&plugin->platform, 0, sizeof plugin->platform);
    memset(&plugin->platform_fns, 0, sizeof plugin->platform_fns);
    params->struct_size = SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE;
    params->major_version = SE_MAJOR;
    params->minor_version = SE_MINOR;
    params->patch_version = SE_PATCH;
    plugin->platform.struct_size = SP_PLATFORM_STRUCT_SIZE;
    plugin->platform_fns.struct_size = SP_PLATFORM_FNS_STRUCT_SIZE;
    params->platform = &plugin->platform;
    params->platform_fns = &plugin->platform_fns;

    init(params, status);
    if (!plugin_call_ok(status, "SE_InitPlugin")) return;
    /* The plug-in may have pointed these elsewhere; TensorFlow reads the ones it allocated. */
    params->platform = &plugin->platform;
    params->platform_fns = &plugin->platform_fns;
    if (!check_platform(plugin, status)) {
        teardown_from(plugin, params->destroy_platform != NULL ? MADE_PLATFORM : MADE_NOTHING);
        return;
    }
    const SP_Platform *platform = &plugin->platform;

    memset(&plugin->device_fns, 0, sizeof plugin->device_fns);
    plugin->device_fns.struct_size = SP_DEVICE_FNS_STRUCT_SIZE;
    SE_CreateDeviceFnsParams fns_params = {SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE, NULL,
                                           &plugin->device_fns};
    plugin->platform_fns.create_device_fns(platform, &fns_params, status);
    if (!plugin_call_ok(status, "SP_PlatformFns.create_device_fns")) {
        teardown_from(plugin, MADE_PLATFORM);
        return;
    }

    memset(&plugin->stream_executor, 0, sizeof plugin->stream_executor);
    plugin->stream_executor.struct_size = SP_STREAMEXECUTOR_STRUCT_SIZE;
    SE_CreateStreamExecutorParams se_params = {SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE, NULL,
                                               &plugin->stream_executor};
    plugin->platform_fns.create_stream_executor(platform, &se_params, status);
    if (!plugin_call_ok(status, "SP_PlatformFns.create_stream_executor")) {
        teardown_from(plugin, MADE_DEVICE_FNS);
        return;
    }
    const SP_StreamExecutor *se = &plugin->stream_executor;
    const char *missing =
        se->struct_size == 0
            ? NULL
            : missing_member(se, se->struct_size, required_stream_executor,
                             sizeof required_stream_executor / sizeof required_stream_executor[0]);
    if (se->struct_size == 0 || plugin->device_fns.struct_size == 0 || missing != NULL) {
        if (missing != NULL)
            tfc_status_printf(status, TF_FAILED_PRECONDITION,
                              "SP_StreamExecutor.%s is not set, and it is required", missing);
        else
            tfc_status_printf(status, TF_FAILED_PRECONDITION,
                              "create_stream_executor or create_device_fns left struct_size 0 "
                              "in %s",
                              se->struct_size == 0 ? "SP_StreamExecutor" : "SP_DeviceFns");
        teardown_from(plugin, MADE_STREAM_EXECUTOR);
        return;
    }

    /* Timers are optional here (TensorFlow once required them, and no longer uses them). */
    plugin->has_timer_fns = false;
    if (plugin->platform_fns.create_timer_fns != NULL &&
        plugin->platform_fns.destroy_timer_fns != NULL) {
        memset(&plugin->timer_fns, 0, sizeof plugin->timer_fns);
        plugin->timer_fns.struct_size = SP_TIMER_FNS_STRUCT_SIZE;
        plugin->platform_fns.create_timer_fns(platform, &plugin->timer_fns, status);
        if (!plugin_call_ok(status, "SP_PlatformFns.create_timer_fns")) {
            teardown_from(plugin, MADE_STREAM_EXECUTOR);
            return;
        }
        plugin->has_timer_fns = true;
    }
    TF_SetStatus(status, TF_OK, "");
}
