/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal tensorplug plug-in: one device type, MINI, whose memory is the host's and whose
 * work is done when each call returns, and one kernel, Add for float32. It includes
 * tensorplug/plugin.h alone and links nothing of the runtime: all it needs of the runtime
 * comes through the function table handed to its init. docs/writing-a-plugin.md walks
 * through it. */
#define _DEFAULT_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorplug/plugin.h>

/* The runtime's functions, valid for the life of the process. */
static const tp_host_api_t *host;

/* ---- The device ------------------------------------------------------------------------------ */

/* The host's memory, which is MINI's. */
static uint64_t memory_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    return pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
}

static int32_t mini_device_count(void *type_state, tp_plugin_status_t *status) {
    (void)type_state;
    (void)status;
    return 1;
}

static void mini_device_init(void *type_state, int32_t ordinal, tp_device_info_t *info,
                             void **out_device, tp_plugin_status_t *status) {
    (void)type_state;
    (void)status;
    static int32_t the_device; /* the handle the runtime passes back; MINI needs no state */
    the_device = ordinal;
    info->hardware_name = "Minimal example device";
    info->vendor = "tensorplug examples";
    info->memory_bytes = memory_bytes();
    /* Host memory: the runtime grows MINI's share on demand instead of reserving it. */
    info->flags = TP_DEVICE_INFO_HOST_MEMORY;
    *out_device = &the_device;
}

static void mini_device_release(void *device) { (void)device; }

/* ---- Memory: handles are host pointers, aligned to 64 bytes ---------------------------------- */

static void mini_allocate(void *device, uint64_t size, void **out_mem,
                          tp_plugin_status_t *status) {
    (void)device;
    void *mem = NULL;
    if (size <= memory_bytes()) mem = aligned_alloc(64, (size_t)((size + 63) / 64 * 64));
    if (mem == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "MINI: cannot allocate %llu bytes",
                         (unsigned long long)size);
        return;
    }
    *out_mem = mem;
}

static void mini_deallocate(void *device, void *mem) {
    (void)device;
    free(mem);
}

/* ---- Streams and copies: done when each call returns (TP_DEVICE_SYNCHRONOUS) ----------------- */

static void mini_stream_create(void *device, void **out_stream, tp_plugin_status_t *status) {
    (void)status;
    *out_stream = device; /* any handle but NULL: a MINI stream holds nothing */
}

static void mini_stream_destroy(void *device, void *stream) {
    (void)device;
    (void)stream;
}

static void mini_stream_synchronize(void *device, void *stream, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status; /* nothing is ever pending */
}

static void mini_to_device(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                           const void *src, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
    memcpy((char *)dst_mem + dst_offset, src, (size_t)size);
}

static void mini_to_host(void *device, void *stream, void *dst, const void *src_mem,
                         uint64_t src_offset, uint64_t size, tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
    memcpy(dst, (const char *)src_mem + src_offset, (size_t)size);
}

static void mini_within_device(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                               const void *src_mem, uint64_t src_offset, uint64_t size,
                               tp_plugin_status_t *status) {
    (void)device;
    (void)stream;
    (void)status;
    memmove((char *)dst_mem + dst_offset, (const char *)src_mem + src_offset, (size_t)size);
}

/* ---- The kernel: Add for float32 ------------------------------------------------------------- */

/* The runtime checked that x and y broadcast and gave z their broadcast shape, but hands x and
 * y over in their own shapes: the kernel broadcasts. Element `i` of z reads this element of
 * `in`, aligning the shapes at their last dimension, as NumPy does. */
static int64_t broadcast_index(const tp_tensor_view_t *in, const tp_tensor_view_t *z,
                               int64_t i) {
    int64_t index = 0, stride = 1;
    for (int32_t d = z->rank - 1, k = in->rank - 1; k >= 0; d--, k--) {
        int64_t coordinate = i % z->dims[d];
        i /= z->dims[d];
        if (in->dims[k] != 1) index += coordinate * stride;
        stride *= in->dims[k];
    }
    return index;
}

/* No create: `kernel` is NULL. May run on several threads at once, so it keeps no state. */
static void add_compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y},
                     z = {.struct_size = sizeof z};
    host->kernel_input(context, 0, &x, status);
    host->kernel_input(context, 1, &y, status);
    host->kernel_output(context, 0, &z, status);
    /* A refusal is on `status` already: returning passes it on. An empty z has no memory. */
    if (host->status_code(status) != TP_OK || z.num_elements == 0) return;
    const float *xs = (const float *)((const char *)x.mem + x.offset);
    const float *ys = (const float *)((const char *)y.mem + y.offset);
    float *zs = (float *)((char *)z.mem + z.offset);
    for (int64_t i = 0; i < z.num_elements; i++)
        zs[i] = xs[broadcast_index(&x, &z, i)] + ys[broadcast_index(&y, &z, i)];
}

/* ---- Registration ---------------------------------------------------------------------------- */

static void mini_init(const tp_host_api_t *host_api, tp_registrar_t *registrar,
                      tp_plugin_status_t *status) {
    host = host_api;
    const tp_device_type_def_t mini = {
        .struct_size = sizeof mini,
        .type = "MINI",
        .priority = 100, /* above the CPU's 0: an Add of float32 runs here by default */
        .device_count = mini_device_count,
        .device_init = mini_device_init,
        .device_release = mini_device_release,
        .allocate = mini_allocate,
        .deallocate = mini_deallocate,
        .stream_create = mini_stream_create,
        .stream_destroy = mini_stream_destroy,
        .stream_synchronize = mini_stream_synchronize,
        .memcpy_host_to_device = mini_to_device,
        .memcpy_device_to_host = mini_to_host,
        .memcpy_device_to_device = mini_within_device,
        .flags = TP_DEVICE_SYNCHRONOUS,
    };
    host->register_device_type(registrar, &mini, status);

    static const tp_dtype_t float32_only[] = {TP_FLOAT32};
    const tp_type_constraint_t t_is_float32 = {sizeof t_is_float32, "T", float32_only, 1};
    const tp_kernel_def_t add = {
        .struct_size = sizeof add,
        .op = "Add",
        .device_type = "MINI",
        .constraints = &t_is_float32,
        .num_constraints = 1,
        .compute = add_compute,
    };
    host->register_kernel(registrar, &add, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        .struct_size = sizeof descriptor,
        .abi_major = TP_ABI_MAJOR,
        .abi_minor = TP_ABI_MINOR,
        .name = "minimal",
        .version = "1.0.0",
        .init = mini_init,
    };
    return &descriptor;
}
