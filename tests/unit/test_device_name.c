/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of tp_device_spec_parse and tp_device_spec_canonical. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "tensorplug/tensorplug.h"

/* What a parse should give; strings NULL mean absent, numbers -1 mean absent. */
typedef struct {
    const char *job;
    int64_t replica, task;
    const char *type;
    int64_t id;
    bool physical;
} expected_t;

/* A failed call must leave the output as it was; this pattern makes any write visible. */
static void fill_sentinel(tp_device_spec_t *spec) { memset(spec, 0xA5, sizeof *spec); }

static void check_parses(const char *name, expected_t want) {
    tp_device_spec_t spec;
    fill_sentinel(&spec);
    tp_status_t *status = tp_device_spec_parse(name, &spec);
    if (status != NULL) fail_msg("'%s' was rejected: %s", name, tp_status_message(status));

    assert_int_equal(spec.has_job, want.job != NULL);
    assert_string_equal(spec.job, want.job != NULL ? want.job : "");
    assert_int_equal(spec.has_replica, want.replica >= 0);
    assert_int_equal(spec.replica, want.replica >= 0 ? want.replica : 0);
    assert_int_equal(spec.has_task, want.task >= 0);
    assert_int_equal(spec.task, want.task >= 0 ? want.task : 0);
    assert_int_equal(spec.has_type, want.type != NULL);
    assert_string_equal(spec.type, want.type != NULL ? want.type : "");
    assert_int_equal(spec.has_id, want.id >= 0);
    assert_int_equal(spec.id, want.id >= 0 ? want.id : 0);
    assert_int_equal(spec.physical, want.physical);
}

/* Rejected with INVALID_ARGUMENT, the message holding `phrase` and, when `quoted` is given,
 * "'<quoted>'" (the input as a message shows it); the output untouched. */
static void check_rejects_quoting(const char *name, const char *quoted, const char *phrase) {
    tp_device_spec_t spec, before;
    fill_sentinel(&spec);
    before = spec;
    tp_status_t *status = tp_device_spec_parse(name, &spec);
    if (status == NULL) fail_msg("'%s' was accepted; expected '%s'", name, phrase);
    const char *message = tp_status_message(status);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    if (strstr(message, phrase) == NULL)
        fail_msg("message for '%s' lacks '%s': %s", name, phrase, message);
    if (quoted != NULL) {
        char wanted[256];
        snprintf(wanted, sizeof wanted, "invalid device name '%s'", quoted);
        if (strstr(message, wanted) == NULL)
            fail_msg("message for '%s' does not quote it: %s", name, message);
    }
    assert_memory_equal(&spec, &before, sizeof spec);
    tp_status_free(status);
}

static void check_rejects(const char *name, const char *phrase) {
    check_rejects_quoting(name, name, phrase);
}

static void check_canonical(const char *name, const char *want) {
    tp_device_spec_t spec;
    TP_CHECK(tp_device_spec_parse(name, &spec));
    char buffer[256];
    tp_status_t *status = tp_device_spec_canonical(&spec, buffer, sizeof buffer);
    if (status != NULL) fail_msg("canonical of '%s' failed: %s", name, tp_status_message(status));
    assert_string_equal(buffer, want);
}

#define NONE (-1)

/* ---- Accepted forms ---------------------------------------------------------------------- */

static void test_full_name(void **state) {
    (void)state;
    check_parses("/job:localhost/replica:0/task:0/device:CPU:0",
                 (expected_t){"localhost", 0, 0, "CPU", 0, false});
    check_parses("/job:worker-1_b/replica:2147483647/task:12/device:TPU_V4:3",
                 (expected_t){"worker-1_b", 2147483647, 12, "TPU_V4", 3, false});
}

static void test_device_component(void **state) {
    (void)state;
    check_parses("/device:GPU:1", (expected_t){NULL, NONE, NONE, "GPU", 1, false});
    check_parses("/device:gpu:1", (expected_t){NULL, NONE, NONE, "gpu", 1, false});
    check_parses("/device:GPU", (expected_t){NULL, NONE, NONE, "GPU", NONE, false});
    check_parses("/device:GPU:*", (expected_t){NULL, NONE, NONE, "GPU", NONE, false});
    check_parses("/device:*:2", (expected_t){NULL, NONE, NONE, NULL, 2, false});
    check_parses("/device:GPU:007", (expected_t){NULL, NONE, NONE, "GPU", 7, false});
    check_parses("/device:CPU:2147483647",
                 (expected_t){NULL, NONE, NONE, "CPU", 2147483647, false});
}

static void test_legacy_forms(void **state) {
    (void)state;
    check_parses("/cpu:0", (expected_t){NULL, NONE, NONE, "cpu", 0, false});
    check_parses("/CPU:0", (expected_t){NULL, NONE, NONE, "CPU", 0, false});
    check_parses("/Gpu:3", (expected_t){NULL, NONE, NONE, "Gpu", 3, false});
    check_parses("/APU:0", (expected_t){NULL, NONE, NONE, "APU", 0, false});
    check_parses("/apu:0", (expected_t){NULL, NONE, NONE, "apu", 0, false});
    check_parses("/foo:1", (expected_t){NULL, NONE, NONE, "foo", 1, false});
    check_parses("/TPU_V4:1", (expected_t){NULL, NONE, NONE, "TPU_V4", 1, false});
    check_parses("/gpu:*", (expected_t){NULL, NONE, NONE, "gpu", NONE, false});
    check_parses("/job:w/cpu:1", (expected_t){"w", NONE, NONE, "cpu", 1, false});
}

static void test_physical(void **state) {
    (void)state;
    check_parses("/physical_device:APU:0", (expected_t){NULL, NONE, NONE, "APU", 0, true});
    check_parses("/physical_device:GPU", (expected_t){NULL, NONE, NONE, "GPU", NONE, true});
}

static void test_bare_forms(void **state) {
    (void)state;
    check_parses("GPU:1", (expected_t){NULL, NONE, NONE, "GPU", 1, false});
    check_parses("GPU", (expected_t){NULL, NONE, NONE, "GPU", NONE, false});
    check_parses("cpu:0", (expected_t){NULL, NONE, NONE, "cpu", 0, false});
    check_parses("GPU:*", (expected_t){NULL, NONE, NONE, "GPU", NONE, false});
}

static void test_partial_forms(void **state) {
    (void)state;
    check_parses("", (expected_t){NULL, NONE, NONE, NULL, NONE, false});
    check_parses("/", (expected_t){NULL, NONE, NONE, NULL, NONE, false});
    check_parses("/job:localhost", (expected_t){"localhost", NONE, NONE, NULL, NONE, false});
    check_parses("/job:worker/task:1", (expected_t){"worker", NONE, 1, NULL, NONE, false});
    check_parses("/replica:3", (expected_t){NULL, 3, NONE, NULL, NONE, false});
    check_parses("/job:localhost/device:CPU:0",
                 (expected_t){"localhost", NONE, NONE, "CPU", 0, false});
    check_parses("/job:*/replica:*/task:*/device:*:*",
                 (expected_t){NULL, NONE, NONE, NULL, NONE, false});
}

static void test_longest_fields(void **state) {
    (void)state;
    char name[128];
    const char *job63 = "j12345678901234567890123456789012345678901234567890123456789012";
    const char *type31 = "T123456789012345678901234567890";
    assert_int_equal(strlen(job63), 63);
    assert_int_equal(strlen(type31), 31);
    snprintf(name, sizeof name, "/job:%s/device:%s:1", job63, type31);
    check_parses(name, (expected_t){job63, NONE, NONE, type31, 1, false});

    snprintf(name, sizeof name, "/job:%sx", job63);
    check_rejects(name, "job name '");
    check_rejects(name, "is longer than 63 characters");
    snprintf(name, sizeof name, "/device:%sX:0", type31);
    check_rejects(name, "is longer than 31 characters");
}

/* ---- Rejections -------------------------------------------------------------------------- */

static void test_rejects_slashes(void **state) {
    (void)state;
    check_rejects("/job:localhost/", "trailing '/'");
    check_rejects("//", "empty component ('//')");
    check_rejects("/cpu:0/", "trailing '/'");
    check_rejects("/job:localhost//device:CPU:0", "empty component ('//')");
    check_rejects("//cpu:0", "empty component ('//')");
    check_rejects("GPU:0/job:x", "must be 'TYPE' or 'TYPE:ID'");
}

static void test_rejects_components(void **state) {
    (void)state;
    check_rejects("/9foo:1", "unknown component '9foo'");
    check_rejects("/:0", "empty component name before ':'");
    check_rejects("/JOB:x", "component keyword 'JOB' must be written in lower case");
    check_rejects("/Device:GPU:0", "component keyword 'Device' must be written in lower case");
    check_rejects("job:localhost", "component 'job' must start with '/'");
    check_rejects("device:GPU:0", "component 'device' must start with '/'");
    check_rejects("/device", "missing ':' after 'device'");
    check_rejects("/job", "missing ':' after 'job'");
    check_rejects("/GPU", "unknown component 'GPU' (expected job:, replica:, task:, device:, "
                          "physical_device: or TYPE:ID; a device without an id is written "
                          "'/device:TYPE')");
    check_rejects("/job:foo/extra", "unknown component 'extra'");
    check_rejects("/_x:0", "unknown component '_x'");
}

/* TensorFlow's parser takes the components in any order, so a name assembled from parts
 * (a job from one place, a device from another) parses whatever order they were joined in. */
static void test_any_order(void **state) {
    (void)state;
    check_parses("/device:CPU:0/job:a", (expected_t){"a", NONE, NONE, "CPU", 0, false});
    check_parses("/task:0/replica:1", (expected_t){NULL, 1, 0, NULL, NONE, false});
    check_parses("/device:APU:1/task:2/replica:3/job:w",
                 (expected_t){"w", 3, 2, "APU", 1, false});
    check_parses("/cpu:1/job:localhost", (expected_t){"localhost", NONE, NONE, "cpu", 1, false});
    check_canonical("/device:apu:1/task:2/replica:3/job:w", "/job:w/replica:3/task:2/device:APU:1");
    check_canonical("/GPU:1/job:localhost", "/job:localhost/replica:0/task:0/device:GPU:1");
}

static void test_rejects_repeats(void **state) {
    (void)state;
    check_rejects("/job:a/job:b", "repeated job component");
    check_rejects("/job:a/job:a", "repeated job component");
    check_rejects("/task:0/task:1", "repeated task component");
    check_rejects("/replica:0/task:1/replica:0", "repeated replica component");
    check_rejects("/device:GPU:0/cpu:0", "repeated device component");
    check_rejects("/cpu:0/device:GPU:0", "repeated device component");
    check_rejects("/device:GPU:0/device:GPU:1", "repeated device component");
    check_rejects("/APU:0/job:a/apu:0", "repeated device component");
    check_rejects("/physical_device:APU:0/device:APU:0", "repeated device component");
    check_rejects("/physical_device:APU:0/job:x", "cannot be combined with job, replica or task");
    check_rejects("/job:x/physical_device:APU:0", "cannot be combined with job, replica or task");
    check_rejects("/task:1/physical_device:APU:0", "cannot be combined");
}

static void test_rejects_types(void **state) {
    (void)state;
    check_rejects("/device::0", "empty device type");
    check_rejects("/device:", "empty device type");
    check_rejects(":0", "empty device type");
    check_rejects("/device:1GPU:0", "device type '1GPU' must start with a letter");
    check_rejects("/device:G-PU:0", "device type 'G-PU' contains invalid character '-'");
    check_rejects("/GPU-X:0", "invalid character '-'");
    check_rejects("GP.U", "invalid character '.'");
}

static void test_rejects_numbers(void **state) {
    (void)state;
    tp_device_spec_t spec;
    tp_status_t *status = tp_device_spec_parse("/device:GPU:x", &spec);
    assert_string_equal(tp_status_message(status),
                        "invalid device name '/device:GPU:x': device id 'x' is not a "
                        "non-negative integer");
    tp_status_free(status);

    check_rejects("/device:GPU:-1", "device id '-1' is not a non-negative integer");
    check_rejects("/device:GPU:+1", "device id '+1' is not a non-negative integer");
    check_rejects("/device:GPU:", "empty device id");
    check_rejects("/cpu:", "empty device id");
    check_rejects("/cpu:99999999999999999999", "device id '99999999999999999999' is out of range");
    check_rejects("/cpu:2147483648", "out of range (at most 2147483647)");
    check_rejects("/replica:", "empty replica");
    check_rejects("/replica:1x", "replica '1x' is not a non-negative integer");
    check_rejects("/task:x", "task 'x' is not a non-negative integer");
    check_rejects("/task:4294967296", "task '4294967296' is out of range");
}

static void test_rejects_jobs(void **state) {
    (void)state;
    check_rejects("/job:", "empty job name");
    check_rejects("/job:1abc", "job name '1abc' must start with a letter");
    check_rejects("/job:-a", "must start with a letter");
    check_rejects("/job:a.b", "job name 'a.b' contains invalid character '.'");
}

static void test_rejects_too_many_fields(void **state) {
    (void)state;
    check_rejects("/device:GPU:1:2", "'device:GPU:1:2' has too many ':'-separated fields");
    check_rejects("/physical_device:GPU:1:2", "too many ':'-separated fields");
    check_rejects("/cpu:0:1", "'cpu:0:1' has too many ':'-separated fields");
    check_rejects("GPU:1:2", "too many ':'-separated fields (expected TYPE[:ID])");
}

static void test_rejects_whitespace(void **state) {
    (void)state;
    check_rejects("/device:GPU:0 ", "whitespace at offset 13");
    check_rejects(" /cpu:0", "whitespace at offset 0");
    /* Control bytes are shown escaped so that a message stays on one line. */
    check_rejects_quoting("/cpu:\t0", "/cpu:\\x090", "whitespace at offset 5");
    check_rejects_quoting("/cpu:0\n", "/cpu:0\\x0A", "whitespace");
}

static void test_rejects_non_ascii(void **state) {
    (void)state;
    check_rejects_quoting("/device:G\xC3\xA9:0", "/device:G\\xC3\\xA9:0",
                          "contains invalid character '\\xC3'");
}

static void test_rejects_null(void **state) {
    (void)state;
    tp_device_spec_t spec;
    tp_status_t *status = tp_device_spec_parse(NULL, &spec);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    assert_non_null(strstr(tp_status_message(status), "'name' is NULL"));
    tp_status_free(status);
    status = tp_device_spec_parse("/cpu:0", NULL);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    assert_non_null(strstr(tp_status_message(status), "'out_spec' is NULL"));
    tp_status_free(status);
}

static void test_long_input_is_quoted_short(void **state) {
    (void)state;
    enum { LENGTH = 10000 };
    static char name[LENGTH + 1];
    memcpy(name, "/device:", 8);
    memset(name + 8, 'A', LENGTH - 8);
    name[LENGTH] = '\0';

    tp_device_spec_t spec;
    tp_status_t *status = tp_device_spec_parse(name, &spec);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    const char *message = tp_status_message(status);
    char head[128];
    snprintf(head, sizeof head, "invalid device name '%.100s...'", name);
    assert_non_null(strstr(message, head));
    assert_non_null(strstr(message, "is longer than 31 characters"));
    /* The whole name shown once in full would be 10,000 characters. */
    assert_true(strlen(message) < 400);
    tp_status_free(status);

    /* Exactly 100 characters are shown whole, without "...". */
    name[100] = '\0';
    status = tp_device_spec_parse(name, &spec);
    snprintf(head, sizeof head, "invalid device name '%.100s'", name);
    assert_non_null(strstr(tp_status_message(status), head));
    tp_status_free(status);
}

/* ---- TensorFlow's documented cases -------------------------------------------------------- */

/* The names that TensorFlow's DeviceNameUtils tests parse, with the fields they expect. Types
 * keep the spelling given here (TensorFlow upper-cases the legacy "gpu"); the canonical form
 * upper-cases them. */
static void test_tensorflow_accepted(void **state) {
    (void)state;
    check_parses("/job:foo/replica:1/task:2/gpu:3", (expected_t){"foo", 1, 2, "gpu", 3, false});
    check_parses("/job:foo_bar/replica:1/task:2/gpu:3",
                 (expected_t){"foo_bar", 1, 2, "gpu", 3, false});
    check_parses("/job:foo_bar/replica:1/task:2/device:GPU:3",
                 (expected_t){"foo_bar", 1, 2, "GPU", 3, false});
    check_parses("/job:*/replica:4/gpu:*", (expected_t){NULL, 4, NONE, "gpu", NONE, false});
    check_parses("/job:*/replica:4/device:GPU:*", (expected_t){NULL, 4, NONE, "GPU", NONE, false});
    check_parses("/job:*/device:GPU/replica:4", (expected_t){NULL, 4, NONE, "GPU", NONE, false});
    check_parses("/job:*/replica:4/device:myspecialdevice:13",
                 (expected_t){NULL, 4, NONE, "myspecialdevice", 13, false});
    check_parses("/", (expected_t){NULL, NONE, NONE, NULL, NONE, false});
    check_parses("/job:*/replica:4/gpu:5", (expected_t){NULL, 4, NONE, "gpu", 5, false});
    /* "Same result if we reorder the components." */
    check_parses("/gpu:*/job:*/replica:4", (expected_t){NULL, 4, NONE, "gpu", NONE, false});
    check_parses("/job:foo/cpu:1/task:2/replica:1", (expected_t){"foo", 1, 2, "cpu", 1, false});
    check_canonical("/job:foo/cpu:1/task:2/replica:1", "/job:foo/replica:1/task:2/device:CPU:1");
    check_parses("/device:myspecialdevice:3",
                 (expected_t){NULL, NONE, NONE, "myspecialdevice", 3, false});
    check_parses("/job:*/replica:1/task:2/cpu:1", (expected_t){NULL, 1, 2, "cpu", 1, false});
}

static void test_tensorflow_rejected(void **state) {
    (void)state;
    check_rejects("/job:123/replica:1/task:2/gpu:3", "job name '123' must start with a letter");
    check_rejects("/job:foo/replica:1/task:2/gpu:", "empty device id");
    check_rejects("/job:foo/replica:1/task:2/device:gpu:", "empty device id");
    check_rejects("/job:foo/replica:-1/task:2/gpu:3", "replica '-1' is not a non-negative integer");
    check_rejects("/job:foo/replica:1/task:-2/gpu:3", "task '-2' is not a non-negative integer");
    check_rejects("/job:foo/replica:1/task:2/gpu:3/extra", "unknown component 'extra'");
    /* TensorFlow's Python parser refuses two device types in one name. */
    check_rejects("/job:muu/device:GPU:2/cpu:0", "repeated device component");
}

/* TensorFlow's round trip of every subset of job, replica, task and device, each device
 * written both as "/device:TYPE:ID" and in the legacy "/TYPE:ID" form. */
static void test_tensorflow_every_subset(void **state) {
    (void)state;
    static const char *const devices[] = {"CPU:3", "GPU:3", "cpu:3", "gpu:3", "someDevice:3"};
    for (int parts = 0; parts < 16; parts++) {
        for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
            for (int explicit_device = 0; explicit_device < 2; explicit_device++) {
                char name[128] = "";
                size_t used = 0;
                if (parts & 1) used += (size_t)snprintf(name + used, sizeof name - used, "/job:foo");
                if (parts & 2)
                    used += (size_t)snprintf(name + used, sizeof name - used, "/replica:3");
                if (parts & 4) used += (size_t)snprintf(name + used, sizeof name - used, "/task:2");
                if (parts & 8)
                    snprintf(name + used, sizeof name - used, "/%s%s",
                             explicit_device ? "device:" : "", devices[d]);
                char type[16];
                snprintf(type, sizeof type, "%.*s", (int)(strchr(devices[d], ':') - devices[d]),
                         devices[d]);
                check_parses(name, (expected_t){parts & 1 ? "foo" : NULL, parts & 2 ? 3 : NONE,
                                                parts & 4 ? 2 : NONE, parts & 8 ? type : NULL,
                                                parts & 8 ? 3 : NONE, false});
            }
        }
    }
}

/* TensorFlow's C++ parser knows only cpu and gpu in the legacy form; its Python parser knows
 * every registered type, plug-in types included. Parsing here comes before any plug-in is
 * known, so any type is accepted and an unregistered one is refused by placement, which
 * names the device ("/job:localhost/replica:0/task:0/device:BAR:3 unknown device."). */
static void test_legacy_form_takes_plugin_types(void **state) {
    (void)state;
    check_parses("/job:foo/replica:1/task:2/bar:3", (expected_t){"foo", 1, 2, "bar", 3, false});
    check_parses("/APU:0", (expected_t){NULL, NONE, NONE, "APU", 0, false});
    check_parses("/GPU:1", (expected_t){NULL, NONE, NONE, "GPU", 1, false});
}

/* ---- Canonical form ---------------------------------------------------------------------- */

static void test_canonical(void **state) {
    (void)state;
    check_canonical("/cpu:0", "/job:localhost/replica:0/task:0/device:CPU:0");
    check_canonical("/device:GPU:1", "/job:localhost/replica:0/task:0/device:GPU:1");
    check_canonical("/physical_device:APU:0", "/job:localhost/replica:0/task:0/device:APU:0");
    check_canonical("/job:localhost/replica:0/task:0/device:CPU:0",
                    "/job:localhost/replica:0/task:0/device:CPU:0");
    check_canonical("/job:worker/replica:2/task:3/device:tpu_v4:4",
                    "/job:worker/replica:2/task:3/device:TPU_V4:4");
    check_canonical("/job:w/task:5/Gpu:6", "/job:w/replica:0/task:5/device:GPU:6");
    check_canonical("gpu:2", "/job:localhost/replica:0/task:0/device:GPU:2");
}

static void test_canonical_buffer_size(void **state) {
    (void)state;
    const char *want = "/job:localhost/replica:0/task:0/device:CPU:0";
    size_t length = strlen(want);
    tp_device_spec_t spec;
    TP_CHECK(tp_device_spec_parse("/cpu:0", &spec));

    char buffer[64];
    memset(buffer, 'z', sizeof buffer);
    tp_status_t *status = tp_device_spec_canonical(&spec, buffer, length);
    assert_int_equal(tp_status_code(status), TP_OUT_OF_RANGE);
    assert_non_null(strstr(tp_status_message(status), "too small"));
    tp_status_free(status);
    for (size_t i = 0; i < sizeof buffer; i++) assert_int_equal(buffer[i], 'z');

    status = tp_device_spec_canonical(&spec, buffer, 0);
    assert_int_equal(tp_status_code(status), TP_OUT_OF_RANGE);
    tp_status_free(status);

    TP_CHECK(tp_device_spec_canonical(&spec, buffer, length + 1));
    assert_string_equal(buffer, want);
}

static void check_canonical_rejects(const char *name, const char *phrase) {
    tp_device_spec_t spec;
    TP_CHECK(tp_device_spec_parse(name, &spec));
    char buffer[128];
    tp_status_t *status = tp_device_spec_canonical(&spec, buffer, sizeof buffer);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    if (strstr(tp_status_message(status), phrase) == NULL)
        fail_msg("canonical of '%s': message lacks '%s': %s", name, phrase,
                 tp_status_message(status));
    tp_status_free(status);
}

static void test_canonical_incomplete(void **state) {
    (void)state;
    check_canonical_rejects("/device:GPU", "no device id");
    check_canonical_rejects("/gpu:*", "no device id");
    check_canonical_rejects("/device:*:0", "no device type");
    check_canonical_rejects("/job:localhost", "no device type and no device id");
    check_canonical_rejects("", "no device type and no device id");
}

static void test_canonical_bad_specs(void **state) {
    (void)state;
    char buffer[128];
    tp_device_spec_t spec;
    TP_CHECK(tp_device_spec_parse("/cpu:0", &spec));

    tp_status_t *status = tp_device_spec_canonical(NULL, buffer, sizeof buffer);
    assert_non_null(strstr(tp_status_message(status), "'spec' is NULL"));
    tp_status_free(status);
    status = tp_device_spec_canonical(&spec, NULL, 10);
    assert_non_null(strstr(tp_status_message(status), "'buffer' is NULL"));
    tp_status_free(status);

    /* Specs built by hand are checked rather than trusted. */
    tp_device_spec_t bad = spec;
    bad.id = -1;
    status = tp_device_spec_canonical(&bad, buffer, sizeof buffer);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    tp_status_free(status);
    bad = spec;
    memset(bad.type, 'A', sizeof bad.type);
    status = tp_device_spec_canonical(&bad, buffer, sizeof buffer);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    tp_status_free(status);
    bad = spec;
    bad.has_job = true;
    strcpy(bad.job, "a b");
    status = tp_device_spec_canonical(&bad, buffer, sizeof buffer);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    tp_status_free(status);
}

/* ---- Fuzz smoke -------------------------------------------------------------------------- */

/* Any input: success, or INVALID_ARGUMENT with a message and the output untouched. A success
 * that names a type and id must canonicalize, and the canonical name must parse back to
 * itself. */
static void check_any_input(const char *name) {
    tp_device_spec_t spec, before;
    fill_sentinel(&spec);
    before = spec;
    tp_status_t *status = tp_device_spec_parse(name, &spec);
    if (status != NULL) {
        assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
        assert_true(strlen(tp_status_message(status)) > 0);
        assert_memory_equal(&spec, &before, sizeof spec);
        tp_status_free(status);
        return;
    }
    if (!spec.has_type || !spec.has_id) return;
    char canonical[256], again[256];
    TP_CHECK(tp_device_spec_canonical(&spec, canonical, sizeof canonical));
    tp_device_spec_t reparsed;
    TP_CHECK(tp_device_spec_parse(canonical, &reparsed));
    TP_CHECK(tp_device_spec_canonical(&reparsed, again, sizeof again));
    assert_string_equal(canonical, again);
}

static void test_every_prefix_and_mutation(void **state) {
    (void)state;
    static const char *const names[] = {
        "/job:worker-a/replica:12/task:345/device:GPU:6789",
        "/physical_device:APU:2147483647",
        "/job:w/cpu:0",
        "TPU_V4:12",
    };
    static const char substitutes[] = {'/', ':', '*', 'a', 'A', '0', '9', '-', '_', ' ', '\xff'};
    char buffer[128];
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        size_t length = strlen(names[n]);
        for (size_t cut = 0; cut <= length; cut++) {
            memcpy(buffer, names[n], cut);
            buffer[cut] = '\0';
            check_any_input(buffer);
        }
        for (size_t at = 0; at < length; at++) {
            for (size_t s = 0; s < sizeof substitutes; s++) {
                strcpy(buffer, names[n]);
                buffer[at] = substitutes[s];
                check_any_input(buffer);
            }
        }
    }
}

static void test_random_bytes(void **state) {
    (void)state;
    /* A fixed generator, so that a failure reproduces. */
    uint64_t seed = 0x9E3779B97F4A7C15u;
    static const char alphabet[] = "/:*-_0123456789jobreplicatskdvphysGPUCA";
    char buffer[80];
    for (int round = 0; round < 5000; round++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t length = (size_t)(seed >> 33) % (sizeof buffer - 1);
        bool from_alphabet = (round % 2) == 0;
        for (size_t i = 0; i < length; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            unsigned value = (unsigned)(seed >> 33);
            buffer[i] = from_alphabet ? alphabet[value % (sizeof alphabet - 1)]
                                      : (char)(1 + value % 255); /* no NUL inside */
        }
        buffer[length] = '\0';
        check_any_input(buffer);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_name),
        cmocka_unit_test(test_device_component),
        cmocka_unit_test(test_legacy_forms),
        cmocka_unit_test(test_physical),
        cmocka_unit_test(test_bare_forms),
        cmocka_unit_test(test_partial_forms),
        cmocka_unit_test(test_longest_fields),
        cmocka_unit_test(test_rejects_slashes),
        cmocka_unit_test(test_rejects_components),
        cmocka_unit_test(test_any_order),
        cmocka_unit_test(test_rejects_repeats),
        cmocka_unit_test(test_rejects_types),
        cmocka_unit_test(test_rejects_numbers),
        cmocka_unit_test(test_rejects_jobs),
        cmocka_unit_test(test_rejects_too_many_fields),
        cmocka_unit_test(test_rejects_whitespace),
        cmocka_unit_test(test_rejects_non_ascii),
        cmocka_unit_test(test_rejects_null),
        cmocka_unit_test(test_long_input_is_quoted_short),
        cmocka_unit_test(test_tensorflow_accepted),
        cmocka_unit_test(test_tensorflow_rejected),
        cmocka_unit_test(test_tensorflow_every_subset),
        cmocka_unit_test(test_legacy_form_takes_plugin_types),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_canonical_buffer_size),
        cmocka_unit_test(test_canonical_incomplete),
        cmocka_unit_test(test_canonical_bad_specs),
        cmocka_unit_test(test_every_prefix_and_mutation),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
