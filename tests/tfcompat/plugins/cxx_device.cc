/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A TensorFlow plug-in in C++, as most are, against the compatibility headers only. It does
 * what TensorFlow's own sample plug-in does: NULL streams and events, events always complete,
 * a host_callback that declines, no block_host_until_done, device memory from the heap. Device
 * type CXX_DEVICE; one kernel, Relu on floats; a profiler, which tensorplug reports as not
 * supported and loads the plug-in without.
 */
#include <cstdlib>
#include <cstring>
#include <new>

#include "tensorflow/c/experimental/pluggable_profiler/pluggable_profiler.h"
#include "tensorflow/c/experimental/stream_executor/stream_executor.h"
#include "tensorflow/c/kernels.h"

namespace {

constexpr char kDeviceType[] = "CXX_DEVICE";

void ok(TF_Status *status) { TF_SetStatus(status, TF_Code::TF_OK, ""); }

void allocate(const SP_Device *, uint64_t size, int64_t, SP_DeviceMemoryBase *mem) {
    mem->struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
    mem->opaque = std::malloc(size);
    mem->size = size;
}
void deallocate(const SP_Device *, SP_DeviceMemoryBase *mem) { std::free(mem->opaque); }
void *host_allocate(const SP_Device *, uint64_t size) { return std::malloc(size); }
void host_deallocate(const SP_Device *, void *mem) { std::free(mem); }
TF_Bool allocator_stats(const SP_Device *, SP_AllocatorStats *) { return false; }
TF_Bool memory_usage(const SP_Device *, int64_t *free_bytes, int64_t *total_bytes) {
    *free_bytes = *total_bytes = int64_t{32} << 20;
    return true;
}
void create_stream(const SP_Device *, SP_Stream *stream, TF_Status *status) {
    *stream = nullptr;
    ok(status);
}
void destroy_stream(const SP_Device *, SP_Stream) {}
void stream_dependency(const SP_Device *, SP_Stream, SP_Stream, TF_Status *status) { ok(status); }
void stream_status(const SP_Device *, SP_Stream, TF_Status *status) { ok(status); }
void create_event(const SP_Device *, SP_Event *event, TF_Status *status) {
    *event = nullptr;
    ok(status);
}
void destroy_event(const SP_Device *, SP_Event) {}
SE_EventStatus event_status(const SP_Device *, SP_Event) { return SE_EVENT_COMPLETE; }
void record_event(const SP_Device *, SP_Stream, SP_Event, TF_Status *status) { ok(status); }
void wait_event(const SP_Device *const, SP_Stream, SP_Event, TF_Status *const status) {
    ok(status);
}
void dtoh(const SP_Device *, SP_Stream, void *dst, const SP_DeviceMemoryBase *src, uint64_t size,
          TF_Status *status) {
    std::memcpy(dst, src->opaque, size);
    ok(status);
}
void htod(const SP_Device *, SP_Stream, SP_DeviceMemoryBase *dst, const void *src, uint64_t size,
          TF_Status *status) {
    std::memcpy(dst->opaque, src, size);
    ok(status);
}
void sync_dtoh(const SP_Device *device, void *dst, const SP_DeviceMemoryBase *src,
               uint64_t size, TF_Status *status) {
    dtoh(device, nullptr, dst, src, size, status);
}
void sync_htod(const SP_Device *device, SP_DeviceMemoryBase *dst, const void *src,
               uint64_t size, TF_Status *status) {
    htod(device, nullptr, dst, src, size, status);
}
void block_for_event(const SP_Device *, SP_Event, TF_Status *status) { ok(status); }
void synchronize(const SP_Device *, TF_Status *status) { ok(status); }
TF_Bool host_callback(const SP_Device *, SP_Stream, SE_StatusCallbackFn, void *) {
    return false;
}

void get_device_count(const SP_Platform *, int *count, TF_Status *status) {
    *count = 1;
    ok(status);
}
void create_device(const SP_Platform *, SE_CreateDeviceParams *params, TF_Status *status) {
    params->device->struct_size = SP_DEVICE_STRUCT_SIZE;
    params->device->ordinal = params->ordinal;
    params->device->hardware_name = "C++ test device";
    ok(status);
}
void destroy_device(const SP_Platform *, SP_Device *) {}
void create_device_fns(const SP_Platform *, SE_CreateDeviceFnsParams *params, TF_Status *status) {
    params->device_fns->struct_size = SP_DEVICE_FNS_STRUCT_SIZE;
    ok(status);
}
void destroy_device_fns(const SP_Platform *, SP_DeviceFns *) {}
void create_stream_executor(const SP_Platform *, SE_CreateStreamExecutorParams *params,
                            TF_Status *status) {
    SP_StreamExecutor &se = *params->stream_executor;
    se.struct_size = SP_STREAMEXECUTOR_STRUCT_SIZE;
    se.allocate = allocate;
    se.deallocate = deallocate;
    se.host_memory_allocate = host_allocate;
    se.host_memory_deallocate = host_deallocate;
    se.get_allocator_stats = allocator_stats;
    se.device_memory_usage = memory_usage;
    se.create_stream = create_stream;
    se.destroy_stream = destroy_stream;
    se.create_stream_dependency = stream_dependency;
    se.get_stream_status = stream_status;
    se.create_event = create_event;
    se.destroy_event = destroy_event;
    se.get_event_status = event_status;
    se.record_event = record_event;
    se.wait_for_event = wait_event;
    se.memcpy_dtoh = dtoh;
    se.memcpy_htod = htod;
    se.sync_memcpy_dtoh = sync_dtoh;
    se.sync_memcpy_htod = sync_htod;
    se.block_host_for_event = block_for_event;
    se.synchronize_all_activity = synchronize;
    se.host_callback = host_callback;
    ok(status);
}
void destroy_stream_executor(const SP_Platform *, SP_StreamExecutor *) {}
void destroy_platform(SP_Platform *) {}
void destroy_platform_fns(SP_PlatformFns *) {}

struct Relu {
    int runs = 0;
};

void *relu_create(TF_OpKernelConstruction *) { return new (std::nothrow) Relu; }

void relu_compute(void *kernel, TF_OpKernelContext *ctx) {
    static_cast<Relu *>(kernel)->runs++;
    TF_Status *status = TF_NewStatus();
    TF_Tensor *x = nullptr;
    TF_GetInput(ctx, 0, &x, status);
    TF_Tensor *y = nullptr;
    if (TF_GetCode(status) == TF_Code::TF_OK) {
        int64_t dims[8];
        const int rank = TF_NumDims(x);
        for (int d = 0; d < rank && d < 8; d++) dims[d] = TF_Dim(x, d);
        y = TF_AllocateOutput(ctx, 0, TF_DataType::TF_FLOAT, dims, rank, TF_TensorByteSize(x),
                              status);
    }
    if (TF_GetCode(status) == TF_Code::TF_OK) {
        const float *in = static_cast<const float *>(TF_TensorData(x));
        float *out = static_cast<float *>(TF_TensorData(y));
        for (int64_t i = 0, n = TF_TensorElementCount(x); i < n; i++)
            out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    } else {
        TF_OpKernelContext_Failure(ctx, status);
    }
    TF_DeleteTensor(x);
    TF_DeleteTensor(y);
    TF_DeleteStatus(status);
}

void relu_delete(void *kernel) { delete static_cast<Relu *>(kernel); }

} // namespace

void SE_InitPlugin(SE_PlatformRegistrationParams *params, TF_Status *status) {
    params->platform->struct_size = SP_PLATFORM_STRUCT_SIZE;
    params->platform->name = kDeviceType;
    params->platform->type = kDeviceType;
    SP_PlatformFns &fns = *params->platform_fns;
    fns.get_device_count = get_device_count;
    fns.create_device = create_device;
    fns.destroy_device = destroy_device;
    fns.create_device_fns = create_device_fns;
    fns.destroy_device_fns = destroy_device_fns;
    fns.create_stream_executor = create_stream_executor;
    fns.destroy_stream_executor = destroy_stream_executor;
    params->destroy_platform = destroy_platform;
    params->destroy_platform_fns = destroy_platform_fns;
    ok(status);
}

void TF_InitKernel() {
    TF_Status *status = TF_NewStatus();
    TF_KernelBuilder *builder =
        TF_NewKernelBuilder("Relu", kDeviceType, relu_create, relu_compute, relu_delete);
    TF_KernelBuilder_TypeConstraint(builder, "T", TF_DataType::TF_FLOAT, status);
    if (TF_GetCode(status) == TF_Code::TF_OK) TF_RegisterKernelBuilder("ReluOp", builder, status);
    else TF_DeleteKernelBuilder(builder);
    TF_DeleteStatus(status);
}

void TF_InitProfiler(TF_ProfilerRegistrationParams *params, TF_Status *status) {
    params->profiler->device_type = kDeviceType;
    ok(status);
}
