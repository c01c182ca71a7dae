/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/plugin_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "plugin/builtin_plugins.h"
#include "plugin/plugin_file.h"
#include "plugin/plugin_probe.h"
#include "plugin/tfcompat_loader.h"

/* Loading and the records are guarded by one lock: plug-ins load rarely, and a plug-in's init
 * must never run twice. */
static pthread_mutex_t library_mutex = PTHREAD_MUTEX_INITIALIZER;
static tp_plugin_record_t **loaded_records;
static size_t num_loaded_records, loaded_records_capacity;
static tp_plugin_record_t *builtin_records;
static const tp_plugin_record_t **builtin_record_pointers;
static size_t num_builtin_records;
static bool builtins_ready;

static void init_builtins_locked(void) {
    if (builtins_ready) return;
    builtins_ready = true;
    builtin_records = calloc(tp_builtin_plugin_count, sizeof *builtin_records);
    builtin_record_pointers = calloc(tp_builtin_plugin_count, sizeof *builtin_record_pointers);
    if (builtin_records == NULL || builtin_record_pointers == NULL) {
        tp_log_message(TP_LOG_ERROR, "out of host memory initialising the built-in devices");
        free(builtin_records);
        free(builtin_record_pointers);
        builtin_records = NULL;
        builtin_record_pointers = NULL;
        return;
    }
    for (size_t i = 0; i < tp_builtin_plugin_count; i++) {
        tp_plugin_record_t *record = &builtin_records[i];
        record->path = "<built-in>";
        record->builtin = true;
        tp_plugin_record_init_from_descriptor(record, tp_builtin_plugin_entries[i]());
        builtin_record_pointers[i] = record;
    }
    num_builtin_records = tp_builtin_plugin_count;
}

/* Plug-ins load one at a time under the library's lock, so a plug-in's init that creates a
 * context would wait for itself forever: it is refused instead. */
static tp_status_t *refuse_from_init(void) {
    const tp_plugin_record_t *loading = tp_plugin_record_initialising();
    if (loading == NULL) return NULL;
    return tp_status_make(TP_FAILED_PRECONDITION,
                          "called from the init of plug-in '%s' (%s): plug-ins load one at a "
                          "time, so a plug-in's init cannot create a context",
                          loading->name, loading->path);
}

tp_status_t *tp_plugin_library_builtins(const tp_plugin_record_t *const **out_records,
                                        size_t *out_count) {
    TP_RETURN_IF_ERROR(refuse_from_init());
    pthread_mutex_lock(&library_mutex);
    init_builtins_locked();
    pthread_mutex_unlock(&library_mutex);
    *out_records = builtin_record_pointers;
    *out_count = num_builtin_records;
    return NULL;
}

/* How long a probe may take to load a plug-in before it is judged hung. */
enum { PROBE_TIMEOUT_MS = 60 * 1000 };

/* Runs the init of a record whose descriptor was read, when `wanted` says the caller uses it. */
static void init_if_wanted(tp_plugin_record_t *record, tp_plugin_wanted_fn wanted,
                           void *wanted_arg) {
    if (record->refusal == NULL && !record->initialised && record->descriptor != NULL &&
        wanted(record, wanted_arg))
        tp_plugin_record_run_init(record);
}

/* Checks the file, probes it when asked to (plugin_probe.h), opens it and runs the descriptor
 * checks, then the init if wanted; every failure becomes the record's refusal. */
static void load_record(tp_plugin_record_t *record, tp_plugin_wanted_fn wanted,
                        void *wanted_arg) {
    char reason[512];
    if (!tp_plugin_file_check(record->path, reason, sizeof reason) ||
        (tp_plugin_probe_wanted() &&
         !tp_plugin_probe(record->path, PROBE_TIMEOUT_MS, reason, sizeof reason))) {
        tp_plugin_record_refuse(record, "%s", reason);
        record->name = record->version = "";
        return;
    }
    dlerror();
    void *library = dlopen(record->path, RTLD_NOW | RTLD_LOCAL);
    char open_error[512] = "unknown error";
    if (library == NULL) {
        const char *error = dlerror();
        if (error != NULL) snprintf(open_error, sizeof open_error, "%s", error);
    }
    void *symbol = library != NULL ? dlsym(library, TP_PLUGIN_ENTRY_NAME) : NULL;
    if (symbol == NULL) {
        /* No native entry point: perhaps a TensorFlow plug-in, which the adapter runs. */
        void *tf_library = NULL;
        const tp_plugin_descriptor_t *descriptor = NULL;
        switch (tp_tfcompat_open(record->path, library, open_error, &tf_library, &descriptor,
                                 reason, sizeof reason)) {
        case TP_TFCOMPAT_OPENED:
            record->library = tf_library;
            if (tp_plugin_record_read_descriptor(record, descriptor))
                init_if_wanted(record, wanted, wanted_arg);
            return;
        case TP_TFCOMPAT_REFUSED:
            tp_plugin_record_refuse(record, "%s", reason);
            record->name = record->version = "";
            return;
        case TP_TFCOMPAT_NOT_TENSORFLOW:
            break;
        }
    }
    if (library == NULL) {
        tp_plugin_record_refuse(record, "it cannot be opened: %s", open_error);
        record->name = record->version = "";
        return;
    }
    if (symbol == NULL) {
        tp_plugin_record_refuse(record, "it exports no entry point '%s'", TP_PLUGIN_ENTRY_NAME);
        record->name = record->version = "";
        dlclose(library);
        return;
    }
    tp_plugin_entry_fn entry;
    /* POSIX guarantees that a function's address survives the trip through void *. */
    memcpy(&entry, &symbol, sizeof entry);
    record->library = library;
    if (tp_plugin_record_read_descriptor(record, entry()))
        init_if_wanted(record, wanted, wanted_arg);
}

tp_status_t *tp_plugin_library_load(const char *path, tp_plugin_wanted_fn wanted,
                                    void *wanted_arg, const tp_plugin_record_t **out_record) {
    TP_RETURN_IF_ERROR(refuse_from_init());
    char resolved[PATH_MAX];
    const char *key = realpath(path, resolved) != NULL ? resolved : path;
    tp_status_t *status = NULL;
    pthread_mutex_lock(&library_mutex);
    for (size_t i = 0; i < num_loaded_records; i++) {
        if (strcmp(loaded_records[i]->path, key) == 0) {
            init_if_wanted(loaded_records[i], wanted, wanted_arg);
            *out_record = loaded_records[i];
            pthread_mutex_unlock(&library_mutex);
            return NULL;
        }
    }
    tp_plugin_record_t *record = calloc(1, sizeof *record);
    char *record_path = record != NULL ? tp_arena_strdup(&record->arena, key) : NULL;
    if (num_loaded_records == loaded_records_capacity) {
        size_t capacity = loaded_records_capacity == 0 ? 8 : loaded_records_capacity * 2;
        tp_plugin_record_t **grown = realloc(loaded_records, capacity * sizeof *grown);
        if (grown != NULL) {
            loaded_records = grown;
            loaded_records_capacity = capacity;
        }
    }
    if (record_path == NULL || num_loaded_records == loaded_records_capacity) {
        if (record != NULL) tp_arena_free(&record->arena);
        free(record);
        status = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory loading plug-in %s",
                                path);
    } else {
        record->path = record_path;
        load_record(record, wanted, wanted_arg);
        loaded_records[num_loaded_records++] = record;
        *out_record = record;
    }
    pthread_mutex_unlock(&library_mutex);
    return status;
}

void tp_plugin_library_log_refusal(const tp_plugin_record_t *record, const char *reason) {
    pthread_mutex_lock(&library_mutex);
    /* The flag is the library's bookkeeping, not part of what the plug-in provided. */
    tp_plugin_record_t *mutable_record = (tp_plugin_record_t *)record;
    bool first = !mutable_record->refusal_logged;
    mutable_record->refusal_logged = true;
    pthread_mutex_unlock(&library_mutex);
    if (first) tp_log_message(TP_LOG_WARNING, "skipped plug-in %s: %s", record->path, reason);
}
