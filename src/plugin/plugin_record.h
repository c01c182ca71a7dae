/* SPDX-License-Identifier: Apache-2.0 */
/* What one plug-in file (or built-in plug-in) provided, kept for the life of the process. */
#ifndef TP_PLUGIN_PLUGIN_RECORD_H
#define TP_PLUGIN_PLUGIN_RECORD_H

#include <stdbool.h>

#include "base/arena.h"
#include "tensorplug/plugin.h"

/* The registrar handed to a plug-in's init; embedded in its record so that host->log may use
 * it for as long as the process lives. */
struct tp_registrar {
    struct tp_plugin_record *record;
    bool accepting;            /* registrations are allowed only during init */
    tp_code_t first_error_code;
    char first_error[512];     /* the first refused registration, even if init ignored it */
};

typedef struct tp_plugin_record {
    tp_arena_t arena;          /* owns every string and array below */
    const char *path;          /* the file, or "<built-in>" */
    bool builtin;
    const char *refusal;       /* why the plug-in cannot be used; NULL when it can */
    bool refusal_logged;

    const char *name;          /* "" until the descriptor was read */
    const char *version;
    uint32_t abi_major, abi_minor;

    /* Registrations, copied and widened to this host's struct sizes. */
    tp_device_type_def_t *device_types; /* malloc'd arrays, grown by doubling */
    size_t num_device_types, device_types_capacity;
    tp_op_def_t *ops;
    size_t num_ops, ops_capacity;
    size_t *op_index;          /* ops by name (op_names.h), in the arena */
    size_t op_index_capacity;
    tp_kernel_def_t *kernels;
    size_t num_kernels, kernels_capacity;
    bool has_graph_pass;
    tp_graph_pass_def_t graph_pass;

    /* The descriptor once read and checked; init runs once, and only for a plug-in the process
     * uses (plugin_selection.h). */
    const tp_plugin_descriptor_t *descriptor;
    bool initialised;

    struct tp_registrar registrar;
    void *library;             /* dlopen handle; never closed once init has run */
} tp_plugin_record_t;

/* The host function table handed to every plug-in. */
const tp_host_api_t *tp_host_api(void);

/* Checks `descriptor` (ABI version, sizes, name, version, init) and keeps its name and version;
 * false, with record->refusal set, when the plug-in cannot be used. */
bool tp_plugin_record_read_descriptor(tp_plugin_record_t *record,
                                      const tp_plugin_descriptor_t *descriptor);
/* Runs the init of a record whose descriptor was read, filling `record`; on failure sets
 * record->refusal and leaves no registration behind. Called at most once per record. */
void tp_plugin_record_run_init(tp_plugin_record_t *record);
/* Both of the above. */
void tp_plugin_record_init_from_descriptor(tp_plugin_record_t *record,
                                           const tp_plugin_descriptor_t *descriptor);

/* The plug-in whose init is running on this thread, or NULL. */
const tp_plugin_record_t *tp_plugin_record_initialising(void);

/* Sets record->refusal from a printf-style reason (kept in the record's arena). */
void tp_plugin_record_refuse(tp_plugin_record_t *record, const char *format, ...)
    TP_PRINTF_LIKE(2, 3);

/* Whether `name` is a valid device type name: a letter, then letters, digits and '_', at most
 * 31 characters. */
bool tp_is_valid_device_type_name(const char *name);

#endif
