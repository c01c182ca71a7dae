#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static tp_log_fn log_callback;
static void *log_user_data;
static tp_log_level_t log_min_level = TP_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warning", "error"};

static void read_level_from_environment(void) {
    const char *value = getenv("TP_LOG_LEVEL");
    if (value == NULL || value[0] == '\0') return;
    for (int level = TP_LOG_DEBUG; level <= TP_LOG_ERROR; level++) {
        if (strcasecmp(value, level_names[level]) == 0) {
            log_min_level = (tp_log_level_t)level;
            return;
        }
    }
    fprintf(stderr, "tensorplug warning: TP_LOG_LEVEL='%s' is not one of debug, info, warning, "
                    "error; keeping info\n", value);
}

void tp_log_set_callback(tp_log_fn fn, void *user_data) {
    pthread_mutex_lock(&log_mutex);
    log_callback = fn;
    log_user_data = user_data;
    pthread_mutex_unlock(&log_mutex);
}

void tp_log_set_level(tp_log_level_t min_level) {
    pthread_once(&level_once, read_level_from_environment);
    pthread_mutex_lock(&log_mutex);
    log_min_level = min_level;
    pthread_mutex_unlock(&log_mutex);
}

void tp_log_message_va(tp_log_level_t level, const char *format, va_list args) {
    pthread_once(&level_once, read_level_from_environment);
    char line[1024];
    vsnprintf(line, sizeof line, format, args);
    /* The lock also keeps lines from different threads whole on standard error. */
    pthread_mutex_lock(&log_mutex);
    if (level >= log_min_level) {
        if (log_callback != NULL) {
            log_callback(level, line, log_user_data);
        } else {
            int index = level >= TP_LOG_DEBUG && level <= TP_LOG_ERROR ? (int)level : 1;
            fprintf(stderr, "tensorplug %s: %s\n", level_names[index], line);
        }
    }
    pthread_mutex_unlock(&log_mutex);
}

void tp_log_message(tp_log_level_t level, const char *format, ...) {
    va_list args;
    va_start(args, format);
    tp_log_message_va(level, format, args);
    va_end(args);
}
