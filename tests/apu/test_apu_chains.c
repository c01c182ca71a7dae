/* SPDX-License-Identifier: Apache-2.0 */
/* Pending work on an APU: long chains of it, as a host far ahead of its device makes, and the
 * memory it still reads. Run without TP_APU_LATENCY_US: the work is held by a host callback,
 * not by latency. */
#include "../unit/test_support.h"

#include <pthread.h>

#include "../unit/device_support.h"
#include "plugin/plugin_status.h"

static int setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    return create_context_state(state, &options);
}

/* A host callback that holds APU:0's queue until the test opens the gate. */
typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t opened;
    bool open;
} gate_t;

static void wait_at_gate(void *arg) {
    gate_t *gate = arg;
    pthread_mutex_lock(&gate->mutex);
    while (!gate->open) pthread_cond_wait(&gate->opened, &gate->mutex);
    pthread_mutex_unlock(&gate->mutex);
}

static void open_gate(gate_t *gate) {
    pthread_mutex_lock(&gate->mutex);
    gate->open = true;
    pthread_cond_broadcast(&gate->opened);
    pthread_mutex_unlock(&gate->mutex);
}

/* CHAIN Relus, each reading the one before, queued on APU:0 behind a held queue: one long
 * chain of pending work, as a host far ahead of its device makes. Dropping the chain unread,
 * and waiting for the end of another, walk it without recursion (50,000 frames would not fit
 * a thread's stack) and leave no memory behind. */
enum { CHAIN = 50000 };

/* Holds APU:0's queue at `gate`: all work queued on it from now on is pending until the gate
 * opens. */
static tp_device_t *hold_apu(tp_context_t *context, gate_t *gate) {
    tp_device_t *device;
    assert_ok(tp_context_find_device(context, "APU:0", &device));
    void *stream;
    assert_ok(tp_device_stream(device, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->host_callback(device->handle, stream, wait_at_gate, gate, &status);
    assert_int_equal(status.code, TP_OK);
    return device;
}

static void queue_a_chain(tp_context_t *context, gate_t *gate, tp_tensor_t **out_last) {
    const float one = 1;
    tp_tensor_t *x;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(1), &one, sizeof one, &x));
    hold_apu(context, gate);
    for (int i = 0; i < CHAIN; i++) {
        tp_tensor_t *y;
        assert_ok(tp_relu(context, x, &y));
        tp_tensor_release(x);
        x = y;
    }
    bool ready = true;
    assert_ok(tp_tensor_query(x, &ready));
    assert_false(ready);
    *out_last = x;
}

static void long_chains_of_pending_work(void **state) {
    tp_context_t *context = *state;
    gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    tp_tensor_t *last;
    queue_a_chain(context, &gate, &last);
    tp_tensor_release(last); /* dropped while every link is pending */
    open_gate(&gate);
    gate.open = false;
    queue_a_chain(context, &gate, &last);
    open_gate(&gate);
    float got = 0;
    assert_ok(tp_tensor_read(last, &got, sizeof got));
    assert_true(got == 1);
    tp_tensor_release(last);
    assert_ok(tp_context_synchronize(context));
}

/* 64 float32: one of the allocator's 256-byte units. */
enum { VALUES = 64, UNIT = 256 };

/* A tensor freed while work queued before it may still read it keeps its memory until that
 * work is done, with no host callback to say so: the memory statistics and the next
 * allocation take it back once the device is past it. */
static void frees_wait_for_the_work_before_them(void **state) {
    tp_context_t *context = *state;
    gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    float values[VALUES];
    for (int i = 0; i < VALUES; i++) values[i] = (float)i;
    tp_tensor_t *x, *y, *z;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(VALUES), values, sizeof values, &x));
    tp_device_t *apu = hold_apu(context, &gate);
    assert_ok(tp_device_push(context, "/APU:0"));
    assert_ok(tp_relu(context, x, &y)); /* x's copy on APU:0 is freed at once, after the Relu */
    assert_ok(tp_relu(context, y, &z));
    assert_ok(tp_device_pop(context));
    tp_tensor_release(x);
    tp_tensor_release(y); /* the second Relu, pending, still reads it */
    uint64_t held = device_bytes_in_use(apu);
    open_gate(&gate); /* before anything can fail: a test that stops holds the queue forever */
    assert_int_equal(held, 3 * UNIT);
    assert_ok(tp_tensor_wait(z));
    assert_int_equal(device_bytes_in_use(apu), UNIT);
    float got[VALUES];
    assert_ok(tp_tensor_read(z, got, sizeof got));
    assert_memory_equal(got, values, sizeof got);
    tp_tensor_release(z);
}

/* A host tensor copied to an APU is read by the APU's stream in its own order, straight from
 * the tensor's memory: released before the copy ran, the tensor's memory is not reused until
 * it has. */
static void host_memory_outlives_the_copy_that_reads_it(void **state) {
    tp_context_t *context = *state;
    gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    float first[VALUES], second[VALUES];
    for (int i = 0; i < VALUES; i++) {
        first[i] = (float)(i + 1);
        second[i] = (float)(VALUES + i + 1);
    }
    tp_tensor_t *a, *b, *y;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(VALUES), first, sizeof first, &a));
    tp_device_t *cpu;
    assert_ok(tp_context_find_device(context, "CPU:0", &cpu));
    uint64_t before = device_bytes_in_use(cpu);
    hold_apu(context, &gate);
    assert_ok(tp_device_push(context, "/APU:0"));
    assert_ok(tp_relu(context, a, &y));
    assert_ok(tp_device_pop(context));
    tp_tensor_release(a);
    /* Made where `a` was, were its memory free already. */
    tp_status_t *made = tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(VALUES), second,
                                         sizeof second, &b);
    uint64_t held = device_bytes_in_use(cpu);
    open_gate(&gate); /* before anything can fail: a test that stops holds the queue forever */
    assert_ok(made);
    assert_int_equal(held, before + UNIT);
    float got[VALUES];
    assert_ok(tp_tensor_read(y, got, sizeof got));
    assert_memory_equal(got, first, sizeof got);
    assert_int_equal(device_bytes_in_use(cpu), before);
    tp_tensor_release(y);
    tp_tensor_release(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(long_chains_of_pending_work, setup, context_teardown),
        cmocka_unit_test_setup_teardown(frees_wait_for_the_work_before_them, setup,
                                        context_teardown),
        cmocka_unit_test_setup_teardown(host_memory_outlives_the_copy_that_reads_it, setup,
                                        context_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
