/* SPDX-License-Identifier: Apache-2.0 */
/* An asynchronous device without host_callback (queued_no_callback.so, which the ABI allows):
 * a kernel that fails on the device after the op returned still poisons the values copied
 * from its output, by the plug-in's peer copy or through host memory. Before tensors carried
 * their outcome, such a copy read as OK with values the failed kernel never wrote.
 * QDEV_FAIL_KERNEL=1 makes the first launch on each device fail. */
#include "test_support.h"
#include "queued_support.h"

#include <stdlib.h>

#include "context/context.h"
#include "device/device.h"
#include "tensor/tensor.h"

#define QDEV0 "/job:localhost/replica:0/task:0/device:QDEV:0"
#define FAILURE                                                                                \
    "Relu on " QDEV0 ": Relu on QDEV:0: injected failure of kernel launch 1 (QDEV_FAIL_KERNEL)"

static void a_failed_kernel_poisons_its_copies(void **state) {
    (void)state;
    tp_context_t *context = queued_context_failing_first_launches();
    tp_device_t *qdev1;
    assert_ok(tp_context_find_device(context, "QDEV:1", &qdev1));
    assert_null(qdev1->def->host_callback);
    assert_non_null(qdev1->def->memcpy_peer);

    const float values[4] = {-1, 2, -3, 4};
    tp_tensor_t *x, *y, *peer_copy, *on_cpu = NULL, *z, *big, *big_on_device, *big_copy;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x));
    /* A copy of 16 MiB within QDEV:0 first keeps its queue busy for milliseconds, so that what
     * follows is queued behind it (the device has no callback to hold its queue with). */
    float *zeros = calloc(4u << 20, sizeof *zeros);
    assert_non_null(zeros);
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4 << 20), zeros,
                               (4u << 20) * sizeof *zeros, &big));
    free(zeros);
    tp_device_t *qdev0;
    assert_ok(tp_context_find_device(context, "QDEV:0", &qdev0));
    tp_tensor_t *x_on_device;
    assert_ok(tp_tensor_to_device(x, qdev0, &x_on_device));
    assert_ok(tp_tensor_to_device(big, qdev0, &big_on_device));
    assert_ok(tp_tensor_copy_to_device(big_on_device, qdev0, &big_copy));
    assert_ok(tp_device_push(context, "/QDEV:0"));
    assert_ok(tp_relu(context, x_on_device, &y)); /* fails later, on QDEV:0's queue */
    assert_ok(tp_device_pop(context));
    /* Queued behind it: the failure is not known yet, so the copy is made, and poisoned. */
    assert_ok(tp_tensor_to_device(y, qdev1, &peer_copy));
    float got[4];
    assert_error(tp_tensor_read(peer_copy, got, sizeof got), TP_INTERNAL, FAILURE);
    assert_error(tp_tensor_read(y, got, sizeof got), TP_INTERNAL, FAILURE);
    /* Through host memory: the CPU's Neg stages y, knowing now that it failed. */
    assert_ok(tp_device_push(context, "/CPU:0"));
    tp_status_t *staged = tp_neg(context, y, &on_cpu);
    assert_ok(tp_device_pop(context));
    assert_error(staged, TP_INTERNAL,
                 "Neg: input 0: copying a tensor from " QDEV0
                 " to /job:localhost/replica:0/task:0/device:CPU:0: " FAILURE);
    assert_null(on_cpu);
    /* A value made from the copy on QDEV:1 fails with the origin, though QDEV:1's own first
     * launch fails as well. */
    assert_ok(tp_device_push(context, "/QDEV:1"));
    tp_status_t *launched = tp_relu(context, peer_copy, &z);
    assert_ok(tp_device_pop(context));
    assert_error(launched, TP_INTERNAL, "Relu: an input could not be computed: " FAILURE);
    /* The devices go on: the next launches compute. */
    tp_tensor_t *again;
    assert_ok(tp_device_push(context, "/QDEV:0"));
    assert_ok(tp_relu(context, x, &again));
    assert_ok(tp_device_pop(context));
    assert_ok(tp_tensor_read(again, got, sizeof got));
    assert_true(got[0] == 0 && got[1] == 2 && got[2] == 0 && got[3] == 4);
    assert_ok(tp_context_synchronize(context));
    tp_tensor_t *tensors[] = {x, y, peer_copy, again, big, big_on_device, big_copy, x_on_device};
    for (size_t i = 0; i < 8; i++) tp_tensor_release(tensors[i]);
    tp_context_destroy(context);
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    const struct CMUnitTest tests[] = {cmocka_unit_test(a_failed_kernel_poisons_its_copies)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
