/* SPDX-License-Identifier: Apache-2.0 */
/* The .npy header: its preamble, and the Python dict literal that says the dtype, the order and
 * the shape. The dict is read by a small parser of the literal syntax NumPy's loader accepts
 * (keys in any order, either quote, spaces and newlines anywhere, an optional trailing comma),
 * since files come from every writer of the format, not only numpy.save.
 *
 * bfloat16 has no NumPy dtype. Its tensors are written as a record of one field named
 * 'bfloat16' holding the bits as a 2-byte unsigned integer, descr [('bfloat16', '<u2')]:
 * numpy.load reads the file as it is, without a package of extra dtypes, the field's name says
 * what the bits are (a['bfloat16'].astype('<u4') << 16, viewed as '<f4', gives the values),
 * and tensorplug reads exactly that record back as bfloat16. The alternatives lose something:
 * '<u2' writes the bits as numbers NumPy would compute with as integers, and '<V2' (raw bytes,
 * as some writers of ml_dtypes' bfloat16 leave) says nothing of what they are, so tensorplug
 * could only guess when reading one back; it refuses those, naming the record it reads. */
#include "io/npy.h"

#include <string.h>

#include "base/printable.h"
#include "base/status.h"

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* The dtypes tensorplug holds, as NumPy's descr writes them without the byte order; bfloat16
 * is the record above, whose one field is "u2". */
static const struct {
    tp_dtype_t dtype;
    const char *code;
} descrs[] = {{TP_FLOAT32, "f4"}, {TP_FLOAT64, "f8"}, {TP_INT32, "i4"},  {TP_INT64, "i8"},
              {TP_UINT8, "u1"},   {TP_BOOL, "b1"},    {TP_FLOAT16, "f2"}, {TP_INT8, "i1"},
              {TP_INT16, "i2"},   {TP_UINT16, "u2"},  {TP_UINT32, "u4"}, {TP_UINT64, "u8"}};

/* The name of bfloat16's one field. */
static const char bfloat16_field[] = "bfloat16";

bool tp_npy_host_little_endian(void) {
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    return first == 1;
}

/* ---- Reading ---------------------------------------------------------------------------- */

typedef struct {
    const char *text;
    size_t length;
    size_t at;
} cursor_t;

/* Up to 40 bytes of `text` for a message, each byte outside printable ASCII as \xHH, with
 * "..." when cut short. */
static void quote(char *out, size_t capacity, const char *text, size_t length) {
    tp_printable_ascii_quote(out, capacity, text, length, 40, 0);
}

/* What stands at the cursor, quoted for a message ("the end of the header" at the end). */
static void describe_here(const cursor_t *c, char *out, size_t capacity) {
    if (c->at >= c->length) {
        snprintf(out, capacity, "the end of the header");
        return;
    }
    char text[200];
    size_t rest = c->length - c->at;
    quote(text, sizeof text, c->text + c->at, rest < 12 ? rest : 12);
    snprintf(out, capacity, "'%s'", text);
}

static tp_status_t *malformed(const cursor_t *c, const char *expected) {
    char found[220];
    describe_here(c, found, sizeof found);
    return tp_status_make(TP_INVALID_ARGUMENT,
                          "the header is not the dict NumPy writes: at byte %zu of it, "
                          "expected %s but found %s",
                          c->at, expected, found);
}

static void skip_space(cursor_t *c) {
    while (c->at < c->length && strchr(" \t\n\r\f", c->text[c->at]) != NULL &&
           c->text[c->at] != '\0')
        c->at++;
}

static bool take(cursor_t *c, char wanted) {
    skip_space(c);
    if (c->at < c->length && c->text[c->at] == wanted) {
        c->at++;
        return true;
    }
    return false;
}

static bool looking_at(cursor_t *c, char wanted) {
    skip_space(c);
    return c->at < c->length && c->text[c->at] == wanted;
}

/* A string literal in either quote, without escapes (no key or descr NumPy reads needs one). */
static tp_status_t *parse_string(cursor_t *c, const char *what, const char **out_text,
                                 size_t *out_length) {
    skip_space(c);
    char quote_char = c->at < c->length ? c->text[c->at] : '\0';
    if (quote_char != '\'' && quote_char != '"') return malformed(c, what);
    size_t start = c->at + 1;
    for (size_t i = start; i < c->length; i++) {
        char ch = c->text[i];
        if (ch == quote_char) {
            *out_text = c->text + start;
            *out_length = i - start;
            c->at = i + 1;
            return NULL;
        }
        if (ch == '\\' || ch == '\n') {
            c->at = i;
            return malformed(c, ch == '\\' ? "a string without escape sequences"
                                           : "the string's closing quote");
        }
    }
    c->at = c->length;
    return malformed(c, "the string's closing quote");
}

static bool is_identifier_byte(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

static bool take_word(cursor_t *c, const char *word) {
    skip_space(c);
    size_t n = strlen(word);
    if (c->length - c->at < n || memcmp(c->text + c->at, word, n) != 0) return false;
    if (c->at + n < c->length && is_identifier_byte(c->text[c->at + n])) return false;
    c->at += n;
    return true;
}

/* Splits a descr string into its byte order ('=' when it gives none) and its code. */
static char split_order(const char *text, size_t length, const char **code, size_t *code_length) {
    *code = text;
    *code_length = length;
    if (length == 0 || strchr("<>=|", text[0]) == NULL) return '=';
    (*code)++;
    (*code_length)--;
    return text[0];
}

/* Whether the cursor, at '[', holds bfloat16's record, [('bfloat16', '<u2')] (either byte
 * order, optional trailing commas); if so, reads it. Any other list leaves the cursor. */
static bool parse_bfloat16_record(cursor_t *c, tp_npy_header_t *out) {
    size_t start = c->at;
    const char *name, *text, *code;
    size_t name_length, length, code_length;
    bool ok = take(c, '[') && take(c, '(');
    tp_status_t *error = ok ? parse_string(c, "a field name", &name, &name_length) : NULL;
    ok = ok && error == NULL && name_length == strlen(bfloat16_field) &&
         memcmp(name, bfloat16_field, name_length) == 0 && take(c, ',');
    tp_status_free(error);
    error = ok ? parse_string(c, "a field's dtype", &text, &length) : NULL;
    ok = ok && error == NULL;
    tp_status_free(error);
    char order = ok ? split_order(text, length, &code, &code_length) : '=';
    ok = ok && order != '|' && code_length == 2 && memcmp(code, "u2", 2) == 0;
    if (ok) take(c, ',');
    ok = ok && take(c, ')');
    if (ok) take(c, ',');
    ok = ok && take(c, ']');
    if (!ok) {
        c->at = start;
        return false;
    }
    out->dtype = TP_BFLOAT16;
    out->big_endian = order == '>' || (order == '=' && !tp_npy_host_little_endian());
    return true;
}

static tp_status_t *parse_descr(cursor_t *c, tp_npy_header_t *out) {
    if (looking_at(c, '[')) {
        if (parse_bfloat16_record(c, out)) return NULL;
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its dtype is structured (a list of fields as 'descr'), which "
                              "tensorplug does not hold (the one record it reads is "
                              "bfloat16's, [('bfloat16', '<u2')])");
    }
    const char *text;
    size_t length;
    TP_RETURN_IF_ERROR(parse_string(c, "a string as 'descr'", &text, &length));
    char quoted[200];
    quote(quoted, sizeof quoted, text, length);
    const char *code;
    size_t code_length;
    char order = split_order(text, length, &code, &code_length);
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++) {
        if (code_length != 2 || memcmp(code, descrs[i].code, 2) != 0) continue;
        bool one_byte = tp_dtype_size(descrs[i].dtype) == 1;
        if (order == '|' && !one_byte)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "its dtype '%s' gives no byte order ('|' is for one-byte "
                                  "types); write '<%s' or '>%s'",
                                  quoted, descrs[i].code, descrs[i].code);
        out->dtype = descrs[i].dtype;
        out->big_endian = !one_byte && (order == '>' || (order == '=' &&
                                                         !tp_npy_host_little_endian()));
        return NULL;
    }
    if (code_length > 0 && code[0] == 'O')
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its dtype '%s' holds pickled Python objects, which tensorplug "
                              "does not read",
                              quoted);
    if (code_length > 0 && code[0] == 'V')
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its dtype '%s' is raw bytes, which say nothing of what they hold "
                              "(tensorplug writes bfloat16 as [('bfloat16', '<u2')] and reads "
                              "that back)",
                              quoted);
    return tp_status_make(TP_INVALID_ARGUMENT,
                          "its dtype '%s' is not one tensorplug holds (it reads '<f2', '<f4', "
                          "'<f8', '|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8', "
                          "'|b1' and bfloat16's [('bfloat16', '<u2')], and '>' for "
                          "big-endian)",
                          quoted);
}

static tp_status_t *parse_fortran_order(cursor_t *c, tp_npy_header_t *out) {
    if (take_word(c, "True")) {
        out->fortran_order = true;
        return NULL;
    }
    if (take_word(c, "False")) {
        out->fortran_order = false;
        return NULL;
    }
    return malformed(c, "True or False as 'fortran_order'");
}

/* One dimension: a non-negative integer that fits int64 (Python's are unbounded). */
static tp_status_t *parse_dimension(cursor_t *c, int64_t *out) {
    skip_space(c);
    size_t start = c->at;
    bool negative = take(c, '-');
    skip_space(c);
    size_t digits = c->at;
    int64_t value = 0;
    bool too_large = false;
    while (c->at < c->length && c->text[c->at] >= '0' && c->text[c->at] <= '9') {
        int digit = c->text[c->at] - '0';
        if (value > (INT64_MAX - digit) / 10) too_large = true;
        if (!too_large) value = value * 10 + digit;
        c->at++;
    }
    if (c->at == digits) {
        c->at = start;
        return malformed(c, "an integer in 'shape'");
    }
    char text[200];
    quote(text, sizeof text, c->text + start, c->at - start);
    if (negative && (value != 0 || too_large))
        return tp_status_make(TP_INVALID_ARGUMENT, "its shape has a negative dimension, %s",
                              text);
    if (too_large)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its shape has a dimension too large for int64, %s", text);
    *out = value;
    return NULL;
}

static tp_status_t *parse_shape(cursor_t *c, tp_npy_header_t *out) {
    if (!take(c, '(')) return malformed(c, "a tuple as 'shape'");
    tp_shape_t shape = {.rank = 0};
    bool trailing_comma = false;
    while (!take(c, ')')) {
        if (shape.rank > 0 && !trailing_comma) return malformed(c, "',' or ')' in 'shape'");
        int64_t dimension = 0;
        TP_RETURN_IF_ERROR(parse_dimension(c, &dimension));
        if (shape.rank == TP_MAX_RANK)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "its shape has more than %d dimensions, the most a "
                                  "tensorplug tensor has",
                                  TP_MAX_RANK);
        shape.dims[shape.rank++] = dimension;
        trailing_comma = take(c, ',');
    }
    if (shape.rank == 1 && !trailing_comma)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its shape is an integer in parentheses, not a tuple (one "
                              "dimension is written (n,))");
    out->shape = shape;
    return NULL;
}

static tp_status_t *parse_dict(cursor_t *c, tp_npy_header_t *out) {
    static const char *const keys[] = {"descr", "fortran_order", "shape"};
    bool seen[3] = {false, false, false};
    if (!take(c, '{')) return malformed(c, "'{'");
    while (!take(c, '}')) {
        const char *key;
        size_t key_length;
        TP_RETURN_IF_ERROR(parse_string(c, "a string key or '}'", &key, &key_length));
        size_t which = 0;
        while (which < 3 && !(strlen(keys[which]) == key_length &&
                              memcmp(keys[which], key, key_length) == 0))
            which++;
        if (which == 3) {
            char quoted[200];
            quote(quoted, sizeof quoted, key, key_length);
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "its header has the key '%s'; NumPy's has only 'descr', "
                                  "'fortran_order' and 'shape'",
                                  quoted);
        }
        if (seen[which])
            return tp_status_make(TP_INVALID_ARGUMENT, "its header has the key '%s' twice",
                                  keys[which]);
        seen[which] = true;
        if (!take(c, ':')) return malformed(c, "':' after a key");
        if (which == 0) TP_RETURN_IF_ERROR(parse_descr(c, out));
        if (which == 1) TP_RETURN_IF_ERROR(parse_fortran_order(c, out));
        if (which == 2) TP_RETURN_IF_ERROR(parse_shape(c, out));
        if (!take(c, ',') && !looking_at(c, '}')) return malformed(c, "',' or '}'");
    }
    skip_space(c);
    if (c->at != c->length) return malformed(c, "nothing but spaces after the dict");
    for (size_t i = 0; i < 3; i++)
        if (!seen[i])
            return tp_status_make(TP_INVALID_ARGUMENT, "its header has no '%s' key", keys[i]);
    return NULL;
}

tp_status_t *tp_npy_parse_header(const void *bytes, size_t available, uint64_t total_size,
                                 tp_npy_header_t *out) {
    const unsigned char *b = bytes;
    size_t have = available < total_size ? available : (size_t)total_size;
    if (have < sizeof magic || memcmp(b, magic, sizeof magic) != 0) {
        size_t n = have < sizeof magic ? have : sizeof magic;
        if (memcmp(b, magic, n) != 0 || n == 0)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "not a .npy file: it does not begin with NumPy's magic "
                                  "string \\x93NUMPY");
    }
    if (have < 10)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "truncated: the file ends after %zu bytes, inside the "
                              "preamble before the header",
                              have);
    unsigned major = b[6], minor = b[7];
    size_t length_bytes = major == 1 ? 2 : 4;
    if (!((major == 1 || major == 2 || major == 3) && minor == 0))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its format version %u.%u is unknown (tensorplug reads 1.0, 2.0 "
                              "and 3.0)",
                              major, minor);
    if (have < 8 + length_bytes)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "truncated: the file ends after %zu bytes, inside the "
                              "preamble before the header",
                              have);
    uint64_t header_length = 0;
    for (size_t i = 0; i < length_bytes; i++) header_length |= (uint64_t)b[8 + i] << (8 * i);
    if (header_length > TP_NPY_MAX_HEADER_LENGTH)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its header claims %llu bytes, more than the %d tensorplug reads",
                              (unsigned long long)header_length, TP_NPY_MAX_HEADER_LENGTH);
    size_t offset = 8 + length_bytes + (size_t)header_length;
    if (offset > total_size)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "truncated: its header claims %llu bytes, but the file ends "
                              "%llu bytes into it",
                              (unsigned long long)header_length,
                              (unsigned long long)(total_size - 8 - length_bytes));
    if (offset > available)
        return tp_status_make(TP_INTERNAL, "tp_npy_parse_header was handed %zu bytes of a "
                              "header of %zu", available, offset);

    tp_npy_header_t header = {.data_offset = offset};
    cursor_t cursor = {(const char *)b + 8 + length_bytes, (size_t)header_length, 0};
    TP_RETURN_IF_ERROR(parse_dict(&cursor, &header));

    int64_t count;
    char shape_text[256];
    tp_shape_format(&header.shape, shape_text, sizeof shape_text);
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_shape_num_elements(&header.shape, &count),
                                          "its shape %s", shape_text));
    size_t element = tp_dtype_size(header.dtype);
    if ((uint64_t)count > SIZE_MAX / element)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its shape %s holds more %s values than memory can", shape_text,
                              tp_dtype_name(header.dtype));
    header.data_size = (size_t)count * element;
    uint64_t follows = total_size - offset;
    if (follows < header.data_size)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "truncated: dtype %s and shape %s need %zu bytes of values, but "
                              "only %llu follow the header",
                              tp_dtype_name(header.dtype), shape_text, header.data_size,
                              (unsigned long long)follows);
    if (follows > header.data_size)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "dtype %s and shape %s need %zu bytes of values, but %llu follow "
                              "the header",
                              tp_dtype_name(header.dtype), shape_text, header.data_size,
                              (unsigned long long)follows);
    *out = header;
    return NULL;
}

/* ---- Writing ---------------------------------------------------------------------------- */

void tp_npy_format_header(tp_strbuf_t *out, tp_dtype_t dtype, const tp_shape_t *shape) {
    const char *code = "";
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (descrs[i].dtype == dtype) code = descrs[i].code;
    char order = tp_dtype_size(dtype) == 1 ? '|' : tp_npy_host_little_endian() ? '<' : '>';
    size_t start = out->length;
    /* Version 1.0, and the header's length, filled in once it is known. */
    const unsigned char version_and_length[4] = {1, 0, 0, 0};
    tp_strbuf_append(out, (const char *)magic, sizeof magic);
    tp_strbuf_append(out, (const char *)version_and_length, sizeof version_and_length);
    if (dtype == TP_BFLOAT16)
        tp_strbuf_printf(out, "{'descr': [('%s', '%cu2')], 'fortran_order': False, 'shape': (",
                         bfloat16_field, order);
    else
        tp_strbuf_printf(out, "{'descr': '%c%s', 'fortran_order': False, 'shape': (", order,
                         code);
    for (int32_t d = 0; d < shape->rank; d++)
        tp_strbuf_printf(out, d == 0 ? "%lld" : ", %lld", (long long)shape->dims[d]);
    tp_strbuf_puts(out, shape->rank == 1 ? ",), }" : "), }");
    /* The values start at a multiple of 64 bytes, so that they can be mapped and read aligned;
     * the header ends with a newline. */
    size_t padding = (64 - (out->length - start + 1) % 64) % 64;
    tp_strbuf_repeat(out, ' ', padding);
    tp_strbuf_puts(out, "\n");
    if (tp_strbuf_failed(out)) return;
    size_t header_length = out->length - start - TP_NPY_PREAMBLE_V1;
    out->data[start + 8] = (char)(header_length & 0xff);
    out->data[start + 9] = (char)(header_length >> 8);
}
