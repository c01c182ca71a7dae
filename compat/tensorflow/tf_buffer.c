/* SPDX-License-Identifier: Apache-2.0 */
/* TF_Buffer and TF_DataTypeSize: the small value functions of c_api.h and tf_datatype.h. */
#include <stdlib.h>
#include <string.h>

#include "tfc.h"

static void free_copy(void *data, size_t length) {
    (void)length;
    free(data);
}

TF_Buffer *TF_NewBuffer(void) { return calloc(1, sizeof(TF_Buffer)); }

TF_Buffer *TF_NewBufferFromString(const void *proto, size_t proto_len) {
    TF_Buffer *buffer = TF_NewBuffer();
    if (buffer == NULL) return NULL;
    if (proto_len == 0) return buffer;
    void *copy = malloc(proto_len);
    if (copy == NULL) {
        free(buffer);
        return NULL;
    }
    memcpy(copy, proto, proto_len);
    buffer->data = copy;
    buffer->length = proto_len;
    buffer->data_deallocator = free_copy;
    return buffer;
}

void TF_DeleteBuffer(TF_Buffer *buffer) {
    if (buffer == NULL) return;
    /* The deallocator takes a mutable pointer to memory the buffer was handed as const. */
    if (buffer->data_deallocator != NULL)
        buffer->data_deallocator((void *)(uintptr_t)buffer->data, buffer->length);
    free(buffer);
}

TF_Buffer TF_GetBuffer(TF_Buffer *buffer) { return *buffer; }

size_t TF_DataTypeSize(TF_DataType dt) {
    switch (dt) {
    case TF_BOOL: case TF_INT8: case TF_UINT8: case TF_QINT8: case TF_QUINT8:
    case TF_FLOAT8_E5M2: case TF_FLOAT8_E4M3FN:
        return 1;
    case TF_INT16: case TF_UINT16: case TF_QINT16: case TF_QUINT16: case TF_HALF:
    case TF_BFLOAT16:
        return 2;
    case TF_FLOAT: case TF_INT32: case TF_UINT32: case TF_QINT32:
        return 4;
    case TF_DOUBLE: case TF_INT64: case TF_UINT64: case TF_COMPLEX64:
        return 8;
    case TF_COMPLEX128:
        return 16;
    default:
        /* Strings, resources, variants and the 4-bit types have no whole-byte element size. */
        return 0;
    }
}
