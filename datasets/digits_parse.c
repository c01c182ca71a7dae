/* SPDX-License-Identifier: Apache-2.0 */
/* Inflating the digits file and parsing its lines: 64 whole numbers 0..16, then the label 0..9,
 * comma-separated, one image a line. Strict on purpose: a line that is not exactly that means
 * a file that is not the data set (or is damaged), and training on it would fail later and
 * far from the cause, so it is refused with its line number. */
#include "datasets/digits_parse.h"

#include <stdlib.h>
#include <string.h>

#include "base/printable.h"
#include "base/status.h"

enum {
    FIELDS = TP_DIGITS_PIXELS + 1, /* the pixels, then the label */
    SHOWN_FIELD = 24,              /* bytes of a bad field that a message quotes */
    OUT_CHUNK = 16384,             /* bytes inflated at a time */
};

tp_status_t *tp_digits_parser_init(tp_digits_parser_t *parser) {
    memset(parser, 0, sizeof *parser);
    parser->line_number = 1;
    /* 16 + 15: a gzip wrapper (not zlib's, not raw deflate) over a window of up to 32 KiB. */
    int rc = inflateInit2(&parser->stream, 16 + 15);
    if (rc != Z_OK)
        return tp_status_make(rc == Z_MEM_ERROR ? TP_RESOURCE_EXHAUSTED : TP_INTERNAL,
                              "zlib's inflateInit2 failed (%d)", rc);
    parser->stream_ready = true;
    return NULL;
}

void tp_digits_parser_free(tp_digits_parser_t *parser) {
    if (parser->stream_ready) inflateEnd(&parser->stream);
    parser->stream_ready = false;
    free(parser->images);
    free(parser->labels);
    parser->images = NULL;
    parser->labels = NULL;
}

/* `field` (`length` bytes, which may hold any byte) quoted for a message: printable ASCII as
 * itself, other bytes (and ') as \xHH, cut with "..." past SHOWN_FIELD bytes. */
static void quote_field(const char *field, size_t length, char *out, size_t capacity) {
    tp_printable_ascii_quote(out, capacity, field, length, SHOWN_FIELD, '\'');
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* Field `index` (0-based) of the line: a whole number, as numpy.loadtxt reads the file, with
 * blanks around it allowed. Values past 1,000,000 stop growing: they are out of range anyway. */
static tp_status_t *parse_field(const tp_digits_parser_t *parser, const char *field,
                                size_t length, size_t index, long *out) {
    const char *begin = field, *end = field + length;
    while (begin < end && is_blank(*begin)) begin++;
    while (end > begin && is_blank(end[-1])) end--;
    const char *digits = begin < end && *begin == '-' ? begin + 1 : begin;
    bool whole = digits < end;
    long value = 0;
    for (const char *c = digits; c < end && whole; c++) {
        whole = *c >= '0' && *c <= '9';
        if (whole && value <= 1000000) value = value * 10 + (*c - '0');
    }
    if (!whole) {
        char shown[SHOWN_FIELD * 4 + 8];
        quote_field(field, length, shown, sizeof shown);
        return tp_status_make(TP_INVALID_ARGUMENT, "line %llu: field %zu ('%s') is not a whole "
                              "number", (unsigned long long)parser->line_number, index + 1,
                              shown);
    }
    *out = digits != begin ? -value : value;
    bool label = index == TP_DIGITS_PIXELS;
    long limit = label ? TP_DIGITS_CLASSES - 1 : TP_DIGITS_MAX_PIXEL;
    if (*out < 0 || *out > limit) {
        char shown[SHOWN_FIELD * 4 + 8];
        quote_field(begin, (size_t)(end - begin), shown, sizeof shown);
        if (label)
            return tp_status_make(TP_INVALID_ARGUMENT, "line %llu: the label is %s, outside 0..%d",
                                  (unsigned long long)parser->line_number, shown,
                                  TP_DIGITS_CLASSES - 1);
        return tp_status_make(TP_INVALID_ARGUMENT, "line %llu: pixel %zu is %s, outside 0..%d",
                              (unsigned long long)parser->line_number, index + 1, shown,
                              TP_DIGITS_MAX_PIXEL);
    }
    return NULL;
}

static tp_status_t *grow(tp_digits_parser_t *parser) {
    if (parser->rows < parser->capacity) return NULL;
    size_t capacity = parser->capacity == 0 ? 256 : parser->capacity * 2;
    if (capacity > SIZE_MAX / (TP_DIGITS_PIXELS * sizeof(float)))
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "line %llu: too many rows to hold",
                              (unsigned long long)parser->line_number);
    float *images = realloc(parser->images, capacity * TP_DIGITS_PIXELS * sizeof *images);
    if (images != NULL) parser->images = images;
    int32_t *labels = images != NULL ? realloc(parser->labels, capacity * sizeof *labels) : NULL;
    if (labels == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "line %llu: out of host memory",
                              (unsigned long long)parser->line_number);
    parser->labels = labels;
    parser->capacity = capacity;
    return NULL;
}

/* The line held in parser->line, without its newline. */
static tp_status_t *parse_line(tp_digits_parser_t *parser) {
    const char *line = parser->line;
    size_t length = parser->line_length;
    if (length > 0 && line[length - 1] == '\r') length--; /* a file written with CRLF */
    if (length == 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "line %llu is empty; each line holds %d "
                              "pixels and a label", (unsigned long long)parser->line_number,
                              TP_DIGITS_PIXELS);
    size_t fields = 1;
    for (size_t i = 0; i < length; i++) fields += line[i] == ',';
    if (fields != FIELDS)
        return tp_status_make(TP_INVALID_ARGUMENT, "line %llu has %zu field%s; each line holds "
                              "%d: %d pixels, then the label",
                              (unsigned long long)parser->line_number, fields,
                              fields == 1 ? "" : "s", FIELDS, TP_DIGITS_PIXELS);
    TP_RETURN_IF_ERROR(grow(parser));
    float *image = parser->images + parser->rows * TP_DIGITS_PIXELS;
    size_t start = 0;
    for (size_t index = 0; index < FIELDS; index++) {
        size_t end = start;
        while (end < length && line[end] != ',') end++;
        long value = 0;
        TP_RETURN_IF_ERROR(parse_field(parser, line + start, end - start, index, &value));
        /* Divided by 16, a power of two: exact, and 0..16 becomes 0..1. */
        if (index < TP_DIGITS_PIXELS) image[index] = (float)value / (float)TP_DIGITS_MAX_PIXEL;
        else parser->labels[parser->rows] = (int32_t)value;
        start = end + 1;
    }
    parser->rows++;
    return NULL;
}

/* Inflated text: complete lines are parsed as their newline arrives. */
static tp_status_t *consume_text(tp_digits_parser_t *parser, const unsigned char *text,
                                 size_t size) {
    for (size_t i = 0; i < size; i++) {
        if (text[i] == '\n') {
            TP_RETURN_IF_ERROR(parse_line(parser));
            parser->line_length = 0;
            parser->line_number++;
        } else if (parser->line_length == TP_DIGITS_MAX_LINE) {
            return tp_status_make(TP_INVALID_ARGUMENT, "line %llu is longer than %d bytes",
                                  (unsigned long long)parser->line_number, TP_DIGITS_MAX_LINE);
        } else {
            parser->line[parser->line_length++] = (char)text[i];
        }
    }
    return NULL;
}

/* inflate's failure as a status: a header it cannot read means bytes that are not gzip at
 * all (the wrong file); a failure past the header means a gzip file whose data is damaged. */
static tp_status_t *inflate_failure(const tp_digits_parser_t *parser, int rc) {
    const char *reason = parser->stream.msg != NULL ? parser->stream.msg : "no reason given";
    if (rc == Z_MEM_ERROR)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "inflating it: out of host memory");
    /* header.done is 1 once a member's header is read whole, -1 for bytes that are no gzip
     * header at all, 0 while one is read. */
    if (parser->header.done != 1 && parser->any_member)
        return tp_status_make(TP_INVALID_ARGUMENT, "after its gzip stream, the file holds "
                              "bytes that are not gzip data (%s)", reason);
    if (parser->header.done != 1)
        return tp_status_make(TP_INVALID_ARGUMENT, "not a gzip file (%s)", reason);
    return tp_status_make(TP_DATA_LOSS, "its gzip data is damaged in line %llu (%s)",
                          (unsigned long long)parser->line_number, reason);
}

tp_status_t *tp_digits_parser_feed(tp_digits_parser_t *parser, const void *bytes, size_t size) {
    unsigned char out[OUT_CHUNK];
    z_stream *stream = &parser->stream;
    /* zlib counts input in uInt; a larger piece goes in slices. */
    const unsigned char *next = bytes;
    while (size > 0) {
        uInt slice = size > (size_t)UINT32_MAX ? UINT32_MAX : (uInt)size;
        stream->next_in = (Bytef *)(uintptr_t)next; /* zlib's API is not const; it only reads */
        stream->avail_in = slice;
        for (;;) {
            if (!parser->in_member) {
                /* A new member: gzip files may be several streams one after the other. */
                if (stream->avail_in == 0) break;
                inflateReset(stream);
                memset(&parser->header, 0, sizeof parser->header);
                inflateGetHeader(stream, &parser->header);
                parser->in_member = true;
            }
            stream->next_out = out;
            stream->avail_out = sizeof out;
            int rc = inflate(stream, Z_NO_FLUSH);
            TP_RETURN_IF_ERROR(consume_text(parser, out, sizeof out - stream->avail_out));
            if (rc == Z_STREAM_END) {
                parser->in_member = false;
                parser->any_member = true;
                continue;
            }
            if (rc == Z_BUF_ERROR) break; /* no progress without more input */
            if (rc != Z_OK) return inflate_failure(parser, rc);
            /* All input taken and room left over: nothing is pending inside zlib. */
            if (stream->avail_in == 0 && stream->avail_out != 0) break;
        }
        next += slice;
        size -= slice;
    }
    return NULL;
}

tp_status_t *tp_digits_parser_finish(tp_digits_parser_t *parser) {
    if (parser->in_member)
        return tp_status_make(TP_DATA_LOSS, "the gzip stream is cut short in line %llu: the "
                              "file is truncated", (unsigned long long)parser->line_number);
    if (!parser->any_member)
        return tp_status_make(TP_INVALID_ARGUMENT, "the file is empty, not a gzip file");
    if (parser->line_length > 0) { /* the last line, without a newline */
        TP_RETURN_IF_ERROR(parse_line(parser));
        parser->line_length = 0;
    }
    if (parser->rows == 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "the file holds no images");
    return NULL;
}
