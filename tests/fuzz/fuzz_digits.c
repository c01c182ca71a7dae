/* SPDX-License-Identifier: Apache-2.0 */
/* Any text as the digits file, gzip-compressed here (whole, in two members, or cut short), or
 * any bytes as the gzip file itself, fed to the loader's parser (datasets/digits_parse.c) in
 * pieces of any size. Besides crashes and leaks: every refusal is one readable line of a valid
 * code; whole gzip of some text is accepted exactly when a second, plain reading of the text
 * (below) accepts it, with the same images and labels, and refused naming the same first bad
 * line; a stream cut short is never accepted; whatever is accepted holds pixels k/16 and
 * labels 0..9.
 *
 * The first byte picks how the rest is used: bits 0-1 the mode (text whole, text cut short,
 * raw gzip bytes, text in two members), bits 2-7 the size of the pieces fed. Text modes then
 * read the cut or split position from two bytes. */
#include "fuzz_support.h"

#include <zlib.h>

#include "datasets/digits_parse.h"

enum { WHOLE = 0, CUT = 1, RAW = 2, MEMBERS = 3 };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_quiet_log();
    return 0;
}

/* ---- The plain reading: the file's grammar, written out a second way -------------------- */

typedef struct {
    bool ok;
    unsigned long long bad_line; /* the first line refused, when !ok */
    size_t rows;
    float *images;
    int32_t *labels;
} reading_t;

/* Whether `field` ([begin, end)) is, between blanks, an optional minus and decimal digits of a
 * value in [0, limit]. */
static bool good_field(const char *begin, const char *end, long limit) {
    while (begin < end && (*begin == ' ' || *begin == '\t')) begin++;
    while (end > begin && (end[-1] == ' ' || end[-1] == '\t')) end--;
    bool negative = begin < end && *begin == '-';
    if (negative) begin++;
    if (begin == end) return false;
    unsigned long long value = 0;
    for (const char *c = begin; c < end; c++) {
        if (!(*c >= '0' && *c <= '9')) return false;
        if (value < 1000) value = value * 10 + (unsigned long long)(*c - '0');
    }
    return value == 0 || (!negative && value <= (unsigned long long)limit);
}

static long field_value(const char *begin, const char *end) {
    long value = 0;
    bool negative = false;
    for (const char *c = begin; c < end; c++) {
        if (*c == '-') negative = true;
        if (*c >= '0' && *c <= '9') value = value * 10 + (*c - '0');
    }
    return negative ? -value : value;
}

static void read_plainly(const char *text, size_t size, reading_t *out) {
    memset(out, 0, sizeof *out);
    size_t most = size / 129 + 1; /* a row takes at least 129 bytes: 65 digits, 64 commas */
    out->images = malloc(most * TP_DIGITS_PIXELS * sizeof(float));
    out->labels = malloc(most * sizeof(int32_t));
    if (out->images == NULL || out->labels == NULL) abort();
    unsigned long long line = 0;
    for (size_t start = 0; start < size;) {
        line++;
        const char *begin = text + start, *newline = memchr(begin, '\n', size - start);
        const char *end = newline != NULL ? newline : text + size;
        start = (size_t)(end - text) + 1;
        if (end - begin > TP_DIGITS_MAX_LINE) {
            out->bad_line = line;
            return;
        }
        if (end > begin && end[-1] == '\r') end--;
        const char *field = begin;
        int index = 0;
        bool good = end > begin;
        for (const char *c = begin; good && c <= end; c++) {
            if (c < end && *c != ',') continue;
            good = index <= TP_DIGITS_PIXELS &&
                   good_field(field, c, index == TP_DIGITS_PIXELS ? TP_DIGITS_CLASSES - 1
                                                                  : TP_DIGITS_MAX_PIXEL);
            if (good && index < TP_DIGITS_PIXELS)
                out->images[out->rows * TP_DIGITS_PIXELS + (size_t)index] =
                    (float)field_value(field, c) / 16.0f;
            else if (good)
                out->labels[out->rows] = (int32_t)field_value(field, c);
            index++;
            field = c + 1;
        }
        if (!good || index != TP_DIGITS_PIXELS + 1) {
            out->bad_line = line;
            return;
        }
        out->rows++;
    }
    out->ok = out->rows > 0;
}

/* ---- Feeding the parser ---------------------------------------------------------------- */

/* gzip of `text` at `level`, malloc'd; NULL size 0 gives a stream of nothing. */
static unsigned char *gzip(const uint8_t *text, size_t size, int level, size_t *out_size) {
    z_stream stream;
    memset(&stream, 0, sizeof stream);
    if (deflateInit2(&stream, level, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t capacity = deflateBound(&stream, (uLong)size) + 32;
    unsigned char *out = malloc(capacity);
    if (out == NULL) abort();
    stream.next_in = (Bytef *)(uintptr_t)text;
    stream.avail_in = (uInt)size;
    stream.next_out = out;
    stream.avail_out = (uInt)capacity;
    if (deflate(&stream, Z_FINISH) != Z_STREAM_END) abort();
    *out_size = capacity - stream.avail_out;
    deflateEnd(&stream);
    return out;
}

/* The parser's verdict on `bytes` fed `piece` bytes at a time; the status is returned. */
static tp_status_t *parse(const unsigned char *bytes, size_t size, size_t piece,
                          tp_digits_parser_t *parser) {
    tp_status_t *status = tp_digits_parser_init(parser);
    for (size_t at = 0; status == NULL && at < size; at += piece)
        status = tp_digits_parser_feed(parser, bytes + at, size - at < piece ? size - at : piece);
    if (status == NULL) status = tp_digits_parser_finish(parser);
    return status;
}

/* The line a refusal names ("line 7: ..." or "... in line 7 ..."); 0 for none. */
static unsigned long long named_line(const char *message) {
    const char *at = strstr(message, "line ");
    return at != NULL ? strtoull(at + 5, NULL, 10) : 0;
}

static void check_rows(const tp_digits_parser_t *parser) {
    for (size_t i = 0; i < parser->rows * TP_DIGITS_PIXELS; i++) {
        float sixteenths = parser->images[i] * 16.0f;
        if (!(sixteenths >= 0 && sixteenths <= 16 && sixteenths == (float)(int)sixteenths))
            fuzz_fail("accepted", "a pixel that is not k/16 for k in 0..16");
    }
    for (size_t r = 0; r < parser->rows; r++)
        if (parser->labels[r] < 0 || parser->labels[r] > 9)
            fuzz_fail("accepted", "a label outside 0..9");
}

/* Whole gzip of `text`: the parser and the plain reading agree. */
static void check_against_plain(tp_status_t *status, const tp_digits_parser_t *parser,
                                const uint8_t *text, size_t size) {
    reading_t plain;
    read_plainly((const char *)text, size, &plain);
    if (status == NULL) {
        if (!plain.ok) fuzz_fail("accepted", "text the plain reading refuses");
        if (parser->rows != plain.rows) fuzz_fail("accepted", "another number of rows");
        if (memcmp(parser->images, plain.images, plain.rows * TP_DIGITS_PIXELS * sizeof(float)) ||
            memcmp(parser->labels, plain.labels, plain.rows * sizeof(int32_t)))
            fuzz_fail("accepted", "other values than the plain reading");
    } else {
        const char *message = tp_status_message(status);
        if (plain.ok) fuzz_fail("refused text the plain reading accepts", message);
        if (tp_status_code(status) != TP_INVALID_ARGUMENT)
            fuzz_fail("refused whole gzip with a code other than INVALID_ARGUMENT", message);
        if (named_line(message) != plain.bad_line && plain.bad_line != 0)
            fuzz_fail("refused naming another line than the plain reading's", message);
    }
    free(plain.images);
    free(plain.labels);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input_t in = {data, size};
    uint8_t how = fuzz_byte(&in);
    int mode = how & 3;
    size_t piece = (how >> 2) == 0 ? SIZE_MAX : (size_t)(how >> 2) * (how >> 2);
    size_t position = (size_t)fuzz_byte(&in) | (size_t)fuzz_byte(&in) << 8;
    const uint8_t *text = in.data;
    size_t text_size = in.size;

    unsigned char *bytes;
    size_t bytes_size;
    if (mode == RAW) {
        bytes = malloc(text_size + 1);
        if (bytes == NULL) abort();
        memcpy(bytes, text, text_size);
        bytes_size = text_size;
    } else if (mode == MEMBERS) {
        size_t split = text_size == 0 ? 0 : position % (text_size + 1), first_size, second_size;
        unsigned char *first = gzip(text, split, 1, &first_size);
        unsigned char *second = gzip(text + split, text_size - split, 9, &second_size);
        bytes = malloc(first_size + second_size);
        if (bytes == NULL) abort();
        memcpy(bytes, first, first_size);
        memcpy(bytes + first_size, second, second_size);
        bytes_size = first_size + second_size;
        free(first);
        free(second);
    } else {
        bytes = gzip(text, text_size, 6, &bytes_size);
    }
    bool cut = mode == CUT && position % (bytes_size + 1) < bytes_size;
    if (cut) bytes_size = position % (bytes_size + 1);

    tp_digits_parser_t parser;
    tp_status_t *status = parse(bytes, bytes_size, piece, &parser);
    if (status == NULL) {
        char rows[48];
        snprintf(rows, sizeof rows, "%zu rows", parser.rows);
        fuzz_say("accepted", rows);
        check_rows(&parser);
    }
    if (cut && status == NULL) fuzz_fail("accepted", "a gzip stream cut short");
    if (cut && tp_status_code(status) != TP_DATA_LOSS &&
        tp_status_code(status) != TP_INVALID_ARGUMENT)
        fuzz_fail("refused a cut stream with a code other than DATA_LOSS or INVALID_ARGUMENT",
                  tp_status_message(status));
    if (mode != RAW && !cut) check_against_plain(status, &parser, text, text_size);
    /* A field quoted as the file holds it ("field 3 ('...')") may hold "(null)" itself. */
    const char *message = status != NULL ? tp_status_message(status) : "";
    fuzz_check_quoting(status, strstr(message, "('") != NULL ? "(null)" : NULL);
    tp_digits_parser_free(&parser);
    free(bytes);
    return 0;
}
