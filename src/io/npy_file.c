/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors saved to and loaded from .npy files. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/status.h"
#include "io/file.h"
#include "io/npy.h"

tp_status_t *tp_tensor_save_npy(tp_tensor_t *tensor, const char *path) {
    TP_REQUIRE_ARG(tensor);
    TP_REQUIRE_ARG(path);
    unsigned char *bytes;
    size_t size;
    char shown[TP_FILE_SHOWN_PATH];
    tp_file_show_path(path, shown);
    TP_RETURN_IF_ERROR(
        tp_status_annotate(tp_npy_encode(tensor, &bytes, &size), "tp_tensor_save_npy: '%s'",
                           shown));
    tp_status_t *error = tp_file_write_atomic(path, bytes, size);
    free(bytes);
    return tp_status_annotate(error, "tp_tensor_save_npy");
}

/* Reads the header, then the values straight into the buffer the tensor is made from. */
static tp_status_t *load(tp_context_t *context, const char *path, int fd, uint64_t size,
                         tp_tensor_t **out_tensor) {
    size_t got = 0, wanted = size < TP_NPY_MAX_PREFIX ? (size_t)size : TP_NPY_MAX_PREFIX;
    unsigned char *prefix = malloc(wanted > 0 ? wanted : 1);
    if (prefix == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_status_t *error = tp_file_read(fd, path, prefix, wanted, &got);
    if (error == NULL && got < wanted) size = got; /* it shrank since it was opened */
    tp_npy_header_t header;
    if (error == NULL) error = tp_npy_parse_header(prefix, got, size, &header);
    void *values = NULL;
    if (error == NULL && (values = malloc(header.data_size > 0 ? header.data_size : 1)) == NULL)
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    if (error != NULL) {
        free(prefix);
        return error;
    }
    size_t in_prefix = got - header.data_offset;
    memcpy(values, prefix + header.data_offset, in_prefix);
    free(prefix);
    error = tp_file_read(fd, path, (unsigned char *)values + in_prefix,
                         header.data_size - in_prefix, &got);
    if (error == NULL && got < header.data_size - in_prefix)
        error = tp_status_make(TP_DATA_LOSS, "it was cut short while being read");
    if (error == NULL) error = tp_npy_tensor_from_values(context, &header, values, out_tensor);
    free(values);
    return error;
}

tp_status_t *tp_tensor_load_npy(tp_context_t *context, const char *path,
                                tp_tensor_t **out_tensor) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(path);
    TP_REQUIRE_ARG(out_tensor);
    int fd;
    uint64_t size;
    TP_RETURN_IF_ERROR(
        tp_status_annotate(tp_file_open_read(path, &fd, &size), "tp_tensor_load_npy"));
    tp_status_t *error = load(context, path, fd, size, out_tensor);
    close(fd);
    char shown[TP_FILE_SHOWN_PATH];
    tp_file_show_path(path, shown);
    return tp_status_annotate(error, "tp_tensor_load_npy: '%s'", shown);
}
