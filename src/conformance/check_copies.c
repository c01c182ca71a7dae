/* SPDX-License-Identifier: Apache-2.0 */
/* The copy checks: random bytes at random offsets and sizes, host to device and back, within a
 * device and between two devices, each compared with a host mirror of what the device memory
 * must hold, so that a copy that lands a byte off or spills over its end is caught. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "conformance/check.h"

enum { BUFFER_BYTES = 1 << 20, BATCHES = 25, COPIES_PER_BATCH = 8, LARGEST_COPY = 65536 };

/* A device buffer with the host's idea of its contents. */
typedef struct mirrored {
    int32_t device;
    void *mem;
    unsigned char *mirror;
} mirrored_t;

static tp_status_t *mirrored_create(tp_check_t *check, int32_t device, void *stream,
                                    mirrored_t *out) {
    out->device = device;
    out->mem = NULL;
    out->mirror = malloc(BUFFER_BYTES);
    if (out->mirror == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_check_random_bytes(check, out->mirror, BUFFER_BYTES);
    TP_RETURN_IF_ERROR(tp_check_allocate(check, device, BUFFER_BYTES, &out->mem));
    TP_RETURN_IF_ERROR(
        tp_check_to_device(check, device, stream, out->mem, 0, out->mirror, BUFFER_BYTES));
    /* The mirror changes from now on; the device may read it until the copy is done. */
    return tp_check_synchronize(check, device, stream);
}

static void mirrored_free(tp_check_t *check, mirrored_t *buffer) {
    if (buffer->mem != NULL)
        check->def->deallocate(check->devices[buffer->device]->handle, buffer->mem);
    free(buffer->mirror);
}

/* Reads the whole buffer back (the stream synchronized) and compares it with the mirror. */
static tp_status_t *compare(tp_check_t *check, void *stream, const mirrored_t *buffer,
                            const char *after) {
    unsigned char *back = malloc(BUFFER_BYTES);
    if (back == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_status_t *error =
        tp_check_to_host(check, buffer->device, stream, back, buffer->mem, 0, BUFFER_BYTES);
    if (error == NULL) error = tp_check_synchronize(check, buffer->device, stream);
    for (size_t i = 0; error == NULL && i < BUFFER_BYTES; i++)
        if (back[i] != buffer->mirror[i])
            error = tp_check_failure("after %s, byte %zu of %s:%d memory is %u, not %u", after, i,
                                     check->def->type, (int)buffer->device, back[i],
                                     buffer->mirror[i]);
    free(back);
    return error;
}

/* A random copy: `size` in 1..LARGEST_COPY, mostly small, and offsets where it fits. */
static void random_span(tp_check_t *check, uint64_t *offset, uint64_t *size) {
    uint64_t limit = 1 + tp_check_random(check, LARGEST_COPY);
    *size = 1 + tp_check_random(check, limit);
    *offset = tp_check_random(check, BUFFER_BYTES - *size + 1);
}

static void *open_stream(tp_check_t *check, int32_t device, tp_status_t **error) {
    void *stream = NULL;
    if (*error == NULL) *error = tp_check_stream_create(check, device, &stream);
    return stream;
}

static void close_stream(tp_check_t *check, int32_t device, void *stream) {
    if (stream != NULL) check->def->stream_destroy(check->devices[device]->handle, stream);
}

static tp_status_t *write_batches(tp_check_t *check, void *stream, mirrored_t *buffer) {
    unsigned char *sources = malloc((size_t)COPIES_PER_BATCH * LARGEST_COPY);
    if (sources == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_status_t *error = NULL;
    for (int batch = 0; batch < BATCHES && error == NULL; batch++) {
        /* Queued together: each source stays untouched until the synchronize. */
        for (int c = 0; c < COPIES_PER_BATCH && error == NULL; c++) {
            uint64_t offset, size;
            random_span(check, &offset, &size);
            unsigned char *source = sources + (size_t)c * LARGEST_COPY;
            tp_check_random_bytes(check, source, size);
            memcpy(buffer->mirror + offset, source, size);
            error = tp_check_to_device(check, buffer->device, stream, buffer->mem, offset, source,
                                       size);
        }
        if (error == NULL) error = tp_check_synchronize(check, buffer->device, stream);
        if (error == NULL) error = compare(check, stream, buffer, "a batch of writes");
    }
    free(sources);
    return error;
}

tp_status_t *tp_check_round_trips(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 round trips", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    void *stream = open_stream(check, 0, &error);
    mirrored_t buffer = {0, NULL, NULL};
    if (error == NULL) error = mirrored_create(check, 0, stream, &buffer);
    if (error == NULL) error = write_batches(check, stream, &buffer);
    close_stream(check, 0, stream);
    mirrored_free(check, &buffer);
    TP_RETURN_IF_ERROR(error);
    tp_check_detail(check, "%d writes of 1 B to 64 KiB at random offsets of a 1 MiB buffer, "
                    "%d at a time, read back whole",
                    BATCHES * COPIES_PER_BATCH, COPIES_PER_BATCH);
    return NULL;
}

/* Random copies from `from` to `to` with `copy`, then both compared with their mirrors. */
typedef tp_status_t *(*copy_fn)(tp_check_t *check, void *stream, mirrored_t *to,
                                uint64_t to_offset, const mirrored_t *from, uint64_t from_offset,
                                uint64_t size);

static tp_status_t *copy_within(tp_check_t *check, void *stream, mirrored_t *to,
                                uint64_t to_offset, const mirrored_t *from, uint64_t from_offset,
                                uint64_t size) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    check->def->memcpy_device_to_device(check->devices[to->device]->handle, stream, to->mem,
                                        to_offset, from->mem, from_offset, size, &status);
    return tp_plugin_status_check(&status, "memcpy_device_to_device of %s:%d", check->def->type,
                                  (int)to->device);
}

static tp_status_t *copy_peer(tp_check_t *check, void *stream, mirrored_t *to,
                              uint64_t to_offset, const mirrored_t *from, uint64_t from_offset,
                              uint64_t size) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    check->def->memcpy_peer(check->devices[from->device]->handle, stream,
                            check->devices[to->device]->handle, to->mem, to_offset, from->mem,
                            from_offset, size, &status);
    return tp_plugin_status_check(&status, "memcpy_peer from %s:%d to %s:%d", check->def->type,
                                  (int)from->device, check->def->type, (int)to->device);
}

enum { DEVICE_COPIES = 64 };

/* The copies run on `stream` of the source's device; `to_stream` reads the target back. */
static tp_status_t *random_copies(tp_check_t *check, copy_fn copy, void *stream, void *to_stream,
                                  mirrored_t *to, mirrored_t *from) {
    for (int c = 0; c < DEVICE_COPIES; c++) {
        uint64_t from_offset, to_offset, size;
        random_span(check, &from_offset, &size);
        to_offset = tp_check_random(check, BUFFER_BYTES - size + 1);
        TP_RETURN_IF_ERROR(copy(check, stream, to, to_offset, from, from_offset, size));
        memcpy(to->mirror + to_offset, from->mirror + from_offset, size);
    }
    TP_RETURN_IF_ERROR(tp_check_synchronize(check, from->device, stream));
    TP_RETURN_IF_ERROR(compare(check, stream, from, "copies out of it"));
    return compare(check, to_stream, to, "copies into it");
}

tp_status_t *tp_check_device_copy(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 device-to-device copy", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    if (check->def->memcpy_device_to_device == NULL) {
        tp_check_not_applicable(check, "no memcpy_device_to_device: the runtime stages copies "
                                       "within the device through host memory");
        return NULL;
    }
    void *stream = open_stream(check, 0, &error);
    mirrored_t from = {0, NULL, NULL}, to = {0, NULL, NULL};
    if (error == NULL) error = mirrored_create(check, 0, stream, &from);
    if (error == NULL) error = mirrored_create(check, 0, stream, &to);
    if (error == NULL) error = random_copies(check, copy_within, stream, stream, &to, &from);
    close_stream(check, 0, stream);
    mirrored_free(check, &from);
    mirrored_free(check, &to);
    TP_RETURN_IF_ERROR(error);
    tp_check_detail(check, "%d copies of 1 B to 64 KiB between random offsets of two buffers",
                    DEVICE_COPIES);
    return NULL;
}

tp_status_t *tp_check_peer_copy(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 to %s:1 peer copy", type, type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    if (check->num_devices < 2) {
        tp_check_not_applicable(check, "needs two %s devices; one is present", type);
        return NULL;
    }
    if (check->def->memcpy_peer == NULL) {
        tp_check_not_applicable(check, "no memcpy_peer: the runtime stages copies between "
                                       "devices through host memory");
        return NULL;
    }
    void *stream = open_stream(check, 0, &error), *target_stream = open_stream(check, 1, &error);
    mirrored_t from = {0, NULL, NULL}, to = {1, NULL, NULL};
    if (error == NULL) error = mirrored_create(check, 0, stream, &from);
    if (error == NULL) error = mirrored_create(check, 1, target_stream, &to);
    if (error == NULL) error = random_copies(check, copy_peer, stream, target_stream, &to, &from);
    close_stream(check, 0, stream);
    close_stream(check, 1, target_stream);
    mirrored_free(check, &from);
    mirrored_free(check, &to);
    TP_RETURN_IF_ERROR(error);
    tp_check_detail(check, "%d copies of 1 B to 64 KiB from %s:0 to random offsets of %s:1",
                    DEVICE_COPIES, type, type);
    return NULL;
}
