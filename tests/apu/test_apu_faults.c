/* SPDX-License-Identifier: Apache-2.0 */
/* The APU's injected faults through the runtime, in eager mode, in traced functions and across
 * two APUs: each becomes a status naming the op and the device, the context stays usable (the
 * same work then gives the right values), and no memory is left behind. The fault comes from
 * the environment (read once per process, and each fires once), so ctest runs this program
 * once per fault and place:
 *   TP_APU_FAIL_ALLOCATION=1 test_apu_faults allocation
 *   TP_APU_FAIL_KERNEL=2     test_apu_faults kernel
 *   TP_APU_FAIL_ALLOCATION=1 test_apu_faults graph_allocation
 *   TP_APU_FAIL_KERNEL=2     test_apu_faults graph_kernel
 *   TP_APU_FAIL_ALLOCATION=2 test_apu_faults mirrored_allocation    (TP_APU_DEVICES=2)
 *   TP_APU_FAIL_KERNEL=1     test_apu_faults mirrored_kernel        (TP_APU_DEVICES=2)
 *   TP_APU_FAIL_KERNEL=1     test_apu_faults peer_kernel            (TP_APU_DEVICES=2)
 *   TP_APU_FAIL_KERNEL=1     test_apu_faults event_contract         (TP_APU_DEVICES=2)
 * The kernel faults run with TP_APU_LATENCY_US, so that the failing launch is still queued
 * when the host moves on: its error can only surface at a later wait. */
#include "../unit/test_support.h"

#include <stdio.h>
#include <stdlib.h>

#include "../unit/device_support.h"
#include "../unit/graph_support.h"
#include "plugin/plugin_status.h"
#include "tensorplug/training.h"

#define DEVICE_PREFIX "/job:localhost/replica:0/task:0/device:"

static const float values[4] = {-1, 2, -3, 4};
static const char *const apus[2] = {"/device:APU:0", "/device:APU:1"};

static tp_context_t *apu_context(size_t count) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    assert_int_equal(tp_physical_device_count(context, "APU"), count);
    return context;
}

/* A piece of work on a context: on success it has checked its values itself. */
typedef tp_status_t *(*work_fn)(tp_context_t *context, void *arg);

/* After a fault: no tensor memory is held, the same work gives the right values, and no error
 * is left for a later wait to find. */
static void assert_recovers(tp_context_t *context, work_fn work, void *arg) {
    assert_int_equal(tensor_bytes_in_use(context), 0);
    assert_ok(work(context, arg));
    for (size_t i = 0; i < context->registry.num_devices; i++)
        assert_ok(tp_device_synchronize(context->registry.devices[i]));
    assert_int_equal(tensor_bytes_in_use(context), 0);
}

/* Fails the test unless `status` is `code` with a message that holds every one of `parts`;
 * frees it. */
static void assert_error_naming(tp_status_t *status, tp_code_t code, const char *const *parts,
                                size_t count) {
    assert_non_null(status);
    bool named = true;
    for (size_t i = 0; i < count; i++)
        named = named && strstr(tp_status_message(status), parts[i]) != NULL;
    if (tp_status_code(status) != code || !named) {
        print_error("got %s: '%s'\n", tp_code_name(tp_status_code(status)),
                    tp_status_message(status));
        tp_status_free(status);
        fail();
    }
    tp_status_free(status);
}

/* relu(values) read back from `y`, once the earlier steps succeeded. */
static tp_status_t *read_relu(tp_tensor_t *y, tp_status_t *status) {
    float got[4];
    if (status == NULL) status = tp_tensor_read(y, got, sizeof got);
    if (status == NULL) assert_true(got[0] == 0 && got[1] == 2 && got[2] == 0 && got[3] == 4);
    return status;
}

/* ---- Eager ----------------------------------------------------------------------------------- */

/* relu(values) on APU:0 (the best device for it). */
static tp_status_t *relu_on_apu(tp_context_t *context, void *arg) {
    (void)arg;
    tp_tensor_t *x = NULL, *y = NULL;
    tp_status_t *status =
        tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x);
    if (status == NULL) status = tp_relu(context, x, &y);
    status = read_relu(y, status);
    tp_tensor_release(x);
    tp_tensor_release(y);
    return status;
}

/* TP_APU_FAIL_ALLOCATION=1: the APU's allocator takes its region from the device on the first
 * tensor, the input's copy; that fails, and the next Relu's attempt succeeds. */
static void a_failed_allocation_is_a_status(void **state) {
    (void)state;
    tp_context_t *context = apu_context(1);
    assert_error(relu_on_apu(context, NULL), TP_RESOURCE_EXHAUSTED,
                 "Relu: input 0: OOM when allocating tensor with shape [4] and type float32 on "
                 "/job:localhost/replica:0/task:0/device:APU:0 by allocator APU_0_bfc\n"
                 "cannot allocate 16 bytes (allocating 8388608 bytes on "
                 "/job:localhost/replica:0/task:0/device:APU:0: APU:0: injected failure of "
                 "allocation 1 (TP_APU_FAIL_ALLOCATION)); APU_0_bfc: in use 0 bytes");
    assert_recovers(context, relu_on_apu, NULL);
    tp_context_destroy(context);
}

#define KERNEL_FAILURE(launch)                                                                 \
    "Relu on " DEVICE_PREFIX "APU:0: Relu on APU:0: injected failure of kernel launch " launch  \
    ", on 4 elements (TP_APU_FAIL_KERNEL)"

/* TP_APU_FAIL_KERNEL=2: the second launch fails on the queue thread, after the op returned.
 * The failure is its output's: every read of it reports it, a tensor made before it on the
 * same stream reads right, and nothing is left for a wait on the device. */
static void a_failed_kernel_surfaces_at_the_read(void **state) {
    (void)state;
    tp_context_t *context = apu_context(1);
    tp_tensor_t *x, *before, *failed;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x));
    assert_ok(tp_relu(context, x, &before));
    assert_ok(tp_relu(context, x, &failed)); /* queued: the failure is not known yet */
    float got[4];
    for (int read = 0; read < 2; read++)
        assert_error(tp_tensor_read(failed, got, sizeof got), TP_INTERNAL, KERNEL_FAILURE("2"));
    assert_error(tp_tensor_wait(failed), TP_INTERNAL, KERNEL_FAILURE("2"));
    assert_ok(read_relu(before, NULL));
    assert_ok(tp_context_synchronize(context));
    tp_tensor_release(before);
    tp_tensor_release(failed);
    tp_tensor_release(x);
    assert_recovers(context, relu_on_apu, NULL);
    tp_context_destroy(context);
}

/* ---- A traced function ----------------------------------------------------------------------- */

/* sum(relu(x + x)): the addition on the CPU, the relu on APU:0, the sum on the CPU again, so
 * that each device has a block of intermediate values (the CPU's first) and the value comes
 * back to the CPU through a copy that waits for APU:0. */
static tp_status_t *spread_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    (void)user_data;
    tp_tensor_t *doubled = NULL, *relu = NULL;
    tp_status_t *error = tp_add(context, inputs[0], inputs[0], &doubled);
    if (error == NULL) error = scoped(context, apus[0], tp_relu, doubled, &relu);
    if (error == NULL) error = tp_sum(context, relu, NULL, 0, false, &outputs[0]);
    tp_tensor_release(doubled);
    tp_tensor_release(relu);
    return error;
}

/* One call of the function on `values`: 0 + 4 + 0 + 8. */
static tp_status_t *call_spread(tp_context_t *context, void *function) {
    tp_tensor_t *x = NULL, *sum = NULL;
    tp_status_t *status =
        tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x);
    if (status == NULL) status = tp_function_call(function, &x, 1, &sum, 1);
    float got = 0;
    if (status == NULL) status = tp_tensor_read(sum, &got, sizeof got);
    if (status == NULL) assert_true(got == 12);
    tp_tensor_release(x);
    tp_tensor_release(sum);
    return status;
}

/* TP_APU_FAIL_ALLOCATION=1: the APU's region is first asked for by the call's block of
 * intermediate values on APU:0, after the CPU's block was taken; the CPU's goes back. */
static void a_failed_allocation_in_a_function_is_a_status(void **state) {
    (void)state;
    tp_context_t *context = apu_context(1);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "spread", spread_body, 1, NULL, &function));
    assert_error(call_spread(context, function), TP_RESOURCE_EXHAUSTED,
                 "OOM when allocating the 128 bytes of the intermediate values of function "
                 "'spread' on /job:localhost/replica:0/task:0/device:APU:0: cannot allocate 128 "
                 "bytes (allocating 8388608 bytes on /job:localhost/replica:0/task:0/device:APU:0"
                 ": APU:0: injected failure of allocation 1 (TP_APU_FAIL_ALLOCATION)); "
                 "APU_0_bfc: in use 0 bytes");
    assert_recovers(context, call_spread, function);
    tp_function_destroy(function);
    tp_context_destroy(context);
}

/* TP_APU_FAIL_KERNEL=2: the second call's relu fails on APU:0's queue, behind the latency;
 * the call's copy back to the CPU is what waits for it, so the call fails, naming its node, and
 * the failure names the op and the device where it happened. */
static void a_failed_kernel_in_a_function_fails_the_call(void **state) {
    (void)state;
    tp_context_t *context = apu_context(1);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "spread", spread_body, 1, NULL, &function));
    assert_ok(call_spread(context, function));
    const char *const parts[] = {
        "in function 'spread', node copy", ": " KERNEL_FAILURE("2")};
    assert_error_naming(call_spread(context, function), TP_INTERNAL, parts, 2);
    assert_recovers(context, call_spread, function);
    tp_function_destroy(function);
    tp_context_destroy(context);
}

/* ---- Two APUs -------------------------------------------------------------------------------- */

enum { COUNT = 64 };

typedef struct {
    tp_tensor_t *results[2];
} run_t;

/* Replica r makes relu(x_r) on its APU, x_r[i] = (r + 1) * i - 32, and all-reduces it. */
static tp_status_t *replica(tp_replica_context_t *replica_context, void *arg) {
    run_t *run = arg;
    size_t r = tp_replica_index(replica_context);
    tp_context_t *context = tp_replica_context(replica_context);
    float x_values[COUNT];
    for (int i = 0; i < COUNT; i++) x_values[i] = (float)(r + 1) * (float)i - 32.0f;
    tp_tensor_t *x, *y;
    tp_status_t *error =
        tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(COUNT), x_values, sizeof x_values, &x);
    if (error != NULL) return error;
    error = tp_relu(context, x, &y);
    tp_tensor_release(x);
    if (error != NULL) return error;
    error = tp_replica_all_reduce(replica_context, TP_REDUCE_SUM, &y, 1, &run->results[r]);
    tp_tensor_release(y);
    return error;
}

/* A mirrored run on both APUs; on success each replica's result is checked, and whatever a
 * replica made is released. */
static tp_status_t *run_mirrored(tp_context_t *context, void *strategy) {
    (void)context;
    run_t run = {{NULL}};
    tp_status_t *status = tp_mirrored_strategy_run(strategy, replica, &run);
    for (size_t r = 0; r < 2; r++) {
        float got[COUNT];
        if (status == NULL) {
            assert_string_equal(tp_tensor_device(run.results[r]),
                                tp_mirrored_strategy_device(strategy, r));
            assert_ok(tp_tensor_read(run.results[r], got, sizeof got));
            for (int i = 0; i < COUNT; i++) {
                float a = (float)i - 32.0f, b = 2.0f * (float)i - 32.0f;
                assert_true(got[i] == (a > 0 ? a : 0) + (b > 0 ? b : 0));
            }
        }
        tp_tensor_release(run.results[r]);
    }
    return status;
}

/* TP_APU_FAIL_ALLOCATION=2: APU:0's region is taken before the run, so the second allocation is
 * APU:1's, in replica 1's copy of its input; replica 0 is left alone at the collective, and the
 * run reports replica 1's failure. */
static void a_failed_allocation_in_a_mirrored_run(void **state) {
    (void)state;
    tp_context_t *context = apu_context(2);
    assert_ok(relu_on_apu(context, NULL));
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, apus, 2, &strategy));
    assert_error(run_mirrored(context, strategy), TP_RESOURCE_EXHAUSTED,
                 "replica 1 on /job:localhost/replica:0/task:0/device:APU:1: Relu: input 0: OOM "
                 "when allocating tensor with shape [64] and type float32 on "
                 "/job:localhost/replica:0/task:0/device:APU:1 by allocator APU_1_bfc\ncannot "
                 "allocate 256 bytes (allocating 8388608 bytes on "
                 "/job:localhost/replica:0/task:0/device:APU:1: APU:1: injected failure of "
                 "allocation 2 (TP_APU_FAIL_ALLOCATION)); APU_1_bfc: in use 0 bytes");
    assert_recovers(context, run_mirrored, strategy);
    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
}

/* TP_APU_FAIL_KERNEL=1: the first relu launched in the run fails, on whichever APU d its
 * replica won the race to; the all-reduce's copy of that value to the CPU waits for it and
 * fails the run with the relu's failure, which names the op and the device. */
static void a_failed_kernel_in_a_mirrored_run(void **state) {
    (void)state;
    tp_context_t *context = apu_context(2);
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, apus, 2, &strategy));
    tp_status_t *status = run_mirrored(context, strategy);
    assert_non_null(status);
    const char *failed = strstr(tp_status_message(status), "Relu on APU:");
    int d = failed != NULL ? failed[strlen("Relu on APU:")] - '0' : -1;
    char device[128], fault[128];
    snprintf(device, sizeof device, ": Relu on " DEVICE_PREFIX "APU:%d: ", d);
    snprintf(fault, sizeof fault,
             "Relu on APU:%d: injected failure of kernel launch 1, on 64 elements "
             "(TP_APU_FAIL_KERNEL)", d);
    const char *const parts[] = {"tp_replica_all_reduce: AddN: input ", device, fault};
    assert_error_naming(status, TP_INTERNAL, parts, 3);
    assert_true(d == 0 || d == 1);
    assert_recovers(context, run_mirrored, strategy);
    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
}

/* relu on APU:0, then relu of that on APU:1. */
static tp_status_t *relu_on_both(tp_context_t *context, void *arg) {
    (void)arg;
    tp_tensor_t *x = NULL, *first = NULL, *second = NULL;
    tp_status_t *status =
        tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x);
    if (status == NULL) status = scoped(context, apus[0], tp_relu, x, &first);
    if (status == NULL) status = scoped(context, apus[1], tp_relu, first, &second);
    status = read_relu(second, status);
    tp_tensor_release(x);
    tp_tensor_release(first);
    tp_tensor_release(second);
    return status;
}

/* TP_APU_FAIL_KERNEL=1: relu fails on APU:0, behind the latency, and its value goes to APU:1 by
 * the APUs' own copy, which the host does not wait for, then through a second relu there.
 * Both results report APU:0's failure, as it was: a value made from a failed one is no value.
 * Neither device keeps an error for a later wait: the failure belongs to the tensors. */
static void a_failed_kernel_before_a_peer_copy(void **state) {
    (void)state;
    tp_context_t *context = apu_context(2);
    tp_tensor_t *x, *first, *second;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x));
    assert_ok(scoped(context, apus[0], tp_relu, x, &first));
    float got[4];
    second = NULL;
    /* Queued behind the failing relu, as it nearly always is; a host slow enough to come
     * back after the latency (sanitizers on a loaded machine) finds the failure known, and
     * the relu is refused at once with it. Either way it is APU:0's failure. */
    tp_status_t *queued = scoped(context, apus[1], tp_relu, first, &second);
    if (queued == NULL) {
        assert_string_equal(tp_tensor_device(second), DEVICE_PREFIX "APU:1");
        queued = tp_tensor_read(second, got, sizeof got);
    }
    assert_error(queued, TP_INTERNAL, KERNEL_FAILURE("1"));
    assert_error(tp_tensor_read(first, got, sizeof got), TP_INTERNAL, KERNEL_FAILURE("1"));
    /* Used again as an input on its own device, a poisoned tensor fails the op at once. */
    tp_tensor_t *third = NULL;
    tp_tensor_t *poisoned = second != NULL ? second : first;
    assert_error(scoped(context, apus[second != NULL ? 1 : 0], tp_relu, poisoned, &third),
                 TP_INTERNAL, "Relu: an input could not be computed: " KERNEL_FAILURE("1"));
    assert_null(third);
    tp_device_t *apu;
    for (int d = 0; d < 2; d++) {
        assert_ok(tp_context_find_device(context, d == 0 ? "APU:0" : "APU:1", &apu));
        assert_ok(tp_device_synchronize(apu));
    }
    tp_tensor_release(second);
    tp_tensor_release(first);
    tp_tensor_release(x);
    assert_recovers(context, relu_on_both, NULL);
    tp_context_destroy(context);
}

/* TP_APU_FAIL_KERNEL=1, with latency: the APU keeps the failure contract of ABI 1.4. The
 * runtime's event after the failed Relu carries the failure; an event recorded after that one
 * on the same stream completes normally, another APU's stream that waits for it does not fail,
 * and stream_synchronize has nothing left to report. */
static void the_apu_reports_a_failure_through_the_next_event_only(void **state) {
    (void)state;
    tp_context_t *context = apu_context(2);
    tp_device_t *apu0, *apu1;
    assert_ok(tp_context_find_device(context, "APU:0", &apu0));
    assert_ok(tp_context_find_device(context, "APU:1", &apu1));
    const tp_device_type_def_t *def = apu0->def;
    void *stream0, *stream1, *later;
    assert_ok(tp_device_stream(apu0, &stream0));
    assert_ok(tp_device_stream(apu1, &stream1));
    tp_tensor_t *x, *failed;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x));
    assert_ok(scoped(context, apus[0], tp_relu, x, &failed)); /* its event follows it */
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    def->event_create(apu0->handle, &later, &status);
    assert_int_equal(status.code, TP_OK);
    def->event_record(apu0->handle, stream0, later, &status);
    assert_int_equal(status.code, TP_OK);
    def->stream_wait_event(apu1->handle, stream1, later, &status);
    assert_int_equal(status.code, TP_OK);
    def->event_synchronize(apu0->handle, later, &status);
    assert_int_equal(status.code, TP_OK);
    assert_int_equal(def->event_query(apu0->handle, later), TP_EVENT_COMPLETE);
    def->stream_synchronize(apu1->handle, stream1, &status);
    assert_int_equal(status.code, TP_OK);
    def->stream_synchronize(apu0->handle, stream0, &status);
    assert_int_equal(status.code, TP_OK);
    float got[4];
    assert_error(tp_tensor_read(failed, got, sizeof got), TP_INTERNAL, KERNEL_FAILURE("1"));
    def->event_destroy(apu0->handle, later);
    tp_tensor_release(failed);
    tp_tensor_release(x);
    assert_recovers(context, relu_on_apu, NULL);
    tp_context_destroy(context);
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        struct CMUnitTest test;
    } runs[] = {
        {"allocation", cmocka_unit_test(a_failed_allocation_is_a_status)},
        {"kernel", cmocka_unit_test(a_failed_kernel_surfaces_at_the_read)},
        {"graph_allocation", cmocka_unit_test(a_failed_allocation_in_a_function_is_a_status)},
        {"graph_kernel", cmocka_unit_test(a_failed_kernel_in_a_function_fails_the_call)},
        {"mirrored_allocation", cmocka_unit_test(a_failed_allocation_in_a_mirrored_run)},
        {"mirrored_kernel", cmocka_unit_test(a_failed_kernel_in_a_mirrored_run)},
        {"peer_kernel", cmocka_unit_test(a_failed_kernel_before_a_peer_copy)},
        {"event_contract",
         cmocka_unit_test(the_apu_reports_a_failure_through_the_next_event_only)},
    };
    tp_log_set_level(TP_LOG_ERROR);
    for (size_t i = 0; argc == 2 && i < sizeof runs / sizeof runs[0]; i++) {
        if (strcmp(argv[1], runs[i].name) != 0) continue;
        const struct CMUnitTest chosen[] = {runs[i].test};
        return cmocka_run_group_tests(chosen, NULL, NULL);
    }
    fprintf(stderr, "usage: test_apu_faults allocation|kernel|graph_allocation|graph_kernel|"
                    "mirrored_allocation|mirrored_kernel|peer_kernel|event_contract\n");
    return 2;
}
