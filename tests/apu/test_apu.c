/* SPDX-License-Identifier: Apache-2.0 */
/* The APU plug-in through the runtime: its devices, memory, ordering, events, Relu and the
 * kernels for the dtypes of ABI 1.7. Run with TP_APU_DEVICES=2, TP_APU_MEMORY=64M and
 * TP_APU_LATENCY_US=200, so that queued work is still queued when the host looks. */
#include "../unit/test_support.h"

#include <math.h>
#include <stdlib.h>

#include "../unit/device_support.h"
#include "device/completion.h"
#include "plugin/plugin_status.h"
#include "tensor/tensor.h"
#include "tensorplug/training.h"

static int setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    tp_log_set_level(TP_LOG_ERROR); /* fallbacks of ops without APU kernels are expected */
    return create_context_state(state, &options);
}

static tp_physical_device_t *apu(tp_context_t *context, int ordinal) {
    const tp_physical_device_t *device;
    char name[32];
    snprintf(name, sizeof name, "/APU:%d", ordinal);
    assert_ok(tp_physical_device_find(context, name, &device));
    return (tp_physical_device_t *)device;
}

static void two_devices_with_their_own_memory(void **state) {
    tp_context_t *context = *state;
    assert_int_equal(tp_physical_device_count(context, "APU"), 2);
    for (int i = 0; i < 2; i++) {
        tp_physical_device_t *device = apu(context, i);
        assert_string_equal(tp_physical_device_hardware_name(device),
                            "Awesome Processing Unit (simulated)");
        assert_int_equal(tp_physical_device_memory_bytes(device), 64u << 20);
    }
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    assert_ok(tp_list_physical_devices(context, NULL, out));
    fclose(out);
    assert_string_equal(text,
                        "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')\n"
                        "PhysicalDevice(name='/physical_device:APU:0', device_type='APU')\n"
                        "PhysicalDevice(name='/physical_device:APU:1', device_type='APU')\n");
    free(text);
}

static void device_memory_is_not_host_memory(void **state) {
    tp_context_t *context = *state;
    tp_physical_device_t *device = apu(context, 0);
    void *mem;
    assert_ok(tp_physical_device_allocate(device, 4096, &mem));
    /* The handle is a device address far from any host mapping. */
    assert_true((uintptr_t)mem >= UINT64_C(0x5A5A00000000));
    uint64_t free_bytes, total;
    tp_physical_device_memory_usage(device, &free_bytes, &total);
    assert_int_equal(total, 64u << 20);
    assert_int_equal(free_bytes, (64u << 20) - 4096);
    tp_physical_device_deallocate(device, mem, 4096);
    tp_physical_device_memory_usage(device, &free_bytes, &total);
    assert_int_equal(free_bytes, 64u << 20);
    /* More than the device has fails cleanly. */
    assert_error(tp_physical_device_allocate(device, 65u << 20, &mem), TP_RESOURCE_EXHAUSTED,
                 "APU:0: cannot allocate 68157440 bytes of 67108864");
}

static void relu_on_the_apu_equals_relu_on_the_cpu(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *a, *on_apu, *on_cpu;
    assert_ok(tp_random_normal(context, TP_FLOAT32, TP_SHAPE(1000), 7, &a));
    assert_ok(tp_relu(context, a, &on_apu));
    assert_string_equal(tp_tensor_device(on_apu), "/job:localhost/replica:0/task:0/device:APU:0");
    assert_ok(tp_device_push(context, "/CPU:0"));
    assert_ok(tp_relu(context, a, &on_cpu));
    assert_ok(tp_device_pop(context));
    static float x[1000], y[1000];
    assert_ok(tp_tensor_read(on_apu, x, sizeof x)); /* waits for the APU's queue */
    assert_ok(tp_tensor_read(on_cpu, y, sizeof y));
    assert_memory_equal(x, y, sizeof x);
    int positive = 0;
    for (int i = 0; i < 1000; i++) positive += x[i] > 0;
    assert_true(positive > 400 && positive < 600);
    tp_tensor_release(a);
    tp_tensor_release(on_apu);
    tp_tensor_release(on_cpu);
}

/* The APU has no GradientDescentUpdate kernel: tp_sgd_apply takes a Mul and a Sub for a
 * variable there (run where they can be, the result copied back) and gives the CPU's bits. */
static void sgd_updates_a_variable_on_the_apu_as_on_the_cpu(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *initial, *grad;
    assert_ok(tp_random_normal(context, TP_FLOAT32, TP_SHAPE(257), 3, &initial));
    assert_ok(tp_random_normal(context, TP_FLOAT32, TP_SHAPE(257), 4, &grad));
    tp_variable_t *on_apu, *on_cpu;
    assert_ok(tp_variable_create(context, "a", initial, "/APU:0", &on_apu));
    assert_ok(tp_variable_create(context, "c", initial, "/CPU:0", &on_cpu));
    for (int step = 0; step < 3; step++) {
        assert_ok(tp_sgd_apply(&on_apu, &grad, 1, 0.037));
        assert_ok(tp_sgd_apply(&on_cpu, &grad, 1, 0.037));
    }
    assert_string_equal(tp_variable_device(on_apu), "/job:localhost/replica:0/task:0/device:APU:0");
    tp_tensor_t *a, *c;
    assert_ok(tp_variable_read(on_apu, &a));
    assert_ok(tp_variable_read(on_cpu, &c));
    assert_string_equal(tp_tensor_device(a), "/job:localhost/replica:0/task:0/device:APU:0");
    static float x[257], y[257], start[257];
    assert_ok(tp_tensor_read(a, x, sizeof x));
    assert_ok(tp_tensor_read(c, y, sizeof y));
    assert_ok(tp_tensor_read(initial, start, sizeof start));
    assert_memory_equal(x, y, sizeof x);
    assert_memory_not_equal(x, start, sizeof x);
    tp_tensor_t *made[] = {a, c, initial, grad};
    for (size_t t = 0; t < COUNT_OF(made); t++) tp_tensor_release(made[t]);
    tp_variable_destroy(on_apu);
    tp_variable_destroy(on_cpu);
}

static void the_second_apu_is_addressed_by_scope(void **state) {
    tp_context_t *context = *state;
    const float values[4] = {-1, 2, -3, 4};
    tp_tensor_t *a, *b;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &a));
    assert_ok(tp_device_push(context, "/device:APU:1"));
    assert_ok(tp_relu(context, a, &b));
    assert_ok(tp_device_pop(context));
    assert_string_equal(tp_tensor_device(b), "/job:localhost/replica:0/task:0/device:APU:1");
    float got[4];
    assert_ok(tp_tensor_read(b, got, sizeof got));
    assert_true(got[0] == 0 && got[1] == 2 && got[2] == 0 && got[3] == 4);
    tp_tensor_release(a);
    tp_tensor_release(b);
}

/* Relu of `count` elements of `dtype` on APU:0, where its kernel places it: `want`'s bytes. */
static void expect_relu_on_apu(tp_context_t *context, tp_dtype_t dtype, const void *values,
                               size_t size, size_t count, const void *want) {
    tp_tensor_t *x, *y;
    assert_ok(tp_tensor_create(context, dtype, TP_SHAPE((int64_t)count), values, size, &x));
    assert_ok(tp_relu(context, x, &y));
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:APU:0");
    unsigned char got[64];
    assert_ok(tp_tensor_read(y, got, size));
    assert_memory_equal(got, want, size);
    tp_tensor_release(x);
    tp_tensor_release(y);
}

/* The dtypes of ABI 1.7 (apu_dtypes.c): Relu of the narrow and unsigned integers runs on the
 * APU and gives what Relu means for each; Add of float16 broadcasts and gives the CPU's bits,
 * both rounding float32's sum once; float32's Add, which the APU lacks, stays on the CPU. */
static void new_dtypes_run_on_the_apu(void **state) {
    tp_context_t *context = *state;
    const int8_t bytes[4] = {-128, 5, 0, -1}, relu_bytes[4] = {0, 5, 0, 0};
    expect_relu_on_apu(context, TP_INT8, bytes, sizeof bytes, 4, relu_bytes);
    const uint64_t longs[2] = {UINT64_MAX, 3}; /* unsigned: nothing is below 0 */
    expect_relu_on_apu(context, TP_UINT64, longs, sizeof longs, 2, longs);

    tp_tensor_t *a, *b, *y, *wide, *on_cpu;
    assert_ok(tp_random_normal(context, TP_FLOAT16, TP_SHAPE(50, 20), 3, &a));
    assert_ok(tp_random_normal(context, TP_FLOAT16, TP_SHAPE(20), 4, &b));
    assert_ok(tp_add(context, a, b, &y));
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:APU:0");
    assert_ok(tp_device_push(context, "/CPU:0"));
    assert_ok(tp_add(context, a, b, &on_cpu));
    assert_ok(tp_cast(context, a, TP_FLOAT32, &wide));
    assert_ok(tp_device_pop(context));
    static uint16_t from_apu[1000], from_cpu[1000];
    assert_ok(tp_tensor_read(y, from_apu, sizeof from_apu));
    assert_ok(tp_tensor_read(on_cpu, from_cpu, sizeof from_cpu));
    assert_memory_equal(from_apu, from_cpu, sizeof from_apu);
    tp_tensor_release(y);
    assert_ok(tp_add(context, wide, wide, &y));
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:CPU:0");
    tp_tensor_release(y);
    tp_tensor_release(wide);
    tp_tensor_release(on_cpu);
    tp_tensor_release(a);
    tp_tensor_release(b);
}

/* The handle of an APU tensor's memory lies in the APU's own address range (its arena of
 * 64 MiB from APU_ADDRESS_BASE), not in host memory. */
static void assert_device_address(const tp_tensor_t *tensor) {
    uintptr_t address = (uintptr_t)tensor->mem + tensor->offset;
    assert_true(address >= UINT64_C(0x5A5A00000000));
    assert_true(address + tensor->byte_size <= UINT64_C(0x5A5A00000000) + (64u << 20));
}

/* A kernel queued behind slow commands (200 us each) is not done when the op returns: its
 * output is still pending, and a read waits for it. */
static void work_is_asynchronous_and_reads_wait(void **state) {
    tp_context_t *context = *state;
    static float values[256];
    for (int i = 0; i < 256; i++) values[i] = (float)(i - 128);
    tp_tensor_t *a, *b, *c;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(256), values, sizeof values, &a));
    assert_ok(tp_relu(context, a, &b));
    assert_ok(tp_relu(context, b, &c)); /* input already on the APU: no copy */
    bool ready = true;
    assert_ok(tp_tensor_query(c, &ready));
    assert_false(ready);
    assert_device_address(b);
    assert_device_address(c);
    float got[256];
    assert_ok(tp_tensor_read(c, got, sizeof got));
    for (int i = 0; i < 256; i++) assert_true(got[i] == (i < 128 ? 0.0f : (float)(i - 128)));
    assert_ok(tp_tensor_query(c, &ready));
    assert_true(ready);
    assert_ok(tp_tensor_query(b, &ready)); /* made before c, on the same stream */
    assert_true(ready);
    tp_tensor_release(a);
    tp_tensor_release(b);
    tp_tensor_release(c);
}

/* An event recorded after queued work completes only after it. */
static void events_complete_in_stream_order(void **state) {
    tp_context_t *context = *state;
    tp_physical_device_t *physical = apu(context, 0);
    tp_device_t *device = device_over(physical);
    const tp_device_type_def_t *def = device->def;
    void *stream, *event, *mem;
    assert_ok(tp_device_stream(device, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    def->event_create(device->handle, &event, &status);
    assert_int_equal(status.code, TP_OK);
    assert_int_equal(def->event_query(device->handle, event), TP_EVENT_COMPLETE);
    static unsigned char bytes[1 << 16];
    assert_ok(tp_physical_device_allocate(physical, sizeof bytes, &mem));
    tp_completion_t *copies[5];
    for (int i = 0; i < 5; i++) /* five commands of 200 us each, each with its event */
        assert_ok(tp_device_copy_from_host(device, mem, 0, bytes, sizeof bytes, &copies[i]));
    def->event_record(device->handle, stream, event, &status);
    assert_int_equal(status.code, TP_OK);
    assert_int_equal(def->event_query(device->handle, event), TP_EVENT_PENDING);
    def->event_synchronize(device->handle, event, &status);
    assert_int_equal(status.code, TP_OK);
    assert_int_equal(def->event_query(device->handle, event), TP_EVENT_COMPLETE);
    for (int i = 0; i < 5; i++) { /* the event came after them: each copy is done, and OK */
        tp_status_t *failure = (tp_status_t *)1;
        assert_true(tp_completion_poll(copies[i], &failure));
        assert_null(failure);
        tp_completion_release(copies[i]);
    }
    def->event_destroy(device->handle, event);
    assert_ok(tp_device_synchronize(device));
    tp_physical_device_deallocate(physical, mem, sizeof bytes);
    tp_device_destroy(device);
}

/* A chain of Relus queued on APU:0, then one on APU:1 reading its end: the value crosses by the
 * APU's peer copy, queued behind the chain, and APU:1 waits for it by an event. Were either
 * order broken, APU:1 would read the value before the chain made it; then back to APU:0. */
static void copies_between_apus_follow_stream_order(void **state) {
    tp_context_t *context = *state;
    static float values[512];
    for (int i = 0; i < 512; i++) values[i] = (float)(i % 7) - 3;
    const char *const hops[] = {"/device:APU:0", "/device:APU:1", "/device:APU:0"};
    tp_tensor_t *value;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(512), values, sizeof values,
                               &value));
    for (int hop = 0; hop < 3; hop++) {
        assert_ok(tp_device_push(context, hops[hop]));
        for (int i = 0; i < 5; i++) {
            tp_tensor_t *next;
            assert_ok(tp_relu(context, value, &next));
            tp_tensor_release(value);
            value = next;
        }
        assert_ok(tp_device_pop(context));
    }
    assert_string_equal(tp_tensor_device(value), "/job:localhost/replica:0/task:0/device:APU:0");
    float got[512];
    assert_ok(tp_tensor_read(value, got, sizeof got));
    for (int i = 0; i < 512; i++) assert_true(got[i] == (values[i] > 0 ? values[i] : 0));
    tp_tensor_release(value);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(two_devices_with_their_own_memory),
        TEST(device_memory_is_not_host_memory),
        TEST(relu_on_the_apu_equals_relu_on_the_cpu),
        TEST(sgd_updates_a_variable_on_the_apu_as_on_the_cpu),
        TEST(the_second_apu_is_addressed_by_scope),
        TEST(new_dtypes_run_on_the_apu),
        TEST(work_is_asynchronous_and_reads_wait),
        TEST(events_complete_in_stream_order),
        TEST(copies_between_apus_follow_stream_order),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
