/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient check cases for the ops of ops_conv.c: Conv2D (SAME and VALID, strides, dilations,
 * 1x1 filters), MaxPool (on distinct values, so that each window's maximum is unique) and
 * AvgPool. The batch is a drawn size, 0 included; so are some channel counts. */
#include "gradcheck.h"

#define A GRADCHECK_SIZE_A
#define B GRADCHECK_SIZE_B
#define C GRADCHECK_SIZE_C

#define IN(values, ...) {TP_FLOAT64, 4, {__VA_ARGS__}, values, 0}
#define ANY(...) IN(GRADCHECK_ANY, __VA_ARGS__)
#define DISTINCT(...) IN(GRADCHECK_DISTINCT, __VA_ARGS__)

#define LIST(attr_name, h, w)                                                                  \
    {.name = attr_name, .type = TP_ATTR_INT_LIST, .list = (const int64_t[]){1, h, w, 1},       \
     .count = 4}
#define PADDING(value) {.name = "padding", .type = TP_ATTR_STRING, .s = value}

/* Conv2D of `input` by `filter` with strides (sh, sw), dilations (dh, dw) and `padding`. */
#define CONV(what_text, input, filter, sh, sw, dh, dw, padding)                                \
    {.op = "Conv2D", .what = what_text, .num_inputs = 2, .inputs = {input, filter},            \
     .attrs = {LIST("strides", sh, sw), LIST("dilations", dh, dw), PADDING(padding)},          \
     .num_attrs = 3}

/* A pooling of `input` by a kh x kw window moved by (sh, sw). */
#define POOL(op_name, what_text, input, kh, kw, sh, sw, padding)                               \
    {.op = op_name, .what = what_text, .num_inputs = 1, .inputs = {input},                     \
     .attrs = {LIST("ksize", kh, kw), LIST("strides", sh, sw), PADDING(padding)},              \
     .num_attrs = 3}

static const gradcheck_case_t cases[] = {
    CONV("SAME, stride 1", ANY(A, 5, 5, 2), ANY(3, 3, 2, 3), 1, 1, 1, 1, "SAME"),
    CONV("VALID, stride 1, drawn channels", ANY(A, 5, 4, B), ANY(3, 2, B, 2), 1, 1, 1, 1,
         "VALID"),
    CONV("SAME, stride 2 over odd sizes: the extra padding goes after", ANY(A, 5, 6, 2),
         ANY(3, 3, 2, 2), 2, 2, 1, 1, "SAME"),
    CONV("VALID, strides 2 and 3", ANY(A, 7, 7, 2), ANY(3, 3, 2, 2), 2, 3, 1, 1, "VALID"),
    CONV("SAME, dilation 2", ANY(A, 6, 6, 2), ANY(3, 3, 2, 2), 1, 1, 2, 2, "SAME"),
    CONV("VALID, dilations 2 and 3 with stride 2", ANY(A, 7, 8, 1), ANY(2, 3, 1, 2), 2, 1, 2, 3,
         "VALID"),
    CONV("1x1, drawn channels in and out", ANY(A, 3, 3, B), ANY(1, 1, B, C), 1, 1, 1, 1,
         "VALID"),

    POOL("MaxPool", "2x2 by 2, VALID, drawn channels", DISTINCT(A, 4, 4, B), 2, 2, 2, 2,
         "VALID"),
    POOL("MaxPool", "3x3 by 2, SAME: windows over the padding", DISTINCT(A, 5, 5, 2), 3, 3, 2,
         2, "SAME"),
    POOL("MaxPool", "2x3 by 1, VALID: overlapping windows", DISTINCT(A, 4, 5, 2), 2, 3, 1, 1,
         "VALID"),

    POOL("AvgPool", "2x2 by 2, VALID, drawn channels", ANY(A, 4, 4, B), 2, 2, 2, 2, "VALID"),
    POOL("AvgPool", "3x3 by 2, SAME: the padding is not counted", ANY(A, 5, 5, 2), 3, 3, 2, 2,
         "SAME"),
    POOL("AvgPool", "2x3 by (1, 2), SAME: overlapping rows", ANY(A, 5, 4, 2), 2, 3, 1, 2,
         "SAME"),
};

const gradcheck_family_t gradcheck_cases_conv = {"conv", cases, sizeof cases / sizeof cases[0]};
