/* SPDX-License-Identifier: Apache-2.0 */
#include "simple_device.h"

#include <stdlib.h>
#include <string.h>

static const tp_host_api_t *host;
static int32_t device_total;

static int32_t count_devices(void *type_state, tp_plugin_status_t *status) {
    (void)type_state;
    (void)status;
    return device_total;
}

static void init_device(void *type_state, int32_t ordinal, tp_device_info_t *info,
                        void **out_device, tp_plugin_status_t *status) {
    (void)type_state;
    int32_t *device = malloc(sizeof *device);
    if (device == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    *device = ordinal;
    info->hardware_name = "Test Device";
    info->vendor = "tensorplug tests";
    /* The second device does not say how much memory it has, as some hardware cannot. */
    info->memory_bytes = ordinal == 0 ? 64u << 20 : 0;
    *out_device = device;
}

static void release_device(void *device) { free(device); }

static void allocate(void *device, uint64_t size, void **out_mem, tp_plugin_status_t *status) {
    (void)device;
    void *mem = malloc(size);
    if (mem == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    *out_mem = mem;
}

static void deallocate(void *device, void *mem) {
    (void)device;
    free(mem);
}

static void create_stream(void *device, void **out_stream, tp_plugin_status_t *status) {
    (void)device;
    void *stream = malloc(1);
    if (stream == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    *out_stream = stream;
}

static void destroy_stream(void *device, void *stream) {
    (void)device;
    free(stream);
}

static void synchronize(void *device, void *stream, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
}

static void to_device(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                      const void *src, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
    memcpy((char *)dst_mem + dst_offset, src, size);
}

static void to_host(void *device, void *stream, void *dst, const void *src_mem,
                    uint64_t src_offset, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
    memcpy(dst, (const char *)src_mem + src_offset, size);
}

void simple_device_fill(tp_device_type_def_t *def, const char *type, int32_t count,
                        const tp_host_api_t *host_api) {
    host = host_api;
    device_total = count;
    def->type = type;
    def->priority = 50;
    def->device_count = count_devices;
    def->device_init = init_device;
    def->device_release = release_device;
    def->allocate = allocate;
    def->deallocate = deallocate;
    def->stream_create = create_stream;
    def->stream_destroy = destroy_stream;
    def->stream_synchronize = synchronize;
    def->memcpy_host_to_device = to_device;
    def->memcpy_device_to_host = to_host;
}

void simple_device_register(const tp_host_api_t *host_api, tp_registrar_t *registrar,
                            const char *type, int32_t count, int32_t priority,
                            tp_plugin_status_t *status) {
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, type, count, host_api);
    def.priority = priority;
    host_api->register_device_type(registrar, &def, status);
}
