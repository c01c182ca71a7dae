/* The plug-in's programs on each device: built the first time a kernel of theirs runs there,
 * from the disk cache when it holds them, and their kernel objects, reused between launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_cache.h"
#include "opencl_device.h"

/* ---- Kernel ids ------------------------------------------------------------------------------ */

static struct {
    size_t program; /* index in opencl_programs */
    char name[64];
} kernel_names[OPENCL_MAX_KERNELS];
static int32_t num_kernel_names;

int32_t opencl_kernel_id(const char *program_name, const char *name,
                         tp_plugin_status_t *status) {
    size_t program = 0;
    while (program < opencl_num_programs && strcmp(opencl_programs[program].name, program_name))
        program++;
    if (program == opencl_num_programs || program >= OPENCL_MAX_PROGRAMS) {
        opencl_host->status_set(status, TP_INTERNAL, "OpenCL kernel %s: no program kernels/%s.cl",
                                name, program_name);
        return -1;
    }
    for (int32_t id = 0; id < num_kernel_names; id++)
        if (kernel_names[id].program == program && strcmp(kernel_names[id].name, name) == 0)
            return id;
    if (num_kernel_names == OPENCL_MAX_KERNELS || strlen(name) >= sizeof kernel_names[0].name) {
        opencl_host->status_set(status, TP_INTERNAL,
                                "OpenCL kernel %s: more than %d kernels, or a name too long",
                                name, OPENCL_MAX_KERNELS);
        return -1;
    }
    kernel_names[num_kernel_names].program = program;
    snprintf(kernel_names[num_kernel_names].name, sizeof kernel_names[0].name, "%s", name);
    return num_kernel_names++;
}


/* ---- Building -------------------------------------------------------------------------------- */

static const char *build_options(const opencl_device_t *device) {
    return device->has_fp64 ? "-cl-std=CL1.2 -DTP_FP64" : "-cl-std=CL1.2";
}

static uint64_t cache_key(const opencl_device_t *device, size_t id) {
    char platform_version[256] = "";
    clGetPlatformInfo(device->platform, CL_PLATFORM_VERSION, sizeof platform_version - 1,
                      platform_version, NULL);
    const char *parts[] = {"tensorplug opencl 1", platform_version, device->name,
                           device->vendor, device->driver, build_options(device),
                           opencl_programs[id].source};
    return opencl_cache_key(parts, sizeof parts / sizeof *parts);
}

/* The program from the cache's binary, built; NULL when there is none or the driver refuses
 * it (a damaged entry, another driver's binary), which only means a build from source. */
static cl_program from_cache(opencl_device_t *device, uint64_t key) {
    size_t size = 0;
    unsigned char *binary = opencl_cache_load(key, &size);
    if (binary == NULL) return NULL;
    const unsigned char *binaries[] = {binary};
    cl_int binary_status = CL_SUCCESS, error;
    cl_program program = clCreateProgramWithBinary(device->context, 1, &device->id, &size,
                                                   binaries, &binary_status, &error);
    free(binary);
    if (program != NULL && error == CL_SUCCESS && binary_status == CL_SUCCESS &&
        clBuildProgram(program, 1, &device->id, build_options(device), NULL, NULL) ==
            CL_SUCCESS)
        return program;
    if (program != NULL) clReleaseProgram(program);
    return NULL;
}

static void store_in_cache(cl_program program, uint64_t key) {
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            CL_SUCCESS ||
        size == 0)
        return;
    unsigned char *binary = malloc(size);
    unsigned char *binaries[] = {binary};
    if (binary != NULL &&
        clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binaries, binaries, NULL) ==
            CL_SUCCESS)
        opencl_cache_store(key, binary, size);
    free(binary);
}

/* Builds program `id` from its source; the failure, with the compiler's log, goes into the
 * device's record of the program. */
static cl_program from_source(opencl_device_t *device, size_t id) {
    const char *source = opencl_programs[id].source;
    cl_int error;
    cl_program program = clCreateProgramWithSource(device->context, 1, &source, NULL, &error);
    if (program != NULL && error == CL_SUCCESS)
        error = clBuildProgram(program, 1, &device->id, build_options(device), NULL, NULL);
    if (program != NULL && error == CL_SUCCESS) return program;
    char name[48], log[768] = "";
    if (program != NULL) {
        clGetProgramBuildInfo(program, device->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                              NULL);
        clReleaseProgram(program);
    }
    snprintf(device->programs[id].failure, sizeof device->programs[id].failure,
             "building kernels/%s.cl failed: %s%s%s", opencl_programs[id].name,
             opencl_error_name(error, name, sizeof name), log[0] != '\0' ? ": " : "", log);
    return NULL;
}

/* Program `id` built on `device`, from the disk cache or its source; NULL with `status` set,
 * naming `what`, when it cannot be built. */
static cl_program built_program(opencl_device_t *device, size_t id, const char *what,
                                tp_plugin_status_t *status) {
    pthread_mutex_lock(&device->mutex);
    opencl_built_program_t *built = &device->programs[id];
    if (built->program == NULL && built->failure[0] == '\0') {
        uint64_t key = cache_key(device, id);
        built->program = from_cache(device, key);
        if (built->program == NULL) {
            built->program = from_source(device, id);
            if (built->program != NULL) store_in_cache(built->program, key);
        }
    }
    cl_program program = built->program;
    if (program == NULL)
        opencl_host->status_set(status, TP_INTERNAL, "%s on GPU:%d (%s): %s", what,
                                (int)device->ordinal, device->name, built->failure);
    pthread_mutex_unlock(&device->mutex);
    return program;
}

/* ---- Kernel objects -------------------------------------------------------------------------- */

/* An idle kernel object of kernel `id` on `device`, or a new one. */
static cl_kernel take_kernel(opencl_device_t *device, int32_t id, const char *what,
                             tp_plugin_status_t *status) {
    pthread_mutex_lock(&device->mutex);
    opencl_idle_kernels_t *idle = &device->kernels[id];
    cl_kernel kernel = idle->count > 0 ? idle->items[--idle->count] : NULL;
    pthread_mutex_unlock(&device->mutex);
    if (kernel != NULL) return kernel;
    cl_program program = built_program(device, kernel_names[id].program, what, status);
    if (program == NULL) return NULL;
    cl_int error;
    kernel = clCreateKernel(program, kernel_names[id].name, &error);
    if (kernel == NULL || error != CL_SUCCESS) {
        opencl_fail(status, device, what, "clCreateKernel", error);
        return NULL;
    }
    return kernel;
}

/* Keeps a kernel object for the next launch; its arguments are already captured by the
 * launch that used it. */
static void give_back_kernel(opencl_device_t *device, int32_t id, cl_kernel kernel) {
    pthread_mutex_lock(&device->mutex);
    opencl_idle_kernels_t *idle = &device->kernels[id];
    if (idle->count == idle->capacity) {
        size_t capacity = idle->capacity == 0 ? 4 : idle->capacity * 2;
        cl_kernel *items = realloc(idle->items, capacity * sizeof *items);
        if (items != NULL) {
            idle->items = items;
            idle->capacity = capacity;
        }
    }
    bool kept = idle->count < idle->capacity;
    if (kept) idle->items[idle->count++] = kernel;
    pthread_mutex_unlock(&device->mutex);
    if (!kept) clReleaseKernel(kernel);
}

bool opencl_launch(tp_kernel_context_t *context, const char *what, int32_t id,
                   const opencl_arg_t *args, size_t num_args, size_t global, size_t local,
                   tp_plugin_status_t *status) {
    opencl_device_t *device = opencl_host->kernel_device(context);
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    if (global == 0) return true;
    cl_kernel kernel = take_kernel(device, id, what, status);
    if (kernel == NULL) return false;
    cl_int error = CL_SUCCESS;
    cl_uint failed_arg = 0;
    for (cl_uint i = 0; i < num_args && error == CL_SUCCESS; i++) {
        error = clSetKernelArg(kernel, i, args[i].size, args[i].value);
        failed_arg = i;
    }
    if (error != CL_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "clSetKernelArg(%s, %u)", kernel_names[id].name,
                 (unsigned)failed_arg);
        opencl_fail(status, device, what, call, error);
        give_back_kernel(device, id, kernel);
        return false;
    }
    /* The global size is a multiple of the group size; kernels check their index against
     * the real count. */
    if (local > 0) global = (global + local - 1) / local * local;
    cl_event event = NULL;
    error = clEnqueueNDRangeKernel(stream->queue, kernel, 1, NULL, &global,
                                   local > 0 ? &local : NULL, 0, NULL, &event);
    give_back_kernel(device, id, kernel);
    return opencl_stream_queued(stream, what, "clEnqueueNDRangeKernel", error, event, status);
}

void opencl_programs_release(opencl_device_t *device) {
    for (int32_t id = 0; id < OPENCL_MAX_KERNELS; id++) {
        opencl_idle_kernels_t *idle = &device->kernels[id];
        for (size_t i = 0; i < idle->count; i++) clReleaseKernel(idle->items[i]);
        free(idle->items);
        *idle = (opencl_idle_kernels_t){0};
    }
    for (size_t p = 0; p < OPENCL_MAX_PROGRAMS; p++) {
        if (device->programs[p].program != NULL) clReleaseProgram(device->programs[p].program);
        device->programs[p] = (opencl_built_program_t){0};
    }
}
