/* SPDX-License-Identifier: Apache-2.0 */
/* Driving a plug-in's device through its function table, and the host's defaults where the
 * plug-in leaves an optional function out. The CPU provides every optional function; the test
 * plug-in "good" (XPU) provides none; "old_minor" (OLDDEV) predates the 1.1 additions. */
#include "test_support.h"

#include "device_support.h"
#include "device/completion.h"

static int teardown(void **state) {
    tp_context_destroy(*state);
    return 0;
}

static tp_physical_device_t *device_named(tp_context_t *context, const char *name) {
    const tp_physical_device_t *device = NULL;
    assert_ok(tp_physical_device_find(context, name, &device));
    return (tp_physical_device_t *)device;
}

/* Copies "0123456789" to offset 0, then bytes 2..7 to offset 16 within the device, and reads
 * offset 16 back: both with the plug-in's copy and with the host's staged default. */
static void check_copy_within(tp_physical_device_t *physical) {
    tp_device_t *device = device_over(physical);
    void *mem;
    assert_ok(tp_physical_device_allocate(physical, 32, &mem));
    assert_ok(tp_device_copy_from_host(device, mem, 0, "0123456789", 10, NULL));
    tp_completion_t *copied = NULL;
    assert_ok(tp_device_copy(device, mem, 2, NULL, device, mem, 16, 6, &copied));
    assert_ok(tp_completion_wait(copied));
    tp_completion_release(copied);
    char back[7] = {0};
    assert_ok(tp_device_copy_to_host(device, back, mem, 16, 6));
    assert_string_equal(back, "234567");
    tp_physical_device_deallocate(physical, mem, 32);
    tp_device_destroy(device);
}

static void copies_within_a_device(void **state) {
    tp_context_t *context = *state;
    tp_physical_device_t *cpu = device_named(context, "/cpu:0");
    tp_physical_device_t *xpu = device_named(context, "/XPU:1");
    assert_non_null(cpu->def->memcpy_device_to_device);
    assert_null(xpu->def->memcpy_device_to_device);
    check_copy_within(cpu);
    check_copy_within(xpu);
    assert_int_equal(atomic_load(&xpu->bytes_in_use), 0);
}

static void memory_usage_defaults_to_the_reported_total(void **state) {
    tp_context_t *context = *state;
    tp_physical_device_t *xpu = device_named(context, "/XPU:0");
    uint64_t free_bytes = 0, total_bytes = 0;
    tp_physical_device_memory_usage(xpu, &free_bytes, &total_bytes);
    assert_int_equal(total_bytes, 64u << 20);
    assert_int_equal(free_bytes, 64u << 20);
    void *mem;
    assert_ok(tp_physical_device_allocate(xpu, 1000, &mem));
    tp_physical_device_memory_usage(xpu, &free_bytes, &total_bytes);
    assert_int_equal(free_bytes, (64u << 20) - 1000);
    tp_physical_device_deallocate(xpu, mem, 1000);

    tp_physical_device_t *cpu = device_named(context, "/cpu:0");
    tp_physical_device_memory_usage(cpu, &free_bytes, &total_bytes);
    assert_int_equal(total_bytes, tp_physical_device_memory_bytes(cpu));
    assert_true(free_bytes > 0 && free_bytes <= total_bytes);
}

static void count_call(void *arg) { (*(int *)arg)++; }

static void host_callbacks_and_device_waits(void **state) {
    tp_context_t *context = *state;
    const char *names[] = {"/cpu:0", "/XPU:0", "/OLDDEV:0"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tp_physical_device_t *physical = device_named(context, names[i]);
        tp_device_t *device = device_over(physical);
        int calls = 0;
        assert_ok(tp_device_then(device, count_call, &calls));
        assert_ok(tp_device_synchronize(device));
        assert_ok(tp_physical_device_synchronize(physical));
        assert_int_equal(calls, 1);
        tp_device_destroy(device);
    }
    assert_null(device_named(context, "/OLDDEV:0")->def->host_callback);
}

static void allocation_failures_name_the_device(void **state) {
    tp_context_t *context = *state;
    tp_physical_device_t *cpu = device_named(context, "/cpu:0");
    void *mem = NULL;
    assert_error(tp_physical_device_allocate(cpu, UINT64_MAX - 10, &mem), TP_RESOURCE_EXHAUSTED,
                 "allocating 18446744073709551605 bytes on "
                 "/job:localhost/replica:0/task:0/device:CPU:0: the CPU could not allocate");
    assert_null(mem);
    assert_int_equal(atomic_load(&cpu->bytes_in_use), 0);
    assert_int_equal(atomic_load(&cpu->live_allocations), 0);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, test_plugins_setup, teardown)
    const struct CMUnitTest tests[] = {
        TEST(copies_within_a_device),
        TEST(memory_usage_defaults_to_the_reported_total),
        TEST(host_callbacks_and_device_waits),
        TEST(allocation_failures_name_the_device),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
