/* SPDX-License-Identifier: Apache-2.0 */
/* What the fuzz targets share: typed values read off the front of the input, and the checks
 * every status the core returns must pass. Reads past the end give zeros, so that any input,
 * however short, is a whole case; the values that steer a case most are read first, where
 * the fuzzer's mutations reach them soonest. */
#ifndef TP_FUZZ_SUPPORT_H
#define TP_FUZZ_SUPPORT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorplug/tensorplug.h"

/* libFuzzer's entry points; declared here because the core builds with -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

typedef struct {
    const uint8_t *data;
    size_t size;
} fuzz_input_t;

static inline uint8_t fuzz_byte(fuzz_input_t *in) {
    if (in->size == 0) return 0;
    in->size--;
    return *in->data++;
}

static inline uint64_t fuzz_u64(fuzz_input_t *in) {
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) value |= (uint64_t)fuzz_byte(in) << (8 * i);
    return value;
}

static inline size_t fuzz_below(fuzz_input_t *in, size_t limit) {
    return fuzz_byte(in) % limit;
}

static inline bool fuzz_bool(fuzz_input_t *in) { return fuzz_byte(in) & 1; }

/* An integer as dimensions, axes and counts take them: mostly small, often a little negative,
 * sometimes on a boundary where arithmetic overflows, sometimes any 64 bits. */
static inline int64_t fuzz_int(fuzz_input_t *in) {
    static const int64_t extremes[] = {
        INT64_MIN,      INT64_MIN + 1,         INT64_MAX,         INT64_MAX - 1,
        INT32_MIN,      INT32_MAX,             (int64_t)INT32_MAX + 1, UINT32_MAX,
        INT64_C(1) << 31, INT64_C(1) << 32,    INT64_C(1) << 62,  INT64_C(3037000500),
        1000,           1001,                  4096,              -9,
    };
    uint8_t b = fuzz_byte(in);
    if (b < 0x90) return b % 8;
    if (b < 0xc0) return -(int64_t)(b % 8) - 1;
    if (b < 0xf0) return extremes[b % (sizeof extremes / sizeof extremes[0])];
    return (int64_t)fuzz_u64(in);
}

/* A NUL-terminated copy of what is left, in a block of its exact size so that
 * AddressSanitizer sees a read past the terminator. */
static inline char *fuzz_rest_as_text(fuzz_input_t *in) {
    char *text = malloc(in->size + 1);
    if (text == NULL) abort();
    if (in->size > 0) memcpy(text, in->data, in->size);
    text[in->size] = '\0';
    in->data += in->size;
    in->size = 0;
    return text;
}

static inline void fuzz_drop_line(tp_log_level_t level, const char *line, void *user_data) {
    (void)level;
    (void)line;
    (void)user_data;
}

/* Drops the runtime's log lines: a refusal logged on every input would slow the run to the
 * speed of the terminal. */
static inline void fuzz_quiet_log(void) { tp_log_set_callback(fuzz_drop_line, NULL); }

/* With FUZZ_VERBOSE set, the targets say what each input did: how to see what a seed or a
 * crash artifact exercises when it is run alone ("FUZZ_VERBOSE=1 fuzz_x file"). */
static inline void fuzz_say(const char *what, const char *detail) {
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "%s: %s\n", what, detail);
}

/* Stops the run: libFuzzer keeps the input that got here as a crash artifact. */
static inline void fuzz_fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz check failed: %s: %s\n", what, detail);
    abort();
}

/* Whether `text` is one line of printable ASCII. */
static inline bool fuzz_printable(const char *text) {
    for (const char *c = text; *c != '\0'; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) return false;
    return true;
}

/* Every error the core returns is one of the codes, with a message a person can read: not
 * empty, no "(null)" from a missing string, one printable line. `quoted` is the input the
 * message may repeat as given (NULL: none): what it holds itself is not held against the
 * message. Frees `status`; returns whether the call succeeded. */
static inline bool fuzz_check_quoting(tp_status_t *status, const char *quoted) {
    if (status == NULL) return true;
    const char *message = tp_status_message(status);
    fuzz_say("refused", message);
    tp_code_t code = tp_status_code(status);
    if (code <= TP_OK || code > TP_DATA_LOSS) fuzz_fail("status code out of range", message);
    if (message[0] == '\0') fuzz_fail("empty message", tp_code_name(code));
    if (strstr(message, "(null)") != NULL && (quoted == NULL || strstr(quoted, "(null)") == NULL))
        fuzz_fail("message prints a NULL string", message);
    if (!fuzz_printable(message) && (quoted == NULL || fuzz_printable(quoted)))
        fuzz_fail("message is not one printable line", message);
    tp_status_free(status);
    return false;
}

static inline bool fuzz_check_status(tp_status_t *status) {
    return fuzz_check_quoting(status, NULL);
}

#endif
