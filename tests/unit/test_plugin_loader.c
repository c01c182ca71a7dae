/* Finding, checking and refusing plug-ins; the devices of those that load. Uses the test
 * plug-ins built in tests/plugins/ (TP_TEST_PLUGIN_DIR). */
#include "test_support.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device_support.h"

/* ---- Log capture ------------------------------------------------------------------------- */

static char captured_log[16384];

static void capture_log(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    size_t used = strlen(captured_log);
    snprintf(captured_log + used, sizeof captured_log - used, "%d %s\n", (int)level, line);
}

static size_t count_occurrences(const char *text, const char *fragment) {
    size_t count = 0;
    for (const char *at = strstr(text, fragment); at != NULL; at = strstr(at + 1, fragment))
        count++;
    return count;
}

/* ---- Helpers ----------------------------------------------------------------------------- */

static tp_context_t *context_with_path(const char *path) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = path;
    options.skip_installed_plugins = true;
    tp_context_t *context = NULL;
    assert_ok(tp_context_create(&options, &context));
    return context;
}

/* The info of the plug-in whose path ends with `file`; fails the test if there is none. */
static tp_plugin_info_t plugin_named(const tp_context_t *context, const char *file) {
    for (size_t i = 0; i < tp_plugin_count(context); i++) {
        tp_plugin_info_t info = {.struct_size = sizeof info};
        assert_ok(tp_plugin_get(context, i, &info));
        size_t path_length = strlen(info.path), file_length = strlen(file);
        if (path_length >= file_length && strcmp(info.path + path_length - file_length, file) == 0)
            return info;
    }
    print_error("no plug-in %s\n", file);
    fail();
    return (tp_plugin_info_t){0};
}

static void assert_refused(const tp_context_t *context, const char *file, const char *reason) {
    tp_plugin_info_t info = plugin_named(context, file);
    if (info.loaded || strstr(info.reason, reason) == NULL) {
        print_error("%s: loaded=%d reason='%s', wanted refusal containing '%s'\n", file,
                    info.loaded, info.reason, reason);
        fail();
    }
}

static char *list_devices(const tp_context_t *context, const char *type) {
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    assert_non_null(out);
    assert_ok(tp_list_physical_devices(context, type, out));
    fclose(out);
    return text;
}

/* The outcome every arrangement of the test plug-ins must give. */
static void assert_standard_outcome(const tp_context_t *context) {
    assert_refused(context, "no_entry.so", "it exports no entry point 'tp_plugin_entry'");
    assert_refused(context, "wrong_major.so",
                   "it was built for plug-in ABI 2.0; this runtime speaks ABI 1.4, and major "
                   "versions must match");
    assert_refused(context, "init_fails.so",
                   "its init failed: the test device's driver is not installed");
    assert_refused(context, "cpu_twin.so",
                   "device type 'cpu' is already registered by the built-in plug-in cpu");
    assert_refused(context, "bad_type_name.so",
                   "invalid registration: device type name '9 bad/name' is invalid");

    tp_plugin_info_t good = plugin_named(context, "good.so");
    assert_true(good.loaded);
    assert_string_equal(good.reason, "");
    assert_string_equal(good.name, "good");
    assert_string_equal(good.version, "2.3.4");
    assert_int_equal(good.abi_major, 1);
    assert_int_equal(good.abi_minor, TP_ABI_MINOR);
    assert_string_equal(good.device_types, "XPU");
    assert_int_equal(good.num_ops, 1);
    assert_int_equal(good.num_kernels, 0);
    assert_false(good.has_graph_pass);

    tp_plugin_info_t old = plugin_named(context, "old_minor.so");
    assert_true(old.loaded);
    assert_int_equal(old.abi_minor, 0);
    assert_string_equal(old.device_types, "OLDDEV");

    /* Nothing a refused plug-in registered is visible. */
    assert_int_equal(tp_physical_device_count(context, "FAILDEV"), 0);
    assert_int_equal(tp_physical_device_count(context, "CPU"), 1);
    assert_int_equal(tp_physical_device_count(context, "xpu"), 2);
    assert_int_equal(tp_physical_device_count(context, "OLDDEV"), 1);
    assert_int_equal(tp_physical_device_count(context, NULL), 4);
}

/* ---- Tests ------------------------------------------------------------------------------- */

static void refusals_are_one_line_each_and_good_plugins_load(void **state) {
    (void)state;
    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    tp_context_t *context = context_with_path(TP_TEST_PLUGIN_DIR);
    tp_log_set_callback(NULL, NULL);
    assert_standard_outcome(context);

    /* The built-in CPU comes first, then the files sorted by name. */
    tp_plugin_info_t builtin = {.struct_size = sizeof builtin};
    assert_ok(tp_plugin_get(context, 0, &builtin));
    assert_string_equal(builtin.path, "<built-in>");
    assert_string_equal(builtin.device_types, "CPU");
    assert_int_equal(tp_plugin_count(context), 8);

    const char *refused[] = {"no_entry.so", "wrong_major.so", "init_fails.so", "cpu_twin.so",
                             "bad_type_name.so"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char fragment[128];
        snprintf(fragment, sizeof fragment, "libtp_test_%s: ", refused[i]);
        if (count_occurrences(captured_log, fragment) != 1) {
            print_error("wanted one log line with '%s' in:\n%s", fragment, captured_log);
            fail();
        }
    }
    assert_int_equal(count_occurrences(captured_log, "\n"), 5);
    assert_int_equal(count_occurrences(captured_log, "2 skipped plug-in "), 5);

    char *listing = list_devices(context, NULL);
    assert_string_equal(listing,
                        "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')\n"
                        "PhysicalDevice(name='/physical_device:XPU:0', device_type='XPU')\n"
                        "PhysicalDevice(name='/physical_device:XPU:1', device_type='XPU')\n"
                        "PhysicalDevice(name='/physical_device:OLDDEV:0', device_type='OLDDEV')\n");
    free(listing);
    listing = list_devices(context, "xpu");
    assert_string_equal(listing,
                        "PhysicalDevice(name='/physical_device:XPU:0', device_type='XPU')\n"
                        "PhysicalDevice(name='/physical_device:XPU:1', device_type='XPU')\n");
    free(listing);
    tp_context_destroy(context);
}

static void a_second_context_reuses_the_loaded_plugins(void **state) {
    (void)state;
    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    tp_context_t *first = context_with_path(TP_TEST_PLUGIN_DIR);
    tp_context_t *second = context_with_path(TP_TEST_PLUGIN_DIR);
    tp_log_set_callback(NULL, NULL);
    assert_standard_outcome(second);
    /* Each refusal was logged when the process first met it, not again. */
    assert_int_equal(count_occurrences(captured_log, "skipped plug-in"), 0);
    tp_context_destroy(first);
    tp_context_destroy(second);
}

/* Links the test plug-ins into folders under new names, so that discovery meets them in
 * another order, split over two folders. */
static void good_plugins_load_whatever_the_order(void **state) {
    (void)state;
    char root[] = "/tmp/tp_loader_XXXXXX";
    assert_non_null(mkdtemp(root));
    char first[PATH_MAX], second[PATH_MAX];
    snprintf(first, sizeof first, "%s/first", root);
    snprintf(second, sizeof second, "%s/second", root);
    assert_int_equal(mkdir(first, 0700), 0);
    assert_int_equal(mkdir(second, 0700), 0);
    const struct {
        const char *folder, *link, *target;
    } links[] = {
        {first, "a_bad_type_name.so", "libtp_test_bad_type_name.so"},
        {first, "b_wrong_major.so", "libtp_test_wrong_major.so"},
        {first, "c_good.so", "libtp_test_good.so"},
        {second, "a_cpu_twin.so", "libtp_test_cpu_twin.so"},
        {second, "b_old_minor.so", "libtp_test_old_minor.so"},
        {second, "c_init_fails.so", "libtp_test_init_fails.so"},
        {second, "d_no_entry.so", "libtp_test_no_entry.so"},
        {second, "not_a_plugin.txt", "libtp_test_good.so"},
    };
    char path[PATH_MAX], target[PATH_MAX];
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", links[i].folder, links[i].link);
        snprintf(target, sizeof target, "%s/%s", TP_TEST_PLUGIN_DIR, links[i].target);
        assert_int_equal(symlink(target, path), 0);
    }
    char search_path[4 * PATH_MAX];
    snprintf(search_path, sizeof search_path, "%s:/nonexistent/folder::%s:%s", second, first,
             second);
    tp_context_t *context = context_with_path(search_path);
    /* The same file found twice through different names counts once. */
    assert_int_equal(tp_plugin_count(context), 8);
    assert_standard_outcome(context);
    /* Discovery order: the second folder first, then the first; XPU after OLDDEV now. */
    char *listing = list_devices(context, NULL);
    assert_string_equal(listing,
                        "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')\n"
                        "PhysicalDevice(name='/physical_device:OLDDEV:0', device_type='OLDDEV')\n"
                        "PhysicalDevice(name='/physical_device:XPU:0', device_type='XPU')\n"
                        "PhysicalDevice(name='/physical_device:XPU:1', device_type='XPU')\n");
    free(listing);
    tp_context_destroy(context);
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", links[i].folder, links[i].link);
        unlink(path);
    }
    rmdir(first);
    rmdir(second);
    rmdir(root);
}

static void plugin_path_comes_from_the_environment(void **state) {
    (void)state;
    setenv("TP_PLUGIN_PATH", TP_TEST_PLUGIN_DIR, 1);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    assert_standard_outcome(context);
    tp_context_destroy(context);

    /* An explicit path, even an empty one, wins over the environment. */
    options.plugin_path = "";
    assert_ok(tp_context_create(&options, &context));
    assert_int_equal(tp_plugin_count(context), 1);
    tp_context_destroy(context);

    options.plugin_path = NULL;
    options.no_plugins = true;
    assert_ok(tp_context_create(&options, &context));
    assert_int_equal(tp_plugin_count(context), 1);
    assert_int_equal(tp_physical_device_count(context, NULL), 1);
    tp_context_destroy(context);
    unsetenv("TP_PLUGIN_PATH");
}

/* An entry of the search path that names a file loads that plug-in alone, beside folders. */
static void a_path_entry_may_name_one_plugin_file(void **state) {
    (void)state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_TEST_PLUGIN_DIR "/libtp_test_good.so:" TP_KERNEL_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    assert_int_equal(tp_plugin_count(context), 3);
    tp_plugin_info_t info = {.struct_size = sizeof info};
    assert_ok(tp_plugin_get(context, 1, &info));
    assert_string_equal(info.path, TP_TEST_PLUGIN_DIR "/libtp_test_good.so");
    assert_true(info.loaded);
    assert_ok(tp_plugin_get(context, 2, &info));
    assert_string_equal(info.path, TP_KERNEL_PLUGIN_DIR "/libtp_test_accelerator.so");
    tp_context_destroy(context);
}

/* The 1.0 plug-in's device works through its shorter function table. */
static void an_older_minor_plugin_device_works(void **state) {
    (void)state;
    tp_context_t *context = context_with_path(TP_TEST_PLUGIN_DIR);
    const tp_physical_device_t *found;
    assert_ok(tp_physical_device_find(context, "/physical_device:olddev:0", &found));
    tp_physical_device_t *device = (tp_physical_device_t *)found;
    assert_null(device->def->device_synchronize);
    assert_null(device->def->host_callback);
    assert_string_equal(tp_physical_device_hardware_name(found), "Test Device");
    assert_string_equal(tp_physical_device_vendor(found), "tensorplug tests");
    assert_int_equal(tp_physical_device_memory_bytes(found), 64u << 20);

    void *mem;
    const char message[] = "through the 1.0 table";
    char back[sizeof message] = {0};
    tp_device_t *logical = device_over(device);
    assert_ok(tp_physical_device_allocate(device, sizeof message, &mem));
    assert_ok(tp_device_copy_from_host(logical, mem, 0, message, sizeof message, NULL));
    assert_ok(tp_device_copy_to_host(logical, back, mem, 0, sizeof message));
    tp_device_destroy(logical);
    assert_string_equal(back, message);
    assert_int_equal(atomic_load(&device->bytes_in_use), sizeof message);
    tp_physical_device_deallocate(device, mem, sizeof message);
    assert_int_equal(atomic_load(&device->bytes_in_use), 0);
    tp_context_destroy(context);
}

static void devices_are_found_by_any_name_form(void **state) {
    (void)state;
    tp_context_t *context = context_with_path(TP_TEST_PLUGIN_DIR);
    const char *forms[] = {"/physical_device:XPU:1", "/xpu:1", "/device:XPU:1", "XPU:1",
                           "/job:localhost/replica:0/task:0/device:XPU:1"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        const tp_physical_device_t *device = NULL;
        assert_ok(tp_physical_device_find(context, forms[i], &device));
        assert_string_equal(tp_physical_device_name(device), "/physical_device:XPU:1");
        assert_string_equal(tp_physical_device_full_name(device),
                            "/job:localhost/replica:0/task:0/device:XPU:1");
        assert_string_equal(tp_physical_device_type(device), "XPU");
        assert_int_equal(tp_physical_device_ordinal(device), 1);
    }
    const tp_physical_device_t *untouched = NULL;
    assert_error(tp_physical_device_find(context, "/device:GPU:2", &untouched), TP_NOT_FOUND,
                 "/job:localhost/replica:0/task:0/device:GPU:2 unknown device.");
    assert_error(tp_physical_device_find(context, "/device:XPU", &untouched),
                 TP_INVALID_ARGUMENT, "names no single device");
    assert_error(tp_physical_device_find(context, "/job:worker/device:XPU:0", &untouched),
                 TP_NOT_FOUND, "is not on this host");
    assert_error(tp_physical_device_find(context, "/device:XPU:x", &untouched),
                 TP_INVALID_ARGUMENT, "'/device:XPU:x'");
    assert_null(untouched);

    const tp_physical_device_t *device;
    assert_ok(tp_physical_device_get(context, "XPU", 1, &device));
    assert_string_equal(tp_physical_device_name(device), "/physical_device:XPU:1");
    assert_error(tp_physical_device_get(context, "XPU", 2, &device), TP_OUT_OF_RANGE,
                 "index 2, but there are 2 XPU devices");
    tp_context_destroy(context);
}

static void bad_arguments_get_statuses(void **state) {
    (void)state;
    assert_error(tp_context_create(NULL, NULL), TP_INVALID_ARGUMENT,
                 "tp_context_create: argument 'out_context' is NULL");
    tp_context_options_t options = {0};
    tp_context_t *context = NULL;
    assert_error(tp_context_create(&options, &context), TP_INVALID_ARGUMENT,
                 "start from TP_CONTEXT_OPTIONS_INIT");
    assert_null(context);

    assert_ok(tp_context_create(NULL, &context));
    tp_plugin_info_t info = {0};
    assert_error(tp_plugin_get(context, 0, &info), TP_INVALID_ARGUMENT, "struct_size");
    info.struct_size = sizeof info;
    assert_error(tp_plugin_get(context, 99, &info), TP_OUT_OF_RANGE, "index 99");
    assert_error(tp_plugin_get(NULL, 0, &info), TP_INVALID_ARGUMENT, "'context' is NULL");
    assert_error(tp_list_physical_devices(context, NULL, NULL), TP_INVALID_ARGUMENT,
                 "'out' is NULL");
    assert_int_equal(tp_physical_device_count(NULL, NULL), 0);
    assert_int_equal(tp_plugin_count(NULL), 0);
    tp_context_destroy(context);
    tp_context_destroy(NULL);
}

/* An application built against an older header passes a shorter tp_plugin_info_t. */
static void plugin_info_respects_the_callers_struct_size(void **state) {
    (void)state;
    tp_context_t *context = context_with_path(TP_TEST_PLUGIN_DIR);
    struct {
        tp_plugin_info_t info;
        unsigned char guard[8];
    } short_info;
    memset(&short_info, 0xAB, sizeof short_info);
    short_info.info.struct_size = offsetof(tp_plugin_info_t, reason);
    assert_ok(tp_plugin_get(context, 0, &short_info.info));
    assert_string_equal(short_info.info.path, "<built-in>");
    assert_true(short_info.info.loaded);
    const unsigned char *after = (const unsigned char *)&short_info.info.reason;
    for (size_t i = 0; i < sizeof(const char *); i++) assert_int_equal(after[i], 0xAB);
    tp_context_destroy(context);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refusals_are_one_line_each_and_good_plugins_load),
        cmocka_unit_test(a_second_context_reuses_the_loaded_plugins),
        cmocka_unit_test(good_plugins_load_whatever_the_order),
        cmocka_unit_test(plugin_path_comes_from_the_environment),
        cmocka_unit_test(an_older_minor_plugin_device_works),
        cmocka_unit_test(devices_are_found_by_any_name_form),
        cmocka_unit_test(a_path_entry_may_name_one_plugin_file),
        cmocka_unit_test(bad_arguments_get_statuses),
        cmocka_unit_test(plugin_info_respects_the_callers_struct_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
