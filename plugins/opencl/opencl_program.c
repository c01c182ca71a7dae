/* SPDX-License-Identifier: Apache-2.0 */
/* The plug-in's programs on each device: built the first time a kernel of theirs runs there,
 * from the disk cache when it holds them, and their kernel objects, reused between launches;
 * and the programs generated at run time (fused kernels), built and kept the same way. */
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

static uint64_t cache_key(const opencl_device_t *device, const char *source) {
    char platform_version[256] = "";
    clGetPlatformInfo(device->platform, CL_PLATFORM_VERSION, sizeof platform_version - 1,
                      platform_version, NULL);
    const char *parts[] = {"tensorplug opencl 1", platform_version, device->name,
                           device->vendor, device->driver, build_options(device), source};
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

/* Builds `source`; the failure, with the compiler's log, goes into `built` under `label`
 * ("kernels/elementwise.cl"). */
static cl_program from_source(opencl_device_t *device, const char *source, const char *label,
                              opencl_built_program_t *built) {
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
    snprintf(built->failure, sizeof built->failure, "building %s failed: %s%s%s", label,
             opencl_error_name(error, name, sizeof name), log[0] != '\0' ? ": " : "", log);
    return NULL;
}

/* Builds `source` into `built` the first time, from the disk cache or the source; the
 * device's mutex is held. */
static void build_once(opencl_device_t *device, const char *source, const char *label,
                       opencl_built_program_t *built) {
    if (built->program != NULL || built->failure[0] != '\0') return;
    uint64_t key = cache_key(device, source);
    built->program = from_cache(device, key);
    if (built->program == NULL) {
        built->program = from_source(device, source, label, built);
        if (built->program != NULL) store_in_cache(built->program, key);
    }
}

/* The program in `built`, or NULL with `status` set, naming `what`, when it could not be
 * built; the device's mutex is held. */
static cl_program program_or_failure(opencl_device_t *device, const opencl_built_program_t *built,
                                     const char *what, tp_plugin_status_t *status) {
    if (built->program == NULL)
        opencl_host->status_set(status, TP_INTERNAL, "%s on GPU:%d (%s): %s", what,
                                (int)device->ordinal, device->name, built->failure);
    return built->program;
}

/* Program `id` built on `device`, from the disk cache or its source; NULL with `status` set,
 * naming `what`, when it cannot be built. */
static cl_program built_program(opencl_device_t *device, size_t id, const char *what,
                                tp_plugin_status_t *status) {
    char label[80];
    snprintf(label, sizeof label, "kernels/%s.cl", opencl_programs[id].name);
    pthread_mutex_lock(&device->mutex);
    build_once(device, opencl_programs[id].source, label, &device->programs[id]);
    cl_program program = program_or_failure(device, &device->programs[id], what, status);
    pthread_mutex_unlock(&device->mutex);
    return program;
}

/* ---- Kernel objects -------------------------------------------------------------------------- */

/* An idle kernel object from `idle`, or NULL when there is none. */
static cl_kernel take_idle(opencl_device_t *device, opencl_idle_kernels_t *idle) {
    pthread_mutex_lock(&device->mutex);
    cl_kernel kernel = idle->count > 0 ? idle->items[--idle->count] : NULL;
    pthread_mutex_unlock(&device->mutex);
    return kernel;
}

/* Keeps a kernel object for the next launch; its arguments are already captured by the
 * launch that used it. */
static void give_back_kernel(opencl_device_t *device, opencl_idle_kernels_t *idle,
                             cl_kernel kernel) {
    pthread_mutex_lock(&device->mutex);
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

static cl_kernel new_kernel(opencl_device_t *device, cl_program program, const char *name,
                            const char *what, tp_plugin_status_t *status) {
    cl_int error;
    cl_kernel kernel = clCreateKernel(program, name, &error);
    if (kernel != NULL && error == CL_SUCCESS) return kernel;
    opencl_fail(status, device, what, "clCreateKernel", error);
    return NULL;
}

/* Sets the arguments of `kernel` (kernel `name`, from `idle`), queues it over `global`
 * work-items in groups of `local` and gives it back to `idle`. */
static bool enqueue(tp_kernel_context_t *context, const char *what, const char *name,
                    cl_kernel kernel, opencl_idle_kernels_t *idle, const opencl_arg_t *args,
                    size_t num_args, size_t global, size_t local, tp_plugin_status_t *status) {
    opencl_device_t *device = opencl_host->kernel_device(context);
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    cl_int error = CL_SUCCESS;
    cl_uint failed_arg = 0;
    for (cl_uint i = 0; i < num_args && error == CL_SUCCESS; i++) {
        error = clSetKernelArg(kernel, i, args[i].size, args[i].value);
        failed_arg = i;
    }
    if (error != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clSetKernelArg(%s, %u)", name, (unsigned)failed_arg);
        opencl_fail(status, device, what, call, error);
        give_back_kernel(device, idle, kernel);
        return false;
    }
    /* The global size is a multiple of the group size; kernels check their index against
     * the real count. */
    if (local > 0) global = (global + local - 1) / local * local;
    cl_event event = NULL;
    error = clEnqueueNDRangeKernel(stream->queue, kernel, 1, NULL, &global,
                                   local > 0 ? &local : NULL, 0, NULL, &event);
    give_back_kernel(device, idle, kernel);
    return opencl_stream_queued(stream, what, "clEnqueueNDRangeKernel", error, event, status);
}

bool opencl_launch(tp_kernel_context_t *context, const char *what, int32_t id,
                   const opencl_arg_t *args, size_t num_args, size_t global, size_t local,
                   tp_plugin_status_t *status) {
    if (global == 0) return true;
    opencl_device_t *device = opencl_host->kernel_device(context);
    opencl_idle_kernels_t *idle = &device->kernels[id];
    cl_kernel kernel = take_idle(device, idle);
    if (kernel == NULL) {
        cl_program program = built_program(device, kernel_names[id].program, what, status);
        if (program == NULL) return false;
        kernel = new_kernel(device, program, kernel_names[id].name, what, status);
        if (kernel == NULL) return false;
    }
    return enqueue(context, what, kernel_names[id].name, kernel, idle, args, num_args, global,
                   local, status);
}

/* ---- Generated programs ------------------------------------------------------------------------ */

/* The device's generated program whose text after the prelude is `body`, made (not built)
 * the first time; NULL when out of host memory. The device's mutex is held. */
static opencl_generated_program_t *generated_entry(opencl_device_t *device, const char *body) {
    for (size_t g = 0; g < device->num_generated; g++)
        if (strcmp(device->generated[g]->body, body) == 0) return device->generated[g];
    if (device->num_generated == device->generated_capacity) {
        size_t capacity = device->generated_capacity == 0 ? 8 : device->generated_capacity * 2;
        opencl_generated_program_t **grown =
            realloc(device->generated, capacity * sizeof *grown);
        if (grown == NULL) return NULL;
        device->generated = grown;
        device->generated_capacity = capacity;
    }
    opencl_generated_program_t *entry = calloc(1, sizeof *entry);
    char *copy = entry != NULL ? strdup(body) : NULL;
    if (copy == NULL) {
        free(entry);
        return NULL;
    }
    entry->body = copy;
    device->generated[device->num_generated++] = entry;
    return entry;
}

/* The generated program `body` on `device`, built the first time from the prelude and the
 * body; NULL with `status` set when it cannot be. */
static opencl_generated_program_t *generated_program(opencl_device_t *device,
                                                     const opencl_prelude_t *prelude,
                                                     const char *body, const char *what,
                                                     tp_plugin_status_t *status) {
    pthread_mutex_lock(&device->mutex);
    opencl_generated_program_t *entry = generated_entry(device, body);
    char *source = NULL;
    if (entry != NULL && entry->built.program == NULL && entry->built.failure[0] == '\0') {
        size_t length = strlen(body);
        source = malloc(prelude->length + length + 1);
        if (source != NULL) {
            memcpy(source, prelude->text, prelude->length);
            memcpy(source + prelude->length, body, length + 1);
            build_once(device, source, prelude->label, &entry->built);
        }
    }
    bool built = entry != NULL && (entry->built.program != NULL ||
                                   entry->built.failure[0] != '\0');
    if (built && program_or_failure(device, &entry->built, what, status) == NULL) entry = NULL;
    pthread_mutex_unlock(&device->mutex);
    free(source);
    if (!built) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "%s on GPU:%d (%s): out of host memory for its program", what,
                                (int)device->ordinal, device->name);
        return NULL;
    }
    return entry;
}

bool opencl_launch_generated(tp_kernel_context_t *context, const char *what,
                             const opencl_prelude_t *prelude, const char *body,
                             const char *name, const opencl_arg_t *args, size_t num_args,
                             size_t global, tp_plugin_status_t *status) {
    if (global == 0) return true;
    opencl_device_t *device = opencl_host->kernel_device(context);
    opencl_generated_program_t *entry = generated_program(device, prelude, body, what, status);
    if (entry == NULL) return false;
    cl_kernel kernel = take_idle(device, &entry->idle);
    if (kernel == NULL) kernel = new_kernel(device, entry->built.program, name, what, status);
    if (kernel == NULL) return false;
    return enqueue(context, what, name, kernel, &entry->idle, args, num_args, global, 0, status);
}

static void release_idle(opencl_idle_kernels_t *idle) {
    for (size_t i = 0; i < idle->count; i++) clReleaseKernel(idle->items[i]);
    free(idle->items);
    *idle = (opencl_idle_kernels_t){0};
}

void opencl_programs_release(opencl_device_t *device) {
    for (int32_t id = 0; id < OPENCL_MAX_KERNELS; id++) release_idle(&device->kernels[id]);
    for (size_t p = 0; p < OPENCL_MAX_PROGRAMS; p++) {
        if (device->programs[p].program != NULL) clReleaseProgram(device->programs[p].program);
        device->programs[p] = (opencl_built_program_t){0};
    }
    for (size_t g = 0; g < device->num_generated; g++) {
        opencl_generated_program_t *entry = device->generated[g];
        release_idle(&entry->idle);
        if (entry->built.program != NULL) clReleaseProgram(entry->built.program);
        free(entry->body);
        free(entry);
    }
    free(device->generated);
    device->generated = NULL;
    device->num_generated = device->generated_capacity = 0;
}
