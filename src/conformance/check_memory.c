/* SPDX-License-Identifier: Apache-2.0 */
/* The memory checks: allocations of many sizes held at once keep their own bytes and give their
 * memory back; an empty tensor lives on the device; more than the device has is refused; a
 * kernel's launches give back all the device memory they take. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/byte_size.h"
#include "base/status.h"
#include "conformance/check.h"
#include "device/physical_device.h"
#include "tensor/tensor.h"

enum { MAX_SIZES = 9 };

/* The largest allocation tried: an eighth of the device, at most 64 MiB. */
static uint64_t largest_size(const tp_physical_device_t *device) {
    uint64_t largest = UINT64_C(64) << 20;
    if (device->memory_bytes != 0 && device->memory_bytes / 8 < largest)
        largest = device->memory_bytes / 8;
    return largest;
}

static uint64_t free_bytes(tp_check_t *check) {
    uint64_t free_now = 0, total = 0;
    if (check->def->memory_usage != NULL)
        check->def->memory_usage(check->devices[0]->handle, &free_now, &total);
    return free_now;
}

typedef struct held {
    void *mem[MAX_SIZES];
    unsigned char *pattern[MAX_SIZES];
    uint64_t size[MAX_SIZES];
    int count;
} held_t;

/* Writes each allocation's own random bytes, then reads every one back: an allocation that
 * overlaps another, or a copy that lands elsewhere, shows as bytes of the wrong pattern. */
static tp_status_t *fill_and_compare(tp_check_t *check, void *stream, held_t *held) {
    for (int i = 0; i < held->count; i++) {
        held->pattern[i] = malloc(held->size[i]);
        if (held->pattern[i] == NULL)
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
        tp_check_random_bytes(check, held->pattern[i], held->size[i]);
        TP_RETURN_IF_ERROR(tp_check_to_device(check, 0, stream, held->mem[i], 0,
                                              held->pattern[i], held->size[i]));
    }
    TP_RETURN_IF_ERROR(tp_check_synchronize(check, 0, stream));
    for (int i = 0; i < held->count; i++) {
        unsigned char *back = malloc(held->size[i]);
        if (back == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
        tp_status_t *error =
            tp_check_to_host(check, 0, stream, back, held->mem[i], 0, held->size[i]);
        if (error == NULL) error = tp_check_synchronize(check, 0, stream);
        if (error == NULL && memcmp(back, held->pattern[i], held->size[i]) != 0)
            error = tp_check_failure("the %llu bytes written to allocation %d did not come back "
                                     "while the others were held: allocations overlap or "
                                     "copies land elsewhere",
                                     (unsigned long long)held->size[i], i);
        free(back);
        TP_RETURN_IF_ERROR(error);
    }
    return NULL;
}

tp_status_t *tp_check_allocate_sizes(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 allocate", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    void *handle = check->devices[0]->handle;
    uint64_t largest = largest_size(check->devices[0]);
    const uint64_t sizes[MAX_SIZES] = {1, 3, 64, 255, 4096, 65537, UINT64_C(1) << 20,
                                       (UINT64_C(1) << 22) + 7, largest};
    uint64_t free_before = free_bytes(check);
    void *stream = NULL;
    error = tp_check_stream_create(check, 0, &stream);
    held_t held = {.count = 0};
    for (int i = 0; i < MAX_SIZES && error == NULL; i++) {
        if (sizes[i] > largest) continue;
        error = tp_check_allocate(check, 0, sizes[i], &held.mem[held.count]);
        if (error == NULL) held.size[held.count++] = sizes[i];
    }
    for (int i = 0; i < held.count && error == NULL; i++)
        for (int j = 0; j < i && error == NULL; j++)
            if (held.mem[i] == held.mem[j])
                error = tp_check_failure("allocations %d and %d were given the same handle", j, i);
    if (error == NULL) error = fill_and_compare(check, stream, &held);
    if (stream != NULL) check->def->stream_destroy(handle, stream);
    for (int i = 0; i < held.count; i++) {
        check->def->deallocate(handle, held.mem[i]);
        free(held.pattern[i]);
    }
    TP_RETURN_IF_ERROR(error);
    uint64_t free_after = free_bytes(check);
    if (free_after != free_before)
        return tp_check_failure("memory_usage gave %llu bytes free before and %llu after every "
                                "allocation was freed",
                                (unsigned long long)free_before, (unsigned long long)free_after);
    char largest_text[32];
    tp_byte_size_format(held.size[held.count - 1], largest_text, sizeof largest_text);
    tp_check_detail(check, "%d allocations from 1 B to %s held at once, each kept its own bytes%s",
                    held.count, largest_text,
                    check->def->memory_usage != NULL ? "; free memory back where it was" : "");
    return NULL;
}

tp_status_t *tp_check_empty_tensor(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 empty tensor", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    tp_device_t *device = check->logical;
    tp_tensor_t *on_host = NULL, *on_device = NULL, *back = NULL;
    error = tp_tensor_create(check->context, TP_FLOAT32, TP_SHAPE(0, 3), NULL, 0, &on_host);
    if (error == NULL) error = tp_tensor_to_device(on_host, device, &on_device);
    if (error == NULL && on_device->device != device)
        error = tp_check_failure("the empty tensor stayed on %s", on_device->device->full_name);
    if (error == NULL) error = tp_tensor_to_device(on_device, check->context->registry.host_device,
                                                   &back);
    if (error == NULL) error = tp_tensor_read(back, NULL, 0);
    if (error == NULL && (back->num_elements != 0 || back->shape.dims[0] != 0))
        error = tp_check_failure("the empty tensor came back with %lld elements",
                                 (long long)back->num_elements);
    tp_tensor_release(on_host);
    tp_tensor_release(on_device);
    tp_tensor_release(back);
    if (error == NULL) error = tp_context_synchronize(check->context);
    TP_RETURN_IF_ERROR(tp_status_annotate(error, "a tensor of shape (0, 3) on %s:0", type));
    tp_check_detail(check, "a (0, 3) tensor went to %s:0 and back, asking the device for no memory",
                    type);
    return NULL;
}

/* One allocation that must be refused; its status message, quoted in the detail. */
static tp_status_t *refused(tp_check_t *check, uint64_t size, const char *what, char *message,
                            size_t capacity) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    void *mem = NULL;
    check->def->allocate(check->devices[0]->handle, size, &mem, &status);
    if (status.code == TP_OK) {
        if (mem != NULL) check->def->deallocate(check->devices[0]->handle, mem);
        return tp_check_failure("allocating %s (%llu bytes) succeeded", what,
                                (unsigned long long)size);
    }
    snprintf(message, capacity, "%s refused (%s: %s)", what, tp_code_name(status.code),
             status.message);
    return NULL;
}

tp_status_t *tp_check_allocate_too_much(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 allocate too much", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    uint64_t memory = check->devices[0]->memory_bytes;
    char over[256] = "", huge[256] = "";
    if (memory != 0) TP_RETURN_IF_ERROR(refused(check, memory + 1, "its memory + 1 B", over,
                                                sizeof over));
    TP_RETURN_IF_ERROR(refused(check, UINT64_C(1) << 62, "4 EiB", huge, sizeof huge));
    void *mem;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_check_allocate(check, 0, 4096, &mem),
                                          "after the refusals"));
    check->def->deallocate(check->devices[0]->handle, mem);
    tp_check_detail(check, "%s%s%s; 4 KiB still allocates", over, memory != 0 ? "; " : "", huge);
    return NULL;
}

/* ---- A kernel's launches give back what they take -------------------------------------------- */

enum { MEASURED_LAUNCHES = 8 };

/* The memory of the device under test, as the plug-in and the runtime count it. */
typedef struct memory_counts {
    uint64_t plugin_free;       /* memory_usage's free bytes, when the plug-in has it */
    int64_t raw_bytes, raw_allocations; /* what the runtime took with allocate */
    uint64_t tensor_bytes, tensors;     /* the runtime's allocator: live tensors */
} memory_counts_t;

static tp_status_t *count_memory(tp_check_t *check, memory_counts_t *out) {
    TP_RETURN_IF_ERROR(tp_context_synchronize(check->context));
    tp_physical_device_t *physical = check->devices[0];
    out->plugin_free = 0;
    uint64_t total = 0;
    if (check->def->memory_usage != NULL)
        check->def->memory_usage(physical->handle, &out->plugin_free, &total);
    out->raw_bytes = (int64_t)atomic_load(&physical->bytes_in_use);
    out->raw_allocations = (int64_t)atomic_load(&physical->live_allocations);
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    char name[64];
    snprintf(name, sizeof name, "%s:0", check->def->type);
    TP_RETURN_IF_ERROR(tp_context_memory_stats(check->context, name, &stats));
    out->tensor_bytes = stats.bytes_in_use;
    out->tensors = stats.num_allocations;
    return NULL;
}

static tp_status_t *compare_counts(const tp_check_t *check, const memory_counts_t *before,
                                   const memory_counts_t *after, const char *op) {
    const char *type = check->def->type;
    if (after->plugin_free != before->plugin_free)
        return tp_check_failure("%d launches of %s took %lld bytes of %s:0 that they did not give "
                                "back: memory_usage said %llu bytes free before, %llu after",
                                MEASURED_LAUNCHES, op,
                                (long long)(before->plugin_free - after->plugin_free), type,
                                (unsigned long long)before->plugin_free,
                                (unsigned long long)after->plugin_free);
    if (after->raw_bytes != before->raw_bytes || after->raw_allocations != before->raw_allocations)
        return tp_check_failure("after %d launches of %s the runtime holds %lld raw bytes of %s:0 "
                                "in %lld allocations, before it held %lld in %lld",
                                MEASURED_LAUNCHES, op, (long long)after->raw_bytes, type,
                                (long long)after->raw_allocations, (long long)before->raw_bytes,
                                (long long)before->raw_allocations);
    if (after->tensors != before->tensors || after->tensor_bytes != before->tensor_bytes)
        return tp_check_failure("after %d launches of %s and a synchronize, %llu tensors (%llu "
                                "bytes) of %s:0 are live, before %llu (%llu): the memory of "
                                "released tensors did not come back",
                                MEASURED_LAUNCHES, op, (unsigned long long)after->tensors,
                                (unsigned long long)after->tensor_bytes, type,
                                (unsigned long long)before->tensors,
                                (unsigned long long)before->tensor_bytes);
    return NULL;
}

tp_status_t *tp_check_kernel_memory(tp_check_t *check, const char *argument) {
    const tp_kernel_entry_t *entry;
    tp_op_t op;
    tp_device_t *device;
    tp_dtype_t dtype;
    tp_status_t *error;
    if (!tp_check_kernel_argument(check, argument, ", memory", &entry, &op, &device, &dtype,
                                  &error))
        return error;
    tp_check_sample_t *sample;
    TP_RETURN_IF_ERROR(tp_check_sample_create(check, entry, device, dtype, &sample));
    if (sample == NULL) {
        tp_check_not_applicable(check, "no call of %s for %s could be formed", op.def->name,
                                tp_dtype_name(dtype));
        return NULL;
    }
    memory_counts_t before, after;
    /* A second launch first, so that whatever the runtime keeps for reuse is in place. */
    error = tp_check_sample_run(check, sample);
    if (error == NULL) error = count_memory(check, &before);
    for (int launch = 0; launch < MEASURED_LAUNCHES && error == NULL; launch++)
        error = tp_check_sample_run(check, sample);
    if (error == NULL) error = count_memory(check, &after);
    tp_check_sample_free(sample);
    TP_RETURN_IF_ERROR(error);
    TP_RETURN_IF_ERROR(compare_counts(check, &before, &after, op.def->name));
    bool asked = check->def->memory_usage != NULL;
    tp_check_detail(check, "%d launches gave back all they took: %sthe runtime's raw "
                    "allocations and its live tensors were where they had been%s",
                    MEASURED_LAUNCHES, asked ? "the plug-in's free memory, " : "",
                    asked ? "" : " (the plug-in has no memory_usage to ask)");
    return NULL;
}
