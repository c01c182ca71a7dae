/* SPDX-License-Identifier: Apache-2.0 */
/* Device memory as an application configures it: the default reservation, growth, fractions,
 * limits, logical devices, visible devices, statistics and out of memory. The test plug-in
 * "good" gives XPU:0 (64 MiB) and XPU:1 (which does not say how much memory it has). */
#include "test_support.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu_fixture.h"
#include "tensor/tensor.h"

#define MiB (UINT64_C(1) << 20)


static tp_device_t *logical(tp_context_t *context, const char *type, int32_t ordinal) {
    assert_ok(tp_context_devices_ready(context));
    tp_device_t *device = tp_device_registry_find(&context->registry, type, ordinal);
    assert_non_null(device);
    return device;
}

/* A float32 tensor of `bytes` / 4 elements on a logical device, values unset. */
static tp_status_t *tensor_on(tp_context_t *context, tp_device_t *device, uint64_t bytes,
                              tp_tensor_t **out) {
    return tp_tensor_allocate(context, device, TP_FLOAT32, &TP_SHAPE((int64_t)(bytes / 4)), out);
}

static tp_memory_stats_t stats_of(tp_context_t *context, const char *device) {
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    assert_ok(tp_context_memory_stats(context, device, &stats));
    return stats;
}

static void by_default_a_device_reserves_nearly_all_and_the_cpu_grows(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *a, *b;
    assert_ok(tensor_on(context, logical(context, "XPU", 0), 1024, &a));
    tp_memory_stats_t xpu = stats_of(context, "XPU:0");
    assert_int_equal(xpu.bytes_limit, 48 * MiB); /* 64 MiB less the 16 MiB reserve */
    assert_int_equal(xpu.bytes_reserved, 48 * MiB);
    assert_int_equal(xpu.bytes_in_use, 1024);
    assert_int_equal(xpu.num_allocations, 1);

    assert_ok(tensor_on(context, context->registry.host_device, 1024, &b));
    tp_memory_stats_t cpu = stats_of(context, "/device:CPU:0");
    assert_int_equal(cpu.bytes_reserved, 2 * MiB);
    assert_int_equal(cpu.bytes_limit, tp_physical_device_memory_bytes(
                                          context->registry.host_physical));
    tp_tensor_release(a);
    tp_tensor_release(b);
}

static void growth_starts_small_doubles_and_never_gives_back(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_context_set_memory_growth(context, "/physical_device:XPU:0", true));
    tp_device_t *xpu = logical(context, "XPU", 0);
    tp_tensor_t *small, *large;
    assert_ok(tensor_on(context, xpu, 1024, &small));
    assert_int_equal(stats_of(context, "XPU:0").bytes_reserved, 2 * MiB);
    assert_ok(tensor_on(context, xpu, 3 * MiB, &large));
    assert_int_equal(stats_of(context, "XPU:0").bytes_reserved, 6 * MiB); /* 2 + 4 */
    tp_tensor_release(large);
    tp_tensor_release(small);
    assert_ok(tp_device_synchronize(xpu));
    tp_memory_stats_t stats = stats_of(context, "XPU:0");
    assert_int_equal(stats.bytes_in_use, 0);
    assert_int_equal(stats.bytes_reserved, 6 * MiB);
    assert_int_equal(stats.peak_bytes_in_use, 3 * MiB + 1024);
}

static void options_are_refused_once_the_devices_are_made(void **state) {
    tp_context_t *context = *state;
    size_t count;
    assert_ok(tp_logical_device_count(context, NULL, &count));
    assert_error(tp_context_set_memory_growth(context, "XPU:0", true), TP_FAILED_PRECONDITION,
                 "Physical devices cannot be modified after being initialized");
    assert_error(tp_context_set_memory_limit(context, NULL, MiB), TP_FAILED_PRECONDITION,
                 "Physical devices cannot be modified after being initialized");
    uint64_t limits[] = {MiB, MiB};
    assert_error(tp_context_set_logical_devices(context, "CPU:0", limits, 2),
                 TP_FAILED_PRECONDITION,
                 "Physical devices cannot be modified after being initialized");
    assert_error(tp_context_set_visible_devices(context, "XPU:1"), TP_FAILED_PRECONDITION,
                 "Visible devices cannot be modified after being initialized");
}

static void options_a_device_cannot_honour_are_errors(void **state) {
    tp_context_t *context = *state;
    assert_error(tp_context_set_memory_fraction(context, "XPU:1", 0.5), TP_FAILED_PRECONDITION,
                 "cannot set a memory fraction on /physical_device:XPU:1: its plug-in does not "
                 "report how much memory it has");
    /* All XPUs at once: XPU:1 cannot, so XPU:0 is left as it was. */
    assert_error(tp_context_set_memory_fraction(context, "XPU", 0.5), TP_FAILED_PRECONDITION,
                 "/physical_device:XPU:1");
    assert_error(tp_context_set_memory_fraction(context, "XPU:0", 1.5), TP_INVALID_ARGUMENT,
                 "memory fraction 1.5 for /physical_device:XPU:0 is outside (0, 1]");
    assert_error(tp_context_set_memory_fraction(context, "XPU:0", 0), TP_INVALID_ARGUMENT,
                 "outside (0, 1]");
    assert_error(tp_context_set_memory_limit(context, "XPU:0", 65 * MiB), TP_INVALID_ARGUMENT,
                 "a memory limit of 65.0 MiB for /physical_device:XPU:0 exceeds the 64.0 MiB "
                 "it has");
    assert_error(tp_context_set_memory_limit(context, "XPU:0", 100), TP_INVALID_ARGUMENT,
                 "below the smallest allocation, 256 bytes");
    assert_error(tp_context_set_memory_growth(context, "GPU", true), TP_NOT_FOUND,
                 "no physical device matches 'GPU'");
    assert_error(tp_context_set_memory_growth(context, "XPU:9", true), TP_NOT_FOUND,
                 "no physical device matches 'XPU:9'");
    assert_error(tp_context_set_memory_growth(context, "/device:XPU:", true),
                 TP_INVALID_ARGUMENT, "/device:XPU:");
    assert_error(tp_context_set_memory_growth(context, "XPU:1", false), TP_FAILED_PRECONDITION,
                 "cannot set memory growth off without a limit on /physical_device:XPU:1: its "
                 "plug-in does not report how much memory it has");
    /* Nothing above changed XPU:0: it still reserves its default. */
    assert_int_equal(stats_of(context, "XPU:0").bytes_limit, 48 * MiB);
}

static void a_fraction_and_a_limit_cap_what_is_reserved(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_context_set_memory_fraction(context, "XPU:0", 0.25));
    assert_ok(tp_context_set_memory_growth(context, "XPU:1", true));
    assert_ok(tp_context_set_memory_limit(context, "XPU:1", 8 * MiB));
    assert_int_equal(stats_of(context, "XPU:0").bytes_limit, 16 * MiB);
    assert_int_equal(stats_of(context, "XPU:1").bytes_limit, 8 * MiB);
    tp_tensor_t *a;
    assert_ok(tensor_on(context, logical(context, "XPU", 0), 1024, &a));
    assert_int_equal(stats_of(context, "XPU:0").bytes_reserved, 16 * MiB);
    tp_tensor_release(a);
}

/* Growth with a fraction: the fraction's share is the limit, and growth reaches it in doubling
 * regions, the last one cut to what the share leaves; the plug-in is never asked for more. */
static void growth_within_a_fraction_stops_at_its_share(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_context_set_memory_growth(context, "XPU:0", true));
    assert_ok(tp_context_set_memory_fraction(context, "XPU:0", 0.25));
    tp_device_t *xpu = logical(context, "XPU", 0);
    assert_int_equal(stats_of(context, "XPU:0").bytes_limit, 16 * MiB);
    const uint64_t sizes[4] = {1024, 3 * MiB, 7 * MiB, 2 * MiB};
    const uint64_t reserved[4] = {2 * MiB, 6 * MiB, 14 * MiB, 16 * MiB}; /* 2, +4, +8, +2 */
    tp_tensor_t *tensors[4];
    for (int i = 0; i < 4; i++) {
        assert_ok(tensor_on(context, xpu, sizes[i], &tensors[i]));
        assert_int_equal(stats_of(context, "XPU:0").bytes_reserved, reserved[i]);
    }
    assert_int_equal(atomic_load(&xpu->physical->bytes_in_use), 16 * MiB);
    tp_tensor_t *over = NULL;
    assert_error(tensor_on(context, xpu, 4 * MiB, &over), TP_RESOURCE_EXHAUSTED,
                 "cannot allocate 4194304 bytes (the limit leaves 0 bytes to grow by); "
                 "XPU_0_bfc: in use 12583936 bytes, peak 12583936, reserved 16777216 of limit "
                 "16777216");
    assert_null(over);
    assert_int_equal(atomic_load(&xpu->physical->bytes_in_use), 16 * MiB);
    /* Freed memory is reused within the share. */
    tp_tensor_release(tensors[2]);
    assert_ok(tp_device_synchronize(xpu));
    assert_ok(tensor_on(context, xpu, 4 * MiB, &over));
    assert_int_equal(stats_of(context, "XPU:0").bytes_reserved, 16 * MiB);
    tp_tensor_release(over);
    tp_tensor_release(tensors[0]);
    tp_tensor_release(tensors[1]);
    tp_tensor_release(tensors[3]);
}

static void out_of_memory_is_a_status_and_freeing_recovers(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_context_set_memory_limit(context, "XPU:0", 4 * MiB));
    tp_device_t *xpu = logical(context, "XPU", 0);
    tp_tensor_t *first, *second = NULL;
    assert_ok(tensor_on(context, xpu, 3 * MiB, &first));
    assert_error(tp_tensor_allocate(context, xpu, TP_FLOAT32, &TP_SHAPE(1024, 1024), &second),
                 TP_RESOURCE_EXHAUSTED,
                 "OOM when allocating tensor with shape [1024,1024] and type float32 on "
                 "/job:localhost/replica:0/task:0/device:XPU:0 by allocator XPU_0_bfc\n"
                 "cannot allocate 4194304 bytes (no free block is large enough); XPU_0_bfc: in "
                 "use 3145728 bytes, peak 3145728, reserved 4194304 of limit 4194304, largest "
                 "free block 1048576, 1 live allocations");
    assert_null(second);
    assert_int_equal(stats_of(context, "XPU:0").num_allocations, 1);
    tp_tensor_release(first);
    assert_ok(tp_device_synchronize(xpu));
    assert_ok(tp_tensor_allocate(context, xpu, TP_FLOAT32, &TP_SHAPE(1024, 1024), &second));
    tp_tensor_release(second);
}

static void statistics_and_the_peak_reset(void **state) {
    tp_context_t *context = *state;
    tp_device_t *cpu = logical(context, "CPU", 0);
    tp_tensor_t *a, *b;
    assert_ok(tensor_on(context, cpu, 1000, &a)); /* rounds to 1024 */
    assert_ok(tensor_on(context, cpu, 4096, &b));
    tp_tensor_release(b);
    assert_ok(tp_device_synchronize(cpu));
    tp_memory_stats_t stats = stats_of(context, "CPU:0");
    assert_int_equal(stats.bytes_in_use, 1024);
    assert_int_equal(stats.peak_bytes_in_use, 1024 + 4096);
    assert_int_equal(stats.num_allocations, 1);
    assert_int_equal(stats.total_allocations, 2);
    assert_true(stats.largest_free_block >= 2 * MiB - 1024 - 256);
    assert_ok(
        tp_context_reset_peak_memory(context, "/job:localhost/replica:0/task:0/device:CPU:0"));
    assert_int_equal(stats_of(context, "CPU:0").peak_bytes_in_use, 1024);
    tp_memory_stats_t old = {.struct_size = offsetof(tp_memory_stats_t, peak_bytes_in_use)};
    assert_ok(tp_context_memory_stats(context, "CPU:0", &old)); /* an older, shorter struct */
    assert_int_equal(old.bytes_in_use, 1024);
    assert_error(tp_context_memory_stats(context, "CPU:3", &stats), TP_NOT_FOUND,
                 "/job:localhost/replica:0/task:0/device:CPU:3 unknown device.");
    assert_error(tp_context_memory_stats(context, "CPU", &stats), TP_INVALID_ARGUMENT,
                 "names no single device");
    tp_tensor_release(a);
}

/* APU:0 into APU:0 and APU:1 in the words; here XPU:0 into two of 16 MiB. */
static void a_split_device_gives_logical_devices_with_their_own_limits(void **state) {
    tp_context_t *context = *state;
    uint64_t limits[] = {16 * MiB, 16 * MiB};
    assert_error(tp_context_set_logical_devices(context, "XPU:0", (uint64_t[]){40 * MiB, 40 * MiB},
                                                2),
                 TP_INVALID_ARGUMENT,
                 "the 2 logical devices of /physical_device:XPU:0 ask for 80.0 MiB together, "
                 "more than the 64.0 MiB it has");
    assert_error(tp_context_set_logical_devices(context, "XPU", limits, 2), TP_INVALID_ARGUMENT,
                 "'XPU' names no single device");
    assert_ok(tp_context_set_logical_devices(context, "XPU:0", limits, 2));
    assert_error(tp_context_set_memory_growth(context, "XPU:0", true), TP_FAILED_PRECONDITION,
                 "cannot set memory growth on /physical_device:XPU:0: it is split into 2 logical "
                 "devices, each with its own memory limit");

    char text[1024] = {0};
    FILE *out = fmemopen(text, sizeof text - 1, "w");
    assert_ok(tp_list_logical_devices(context, "XPU", out));
    fclose(out);
    assert_string_equal(
        text, "LogicalDevice(name='/job:localhost/replica:0/task:0/device:XPU:0', "
              "device_type='XPU')\n"
              "LogicalDevice(name='/job:localhost/replica:0/task:0/device:XPU:1', "
              "device_type='XPU')\n"
              "LogicalDevice(name='/job:localhost/replica:0/task:0/device:XPU:2', "
              "device_type='XPU')\n");
    tp_logical_device_info_t info = {.struct_size = sizeof info};
    assert_ok(tp_logical_device_get(context, "XPU", 2, &info));
    assert_string_equal(info.physical_device, "/physical_device:XPU:1");
    assert_ok(tp_logical_device_get(context, "XPU", 1, &info));
    assert_string_equal(info.physical_device, "/physical_device:XPU:0");
    assert_int_equal(info.ordinal, 1);

    /* Each logical device runs out on its own. */
    tp_tensor_t *a, *b = NULL;
    assert_ok(tensor_on(context, logical(context, "XPU", 0), 12 * MiB, &a));
    assert_error(tensor_on(context, logical(context, "XPU", 0), 8 * MiB, &b),
                 TP_RESOURCE_EXHAUSTED, "by allocator XPU_0_bfc");
    assert_ok(tensor_on(context, logical(context, "XPU", 1), 12 * MiB, &b));
    assert_int_equal(stats_of(context, "XPU:1").bytes_limit, 16 * MiB);
    tp_tensor_release(a);
    tp_tensor_release(b);
}

/* CPU:0 into CPU:0 and CPU:1, used by placement like any two devices. */
static void placement_addresses_logical_devices(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_context_set_logical_devices(context, "CPU:0", (uint64_t[]){64 * MiB, 64 * MiB},
                                             2));
    const float values[4] = {-1, 2, -3, 4};
    tp_tensor_t *x, *y;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x));
    assert_ok(tp_device_push(context, "/device:CPU:1"));
    assert_ok(tp_relu(context, x, &y));
    assert_ok(tp_device_pop(context));
    assert_string_equal(tp_tensor_device(x), "/job:localhost/replica:0/task:0/device:CPU:0");
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:CPU:1");
    float got[4];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_true(got[0] == 0 && got[1] == 2 && got[2] == 0 && got[3] == 4);
    /* relu's input was copied to CPU:1 and released there; its output remains. */
    assert_int_equal(stats_of(context, "CPU:1").bytes_in_use, 256);
    assert_int_equal(stats_of(context, "CPU:1").total_allocations, 2);
    assert_int_equal(stats_of(context, "CPU:1").bytes_limit, 64 * MiB);
    assert_ok(tp_device_push(context, "/device:CPU:2"));
    assert_error(tp_relu(context, x, &y), TP_NOT_FOUND, "device:CPU:2 unknown device.");
    assert_ok(tp_device_pop(context));
    tp_tensor_release(x);
    tp_tensor_release(y);
}

static void visible_devices_choose_and_renumber(void **state) {
    tp_context_t *context = *state;
    assert_error(tp_context_set_visible_devices(context, "XPU:7"), TP_NOT_FOUND,
                 "no device 'XPU:7': there are 2 XPU devices, 0 to 1");
    assert_error(tp_context_set_visible_devices(context, "GPU:0"), TP_NOT_FOUND,
                 "no GPU devices, as 'GPU:0' asks for");
    assert_error(tp_context_set_visible_devices(context, "/job:worker/device:XPU:0"),
                 TP_INVALID_ARGUMENT, "names no device of this host");
    assert_ok(tp_context_set_visible_devices(context, " XPU:1 , CPU:0"));
    size_t count;
    assert_ok(tp_logical_device_count(context, "XPU", &count));
    assert_int_equal(count, 1);
    assert_ok(tp_logical_device_count(context, "OLDDEV", &count));
    assert_int_equal(count, 0); /* a type the list does not name is hidden */
    tp_logical_device_info_t info = {.struct_size = sizeof info};
    assert_ok(tp_logical_device_get(context, "XPU", 0, &info));
    assert_string_equal(info.physical_device, "/physical_device:XPU:1");
    assert_string_equal(info.name, "/job:localhost/replica:0/task:0/device:XPU:0");
    assert_int_equal(tp_physical_device_count(context, "XPU"), 2); /* all are still listed */
}

static void the_environment_chooses_visible_devices_and_forces_growth(void **state) {
    (void)state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_TEST_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_context_t *context = NULL;
    setenv("TP_VISIBLE_DEVICES", "XPU:3", 1);
    assert_error(tp_context_create(&options, &context), TP_NOT_FOUND,
                 "tp_context_create: TP_VISIBLE_DEVICES: tp_context_set_visible_devices: no "
                 "device 'XPU:3'");
    assert_null(context);
    setenv("TP_VISIBLE_DEVICES", "XPU:1", 1);
    setenv("TP_FORCE_ALLOW_GROWTH", "true", 1);
    assert_ok(tp_context_create(&options, &context));
    assert_ok(tp_context_set_memory_limit(context, "XPU:1", 32 * MiB));
    assert_ok(tp_context_set_memory_growth(context, "XPU:1", false)); /* the variable wins */
    size_t count;
    assert_ok(tp_logical_device_count(context, "XPU", &count));
    assert_int_equal(count, 1);
    assert_ok(tp_logical_device_count(context, "OLDDEV", &count));
    assert_int_equal(count, 0); /* the list names no OLDDEV */
    assert_ok(tp_logical_device_count(context, "CPU", &count));
    assert_int_equal(count, 1); /* CPU:0 stays, named or not */
    tp_tensor_t *a;
    assert_ok(tensor_on(context, logical(context, "XPU", 0), 256, &a));
    assert_int_equal(stats_of(context, "XPU:0").bytes_reserved, 2 * MiB);
    tp_tensor_release(a);
    tp_context_destroy(context);

    /* false: XPU:0 reserves at once despite asking to grow; an unknown value is ignored with a
     * warning. */
    setenv("TP_FORCE_ALLOW_GROWTH", "false", 1);
    unsetenv("TP_VISIBLE_DEVICES");
    assert_ok(tp_context_create(&options, &context));
    assert_ok(tp_context_set_memory_growth(context, "XPU:0", true));
    tp_device_t *xpu = logical(context, "XPU", 0);
    assert_ok(tensor_on(context, xpu, 256, &a));
    assert_int_equal(stats_of(context, "XPU:0").bytes_reserved, 48 * MiB);
    tp_tensor_release(a);
    tp_context_destroy(context);
    setenv("TP_FORCE_ALLOW_GROWTH", "sometimes", 1);
    assert_int_equal(tp_memory_config_forced_growth(), TP_GROWTH_DEFAULT);
    unsetenv("TP_FORCE_ALLOW_GROWTH");
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, test_plugins_setup, context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(by_default_a_device_reserves_nearly_all_and_the_cpu_grows),
        TEST(growth_starts_small_doubles_and_never_gives_back),
        TEST(options_are_refused_once_the_devices_are_made),
        TEST(options_a_device_cannot_honour_are_errors),
        TEST(a_fraction_and_a_limit_cap_what_is_reserved),
        TEST(growth_within_a_fraction_stops_at_its_share),
        TEST(out_of_memory_is_a_status_and_freeing_recovers),
        TEST(statistics_and_the_peak_reset),
        TEST(a_split_device_gives_logical_devices_with_their_own_limits),
        cmocka_unit_test_setup_teardown(placement_addresses_logical_devices, cpu_context_setup,
                                        context_teardown),
        TEST(visible_devices_choose_and_renumber),
        cmocka_unit_test(the_environment_chooses_visible_devices_and_forces_growth),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
