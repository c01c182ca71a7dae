/* SPDX-License-Identifier: Apache-2.0 */
/* The profiler's API, its JSON strings, and recording while eight threads launch at once.
 * What a profile holds, read with a real JSON parser, is checked by tests/profiler/. */
#include "test_support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "profiler/trace_json.h"

static int setup(void **state) {
    tp_log_set_level(TP_LOG_ERROR);
    return create_context_state(state, NULL);
}

static int teardown(void **state) {
    tp_context_destroy(*state);
    return 0;
}

/* A path in a fresh folder of its own, and the folder, removed by remove_profile. */
static void profile_path(char *path, size_t capacity) {
    char folder[] = "/tmp/tp-profiler-test.XXXXXX";
    assert_non_null(mkdtemp(folder));
    snprintf(path, capacity, "%s/profile.json", folder);
}

static void remove_profile(const char *path) {
    unlink(path);
    char folder[512];
    snprintf(folder, sizeof folder, "%s", path);
    *strrchr(folder, '/') = '\0';
    rmdir(folder);
}

static char *read_text(const char *path) {
    FILE *file = fopen(path, "r");
    assert_non_null(file);
    tp_strbuf_t text = TP_STRBUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, file)) > 0) tp_strbuf_append(&text, chunk, n);
    fclose(file);
    char *taken = tp_strbuf_take(&text);
    assert_non_null(taken);
    return taken;
}

/* Lines holding `fragment`: the writer puts one event on each line. */
static int count_lines(const char *text, const char *fragment) {
    int count = 0;
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t length = end != NULL ? (size_t)(end - line) : strlen(line);
        const char *found = strstr(line, fragment);
        if (found != NULL && found < line + length) count++;
        line = end != NULL ? end + 1 : NULL;
    }
    return count;
}

static void escaped_as(const char *text, const char *expected) {
    tp_strbuf_t out = TP_STRBUF_INIT;
    tp_json_append_string(&out, text);
    assert_string_equal(tp_strbuf_text(&out), expected);
    tp_strbuf_free(&out);
}

static void json_strings_are_escaped(void **state) {
    (void)state;
    escaped_as("Relu", "\"Relu\"");
    escaped_as("", "\"\"");
    escaped_as("say \"hi\" \\ bye", "\"say \\\"hi\\\" \\\\ bye\"");
    escaped_as("a\nb\tc\rd\x01\x1f\x7f", "\"a\\nb\\tc\\rd\\u0001\\u001f\\u007f\"");
    /* Well-formed UTF-8 is kept; U+2028 and U+2029 end lines in JavaScript. */
    escaped_as("caf\xc3\xa9 \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
    escaped_as("\xe2\x80\xa8\xe2\x80\xa9", "\"\\u2028\\u2029\"");
    /* Bytes that are not UTF-8 become U+FFFD, one each: a stray byte, an overlong form, a
     * surrogate, a sequence cut short, and a code point past U+10FFFF. */
    escaped_as("\xff", "\"\\ufffd\"");
    escaped_as("\xc0\xaf", "\"\\ufffd\\ufffd\"");
    escaped_as("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
    escaped_as("\xe2\x82x", "\"\\ufffd\\ufffdx\"");
    escaped_as("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

static void misuse_gets_a_status_that_says_what(void **state) {
    tp_context_t *context = *state;
    char path[512];
    profile_path(path, sizeof path);
    assert_error(tp_profiler_start(context, NULL), TP_INVALID_ARGUMENT, "path");
    assert_error(tp_profiler_start(context, ""), TP_INVALID_ARGUMENT, "the path is empty");
    assert_error(tp_profiler_stop(context), TP_FAILED_PRECONDITION,
                 "no profile is being recorded");
    assert_error(tp_profiler_start(context, "/nonexistent-folder/profile.json"), TP_NOT_FOUND,
                 "cannot write the profile to '/nonexistent-folder/profile.json': No such file "
                 "or directory");
    assert_error(tp_profiler_start(context, "/tmp"), TP_INVALID_ARGUMENT,
                 "cannot write the profile to '/tmp': Is a directory");

    assert_ok(tp_profiler_start(context, path));
    char message[600];
    snprintf(message, sizeof message, "a profile is being recorded already, to '%s'", path);
    assert_error(tp_profiler_start(context, "/tmp/other.json"), TP_FAILED_PRECONDITION,
                 message);
    assert_int_equal(access("/tmp/other.json", F_OK), -1);
    assert_ok(tp_profiler_stop(context));
    assert_error(tp_profiler_stop(context), TP_FAILED_PRECONDITION,
                 "no profile is being recorded");
    /* Without a context nothing is waited for: a profile of no work is still a trace. */
    assert_ok(tp_profiler_start(NULL, path));
    assert_ok(tp_profiler_stop(NULL));
    char *text = read_text(path);
    assert_non_null(strstr(text, "{\"traceEvents\":["));
    assert_non_null(strstr(text, "\"producer\":\"tensorplug "));
    free(text);
    remove_profile(path);
}

/* The write fails when the data reaches the device; the device itself is left alone. */
static void a_failed_write_names_the_path_and_reason(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_profiler_start(context, "/dev/full"));
    assert_error(tp_profiler_stop(context), TP_RESOURCE_EXHAUSTED,
                 "cannot write the profile to '/dev/full': No space left on device");
    struct stat status;
    assert_int_equal(stat("/dev/full", &status), 0);
    assert_true(S_ISCHR(status.st_mode));
}

static void relus(tp_context_t *context, int count) {
    float value = -1.0f;
    tp_tensor_t *x = floats(context, TP_SHAPE(1), &value);
    for (int i = 0; i < count; i++) {
        tp_tensor_t *y;
        assert_ok(tp_relu(context, x, &y));
        tp_tensor_release(y);
    }
    tp_tensor_release(x);
}

/* Each profile holds its own ops: none from before it started, none from an earlier one. */
static void profiles_hold_what_ran_while_they_recorded(void **state) {
    tp_context_t *context = *state;
    char first[512], second[512];
    profile_path(first, sizeof first);
    profile_path(second, sizeof second);
    relus(context, 2);
    assert_ok(tp_profiler_start(context, first));
    relus(context, 3);
    assert_ok(tp_profiler_stop(context));
    relus(context, 4);
    assert_ok(tp_profiler_start(context, second));
    relus(context, 5);
    assert_ok(tp_profiler_stop(context));
    char *text = read_text(first);
    assert_int_equal(count_lines(text, "\"cat\":\"op\",\"name\":\"Relu\""), 3);
    assert_int_equal(count_lines(text, "\"cat\":\"launch\",\"name\":\"Relu\""), 3);
    free(text);
    text = read_text(second);
    assert_int_equal(count_lines(text, "\"cat\":\"op\",\"name\":\"Relu\""), 5);
    free(text);
    remove_profile(first);
    remove_profile(second);
}

/* An asynchronous device whose plug-in has no event_work_times (as none built before ABI 1.6
 * has): its launches, when the host queued them, are its stream's track, and nothing claims to
 * be device time. */
static void a_device_without_device_times_shows_its_enqueue_times(void **state) {
    (void)state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_QUEUED_NO_CALLBACK_PLUGIN;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    char path[512];
    profile_path(path, sizeof path);
    float value = -1.0f;
    tp_tensor_t *x = floats(context, TP_SHAPE(1), &value), *y;
    assert_ok(tp_profiler_start(context, path));
    assert_ok(tp_relu(context, x, &y));
    assert_ok(tp_tensor_wait(y));
    assert_ok(tp_profiler_stop(context));
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:QDEV:0");
    tp_tensor_release(y);
    tp_tensor_release(x);
    tp_context_destroy(context);

    char *text = read_text(path);
    const char *track = strstr(text, "\"args\":{\"name\":\"stream (host enqueue time)\"}");
    assert_non_null(track);
    while (track > text && track[-1] != '\n') track--;
    int pid = 0, tid = 0;
    assert_int_equal(sscanf(track, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d",
                            &pid, &tid),
                     2);
    char launch[128];
    snprintf(launch, sizeof launch, "\"cat\":\"launch\",\"name\":\"Relu\",\"pid\":%d,\"tid\":%d,",
             pid, tid);
    assert_int_equal(count_lines(text, launch), 1);
    assert_int_equal(count_lines(text, "\"cat\":\"device\""), 0);
    assert_int_equal(count_lines(text, "(device time)"), 0);
    free(text);
    remove_profile(path);
}

enum { THREADS = 8, OPS_PER_THREAD = 250 };

typedef struct {
    tp_context_t *context;
    tp_tensor_t *x;
    pthread_barrier_t *start;
    tp_status_t *error;
} worker_t;

static void *add_many(void *arg) {
    worker_t *worker = arg;
    pthread_barrier_wait(worker->start);
    for (int i = 0; i < OPS_PER_THREAD && worker->error == NULL; i++) {
        tp_tensor_t *y;
        worker->error = tp_add(worker->context, worker->x, worker->x, &y);
        if (worker->error == NULL) tp_tensor_release(y);
    }
    return NULL;
}

/* Every op of eight threads launching at once is in the profile, each on its thread's track. */
static void eight_threads_launching_at_once_lose_nothing(void **state) {
    tp_context_t *context = *state;
    char path[512];
    profile_path(path, sizeof path);
    float value = 2.0f;
    tp_tensor_t *x = floats(context, TP_SHAPE(1), &value);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    worker_t workers[THREADS];
    pthread_t threads[THREADS];
    assert_ok(tp_profiler_start(context, path));
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker_t){context, x, &start, NULL};
        assert_int_equal(pthread_create(&threads[t], NULL, add_many, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        assert_ok(workers[t].error);
    }
    assert_ok(tp_profiler_stop(context));
    pthread_barrier_destroy(&start);
    tp_tensor_release(x);

    char *text = read_text(path);
    assert_int_equal(count_lines(text, "\"cat\":\"op\",\"name\":\"Add\""), THREADS * OPS_PER_THREAD);
    assert_int_equal(count_lines(text, "\"cat\":\"launch\",\"name\":\"Add\""),
                     THREADS * OPS_PER_THREAD);
    /* Host threads are process 1; each worker has a track there of its own. */
    bool seen[64] = {false};
    int tracks = 0;
    for (const char *line = strstr(text, "\"cat\":\"op\",\"name\":\"Add\""); line != NULL;
         line = strstr(line + 1, "\"cat\":\"op\",\"name\":\"Add\"")) {
        int pid = 0, tid = 0;
        const char *at = strstr(line, "\"pid\":");
        assert_non_null(at);
        assert_int_equal(sscanf(at, "\"pid\":%d,\"tid\":%d", &pid, &tid), 2);
        assert_int_equal(pid, 1);
        assert_in_range(tid, 1, 63);
        if (!seen[tid]) tracks++;
        seen[tid] = true;
    }
    assert_int_equal(tracks, THREADS);
    /* The main thread ran nothing while the profile recorded: no track of its own. */
    assert_int_equal(count_lines(text, "\"name\":\"thread_name\",\"pid\":1,"), THREADS);
    free(text);
    remove_profile(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_strings_are_escaped),
        cmocka_unit_test_setup_teardown(misuse_gets_a_status_that_says_what, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_write_names_the_path_and_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(profiles_hold_what_ran_while_they_recorded, setup,
                                        teardown),
        cmocka_unit_test(a_device_without_device_times_shows_its_enqueue_times),
        cmocka_unit_test_setup_teardown(eight_threads_launching_at_once_lose_nothing, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
