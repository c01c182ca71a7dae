/* SPDX-License-Identifier: Apache-2.0 */
/* A TensorFlow plug-in's SP_StreamExecutor as tensorplug's device interface. TensorFlow's
 * handles are boxed: plug-ins may hand out NULL streams and events (TensorFlow's own sample
 * does), which tensorplug reads as failures, and deallocate needs the whole
 * SP_DeviceMemoryBase back, not just its address. */
#include <stdlib.h>

#include "tfc.h"

typedef struct tfc_event {
    SP_Event event;
} tfc_event_t;

static const SP_StreamExecutor *executor(const tfc_device_t *device) {
    return &device->plugin->stream_executor;
}

SP_DeviceMemoryBase tfc_memory_at(const tfc_memory_t *memory, uint64_t offset) {
    SP_DeviceMemoryBase at = memory->base;
    /* TensorFlow itself addresses sub-buffers this way: opaque is a linear address. */
    at.opaque = (char *)memory->base.opaque + offset;
    at.size = offset < memory->base.size ? memory->base.size - offset : 0;
    return at;
}

static void out_of_memory(tp_plugin_status_t *status, const char *what) {
    tfc_host->status_set(status, TP_RESOURCE_EXHAUSTED, "%s: out of host memory", what);
}

static int32_t device_count(void *type_state, tp_plugin_status_t *status) {
    tfc_plugin_t *plugin = type_state;
    TF_Status tf_status = {0};
    int count = 0;
    plugin->platform_fns.get_device_count(&plugin->platform, &count, &tf_status);
    if (!tfc_status_to_host(&tf_status, status, "SP_PlatformFns.get_device_count")) return 0;
    return count < 0 ? 0 : count;
}

static void device_init(void *type_state, int32_t ordinal, tp_device_info_t *info,
                        void **out_device, tp_plugin_status_t *status) {
    tfc_plugin_t *plugin = type_state;
    tfc_device_t *device = calloc(1, sizeof *device);
    if (device == NULL) {
        out_of_memory(status, "create_device");
        return;
    }
    device->plugin = plugin;
    device->device.struct_size = SP_DEVICE_STRUCT_SIZE;
    device->device.ordinal = ordinal;
    SE_CreateDeviceParams params = {SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE, NULL, ordinal,
                                    &device->device};
    TF_Status tf_status = {0};
    plugin->platform_fns.create_device(&plugin->platform, &params, &tf_status);
    if (!tfc_status_to_host(&tf_status, status, "SP_PlatformFns.create_device")) {
        free(device);
        return;
    }
    int64_t free_bytes = 0, total_bytes = 0;
    const char *problem = NULL;
    if (device->device.struct_size == 0)
        problem = "create_device left SP_Device.struct_size 0";
    else if (!executor(device)->device_memory_usage(&device->device, &free_bytes, &total_bytes) ||
             total_bytes <= 0)
        problem = "SP_StreamExecutor.device_memory_usage gave no total, which tensorplug needs "
                  "to size the device's allocator";
    if (problem != NULL) {
        plugin->platform_fns.destroy_device(&plugin->platform, &device->device);
        free(device);
        tfc_host->status_set(status, TP_FAILED_PRECONDITION, "%s", problem);
        return;
    }
    info->hardware_name = device->device.hardware_name != NULL ? device->device.hardware_name
                                                               : plugin->platform.name;
    info->vendor = device->device.device_vendor;
    info->memory_bytes = (uint64_t)total_bytes;
    /* force_memory_growth: start small and grow, as tensorplug does for host-memory devices. */
    if (info->struct_size >= TF_OFFSET_OF_END(tp_device_info_t, flags) &&
        plugin->platform.struct_size >= TF_OFFSET_OF_END(SP_Platform, force_memory_growth) &&
        plugin->platform.force_memory_growth)
        info->flags |= TP_DEVICE_INFO_HOST_MEMORY;
    *out_device = device;
}

static void device_release(void *opaque) {
    tfc_device_t *device = opaque;
    device->plugin->platform_fns.destroy_device(&device->plugin->platform, &device->device);
    free(device);
}

static void allocate(void *opaque, uint64_t size, void **out_mem, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    tfc_memory_t *memory = calloc(1, sizeof *memory);
    if (memory == NULL) {
        out_of_memory(status, "allocate");
        return;
    }
    memory->base.struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
    executor(device)->allocate(&device->device, size, 0, &memory->base);
    if (memory->base.opaque == NULL) {
        free(memory);
        tfc_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                             "SP_StreamExecutor.allocate of %llu bytes returned no memory",
                             (unsigned long long)size);
        return;
    }
    *out_mem = memory;
}

static void deallocate(void *opaque, void *mem) {
    tfc_device_t *device = opaque;
    tfc_memory_t *memory = mem;
    executor(device)->deallocate(&device->device, &memory->base);
    free(memory);
}

static void memory_usage(void *opaque, uint64_t *free_bytes, uint64_t *total_bytes) {
    tfc_device_t *device = opaque;
    int64_t free_value = 0, total_value = 0;
    if (executor(device)->device_memory_usage(&device->device, &free_value, &total_value)) {
        *free_bytes = free_value > 0 ? (uint64_t)free_value : 0;
        *total_bytes = total_value > 0 ? (uint64_t)total_value : 0;
    }
}

static void stream_create(void *opaque, void **out_stream, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    tfc_stream_t *stream = calloc(1, sizeof *stream);
    if (stream == NULL) {
        out_of_memory(status, "create_stream");
        return;
    }
    TF_Status tf_status = {0};
    executor(device)->create_stream(&device->device, &stream->stream, &tf_status);
    if (!tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.create_stream")) {
        free(stream);
        return;
    }
    *out_stream = stream;
}

static void stream_destroy(void *opaque, void *stream) {
    tfc_device_t *device = opaque;
    executor(device)->destroy_stream(&device->device, ((tfc_stream_t *)stream)->stream);
    free(stream);
}

/* Without block_host_until_done, TensorFlow records an event and waits for it: so does this. */
static void wait_for_stream(tfc_device_t *device, SP_Stream stream, TF_Status *tf_status) {
    const SP_StreamExecutor *se = executor(device);
    if (se->block_host_until_done != NULL) {
        se->block_host_until_done(&device->device, stream, tf_status);
        return;
    }
    SP_Event event = NULL;
    se->create_event(&device->device, &event, tf_status);
    if (TF_GetCode(tf_status) != TF_OK) return;
    se->record_event(&device->device, stream, event, tf_status);
    if (TF_GetCode(tf_status) == TF_OK) se->block_host_for_event(&device->device, event, tf_status);
    se->destroy_event(&device->device, event);
}

static void stream_synchronize(void *opaque, void *stream, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    SP_Stream sp_stream = ((tfc_stream_t *)stream)->stream;
    TF_Status tf_status = {0};
    wait_for_stream(device, sp_stream, &tf_status);
    if (!tfc_status_to_host(&tf_status, status, "waiting for the stream")) return;
    executor(device)->get_stream_status(&device->device, sp_stream, &tf_status);
    tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.get_stream_status");
}

static void memcpy_host_to_device(void *opaque, void *stream, void *dst_mem, uint64_t dst_offset,
                                  const void *src, uint64_t size, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    SP_DeviceMemoryBase dst = tfc_memory_at(dst_mem, dst_offset);
    TF_Status tf_status = {0};
    executor(device)->memcpy_htod(&device->device, ((tfc_stream_t *)stream)->stream, &dst, src,
                                  size, &tf_status);
    tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.memcpy_htod");
}

static void memcpy_device_to_host(void *opaque, void *stream, void *dst, const void *src_mem,
                                  uint64_t src_offset, uint64_t size, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    SP_DeviceMemoryBase src = tfc_memory_at(src_mem, src_offset);
    TF_Status tf_status = {0};
    executor(device)->memcpy_dtoh(&device->device, ((tfc_stream_t *)stream)->stream, dst, &src,
                                  size, &tf_status);
    tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.memcpy_dtoh");
}

static void memcpy_device_to_device(void *opaque, void *stream, void *dst_mem,
                                    uint64_t dst_offset, const void *src_mem, uint64_t src_offset,
                                    uint64_t size, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    SP_DeviceMemoryBase dst = tfc_memory_at(dst_mem, dst_offset);
    SP_DeviceMemoryBase src = tfc_memory_at(src_mem, src_offset);
    TF_Status tf_status = {0};
    executor(device)->memcpy_dtod(&device->device, ((tfc_stream_t *)stream)->stream, &dst, &src,
                                  size, &tf_status);
    tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.memcpy_dtod");
}

static void event_create(void *opaque, void **out_event, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    tfc_event_t *event = calloc(1, sizeof *event);
    if (event == NULL) {
        out_of_memory(status, "create_event");
        return;
    }
    TF_Status tf_status = {0};
    executor(device)->create_event(&device->device, &event->event, &tf_status);
    if (!tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.create_event")) {
        free(event);
        return;
    }
    *out_event = event;
}

static void event_destroy(void *opaque, void *event) {
    tfc_device_t *device = opaque;
    executor(device)->destroy_event(&device->device, ((tfc_event_t *)event)->event);
    free(event);
}

static void event_record(void *opaque, void *stream, void *event, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    TF_Status tf_status = {0};
    executor(device)->record_event(&device->device, ((tfc_stream_t *)stream)->stream,
                                   ((tfc_event_t *)event)->event, &tf_status);
    tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.record_event");
}

static void stream_wait_event(void *opaque, void *stream, void *event,
                              tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    TF_Status tf_status = {0};
    executor(device)->wait_for_event(&device->device, ((tfc_stream_t *)stream)->stream,
                                     ((tfc_event_t *)event)->event, &tf_status);
    tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.wait_for_event");
}

static tp_event_state_t event_query(void *opaque, void *event) {
    tfc_device_t *device = opaque;
    switch (executor(device)->get_event_status(&device->device, ((tfc_event_t *)event)->event)) {
    case SE_EVENT_PENDING: return TP_EVENT_PENDING;
    case SE_EVENT_COMPLETE: return TP_EVENT_COMPLETE;
    default: return TP_EVENT_ERROR; /* SE_EVENT_ERROR and SE_EVENT_UNKNOWN */
    }
}

static void event_synchronize(void *opaque, void *event, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    TF_Status tf_status = {0};
    executor(device)->block_host_for_event(&device->device, ((tfc_event_t *)event)->event,
                                           &tf_status);
    if (tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.block_host_for_event") &&
        event_query(opaque, event) == TP_EVENT_ERROR)
        tfc_host->status_set(status, TP_INTERNAL, "the event reports an error");
}

static void device_synchronize(void *opaque, tp_plugin_status_t *status) {
    tfc_device_t *device = opaque;
    TF_Status tf_status = {0};
    executor(device)->synchronize_all_activity(&device->device, &tf_status);
    tfc_status_to_host(&tf_status, status, "SP_StreamExecutor.synchronize_all_activity");
}

typedef struct host_call {
    void (*fn)(void *arg);
    void *arg;
} host_call_t;

static void run_host_call(void *const opaque, TF_Status *const tf_status) {
    (void)tf_status;
    host_call_t *call = opaque;
    call->fn(call->arg);
    free(call);
}

void tfc_after_stream(tfc_device_t *device, SP_Stream stream, void (*fn)(void *arg), void *arg,
                      tp_plugin_status_t *status) {
    host_call_t *call = malloc(sizeof *call);
    if (call != NULL) {
        call->fn = fn;
        call->arg = arg;
        if (executor(device)->host_callback(&device->device, stream, run_host_call, call))
            return;
        free(call);
    }
    /* The plug-in declined (TensorFlow's sample always does): wait, then call it here. */
    TF_Status tf_status = {0};
    wait_for_stream(device, stream, &tf_status);
    tfc_status_to_host(&tf_status, status, "waiting for the stream");
    fn(arg);
}

static void host_callback(void *opaque, void *stream, void (*fn)(void *arg), void *arg,
                          tp_plugin_status_t *status) {
    tfc_after_stream(opaque, ((tfc_stream_t *)stream)->stream, fn, arg, status);
}

void tfc_device_type_fill(tfc_plugin_t *plugin) {
    tp_device_type_def_t *def = &plugin->device_type;
    *def = (tp_device_type_def_t){.struct_size = sizeof *def};
    def->type = plugin->type;
    /* An accelerator's placement priority, above the CPU's. */
    def->priority = 100;
    def->type_state = plugin;
    def->device_count = device_count;
    def->device_init = device_init;
    def->device_release = device_release;
    def->allocate = allocate;
    def->deallocate = deallocate;
    def->memory_usage = memory_usage;
    def->stream_create = stream_create;
    def->stream_destroy = stream_destroy;
    def->stream_synchronize = stream_synchronize;
    def->memcpy_host_to_device = memcpy_host_to_device;
    def->memcpy_device_to_host = memcpy_device_to_host;
    if (plugin->stream_executor.memcpy_dtod != NULL)
        def->memcpy_device_to_device = memcpy_device_to_device;
    def->event_create = event_create;
    def->event_destroy = event_destroy;
    def->event_record = event_record;
    def->stream_wait_event = stream_wait_event;
    def->event_query = event_query;
    def->event_synchronize = event_synchronize;
    def->device_synchronize = device_synchronize;
    def->host_callback = host_callback;
}
