/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a plug-in's descriptor and running its init: the checks every plug-in passes, built-in
 * or loaded, before anything it registered is used. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/printable.h"
#include "plugin/abi_sizes.h"
#include "plugin/plugin_record.h"
#include "plugin/plugin_status.h"

/* The plug-in whose init runs on this thread, so that a call back into the loader from it is
 * refused rather than waiting forever on the lock its own loading holds. */
static _Thread_local const tp_plugin_record_t *initialising;

const tp_plugin_record_t *tp_plugin_record_initialising(void) { return initialising; }

void tp_plugin_record_refuse(tp_plugin_record_t *record, const char *format, ...) {
    char reason[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(reason, sizeof reason, format, args);
    va_end(args);
    /* A reason quotes the plug-in's own words and file names: kept as it will be shown. */
    char shown[sizeof reason * TP_PRINTABLE_EXPANSION];
    tp_printable_copy(shown, sizeof shown, reason);
    record->refusal = tp_arena_strdup(&record->arena, shown);
    if (record->refusal == NULL) record->refusal = "refused (out of host memory)";
}

/* Drops whatever a refused plug-in registered, so nothing of it is ever used. */
static void drop_registrations(tp_plugin_record_t *record) {
    free(record->device_types);
    free(record->ops);
    free(record->kernels);
    record->device_types = NULL;
    record->ops = NULL;
    record->kernels = NULL;
    record->num_device_types = record->device_types_capacity = 0;
    record->num_ops = record->ops_capacity = 0;
    record->op_index = NULL;
    record->op_index_capacity = 0;
    record->num_kernels = record->kernels_capacity = 0;
    record->has_graph_pass = false;
}

static bool is_printable_name(const char *text, size_t max_length) {
    if (text == NULL || text[0] == '\0') return false;
    size_t length = 0;
    for (; text[length] != '\0'; length++)
        if (length >= max_length || text[length] < 0x21 || text[length] > 0x7e) return false;
    return true;
}

bool tp_plugin_record_read_descriptor(tp_plugin_record_t *record,
                                      const tp_plugin_descriptor_t *descriptor) {
    record->name = "";
    record->version = "";
    if (descriptor == NULL) {
        tp_plugin_record_refuse(record, "its entry point returned no descriptor");
        return false;
    }
    /* Only struct_size and the two version numbers are read before the version check. */
    const size_t version_end = offsetof(tp_plugin_descriptor_t, abi_minor) + sizeof(uint32_t);
    if (descriptor->struct_size < version_end) {
        tp_plugin_record_refuse(record, "its descriptor is %zu bytes, too small to hold an ABI "
                                        "version", descriptor->struct_size);
        return false;
    }
    if (descriptor->struct_size > TP_MAX_PLUGIN_STRUCT_SIZE) {
        tp_plugin_record_refuse(record, "its descriptor claims %zu bytes, more than the %zu any "
                                        "struct of the ABI may claim",
                                descriptor->struct_size, TP_MAX_PLUGIN_STRUCT_SIZE);
        return false;
    }
    record->abi_major = descriptor->abi_major;
    record->abi_minor = descriptor->abi_minor;
    if (descriptor->abi_major != TP_ABI_MAJOR) {
        tp_plugin_record_refuse(record, "it was built for plug-in ABI %u.%u; this runtime speaks "
                                        "ABI %d.%d, and major versions must match",
                                descriptor->abi_major, descriptor->abi_minor, TP_ABI_MAJOR,
                                TP_ABI_MINOR);
        return false;
    }
    if (descriptor->abi_minor > TP_ABI_MINOR) {
        tp_plugin_record_refuse(record, "it was built for plug-in ABI %u.%u, newer than this "
                                        "runtime's %d.%d; upgrade tensorplug",
                                descriptor->abi_major, descriptor->abi_minor, TP_ABI_MAJOR,
                                TP_ABI_MINOR);
        return false;
    }
    if (descriptor->struct_size < TP_V1_0_DESCRIPTOR_SIZE) {
        tp_plugin_record_refuse(record, "its descriptor is %zu bytes, smaller than the %zu of "
                                        "ABI 1.0", descriptor->struct_size,
                                (size_t)TP_V1_0_DESCRIPTOR_SIZE);
        return false;
    }
    if (!is_printable_name(descriptor->name, 63) || !is_printable_name(descriptor->version, 31)) {
        tp_plugin_record_refuse(record, "its descriptor needs a name (at most 63 printable "
                                        "characters) and a version (at most 31)");
        return false;
    }
    record->name = tp_arena_strdup(&record->arena, descriptor->name);
    record->version = tp_arena_strdup(&record->arena, descriptor->version);
    if (record->name == NULL || record->version == NULL) {
        record->name = record->version = "";
        tp_plugin_record_refuse(record, "out of host memory reading its descriptor");
        return false;
    }
    if (descriptor->init == NULL) {
        tp_plugin_record_refuse(record, "its descriptor has no init function");
        return false;
    }
    record->descriptor = descriptor;
    return true;
}

void tp_plugin_record_run_init(tp_plugin_record_t *record) {
    const tp_plugin_descriptor_t *descriptor = record->descriptor;
    record->initialised = true;
    record->registrar.record = record;
    record->registrar.accepting = true;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    const tp_plugin_record_t *outer = initialising;
    initialising = record;
    descriptor->init(tp_host_api(), &record->registrar, &status);
    initialising = outer;
    record->registrar.accepting = false;

    if (status.code != TP_OK) {
        tp_plugin_record_refuse(record, "its init failed: %s",
                                status.message[0] != '\0' ? status.message : "(no message)");
        drop_registrations(record);
    } else if (record->registrar.first_error_code != TP_OK) {
        tp_plugin_record_refuse(record, "invalid registration: %s", record->registrar.first_error);
        drop_registrations(record);
    }
}

void tp_plugin_record_init_from_descriptor(tp_plugin_record_t *record,
                                           const tp_plugin_descriptor_t *descriptor) {
    if (tp_plugin_record_read_descriptor(record, descriptor)) tp_plugin_record_run_init(record);
}
