/* SPDX-License-Identifier: Apache-2.0 */
/* Finding, checking and refusing plug-ins; the devices of those that load. Uses the test
 * plug-ins built in tests/plugins/ (TP_TEST_PLUGIN_DIR). */
#include "plugin_support.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device_support.h"
#include "kernel/kernel_registry.h"
#include "plugin/discovery.h"
#include "plugin/plugin_probe.h"
#include "plugin/plugin_trust.h"

/* ---- Helpers ----------------------------------------------------------------------------- */

static tp_context_t *context_with_path(const char *path) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = path;
    options.skip_installed_plugins = true;
    tp_context_t *context = NULL;
    assert_ok(tp_context_create(&options, &context));
    return context;
}

static void assert_refused(const tp_context_t *context, const char *file, const char *reason) {
    tp_plugin_info_t info = plugin_named(context, file);
    if (info.loaded || strstr(info.reason, reason) == NULL) {
        print_error("%s: loaded=%d reason='%s', wanted refusal containing '%s'\n", file,
                    info.loaded, info.reason, reason);
        fail();
    }
}

/* The outcome every arrangement of the test plug-ins must give. */
static void assert_standard_outcome(const tp_context_t *context) {
    assert_refused(context, "no_entry.so", "it exports no entry point 'tp_plugin_entry'");
    assert_refused(context, "wrong_major.so",
                   "it was built for plug-in ABI 2.0; this runtime speaks ABI 1.8, and major "
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
    /* The first context may be the process's first and log the refusals; run alone, it is. */
    tp_log_set_callback(capture_log, NULL);
    tp_context_t *first = context_with_path(TP_TEST_PLUGIN_DIR);
    captured_log[0] = '\0';
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
                 TP_NOT_FOUND, "is not in this process");
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

/* ---- Files made for a test -------------------------------------------------------------- */

static void make_temp_folder(char folder[PATH_MAX]) {
    snprintf(folder, PATH_MAX, "/tmp/tp_loader_XXXXXX");
    assert_non_null(mkdtemp(folder));
}

static int remove_entry(const char *path, const struct stat *info, int flag, struct FTW *ftw) {
    (void)info;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(const char *folder) {
    assert_int_equal(nftw(folder, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static const char *in_folder(char path[PATH_MAX], const char *folder, const char *name) {
    int length = snprintf(path, PATH_MAX, "%s/%s", folder, name);
    assert_true(length > 0 && length < PATH_MAX);
    return path;
}

/* Copies the first `limit` bytes of `from` (all of it for SIZE_MAX) to a new file `to`. */
static void copy_file(const char *from, const char *to, size_t limit, mode_t mode) {
    FILE *in = fopen(from, "rb");
    int out_fd = open(to, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_non_null(in);
    assert_true(out_fd >= 0);
    FILE *out = fdopen(out_fd, "wb");
    assert_non_null(out);
    char buffer[8192];
    size_t got;
    while (limit > 0 && (got = fread(buffer, 1, limit < sizeof buffer ? limit : sizeof buffer,
                                     in)) > 0) {
        assert_int_equal(fwrite(buffer, 1, got, out), got);
        limit -= got;
    }
    fclose(in);
    assert_int_equal(fclose(out), 0);
    assert_int_equal(chmod(to, mode), 0);
}

/* Where the last PT_LOAD segment of a 64-bit ELF file starts. */
static size_t last_segment_offset(const char *path) {
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    Elf64_Ehdr header;
    assert_int_equal(fread(&header, sizeof header, 1, file), 1);
    size_t offset = 0;
    for (unsigned i = 0; i < header.e_phnum; i++) {
        Elf64_Phdr segment;
        assert_int_equal(fseek(file, (long)(header.e_phoff + i * sizeof segment), SEEK_SET), 0);
        assert_int_equal(fread(&segment, sizeof segment, 1, file), 1);
        if (segment.p_type == PT_LOAD && segment.p_offset > offset) offset = segment.p_offset;
    }
    fclose(file);
    assert_true(offset > 0);
    return offset;
}

static void patch_file(const char *path, long offset, const void *bytes, size_t size) {
    FILE *file = fopen(path, "r+b");
    assert_non_null(file);
    assert_int_equal(fseek(file, offset, SEEK_SET), 0);
    assert_int_equal(fwrite(bytes, 1, size, file), size);
    assert_int_equal(fclose(file), 0);
}

static void assert_logged(const char *line) {
    if (strstr(captured_log, line) == NULL) {
        print_error("wanted a log line with '%s' in:\n%s", line, captured_log);
        fail();
    }
}

#define GOOD_PLUGIN TP_TEST_PLUGIN_DIR "/libtp_test_good.so"

/* ---- Checks of the files ------------------------------------------------------------------ */

/* Every "*.so" that cannot be a loadable plug-in is refused with one line before dlopen sees
 * it: a FIFO would block the loader, a truncated file would raise SIGBUS inside dlopen, and
 * anything but a regular file was skipped without a word. */
static void files_that_are_no_loadable_plugin_are_refused_before_dlopen(void **state) {
    (void)state;
    char folder[PATH_MAX], path[PATH_MAX], loop[PATH_MAX];
    make_temp_folder(folder);
    assert_int_equal(mkfifo(in_folder(path, folder, "a_fifo.so"), 0600), 0);
    assert_int_equal(mkdir(in_folder(path, folder, "b_folder.so"), 0700), 0);
    assert_int_equal(symlink("c_loop.so", in_folder(loop, folder, "c_loop.so")), 0);
    assert_int_equal(symlink("/nonexistent", in_folder(path, folder, "d_dangling.so")), 0);
    assert_int_equal(symlink("/dev/null", in_folder(path, folder, "e_device.so")), 0);
    /* Cut where the last loadable segment starts: dlopen maps it past the end of the file. */
    size_t size = last_segment_offset(GOOD_PLUGIN);
    copy_file(GOOD_PLUGIN, in_folder(path, folder, "f_truncated.so"), size, 0755);
    copy_file(GOOD_PLUGIN, in_folder(path, folder, "g_empty.so"), 0, 0755);
    FILE *text = fopen(in_folder(path, folder, "h_text.so"), "w");
    assert_non_null(text);
    fputs("not a plug-in\n", text);
    fclose(text);
    /* ELF64 little-endian offsets: e_ident[EI_CLASS] 4, [EI_DATA] 5, e_type 16, e_machine 18,
     * e_phoff 32. */
    const unsigned char class32 = 1, big_endian = 2, executable[2] = {2, 0};
    const unsigned char machine[2] = {0x34, 0x12}, far_away[8] = {0, 0, 0, 0, 0, 0, 0, 0x10};
    const struct {
        const char *name;
        long offset;
        const void *bytes;
        size_t size;
    } patches[] = {
        {"i_32bit.so", 4, &class32, 1},          {"j_big_endian.so", 5, &big_endian, 1},
        {"k_executable.so", 16, executable, 2},  {"l_machine.so", 18, machine, 2},
        {"m_headers_past_end.so", 32, far_away, 8},
    };
    for (size_t i = 0; i < sizeof patches / sizeof patches[0]; i++) {
        copy_file(GOOD_PLUGIN, in_folder(path, folder, patches[i].name), SIZE_MAX, 0755);
        patch_file(path, patches[i].offset, patches[i].bytes, patches[i].size);
    }
    copy_file(GOOD_PLUGIN, in_folder(path, folder, "n_good.so"), SIZE_MAX, 0755);

    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    tp_context_t *context = context_with_path(folder);
    tp_log_set_callback(NULL, NULL);
    char truncated[128];
    snprintf(truncated, sizeof truncated, "but the file has %zu: it is truncated", size);
    const struct {
        const char *file, *reason;
    } refused[] = {
        {"a_fifo.so", "it is a FIFO, not a regular file"},
        {"b_folder.so", "it is a directory, not a regular file"},
        {"c_loop.so", "it is a symbolic link loop"},
        {"d_dangling.so", "it does not exist (a symbolic link to nothing?)"},
        {"/dev/null", "it is a character device, not a regular file"},
        {"f_truncated.so", truncated},
        {"g_empty.so", "it is empty"},
        {"h_text.so", "it is not an ELF file"},
        {"i_32bit.so", "it is a 32-bit ELF file; this process is 64-bit"},
        {"j_big_endian.so", "it is big-endian ELF; this machine is little-endian"},
        {"k_executable.so", "it is an executable, not a shared object"},
        {"l_machine.so", "it is built for ELF machine 4660; this process runs on "},
        {"m_headers_past_end.so", "its program headers end past the end of the file"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_refused(context, refused[i].file, refused[i].reason);
    assert_int_equal(count_occurrences(captured_log, "skipped plug-in "),
                     sizeof refused / sizeof refused[0]);
    assert_true(plugin_named(context, "n_good.so").loaded);
    assert_int_equal(tp_plugin_count(context), 1 + sizeof refused / sizeof refused[0] + 1);
    tp_context_destroy(context);
    remove_tree(folder);
}

/* Someone else's file, or one in a folder others can change, would run their code as this
 * user. As root the test gives a file away; otherwise it judges as another user would. */
static void files_and_folders_others_can_change_are_refused(void **state) {
    (void)state;
    char root[PATH_MAX], trusted[PATH_MAX], open_folder[PATH_MAX], theirs[PATH_MAX];
    char path[PATH_MAX], target[PATH_MAX];
    make_temp_folder(root);
    assert_int_equal(mkdir(in_folder(trusted, root, "trusted"), 0755), 0);
    assert_int_equal(mkdir(in_folder(open_folder, root, "open"), 0700), 0);
    assert_int_equal(chmod(open_folder, 0777), 0);
    assert_int_equal(mkdir(in_folder(theirs, root, "theirs"), 0755), 0);
    copy_file(GOOD_PLUGIN, in_folder(path, trusted, "a_group_writable.so"), SIZE_MAX, 0775);
    copy_file(GOOD_PLUGIN, in_folder(path, trusted, "b_world_writable.so"), SIZE_MAX, 0666);
    copy_file(GOOD_PLUGIN, in_folder(target, open_folder, "c_good_in_open_folder.so"), SIZE_MAX,
              0755);
    assert_int_equal(symlink(target, in_folder(path, trusted, "c_link.so")), 0);
    copy_file(GOOD_PLUGIN, in_folder(path, trusted, "d_good.so"), SIZE_MAX, 0755);
    copy_file(GOOD_PLUGIN, in_folder(path, theirs, "e_theirs.so"), SIZE_MAX, 0755);

    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    char search_path[4 * PATH_MAX];
    snprintf(search_path, sizeof search_path, "%s:%s", trusted, open_folder);
    tp_context_t *context = context_with_path(search_path);
    tp_log_set_callback(NULL, NULL);
    assert_refused(context, "a_group_writable.so", "it is writable by group (mode 0775)");
    assert_refused(context, "b_world_writable.so",
                   "it is writable by group and others (mode 0666)");
    char reason[2 * PATH_MAX];
    snprintf(reason, sizeof reason, "its folder %s is writable by group and others (mode 0777)",
             open_folder);
    assert_refused(context, "c_good_in_open_folder.so", reason);
    assert_true(plugin_named(context, "d_good.so").loaded);
    snprintf(reason, sizeof reason, "skipped plug-in folder %s: it is writable by group and "
             "others (mode 0777)", open_folder);
    assert_logged(reason);
    assert_int_equal(count_occurrences(captured_log, "\n"), 4);
    assert_int_equal(tp_plugin_count(context), 5);
    tp_context_destroy(context);

    /* Another user's file, and another user's folder. */
    unsigned long me = (unsigned long)geteuid(), owner = me, user = me;
    if (me == 0) {
        owner = 4242;
        assert_int_equal(chown(path, 4242, (gid_t)-1), 0);
        assert_int_equal(chown(theirs, 4242, (gid_t)-1), 0);
    } else {
        user = 4242;
        tp_plugin_trust_pretend_user(4242);
    }
    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    snprintf(search_path, sizeof search_path, "%s:%s", path, theirs);
    context = context_with_path(search_path);
    tp_log_set_callback(NULL, NULL);
    tp_plugin_trust_pretend_user((uid_t)-1);
    snprintf(reason, sizeof reason, "it is owned by uid %lu, neither root nor the user running "
             "the program (uid %lu)", owner, user);
    assert_refused(context, "e_theirs.so", reason);
    char line[4 * PATH_MAX];
    snprintf(line, sizeof line, "skipped plug-in folder %s: %s", theirs, reason);
    assert_logged(line);
    assert_int_equal(tp_plugin_count(context), 2);
    tp_context_destroy(context);
    remove_tree(root);
}

/* A relative entry would name another folder in every working directory. */
static void relative_search_path_entries_are_refused(void **state) {
    (void)state;
    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    tp_context_t *context = context_with_path("plugins:./tests/plugins::" TP_TEST_PLUGIN_DIR);
    tp_log_set_callback(NULL, NULL);
    assert_standard_outcome(context);
    assert_logged("2 skipped plug-in search path entry 'plugins': it is not an absolute path\n");
    assert_logged("2 skipped plug-in search path entry './tests/plugins': it is not an absolute "
                  "path\n");
    assert_int_equal(count_occurrences(captured_log, "search path entry"), 2);
    tp_context_destroy(context);
}

/* Runs as a setuid program would, without being one: neither the options' search path nor
 * TP_PLUGIN_PATH may pick the code it runs. */
/* In a setuid or setgid program, TP_PLUGIN_PATH, which the user controls, is ignored with a
 * line and only the installed folder is searched; a path the program sets itself (its
 * plugin_path option) is the program's choice and is kept, as glibc keeps dlopen's paths. */
static void setuid_programs_load_only_from_the_installed_folder(void **state) {
    (void)state;
    char installed[PATH_MAX], expected[2 * PATH_MAX];
    tp_installed_plugin_dir(installed, sizeof installed);
    snprintf(expected, sizeof expected, "ignored the plug-in search path '%s': a setuid or setgid "
             "program loads plug-ins only from %s", TP_TEST_PLUGIN_DIR, installed);
    tp_plugin_discovery_force_secure_mode(true);
    for (int from_environment = 0; from_environment < 2; from_environment++) {
        tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
        if (from_environment)
            setenv("TP_PLUGIN_PATH", TP_TEST_PLUGIN_DIR, 1);
        else
            options.plugin_path = TP_TEST_PLUGIN_DIR;
        captured_log[0] = '\0';
        tp_log_set_callback(capture_log, NULL);
        tp_context_t *context;
        assert_ok(tp_context_create(&options, &context));
        tp_log_set_callback(NULL, NULL);
        unsetenv("TP_PLUGIN_PATH");
        if (from_environment) {
            assert_logged(expected);
            for (size_t i = 1; i < tp_plugin_count(context); i++) {
                tp_plugin_info_t info = {.struct_size = sizeof info};
                assert_ok(tp_plugin_get(context, i, &info));
                assert_int_equal(strncmp(info.path, installed, strlen(installed)), 0);
            }
            assert_int_equal(tp_physical_device_count(context, "XPU"), 0);
        } else {
            assert_null(strstr(captured_log, "ignored the plug-in search path"));
            assert_int_equal(tp_physical_device_count(context, "XPU"), 2);
        }
        tp_context_destroy(context);
    }
    tp_plugin_discovery_force_secure_mode(false);
}

static void tp_plugins_none_loads_no_plugin_file(void **state) {
    (void)state;
    setenv("TP_PLUGINS", "none", 1);
    tp_context_t *context = context_with_path(TP_TEST_PLUGIN_DIR);
    assert_int_equal(tp_plugin_count(context), 1);
    assert_int_equal(tp_physical_device_count(context, NULL), 1);
    tp_context_destroy(context);

    setenv("TP_PLUGINS", "all,", 1);
    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    context = context_with_path(TP_TEST_PLUGIN_DIR);
    tp_log_set_callback(NULL, NULL);
    unsetenv("TP_PLUGINS");
    assert_logged("2 TP_PLUGINS='all,' is neither 'none' nor a comma-separated list of plug-in "
                  "names; every plug-in is used\n");
    assert_standard_outcome(context);
    tp_context_destroy(context);
}

/* TP_PLUGINS=name,...: the plug-ins it does not name are listed as switched off, their init
 * never run (a fresh copy of init_fails.so shows its init's failure only once it is named), and
 * a name no plug-in has is warned about. */
static void tp_plugins_names_the_plugins_to_use(void **state) {
    (void)state;
    char folder[PATH_MAX], path[PATH_MAX];
    make_temp_folder(folder);
    copy_file(TP_TEST_PLUGIN_DIR "/libtp_test_init_fails.so",
              in_folder(path, folder, "fresh_init_fails.so"), SIZE_MAX, 0755);
    char search[2 * PATH_MAX];
    snprintf(search, sizeof search, "%s:%s", TP_TEST_PLUGIN_DIR, folder);

    setenv("TP_PLUGINS", "good,nosuch", 1);
    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    tp_context_t *context = context_with_path(search);
    tp_log_set_callback(NULL, NULL);
    unsetenv("TP_PLUGINS");
    assert_logged("2 TP_PLUGINS='good,nosuch' names 'nosuch', which no plug-in found has; the "
                  "plug-ins it names that were found are used\n");
    assert_true(plugin_named(context, "good.so").loaded);
    assert_refused(context, "old_minor.so", "switched off: TP_PLUGINS does not name 'old_minor'");
    assert_refused(context, "fresh_init_fails.so",
                   "switched off: TP_PLUGINS does not name 'init_fails'");
    assert_int_equal(tp_physical_device_count(context, "XPU"), 2);
    assert_int_equal(tp_physical_device_count(context, NULL), 3);
    tp_context_destroy(context);

    setenv("TP_PLUGINS", "init_fails", 1);
    context = context_with_path(search);
    unsetenv("TP_PLUGINS");
    assert_refused(context, "fresh_init_fails.so",
                   "its init failed: the test device's driver is not installed");
    assert_refused(context, "good.so", "switched off: TP_PLUGINS does not name 'good'");
    assert_int_equal(tp_physical_device_count(context, NULL), 1);
    tp_context_destroy(context);
    remove_tree(folder);
}

/* The same plug-in in two folders of the path (an installed package and a build tree): the copy
 * found first is used and the other is listed as not used, without a warning and without its
 * init running; its device type is not "already registered". */
static void a_plugin_found_twice_is_used_once(void **state) {
    (void)state;
    char folder[PATH_MAX], path[PATH_MAX];
    make_temp_folder(folder);
    copy_file(GOOD_PLUGIN, in_folder(path, folder, "libtp_test_good_copy.so"), SIZE_MAX, 0755);
    char search[2 * PATH_MAX];
    snprintf(search, sizeof search, "%s:%s", GOOD_PLUGIN, folder);
    captured_log[0] = '\0';
    tp_log_set_callback(capture_log, NULL);
    tp_context_t *context = context_with_path(search);
    tp_log_set_callback(NULL, NULL);
    assert_string_equal(captured_log, "");
    assert_true(plugin_named(context, "/libtp_test_good.so").loaded);
    char expected[PATH_MAX + 64];
    snprintf(expected, sizeof expected, "not used: plug-in 'good' was found first at %s",
             GOOD_PLUGIN);
    assert_refused(context, "good_copy.so", expected);
    assert_int_equal(tp_physical_device_count(context, "XPU"), 2);
    tp_context_destroy(context);
    remove_tree(folder);
}

/* ---- Plug-ins that misbehave while they load ------------------------------------------------ */

/* With TP_PLUGIN_PROBE=1 (as `tensorplug plugins` sets it) each file is loaded in a child
 * process first, so one that crashes or exits there is refused and this process goes on. */
static void plugins_that_crash_or_exit_while_loading_are_refused_in_a_probe(void **state) {
    (void)state;
    setenv("TP_PLUGIN_PROBE", "1", 1);
    tp_context_t *context = context_with_path(
        TP_EXTRA_PLUGIN_DIR "/crash_in_constructor.so:" TP_EXTRA_PLUGIN_DIR
        "/crash_in_init.so:" TP_EXTRA_PLUGIN_DIR "/exit_in_init.so:" GOOD_PLUGIN);
    unsetenv("TP_PLUGIN_PROBE");
    assert_refused(context, "crash_in_constructor.so",
                   "it crashed with signal 11 (SIGSEGV) during init");
    assert_refused(context, "crash_in_init.so", "it crashed with signal 11 (SIGSEGV) during init");
    assert_refused(context, "exit_in_init.so", "it ended the process (exit status 3) during init");
    assert_true(plugin_named(context, "libtp_test_good.so").loaded);
    assert_int_equal(tp_physical_device_count(context, "XPU"), 2);
    tp_context_destroy(context);
}

static void a_probe_gives_up_on_a_plugin_that_hangs(void **state) {
    (void)state;
    char reason[256] = "";
    assert_false(tp_plugin_probe(TP_EXTRA_PLUGIN_DIR "/hang_in_init.so", 1000, reason,
                                 sizeof reason));
    assert_string_equal(reason, "it did not finish loading within 1 s in a probe");
    assert_true(tp_plugin_probe(GOOD_PLUGIN, 10000, reason, sizeof reason));
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Finding each new op's duplicate and each kernel's op by a linear search made loading
 * quadratic: this took 181 s. Linear, it takes a fraction of a second (a few under sanitizers);
 * the bound leaves room for a loaded machine. */
static void registering_100000_ops_and_kernels_takes_linear_time(void **state) {
    (void)state;
    setenv("TP_MANY_OPS", "100000", 1);
    double start = seconds_now();
    tp_context_t *context = context_with_path(TP_EXTRA_PLUGIN_DIR "/many_ops.so");
    double elapsed = seconds_now() - start;
    unsetenv("TP_MANY_OPS");
    tp_plugin_info_t info = plugin_named(context, "many_ops.so");
    assert_true(info.loaded);
    assert_int_equal(info.num_ops, 100000);
    assert_int_equal(info.num_kernels, 100000);
    tp_op_t op;
    assert_true(tp_kernel_registry_find_op(&context->registry, "Op99999", &op));
    assert_string_equal(op.def->name, "Op99999");
    assert_false(tp_kernel_registry_find_op(&context->registry, "Op100000", &op));
    tp_context_destroy(context);
    if (elapsed > 20.0) {
        print_error("loading 100,000 ops and kernels took %.1f s\n", elapsed);
        fail();
    }
}

typedef tp_status_t *(*context_create_fn)(const tp_context_options_t *, tp_context_t **);
typedef void (*set_api_fn)(context_create_fn, void (*)(tp_context_t *),
                           const char *(*)(const tp_status_t *), void (*)(tp_status_t *));

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t done_changed;
    bool done;
    tp_context_t *context;
} creation_t;

static void *create_in_thread(void *argument) {
    creation_t *creation = argument;
    tp_context_t *context = context_with_path(TP_EXTRA_PLUGIN_DIR "/reenter.so");
    pthread_mutex_lock(&creation->mutex);
    creation->context = context;
    creation->done = true;
    pthread_cond_signal(&creation->done_changed);
    pthread_mutex_unlock(&creation->mutex);
    return NULL;
}

/* The plug-in's init calls tp_context_create, which waited forever for the lock its own loading
 * held. It is refused with a status, which the init passes on. */
static void an_init_that_creates_a_context_is_refused(void **state) {
    (void)state;
    /* The plug-in links nothing of the core: it is handed the API through a function of its
     * own, in the same loaded object the loader will then find. */
    void *library = dlopen(TP_EXTRA_PLUGIN_DIR "/reenter.so", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(library);
    void *symbol = dlsym(library, "misbehaving_set_api");
    assert_non_null(symbol);
    set_api_fn set_api;
    memcpy(&set_api, &symbol, sizeof set_api);
    set_api(tp_context_create, tp_context_destroy, tp_status_message, tp_status_free);

    creation_t creation = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, NULL};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, create_in_thread, &creation), 0);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30;
    pthread_mutex_lock(&creation.mutex);
    while (!creation.done &&
           pthread_cond_timedwait(&creation.done_changed, &creation.mutex, &deadline) == 0) {
    }
    bool done = creation.done;
    pthread_mutex_unlock(&creation.mutex);
    if (!done) fail_msg("tp_context_create has not returned after 30 s: deadlocked");
    pthread_join(thread, NULL);
    assert_refused(creation.context, "reenter.so",
                   "its init failed: tp_context_create: called from the init of plug-in "
                   "'misbehaving' (" TP_EXTRA_PLUGIN_DIR "/reenter.so): plug-ins load one at a "
                   "time, so a plug-in's init cannot create a context");
    tp_context_destroy(creation.context);
    dlclose(library);
}

/* With a pattern (cmocka's: '*' and '?'), runs only the tests it names: run_each_alone.sh runs
 * each test so, in a process of its own. */
int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
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
        cmocka_unit_test(files_that_are_no_loadable_plugin_are_refused_before_dlopen),
        cmocka_unit_test(files_and_folders_others_can_change_are_refused),
        cmocka_unit_test(relative_search_path_entries_are_refused),
        cmocka_unit_test(setuid_programs_load_only_from_the_installed_folder),
        cmocka_unit_test(tp_plugins_none_loads_no_plugin_file),
        cmocka_unit_test(tp_plugins_names_the_plugins_to_use),
        cmocka_unit_test(a_plugin_found_twice_is_used_once),
        cmocka_unit_test(plugins_that_crash_or_exit_while_loading_are_refused_in_a_probe),
        cmocka_unit_test(a_probe_gives_up_on_a_plugin_that_hangs),
        cmocka_unit_test(registering_100000_ops_and_kernels_takes_linear_time),
        /* Last: after a loader that deadlocks, its lock would stay taken for what follows. */
        cmocka_unit_test(an_init_that_creates_a_context_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
