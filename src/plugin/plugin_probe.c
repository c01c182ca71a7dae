/* SPDX-License-Identifier: Apache-2.0 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include "plugin/plugin_probe.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/env.h"
#include "plugin/plugin_record.h"

bool tp_plugin_probe_wanted(void) { return tp_env_flag("TP_PLUGIN_PROBE", false); }

/* The signals a crash raises; what they are called in a refusal. */
static const struct {
    int number;
    const char *name;
} crash_signals[] = {
    {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGILL, "SIGILL"}, {SIGFPE, "SIGFPE"},
    {SIGABRT, "SIGABRT"}, {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"}, {SIGKILL, "SIGKILL"},
};

static const char *signal_name(int number) {
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        if (crash_signals[i].number == number) return crash_signals[i].name;
    return "a signal";
}

/* The child: load, check, init, then say it came through. Never returns. */
static _Noreturn void run_child(const char *path, int done_fd) {
    /* A handler of the program's or of a sanitizer's would turn a crash into an exit or a
     * report; the parent wants to see the signal itself. */
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        if (crash_signals[i].number != SIGKILL) signal(crash_signals[i].number, SIG_DFL);
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *symbol = library != NULL ? dlsym(library, TP_PLUGIN_ENTRY_NAME) : NULL;
    if (symbol != NULL) {
        tp_plugin_entry_fn entry;
        memcpy(&entry, &symbol, sizeof entry);
        tp_plugin_record_t scratch = {.arena = TP_ARENA_INIT, .path = path};
        tp_plugin_record_init_from_descriptor(&scratch, entry());
    }
    /* A failure to open or a refusal is not the probe's business: the real load reports it. */
    char done = 1;
    ssize_t written = write(done_fd, &done, 1);
    _exit(written == 1 ? 0 : 1);
}

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
}

bool tp_plugin_probe(const char *path, int timeout_ms, char *reason, size_t capacity) {
    int done_pipe[2];
    if (pipe2(done_pipe, O_CLOEXEC) != 0) {
        snprintf(reason, capacity, "it could not be probed: pipe: %s", strerror(errno));
        return false;
    }
    /* Output still buffered here would be written twice if the plug-in calls exit(). */
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        close(done_pipe[0]);
        run_child(path, done_pipe[1]);
    }
    int fork_error = errno;
    close(done_pipe[1]);
    if (child < 0) {
        close(done_pipe[0]);
        snprintf(reason, capacity, "it could not be probed: fork: %s", strerror(fork_error));
        return false;
    }
    int status = 0;
    long waited_ms = 0, pause_ms = 1;
    pid_t ended;
    while ((ended = waitpid(child, &status, WNOHANG)) == 0 || (ended < 0 && errno == EINTR)) {
        if (waited_ms >= timeout_ms) {
            kill(child, SIGKILL);
            while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
            }
            close(done_pipe[0]);
            snprintf(reason, capacity, "it did not finish loading within %d s in a probe",
                     timeout_ms / 1000);
            return false;
        }
        sleep_ms(pause_ms);
        waited_ms += pause_ms;
        if (pause_ms < 20) pause_ms *= 2;
    }
    int wait_error = ended < 0 ? errno : 0;
    char done = 0;
    /* Non-blocking: a process the plug-in started may hold the pipe open after the child. */
    bool came_through = fcntl(done_pipe[0], F_SETFL, O_NONBLOCK) == 0 &&
                        read(done_pipe[0], &done, 1) == 1;
    close(done_pipe[0]);
    /* A program that ignores SIGCHLD has its children reaped for it, and then how this one
     * ended cannot be known: its word on the pipe is all there is. */
    if (ended < 0) return came_through || wait_error == ECHILD;
    if (WIFSIGNALED(status)) {
        snprintf(reason, capacity, "it crashed with signal %d (%s) during init",
                 WTERMSIG(status), signal_name(WTERMSIG(status)));
        return false;
    }
    if (!came_through) {
        snprintf(reason, capacity, "it ended the process (exit status %d) during init",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return false;
    }
    return true;
}
