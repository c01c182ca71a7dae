/* SPDX-License-Identifier: Apache-2.0 */
/* tp_plugin_check: runs the plan of checks, each in a child process of its own, and prints their
 * verdicts. A child loads the plug-in afresh, runs one check and writes lines to a pipe:
 *     W <phase>                "init" while the runtime loads the plug-in, "" after
 *     S <name>                 the check started (so that a crash can be pinned on it)
 *     P|F|N <name> <text>      passed, failed or not applicable, with the detail or reason
 *     C <key> <argument>       (the registrations check only) a check to add to the plan
 * Fields are separated by tabs. A child that dies, hangs or exits with an error (a sanitizer's
 * report, for one) fails the check it was running. The parent never loads the plug-in itself,
 * so one that crashes while it loads fails the load check instead of ending the tool. A run in
 * which every device and kernel check was n/a fails: it checked nothing. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "conformance/check.h"

static const tp_check_kind_t check_kinds[] = {
    {"load", tp_check_load},
    {"registrations", tp_check_registrations},
    {"allocate", tp_check_allocate_sizes},
    {"empty-tensor", tp_check_empty_tensor},
    {"allocate-too-much", tp_check_allocate_too_much},
    {"round-trips", tp_check_round_trips},
    {"device-copy", tp_check_device_copy},
    {"peer-copy", tp_check_peer_copy},
    {"stream-order", tp_check_stream_order},
    {"events", tp_check_events},
    {"host-waits", tp_check_host_waits},
    {"kernel", tp_check_kernel},
    {"kernel-errors", tp_check_kernel_errors},
    {"kernel-memory", tp_check_kernel_memory},
    {"two-threads", tp_check_two_threads},
};

/* ---- The child's side ------------------------------------------------------------------------ */

/* Tabs and newlines would break the line protocol. */
static void write_field(FILE *channel, const char *text) {
    for (const char *c = text; *c != '\0'; c++) fputc(*c == '\t' || *c == '\n' ? ' ' : *c, channel);
}

static void write_line(FILE *channel, char kind, const char *first, const char *second) {
    fputc(kind, channel);
    fputc('\t', channel);
    write_field(channel, first);
    if (second != NULL) {
        fputc('\t', channel);
        write_field(channel, second);
    }
    fputc('\n', channel);
    fflush(channel);
}

void tp_check_plan(tp_check_t *check, const char *key, const char *argument) {
    write_line(check->channel, 'C', key, argument);
}

static void format_into(char *buffer, size_t capacity, const char *format, va_list args)
    TP_PRINTF_LIKE(3, 0);
static void format_into(char *buffer, size_t capacity, const char *format, va_list args) {
    vsnprintf(buffer, capacity, format, args);
}

void tp_check_name(tp_check_t *check, const char *format, ...) {
    va_list args;
    va_start(args, format);
    format_into(check->name, sizeof check->name, format, args);
    va_end(args);
    write_line(check->channel, 'S', check->name, NULL);
}

void tp_check_detail(tp_check_t *check, const char *format, ...) {
    va_list args;
    va_start(args, format);
    format_into(check->detail, sizeof check->detail, format, args);
    va_end(args);
}

void tp_check_not_applicable(tp_check_t *check, const char *format, ...) {
    va_list args;
    va_start(args, format);
    format_into(check->detail, sizeof check->detail, format, args);
    va_end(args);
    check->not_applicable = true;
}

tp_status_t *tp_check_failure(const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    format_into(message, sizeof message, format, args);
    va_end(args);
    return tp_status_make(TP_FAILED_PRECONDITION, "%s", message);
}

static uint64_t hash_text(uint64_t hash, const char *text) {
    for (const char *c = text; *c != '\0'; c++) hash = (hash ^ (uint8_t)*c) * 0x100000001B3u;
    return hash;
}

static const tp_plugin_entry_t *plugin_under_test(const tp_context_t *context) {
    for (size_t i = 0; i < context->registry.num_plugins; i++)
        if (!context->registry.plugins[i].record->builtin) return &context->registry.plugins[i];
    return NULL;
}

static tp_status_t *run_in_child(tp_check_t *check, const tp_check_kind_t *kind,
                                 const char *argument) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = check->path;
    options.skip_installed_plugins = true;
    write_line(check->channel, 'W', "init", NULL);
    tp_status_t *error = tp_context_create(&options, &check->context);
    write_line(check->channel, 'W', "", NULL);
    if (error != NULL) return tp_status_annotate(error, "creating a context");
    check->plugin = plugin_under_test(check->context);
    if (check->plugin == NULL)
        error = tp_check_failure("the runtime found no plug-in at %s",
                                 check->path);
    else
        error = kind->run(check, argument);
    tp_context_destroy(check->context);
    return error;
}

/* Runs the check `key` and exits with the verdict written: never returns. */
static void child_main(int fd, const char *path, const tp_plugin_check_options_t *options,
                       const char *key, const char *argument) {
    FILE *channel = fdopen(fd, "w");
    if (channel == NULL) _exit(3);
    tp_log_set_level(TP_LOG_ERROR);
    tp_check_t check = {.options = options, .path = path, .channel = channel};
    check.random_state = hash_text(hash_text(0xCBF29CE484222325u ^ options->seed, key), argument);
    snprintf(check.name, sizeof check.name, "%s%s%s", key, argument[0] != '\0' ? " " : "",
             argument);
    const tp_check_kind_t *kind = NULL;
    for (size_t k = 0; k < sizeof check_kinds / sizeof *check_kinds; k++)
        if (strcmp(check_kinds[k].key, key) == 0) kind = &check_kinds[k];
    tp_status_t *error = kind != NULL ? run_in_child(&check, kind, argument)
                                      : tp_check_failure("no check is called '%s'", key);
    if (error != NULL)
        write_line(channel, 'F', check.name, tp_status_message(error));
    else
        write_line(channel, check.not_applicable ? 'N' : 'P', check.name, check.detail);
    tp_status_free(error);
    fclose(channel);
    /* exit, not _exit: a sanitizer's report at exit must fail the check. */
    exit(0);
}

/* ---- The parent's side ----------------------------------------------------------------------- */

/* The plan starts with "load" and "registrations"; what follows checks devices and kernels. */
enum { FIRST_DEVICE_OR_KERNEL_CHECK = 2 };

typedef struct planned_check {
    char *key;
    char *argument;
} planned_check_t;

typedef struct plan {
    planned_check_t *checks;
    size_t count, capacity;
} plan_t;

static bool plan_add(plan_t *plan, const char *key, const char *argument) {
    if (plan->count == plan->capacity) {
        size_t capacity = plan->capacity == 0 ? 32 : plan->capacity * 2;
        planned_check_t *grown = realloc(plan->checks, capacity * sizeof *grown);
        if (grown == NULL) return false;
        plan->checks = grown;
        plan->capacity = capacity;
    }
    char *key_copy = strdup(key), *argument_copy = strdup(argument);
    if (key_copy == NULL || argument_copy == NULL) {
        free(key_copy);
        free(argument_copy);
        return false;
    }
    plan->checks[plan->count++] = (planned_check_t){key_copy, argument_copy};
    return true;
}

static void plan_free(plan_t *plan) {
    for (size_t i = 0; i < plan->count; i++) {
        free(plan->checks[i].key);
        free(plan->checks[i].argument);
    }
    free(plan->checks);
}

/* What the parent learned from one child. */
typedef struct verdict {
    char kind;        /* 'P', 'F', 'N', or 0 when the child gave none */
    char name[128];   /* the last check started or judged */
    char text[1024];
    char phase[16];   /* "init" while the plug-in was being loaded */
} verdict_t;

typedef struct tally {
    FILE *out; /* NULL: the verdicts go to the callback alone */
    const tp_plugin_check_options_t *options;
    int32_t passed, failed;
    int32_t devices_and_kernels_passed; /* the checks after load and registrations */
    char first_not_applicable[1024];    /* the reason of the first of those that was n/a */
} tally_t;

static double now_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void copy_field(char *target, size_t capacity, const char *field) {
    snprintf(target, capacity, "%s", field != NULL ? field : "");
}

/* One line from the child: a start, a verdict or a planned check. */
static bool take_line(char *line, verdict_t *verdict, plan_t *plan) {
    char *fields[3] = {NULL, NULL, NULL};
    char *cursor = line;
    for (int f = 0; f < 3 && cursor != NULL; f++) {
        fields[f] = cursor;
        cursor = f < 2 ? strchr(cursor, '\t') : NULL;
        if (cursor != NULL) *cursor++ = '\0';
    }
    if (fields[1] == NULL || strlen(fields[0]) != 1) return true;
    char kind = fields[0][0];
    if (kind == 'C') return plan_add(plan, fields[1], fields[2] != NULL ? fields[2] : "");
    if (kind == 'W') {
        copy_field(verdict->phase, sizeof verdict->phase, fields[1]);
        return true;
    }
    copy_field(verdict->name, sizeof verdict->name, fields[1]);
    if (kind == 'P' || kind == 'F' || kind == 'N') {
        verdict->kind = kind;
        copy_field(verdict->text, sizeof verdict->text, fields[2]);
    }
    return true;
}

/* Reads the child's lines until it closes the pipe or `seconds` pass; false on a timeout. */
static bool read_child(int fd, double seconds, verdict_t *verdict, plan_t *plan) {
    char buffer[8192];
    size_t used = 0;
    double deadline = now_seconds() + seconds;
    for (;;) {
        double left = deadline - now_seconds();
        if (left <= 0) return false;
        struct pollfd poll_fd = {fd, POLLIN, 0};
        int ready = poll(&poll_fd, 1, (int)(left * 1000) + 1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) continue;
        ssize_t got = read(fd, buffer + used, sizeof buffer - 1 - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return true;
        used += (size_t)got;
        buffer[used] = '\0';
        char *start = buffer, *end;
        while ((end = strchr(start, '\n')) != NULL) {
            *end = '\0';
            if (!take_line(start, verdict, plan)) return true;
            start = end + 1;
        }
        used = strlen(start);
        memmove(buffer, start, used);
        /* A line longer than the buffer is cut rather than waited for forever. */
        if (used == sizeof buffer - 1) used = 0;
    }
}

static const char *const outcome_marks[] = {
    [TP_PLUGIN_CHECK_PASSED] = "pass",
    [TP_PLUGIN_CHECK_FAILED] = "FAIL",
    [TP_PLUGIN_CHECK_NOT_APPLICABLE] = "n/a",
};

/* Reports a verdict, printed and to the caller's callback, and counts it. */
static void report_verdict(tally_t *tally, tp_plugin_check_outcome_t outcome, const char *name,
                           const char *text) {
    if (outcome == TP_PLUGIN_CHECK_PASSED) tally->passed++;
    if (outcome == TP_PLUGIN_CHECK_FAILED) tally->failed++;
    if (tally->out != NULL) {
        fprintf(tally->out, "%-5s %s: %s\n", outcome_marks[outcome], name, text);
        fflush(tally->out);
    }
    if (tally->options->on_verdict != NULL) {
        tp_plugin_check_verdict_t verdict = {sizeof verdict, name, outcome, text};
        tally->options->on_verdict(&verdict, tally->options->user_data);
    }
}

/* Turns how the child ended into the verdict reported. */
static tp_plugin_check_outcome_t judge(tally_t *tally, verdict_t *verdict, bool finished, int wait_status,
                         int timeout) {
    char reason[1200];
    bool loading = strcmp(verdict->phase, "init") == 0;
    if (!finished) {
        snprintf(reason, sizeof reason, "no verdict after %d s%s: the plug-in seems to hang",
                 timeout, loading ? " during init, while the runtime loaded the plug-in" : "");
    } else if (WIFSIGNALED(wait_status) && loading) {
        snprintf(reason, sizeof reason,
                 "the check crashed with signal %d during init (%s, while the runtime loaded the "
                 "plug-in: in a constructor or in its init function)",
                 WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
    } else if (WIFSIGNALED(wait_status)) {
        snprintf(reason, sizeof reason, "the check crashed with signal %d (%s)",
                 WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
    } else if (verdict->kind == 0) {
        snprintf(reason, sizeof reason, "the check ended without a verdict (exit status %d)",
                 WEXITSTATUS(wait_status));
    } else if (WEXITSTATUS(wait_status) != 0) {
        snprintf(reason, sizeof reason,
                 "%s; then the check process exited with status %d (a sanitizer's report?)",
                 verdict->text, WEXITSTATUS(wait_status));
    } else {
        tp_plugin_check_outcome_t outcome = verdict->kind == 'P'   ? TP_PLUGIN_CHECK_PASSED
                                            : verdict->kind == 'N' ? TP_PLUGIN_CHECK_NOT_APPLICABLE
                                                                   : TP_PLUGIN_CHECK_FAILED;
        report_verdict(tally, outcome, verdict->name, verdict->text);
        return outcome;
    }
    report_verdict(tally, TP_PLUGIN_CHECK_FAILED, verdict->name, reason);
    return TP_PLUGIN_CHECK_FAILED;
}

/* Runs the plan's index-th check in a child; *out_outcome is its verdict. */
static tp_status_t *run_one(tally_t *tally, const char *path,
                            const tp_plugin_check_options_t *options, plan_t *plan,
                            size_t index, tp_plugin_check_outcome_t *out_outcome) {
    int fds[2];
    if (pipe(fds) != 0)
        return tp_status_make(TP_UNAVAILABLE, "plugin-check: pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        close(fds[0]);
        close(fds[1]);
        return tp_status_make(TP_UNAVAILABLE, "plugin-check: fork: %s", strerror(errno));
    }
    if (child == 0) {
        close(fds[0]);
        child_main(fds[1], path, options, plan->checks[index].key,
                   plan->checks[index].argument);
    }
    close(fds[1]);
    verdict_t verdict = {0, "", "", ""};
    const planned_check_t *planned = &plan->checks[index];
    snprintf(verdict.name, sizeof verdict.name, "%s%s%s", planned->key,
             planned->argument[0] != '\0' ? " " : "", planned->argument);
    bool finished = read_child(fds[0], options->timeout_seconds, &verdict, plan);
    close(fds[0]);
    if (!finished) kill(child, SIGKILL);
    int wait_status = 0;
    while (waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
    }
    *out_outcome = judge(tally, &verdict, finished, wait_status, options->timeout_seconds);
    if (index >= FIRST_DEVICE_OR_KERNEL_CHECK && *out_outcome == TP_PLUGIN_CHECK_PASSED)
        tally->devices_and_kernels_passed++;
    if (index >= FIRST_DEVICE_OR_KERNEL_CHECK && *out_outcome == TP_PLUGIN_CHECK_NOT_APPLICABLE &&
        tally->first_not_applicable[0] == '\0')
        snprintf(tally->first_not_applicable, sizeof tally->first_not_applicable, "%s",
                 verdict.text);
    return NULL;
}

/* A run that passes without having checked a device or a kernel would vouch for nothing. */
static void judge_coverage(tally_t *tally) {
    if (tally->failed > 0 || tally->devices_and_kernels_passed > 0) return;
    char reason[1200];
    if (tally->first_not_applicable[0] != '\0')
        snprintf(reason, sizeof reason, "nothing was checked: every device and kernel check was "
                 "n/a (%s)", tally->first_not_applicable);
    else
        snprintf(reason, sizeof reason, "nothing was checked: the plug-in registered no device "
                 "and no kernel to check");
    report_verdict(tally, TP_PLUGIN_CHECK_FAILED, "coverage", reason);
}

tp_status_t *tp_plugin_check(const char *path, const tp_plugin_check_options_t *options,
                             FILE *out, int32_t *out_passed, int32_t *out_failed) {
    TP_REQUIRE_ARG(path);
    if (access(path, R_OK) != 0)
        return tp_status_make(TP_NOT_FOUND, "plugin-check: cannot read '%s': %s", path,
                              strerror(errno));
    /* The loader takes absolute paths only (a relative one names another file in every
     * working directory), so the file the user named is made absolute here, once. */
    char absolute[PATH_MAX];
    if (realpath(path, absolute) == NULL)
        return tp_status_make(TP_NOT_FOUND, "plugin-check: cannot resolve '%s': %s", path,
                              strerror(errno));
    const char *given = path;
    path = absolute;
    tp_plugin_check_options_t effective = TP_PLUGIN_CHECK_OPTIONS_INIT;
    if (options != NULL)
        memcpy(&effective, options,
               options->struct_size < sizeof effective ? options->struct_size : sizeof effective);
    effective.struct_size = sizeof effective;
    if (effective.timeout_seconds <= 0) effective.timeout_seconds = 120;
    plan_t plan = {NULL, 0, 0};
    if (!plan_add(&plan, "load", "") || !plan_add(&plan, "registrations", "")) {
        plan_free(&plan);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "plugin-check: out of host memory");
    }
    tally_t tally = {out, &effective, 0, 0, 0, ""};
    if (out != NULL) fprintf(out, "plugin-check %s\n", given);
    tp_status_t *error = NULL;
    /* The registrations check adds to the plan as it runs, so the count is read each time. */
    bool loaded = true;
    for (size_t i = 0; i < plan.count && error == NULL && loaded; i++) {
        tp_plugin_check_outcome_t outcome = TP_PLUGIN_CHECK_FAILED;
        error = run_one(&tally, path, &effective, &plan, i, &outcome);
        loaded = i > 0 || outcome == TP_PLUGIN_CHECK_PASSED;
    }
    plan_free(&plan);
    if (error != NULL) return error;
    if (loaded)
        judge_coverage(&tally);
    else
        report_verdict(&tally, TP_PLUGIN_CHECK_NOT_APPLICABLE, "registrations",
                       "the plug-in did not load");
    if (out != NULL) {
        fprintf(out, "%d passed, %d failed\n", (int)tally.passed, (int)tally.failed);
        fflush(out);
    }
    if (out_passed != NULL) *out_passed = tally.passed;
    if (out_failed != NULL) *out_failed = tally.failed;
    return NULL;
}
