/* SPDX-License-Identifier: Apache-2.0 */
/* Device memory: one OpenCL buffer per allocation, its cl_mem the handle. OpenCL
 * implementations commonly defer the real allocation to first use, where a failure would come
 * too late (an NVIDIA driver creates a buffer beyond what is free, then fails the first copy
 * into it). So the plug-in counts what it holds against the device's memory itself, and on a
 * GPU with memory of its own it touches each new buffer once, so that the driver commits it
 * now and a refusal is this allocation's failure. */
#include "opencl_device.h"

/* Makes the driver commit `mem` by writing one byte into it; the OpenCL error, or CL_SUCCESS. */
static cl_int commit(opencl_device_t *device, cl_mem mem) {
    cl_int error;
    cl_command_queue queue = clCreateCommandQueue(device->context, device->id, 0, &error);
    if (queue == NULL || error != CL_SUCCESS) return error != CL_SUCCESS ? error : CL_INVALID_VALUE;
    const cl_uchar zero = 0;
    error = clEnqueueFillBuffer(queue, mem, &zero, 1, 0, 1, 0, NULL, NULL);
    cl_int finished = clFinish(queue);
    clReleaseCommandQueue(queue);
    return error != CL_SUCCESS ? error : finished;
}

void opencl_allocate(void *handle, uint64_t size, void **out_mem, tp_plugin_status_t *status) {
    opencl_device_t *device = handle;
    if (size > device->largest_buffer) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "GPU:%d: cannot allocate %llu bytes: the largest buffer %s "
                                "allows is %llu bytes",
                                (int)device->ordinal, (unsigned long long)size, device->name,
                                (unsigned long long)device->largest_buffer);
        return;
    }
    pthread_mutex_lock(&device->mutex);
    bool fits = size <= device->memory_bytes - device->used_bytes;
    if (fits) device->used_bytes += size;
    pthread_mutex_unlock(&device->mutex);
    if (!fits) {
        opencl_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "GPU:%d: cannot allocate %llu bytes of %llu", (int)device->ordinal,
                                (unsigned long long)size,
                                (unsigned long long)device->memory_bytes);
        return;
    }
    cl_int error;
    const char *call = "clCreateBuffer";
    cl_mem mem = clCreateBuffer(device->context, CL_MEM_READ_WRITE, (size_t)size, NULL, &error);
    if (mem != NULL && error == CL_SUCCESS && !device->host_memory) {
        call = "committing the buffer (clEnqueueFillBuffer)";
        error = commit(device, mem);
    }
    if (mem == NULL || error != CL_SUCCESS) {
        if (mem != NULL) clReleaseMemObject(mem);
        pthread_mutex_lock(&device->mutex);
        device->used_bytes -= size;
        pthread_mutex_unlock(&device->mutex);
        opencl_fail(status, device, "allocate", call, error);
        return;
    }
    *out_mem = mem;
}

void opencl_deallocate(void *handle, void *mem) {
    opencl_device_t *device = handle;
    size_t size = 0;
    clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    clReleaseMemObject(mem);
    pthread_mutex_lock(&device->mutex);
    device->used_bytes -= size;
    pthread_mutex_unlock(&device->mutex);
}

void opencl_memory_usage(void *handle, uint64_t *free_bytes, uint64_t *total_bytes) {
    opencl_device_t *device = handle;
    pthread_mutex_lock(&device->mutex);
    *free_bytes = device->memory_bytes - device->used_bytes;
    *total_bytes = device->memory_bytes;
    pthread_mutex_unlock(&device->mutex);
}
