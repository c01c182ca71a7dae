/* SPDX-License-Identifier: Apache-2.0 */
/* The profiler's hook table (base/profile_hooks.h): each report becomes an event of the
 * recorder, its arguments rendered as JSON text on the reporting thread into a buffer it
 * reuses, without printf, since an op's report is on the op's own path. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/profile_hooks.h"
#include "base/strbuf.h"
#include "kernel/kernel_context.h"
#include "profiler/profiler.h"
#include "profiler/recorder.h"
#include "profiler/trace_json.h"
#include "tensor/tensor.h"

/* A device's tracks. A synchronous device runs a kernel while the host launches it, so its
 * launches are its timeline. An asynchronous device whose plug-in reports when it ran each
 * piece of work (plugin.h, event_work_times) gets that timeline, and its launches, the host
 * queueing the work, a track beside it; without such reports the launches are all there is. */
static const char STREAM[] = "stream";
static const char STREAM_DEVICE_TIME[] = "stream (device time)";
static const char ENQUEUE[] = "enqueue (host time)";
static const char STREAM_ENQUEUE[] = "stream (host enqueue time)";

static bool reports_device_times(const tp_device_t *device) {
    return !tp_device_is_synchronous(device) && device->def->event_create != NULL &&
           device->def->event_work_times != NULL;
}

/* "CPU:0" of "/job:localhost/replica:0/task:0/device:CPU:0". */
static const char *short_name(const tp_device_t *device) {
    const char *found = strstr(device->full_name, "device:");
    return found != NULL ? found + strlen("device:") : device->full_name;
}

/* A span or instant on this thread's host track, or on `process`'s track `thread`. */
static void record(tp_profile_event_kind_t kind, const char *category, const char *name,
                   const char *process, const char *thread, uint64_t begin_ns,
                   uint64_t end_ns, const tp_strbuf_t *args) {
    if (args != NULL && tp_strbuf_failed(args)) return;
    tp_profile_event_t event = {
        .kind = kind,
        .category = category,
        .name = name,
        .process = process,
        .thread = thread != NULL ? thread : (process == NULL ? tp_recorder_thread_label() : NULL),
        .begin_ns = begin_ns,
        .duration_ns = end_ns > begin_ns ? end_ns - begin_ns : 0,
        .args = args != NULL ? tp_strbuf_text(args) : NULL,
    };
    tp_recorder_add(&event);
}

/* ,"key": */
static void append_key(tp_strbuf_t *out, const char *key) {
    tp_strbuf_puts(out, ",\"");
    tp_strbuf_puts(out, key);
    tp_strbuf_puts(out, "\":");
}

/* "float32[64,1]" */
static void append_tensor_type(tp_strbuf_t *out, tp_dtype_t dtype, const tp_shape_t *shape) {
    const char *name = tp_dtype_name(dtype);
    tp_strbuf_puts(out, "\"");
    tp_strbuf_puts(out, name != NULL ? name : "invalid");
    tp_strbuf_puts(out, "[");
    for (int32_t d = 0; d < shape->rank; d++) {
        if (d > 0) tp_strbuf_puts(out, ",");
        tp_json_append_uint(out, shape->dims[d] > 0 ? (uint64_t)shape->dims[d] : 0);
    }
    tp_strbuf_puts(out, "]\"");
}

static void on_op(const tp_kernel_context_t *call, const char *function, uint64_t begin_ns) {
    uint64_t end_ns = tp_profile_clock_ns();
    tp_strbuf_t *args = tp_recorder_scratch();
    if (args == NULL) return;
    tp_strbuf_puts(args, "{\"device\":");
    tp_json_append_string(args, call->device->full_name);
    append_key(args, "inputs");
    tp_strbuf_puts(args, "[");
    for (int32_t i = 0; i < call->num_inputs; i++) {
        if (i > 0) tp_strbuf_puts(args, ",");
        append_tensor_type(args, call->inputs[i]->dtype, &call->inputs[i]->shape);
    }
    tp_strbuf_puts(args, "]");
    append_key(args, "outputs");
    tp_strbuf_puts(args, "[");
    for (int32_t o = 0; o < call->num_outputs; o++) {
        if (o > 0) tp_strbuf_puts(args, ",");
        append_tensor_type(args, call->output_dtypes[o], &call->output_shapes[o]);
    }
    tp_strbuf_puts(args, "]");
    if (function != NULL) {
        append_key(args, "function");
        tp_json_append_string(args, function);
    }
    tp_strbuf_puts(args, "}");
    record(TP_PROFILE_SPAN, "op", call->op->def->name, NULL, NULL, begin_ns, end_ns, args);
}

static void on_launch(const tp_kernel_context_t *call, uint64_t begin_ns) {
    uint64_t end_ns = tp_profile_clock_ns();
    const tp_device_t *device = call->device;
    const char *track = tp_device_is_synchronous(device) ? STREAM
                        : reports_device_times(device) ? ENQUEUE
                                                        : STREAM_ENQUEUE;
    tp_strbuf_t *args = tp_recorder_scratch();
    if (args == NULL) return;
    tp_strbuf_puts(args, "{\"host thread\":");
    tp_json_append_string(args, tp_recorder_thread_label());
    tp_strbuf_puts(args, "}");
    record(TP_PROFILE_SPAN, "launch", call->op->def->name, device->full_name, track, begin_ns,
           end_ns, args);
}

static void on_copy(const tp_device_t *from, const tp_device_t *to, uint64_t bytes,
                    uint64_t begin_ns) {
    uint64_t end_ns = tp_profile_clock_ns();
    tp_strbuf_t *args = tp_recorder_scratch();
    if (args == NULL) return;
    tp_strbuf_puts(args, "{\"from\":");
    tp_json_append_string(args, from->full_name);
    append_key(args, "to");
    tp_json_append_string(args, to->full_name);
    append_key(args, "bytes");
    tp_json_append_uint(args, bytes);
    tp_strbuf_puts(args, "}");
    record(TP_PROFILE_SPAN, "copy", "copy", NULL, NULL, begin_ns, end_ns, args);
}

static void on_host_copy(const tp_device_t *device, bool to_host, uint64_t bytes,
                         uint64_t begin_ns) {
    uint64_t end_ns = tp_profile_clock_ns();
    tp_strbuf_t *args = tp_recorder_scratch();
    if (args == NULL) return;
    tp_strbuf_puts(args, "{\"device\":");
    tp_json_append_string(args, device->full_name);
    append_key(args, "bytes");
    tp_json_append_uint(args, bytes);
    tp_strbuf_puts(args, "}");
    record(TP_PROFILE_SPAN, "copy", to_host ? "copy to the host" : "copy from the host", NULL,
           NULL, begin_ns, end_ns, args);
}

static void on_device_work(const tp_device_t *device, const char *what, uint64_t start_ns,
                           uint64_t end_ns) {
    record(TP_PROFILE_SPAN, "device", what, device->full_name, STREAM_DEVICE_TIME, start_ns,
           end_ns, NULL);
}

static void on_memory(const tp_device_t *device, uint64_t bytes_in_use) {
    tp_profile_event_t event = {.kind = TP_PROFILE_COUNTER,
                                .category = "memory",
                                .name = "memory",
                                .process = device->full_name,
                                .begin_ns = tp_profile_clock_ns(),
                                .series = "bytes_in_use",
                                .value = bytes_in_use};
    tp_recorder_add(&event);
}

static void on_function_run(const char *name, bool traced, uint64_t begin_ns) {
    uint64_t end_ns = tp_profile_clock_ns();
    tp_strbuf_t *args = tp_recorder_scratch();
    if (args == NULL) return;
    tp_strbuf_puts(args, traced ? "{\"traced\":true}" : "{\"traced\":false}");
    record(TP_PROFILE_SPAN, "function", name, NULL, NULL, begin_ns, end_ns, args);
    if (traced) {
        tp_strbuf_t *marker = tp_recorder_scratch();
        if (marker == NULL) return;
        tp_strbuf_puts(marker, "traced ");
        tp_strbuf_puts(marker, name);
        if (!tp_strbuf_failed(marker))
            record(TP_PROFILE_INSTANT, "function", tp_strbuf_text(marker), NULL, NULL, begin_ns,
                   begin_ns, NULL);
    }
}

static void on_mirrored_step(uint64_t step, size_t replicas, uint64_t begin_ns) {
    uint64_t end_ns = tp_profile_clock_ns();
    char name[48];
    snprintf(name, sizeof name, "step %" PRIu64, step);
    tp_strbuf_t *args = tp_recorder_scratch();
    if (args == NULL) return;
    tp_strbuf_printf(args, "{\"step\":%" PRIu64 ",\"replicas\":%zu}", step, replicas);
    record(TP_PROFILE_SPAN, "mirrored", name, NULL, NULL, begin_ns, end_ns, args);
    tp_profile_event_t marker = {.kind = TP_PROFILE_INSTANT,
                                 .category = "mirrored",
                                 .name = name,
                                 .thread = tp_recorder_thread_label(),
                                 .begin_ns = begin_ns,
                                 .args = tp_strbuf_failed(args) ? NULL : tp_strbuf_text(args),
                                 .global = true};
    tp_recorder_add(&marker);
}

static void on_replica_begin(size_t index, const tp_device_t *device) {
    char label[96];
    snprintf(label, sizeof label, "replica %zu (%.64s)", index, short_name(device));
    tp_recorder_set_thread_label(label);
}

static void on_replica_end(size_t index, const tp_device_t *device, uint64_t begin_ns) {
    uint64_t end_ns = tp_profile_clock_ns();
    char name[48];
    snprintf(name, sizeof name, "replica %zu", index);
    tp_strbuf_t *args = tp_recorder_scratch();
    if (args == NULL) return;
    tp_strbuf_puts(args, "{\"device\":");
    tp_json_append_string(args, device->full_name);
    tp_strbuf_puts(args, "}");
    record(TP_PROFILE_SPAN, "mirrored", name, NULL, NULL, begin_ns, end_ns, args);
}

const tp_profile_hooks_t tp_profiler_hooks = {
    .op = on_op,
    .launch = on_launch,
    .copy = on_copy,
    .host_copy = on_host_copy,
    .device_work = on_device_work,
    .memory = on_memory,
    .function_run = on_function_run,
    .mirrored_step = on_mirrored_step,
    .replica_begin = on_replica_begin,
    .replica_end = on_replica_end,
};
