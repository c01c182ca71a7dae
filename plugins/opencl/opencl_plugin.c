/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL plug-in: device type "GPU" on the OpenCL devices of any vendor, found through the
 * ICD loader when the plug-in loads. It includes tensorplug/plugin.h and OpenCL's headers
 * alone, and links the ICD loader and CLBlast, never the core.
 *
 * Which OpenCL devices become GPUs is TP_OPENCL_DEVICE_TYPES: a comma-separated list of gpu,
 * accelerator and cpu, default "gpu,accelerator"; "cpu" offers CPU-type devices such as
 * PoCL's, so that every GPU path runs on a machine without a GPU. */
#define _GNU_SOURCE /* secure_getenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opencl_device.h"

const tp_host_api_t *opencl_host;

/* The devices found at init, in a stable order; device_init hands them out by ordinal. */
static opencl_device_t *devices;
static int32_t num_devices;

/* ---- Configuration --------------------------------------------------------------------------- */

/* The OpenCL device types TP_OPENCL_DEVICE_TYPES asks for; a malformed list is one warning and
 * the default. Read with secure_getenv, so that a setuid program ignores it. */
static cl_device_type wanted_types(tp_registrar_t *registrar) {
    const cl_device_type fallback = CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR;
    const char *text = secure_getenv("TP_OPENCL_DEVICE_TYPES");
    if (text == NULL || text[0] == '\0') return fallback;
    cl_device_type types = 0;
    const char *at = text;
    while (*at != '\0') {
        size_t length = strcspn(at, ",");
        if (length == 3 && strncasecmp(at, "gpu", 3) == 0)
            types |= CL_DEVICE_TYPE_GPU;
        else if (length == 3 && strncasecmp(at, "cpu", 3) == 0)
            types |= CL_DEVICE_TYPE_CPU;
        else if (length == 11 && strncasecmp(at, "accelerator", 11) == 0)
            types |= CL_DEVICE_TYPE_ACCELERATOR;
        else if (length == 3 && strncasecmp(at, "all", 3) == 0)
            types |= CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR | CL_DEVICE_TYPE_CPU;
        else {
            types = 0;
            break;
        }
        at += length;
        if (*at == ',') at++;
    }
    if (types != 0) return types;
    char shown[96];
    size_t n = 0; /* the value as typed, control bytes escaped, cut short if long */
    for (const char *c = text; *c != '\0' && n + 5 < sizeof shown; c++)
        n += (size_t)snprintf(shown + n, sizeof shown - n,
                              (unsigned char)*c < 0x20 || *c == 0x7f ? "\\x%02x" : "%c",
                              (unsigned char)*c);
    opencl_host->log(registrar, TP_LOG_WARNING,
                     "TP_OPENCL_DEVICE_TYPES='%s' is not a comma-separated list of gpu, "
                     "accelerator, cpu and all; using the default gpu,accelerator",
                     shown);
    return fallback;
}

/* ---- Finding devices ------------------------------------------------------------------------- */

/* What a discrete GPU's driver keeps of CL_DEVICE_GLOBAL_MEM_SIZE for itself (contexts,
 * programs, CLBlast's scratch), so that taking all the memory the plug-in offers succeeds: an
 * NVIDIA H200 reports 150109880320 bytes and commits 95% of them, but not all. 5%, at least
 * 256 MiB. */
static uint64_t driver_reserve(uint64_t memory) {
    uint64_t reserve = memory / 20, least = 256ull << 20;
    if (reserve < least) reserve = least;
    return reserve < memory ? reserve : memory / 2;
}

static void text_info(cl_device_id id, cl_device_info what, char *out, size_t capacity) {
    out[0] = '\0';
    if (clGetDeviceInfo(id, what, capacity - 1, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[capacity - 1] = '\0';
}

static void describe(opencl_device_t *device, cl_platform_id platform, cl_device_id id) {
    device->platform = platform;
    device->id = id;
    text_info(id, CL_DEVICE_NAME, device->name, sizeof device->name);
    text_info(id, CL_DEVICE_VENDOR, device->vendor, sizeof device->vendor);
    text_info(id, CL_DEVICE_VERSION, device->device_version, sizeof device->device_version);
    char driver[128];
    text_info(id, CL_DRIVER_VERSION, driver, sizeof driver);
    snprintf(device->driver, sizeof device->driver, "%s, driver %s", device->device_version,
             driver);
    cl_ulong memory = 0, largest = 0;
    clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof memory, &memory, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof largest, &largest, NULL);
    device->largest_buffer = largest != 0 && largest < memory ? largest : memory;
    clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof device->compute_units,
                    &device->compute_units, NULL);
    cl_device_type type = 0;
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    device->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    device->host_memory = device->is_cpu || unified == CL_TRUE;
    device->memory_bytes = device->host_memory ? memory : memory - driver_reserve(memory);
    char extensions[4096];
    text_info(id, CL_DEVICE_EXTENSIONS, extensions, sizeof extensions);
    device->has_fp64 = strstr(extensions, "cl_khr_fp64") != NULL;
}

/* Platforms sorted by name, so that the ordinals do not follow the order in which the ICD
 * loader happened to read its vendor files. */
static int by_platform_name(const void *a, const void *b) {
    char name_a[256] = "", name_b[256] = "";
    clGetPlatformInfo(*(const cl_platform_id *)a, CL_PLATFORM_NAME, sizeof name_a - 1, name_a,
                      NULL);
    clGetPlatformInfo(*(const cl_platform_id *)b, CL_PLATFORM_NAME, sizeof name_b - 1, name_b,
                      NULL);
    return strcmp(name_a, name_b);
}

/* The devices of one platform, with one context for them all, appended to `devices`. A
 * platform whose context cannot be made loses its devices, with a line saying why. */
static void add_platform(tp_registrar_t *registrar, cl_platform_id platform,
                         cl_device_type types) {
    char platform_name[256] = "";
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof platform_name - 1, platform_name, NULL);
    cl_uint count = 0;
    cl_int error = clGetDeviceIDs(platform, types, 0, NULL, &count);
    if (error == CL_DEVICE_NOT_FOUND || count == 0) return;
    char name[48];
    if (error != CL_SUCCESS) {
        opencl_host->log(registrar, TP_LOG_WARNING,
                         "OpenCL platform '%s': listing its devices failed (%s); none used",
                         platform_name, opencl_error_name(error, name, sizeof name));
        return;
    }
    cl_device_id *ids = calloc(count, sizeof *ids);
    opencl_device_t *grown = realloc(devices, ((size_t)num_devices + count) * sizeof *grown);
    if (grown != NULL) devices = grown;
    if (ids == NULL || grown == NULL) {
        free(ids);
        opencl_host->log(registrar, TP_LOG_WARNING,
                         "OpenCL platform '%s': out of host memory; its devices are not used",
                         platform_name);
        return;
    }
    error = clGetDeviceIDs(platform, types, count, ids, NULL);
    cl_context context = NULL;
    if (error == CL_SUCCESS) {
        const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                                    (cl_context_properties)platform, 0};
        context = clCreateContext(properties, count, ids, NULL, NULL, &error);
    }
    if (context == NULL || error != CL_SUCCESS) {
        opencl_host->log(registrar, TP_LOG_WARNING,
                         "OpenCL platform '%s': creating a context for its %u device(s) failed "
                         "(%s); none used",
                         platform_name, (unsigned)count,
                         opencl_error_name(error, name, sizeof name));
        free(ids);
        return;
    }
    for (cl_uint i = 0; i < count; i++) {
        opencl_device_t *device = &devices[num_devices];
        memset(device, 0, sizeof *device);
        describe(device, platform, ids[i]);
        device->ordinal = num_devices++;
        device->context = context;
        if (i > 0) clRetainContext(context); /* one reference per device */
    }
    free(ids);
}

/* Finds the devices; a machine without OpenCL, or without a device of the wanted types, is
 * one line saying so, and no device. */
static void find_devices(tp_registrar_t *registrar) {
    cl_device_type types = wanted_types(registrar);
    cl_uint count = 0;
    cl_int error = clGetPlatformIDs(0, NULL, &count);
    char name[48];
    if (error != CL_SUCCESS || count == 0) {
        opencl_host->log(registrar, TP_LOG_INFO,
                         "no OpenCL platform is installed (%s): no GPU device",
                         error != CL_SUCCESS ? opencl_error_name(error, name, sizeof name)
                                             : "none listed");
        return;
    }
    cl_platform_id *platforms = calloc(count, sizeof *platforms);
    if (platforms == NULL) return;
    error = clGetPlatformIDs(count, platforms, NULL);
    if (error == CL_SUCCESS) {
        qsort(platforms, count, sizeof *platforms, by_platform_name);
        for (cl_uint i = 0; i < count; i++) add_platform(registrar, platforms[i], types);
    } else {
        opencl_host->log(registrar, TP_LOG_WARNING, "listing the OpenCL platforms failed (%s)",
                         opencl_error_name(error, name, sizeof name));
    }
    free(platforms);
    if (num_devices == 0)
        opencl_host->log(registrar, TP_LOG_INFO,
                         "no OpenCL device of the types TP_OPENCL_DEVICE_TYPES asks for (default "
                         "gpu,accelerator; add cpu for devices such as PoCL's): no GPU device");
}

/* ---- The device type ------------------------------------------------------------------------- */

static int32_t device_count(void *type_state, tp_plugin_status_t *status) {
    (void)type_state;
    (void)status;
    return num_devices;
}

static void device_init(void *type_state, int32_t ordinal, tp_device_info_t *info,
                        void **out_device, tp_plugin_status_t *status) {
    (void)type_state;
    if (ordinal < 0 || ordinal >= num_devices) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT, "no OpenCL device %d",
                                (int)ordinal);
        return;
    }
    /* Each opening (one per context) has its own copy: its programs, kernel objects and
     * memory count are its own, released with it, while another context may hold the same
     * device open. */
    opencl_device_t *device = malloc(sizeof *device);
    if (device == NULL) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "GPU:%d: out of host memory to open the device", (int)ordinal);
        return;
    }
    *device = devices[ordinal];
    pthread_mutex_init(&device->mutex, NULL);
    info->hardware_name = device->name;
    info->vendor = device->vendor;
    info->memory_bytes = device->memory_bytes;
    /* Fields of 1.5 and later exist only in a host that sized the struct for them. */
    if (info->struct_size >= offsetof(tp_device_info_t, flags) + sizeof info->flags) {
        info->driver_version = device->driver;
        info->compute_units = (int32_t)device->compute_units;
        info->max_allocation_bytes = device->largest_buffer;
        info->flags = device->host_memory ? TP_DEVICE_INFO_HOST_MEMORY : 0;
    }
    *out_device = device;
}

static void device_release(void *handle) {
    opencl_device_t *device = handle;
    opencl_programs_release(device);
    pthread_mutex_destroy(&device->mutex);
    free(device);
}

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    opencl_host = host;
    find_devices(registrar);
    if (num_devices == 0) return;
    bool any_fp64 = false;
    for (int32_t i = 0; i < num_devices; i++) any_fp64 |= devices[i].has_fp64;

    tp_device_type_def_t def = {
        .struct_size = sizeof def,
        .type = "GPU",
        .priority = 100,
        .device_count = device_count,
        .device_init = device_init,
        .device_release = device_release,
        .allocate = opencl_allocate,
        .deallocate = opencl_deallocate,
        .memory_usage = opencl_memory_usage,
    };
    opencl_fill_stream_functions(&def);
    host->register_device_type(registrar, &def, status);
    if (host->status_code(status) != TP_OK) return;
    opencl_register_elementwise_kernels(registrar, any_fp64, status);
    opencl_register_reduction_kernels(registrar, any_fp64, status);
    opencl_register_random_kernels(registrar, any_fp64, status);
    opencl_register_matmul_kernels(registrar, any_fp64, status);
    opencl_register_layout_kernels(registrar, status);
    opencl_register_conv_kernels(registrar, any_fp64, status);
    opencl_register_compare_kernels(registrar, any_fp64, status);
    opencl_register_loss_kernels(registrar, any_fp64, status);
    opencl_register_array_kernels(registrar, any_fp64, status);
    opencl_register_index_kernels(registrar, any_fp64, status);
    opencl_register_batch_norm_kernels(registrar, any_fp64, status);
    opencl_register_fused_kernel(registrar, any_fp64, status);
    opencl_register_fusion_pass(registrar, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        .struct_size = sizeof descriptor,
        .abi_major = TP_ABI_MAJOR,
        .abi_minor = TP_ABI_MINOR,
        .name = "opencl",
        .version = TP_OPENCL_VERSION,
        .init = init,
    };
    return &descriptor;
}
