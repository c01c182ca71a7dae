/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy's .npy format (numpy.lib.format): the 6-byte magic "\x93NUMPY", a major and minor
 * version byte, the header's length (2 bytes little-endian in version 1.0, 4 bytes in 2.0 and
 * 3.0), the header (a Python dict literal with the keys 'descr', 'fortran_order' and 'shape'),
 * then the values, packed. */
#ifndef TP_IO_NPY_H
#define TP_IO_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "tensorplug/tensorplug.h"

/* The longest header read. NumPy itself refuses headers over 10000 bytes unless told
 * otherwise; ours for the dtypes tensorplug holds are under 200. */
#define TP_NPY_MAX_HEADER_LENGTH 65536
/* Magic and version, then the header's length in 2 bytes (1.0) or 4 (2.0, 3.0). */
#define TP_NPY_PREAMBLE_V1 10
#define TP_NPY_PREAMBLE_MAX 12
/* What a reader must hand tp_npy_parse_header, at most: every byte of the longest header. */
#define TP_NPY_MAX_PREFIX (TP_NPY_PREAMBLE_MAX + TP_NPY_MAX_HEADER_LENGTH)

typedef struct tp_npy_header {
    tp_dtype_t dtype;
    bool big_endian;    /* the values are stored most significant byte first */
    bool fortran_order; /* the first index varies fastest */
    tp_shape_t shape;
    size_t data_offset; /* where the values start: magic, version, length field and header */
    size_t data_size;   /* the values' bytes, exactly what the file holds after the header */
} tp_npy_header_t;

/* Parses the start of a .npy file of `total_size` bytes, of which `bytes` holds the first
 * `available` (at least min(total_size, TP_NPY_MAX_PREFIX)), and checks that the file holds
 * exactly the values its header describes: no fewer (a truncated file), no more. A malformed
 * or unsupported file is INVALID_ARGUMENT, the message saying what is wrong (and where in the
 * header) without naming the file, which callers add. Text quoted from the header has every
 * byte outside printable ASCII written as \xHH. */
tp_status_t *tp_npy_parse_header(const void *bytes, size_t available, uint64_t total_size,
                                 tp_npy_header_t *out);

/* Appends a version 1.0 preamble and header for `dtype` and `shape`, C order, in this host's
 * byte order, padded with spaces and a newline so that the values start at a multiple of 64
 * bytes, as numpy.save writes them. Check tp_strbuf_failed afterwards. */
void tp_npy_format_header(tp_strbuf_t *out, tp_dtype_t dtype, const tp_shape_t *shape);

/* A tensor on `context`'s CPU:0 holding values stored as `header` says: `values`
 * (header->data_size bytes) are turned into this host's byte order and C order in place
 * first, so they are changed. */
tp_status_t *tp_npy_tensor_from_values(tp_context_t *context, const tp_npy_header_t *header,
                                       void *values, tp_tensor_t **out_tensor);

/* Whether this host stores numbers least significant byte first. */
bool tp_npy_host_little_endian(void);

/* The bytes of a .npy file holding `tensor`'s values (waiting for them): *out_bytes is one
 * malloc'd block the caller frees. Messages are not prefixed with a function name. */
tp_status_t *tp_npy_encode(tp_tensor_t *tensor, unsigned char **out_bytes, size_t *out_size);

/* A tensor on `context`'s CPU:0 holding the values of the .npy file in `bytes`. */
tp_status_t *tp_npy_decode(tp_context_t *context, const void *bytes, size_t size,
                           tp_tensor_t **out_tensor);

#endif
