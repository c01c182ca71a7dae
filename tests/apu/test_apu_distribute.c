/* SPDX-License-Identifier: Apache-2.0 */
/* All-reduce across a mix of devices: CPU:0 and CPU:1 (the host split in two logical devices)
 * and two APUs, which have no AddN kernel and so reduce on CPU:0 with the result copied back.
 * Run with TP_APU_DEVICES=2 and TP_APU_LATENCY_US=200, so that APU work is still queued when
 * the replicas meet. */
#include "../unit/test_support.h"

#include "../unit/device_support.h"
#include "tensorplug/training.h"

static const char *const mixed[4] = {"/cpu:0", "/device:APU:0", "/cpu:1", "/device:APU:1"};

static int setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    tp_log_set_level(TP_LOG_ERROR);
    if (create_context_state(state, &options) != 0) return -1;
    const uint64_t limits[2] = {64ull << 20, 64ull << 20};
    tp_status_t *error = tp_context_set_logical_devices(*state, "CPU:0", limits, 2);
    if (error == NULL) return 0;
    print_error("%s\n", tp_status_message(error));
    tp_status_free(error);
    return -1;
}

static int teardown(void **state) { return context_teardown(state); }

enum { COUNT = 1000 };

typedef struct {
    tp_tensor_t *results[4];
} run_t;

/* Replica r makes relu(x_r) on its device (on an APU, queued behind the latency), where
 * x_r[i] = (r + 1) * i - 500, and all-reduces it. */
static tp_status_t *replica(tp_replica_context_t *replica_context, void *arg) {
    run_t *run = arg;
    size_t r = tp_replica_index(replica_context);
    tp_context_t *context = tp_replica_context(replica_context);
    float values[COUNT];
    for (int i = 0; i < COUNT; i++) values[i] = (float)(r + 1) * (float)i - 500.0f;
    tp_tensor_t *x, *y;
    tp_status_t *error =
        tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(COUNT), values, sizeof values, &x);
    if (error != NULL) return error;
    error = tp_relu(context, x, &y);
    tp_tensor_release(x);
    if (error != NULL) return error;
    error = tp_replica_all_reduce(replica_context, TP_REDUCE_MEAN, &y, 1, &run->results[r]);
    tp_tensor_release(y);
    return error;
}

static float relu(float v) { return v > 0 ? v : 0; }

static void all_reduce_across_cpus_and_apus(void **state) {
    tp_context_t *context = *state;
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, mixed, 4, &strategy));
    for (int round = 0; round < 3; round++) {
        run_t run = {{NULL}};
        assert_ok(tp_mirrored_strategy_run(strategy, replica, &run));
        float first[COUNT];
        assert_ok(tp_tensor_read(run.results[0], first, sizeof first));
        for (int i = 0; i < COUNT; i++) {
            float sum = 0;
            for (int r = 0; r < 4; r++) sum += relu((float)(r + 1) * (float)i - 500.0f);
            assert_float_equal(first[i], sum / 4.0f, 1e-4);
        }
        for (size_t r = 0; r < 4; r++) {
            /* Each replica's result lives on its own device and equals the others. */
            char wanted[128];
            snprintf(wanted, sizeof wanted, "%s", tp_mirrored_strategy_device(strategy, r));
            assert_string_equal(tp_tensor_device(run.results[r]), wanted);
            float got[COUNT];
            assert_ok(tp_tensor_read(run.results[r], got, sizeof got));
            assert_memory_equal(got, first, sizeof got);
            tp_tensor_release(run.results[r]);
        }
    }
    tp_mirrored_strategy_destroy(strategy);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(all_reduce_across_cpus_and_apus, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
