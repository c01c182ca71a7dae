/* SPDX-License-Identifier: Apache-2.0 */
/* The process's log: callbacks that use the log API themselves, and text from plug-ins, file
 * names and the environment made one plain line before it reaches a terminal or a callback. */
#include "test_support.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/printable.h"

/* ---- Lines as a callback receives them ---------------------------------------------------- */

enum { MAX_LINES = 64, LINE_SIZE = 4096 };

static struct {
    pthread_mutex_t mutex;
    size_t count;
    tp_log_level_t levels[MAX_LINES];
    char lines[MAX_LINES][LINE_SIZE];
} received = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static void keep_line(tp_log_level_t level, const char *line) {
    pthread_mutex_lock(&received.mutex);
    if (received.count < MAX_LINES) {
        received.levels[received.count] = level;
        snprintf(received.lines[received.count], LINE_SIZE, "%s", line);
        received.count++;
    }
    pthread_mutex_unlock(&received.mutex);
}

static void keep(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    keep_line(level, line);
}

static int reset(void **state) {
    (void)state;
    received.count = 0;
    tp_log_set_callback(keep, NULL);
    tp_log_set_level(TP_LOG_INFO);
    return 0;
}

static int restore(void **state) {
    (void)state;
    tp_log_set_callback(NULL, NULL);
    tp_log_set_level(TP_LOG_INFO);
    return 0;
}

static void assert_line(size_t index, tp_log_level_t level, const char *want) {
    if (index >= received.count)
        fail_msg("line %zu missing (%zu received); wanted '%s'", index, received.count, want);
    assert_string_equal(received.lines[index], want);
    assert_int_equal(received.levels[index], level);
}

/* ---- Running a step with a deadline ------------------------------------------------------- */

/* Runs `step` on a thread of its own and waits at most 10 s for it. A step that deadlocks on
 * the log's lock would hang the test forever, and leave the lock held for the next test: the
 * process stops with a failure instead. */
typedef struct {
    void (*step)(void);
    pthread_mutex_t mutex;
    pthread_cond_t finished_cond;
    bool finished;
} deadline_t;

static void *run_step(void *arg) {
    deadline_t *deadline = arg;
    deadline->step();
    pthread_mutex_lock(&deadline->mutex);
    deadline->finished = true;
    pthread_cond_signal(&deadline->finished_cond);
    pthread_mutex_unlock(&deadline->mutex);
    return NULL;
}

static void run_with_deadline(void (*step)(void), const char *what) {
    deadline_t deadline = {.step = step, .finished = false};
    pthread_mutex_init(&deadline.mutex, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&deadline.finished_cond, &attributes);
    pthread_condattr_destroy(&attributes);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 10;
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, run_step, &deadline), 0);
    pthread_mutex_lock(&deadline.mutex);
    int wait = 0;
    while (!deadline.finished && wait != ETIMEDOUT)
        wait = pthread_cond_timedwait(&deadline.finished_cond, &deadline.mutex, &until);
    bool finished = deadline.finished;
    pthread_mutex_unlock(&deadline.mutex);
    if (!finished) {
        fprintf(stderr, "%s did not return within 10 s: the log deadlocked\n", what);
        _Exit(EXIT_FAILURE);
    }
    pthread_join(thread, NULL);
    pthread_cond_destroy(&deadline.finished_cond);
    pthread_mutex_destroy(&deadline.mutex);
}

/* ---- Callbacks that use the log API -------------------------------------------------------- */

/* On the first line it receives, turns debug lines on and logs one of its own. */
static void raises_verbosity(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    keep_line(level, line);
    if (strcmp(line, "device lost") == 0) {
        tp_log_set_level(TP_LOG_DEBUG);
        tp_log_message(TP_LOG_INFO, "callback: debug lines on");
    }
}

static void log_through_a_verbosity_callback(void) {
    tp_log_set_callback(raises_verbosity, NULL);
    tp_log_message(TP_LOG_DEBUG, "hidden");
    tp_log_message(TP_LOG_WARNING, "device lost");
    tp_log_message(TP_LOG_DEBUG, "shown");
}

static void a_callback_may_set_the_level_and_log(void **state) {
    (void)state;
    run_with_deadline(log_through_a_verbosity_callback, "a callback calling tp_log_set_level");
    assert_int_equal(received.count, 3);
    assert_line(0, TP_LOG_WARNING, "device lost");
    assert_line(1, TP_LOG_INFO, "callback: debug lines on");
    assert_line(2, TP_LOG_DEBUG, "shown");
}

/* Hands every later line to `keep` and says so, from inside the callback. */
static void hands_over(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    keep_line(level, line);
    tp_log_set_callback(keep, NULL);
    tp_log_message(TP_LOG_INFO, "handed over after '%s'", line);
}

static void log_through_a_callback_that_replaces_itself(void) {
    tp_log_set_callback(hands_over, NULL);
    tp_log_message(TP_LOG_INFO, "one");
    tp_log_message(TP_LOG_INFO, "two");
}

static void a_callback_may_replace_itself(void **state) {
    (void)state;
    run_with_deadline(log_through_a_callback_that_replaces_itself,
                      "a callback calling tp_log_set_callback");
    assert_int_equal(received.count, 3);
    assert_line(0, TP_LOG_INFO, "one");
    assert_line(1, TP_LOG_INFO, "handed over after 'one'");
    assert_line(2, TP_LOG_INFO, "two");
}

/* Standard error, captured in a file for the length of one step. */
static char *capture_stderr(void (*step)(void), const char *what) {
    char path[] = "/tmp/tp_test_log_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    run_with_deadline(step, what);
    fflush(stderr);
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(pread(fd, text, (size_t)size, 0), size);
    close(fd);
    return text;
}

/* Logs what it receives, prefixed: a callback that would echo its own echoes without end. */
static void echoes(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    keep_line(level, line);
    tp_log_message(level, "echo: %s", line);
}

static void log_through_an_echoing_callback(void) {
    tp_log_set_callback(echoes, NULL);
    tp_log_message(TP_LOG_WARNING, "x");
    tp_log_set_callback(keep, NULL);
}

static void a_callback_that_logs_every_line_ends(void **state) {
    (void)state;
    char *errors = capture_stderr(log_through_an_echoing_callback, "an echoing callback");
    /* The callback gets the line and its own echo; the echo's echo goes to standard error. */
    assert_int_equal(received.count, 2);
    assert_line(0, TP_LOG_WARNING, "x");
    assert_line(1, TP_LOG_WARNING, "echo: x");
    assert_string_equal(errors, "tensorplug warning: echo: echo: x\n");
    free(errors);
}

/* Lines from several threads, each whole, none lost, while a callback changes the level. */
enum { THREADS = 4, LINES_PER_THREAD = 500 };

static atomic_int counted, torn, not_started;

static void counts_and_toggles(tp_log_level_t level, const char *line, void *user_data) {
    (void)level;
    (void)user_data;
    if (strncmp(line, "thread ", 7) != 0 || strstr(line, " line ") == NULL)
        atomic_fetch_add(&torn, 1);
    atomic_fetch_add(&counted, 1);
    tp_log_set_level(TP_LOG_INFO); /* re-entrant, and racing with every other thread's */
}

static void *log_lines(void *arg) {
    int thread = (int)(intptr_t)arg;
    for (int i = 0; i < LINES_PER_THREAD; i++)
        tp_log_message(TP_LOG_INFO, "thread %d line %d", thread, i);
    return NULL;
}

static void log_from_several_threads(void) {
    tp_log_set_callback(counts_and_toggles, NULL);
    pthread_t threads[THREADS];
    bool started[THREADS];
    for (int t = 0; t < THREADS; t++) {
        started[t] = pthread_create(&threads[t], NULL, log_lines, (void *)(intptr_t)t) == 0;
        if (!started[t]) atomic_fetch_add(&not_started, 1);
    }
    for (int t = 0; t < THREADS; t++)
        if (started[t]) pthread_join(threads[t], NULL);
    tp_log_set_callback(keep, NULL);
}

static void threads_log_through_a_reentrant_callback(void **state) {
    (void)state;
    atomic_store(&counted, 0);
    run_with_deadline(log_from_several_threads, "threads logging through a callback");
    assert_int_equal(atomic_load(&not_started), 0);
    assert_int_equal(atomic_load(&torn), 0);
    assert_int_equal(atomic_load(&counted), THREADS * LINES_PER_THREAD);
}

/* ---- Escaping ------------------------------------------------------------------------------ */

static void assert_plain(const char *line) {
    for (const unsigned char *c = (const unsigned char *)line; *c != '\0'; c++)
        if (*c < 0x20 || *c == 0x7F) fail_msg("raw control byte 0x%02X in '%s'", *c, line);
}

static void control_bytes_are_escaped_where_lines_are_made(void **state) {
    (void)state;
    tp_log_message(TP_LOG_WARNING, "a\nb\r\x1b[31mc\td\x7f" "e\x01");
    assert_line(0, TP_LOG_WARNING, "a\\x0Ab\\x0D\\x1B[31mc\\x09d\\x7Fe\\x01");
    /* UTF-8 text stays; C1 controls (CSI as U+009B), line separators and bidirectional
     * overrides, well formed but moving text, are escaped, as are bytes that are not UTF-8. */
    tp_log_message(TP_LOG_INFO, "/home/jos\xC3\xA9/\xE6\x8F\x92\xE4\xBB\xB6 \xC2\x9B" "2J "
                                "\xE2\x80\xA8 \xE2\x80\xAE" "evil \xFF\xC0\xAF \xED\xA0\x80");
    assert_line(1, TP_LOG_INFO,
                "/home/jos\xC3\xA9/\xE6\x8F\x92\xE4\xBB\xB6 \\xC2\\x9B2J \\xE2\\x80\\xA8 "
                "\\xE2\\x80\\xAEevil \\xFF\\xC0\\xAF \\xED\\xA0\\x80");
}

static void log_a_hostile_line(void) {
    tp_log_set_callback(NULL, NULL);
    tp_log_message(TP_LOG_ERROR, "%s", "path /tmp/a\nb\x1b[2J");
    tp_log_set_callback(keep, NULL);
}

static void standard_error_gets_the_escaped_line(void **state) {
    (void)state;
    char *errors = capture_stderr(log_a_hostile_line, "logging to standard error");
    assert_string_equal(errors, "tensorplug error: path /tmp/a\\x0Ab\\x1B[2J\n");
    free(errors);
}

static void printable_copy_stops_before_what_does_not_fit(void **state) {
    (void)state;
    char out[8];
    memset(out, 'z', sizeof out);
    /* "ab" then an escape of four bytes: 2 + 4 + NUL fits in 7, the next escape does not. */
    assert_int_equal(tp_printable_copy(out, 7, "ab\n\n"), 6);
    assert_string_equal(out, "ab\\x0A");
    assert_int_equal(out[7], 'z');
    /* A UTF-8 character is kept whole or not at all. */
    assert_int_equal(tp_printable_copy(out, 4, "a\xC3\xA9"), 3);
    assert_string_equal(out, "a\xC3\xA9");
    assert_int_equal(tp_printable_copy(out, 3, "a\xC3\xA9"), 1);
    assert_string_equal(out, "a");
    /* A sequence cut by the end of the text is not UTF-8: each byte is escaped alone, and the
     * second escape does not fit. */
    assert_int_equal(tp_printable_copy(out, sizeof out, "\xE2\x80"), 4);
    assert_string_equal(out, "\\xE2");
    assert_int_equal(tp_printable_copy(out, 1, "abc"), 0);
    assert_string_equal(out, "");
}

/* Copies the hostile plug-in to `folder`/`name`, loadable. */
static void copy_hostile_plugin(const char *folder, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/%s", folder, name);
    FILE *from = fopen(TP_HOSTILE_TEXT_PLUGIN, "rb");
    assert_non_null(from);
    FILE *to = fopen(path, "wb");
    assert_non_null(to);
    char buffer[8192];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, from)) > 0)
        assert_int_equal(fwrite(buffer, 1, got, to), got);
    fclose(from);
    assert_int_equal(fclose(to), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

/* A plug-in's log line and its init's failure are escaped; a file whose name holds control
 * bytes is not loaded at all, and the line that says so shows its name escaped. */
static void plugin_text_and_file_names_are_escaped(void **state) {
    (void)state;
    char folder[] = "/tmp/tp_test_log_plugins_XXXXXX";
    assert_non_null(mkdtemp(folder));
    char evil[256], plain[256];
    copy_hostile_plugin(folder, "evil\n\x1b[2Jname.so", evil, sizeof evil);
    copy_hostile_plugin(folder, "hostile.so", plain, sizeof plain);

    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = folder;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    /* What `tensorplug plugins` prints is escaped as well: the refusal the record keeps. */
    bool listed = false;
    for (size_t i = 0; i < tp_plugin_count(context); i++) {
        tp_plugin_info_t info = {.struct_size = sizeof info};
        assert_ok(tp_plugin_get(context, i, &info));
        assert_plain(info.path);
        assert_plain(info.reason);
        listed = listed || strstr(info.reason, "no driver\\x0D\\x1B[2J") != NULL;
    }
    assert_true(listed);
    tp_context_destroy(context);
    unlink(evil);
    unlink(plain);
    rmdir(folder);

    for (size_t i = 0; i < received.count; i++) assert_plain(received.lines[i]);
    if (received.count < 3) fail_msg("%zu lines logged, not 3", received.count);
    char expected[512];
    snprintf(expected, sizeof expected, "skipped plug-in file %s/evil\\x0A\\x1B[2Jname.so: its "
             "name holds bytes that are not printable", folder);
    assert_line(0, TP_LOG_WARNING, expected);
    assert_line(1, TP_LOG_WARNING,
                "[hostile_text] ready\\x0Atensorplug error: forged\\x1B]0;title\\x07");
    if (strstr(received.lines[2], plain) == NULL ||
        strstr(received.lines[2], "no driver\\x0D\\x1B[2J\\x1B[31mcleared") == NULL)
        fail_msg("refusal line lacks the path or the escaped message: '%s'", received.lines[2]);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, reset, restore)
    const struct CMUnitTest tests[] = {
        TEST(a_callback_may_set_the_level_and_log),
        TEST(a_callback_may_replace_itself),
        TEST(a_callback_that_logs_every_line_ends),
        TEST(threads_log_through_a_reentrant_callback),
        TEST(control_bytes_are_escaped_where_lines_are_made),
        TEST(standard_error_gets_the_escaped_line),
        TEST(printable_copy_stops_before_what_does_not_fit),
        TEST(plugin_text_and_file_names_are_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
