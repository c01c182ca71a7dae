/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor values as text (tp_tensor_print, tp_tensor_format): any dtype and shape, and values of
 * any bytes, since a tensor made from host data (or a Const's value attribute) holds whatever
 * bytes the caller gave: NaNs, infinities, subnormals, bools other than 0 and 1. The text must
 * come out whole and balanced, elements wrapped within NumPy's 75 columns, and summarised
 * ("...") exactly when NumPy would. */
#include "fuzz_support.h"

#include "base/strbuf.h"
#include "tensor/tensor_format.h"

enum {
    MAX_ELEMENTS = 1 << 14, /* past NumPy's 1000, where arrays are summarised */
    LINE_WIDTH = 75,
};

/* A dimension: mostly 0 to 7, sometimes long enough to be summarised on its own. */
static int64_t dimension(fuzz_input_t *in) {
    uint8_t b = fuzz_byte(in);
    if (b < 0xe0) return b % 8;
    int64_t low = fuzz_byte(in);
    return low | (int64_t)(fuzz_byte(in) & 0x7) << 8;
}

static void check_text(const char *text, const tp_shape_t *shape, int64_t count) {
    int depth = 0, deepest = 0;
    size_t column = 0;
    for (const char *c = text; *c != '\0'; c++) {
        if (*c == '[') depth++;
        if (*c == ']' && --depth < 0) fuzz_fail("unbalanced brackets", text);
        if (depth > deepest) deepest = depth;
        column = *c == '\n' ? 0 : column + 1;
        /* No element is near as wide as a line, even at the deepest indent. */
        if (column > LINE_WIDTH) fuzz_fail("a line is longer than 75 columns", text);
    }
    if (depth != 0) fuzz_fail("unbalanced brackets", text);
    if (shape->rank > 0 && count > 0 && deepest != shape->rank)
        fuzz_fail("brackets do not follow the rank", text);
    /* As NumPy: over 1000 elements, every axis longer than twice 3 items is cut short. */
    bool long_axis = false;
    for (int32_t d = 0; d < shape->rank; d++) long_axis |= shape->dims[d] > 6;
    if ((strstr(text, "...") != NULL) != (count > 1000 && long_axis))
        fuzz_fail("summarised when it should not be, or not when it should", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input_t in = {data, size};
    tp_dtype_t dtype = (tp_dtype_t)(TP_FLOAT32 + fuzz_below(&in, TP_UINT64)); /* every dtype */
    uint8_t rank_byte = fuzz_byte(&in);
    tp_shape_t shape = {.rank = (int32_t)(rank_byte >= 0xf0 ? rank_byte % 9 : rank_byte % 4)};
    int64_t count = 1;
    for (int32_t d = 0; d < shape.rank; d++) {
        shape.dims[d] = dimension(&in);
        count *= shape.dims[d];
        if (count > MAX_ELEMENTS) return 0;
    }
    /* The values: what is left of the input, over and over; zeros when nothing is. */
    size_t bytes = (size_t)count * tp_dtype_size(dtype);
    unsigned char *values = malloc(bytes > 0 ? bytes : 1);
    if (values == NULL) abort();
    for (size_t i = 0; i < bytes; i++) values[i] = in.size > 0 ? in.data[i % in.size] : 0;

    tp_strbuf_t out = TP_STRBUF_INIT;
    tp_format_values(&out, dtype, &shape, values);
    if (tp_strbuf_failed(&out)) fuzz_fail("formatting", "ran out of memory");
    fuzz_say(tp_dtype_name(dtype), tp_strbuf_text(&out));
    check_text(tp_strbuf_text(&out), &shape, count);
    tp_strbuf_free(&out);
    free(values);
    return 0;
}
