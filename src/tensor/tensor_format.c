/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy's array printing, as numpy >= 1.14 does it by default (floatmode "maxprec",
 * precision 8, threshold 1000, edgeitems 3, linewidth 75), since that is what TensorFlow users
 * read. Digits are the shortest that read back to the same value in the element's own dtype,
 * found by printing with increasing precision until the text, read and rounded to the dtype,
 * is the value: float16 65504 prints as 65500, as NumPy prints it. bfloat16, which NumPy does
 * not have, prints by the same rule at its own precision. */
#include "tensor/tensor_format.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "tensorplug/float16.h"

enum {
    PRECISION = 8,   /* at most this many fractional digits in an array */
    THRESHOLD = 1000,/* more elements than this are summarised */
    EDGE_ITEMS = 3,  /* items kept at each end of a summarised axis */
    LINE_WIDTH = 75,
    TEXT_CAPACITY = 64
};

/* ---- Reading elements ---------------------------------------------------------------------- */

typedef struct {
    tp_dtype_t dtype;
    const void *values;
} elements_t;

static double float_at(const elements_t *e, int64_t i) {
    switch (e->dtype) {
    case TP_FLOAT32: return ((const float *)e->values)[i];
    case TP_FLOAT16: return tp_float16_to_float(((const uint16_t *)e->values)[i]);
    case TP_BFLOAT16: return tp_bfloat16_to_float(((const uint16_t *)e->values)[i]);
    default: return ((const double *)e->values)[i];
    }
}

/* A bool tensor holds the bytes its maker gave; reading one other than 0 or 1 as a bool is
 * undefined, so any nonzero byte is read as true. */
static bool bool_at(const elements_t *e, int64_t i) {
    return ((const uint8_t *)e->values)[i] != 0;
}

/* Element i of an integer tensor in decimal; returns its length. */
static int integer_text(const elements_t *e, int64_t i, char *text, size_t capacity) {
    const void *v = e->values;
    switch (e->dtype) {
    case TP_INT8: return snprintf(text, capacity, "%d", ((const int8_t *)v)[i]);
    case TP_INT16: return snprintf(text, capacity, "%d", ((const int16_t *)v)[i]);
    case TP_INT32: return snprintf(text, capacity, "%" PRId32, ((const int32_t *)v)[i]);
    case TP_INT64: return snprintf(text, capacity, "%" PRId64, ((const int64_t *)v)[i]);
    case TP_UINT8: return snprintf(text, capacity, "%u", ((const uint8_t *)v)[i]);
    case TP_UINT16: return snprintf(text, capacity, "%u", ((const uint16_t *)v)[i]);
    case TP_UINT32: return snprintf(text, capacity, "%" PRIu32, ((const uint32_t *)v)[i]);
    default: return snprintf(text, capacity, "%" PRIu64, ((const uint64_t *)v)[i]);
    }
}

/* Whether `text` reads back as `x` in the element's own precision. */
static bool reads_back(const char *text, double x, tp_dtype_t dtype) {
    switch (dtype) {
    case TP_FLOAT32: return strtof(text, NULL) == (float)x;
    case TP_FLOAT16:
        return tp_float16_from_double(strtod(text, NULL)) == tp_float16_from_double(x);
    case TP_BFLOAT16:
        return tp_bfloat16_from_double(strtod(text, NULL)) == tp_bfloat16_from_double(x);
    default: return strtod(text, NULL) == x;
    }
}

static void shortest_scientific(double x, tp_dtype_t dtype, int max_digits, char *integer,
                                char *fraction, int *exponent);

/* The fewest fractional digits (up to max_digits) that read back as x, as "%.Nf" prints them;
 * with max_digits reached, the value rounded there with trailing zeros dropped. A large value
 * whose shortest digits end before the point gets zeros, not its exact binary digits, as
 * NumPy prints it: float32 67012472 is "67012470". */
static void shortest_positional(double x, tp_dtype_t dtype, int max_digits, char *text) {
    if (fabs(x) >= 1) {
        char integer[TEXT_CAPACITY], fraction[TEXT_CAPACITY];
        int exponent;
        shortest_scientific(x, dtype, 17, integer, fraction, &exponent);
        int significant = (int)strlen(fraction) + 1;
        /* A value too wide for the buffer (it cannot be: doubles have 309 digits at most,
         * arrays switch to scientific at 1e8 and scalars at 1e16) would take the path below. */
        if (significant < exponent + 1 &&
            snprintf(text, TEXT_CAPACITY, "%s%s%0*d", integer, fraction,
                     exponent + 1 - significant, 0) < TEXT_CAPACITY)
            return;
    }
    for (int digits = 0; digits <= max_digits; digits++) {
        snprintf(text, TEXT_CAPACITY, "%.*f", digits, x);
        if (reads_back(text, x, dtype)) return;
    }
    size_t length = strlen(text);
    while (length > 0 && text[length - 1] == '0') text[--length] = '\0';
    if (length > 0 && text[length - 1] == '.') text[--length] = '\0';
}

/* The fewest mantissa digits (up to max_digits after the point) that read back as x, split
 * into "-1", "5" and the exponent -5 for -1.5e-05. */
static void shortest_scientific(double x, tp_dtype_t dtype, int max_digits, char *integer,
                                char *fraction, int *exponent) {
    char text[TEXT_CAPACITY];
    for (int digits = 0; digits <= max_digits; digits++) {
        snprintf(text, sizeof text, "%.*e", digits, x);
        if (reads_back(text, x, dtype)) break;
    }
    char *e = strchr(text, 'e');
    *exponent = atoi(e + 1);
    *e = '\0';
    char *point = strchr(text, '.');
    snprintf(fraction, TEXT_CAPACITY, "%s", point != NULL ? point + 1 : "");
    if (point != NULL) *point = '\0';
    size_t length = strlen(fraction);
    while (length > 0 && fraction[length - 1] == '0') fraction[--length] = '\0';
    snprintf(integer, TEXT_CAPACITY, "%s", text);
}

/* ---- How every element of one array is printed --------------------------------------------- */

typedef struct {
    elements_t elements;
    /* floats */
    bool scientific;
    int pad_left, pad_right; /* widths of the integer part (with sign) and fractional part */
    int fraction_digits;     /* scientific: every mantissa gets this many */
    int exponent_digits;     /* scientific: at least 2 */
    /* integers and bools */
    int width;
} style_t;

/* Collects what the style needs from the elements that will be shown. */
typedef struct {
    bool any_finite, any_nonzero, any_negative_infinity, any_non_finite;
    double max_abs, min_abs_nonzero;
    int integer_width; /* of the longest integer shown */
} survey_t;

static void survey_element(const elements_t *e, int64_t i, survey_t *s) {
    if (e->dtype == TP_BOOL) return;
    if (!tp_dtype_is_float(e->dtype)) {
        char text[32];
        int width = integer_text(e, i, text, sizeof text);
        if (width > s->integer_width) s->integer_width = width;
        return;
    }
    double x = float_at(e, i);
    if (!isfinite(x)) {
        s->any_non_finite = true;
        if (isinf(x) && x < 0) s->any_negative_infinity = true;
        return;
    }
    s->any_finite = true;
    double a = fabs(x);
    if (a > s->max_abs) s->max_abs = a;
    if (a != 0 && (!s->any_nonzero || a < s->min_abs_nonzero)) s->min_abs_nonzero = a;
    if (a != 0) s->any_nonzero = true;
}

/* Second pass for floats: the widths of the parts, from the same digits the elements use. */
static void measure_float(const elements_t *e, int64_t i, style_t *style) {
    double x = float_at(e, i);
    if (!isfinite(x)) return;
    tp_dtype_t dtype = e->dtype;
    char integer[TEXT_CAPACITY], fraction[TEXT_CAPACITY];
    if (style->scientific) {
        int exponent;
        shortest_scientific(x, dtype, PRECISION, integer, fraction, &exponent);
        char digits[16];
        int exponent_length = snprintf(digits, sizeof digits, "%d", abs(exponent));
        if (exponent_length > style->exponent_digits) style->exponent_digits = exponent_length;
        if ((int)strlen(fraction) > style->fraction_digits)
            style->fraction_digits = (int)strlen(fraction);
    } else {
        shortest_positional(x, dtype, PRECISION, integer);
        char *point = strchr(integer, '.');
        const char *fraction_part = point != NULL ? point + 1 : "";
        if (point != NULL) *point = '\0';
        if ((int)strlen(fraction_part) > style->pad_right)
            style->pad_right = (int)strlen(fraction_part);
    }
    if ((int)strlen(integer) > style->pad_left) style->pad_left = (int)strlen(integer);
}

/* ---- Formatting one element ------------------------------------------------------------------ */

static void format_float(const style_t *style, double x, tp_strbuf_t *text) {
    tp_dtype_t dtype = style->elements.dtype;
    if (!isfinite(x)) {
        const char *word = isnan(x) ? "nan" : x < 0 ? "-inf" : "inf";
        int width = style->pad_left + style->pad_right + 1;
        if (style->scientific) width = style->pad_left + 1 + style->fraction_digits + 2 +
                                       style->exponent_digits;
        tp_strbuf_printf(text, "%*s", width, word);
        return;
    }
    char integer[TEXT_CAPACITY], fraction[TEXT_CAPACITY];
    if (style->scientific) {
        int exponent;
        shortest_scientific(x, dtype, PRECISION, integer, fraction, &exponent);
        tp_strbuf_printf(text, "%*s.%s%.*se%c%0*d", style->pad_left, integer, fraction,
                 style->fraction_digits - (int)strlen(fraction), "00000000",
                 exponent < 0 ? '-' : '+', style->exponent_digits, abs(exponent));
        return;
    }
    shortest_positional(x, dtype, PRECISION, integer);
    char *point = strchr(integer, '.');
    const char *fraction_part = point != NULL ? point + 1 : "";
    if (point != NULL) *point = '\0';
    tp_strbuf_printf(text, "%*s.%-*s", style->pad_left, integer, style->pad_right,
                     fraction_part);
}

/* Appends element i, padded to the array's field width. */
static void format_element(const style_t *style, int64_t i, tp_strbuf_t *text) {
    const elements_t *e = &style->elements;
    if (tp_dtype_is_float(e->dtype)) {
        format_float(style, float_at(e, i), text);
    } else if (e->dtype == TP_BOOL) {
        tp_strbuf_printf(text, "%*s", style->width, bool_at(e, i) ? "True" : "False");
    } else {
        char digits[32];
        integer_text(e, i, digits, sizeof digits);
        tp_strbuf_printf(text, "%*s", style->width, digits);
    }
}

/* ---- Walking the array --------------------------------------------------------------------- */

typedef struct {
    const tp_shape_t *shape;
    int64_t strides[TP_MAX_RANK];
    bool summarize;
    style_t style;
    survey_t survey;
    bool failed; /* a nested buffer ran out of memory */
} printer_t;

static bool summarized(const printer_t *p, int axis) {
    return p->summarize && p->shape->dims[axis] > 2 * EDGE_ITEMS;
}

/* Calls visit for every element that will be shown, in order. */
static void for_each_shown(printer_t *p, int axis, int64_t offset,
                           void (*visit)(printer_t *, int64_t)) {
    if (axis == p->shape->rank) {
        visit(p, offset);
        return;
    }
    int64_t length = p->shape->dims[axis];
    for (int64_t i = 0; i < length; i++) {
        if (summarized(p, axis) && i == EDGE_ITEMS) i = length - EDGE_ITEMS;
        for_each_shown(p, axis + 1, offset + i * p->strides[axis], visit);
    }
}

static void visit_survey(printer_t *p, int64_t i) {
    survey_element(&p->style.elements, i, &p->survey);
}

static void visit_measure(printer_t *p, int64_t i) {
    measure_float(&p->style.elements, i, &p->style);
}

/* Chooses NumPy's layout for the shown elements. */
static void choose_style(printer_t *p) {
    style_t *style = &p->style;
    p->survey = (survey_t){.integer_width = 0};
    for_each_shown(p, 0, 0, visit_survey);
    const survey_t *s = &p->survey;
    if (!tp_dtype_is_float(style->elements.dtype)) {
        if (style->elements.dtype == TP_BOOL) {
            style->width = 5; /* " True" lines up with "False", as NumPy does */
        } else {
            style->width = s->integer_width;
        }
        return;
    }
    style->scientific = s->any_nonzero &&
                        (s->max_abs >= 1e8 || s->min_abs_nonzero < 1e-4 ||
                         s->max_abs / s->min_abs_nonzero > 1e3);
    style->exponent_digits = 2;
    if (s->any_finite) for_each_shown(p, 0, 0, visit_measure);
    if (s->any_non_finite) {
        /* "nan" and "inf" (or "-inf") must fit the field. */
        int after_point = style->scientific
                              ? 1 + style->fraction_digits + 2 + style->exponent_digits
                              : style->pad_right + 1;
        int infinity = s->any_negative_infinity ? 4 : 3;
        if (3 - after_point > style->pad_left) style->pad_left = 3 - after_point;
        if (infinity - after_point > style->pad_left) style->pad_left = infinity - after_point;
    }
}

/* Adds a word to the current line, starting a new line when it would pass `width`. */
static void extend_line(tp_strbuf_t *text, tp_strbuf_t *line, const char *word, int width,
                        int indent) {
    bool wrap = (int)(line->length + strlen(word)) > width && (int)line->length > indent;
    if (wrap) {
        size_t keep = line->length;
        while (keep > 0 && line->data[keep - 1] == ' ') keep--;
        tp_strbuf_append(text, line->data, keep);
        tp_strbuf_puts(text, "\n");
        tp_strbuf_free(line);
        tp_strbuf_repeat(line, ' ', (size_t)indent);
    }
    tp_strbuf_puts(line, word);
}

static void append_array(printer_t *p, tp_strbuf_t *out, int axis, int64_t offset, int indent,
                         int width);

/* One item of an axis: an element, or a nested array. */
static void append_item(printer_t *p, tp_strbuf_t *out, int axis, int64_t offset, int indent,
                        int width) {
    if (axis == p->shape->rank) {
        format_element(&p->style, offset, out);
    } else {
        append_array(p, out, axis, offset, indent, width);
    }
}

/* Appends "[...]" for the sub-array at `axis`. Lines after the first start with `indent`
 * spaces; `width` is the room left for this level's contents. */
static void append_array(printer_t *p, tp_strbuf_t *out, int axis, int64_t offset, int indent,
                         int width) {
    int64_t length = p->shape->dims[axis];
    int64_t stride = p->strides[axis];
    bool summary = summarized(p, axis);
    int64_t leading = summary ? EDGE_ITEMS : 0, trailing = summary ? EDGE_ITEMS : length;
    int axes_left = p->shape->rank - axis;
    tp_strbuf_t body = TP_STRBUF_INIT;
    if (axes_left == 1) {
        int element_width = width - 1; /* room for the closing ']' */
        tp_strbuf_t line = TP_STRBUF_INIT, word = TP_STRBUF_INIT;
        tp_strbuf_repeat(&line, ' ', (size_t)indent);
        for (int64_t i = 0; i < length; i++) {
            if (i == leading && summary) {
                extend_line(&body, &line, "...", element_width, indent);
                tp_strbuf_puts(&line, " ");
                i = length - trailing;
            }
            tp_strbuf_clear(&word);
            format_element(&p->style, offset + i * stride, &word);
            extend_line(&body, &line, tp_strbuf_text(&word), element_width, indent);
            if (i + 1 < length) tp_strbuf_puts(&line, " ");
        }
        tp_strbuf_append(&body, line.data != NULL ? line.data : "", line.length);
        if (tp_strbuf_failed(&line) || tp_strbuf_failed(&word)) p->failed = true;
        tp_strbuf_free(&line);
        tp_strbuf_free(&word);
    } else {
        for (int64_t i = 0; i < length; i++) {
            if (i == leading && summary) {
                tp_strbuf_repeat(&body, ' ', (size_t)indent);
                tp_strbuf_puts(&body, "...");
                tp_strbuf_repeat(&body, '\n', (size_t)(axes_left - 1));
                i = length - trailing;
            }
            tp_strbuf_repeat(&body, ' ', (size_t)indent);
            append_item(p, &body, axis + 1, offset + i * stride, indent + 1, width - 1);
            if (i + 1 < length) tp_strbuf_repeat(&body, '\n', (size_t)(axes_left - 1));
        }
    }
    /* The first line's indent is where the opening bracket goes. */
    tp_strbuf_puts(out, "[");
    const char *text = tp_strbuf_text(&body);
    size_t skip = body.length < (size_t)indent ? body.length : (size_t)indent;
    tp_strbuf_append(out, text + skip, body.length - skip);
    tp_strbuf_puts(out, "]");
    if (tp_strbuf_failed(&body)) p->failed = true;
    tp_strbuf_free(&body);
}

/* ---- Scalars --------------------------------------------------------------------------------- */

/* A 0-d value, as Python prints a float: every digit needed, "3.0", "1e-05", "1e+16". */
static void format_scalar_float(double x, tp_dtype_t dtype, tp_strbuf_t *out) {
    if (!isfinite(x)) {
        tp_strbuf_puts(out, isnan(x) ? "nan" : x < 0 ? "-inf" : "inf");
        return;
    }
    double a = fabs(x);
    char text[TEXT_CAPACITY];
    if (a != 0 && (a < 1e-4 || a >= 1e16)) {
        char integer[TEXT_CAPACITY], fraction[TEXT_CAPACITY];
        int exponent;
        shortest_scientific(x, dtype, 17, integer, fraction, &exponent);
        tp_strbuf_printf(out, "%s%s%se%c%02d", integer, fraction[0] != '\0' ? "." : "", fraction,
                         exponent < 0 ? '-' : '+', abs(exponent));
        return;
    }
    shortest_positional(x, dtype, 40, text);
    tp_strbuf_puts(out, text);
    if (strchr(text, '.') == NULL) tp_strbuf_puts(out, ".0");
}

void tp_format_values(tp_strbuf_t *out, tp_dtype_t dtype, const tp_shape_t *shape,
                      const void *values) {
    elements_t elements = {dtype, values};
    int64_t count = 1;
    for (int32_t axis = 0; axis < shape->rank; axis++) count *= shape->dims[axis];
    if (shape->rank == 0) {
        char digits[32];
        if (tp_dtype_is_float(dtype)) {
            format_scalar_float(float_at(&elements, 0), dtype, out);
        } else if (dtype == TP_BOOL) {
            tp_strbuf_puts(out, bool_at(&elements, 0) ? "True" : "False");
        } else {
            integer_text(&elements, 0, digits, sizeof digits);
            tp_strbuf_puts(out, digits);
        }
        return;
    }
    if (count == 0) {
        tp_strbuf_puts(out, "[]");
        return;
    }
    printer_t printer = {.shape = shape, .summarize = count > THRESHOLD,
                         .style = {.elements = elements}};
    int64_t stride = 1;
    for (int32_t axis = shape->rank - 1; axis >= 0; axis--) {
        printer.strides[axis] = stride;
        stride *= shape->dims[axis];
    }
    choose_style(&printer);
    append_array(&printer, out, 0, 0, 1, LINE_WIDTH);
    if (printer.failed) out->failed = true;
}
