/* SPDX-License-Identifier: Apache-2.0 */
/* The queued test device without host_callback (queued_no_callback.so), which the runtime's
 * fault tests rely on, keeps ABI 1.4's failure contract: with QDEV_FAIL_KERNEL=1 its first
 * Relu fails on the device, the event recorded right after it carries the failure, an event
 * recorded later on the stream completes, the other device's stream that waits for it does
 * not fail, and stream_synchronize has nothing left to report. The failure's code is the
 * plug-in's own (QDEV_FAIL_CODE=15, DATA_LOSS), unchanged on the tensor. And the runtime
 * destroys a stream only once its work is done. */
#include "test_support.h"
#include "queued_support.h"

#include <stdio.h>
#include <stdlib.h>

#include "context/context.h"
#include "device/device.h"
#include "plugin/plugin_status.h"
#include "tensor/tensor.h"

static const char injected[] = "Relu on QDEV:0: injected failure of kernel launch 1 "
                               "(QDEV_FAIL_KERNEL)";

static void a_failure_is_reported_through_the_next_event_only(void **state) {
    (void)state;
    tp_context_t *context = queued_context_failing_first_launches();
    tp_device_t *qdev0, *qdev1;
    assert_ok(tp_context_find_device(context, "QDEV:0", &qdev0));
    assert_ok(tp_context_find_device(context, "QDEV:1", &qdev1));
    const tp_device_type_def_t *def = qdev0->def;
    assert_null(def->host_callback);
    assert_int_equal(def->flags & TP_DEVICE_SYNCHRONOUS, 0);
    void *stream0, *stream1, *later_event;
    assert_ok(tp_device_stream(qdev0, &stream0));
    assert_ok(tp_device_stream(qdev1, &stream1));

    const float values[4] = {-1, 2, -3, 4};
    tp_tensor_t *x, *x_on_device, *y;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &x));
    assert_ok(tp_tensor_to_device(x, qdev0, &x_on_device));
    assert_ok(tp_device_synchronize(qdev0));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    def->event_create(qdev0->handle, &later_event, &status);
    assert_int_equal(status.code, TP_OK);
    /* The runtime records its own event right after the launch: that one carries the failure. */
    assert_ok(tp_device_push(context, "/QDEV:0"));
    assert_ok(tp_relu(context, x_on_device, &y));
    assert_ok(tp_device_pop(context));
    def->event_record(qdev0->handle, stream0, later_event, &status);
    assert_int_equal(status.code, TP_OK);
    def->stream_wait_event(qdev1->handle, stream1, later_event, &status);
    assert_int_equal(status.code, TP_OK);
    def->event_synchronize(qdev0->handle, later_event, &status);
    assert_int_equal(status.code, TP_OK);
    assert_int_equal(def->event_query(qdev0->handle, later_event), TP_EVENT_COMPLETE);
    def->stream_synchronize(qdev1->handle, stream1, &status);
    assert_int_equal(status.code, TP_OK);
    def->stream_synchronize(qdev0->handle, stream0, &status);
    assert_int_equal(status.code, TP_OK);
    float got[4];
    assert_error(tp_tensor_read(y, got, sizeof got), TP_DATA_LOSS, injected);

    /* The device stays usable: the next launch computes. */
    tp_tensor_t *z;
    assert_ok(tp_device_push(context, "/QDEV:0"));
    assert_ok(tp_relu(context, x_on_device, &z));
    assert_ok(tp_device_pop(context));
    assert_ok(tp_tensor_read(z, got, sizeof got));
    const float expected[4] = {0, 2, 0, 4};
    assert_memory_equal(got, expected, sizeof expected);

    def->event_destroy(qdev0->handle, later_event);
    tp_tensor_release(z);
    tp_tensor_release(y);
    tp_tensor_release(x_on_device);
    tp_tensor_release(x);
    tp_context_destroy(context);
}

static char warnings[1024];

static void keep_warning(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    if (level < TP_LOG_WARNING) return;
    size_t used = strlen(warnings);
    snprintf(warnings + used, sizeof warnings - used, "%s\n", line);
}

/* A context destroyed while copies are still queued on its device: stream_destroy comes only
 * once they are done (the plug-in logs a warning if a stream goes with work queued). */
static void a_stream_is_destroyed_only_once_idle(void **state) {
    (void)state;
    tp_context_t *context = queued_context_failing_first_launches();
    tp_device_t *qdev0;
    assert_ok(tp_context_find_device(context, "QDEV:0", &qdev0));
    float *zeros = calloc(4u << 20, sizeof *zeros);
    assert_non_null(zeros);
    tp_tensor_t *big, *on_device, *copy;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4 << 20), zeros,
                               (4u << 20) * sizeof *zeros, &big));
    free(zeros);
    warnings[0] = '\0';
    tp_log_set_callback(keep_warning, NULL);
    assert_ok(tp_tensor_to_device(big, qdev0, &on_device));
    assert_ok(tp_tensor_copy_to_device(on_device, qdev0, &copy)); /* 16 MiB, queued */
    tp_tensor_release(copy);
    tp_tensor_release(on_device);
    tp_tensor_release(big);
    tp_context_destroy(context);
    tp_log_set_callback(NULL, NULL);
    assert_string_equal(warnings, "");
}

int main(void) {
    /* Read by the plug-in once, when the first context loads it. */
    assert_int_equal(setenv("QDEV_FAIL_CODE", "15", 1), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_failure_is_reported_through_the_next_event_only),
        cmocka_unit_test(a_stream_is_destroyed_only_once_idle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
