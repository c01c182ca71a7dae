/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors whose bytes the host reads in place: the address of a CPU tensor's values, and
 * tensors that borrow host memory they did not allocate (bindings' zero-copy imports). */
#include <stdint.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "base/status.h"
#include "context/context.h"
#include "device/completion.h"
#include "tensor/tensor.h"

/* What a borrowed tensor gives back when the runtime is done with its memory. */
struct tp_borrowed {
    tp_release_fn fn;
    void *arg;
};

/* The bytes' address of an empty tensor: non-NULL, as NumPy and DLPack want, never read. */
static const unsigned char empty_values[16];

tp_status_t *tp_tensor_host_data(tp_tensor_t *tensor, const void **out_data) {
    TP_REQUIRE_ARG(tensor);
    TP_REQUIRE_ARG(out_data);
    TP_RETURN_IF_ERROR(tp_tensor_require_values(tensor, "tp_tensor_host_data"));
    if (!tp_device_host_addressed(tensor->device))
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "tp_tensor_host_data: the tensor is on %s, whose memory the host "
                              "cannot address; copy it to the CPU first",
                              tensor->device->full_name);
    TP_RETURN_IF_ERROR(tp_completion_wait(tensor->done));
    *out_data = tensor->mem == NULL ? (const void *)empty_values
                                    : (const void *)((const char *)tensor->mem + tensor->offset);
    return NULL;
}

/* Runs on the device's deferred list: every use of the memory queued before the release is
 * done. */
static void give_back(void *arg) {
    struct tp_borrowed *borrowed = arg;
    if (borrowed->fn != NULL) borrowed->fn(borrowed->arg);
    free(borrowed);
}

void tp_tensor_release_borrowed(tp_tensor_t *tensor) {
    tp_device_t *device = tensor->device;
    tp_device_defer(device, NULL, give_back, tensor->borrowed);
}

tp_status_t *tp_tensor_create_borrowed(tp_context_t *context, tp_dtype_t dtype,
                                       tp_shape_t shape, const void *data, size_t size,
                                       tp_release_fn release_fn, void *release_arg,
                                       tp_tensor_t **out_tensor) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_tensor);
    int64_t count = 0;
    size_t byte_size = 0;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_tensor_check_layout(dtype, &shape, &count,
                                                                 &byte_size),
                                          "tp_tensor_create_borrowed"));
    if (size != byte_size) {
        char text[256];
        tp_shape_format(&shape, text, sizeof text);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tensor_create_borrowed: a %s tensor of shape %s needs %zu "
                              "bytes of data, but %zu were given",
                              tp_dtype_name(dtype), text, byte_size, size);
    }
    if (data == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tensor_create_borrowed: argument 'data' is NULL");
    /* The CPU's kernels read elements in place and vector loops expect natural alignment; 16
     * bytes is what malloc gives, so NumPy's arrays qualify. */
    size_t alignment = tp_dtype_size(dtype) > 16 ? tp_dtype_size(dtype) : 16;
    if ((uintptr_t)data % alignment != 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tensor_create_borrowed: data at %p is not aligned to %zu bytes",
                              data, alignment);
    TP_RETURN_IF_ERROR(tp_dtype_check_values(dtype, data, byte_size, "tp_tensor_create_borrowed"));
    TP_RETURN_IF_ERROR(tp_context_devices_ready(context));
    struct tp_borrowed *borrowed = malloc(sizeof *borrowed);
    tp_tensor_t *tensor = calloc(1, sizeof *tensor);
    if (borrowed == NULL || tensor == NULL) {
        free(borrowed);
        free(tensor);
        return tp_status_make(TP_RESOURCE_EXHAUSTED,
                              "tp_tensor_create_borrowed: out of host memory");
    }
    *borrowed = (struct tp_borrowed){release_fn, release_arg};
    tensor->device = context->registry.host_device;
    tensor->dtype = dtype;
    tensor->shape = shape;
    tensor->num_elements = count;
    tensor->byte_size = byte_size;
    /* Kernels reach a host device's values at mem + offset, as an allocated tensor's. */
    tensor->mem = (void *)(uintptr_t)data;
    tensor->borrowed = borrowed;
    atomic_init(&tensor->references, 1);
    tp_context_retain(context);
    tensor->context = context;
    *out_tensor = tensor;
    return NULL;
}
