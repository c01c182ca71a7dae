/* SPDX-License-Identifier: Apache-2.0 */
/* A tensor: immutable values of one dtype and shape in one device's memory. */
#ifndef TP_TENSOR_TENSOR_H
#define TP_TENSOR_TENSOR_H

#include <stdatomic.h>

#include "device/device.h"
#include "tensorplug/tensorplug.h"

struct tp_tensor {
    atomic_int references;
    tp_context_t *context;       /* retained: the device outlives the tensor */
    tp_device_t *device;
    tp_dtype_t dtype;
    tp_shape_t shape;
    int64_t num_elements;
    size_t byte_size;
    void *mem;                   /* a region of the device's allocator; NULL when empty */
    uint64_t offset;             /* where the values start in it */
    tp_bfc_chunk_t *chunk;       /* the allocator's record of the memory */
    /* When the values are ready, and whether the work that makes them failed; NULL when they
     * are ready (device/completion.h). Set once, before the tensor is handed out. */
    struct tp_completion *done;
    /* A symbolic tensor stands for a value of a function being traced: output `output` of
     * node `node` of the trace's graph. It has a dtype and shape, no device and no memory. */
    struct tp_trace *trace;
    int32_t node, output;
    /* Memory the tensor borrows rather than owns (tp_tensor_create_borrowed): chunk is NULL and
     * this is handed to the device's deferred list when the last reference goes. */
    struct tp_borrowed *borrowed;
};

/* Checks a dtype and shape and computes the element count and byte size. */
tp_status_t *tp_tensor_check_layout(tp_dtype_t dtype, const tp_shape_t *shape,
                                    int64_t *out_num_elements, size_t *out_byte_size);

/* A tensor of `shape` in new memory of `device`, its values not yet written. */
tp_status_t *tp_tensor_allocate(tp_context_t *context, tp_device_t *device,
                                tp_dtype_t dtype, const tp_shape_t *shape, tp_tensor_t **out);

/* A symbolic tensor of a trace (see graph/trace.h). */
tp_status_t *tp_tensor_symbolic(tp_context_t *context, struct tp_trace *trace, int32_t node,
                                int32_t output, tp_dtype_t dtype, const tp_shape_t *shape,
                                tp_tensor_t **out);
/* An error naming what was attempted when `tensor` is symbolic; NULL otherwise. */
tp_status_t *tp_tensor_require_values(const tp_tensor_t *tensor, const char *what);

/* A copy of `source` on `device`, queued after the work that produces it (see
 * tp_device_copy). */
tp_status_t *tp_tensor_copy_to_device(tp_tensor_t *source, tp_device_t *device,
                                      tp_tensor_t **out);
/* `source` on `device`: a new reference to it when it is there already (tensors are
 * immutable), else a copy. */
tp_status_t *tp_tensor_to_device(tp_tensor_t *source, tp_device_t *device, tp_tensor_t **out);

/* A scalar of a floating-point dtype holding `value` (rounded to it), on the host's CPU:0 and
 * made without an op, so that no device scope of the caller's can misplace it. */
tp_status_t *tp_tensor_float_scalar(tp_context_t *context, tp_dtype_t dtype, double value,
                                    tp_tensor_t **out);

/* Hands a borrowed tensor's memory back once the work queued on it is done (tensor_host.c). */
void tp_tensor_release_borrowed(tp_tensor_t *tensor);

#endif
