/* SPDX-License-Identifier: Apache-2.0 */
/* Starting and stopping the profile: from the API, or from TP_PROFILE over the life of the
 * process's contexts. */
#include "profiler/profiler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/env.h"
#include "base/log.h"
#include "base/printable.h"
#include "base/status.h"
#include "profiler/recorder.h"
#include "profiler/trace_json.h"
#include "tensorplug/tensorplug.h"

/* The profile recording, guarded by session_mutex. */
static pthread_mutex_t session_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool active;
    bool from_environment;
    FILE *file;
    char *path;
    bool regular_file; /* removed when its write fails; a device or pipe is left alone */
    uint64_t origin_ns;
} session;

static atomic_int live_contexts;
static bool environment_used; /* TP_PROFILE was taken up; under session_mutex */

/* The path as a message shows it: control bytes escaped. */
static void printable_path(const char *path, char *out, size_t capacity) {
    tp_printable_copy(out, capacity, path);
}

/* Opens the file and starts recording; session_mutex held, no profile recording. */
static tp_status_t *start_locked(const char *path, bool from_environment) {
    FILE *file = fopen(path, "w");
    char shown[1024];
    if (file == NULL) {
        int error = errno;
        printable_path(path, shown, sizeof shown);
        return tp_status_make(tp_code_from_errno(error), "cannot write the profile to '%s': %s",
                              shown, strerror(error));
    }
    char *copy = strdup(path);
    if (copy == NULL || !tp_recorder_begin()) {
        fclose(file);
        free(copy);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory starting a profile");
    }
    session.active = true;
    session.from_environment = from_environment;
    struct stat status;
    session.file = file;
    session.path = copy;
    session.regular_file = fstat(fileno(file), &status) == 0 && S_ISREG(status.st_mode);
    session.origin_ns = tp_profile_clock_ns();
    tp_profile_hooks_install(&tp_profiler_hooks);
    return NULL;
}

/* Ends the recording, session_mutex held; what remains to write is handed to the caller. */
typedef struct {
    FILE *file;
    char *path;
    bool regular_file;
    uint64_t origin_ns;
    tp_profile_collection_t events;
} finished_t;

static void stop_locked(finished_t *out) {
    tp_profile_hooks_install(NULL);
    tp_recorder_end(&out->events);
    out->file = session.file;
    out->path = session.path;
    out->regular_file = session.regular_file;
    out->origin_ns = session.origin_ns;
    session.active = false;
    session.file = NULL;
    session.path = NULL;
}

/* Writes and closes the file; on failure a regular file is removed, so that no half-written
 * profile is taken for a whole one. */
static tp_status_t *write_profile(finished_t *finished) {
    char producer[64];
    snprintf(producer, sizeof producer, "tensorplug %s", tp_version());
    errno = 0;
    bool written = tp_trace_json_write(finished->file, &finished->events, finished->origin_ns,
                                       producer);
    int error = errno;
    if (fclose(finished->file) != 0 && written) {
        written = false;
        error = errno;
    }
    tp_status_t *status = NULL;
    if (!written) {
        char shown[1024];
        printable_path(finished->path, shown, sizeof shown);
        status = tp_status_make(error != 0 ? tp_code_from_errno(error) : TP_RESOURCE_EXHAUSTED,
                                "cannot write the profile to '%s': %s", shown,
                                error != 0 ? strerror(error) : "out of host memory");
        if (finished->regular_file) unlink(finished->path);
    } else if (finished->events.dropped > 0) {
        tp_log_message(TP_LOG_WARNING,
                       "the profile lacks %llu events: a thread recorded more than it keeps, "
                       "or host memory ran out",
                       (unsigned long long)finished->events.dropped);
    }
    tp_profile_collection_free(&finished->events);
    free(finished->path);
    return status;
}

tp_status_t *tp_profiler_start(tp_context_t *context, const char *path) {
    TP_REQUIRE_ARG(path);
    if (path[0] == '\0')
        return tp_status_make(TP_INVALID_ARGUMENT, "tp_profiler_start: the path is empty");
    /* Work queued before the profile is not part of it. A failure of that work belongs to
     * the tensors it made, which report it. */
    if (context != NULL) tp_status_free(tp_context_synchronize(context));
    pthread_mutex_lock(&session_mutex);
    tp_status_t *error;
    if (session.active) {
        char shown[1024];
        printable_path(session.path, shown, sizeof shown);
        error = tp_status_make(TP_FAILED_PRECONDITION,
                               "a profile is being recorded already, to '%s'; one at a time",
                               shown);
    } else {
        error = start_locked(path, false);
    }
    pthread_mutex_unlock(&session_mutex);
    return tp_status_annotate(error, "tp_profiler_start");
}

tp_status_t *tp_profiler_stop(tp_context_t *context) {
    /* The profile takes in what the devices still run, and the frees that wait for it. */
    if (context != NULL) tp_status_free(tp_context_synchronize(context));
    pthread_mutex_lock(&session_mutex);
    bool active = session.active;
    finished_t finished = {0};
    if (active) stop_locked(&finished);
    pthread_mutex_unlock(&session_mutex);
    if (!active)
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "tp_profiler_stop: no profile is being recorded");
    return tp_status_annotate(write_profile(&finished), "tp_profiler_stop");
}

void tp_profiler_context_created(void) {
    if (atomic_fetch_add(&live_contexts, 1) != 0) return;
    const char *path = tp_env_get("TP_PROFILE");
    if (path == NULL) return;
    pthread_mutex_lock(&session_mutex);
    tp_status_t *error = NULL;
    if (!environment_used && !session.active) {
        environment_used = true;
        error = start_locked(path, true);
    }
    pthread_mutex_unlock(&session_mutex);
    if (error != NULL) {
        char problem[1024];
        snprintf(problem, sizeof problem, "cannot be used (%s)", tp_status_message(error));
        tp_env_warn("TP_PROFILE", path, problem, "no profile is recorded");
        tp_status_free(error);
    }
}

void tp_profiler_context_released(void) {
    if (atomic_fetch_sub(&live_contexts, 1) != 1) return;
    pthread_mutex_lock(&session_mutex);
    bool ends = session.active && session.from_environment;
    finished_t finished = {0};
    if (ends) stop_locked(&finished);
    pthread_mutex_unlock(&session_mutex);
    if (!ends) return;
    size_t count = tp_profile_collection_size(&finished.events);
    char shown[1024];
    printable_path(finished.path, shown, sizeof shown);
    tp_status_t *error = write_profile(&finished);
    if (error != NULL) {
        tp_log_message(TP_LOG_ERROR, "TP_PROFILE: %s", tp_status_message(error));
        tp_status_free(error);
    } else {
        tp_log_message(TP_LOG_INFO, "TP_PROFILE: %zu events written to '%s'", count, shown);
    }
}
