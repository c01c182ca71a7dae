/* SPDX-License-Identifier: Apache-2.0 */
/* TF_Tensor: a dtype and shape over a reference-counted buffer. A kernel's inputs, outputs and
 * temporaries are views whose buffer owns nothing, so that TF_DeleteTensor on them, which
 * every TensorFlow kernel does, never frees device memory. */
#include <stdlib.h>
#include <string.h>

#include "tfc.h"

/* Eigen's alignment, which TensorFlow's host tensors promise. */
enum { TENSOR_ALIGNMENT = 64 };

static tfc_buffer_t *buffer_new(void *data, size_t length,
                                void (*deallocator)(void *, size_t, void *), void *arg) {
    tfc_buffer_t *buffer = malloc(sizeof *buffer);
    if (buffer == NULL) return NULL;
    atomic_init(&buffer->references, 1);
    buffer->data = data;
    buffer->length = length;
    buffer->deallocator = deallocator;
    buffer->deallocator_arg = arg;
    return buffer;
}

static void buffer_release(tfc_buffer_t *buffer) {
    if (buffer == NULL || atomic_fetch_sub(&buffer->references, 1) != 1) return;
    if (buffer->deallocator != NULL)
        buffer->deallocator(buffer->data, buffer->length, buffer->deallocator_arg);
    free(buffer);
}

static TF_Tensor *tensor_new(TF_DataType dtype, const int64_t *dims, int num_dims,
                             tfc_buffer_t *buffer, bool on_device) {
    if (num_dims < 0 || (num_dims > 0 && dims == NULL)) return NULL;
    TF_Tensor *tensor = calloc(1, sizeof *tensor);
    int64_t *copy = calloc((size_t)num_dims + 1, sizeof *copy);
    if (tensor == NULL || copy == NULL) {
        free(tensor);
        free(copy);
        return NULL;
    }
    if (num_dims > 0) memcpy(copy, dims, (size_t)num_dims * sizeof *copy);
    tensor->dtype = dtype;
    tensor->num_dims = num_dims;
    tensor->dims = copy;
    tensor->buffer = buffer;
    tensor->on_device = on_device;
    return tensor;
}

TF_Tensor *tfc_tensor_view(TF_DataType dtype, const int64_t *dims, int num_dims, void *data,
                           size_t length, const SP_DeviceMemoryBase *allocation) {
    tfc_buffer_t *buffer = buffer_new(data, length, NULL, NULL);
    if (buffer == NULL) return NULL;
    TF_Tensor *tensor = tensor_new(dtype, dims, num_dims, buffer, allocation != NULL);
    if (tensor == NULL) buffer_release(buffer);
    else if (allocation != NULL) tensor->payload = allocation->payload;
    return tensor;
}

TF_Tensor *TF_NewTensor(TF_DataType dtype, const int64_t *dims, int num_dims, void *data,
                        size_t len, void (*deallocator)(void *data, size_t len, void *arg),
                        void *deallocator_arg) {
    tfc_buffer_t *buffer = buffer_new(data, len, deallocator, deallocator_arg);
    TF_Tensor *tensor = buffer == NULL ? NULL : tensor_new(dtype, dims, num_dims, buffer, false);
    if (tensor == NULL) {
        /* TensorFlow's contract: the data is released even when no tensor could be made. */
        if (buffer != NULL) {
            buffer_release(buffer);
        } else if (deallocator != NULL) {
            deallocator(data, len, deallocator_arg);
        }
    }
    return tensor;
}

static void free_aligned(void *data, size_t length, void *arg) {
    (void)length;
    (void)arg;
    free(data);
}

TF_Tensor *TF_AllocateTensor(TF_DataType dtype, const int64_t *dims, int num_dims, size_t len) {
    size_t rounded = (len + TENSOR_ALIGNMENT - 1) / TENSOR_ALIGNMENT * TENSOR_ALIGNMENT;
    if (rounded < len) return NULL;
    void *data = aligned_alloc(TENSOR_ALIGNMENT, rounded == 0 ? TENSOR_ALIGNMENT : rounded);
    if (data == NULL) return NULL;
    return TF_NewTensor(dtype, dims, num_dims, data, len, free_aligned, NULL);
}

TF_Tensor *TF_TensorMaybeMove(TF_Tensor *tensor) {
    /* Moving is safe only when nothing else shares the buffer and the tensor owns it. */
    if (tensor == NULL || atomic_load(&tensor->buffer->references) != 1 ||
        tensor->buffer->deallocator == NULL)
        return NULL;
    return tensor;
}

void TF_DeleteTensor(TF_Tensor *tensor) {
    if (tensor == NULL) return;
    buffer_release(tensor->buffer);
    free(tensor->dims);
    free(tensor);
}

TF_DataType TF_TensorType(const TF_Tensor *tensor) { return tensor->dtype; }

void TF_SetShape(TF_Tensor *tensor, const int64_t *dims, int num_dims) {
    if (tensor == NULL || num_dims < 0 || (num_dims > 0 && dims == NULL)) return;
    int64_t *copy = calloc((size_t)num_dims + 1, sizeof *copy);
    if (copy == NULL) return;
    if (num_dims > 0) memcpy(copy, dims, (size_t)num_dims * sizeof *copy);
    free(tensor->dims);
    tensor->dims = copy;
    tensor->num_dims = num_dims;
}

int TF_NumDims(const TF_Tensor *tensor) { return tensor->num_dims; }

int64_t TF_Dim(const TF_Tensor *tensor, int dim_index) {
    if (dim_index < 0 || dim_index >= tensor->num_dims) return -1;
    return tensor->dims[dim_index];
}

size_t TF_TensorByteSize(const TF_Tensor *tensor) { return tensor->buffer->length; }

void *TF_TensorData(const TF_Tensor *tensor) { return tensor->buffer->data; }

int64_t TF_TensorElementCount(const TF_Tensor *tensor) {
    int64_t count = 1;
    for (int i = 0; i < tensor->num_dims; i++) count *= tensor->dims[i];
    return count;
}

void TF_TensorBitcastFrom(const TF_Tensor *from, TF_DataType type, TF_Tensor *to,
                          const int64_t *new_dims, int num_new_dims, TF_Status *status) {
    if (from == NULL || to == NULL || num_new_dims < 0 || (num_new_dims > 0 && new_dims == NULL)) {
        tfc_status_printf(status, TF_INVALID_ARGUMENT, "TF_TensorBitcastFrom: bad arguments");
        return;
    }
    size_t element = TF_DataTypeSize(type);
    uint64_t count = 1;
    for (int i = 0; i < num_new_dims; i++) count *= (uint64_t)new_dims[i];
    if (element == 0 || count * element != from->buffer->length) {
        tfc_status_printf(status, TF_INVALID_ARGUMENT,
                          "TF_TensorBitcastFrom: %llu elements of %zu bytes do not fill the "
                          "source's %zu bytes",
                          (unsigned long long)count, element, from->buffer->length);
        return;
    }
    int64_t *copy = calloc((size_t)num_new_dims + 1, sizeof *copy);
    if (copy == NULL) {
        tfc_status_printf(status, TF_RESOURCE_EXHAUSTED, "TF_TensorBitcastFrom: out of memory");
        return;
    }
    if (num_new_dims > 0) memcpy(copy, new_dims, (size_t)num_new_dims * sizeof *copy);
    atomic_fetch_add(&from->buffer->references, 1);
    buffer_release(to->buffer);
    free(to->dims);
    to->buffer = from->buffer;
    to->on_device = from->on_device;
    to->payload = from->payload;
    to->dims = copy;
    to->num_dims = num_new_dims;
    to->dtype = type;
    TF_SetStatus(status, TF_OK, "");
}

bool TF_TensorIsAligned(const TF_Tensor *tensor) {
    return (uintptr_t)tensor->buffer->data % TENSOR_ALIGNMENT == 0;
}
