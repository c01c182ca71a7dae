/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as a .npy file: tp_npy_parse_header, which tp_tensor_load_npy, tp_tensor_decode_npy
 * and checkpoints use, refuses them with one readable line or describes values that fill the
 * rest of the input exactly; the header written back for what it found parses to the same
 * dtype and shape with the values at 64 bytes; and the tensor decoded from them holds the
 * stored values in C order and the host's byte order, as an index-by-index reading of the file
 * finds them. */
#include "fuzz_support.h"

#include "base/strbuf.h"
#include "io/npy.h"

enum { MAX_DECODED = 1 << 16 }; /* bytes of values decoded per input, to keep runs fast */

static tp_context_t *context;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_quiet_log();
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    if (!fuzz_check_status(tp_context_create(&options, &context))) abort();
    return 0;
}

/* fuzz_check_status, except that the message may quote "(null)" where the header holds it:
 * every other byte of the header is quoted printable, so the line must be printable still. */
static bool check_refusal(tp_status_t *status, const uint8_t *data, size_t size) {
    static const char null_text[] = "(null)";
    bool quotes_null = false;
    for (size_t at = 0; at + 6 <= size && !quotes_null; at++)
        quotes_null = memcmp(data + at, null_text, 6) == 0;
    return fuzz_check_quoting(status, quotes_null ? null_text : NULL);
}

static void check_header(const tp_npy_header_t *h, size_t size) {
    size_t element = tp_dtype_size(h->dtype);
    if (element == 0) fuzz_fail("parsed", "a dtype that is not one");
    if (h->shape.rank < 0 || h->shape.rank > TP_MAX_RANK) fuzz_fail("parsed", "a rank out of range");
    size_t count = 1;
    for (int32_t d = 0; d < h->shape.rank; d++) {
        if (h->shape.dims[d] < 0) fuzz_fail("parsed", "a negative dimension");
        count *= (size_t)h->shape.dims[d];
    }
    if (count * element != h->data_size) fuzz_fail("parsed", "a data size the shape does not give");
    if (h->data_offset > size || size - h->data_offset != h->data_size)
        fuzz_fail("parsed", "values that do not fill the rest of the file");
    if (element == 1 && h->big_endian) fuzz_fail("parsed", "a byte order for one-byte values");
}

/* The header tensorplug writes for the same dtype and shape parses back to them. */
static void check_written_header(const tp_npy_header_t *h) {
    tp_strbuf_t written = TP_STRBUF_INIT;
    tp_npy_format_header(&written, h->dtype, &h->shape);
    if (tp_strbuf_failed(&written)) fuzz_fail("writing a header", "out of memory");
    tp_npy_header_t again;
    if (!fuzz_check_status(tp_npy_parse_header(tp_strbuf_text(&written), written.length,
                                               written.length + h->data_size, &again)))
        fuzz_fail("the written header does not parse", tp_strbuf_text(&written) + 10);
    bool same = again.dtype == h->dtype && again.shape.rank == h->shape.rank &&
                !again.fortran_order && again.big_endian == !tp_npy_host_little_endian() &&
                again.data_offset == written.length && written.length % 64 == 0 &&
                again.data_size == h->data_size;
    for (int32_t d = 0; same && d < h->shape.rank; d++) same = again.shape.dims[d] == h->shape.dims[d];
    if (!same) fuzz_fail("the written header says something else", tp_strbuf_text(&written) + 10);
    tp_strbuf_free(&written);
}

/* Element `index` (C order) of the stored values, in the host's byte order. */
static void element_at(const tp_npy_header_t *h, const uint8_t *values, size_t index,
                       uint8_t *out) {
    size_t element = tp_dtype_size(h->dtype), position = 0, stride = 1;
    size_t rest = index;
    /* Take the multi-index apart from the last dimension; the stored position weighs each
     * index by C strides, or Fortran strides (first dimension fastest). */
    size_t indices[TP_MAX_RANK];
    for (int32_t d = h->shape.rank - 1; d >= 0; d--) {
        indices[d] = rest % (size_t)h->shape.dims[d];
        rest /= (size_t)h->shape.dims[d];
    }
    if (h->fortran_order) {
        for (int32_t d = 0; d < h->shape.rank; d++) {
            position += indices[d] * stride;
            stride *= (size_t)h->shape.dims[d];
        }
    } else {
        position = index;
    }
    bool swap = h->big_endian == tp_npy_host_little_endian();
    for (size_t b = 0; b < element; b++)
        out[b] = values[position * element + (swap ? element - 1 - b : b)];
}

static void check_decoded(const tp_npy_header_t *h, const uint8_t *data, size_t size) {
    const uint8_t *values = data + h->data_offset;
    bool bad_bool = false;
    for (size_t i = 0; h->dtype == TP_BOOL && i < h->data_size; i++) bad_bool |= values[i] > 1;
    tp_tensor_t *tensor = NULL;
    tp_status_t *status = tp_npy_decode(context, data, size, &tensor);
    if (bad_bool) {
        if (status == NULL) fuzz_fail("decoded", "a bool that is neither 0 nor 1");
        check_refusal(status, data, size);
        return;
    }
    if (!check_refusal(status, data, size)) fuzz_fail("decoding", "parsed values were refused");
    uint8_t *got = malloc(h->data_size + 1);
    if (got == NULL) abort();
    if (!fuzz_check_status(tp_tensor_read(tensor, got, h->data_size)))
        fuzz_fail("decoding", "the tensor cannot be read");
    size_t element = tp_dtype_size(h->dtype);
    uint8_t expected[8];
    for (size_t i = 0; i < h->data_size / element; i++) {
        element_at(h, values, i, expected);
        if (memcmp(got + i * element, expected, element) != 0)
            fuzz_fail("decoding", "an element is not the one stored at its index");
    }
    free(got);
    tp_tensor_release(tensor);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tp_npy_header_t header;
    tp_status_t *status = tp_npy_parse_header(data, size, size, &header);
    if (!check_refusal(status, data, size)) return 0;
    char description[64];
    snprintf(description, sizeof description, "%s, rank %d, %zu bytes of values%s%s",
             tp_dtype_name(header.dtype), (int)header.shape.rank, header.data_size,
             header.big_endian ? ", big-endian" : "", header.fortran_order ? ", Fortran" : "");
    fuzz_say("parsed", description);
    check_header(&header, size);
    check_written_header(&header);
    if (header.data_size <= MAX_DECODED) check_decoded(&header, data, size);
    return 0;
}
