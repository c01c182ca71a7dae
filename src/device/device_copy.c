/* SPDX-License-Identifier: Apache-2.0 */
/* Copies between devices, each in stream order and waiting no longer than it must:
 *
 *   - within one logical device, the plug-in's device-to-device copy on its stream;
 *   - between logical devices of one physical device, the same copy on the source's stream,
 *     and between two devices of one plug-in, its peer copy there;
 *   - otherwise staged through host memory: the host waits for the source's stream, and the
 *     copy into the destination is queued, its staging buffer freed by the destination once
 *     the copy is done; the built-in CPU's memory is host memory, and needs no staging.
 *
 * A copy queued on the source's stream is ordered for the destination by an event: the
 * destination's stream waits for it, the host does not. A plug-in without events makes the
 * host wait for the source instead.
 *
 * Each copy has a completion of its own (device/completion.h) that also fails when the
 * values' producer failed, so a failure travels with the values from device to device. */
#include <stdlib.h>

#include "base/profile_hooks.h"
#include "base/status.h"
#include "device/completion.h"
#include "device/device.h"
#include "plugin/plugin_status.h"

/* An event the destination's stream waits for, destroyed once the destination is past it. */
typedef struct {
    tp_device_t *owner;
    void *event;
} ordering_event_t;

static void destroy_ordering_event(void *arg) {
    ordering_event_t *ordering = arg;
    ordering->owner->def->event_destroy(ordering->owner->handle, ordering->event);
    free(ordering);
}

/* Makes work queued on `destination` from now on wait for the work queued on `source` so far.
 * The two are devices of one plug-in. */
static tp_status_t *order_after(tp_device_t *source, tp_device_t *destination) {
    const tp_device_type_def_t *def = source->def;
    void *source_stream, *destination_stream;
    TP_RETURN_IF_ERROR(tp_device_stream(source, &source_stream));
    TP_RETURN_IF_ERROR(tp_device_stream(destination, &destination_stream));
    ordering_event_t *ordering = def->event_create != NULL ? malloc(sizeof *ordering) : NULL;
    if (ordering == NULL) return tp_device_synchronize(source);
    *ordering = (ordering_event_t){source, NULL};
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    def->event_create(source->handle, &ordering->event, &status);
    bool created = status.code == TP_OK;
    if (created) def->event_record(source->handle, source_stream, ordering->event, &status);
    if (status.code == TP_OK)
        def->stream_wait_event(destination->handle, destination_stream, ordering->event,
                               &status);
    tp_status_t *error = tp_plugin_status_check(&status, "ordering %s after %s",
                                                destination->full_name, source->full_name);
    if (error == NULL) error = tp_device_then(destination, destroy_ordering_event, ordering);
    if (error == NULL) return NULL;
    /* The event may be recorded: it is destroyed only once nothing can still signal it. */
    tp_status_t *waited = tp_device_synchronize(source);
    tp_status_free(tp_device_synchronize(destination));
    if (created) def->event_destroy(source->handle, ordering->event);
    free(ordering);
    tp_status_free(error);
    return waited;
}

/* The copy and the event after it are queued with the source's queue held, the ordering
 * event too: an event of another thread's between them would take a failure of theirs. */
static tp_status_t *copy_on_source_stream(tp_device_t *source, const void *src_mem,
                                          uint64_t src_offset, tp_completion_t *source_done,
                                          tp_device_t *destination, void *dst_mem,
                                          uint64_t dst_offset, uint64_t size,
                                          tp_completion_t **out_done) {
    void *stream;
    TP_RETURN_IF_ERROR(tp_device_stream(source, &stream));
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    tp_device_lock_queue(source);
    if (source->physical == destination->physical)
        source->def->memcpy_device_to_device(source->handle, stream, dst_mem, dst_offset,
                                             src_mem, src_offset, size, &status);
    else
        source->def->memcpy_peer(source->handle, stream, destination->handle, dst_mem,
                                 dst_offset, src_mem, src_offset, size, &status);
    tp_status_t *error = tp_plugin_status_check(&status, "copying %llu bytes from %s to %s",
                                                (unsigned long long)size, source->full_name,
                                                destination->full_name);
    if (error == NULL)
        error = tp_completion_record(source, "copy", &source_done, source_done != NULL,
                                     out_done);
    if (error == NULL && source != destination) {
        error = order_after(source, destination);
        if (error != NULL) {
            tp_completion_release(*out_done);
            *out_done = NULL;
        }
    }
    tp_device_unlock_queue(source);
    return error;
}

/* Staged through host memory, the host waiting for the source's values. The built-in CPU's
 * memory is host memory already: the other device copies from it or into it directly, and a
 * copy that reads it in the destination's stream order holds back the CPU's frees until it is
 * done (tp_device_defer), since the source tensor may be released before then. */
static tp_status_t *copy_through_host(tp_device_t *source, const void *src_mem,
                                      uint64_t src_offset, tp_completion_t *source_done,
                                      tp_device_t *destination, void *dst_mem,
                                      uint64_t dst_offset, uint64_t size,
                                      tp_completion_t **out_done) {
    TP_RETURN_IF_ERROR(tp_completion_wait(source_done));
    if (tp_device_host_addressed(destination))
        return tp_device_copy_to_host(source, (char *)dst_mem + dst_offset, src_mem, src_offset,
                                      size);
    const void *bytes = (const char *)src_mem + src_offset;
    void *staging = NULL;
    if (!tp_device_host_addressed(source)) {
        staging = size <= SIZE_MAX ? malloc((size_t)size) : NULL;
        if (staging == NULL)
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "copying %llu bytes from %s to %s: no "
                                  "host memory to stage them in", (unsigned long long)size,
                                  source->full_name, destination->full_name);
        tp_status_t *error = tp_device_copy_to_host(source, staging, src_mem, src_offset, size);
        if (error != NULL) {
            free(staging);
            return error;
        }
        bytes = staging;
    }
    tp_status_t *error =
        tp_device_copy_from_host(destination, dst_mem, dst_offset, bytes, size, out_done);
    if (error != NULL) {
        /* A copy that failed may be queued still: it reads the bytes until the stream is idle. */
        tp_status_free(tp_device_synchronize(destination));
        free(staging);
        return error;
    }
    if (staging != NULL)
        tp_device_defer(destination, *out_done, free, staging);
    else if (*out_done != NULL)
        tp_device_defer(source, *out_done, NULL, NULL);
    return NULL;
}

static tp_status_t *copy(tp_device_t *source, const void *src_mem, uint64_t src_offset,
                         tp_completion_t *source_done, tp_device_t *destination, void *dst_mem,
                         uint64_t dst_offset, uint64_t size, tp_completion_t **out_done) {
    *out_done = NULL;
    tp_status_t *failure = NULL;
    if (tp_completion_poll(source_done, &failure) && failure != NULL) return failure;
    if (size == 0) {
        *out_done = tp_completion_retain(source_done);
        return NULL;
    }
    const tp_device_type_def_t *def = source->def;
    bool same_physical = source->physical == destination->physical;
    if ((same_physical && def->memcpy_device_to_device != NULL) ||
        (!same_physical && def == destination->def && def->memcpy_peer != NULL))
        return copy_on_source_stream(source, src_mem, src_offset, source_done, destination,
                                     dst_mem, dst_offset, size, out_done);
    return copy_through_host(source, src_mem, src_offset, source_done, destination, dst_mem,
                             dst_offset, size, out_done);
}

tp_status_t *tp_device_copy(tp_device_t *source, const void *src_mem, uint64_t src_offset,
                            tp_completion_t *source_done, tp_device_t *destination,
                            void *dst_mem, uint64_t dst_offset, uint64_t size,
                            tp_completion_t **out_done) {
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    tp_status_t *error = copy(source, src_mem, src_offset, source_done, destination, dst_mem,
                              dst_offset, size, out_done);
    if (profile != NULL && error == NULL && size > 0)
        profile->copy(source, destination, size, begin_ns);
    return error;
}
