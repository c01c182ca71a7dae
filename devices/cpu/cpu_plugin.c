/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU device, registered through the plug-in ABI like any other device. It declares
 * itself synchronous (TP_DEVICE_SYNCHRONOUS): every command has finished when the call that
 * enqueues it returns and reports its own failure, so its events are complete as soon as they
 * are recorded, and it leaves host callbacks to the host's default (wait, then call). */
#include "cpu_plugin.h"

#include "cpu_kernels.h"
#include "cpu_thread_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const tp_host_api_t *host;

/* Read once, at init: /proc/cpuinfo is long on big machines, and contexts are cheap to make. */
static char hardware_name[128] = "CPU";
static char vendor[64] = "unknown";

/* The CPU keeps no per-device state, but the host needs a distinct handle per device. */
typedef struct {
    int32_t ordinal;
} cpu_device_t;

/* A stream or event needs a distinct non-NULL handle, though the CPU keeps no state in it. */
typedef struct {
    int unused;
} cpu_handle_t;

/* Reads "key : value" from /proc/cpuinfo; leaves `out` alone when it is absent. */
static void read_cpuinfo(const char *key, char *out, size_t capacity) {
    FILE *file = fopen("/proc/cpuinfo", "r");
    if (file == NULL) return;
    char line[512];
    size_t key_length = strlen(key);
    while (fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, key, key_length) != 0) continue;
        char *colon = strchr(line, ':');
        if (colon == NULL) continue;
        char *value = colon + 1;
        while (*value == ' ' || *value == '\t') value++;
        value[strcspn(value, "\n")] = '\0';
        if (*value != '\0') snprintf(out, capacity, "%s", value);
        break;
    }
    fclose(file);
}

static int32_t cpu_device_count(void *type_state, tp_plugin_status_t *status) {
    (void)type_state;
    (void)status;
    return 1;
}

static void cpu_device_init(void *type_state, int32_t ordinal, tp_device_info_t *info,
                            void **out_device, tp_plugin_status_t *status) {
    (void)type_state;
    cpu_device_t *device = calloc(1, sizeof *device);
    if (device == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "out of host memory");
        return;
    }
    device->ordinal = ordinal;
    cpu_shared_pool_retain();
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    info->hardware_name = hardware_name;
    info->vendor = vendor;
    info->memory_bytes = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    info->compute_units = cores > 0 && cores <= INT32_MAX ? (int32_t)cores : 0;
    *out_device = device;
}

static void cpu_device_release(void *device) {
    free(device);
    cpu_shared_pool_release();
}

static void cpu_allocate(void *device, uint64_t size, void **out_mem,
                         tp_plugin_status_t *status) {
    (void)device;
    /* 64 bytes: a cache line, and what vector kernels want. aligned_alloc needs a multiple. */
    uint64_t rounded = (size + 63) / 64 * 64;
    void *mem = rounded >= size && rounded <= SIZE_MAX ? aligned_alloc(64, (size_t)rounded)
                                                       : NULL;
    if (mem == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED,
                         "the CPU could not allocate %llu bytes of host memory",
                         (unsigned long long)size);
        return;
    }
    *out_mem = mem;
}

static void cpu_deallocate(void *device, void *mem) {
    (void)device;
    free(mem);
}

static void cpu_memory_usage(void *device, uint64_t *free_bytes, uint64_t *total_bytes) {
    (void)device;
    long pages = sysconf(_SC_PHYS_PAGES), available = sysconf(_SC_AVPHYS_PAGES),
         page_size = sysconf(_SC_PAGESIZE);
    *total_bytes = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
    *free_bytes = available > 0 && page_size > 0 ? (uint64_t)available * (uint64_t)page_size : 0;
}

static void cpu_handle_create(void *device, void **out_handle, tp_plugin_status_t *status) {
    (void)device;
    cpu_handle_t *handle = calloc(1, sizeof *handle);
    if (handle == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "out of host memory");
        return;
    }
    *out_handle = handle;
}

static void cpu_handle_destroy(void *device, void *handle) {
    (void)device;
    free(handle);
}

static void cpu_stream_synchronize(void *device, void *stream, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
}

static void cpu_memcpy_host_to_device(void *device, void *stream, void *dst_mem,
                                      uint64_t dst_offset, const void *src, uint64_t size,
                                      tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
    memcpy((char *)dst_mem + dst_offset, src, size);
}

static void cpu_memcpy_device_to_host(void *device, void *stream, void *dst, const void *src_mem,
                                      uint64_t src_offset, uint64_t size,
                                      tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
    memcpy(dst, (const char *)src_mem + src_offset, size);
}

static void cpu_memcpy_device_to_device(void *device, void *stream, void *dst_mem,
                                        uint64_t dst_offset, const void *src_mem,
                                        uint64_t src_offset, uint64_t size,
                                        tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
    memmove((char *)dst_mem + dst_offset, (const char *)src_mem + src_offset, size);
}

static void cpu_event_record(void *device, void *stream, void *event,
                             tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)event;
    (void)status;
}

static void cpu_stream_wait_event(void *device, void *stream, void *event,
                                  tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)event;
    (void)status;
}

static tp_event_state_t cpu_event_query(void *device, void *event) {
    (void)device;
    (void)event;
    return TP_EVENT_COMPLETE;
}

static void cpu_init(const tp_host_api_t *host_api, tp_registrar_t *registrar,
                     tp_plugin_status_t *status) {
    host = host_api;
    read_cpuinfo("model name", hardware_name, sizeof hardware_name);
    read_cpuinfo("vendor_id", vendor, sizeof vendor);
    static const tp_device_type_def_t cpu = {
        .struct_size = sizeof(tp_device_type_def_t),
        .type = "CPU",
        .priority = 0,
        .device_count = cpu_device_count,
        .device_init = cpu_device_init,
        .device_release = cpu_device_release,
        .allocate = cpu_allocate,
        .deallocate = cpu_deallocate,
        .memory_usage = cpu_memory_usage,
        .stream_create = cpu_handle_create,
        .stream_destroy = cpu_handle_destroy,
        .stream_synchronize = cpu_stream_synchronize,
        .memcpy_host_to_device = cpu_memcpy_host_to_device,
        .memcpy_device_to_host = cpu_memcpy_device_to_host,
        .memcpy_device_to_device = cpu_memcpy_device_to_device,
        .event_create = cpu_handle_create,
        .event_destroy = cpu_handle_destroy,
        .event_record = cpu_event_record,
        .stream_wait_event = cpu_stream_wait_event,
        .event_query = cpu_event_query,
        .flags = TP_DEVICE_SYNCHRONOUS,
    };
    host->register_device_type(registrar, &cpu, status);
    tp_cpu_host = host_api;
    cpu_configure_threads(registrar);
    cpu_register_elementwise_kernels(registrar, status);
    cpu_register_matmul_kernels(registrar, status);
    cpu_register_reduction_kernels(registrar, status);
    cpu_register_layout_kernels(registrar, status);
    cpu_register_random_kernels(registrar, status);
    cpu_register_activation_grad_kernels(registrar, status);
    cpu_register_softmax_loss_kernels(registrar, status);
    cpu_register_batch_norm_kernels(registrar, status);
    cpu_register_dropout_kernels(registrar, status);
    cpu_register_optimizer_kernels(registrar, status);
    cpu_register_array_kernels(registrar, status);
    cpu_register_gather_kernels(registrar, status);
    cpu_register_compare_kernels(registrar, status);
    cpu_register_conv_kernels(registrar, status);
    cpu_register_pool_kernels(registrar, status);
    cpu_register_transcendental_kernels(registrar, status);
    cpu_register_softmax_kernels(registrar, status);
}

const tp_plugin_descriptor_t *tp_cpu_plugin_entry(void) {
    static const tp_plugin_descriptor_t descriptor = {
        .struct_size = sizeof(tp_plugin_descriptor_t),
        .abi_major = TP_ABI_MAJOR,
        .abi_minor = TP_ABI_MINOR,
        .name = "cpu",
        .version = TP_PLUGIN_CPU_VERSION,
        .init = cpu_init,
    };
    return &descriptor;
}
