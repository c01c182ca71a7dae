/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device names in TensorFlow's spelling: "/job:localhost/replica:0/task:0/device:CPU:0" and
 * the partial and legacy forms people actually type. Names come from users and configuration
 * files, so every rejection says what is wrong and quotes the name, escaped and cut short so
 * that a hostile or binary input cannot flood a log.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "device/device_name.h"
#include "device/task_identity.h"

/* A piece of the input; pieces are not NUL-terminated because they point into the name. */
typedef struct {
    const char *text;
    size_t length;
} slice_t;

enum {
    QUOTE_LIMIT = 100, /* input bytes shown before "..." */
    /* Each byte may become "\xHH" (4 characters); then "..." and the NUL. */
    QUOTE_CAPACITY = QUOTE_LIMIT * 4 + 4,
    JOB_MAX = (int)sizeof(((tp_device_spec_t *)0)->job) - 1,
    TYPE_MAX = (int)sizeof(((tp_device_spec_t *)0)->type) - 1,
};

/* The kinds of component. As in TensorFlow's parser they may come in any order, but each at
 * most once: a second one would silently override the first. */
typedef enum { PART_JOB, PART_REPLICA, PART_TASK, PART_DEVICE, PART_COUNT } part_t;

static const char *const part_names[PART_COUNT] = {"job", "replica", "task", "device"};

static const struct {
    const char *keyword;
    part_t part;
    bool physical;
} keywords[] = {
    {"job", PART_JOB, false},         {"replica", PART_REPLICA, false},
    {"task", PART_TASK, false},       {"device", PART_DEVICE, false},
    {"physical_device", PART_DEVICE, true},
};

typedef struct {
    const char *name; /* the whole input, quoted in every message */
    tp_device_spec_t spec;
    bool seen[PART_COUNT];
} parser_t;

/* ASCII classes by hand: <ctype.h> answers by locale, and names must not depend on one. */
static bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
static char to_upper(char c) { return is_lower(c) ? (char)(c - 'a' + 'A') : c; }

static slice_t slice_of(const char *text) { return (slice_t){text, strlen(text)}; }

static bool slice_equals(slice_t s, const char *word) {
    return strlen(word) == s.length && memcmp(s.text, word, s.length) == 0;
}

static bool slice_equals_ignoring_case(slice_t s, const char *word) {
    if (strlen(word) != s.length) return false;
    for (size_t i = 0; i < s.length; i++)
        if (to_upper(s.text[i]) != to_upper(word[i])) return false;
    return true;
}

/* Writes `s` for a message: control and non-ASCII bytes as \xHH so that messages stay one
 * printable line, and at most QUOTE_LIMIT input bytes. `out` holds QUOTE_CAPACITY bytes. */
static const char *quote(char *out, slice_t s) {
    static const char hex[] = "0123456789ABCDEF";
    size_t used = 0;
    size_t shown = s.length < QUOTE_LIMIT ? s.length : QUOTE_LIMIT;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s.text[i];
        if (c < 0x20 || c >= 0x7f) {
            out[used++] = '\\';
            out[used++] = 'x';
            out[used++] = hex[c >> 4];
            out[used++] = hex[c & 0xf];
        } else {
            out[used++] = (char)c;
        }
    }
    if (shown < s.length) {
        memcpy(out + used, "...", 3);
        used += 3;
    }
    out[used] = '\0';
    return out;
}

static tp_status_t *fail(const parser_t *parser, const char *format, ...) TP_PRINTF_LIKE(2, 3);
static tp_status_t *fail(const parser_t *parser, const char *format, ...) {
    /* Details hold at most two quoted pieces plus prose, well inside this; a cut detail would
     * still be a correct, if shorter, message. */
    char detail[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(detail, sizeof detail, format, args);
    va_end(args);
    char quoted[QUOTE_CAPACITY];
    return tp_status_make(TP_INVALID_ARGUMENT, "invalid device name '%s': %s",
                          quote(quoted, slice_of(parser->name)), detail);
}

/* Index of the first byte that breaks "letter, then letters, digits, '_' (and '-' for jobs)",
 * or s.length when none does. An empty slice answers 0 = its length. */
static size_t first_bad_identifier_byte(slice_t s, bool allow_dash) {
    for (size_t i = 0; i < s.length; i++) {
        char c = s.text[i];
        bool ok = is_letter(c) || (i > 0 && (is_digit(c) || c == '_' || (allow_dash && c == '-')));
        if (!ok) return i;
    }
    return s.length;
}

static tp_status_t *check_identifier(const parser_t *parser, slice_t s, const char *what,
                                     size_t max, bool allow_dash) {
    char quoted[QUOTE_CAPACITY], bad[QUOTE_CAPACITY];
    if (s.length == 0) return fail(parser, "empty %s", what);
    size_t at = first_bad_identifier_byte(s, allow_dash);
    if (at == 0)
        return fail(parser, "%s '%s' must start with a letter", what, quote(quoted, s));
    if (at < s.length)
        return fail(parser, "%s '%s' contains invalid character '%s'", what, quote(quoted, s),
                    quote(bad, (slice_t){s.text + at, 1}));
    if (s.length > max)
        return fail(parser, "%s '%s' is longer than %zu characters", what, quote(quoted, s), max);
    return NULL;
}

static bool is_star(slice_t s) { return s.length == 1 && s.text[0] == '*'; }

/* Decimal, no sign, at most INT32_MAX: the range TensorFlow stores these in. "*" is absent. */
static tp_status_t *parse_number(const parser_t *parser, slice_t s, const char *what,
                                 bool *out_has, int64_t *out_value) {
    char quoted[QUOTE_CAPACITY];
    if (is_star(s)) {
        *out_has = false;
        *out_value = 0;
        return NULL;
    }
    if (s.length == 0) return fail(parser, "empty %s", what);
    int64_t value = 0;
    for (size_t i = 0; i < s.length; i++) {
        if (!is_digit(s.text[i]))
            return fail(parser, "%s '%s' is not a non-negative integer", what, quote(quoted, s));
        value = value * 10 + (s.text[i] - '0');
        /* Checked each digit so that the int64_t itself can never overflow. */
        if (value > INT32_MAX)
            return fail(parser, "%s '%s' is out of range (at most %" PRId32 ")", what,
                        quote(quoted, s), INT32_MAX);
    }
    *out_has = true;
    *out_value = value;
    return NULL;
}

static tp_status_t *parse_job(parser_t *parser, slice_t s) {
    if (is_star(s)) return NULL;
    TP_RETURN_IF_ERROR(check_identifier(parser, s, "job name", JOB_MAX, true));
    memcpy(parser->spec.job, s.text, s.length);
    parser->spec.job[s.length] = '\0';
    parser->spec.has_job = true;
    return NULL;
}

static tp_status_t *parse_type(parser_t *parser, slice_t s) {
    if (is_star(s)) return NULL;
    TP_RETURN_IF_ERROR(check_identifier(parser, s, "device type", TYPE_MAX, false));
    memcpy(parser->spec.type, s.text, s.length);
    parser->spec.type[s.length] = '\0';
    parser->spec.has_type = true;
    return NULL;
}

/* "TYPE" or "TYPE:ID" (either may be "*"). `whole` and `form` only word the message for a
 * third field. */
static tp_status_t *parse_type_and_id(parser_t *parser, slice_t body, slice_t whole,
                                      const char *form) {
    char quoted[QUOTE_CAPACITY];
    const char *colon = memchr(body.text, ':', body.length);
    if (colon == NULL) return parse_type(parser, body);
    slice_t type = {body.text, (size_t)(colon - body.text)};
    slice_t id = {colon + 1, body.length - type.length - 1};
    if (memchr(id.text, ':', id.length) != NULL)
        return fail(parser, "'%s' has too many ':'-separated fields (expected %s)",
                    quote(quoted, whole), form);
    TP_RETURN_IF_ERROR(parse_type(parser, type));
    return parse_number(parser, id, "device id", &parser->spec.has_id, &parser->spec.id);
}

/* Enforces once each and physical_device alone; before the value is read, so that a
 * repeated component is reported as repeated rather than by its value. */
static tp_status_t *enter_component(parser_t *parser, part_t part, bool physical) {
    bool placed = parser->seen[PART_JOB] || parser->seen[PART_REPLICA] || parser->seen[PART_TASK];
    if ((part != PART_DEVICE && parser->spec.physical) || (physical && placed))
        return fail(parser, "'/physical_device' cannot be combined with job, replica or task");
    if (parser->seen[part]) return fail(parser, "repeated %s component", part_names[part]);
    parser->seen[part] = true;
    if (physical) parser->spec.physical = true;
    return NULL;
}

static int find_keyword(slice_t key, bool ignoring_case) {
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
        bool match = ignoring_case ? slice_equals_ignoring_case(key, keywords[i].keyword)
                                   : slice_equals(key, keywords[i].keyword);
        if (match) return (int)i;
    }
    return -1;
}

/* The legacy "/TYPE:ID" form. TensorFlow's C++ parser knows only cpu and gpu here and its
 * Python parser every registered type; a parse here knows no registry (plug-in types such as
 * APU are registered later, per context), so a word followed by an id or "*" names a device
 * type in any case ("/cpu:0", "/APU:0", "/apu:0"). A misspelt keyword with an id ("/tsak:0")
 * thus reads as a device type, which placement then reports as an unknown device. */
static bool looks_like_legacy_device(slice_t key, const char *colon) {
    return colon != NULL && key.length > 0 && is_letter(key.text[0]);
}

static tp_status_t *parse_component(parser_t *parser, slice_t segment) {
    char quoted[QUOTE_CAPACITY];
    const char *colon = memchr(segment.text, ':', segment.length);
    slice_t key = {segment.text, colon == NULL ? segment.length : (size_t)(colon - segment.text)};
    slice_t value = {NULL, 0};
    if (colon != NULL) value = (slice_t){colon + 1, segment.length - key.length - 1};

    if (key.length == 0) return fail(parser, "empty component name before ':'");
    int k = find_keyword(key, false);
    if (k >= 0) {
        if (colon == NULL) return fail(parser, "missing ':' after '%s'", keywords[k].keyword);
        TP_RETURN_IF_ERROR(enter_component(parser, keywords[k].part, keywords[k].physical));
        switch (keywords[k].part) {
        case PART_JOB:
            return parse_job(parser, value);
        case PART_REPLICA:
            return parse_number(parser, value, "replica", &parser->spec.has_replica,
                                &parser->spec.replica);
        case PART_TASK:
            return parse_number(parser, value, "task", &parser->spec.has_task,
                                &parser->spec.task);
        default:
            return parse_type_and_id(parser, value, segment,
                                     keywords[k].physical ? "physical_device:TYPE[:ID]"
                                                          : "device:TYPE[:ID]");
        }
    }
    if (find_keyword(key, true) >= 0)
        return fail(parser, "component keyword '%s' must be written in lower case",
                    quote(quoted, key));
    if (looks_like_legacy_device(key, colon)) {
        TP_RETURN_IF_ERROR(enter_component(parser, PART_DEVICE, false));
        if (memchr(value.text, ':', value.length) != NULL)
            return fail(parser, "'%s' has too many ':'-separated fields (expected TYPE:ID)",
                        quote(quoted, segment));
        TP_RETURN_IF_ERROR(parse_type(parser, key));
        return parse_number(parser, value, "device id", &parser->spec.has_id, &parser->spec.id);
    }
    /* TensorFlow requires the id in the legacy form; "/device:TYPE" is the type-only spelling. */
    return fail(parser, "unknown component '%s' (expected job:, replica:, task:, device:, "
                        "physical_device: or TYPE:ID; a device without an id is written "
                        "'/device:TYPE')",
                quote(quoted, key));
}

/* "GPU" or "GPU:1": TensorFlow's local names. Anything with a '/' must start with one. */
static tp_status_t *parse_bare(parser_t *parser) {
    char quoted[QUOTE_CAPACITY];
    slice_t whole = slice_of(parser->name);
    if (strchr(parser->name, '/') != NULL)
        return fail(parser, "a name that does not start with '/' must be 'TYPE' or 'TYPE:ID'");
    const char *colon = strchr(parser->name, ':');
    slice_t key = {whole.text, colon == NULL ? whole.length : (size_t)(colon - whole.text)};
    if (find_keyword(key, true) >= 0)
        return fail(parser, "component '%s' must start with '/'", quote(quoted, key));
    return parse_type_and_id(parser, whole, whole, "TYPE[:ID]");
}

tp_status_t *tp_device_spec_parse(const char *name, tp_device_spec_t *out_spec) {
    TP_REQUIRE_ARG(name);
    TP_REQUIRE_ARG(out_spec);
    parser_t parser;
    memset(&parser, 0, sizeof parser);
    parser.name = name;

    for (const char *c = name; *c != '\0'; c++)
        if (is_space(*c))
            return fail(&parser, "whitespace at offset %zu", (size_t)(c - name));

    /* "" and "/" constrain nothing, as in TensorFlow: every field stays absent. */
    if (strcmp(name, "/") == 0) {
        *out_spec = parser.spec;
        return NULL;
    }
    if (name[0] != '\0' && name[0] != '/') {
        TP_RETURN_IF_ERROR(parse_bare(&parser));
    } else {
        const char *slash = name;
        while (*slash == '/') {
            const char *start = slash + 1;
            const char *end = strchr(start, '/');
            if (end == NULL) end = start + strlen(start);
            if (end == start)
                return fail(&parser, *end == '\0' ? "trailing '/'" : "empty component ('//')");
            TP_RETURN_IF_ERROR(parse_component(&parser, (slice_t){start, (size_t)(end - start)}));
            slash = end;
        }
    }
    *out_spec = parser.spec;
    return NULL;
}

/* A spec may be filled in by hand, so its strings may lack a NUL or hold anything. */
static bool valid_spec_string(const char *text, size_t size, size_t max, bool allow_dash) {
    const char *nul = memchr(text, '\0', size);
    if (nul == NULL) return false;
    slice_t s = {text, (size_t)(nul - text)};
    return s.length > 0 && s.length <= max && first_bad_identifier_byte(s, allow_dash) == s.length;
}

static bool valid_spec_number(int64_t value) { return value >= 0 && value <= INT32_MAX; }

tp_status_t *tp_device_spec_canonical(const tp_device_spec_t *spec, char *buffer,
                                      size_t capacity) {
    TP_REQUIRE_ARG(spec);
    TP_REQUIRE_ARG(buffer);
    if (!spec->has_type && !spec->has_id)
        return tp_status_make(TP_INVALID_ARGUMENT, "device spec has no device type and no device "
                                                   "id; a canonical name needs both");
    if (!spec->has_type)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "device spec has no device type; a canonical name needs one");
    if (!spec->has_id)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "device spec has no device id; a canonical name needs one");
    if (!valid_spec_string(spec->type, sizeof spec->type, TYPE_MAX, false))
        return tp_status_make(TP_INVALID_ARGUMENT, "device spec has an invalid device type");
    if (spec->has_job && !valid_spec_string(spec->job, sizeof spec->job, JOB_MAX, true))
        return tp_status_make(TP_INVALID_ARGUMENT, "device spec has an invalid job name");
    if ((spec->has_replica && !valid_spec_number(spec->replica)) ||
        (spec->has_task && !valid_spec_number(spec->task)) || !valid_spec_number(spec->id))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "device spec has a replica, task or id outside 0..%" PRId32,
                              INT32_MAX);

    char type[sizeof spec->type];
    size_t i = 0;
    for (; spec->type[i] != '\0'; i++) type[i] = to_upper(spec->type[i]);
    type[i] = '\0';

    /* Longest: 5+63 + 9+10 + 6+10 + 8+31 + 1+10 = 153 characters. */
    char text[192];
    int length = snprintf(text, sizeof text,
                          "/job:%s/replica:%" PRId64 "/task:%" PRId64 "/device:%s:%" PRId64,
                          spec->has_job ? spec->job : tp_task_identity()->job,
                          spec->has_replica ? spec->replica : 0,
                          spec->has_task ? spec->task : (int64_t)tp_task_identity()->task,
                          type, spec->id);
    if (length < 0 || (size_t)length >= sizeof text)
        return tp_status_make(TP_INTERNAL, "canonical device name did not fit its scratch buffer");
    if ((size_t)length >= capacity)
        return tp_status_make(TP_OUT_OF_RANGE,
                              "buffer of %zu bytes is too small for canonical device name '%s' "
                              "(needs %d bytes with the terminating NUL)",
                              capacity, text, length + 1);
    memcpy(buffer, text, (size_t)length + 1);
    return NULL;
}

bool tp_device_spec_is_local(const tp_device_spec_t *spec) {
    return !(spec->has_replica && spec->replica != 0) &&
           tp_task_is_self(spec->has_job ? spec->job : NULL, spec->has_task ? spec->task : -1);
}
