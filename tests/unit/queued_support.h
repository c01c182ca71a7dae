/* SPDX-License-Identifier: Apache-2.0 */
/* A context on the queued test device without host_callback (queued_no_callback.so), two
 * devices, whose first kernel launch on each device fails on the device (QDEV_FAIL_KERNEL=1).
 * The plug-in reads its settings once per process, when the first context loads it, so each
 * program that uses this makes one such context. */
#ifndef TP_TESTS_QUEUED_SUPPORT_H
#define TP_TESTS_QUEUED_SUPPORT_H

#include <stdlib.h>

#include "test_support.h"

static inline tp_context_t *queued_context_failing_first_launches(void) {
    assert_int_equal(setenv("QDEV_FAIL_KERNEL", "1", 1), 0);
    assert_int_equal(setenv("QDEV_DEVICES", "2", 1), 0);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_QUEUED_NO_CALLBACK_PLUGIN;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    return context;
}

#endif
