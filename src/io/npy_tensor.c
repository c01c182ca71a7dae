/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors to and from the bytes of a .npy file. */
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "io/npy.h"

static void swap_bytes(unsigned char *values, size_t size, size_t element) {
    for (size_t at = 0; at + element <= size; at += element)
        for (size_t i = 0; i < element / 2; i++) {
            unsigned char t = values[at + i];
            values[at + i] = values[at + element - 1 - i];
            values[at + element - 1 - i] = t;
        }
}

/* Copies values stored first index fastest into `out` in C order (last index fastest). */
static void fortran_to_c(const unsigned char *in, unsigned char *out, const tp_shape_t *shape,
                         size_t element) {
    size_t stride[TP_MAX_RANK], count = 1;
    for (int32_t d = 0; d < shape->rank; d++) {
        stride[d] = count;
        count *= (size_t)shape->dims[d];
    }
    int64_t index[TP_MAX_RANK] = {0};
    size_t from = 0;
    for (size_t i = 0; i < count; i++) {
        memcpy(out + i * element, in + from * element, element);
        for (int32_t d = shape->rank - 1; d >= 0; d--) {
            if (++index[d] < shape->dims[d]) {
                from += stride[d];
                break;
            }
            index[d] = 0;
            from -= stride[d] * (size_t)(shape->dims[d] - 1);
        }
    }
}

tp_status_t *tp_npy_tensor_from_values(tp_context_t *context, const tp_npy_header_t *header,
                                       void *values, tp_tensor_t **out_tensor) {
    size_t element = tp_dtype_size(header->dtype);
    if (header->big_endian == tp_npy_host_little_endian())
        swap_bytes(values, header->data_size, element);
    void *ordered = values, *scratch = NULL;
    /* Below two dimensions the orders are the same. */
    if (header->fortran_order && header->shape.rank > 1 && header->data_size > 0) {
        scratch = malloc(header->data_size);
        if (scratch == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
        fortran_to_c(values, scratch, &header->shape, element);
        ordered = scratch;
    }
    tp_status_t *error =
        tp_dtype_check_values(header->dtype, ordered, header->data_size, "its values");
    if (error == NULL)
        error = tp_tensor_create(context, header->dtype, header->shape, ordered,
                                 header->data_size, out_tensor);
    free(scratch);
    return error;
}

tp_status_t *tp_npy_decode(tp_context_t *context, const void *bytes, size_t size,
                           tp_tensor_t **out_tensor) {
    tp_npy_header_t header;
    TP_RETURN_IF_ERROR(tp_npy_parse_header(bytes, size, size, &header));
    const unsigned char *stored = (const unsigned char *)bytes + header.data_offset;
    bool swapped = tp_dtype_size(header.dtype) > 1 &&
                   header.big_endian == tp_npy_host_little_endian();
    if (!swapped && !(header.fortran_order && header.shape.rank > 1)) {
        TP_RETURN_IF_ERROR(
            tp_dtype_check_values(header.dtype, stored, header.data_size, "its values"));
        return tp_tensor_create(context, header.dtype, header.shape, stored, header.data_size,
                                out_tensor);
    }
    void *values = malloc(header.data_size > 0 ? header.data_size : 1);
    if (values == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    memcpy(values, stored, header.data_size);
    tp_status_t *error = tp_npy_tensor_from_values(context, &header, values, out_tensor);
    free(values);
    return error;
}

tp_status_t *tp_npy_encode(tp_tensor_t *tensor, unsigned char **out_bytes, size_t *out_size) {
    tp_shape_t shape = tp_tensor_shape(tensor);
    tp_strbuf_t header = TP_STRBUF_INIT;
    tp_npy_format_header(&header, tp_tensor_dtype(tensor), &shape);
    size_t values = tp_tensor_byte_size(tensor);
    unsigned char *bytes = NULL;
    if (!tp_strbuf_failed(&header) && values <= SIZE_MAX - header.length)
        bytes = malloc(header.length + values);
    if (bytes == NULL) {
        tp_strbuf_free(&header);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    }
    memcpy(bytes, tp_strbuf_text(&header), header.length);
    size_t header_length = header.length;
    tp_strbuf_free(&header);
    tp_status_t *error = tp_tensor_read(tensor, bytes + header_length, values);
    if (error != NULL) {
        free(bytes);
        return error;
    }
    *out_bytes = bytes;
    *out_size = header_length + values;
    return NULL;
}

tp_status_t *tp_tensor_encode_npy(tp_tensor_t *tensor, void **out_bytes, size_t *out_size) {
    TP_REQUIRE_ARG(tensor);
    TP_REQUIRE_ARG(out_bytes);
    TP_REQUIRE_ARG(out_size);
    unsigned char *bytes;
    TP_RETURN_IF_ERROR(
        tp_status_annotate(tp_npy_encode(tensor, &bytes, out_size), "tp_tensor_encode_npy"));
    *out_bytes = bytes;
    return NULL;
}

tp_status_t *tp_tensor_decode_npy(tp_context_t *context, const void *bytes, size_t size,
                                  tp_tensor_t **out_tensor) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_tensor);
    if (bytes == NULL && size > 0) TP_REQUIRE_ARG(bytes);
    static const unsigned char nothing = 0;
    return tp_status_annotate(tp_npy_decode(context, bytes != NULL ? bytes : &nothing, size,
                                            out_tensor),
                              "tp_tensor_decode_npy");
}
