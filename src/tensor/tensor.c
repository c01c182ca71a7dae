/* SPDX-License-Identifier: Apache-2.0 */
#include "tensor/tensor.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "context/context.h"
#include "device/completion.h"
#include "tensor/tensor_format.h"

tp_status_t *tp_tensor_check_layout(tp_dtype_t dtype, const tp_shape_t *shape,
                                    int64_t *out_num_elements, size_t *out_byte_size) {
    size_t element_size = tp_dtype_size(dtype);
    if (element_size == 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
    int64_t count;
    TP_RETURN_IF_ERROR(tp_shape_num_elements(shape, &count));
    if ((uint64_t)count > SIZE_MAX / element_size ||
        (uint64_t)count > (uint64_t)INT64_MAX / element_size) {
        char text[256];
        tp_shape_format(shape, text, sizeof text);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "a %s tensor of shape %s needs more bytes than fit in memory",
                              tp_dtype_name(dtype), text);
    }
    *out_num_elements = count;
    *out_byte_size = (size_t)count * element_size;
    return NULL;
}

/* TensorFlow's wording, which users search for, then the allocator's own line. */
static tp_status_t *out_of_memory(tp_status_t *error, tp_device_t *device, tp_dtype_t dtype,
                                  const tp_shape_t *shape) {
    tp_bfc_t *allocator = NULL;
    tp_status_free(tp_device_allocator(device, &allocator));
    char dims[256] = "[";
    size_t used = 1;
    for (int32_t i = 0; i < shape->rank; i++)
        used += (size_t)snprintf(dims + used, sizeof dims - used, i == 0 ? "%lld" : ",%lld",
                                 (long long)shape->dims[i]);
    snprintf(dims + used, sizeof dims - used, "]");
    tp_status_t *oom = tp_status_make(
        tp_status_code(error), "OOM when allocating tensor with shape %s and type %s on %s by "
        "allocator %s\n%s", dims, tp_dtype_name(dtype), device->full_name,
        allocator != NULL ? tp_bfc_name(allocator) : "(none)", tp_status_message(error));
    tp_status_free(error);
    return oom;
}

/* ---- Tensor headers, kept per thread ---------------------------------------------------------
 * A 1-element op makes and drops a header each time, and malloc and free of one cost about a
 * twentieth of the op's dispatch; so each thread keeps up to KEPT_HEADERS headers it dropped
 * for its next tensors, in an array of its own (no lock), freed when it exits. Under
 * AddressSanitizer none are kept, so that a header used after its release is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define TP_NO_HEADER_POOL 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_NO_HEADER_POOL 1
#endif
#endif
#ifdef TP_NO_HEADER_POOL
enum { KEPT_HEADERS = 0 };
#else
enum { KEPT_HEADERS = 64 };
#endif

typedef struct {
    uint32_t count;
    bool registered; /* the thread's exit frees them (a pthread key's destructor) */
    bool exiting;    /* that destructor ran: keep nothing more */
    tp_tensor_t *headers[KEPT_HEADERS > 0 ? KEPT_HEADERS : 1];
} kept_headers_t;

static _Thread_local kept_headers_t kept_headers;
static pthread_key_t kept_key;
static bool kept_key_made;
static pthread_once_t kept_key_once = PTHREAD_ONCE_INIT;

static void free_kept_headers(void *arg) {
    kept_headers_t *kept = arg;
    while (kept->count > 0) free(kept->headers[--kept->count]);
    kept->exiting = true;
}

static void make_kept_key(void) {
    kept_key_made = pthread_key_create(&kept_key, free_kept_headers) == 0;
}

/* When the library is unloaded (dlclose), a thread that outlives it must not call into code
 * that is gone at its exit: the key goes, and the headers its threads kept are left. */
__attribute__((destructor)) static void forget_kept_key(void) {
    if (kept_key_made) pthread_key_delete(kept_key);
}

static tp_tensor_t *new_header(void) {
    kept_headers_t *kept = &kept_headers;
    if (kept->count > 0) return kept->headers[--kept->count];
    return malloc(sizeof(tp_tensor_t));
}

static void drop_header(tp_tensor_t *tensor) {
    kept_headers_t *kept = &kept_headers;
    if (kept->count < KEPT_HEADERS && !kept->registered && !kept->exiting) {
        pthread_once(&kept_key_once, make_kept_key);
        kept->registered = kept_key_made && pthread_setspecific(kept_key, kept) == 0;
    }
    if (kept->count < KEPT_HEADERS && kept->registered && !kept->exiting) {
        kept->headers[kept->count++] = tensor;
        return;
    }
    free(tensor);
}

tp_status_t *tp_tensor_allocate(tp_context_t *context, tp_device_t *device,
                                tp_dtype_t dtype, const tp_shape_t *shape, tp_tensor_t **out) {
    int64_t count = 0;
    size_t byte_size = 0;
    TP_RETURN_IF_ERROR(tp_tensor_check_layout(dtype, shape, &count, &byte_size));
    /* malloc and every field written, not calloc: glibc's calloc skips the per-thread cache
     * that malloc and free use, and took a tenth of a small op's dispatch (malloc then memset
     * is turned back into calloc by the compiler, so the clear is the initializer's). */
    tp_tensor_t *tensor = new_header();
    if (tensor == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_bfc_block_t block = {0};
    if (byte_size > 0) {
        tp_status_t *error = tp_device_allocate(device, byte_size, &block);
        if (error != NULL) {
            drop_header(tensor);
            return out_of_memory(error, device, dtype, shape);
        }
    }
    *tensor = (tp_tensor_t){.device = device, .dtype = dtype, .shape = *shape,
                            .num_elements = count, .byte_size = byte_size, .mem = block.mem,
                            .offset = block.offset, .chunk = block.chunk};
    atomic_init(&tensor->references, 1);
    tp_context_retain(context);
    tensor->context = context;
    *out = tensor;
    return NULL;
}

tp_status_t *tp_tensor_copy_to_device(tp_tensor_t *source, tp_device_t *device,
                                      tp_tensor_t **out) {
    tp_tensor_t *copy;
    TP_RETURN_IF_ERROR(tp_tensor_allocate(source->context, device, source->dtype,
                                          &source->shape, &copy));
    tp_status_t *error = tp_device_copy(source->device, source->mem, source->offset,
                                        source->done, device, copy->mem, copy->offset,
                                        source->byte_size, &copy->done);
    if (error != NULL) {
        tp_tensor_release(copy);
        return tp_status_annotate(error, "copying a tensor from %s to %s",
                                  source->device->full_name, device->full_name);
    }
    *out = copy;
    return NULL;
}

tp_status_t *tp_tensor_to_device(tp_tensor_t *source, tp_device_t *device, tp_tensor_t **out) {
    if (source->device == device) {
        *out = tp_tensor_retain(source);
        return NULL;
    }
    return tp_tensor_copy_to_device(source, device, out);
}

tp_status_t *tp_tensor_float_scalar(tp_context_t *context, tp_dtype_t dtype, double value,
                                    tp_tensor_t **out) {
    if (!tp_dtype_is_float(dtype))
        return tp_status_make(TP_INVALID_ARGUMENT, "a floating-point scalar was asked for, not "
                              "%s", tp_dtype_name(dtype));
    double element; /* room for the widest */
    tp_dtype_store_double(&element, dtype, 0, value);
    return tp_tensor_create(context, dtype, TP_SCALAR_SHAPE, &element, tp_dtype_size(dtype),
                            out);
}

tp_status_t *tp_tensor_check_data(const char *function, tp_dtype_t dtype,
                                  const tp_shape_t *shape, const void *data, size_t size,
                                  int64_t *out_count, size_t *out_byte_size) {
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_tensor_check_layout(dtype, shape, out_count,
                                                                 out_byte_size),
                                          "%s", function));
    if (size != *out_byte_size) {
        char text[256];
        tp_shape_format(shape, text, sizeof text);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: a %s tensor of shape %s needs %zu bytes of data, but %zu were "
                              "given",
                              function, tp_dtype_name(dtype), text, *out_byte_size, size);
    }
    if (size > 0 && data == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: argument 'data' is NULL", function);
    return tp_dtype_check_values(dtype, data, size, function);
}

tp_status_t *tp_tensor_create(tp_context_t *context, tp_dtype_t dtype, tp_shape_t shape,
                              const void *data, size_t size, tp_tensor_t **out_tensor) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_tensor);
    int64_t count = 0;
    size_t byte_size = 0;
    TP_RETURN_IF_ERROR(tp_tensor_check_data("tp_tensor_create", dtype, &shape, data, size, &count,
                                            &byte_size));
    TP_RETURN_IF_ERROR(tp_context_devices_ready(context));
    tp_device_t *device = context->registry.host_device;
    tp_tensor_t *tensor;
    TP_RETURN_IF_ERROR(tp_status_annotate(
        tp_tensor_allocate(context, device, dtype, &shape, &tensor), "tp_tensor_create"));
    tp_status_t *error = NULL;
    if (byte_size > 0) {
        tp_completion_t *done = NULL;
        error = tp_device_copy_from_host(device, tensor->mem, tensor->offset, data, byte_size,
                                         &done);
        /* The caller may reuse `data` as soon as this returns. */
        if (error == NULL) error = tp_completion_wait(done);
        tp_completion_release(done);
    }
    if (error != NULL) {
        tp_tensor_release(tensor);
        return tp_status_annotate(error, "tp_tensor_create");
    }
    *out_tensor = tensor;
    return NULL;
}

tp_tensor_t *tp_tensor_retain(tp_tensor_t *tensor) {
    if (tensor != NULL) atomic_fetch_add_explicit(&tensor->references, 1, memory_order_relaxed);
    return tensor;
}

void tp_tensor_release(tp_tensor_t *tensor) {
    if (tensor == NULL) return;
    if (atomic_fetch_sub_explicit(&tensor->references, 1, memory_order_acq_rel) != 1) return;
    tp_completion_release(tensor->done);
    if (tensor->chunk != NULL) tp_device_free_in_order(tensor->device, tensor->chunk);
    if (tensor->borrowed != NULL) tp_tensor_release_borrowed(tensor);
    tp_context_t *context = tensor->context;
    drop_header(tensor);
    tp_context_release(context);
}

tp_dtype_t tp_tensor_dtype(const tp_tensor_t *tensor) {
    return tensor == NULL ? TP_DTYPE_INVALID : tensor->dtype;
}

tp_shape_t tp_tensor_shape(const tp_tensor_t *tensor) {
    return tensor == NULL ? TP_SCALAR_SHAPE : tensor->shape;
}

int64_t tp_tensor_num_elements(const tp_tensor_t *tensor) {
    return tensor == NULL ? 0 : tensor->num_elements;
}

size_t tp_tensor_byte_size(const tp_tensor_t *tensor) {
    return tensor == NULL ? 0 : tensor->byte_size;
}

const char *tp_tensor_device(const tp_tensor_t *tensor) {
    return tensor == NULL || tensor->device == NULL ? "" : tensor->device->full_name;
}

tp_status_t *tp_tensor_symbolic(tp_context_t *context, struct tp_trace *trace, int32_t node,
                                int32_t output, tp_dtype_t dtype, const tp_shape_t *shape,
                                tp_tensor_t **out) {
    int64_t count = 0;
    size_t byte_size = 0;
    TP_RETURN_IF_ERROR(tp_tensor_check_layout(dtype, shape, &count, &byte_size));
    tp_tensor_t *tensor = calloc(1, sizeof *tensor);
    if (tensor == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    *tensor = (tp_tensor_t){.dtype = dtype, .shape = *shape, .num_elements = count,
                            .byte_size = byte_size, .trace = trace, .node = node,
                            .output = output};
    atomic_init(&tensor->references, 1);
    tp_context_retain(context);
    tensor->context = context;
    *out = tensor;
    return NULL;
}

tp_status_t *tp_tensor_require_values(const tp_tensor_t *tensor, const char *what) {
    if (tensor->trace == NULL) return NULL;
    return tp_status_make(TP_FAILED_PRECONDITION,
                          "%s: the tensor is symbolic, a value of a function being traced; it "
                          "has values only when the function is called",
                          what);
}

tp_status_t *tp_tensor_wait(tp_tensor_t *tensor) {
    TP_REQUIRE_ARG(tensor);
    TP_RETURN_IF_ERROR(tp_tensor_require_values(tensor, "tp_tensor_wait"));
    return tp_completion_wait(tensor->done);
}

tp_status_t *tp_tensor_query(tp_tensor_t *tensor, bool *out_ready) {
    TP_REQUIRE_ARG(tensor);
    TP_REQUIRE_ARG(out_ready);
    TP_RETURN_IF_ERROR(tp_tensor_require_values(tensor, "tp_tensor_query"));
    tp_status_t *failure;
    *out_ready = tp_completion_poll(tensor->done, &failure);
    return failure;
}

tp_status_t *tp_tensor_read(tp_tensor_t *tensor, void *data, size_t size) {
    TP_REQUIRE_ARG(tensor);
    TP_RETURN_IF_ERROR(tp_tensor_require_values(tensor, "tp_tensor_read"));
    if (size != tensor->byte_size)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tensor_read: the tensor holds %zu bytes, but the buffer is %zu",
                              tensor->byte_size, size);
    TP_RETURN_IF_ERROR(tp_completion_wait(tensor->done));
    if (size == 0) return NULL;
    TP_REQUIRE_ARG(data);
    return tp_status_annotate(
        tp_device_copy_to_host(tensor->device, data, tensor->mem, tensor->offset, size),
        "tp_tensor_read");
}

tp_status_t *tp_tensor_format(tp_tensor_t *tensor, char **out_text) {
    TP_REQUIRE_ARG(tensor);
    TP_REQUIRE_ARG(out_text);
    void *values = malloc(tensor->byte_size > 0 ? tensor->byte_size : 1);
    if (values == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "tp_tensor_format: out of host memory");
    tp_status_t *error = tp_tensor_read(tensor, values, tensor->byte_size);
    if (error != NULL) {
        free(values);
        return tp_status_annotate(error, "tp_tensor_format");
    }
    tp_strbuf_t numbers = TP_STRBUF_INIT;
    tp_format_values(&numbers, tensor->dtype, &tensor->shape, values);
    free(values);
    char shape[256];
    tp_shape_format(&tensor->shape, shape, sizeof shape);
    /* As TensorFlow does, values that span lines start on a line of their own. */
    const char *text = tp_strbuf_text(&numbers);
    tp_strbuf_t whole = TP_STRBUF_INIT;
    tp_strbuf_printf(&whole, "tp.Tensor(%s%s, shape=%s, dtype=%s)",
                     strchr(text, '\n') != NULL ? "\n" : "", text, shape,
                     tp_dtype_name(tensor->dtype));
    bool failed = tp_strbuf_failed(&numbers);
    tp_strbuf_free(&numbers);
    char *result = tp_strbuf_take(&whole);
    if (failed || result == NULL) {
        free(result);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "tp_tensor_format: out of host memory");
    }
    *out_text = result;
    return NULL;
}

tp_status_t *tp_tensor_print(tp_tensor_t *tensor, FILE *out) {
    TP_REQUIRE_ARG(tensor);
    TP_REQUIRE_ARG(out);
    char *text;
    TP_RETURN_IF_ERROR(tp_tensor_format(tensor, &text));
    int written = fprintf(out, "%s\n", text);
    free(text);
    if (written < 0) return tp_status_make(TP_UNAVAILABLE, "tp_tensor_print: writing failed");
    return NULL;
}
