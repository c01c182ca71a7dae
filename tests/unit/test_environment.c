/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime's environment variables: a malformed value gets exactly one warning line naming
 * the variable and the value, and the default is used; a good value gets none. Variables are
 * read once per process, so each case runs this program again as a child ("test_environment
 * run") with its own environment, and judges what the child printed. */
#define _GNU_SOURCE /* environ */
#include "test_support.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/status.h"
#include "memory/memory_config.h"

/* OpenBLAS's own count, which TP_CPU_THREADS sets when it is valid. */
int openblas_get_num_threads(void);

/* ---- The child: two contexts, one op each, reporting what a user would notice ------------ */

static int fail_child(tp_status_t *status) {
    printf("error: %s\n", tp_status_message(status));
    tp_status_free(status);
    return EXIT_FAILURE;
}

static tp_status_t *use_a_context(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_KERNEL_PLUGIN_DIR; /* two ACC devices, with Relu */
    options.skip_installed_plugins = true;
    tp_context_t *context;
    TP_RETURN_IF_ERROR(tp_context_create(&options, &context));
    float values[2] = {-1.0f, 2.0f}, out[2] = {0};
    tp_tensor_t *x = NULL, *y = NULL;
    tp_status_t *error = tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2), values, sizeof values,
                                          &x);
    if (error == NULL) error = tp_relu(context, x, &y);
    if (error == NULL) error = tp_tensor_read(y, out, sizeof out);
    size_t accs = 0;
    if (error == NULL) error = tp_logical_device_count(context, "ACC", &accs);
    if (error == NULL) printf("relu %g %g, %zu ACC devices\n", out[0], out[1], accs);
    tp_tensor_release(y);
    tp_tensor_release(x);
    tp_context_destroy(context);
    return error;
}

/* The ACC devices of a context whose plug-ins come from TP_PLUGIN_PATH alone. */
static tp_status_t *count_devices_on_the_search_path(size_t *out_count) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    TP_RETURN_IF_ERROR(tp_context_create(&options, &context));
    *out_count = (size_t)tp_physical_device_count(context, "ACC");
    tp_context_destroy(context);
    return NULL;
}

static int run_child(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("secure %lu\n", getauxval(AT_SECURE));
    int blas_threads = openblas_get_num_threads();
    for (int i = 0; i < 2; i++) {
        tp_status_t *error = use_a_context();
        if (error != NULL) return fail_child(error);
    }
    size_t on_path = 0;
    tp_status_t *error = count_devices_on_the_search_path(&on_path);
    if (error != NULL) return fail_child(error);
    printf("%zu ACC devices from TP_PLUGIN_PATH\n", on_path);
    tp_log_message(TP_LOG_INFO, "an info line");
    tp_log_message(TP_LOG_DEBUG, "a debug line");
    tp_growth_t growth = tp_memory_config_forced_growth();
    printf("forced growth %s\n", growth == TP_GROWTH_ON    ? "on"
                                 : growth == TP_GROWTH_OFF ? "off"
                                                           : "default");
    printf("blas threads %s\n",
           openblas_get_num_threads() == blas_threads ? "as they were" : "changed");
    return EXIT_SUCCESS;
}

/* ---- The parent: runs the child and reads what it printed -------------------------------- */

typedef struct {
    char *out, *err;
} child_output_t;

static char *read_all(int fd) {
    off_t size = lseek(fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(pread(fd, text, (size_t)size, 0), size);
    close(fd);
    return text;
}

static int scratch_file(void) {
    char path[] = "/tmp/tp_test_environment_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    return fd;
}

/* Runs `program` as the child with the environment of this process, less every TP_ variable,
 * plus `settings` ("NAME=VALUE", NULL-terminated). */
static child_output_t run_program(const char *program, const char *const *settings) {
    size_t inherited = 0, given = 0;
    while (environ[inherited] != NULL) inherited++;
    while (settings[given] != NULL) given++;
    char **env = calloc(inherited + given + 1, sizeof *env);
    assert_non_null(env);
    size_t used = 0;
    for (size_t i = 0; i < inherited; i++)
        if (strncmp(environ[i], "TP_", 3) != 0) env[used++] = environ[i];
    for (size_t i = 0; i < given; i++) env[used++] = (char *)settings[i];
    env[used] = NULL;

    int out = scratch_file(), err = scratch_file();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
    char *argv[] = {"test_environment", "run", NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, program, &actions, NULL, argv, env), 0);
    posix_spawn_file_actions_destroy(&actions);
    free(env);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child_output_t output = {read_all(out), read_all(err)};
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the child failed (status %d)\nstdout:\n%s\nstderr:\n%s", status, output.out,
                 output.err);
    return output;
}

static child_output_t run(const char *const *settings) {
    return run_program("/proc/self/exe", settings);
}

static void free_output(child_output_t *output) {
    free(output->out);
    free(output->err);
}

static size_t count_lines_with(const char *text, const char *fragment) {
    size_t count = 0;
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t length = end != NULL ? (size_t)(end - line) : strlen(line);
        const char *found = strstr(line, fragment);
        if (found != NULL && found < line + length) count++;
        line += length + (end != NULL);
    }
    return count;
}

/* `line` appears in `text` as a whole line, and no other line names `variable`. */
static void assert_only_warning(const child_output_t *output, const char *variable,
                                const char *line) {
    char whole[1024];
    snprintf(whole, sizeof whole, "%s\n", line);
    if (strstr(output->err, whole) == NULL)
        fail_msg("no line '%s' in stderr:\n%s", line, output->err);
    size_t naming = count_lines_with(output->err, variable);
    if (naming != 1) fail_msg("%zu lines name %s:\n%s", naming, variable, output->err);
}

static void assert_has(const char *text, const char *fragment) {
    if (strstr(text, fragment) == NULL) fail_msg("'%s' missing from:\n%s", fragment, text);
}

static void assert_lacks(const char *text, const char *fragment) {
    if (strstr(text, fragment) != NULL) fail_msg("'%s' unexpected in:\n%s", fragment, text);
}

/* What the child prints when every variable takes its default. */
static void assert_defaults(const child_output_t *output) {
    assert_int_equal(count_lines_with(output->out, "relu 0 2, 2 ACC devices"), 2);
    assert_has(output->out, "0 ACC devices from TP_PLUGIN_PATH\n");
    assert_has(output->out, "forced growth default\n");
    assert_has(output->out, "blas threads as they were\n");
    assert_has(output->err, "tensorplug info: an info line\n");
    assert_lacks(output->err, "a debug line");
    assert_lacks(output->err, "Executing op");
}

static void nothing_set_warns_about_nothing(void **state) {
    (void)state;
    const char *settings[] = {"TP_LOG_LEVEL=", "TP_VISIBLE_DEVICES=", NULL};
    child_output_t output = run(settings);
    assert_defaults(&output);
    assert_lacks(output.err, "warning");
    free_output(&output);
}

static void a_malformed_log_level(void **state) {
    (void)state;
    const char *settings[] = {"TP_LOG_LEVEL=loud", NULL};
    child_output_t output = run(settings);
    assert_only_warning(&output, "TP_LOG_LEVEL",
                        "tensorplug warning: TP_LOG_LEVEL='loud' is not one of debug, info, "
                        "warning, error; using the default, info");
    assert_defaults(&output);
    free_output(&output);
}

static void a_malformed_placement_log(void **state) {
    (void)state;
    const char *settings[] = {"TP_LOG_DEVICE_PLACEMENT=yes please", NULL};
    child_output_t output = run(settings);
    assert_only_warning(&output, "TP_LOG_DEVICE_PLACEMENT",
                        "tensorplug warning: TP_LOG_DEVICE_PLACEMENT='yes please' is not one of "
                        "1, true, 0, false; using the default, off");
    assert_defaults(&output);
    free_output(&output);

    const char *on[] = {"TP_LOG_DEVICE_PLACEMENT=TRUE", NULL};
    output = run(on);
    assert_int_equal(count_lines_with(output.err, "Executing op Relu in device "
                                                  "/job:localhost/replica:0/task:0/device:ACC:0"),
                     2);
    assert_lacks(output.err, "warning");
    free_output(&output);
}

static void a_malformed_visible_device_list(void **state) {
    (void)state;
    const char *settings[] = {"TP_VISIBLE_DEVICES=ACC:x", NULL};
    child_output_t output = run(settings);
    assert_only_warning(&output, "TP_VISIBLE_DEVICES",
                        "tensorplug warning: TP_VISIBLE_DEVICES='ACC:x' is refused "
                        "(tp_context_set_visible_devices: invalid device name 'ACC:x': device id "
                        "'x' is not a non-negative integer); every device stays visible");
    assert_defaults(&output);
    free_output(&output);

    const char *one[] = {"TP_VISIBLE_DEVICES=ACC:1", "TP_PLUGIN_PATH=" TP_KERNEL_PLUGIN_DIR, NULL};
    output = run(one);
    assert_int_equal(count_lines_with(output.out, "relu 0 2, 1 ACC devices"), 2);
    assert_has(output.out, "2 ACC devices from TP_PLUGIN_PATH\n"); /* physical: all listed */
    assert_lacks(output.err, "warning");
    free_output(&output);
}

static void a_malformed_forced_growth(void **state) {
    (void)state;
    const char *settings[] = {"TP_FORCE_ALLOW_GROWTH=sometimes", NULL};
    child_output_t output = run(settings);
    assert_only_warning(&output, "TP_FORCE_ALLOW_GROWTH",
                        "tensorplug warning: TP_FORCE_ALLOW_GROWTH='sometimes' is not one of "
                        "true, false; using the default, what the program set for each device");
    assert_defaults(&output);
    free_output(&output);
}

static void a_malformed_cpu_thread_count(void **state) {
    (void)state;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char want[256];
    snprintf(want, sizeof want,
             "tensorplug warning: [cpu] TP_CPU_THREADS='0' is not a whole number above 0; "
             "using the default, every core (%ld)",
             cores < 1 ? 1 : cores > 16 ? 16 : cores);
    const char *settings[] = {"TP_CPU_THREADS=0", NULL};
    child_output_t output = run(settings);
    assert_only_warning(&output, "TP_CPU_THREADS", want);
    assert_defaults(&output);
    free_output(&output);
}

/* Values with control bytes are shown escaped, on one line. */
static void a_hostile_value_is_escaped(void **state) {
    (void)state;
    const char *settings[] = {"TP_LOG_LEVEL=\x1b[2J\ninfo", NULL};
    child_output_t output = run(settings);
    assert_only_warning(&output, "TP_LOG_LEVEL",
                        "tensorplug warning: TP_LOG_LEVEL='\\x1B[2J\\x0Ainfo' is not one of "
                        "debug, info, warning, error; using the default, info");
    free_output(&output);
}

static void every_variable_malformed_at_once(void **state) {
    (void)state;
    const char *settings[] = {"TP_LOG_LEVEL=0", "TP_LOG_DEVICE_PLACEMENT=2",
                              "TP_VISIBLE_DEVICES=,,ACC:-1", "TP_FORCE_ALLOW_GROWTH=yes",
                              "TP_CPU_THREADS=two", NULL};
    child_output_t output = run(settings);
    assert_int_equal(count_lines_with(output.err, "tensorplug warning:"), 5);
    assert_int_equal(count_lines_with(output.err, "TP_LOG_LEVEL='0'"), 1);
    assert_int_equal(count_lines_with(output.err, "TP_LOG_DEVICE_PLACEMENT='2'"), 1);
    assert_int_equal(count_lines_with(output.err, "TP_VISIBLE_DEVICES=',,ACC:-1'"), 1);
    assert_int_equal(count_lines_with(output.err, "TP_FORCE_ALLOW_GROWTH='yes'"), 1);
    assert_int_equal(count_lines_with(output.err, "TP_CPU_THREADS='two'"), 1);
    assert_defaults(&output);
    free_output(&output);
}

/* Good values, in any case, are taken without a word. */
static void good_values_are_taken_silently(void **state) {
    (void)state;
    const char *settings[] = {"TP_LOG_LEVEL=DEBUG", "TP_FORCE_ALLOW_GROWTH=true",
                              "TP_CPU_THREADS=1", "TP_LOG_DEVICE_PLACEMENT=0", NULL};
    child_output_t output = run(settings);
    assert_lacks(output.err, "warning");
    assert_has(output.err, "tensorplug debug: a debug line\n");
    assert_has(output.out, "forced growth on\n");
    assert_lacks(output.err, "Executing op");
    free_output(&output);
}

/* A set-group-ID program, run by a user of another group, must ignore every TP_ variable:
 * TP_PLUGIN_PATH would otherwise choose code that runs with the program's privileges. The
 * child runs from a copy of this program that is set-group-ID to another group, which needs
 * root to make. */
static const char *const every_variable[] = {
    "TP_PLUGIN_PATH=" TP_KERNEL_PLUGIN_DIR, "TP_LOG_LEVEL=loud", "TP_VISIBLE_DEVICES=ACC:1",
    "TP_FORCE_ALLOW_GROWTH=true", "TP_CPU_THREADS=zero", "TP_LOG_DEVICE_PLACEMENT=1", NULL};

static void the_search_path_is_read_when_not_privileged(void **state) {
    (void)state;
    const char *settings[] = {"TP_PLUGIN_PATH=" TP_KERNEL_PLUGIN_DIR, NULL};
    child_output_t output = run(settings);
    assert_has(output.out, "2 ACC devices from TP_PLUGIN_PATH\n");
    free_output(&output);
}

static void a_privileged_program_ignores_the_environment(void **state) {
    (void)state;
    if (geteuid() != 0) skip(); /* only root can make the set-group-ID copy */
    char folder[] = "/tmp/tp_test_environment_setgid_XXXXXX";
    assert_non_null(mkdtemp(folder));
    char copy[128];
    snprintf(copy, sizeof copy, "%s/test_environment", folder);
    int from = open("/proc/self/exe", O_RDONLY), to = open(copy, O_WRONLY | O_CREAT, 0700);
    assert_true(from >= 0 && to >= 0);
    char buffer[65536];
    ssize_t got;
    while ((got = read(from, buffer, sizeof buffer)) > 0)
        assert_int_equal(write(to, buffer, (size_t)got), got);
    close(from);
    assert_int_equal(close(to), 0);
    bool made = chown(copy, 0, 65534) == 0 && chmod(copy, 02755) == 0;
    child_output_t output = {NULL, NULL};
    if (made) output = run_program(copy, every_variable);
    unlink(copy);
    rmdir(folder);
    if (!made) skip();
    if (strstr(output.out, "secure 0\n") != NULL) {
        free_output(&output); /* a file system mounted nosuid: no privilege to test */
        skip();
    }
    assert_has(output.out, "secure 1\n");
    /* Not a word about any variable, and each default holds; the search path the program
     * sets itself is its own choice, and kept. */
    assert_lacks(output.err, "warning");
    assert_defaults(&output);
    static const char *const names[] = {"TP_PLUGIN_PATH", "TP_LOG_LEVEL", "TP_VISIBLE_DEVICES",
                                        "TP_FORCE_ALLOW_GROWTH", "TP_CPU_THREADS",
                                        "TP_LOG_DEVICE_PLACEMENT"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_int_equal(count_lines_with(output.err, names[i]), 0);
    assert_has(output.out, "0 ACC devices from TP_PLUGIN_PATH\n");
    assert_has(output.out, "forced growth default\n");
    assert_has(output.out, "blas threads as they were\n");
    assert_has(output.err, "tensorplug info: an info line\n");
    assert_lacks(output.err, "a debug line");
    assert_lacks(output.err, "Executing op");
    free_output(&output);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "run") == 0) return run_child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nothing_set_warns_about_nothing),
        cmocka_unit_test(a_malformed_log_level),
        cmocka_unit_test(a_malformed_placement_log),
        cmocka_unit_test(a_malformed_visible_device_list),
        cmocka_unit_test(a_malformed_forced_growth),
        cmocka_unit_test(a_malformed_cpu_thread_count),
        cmocka_unit_test(a_hostile_value_is_escaped),
        cmocka_unit_test(every_variable_malformed_at_once),
        cmocka_unit_test(good_values_are_taken_silently),
        cmocka_unit_test(the_search_path_is_read_when_not_privileged),
        cmocka_unit_test(a_privileged_program_ignores_the_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
