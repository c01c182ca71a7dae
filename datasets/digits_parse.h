/* SPDX-License-Identifier: Apache-2.0 */
/* The digits file's bytes, inflated from gzip as they arrive and parsed line by line into rows:
 * what tp_digits_load reads a file with, and what the fuzz target feeds. Bytes may come in
 * pieces of any size; memory stays one line and the rows parsed, whatever the file holds. */
#ifndef TP_DATASETS_DIGITS_PARSE_H
#define TP_DATASETS_DIGITS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "tensorplug/tensorplug.h"

enum {
    TP_DIGITS_PIXELS = 64,      /* 8 x 8 values per image */
    TP_DIGITS_MAX_PIXEL = 16,   /* pixels count the set pixels of a 4 x 4 block: 0..16 */
    TP_DIGITS_CLASSES = 10,     /* labels 0..9 */
    TP_DIGITS_MAX_LINE = 1024,  /* bytes of one line; a well-formed one needs under 200 */
};

typedef struct tp_digits_parser {
    z_stream stream;
    gz_header header;    /* the current member's; header.done tells header from data */
    bool stream_ready;   /* inflateInit2 succeeded, so inflateEnd is owed */
    bool in_member;      /* a gzip member has begun and not yet ended */
    bool any_member;     /* a member has ended whole */
    uint64_t line_number; /* of the line being read, from 1 */
    size_t line_length;
    char line[TP_DIGITS_MAX_LINE];
    /* The rows parsed: images[rows * 64] scaled to [0, 1], labels[rows]. */
    float *images;
    int32_t *labels;
    size_t rows, capacity;
} tp_digits_parser_t;

/* Errors name the line ("line 7: ...") but not the file: the caller prefixes its name. */
tp_status_t *tp_digits_parser_init(tp_digits_parser_t *parser);
/* The next `size` bytes of the gzip file. */
tp_status_t *tp_digits_parser_feed(tp_digits_parser_t *parser, const void *bytes, size_t size);
/* The file has ended: a gzip stream cut short is DATA_LOSS; a last line without its newline is
 * parsed; a file of no rows is refused. */
tp_status_t *tp_digits_parser_finish(tp_digits_parser_t *parser);
/* Frees everything, the rows included, unless taken (set to NULL) before. */
void tp_digits_parser_free(tp_digits_parser_t *parser);

#endif
