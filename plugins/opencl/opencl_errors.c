/* SPDX-License-Identifier: Apache-2.0 */
/* OpenCL error codes as statuses: every failing OpenCL call is reported by the call's name,
 * the device and the error's name, which is what a user can look up. */
#include <stdio.h>

#include "opencl_device.h"

#define NAMED(code) {code, #code}
static const struct {
    cl_int code;
    const char *name;
} error_names[] = {
    NAMED(CL_DEVICE_NOT_FOUND),
    NAMED(CL_DEVICE_NOT_AVAILABLE),
    NAMED(CL_COMPILER_NOT_AVAILABLE),
    NAMED(CL_MEM_OBJECT_ALLOCATION_FAILURE),
    NAMED(CL_OUT_OF_RESOURCES),
    NAMED(CL_OUT_OF_HOST_MEMORY),
    NAMED(CL_PROFILING_INFO_NOT_AVAILABLE),
    NAMED(CL_MEM_COPY_OVERLAP),
    NAMED(CL_IMAGE_FORMAT_MISMATCH),
    NAMED(CL_IMAGE_FORMAT_NOT_SUPPORTED),
    NAMED(CL_BUILD_PROGRAM_FAILURE),
    NAMED(CL_MAP_FAILURE),
    NAMED(CL_MISALIGNED_SUB_BUFFER_OFFSET),
    NAMED(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
    NAMED(CL_COMPILE_PROGRAM_FAILURE),
    NAMED(CL_LINKER_NOT_AVAILABLE),
    NAMED(CL_LINK_PROGRAM_FAILURE),
    NAMED(CL_DEVICE_PARTITION_FAILED),
    NAMED(CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
    NAMED(CL_INVALID_VALUE),
    NAMED(CL_INVALID_DEVICE_TYPE),
    NAMED(CL_INVALID_PLATFORM),
    NAMED(CL_INVALID_DEVICE),
    NAMED(CL_INVALID_CONTEXT),
    NAMED(CL_INVALID_QUEUE_PROPERTIES),
    NAMED(CL_INVALID_COMMAND_QUEUE),
    NAMED(CL_INVALID_HOST_PTR),
    NAMED(CL_INVALID_MEM_OBJECT),
    NAMED(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR),
    NAMED(CL_INVALID_IMAGE_SIZE),
    NAMED(CL_INVALID_SAMPLER),
    NAMED(CL_INVALID_BINARY),
    NAMED(CL_INVALID_BUILD_OPTIONS),
    NAMED(CL_INVALID_PROGRAM),
    NAMED(CL_INVALID_PROGRAM_EXECUTABLE),
    NAMED(CL_INVALID_KERNEL_NAME),
    NAMED(CL_INVALID_KERNEL_DEFINITION),
    NAMED(CL_INVALID_KERNEL),
    NAMED(CL_INVALID_ARG_INDEX),
    NAMED(CL_INVALID_ARG_VALUE),
    NAMED(CL_INVALID_ARG_SIZE),
    NAMED(CL_INVALID_KERNEL_ARGS),
    NAMED(CL_INVALID_WORK_DIMENSION),
    NAMED(CL_INVALID_WORK_GROUP_SIZE),
    NAMED(CL_INVALID_WORK_ITEM_SIZE),
    NAMED(CL_INVALID_GLOBAL_OFFSET),
    NAMED(CL_INVALID_EVENT_WAIT_LIST),
    NAMED(CL_INVALID_EVENT),
    NAMED(CL_INVALID_OPERATION),
    NAMED(CL_INVALID_GL_OBJECT),
    NAMED(CL_INVALID_BUFFER_SIZE),
    NAMED(CL_INVALID_MIP_LEVEL),
    NAMED(CL_INVALID_GLOBAL_WORK_SIZE),
    NAMED(CL_INVALID_PROPERTY),
    NAMED(CL_INVALID_IMAGE_DESCRIPTOR),
    NAMED(CL_INVALID_COMPILER_OPTIONS),
    NAMED(CL_INVALID_LINKER_OPTIONS),
    NAMED(CL_INVALID_DEVICE_PARTITION_COUNT),
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
};

const char *opencl_error_name(cl_int code, char *buffer, size_t capacity) {
    for (size_t i = 0; i < sizeof error_names / sizeof *error_names; i++)
        if (error_names[i].code == code) return error_names[i].name;
    snprintf(buffer, capacity, "OpenCL error %d", (int)code);
    return buffer;
}

/* Exhausted resources are the caller's to retry or shrink; anything else is a fault. */
static tp_code_t code_of(cl_int code) {
    switch (code) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY: return TP_RESOURCE_EXHAUSTED;
    default: return TP_INTERNAL;
    }
}

void opencl_fail(tp_plugin_status_t *status, const opencl_device_t *device, const char *what,
                 const char *call, cl_int code) {
    char buffer[32];
    opencl_host->status_set(status, code_of(code), "%s on GPU:%d (%s): %s failed: %s", what,
                            (int)device->ordinal, device->name, call,
                            opencl_error_name(code, buffer, sizeof buffer));
}
