/* SPDX-License-Identifier: Apache-2.0 */
/* Device names, which come from users, scopes and TP_VISIBLE_DEVICES: tp_device_spec_parse on
 * any text, then what callers rely on after it. A name that parses with a type and an id has a
 * canonical form, the canonical form parses back to the same device, and the canonical form
 * never overruns the buffer it is given. As in TensorFlow's parser, components may come in any
 * order and each at most once: the components in reverse order parse to the same device, or
 * are refused alike, and a parsed name with one of its components repeated is refused. A spec
 * filled in by hand from raw bytes is either refused or printed well formed. */
#include "fuzz_support.h"

#include <strings.h>

#include "device/device_name.h"

enum { CANONICAL_CAPACITY = 192 };

static bool is_identifier(const char *text, size_t capacity) {
    const char *end = memchr(text, '\0', capacity);
    if (end == NULL || end == text) return false;
    for (const char *c = text; c < end; c++) {
        bool letter = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z');
        bool other = (*c >= '0' && *c <= '9') || *c == '_' || *c == '-';
        if (!letter && (c == text || !other)) return false;
    }
    return true;
}

/* Writes the canonical form into a block of exactly `capacity` bytes, so that
 * AddressSanitizer catches a write past it; a short buffer must be refused, never filled. */
static tp_status_t *canonical_in_exact_block(const tp_device_spec_t *spec, size_t capacity,
                                             char *copy) {
    char *buffer = malloc(capacity > 0 ? capacity : 1);
    if (buffer == NULL) abort();
    tp_status_t *status = tp_device_spec_canonical(spec, buffer, capacity);
    if (status == NULL) {
        if (strlen(buffer) >= capacity) fuzz_fail("canonical name overruns", buffer);
        snprintf(copy, CANONICAL_CAPACITY, "%s", buffer);
    }
    free(buffer);
    return status;
}

static void check_round_trip(const char *name, const tp_device_spec_t *spec) {
    char canonical[CANONICAL_CAPACITY];
    tp_status_t *status = canonical_in_exact_block(spec, CANONICAL_CAPACITY, canonical);
    if (status != NULL) fuzz_fail("a parsed name has no canonical form", name);
    tp_device_spec_t again;
    if (!fuzz_check_status(tp_device_spec_parse(canonical, &again)))
        fuzz_fail("the canonical form does not parse", canonical);
    const char *job = spec->has_job ? spec->job : "localhost";
    bool same = strcmp(again.job, job) == 0 && strcasecmp(again.type, spec->type) == 0 &&
                again.id == spec->id && again.replica == (spec->has_replica ? spec->replica : 0) &&
                again.task == (spec->has_task ? spec->task : 0);
    if (!same) fuzz_fail("the canonical form names another device", canonical);
    /* One byte short must be refused: the name and its NUL need every byte. */
    size_t length = strlen(canonical);
    char ignored[CANONICAL_CAPACITY];
    tp_status_t *short_status = canonical_in_exact_block(spec, length, ignored);
    if (short_status == NULL || tp_status_code(short_status) != TP_OUT_OF_RANGE)
        fuzz_fail("a short buffer is not refused", canonical);
    fuzz_check_status(short_status);
}

static bool same_spec(const tp_device_spec_t *a, const tp_device_spec_t *b) {
    return a->has_job == b->has_job && a->has_replica == b->has_replica &&
           a->has_task == b->has_task && a->has_type == b->has_type && a->has_id == b->has_id &&
           a->physical == b->physical && strcmp(a->job, b->job) == 0 &&
           a->replica == b->replica && a->task == b->task && strcmp(a->type, b->type) == 0 &&
           a->id == b->id;
}

/* "/a/b/c" as "/c/b/a", in a block of its exact size. */
static char *reversed_components(const char *name) {
    size_t length = strlen(name);
    char *out = malloc(length + 1);
    if (out == NULL) abort();
    size_t used = 0;
    const char *end = name + length;
    while (end > name) {
        const char *slash = end - 1;
        while (*slash != '/') slash--;
        memcpy(out + used, slash, (size_t)(end - slash));
        used += (size_t)(end - slash);
        end = slash;
    }
    out[used] = '\0';
    return out;
}

static void check_any_order(const char *name, const tp_device_spec_t *spec, bool parsed) {
    if (name[0] != '/') return;
    char *reversed = reversed_components(name);
    tp_device_spec_t again;
    tp_status_t *status = tp_device_spec_parse(reversed, &again);
    if (parsed && status != NULL) fuzz_fail("refused in reverse order", reversed);
    if (!parsed && status == NULL) fuzz_fail("accepted only in reverse order", reversed);
    if (parsed && !same_spec(spec, &again)) fuzz_fail("another device in reverse order", reversed);
    fuzz_check_quoting(status, reversed);
    free(reversed);
}

/* The first component again at the end: a second job, device, ... overrides nothing. */
static void check_repeat_refused(const char *name) {
    if (name[0] != '/' || name[1] == '\0') return;
    const char *end = strchr(name + 1, '/');
    size_t first = end != NULL ? (size_t)(end - name) : strlen(name);
    size_t length = strlen(name);
    char *repeated = malloc(length + first + 1);
    if (repeated == NULL) abort();
    memcpy(repeated, name, length);
    memcpy(repeated + length, name, first);
    repeated[length + first] = '\0';
    tp_device_spec_t spec;
    tp_status_t *status = tp_device_spec_parse(repeated, &spec);
    if (status == NULL || strstr(tp_status_message(status), "repeated") == NULL)
        fuzz_fail("a repeated component is not refused as repeated", repeated);
    fuzz_check_quoting(status, repeated);
    free(repeated);
}

static void check_parse(const char *name) {
    tp_device_spec_t spec;
    tp_status_t *status = tp_device_spec_parse(name, &spec);
    if (status != NULL) {
        /* Names are quoted escaped and cut short, so that hostile input cannot flood or
         * garble a log. */
        if (strlen(tp_status_message(status)) > 1536)
            fuzz_fail("message too long", tp_status_message(status));
        if (!fuzz_printable(tp_status_message(status)))
            fuzz_fail("name not escaped", tp_status_message(status));
        fuzz_check_quoting(status, name);
        check_any_order(name, NULL, false);
        return;
    }
    check_any_order(name, &spec, true);
    check_repeat_refused(name);
    if (spec.has_type && !is_identifier(spec.type, sizeof spec.type))
        fuzz_fail("parsed type is not an identifier", name);
    if (spec.has_job && !is_identifier(spec.job, sizeof spec.job))
        fuzz_fail("parsed job is not an identifier", name);
    if ((spec.has_id && (spec.id < 0 || spec.id > INT32_MAX)) ||
        (spec.has_replica && (spec.replica < 0 || spec.replica > INT32_MAX)) ||
        (spec.has_task && (spec.task < 0 || spec.task > INT32_MAX)))
        fuzz_fail("parsed number out of range", name);
    (void)tp_device_spec_is_local(&spec);
    if (spec.has_type && spec.has_id) check_round_trip(name, &spec);
}

/* The public canonical form accepts specs that no parse made: any bytes at all. */
static void check_hand_made_spec(const uint8_t *data, size_t size) {
    tp_device_spec_t spec;
    memset(&spec, 0, sizeof spec);
    memcpy(&spec, data, size < sizeof spec ? size : sizeof spec);
    /* bool fields must hold 0 or 1 to be read at all. */
    bool *flags[] = {&spec.has_job, &spec.has_replica, &spec.has_task,
                     &spec.has_type, &spec.has_id,     &spec.physical};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        *flags[i] = ((const unsigned char *)flags[i])[0] & 1;
    char canonical[CANONICAL_CAPACITY];
    size_t capacity = size > 0 ? data[size - 1] : 0;
    if (fuzz_check_status(canonical_in_exact_block(&spec, capacity, canonical))) {
        tp_device_spec_t again;
        if (!fuzz_check_status(tp_device_spec_parse(canonical, &again)))
            fuzz_fail("a hand-made spec's canonical form does not parse", canonical);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input_t in = {data, size};
    char *name = fuzz_rest_as_text(&in);
    check_parse(name);
    free(name);
    check_hand_made_spec(data, size);
    return 0;
}
