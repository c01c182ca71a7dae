/* SPDX-License-Identifier: Apache-2.0 */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <strings.h>

#include "base/env.h"
#include "base/printable.h"

enum {
    LINE_CAPACITY = 1024,
    /* A line logged from inside the callback goes to the callback as well, but one that logs
     * for every line it receives would recurse without end: lines logged deeper than this go
     * to standard error instead. */
    MAX_CALLBACK_DEPTH = 2,
};

static const char *const level_names[] = {"debug", "info", "warning", "error"};

/* Held while a line is written or handed to the callback, so that lines from different threads
 * stay whole and come one at a time, and so that once tp_log_set_callback returns the previous
 * callback is running nowhere. */
static pthread_mutex_t output_mutex = PTHREAD_MUTEX_INITIALIZER;
static tp_log_fn log_callback;
static void *log_user_data;
/* How deep this thread is in the callback. A callback may use the log API (log, change the
 * level or the callback); this thread then already holds output_mutex. */
static _Thread_local int callback_depth;

/* Atomic rather than under output_mutex: the level is read on every call, before any
 * formatting, and a callback may set it. */
static atomic_int least_level_shown = TP_LOG_INFO;

/* TP_LOG_LEVEL is read once, before the first line or the first tp_log_set_level, whichever
 * comes first; a program's own setting then overrides it. Not pthread_once: its warning is a
 * log line, and the callback that receives it may log in turn. */
static atomic_bool environment_read;
static pthread_mutex_t environment_mutex = PTHREAD_MUTEX_INITIALIZER;

static void read_level_from_environment(void) {
    if (atomic_load_explicit(&environment_read, memory_order_acquire)) return;
    const char *malformed = NULL;
    pthread_mutex_lock(&environment_mutex);
    if (!atomic_load_explicit(&environment_read, memory_order_relaxed)) {
        const char *value = tp_env_get("TP_LOG_LEVEL");
        bool known = false;
        for (int level = TP_LOG_DEBUG; value != NULL && level <= TP_LOG_ERROR && !known; level++) {
            if (strcasecmp(value, level_names[level]) == 0) {
                atomic_store(&least_level_shown, level);
                known = true;
            }
        }
        if (value != NULL && !known) malformed = value;
        atomic_store_explicit(&environment_read, true, memory_order_release);
    }
    pthread_mutex_unlock(&environment_mutex);
    if (malformed != NULL)
        tp_env_warn("TP_LOG_LEVEL", malformed, "is not one of debug, info, warning, error",
                    "using the default, info");
}

void tp_log_set_callback(tp_log_fn fn, void *user_data) {
    bool nested = callback_depth > 0;
    if (!nested) pthread_mutex_lock(&output_mutex);
    log_callback = fn;
    log_user_data = user_data;
    if (!nested) pthread_mutex_unlock(&output_mutex);
}

void tp_log_set_level(tp_log_level_t min_level) {
    read_level_from_environment();
    atomic_store(&least_level_shown, (int)min_level);
}

static void emit(tp_log_level_t level, const char *line) {
    bool nested = callback_depth > 0;
    if (!nested) pthread_mutex_lock(&output_mutex);
    if (log_callback != NULL && callback_depth < MAX_CALLBACK_DEPTH) {
        callback_depth++;
        log_callback(level, line, log_user_data);
        callback_depth--;
    } else {
        int index = level >= TP_LOG_DEBUG && level <= TP_LOG_ERROR ? (int)level : 1;
        fprintf(stderr, "tensorplug %s: %s\n", level_names[index], line);
    }
    if (!nested) pthread_mutex_unlock(&output_mutex);
}

void tp_log_message_va(tp_log_level_t level, const char *format, va_list args) {
    read_level_from_environment();
    if ((int)level < atomic_load_explicit(&least_level_shown, memory_order_relaxed)) return;
    char line[LINE_CAPACITY];
    vsnprintf(line, sizeof line, format, args);
    /* Escaped here, where every line passes, so that no caller can forget: plug-in messages,
     * file names and environment values reach a terminal or a log file as one plain line. */
    char printable[LINE_CAPACITY * TP_PRINTABLE_EXPANSION];
    tp_printable_copy(printable, sizeof printable, line);
    emit(level, printable);
}

void tp_log_message(tp_log_level_t level, const char *format, ...) {
    va_list args;
    va_start(args, format);
    tp_log_message_va(level, format, args);
    va_end(args);
}
