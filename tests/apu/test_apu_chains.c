/* Long chains of pending work on an APU: what a host far ahead of its device makes. Run
 * without TP_APU_LATENCY_US: the chain is held by a host callback, not by latency. */
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

static void queue_a_chain(tp_context_t *context, gate_t *gate, tp_tensor_t **out_last) {
    tp_device_t *device;
    assert_ok(tp_context_find_device(context, "APU:0", &device));
    void *stream;
    assert_ok(tp_device_stream(device, &stream));
    const float one = 1;
    tp_tensor_t *x;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(1), &one, sizeof one, &x));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->host_callback(device->handle, stream, wait_at_gate, gate, &status);
    assert_int_equal(status.code, TP_OK);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(long_chains_of_pending_work, setup, context_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
