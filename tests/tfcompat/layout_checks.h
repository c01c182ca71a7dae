/* SPDX-License-Identifier: Apache-2.0 */
/* The x86-64 layout of every struct of the TensorFlow compatibility headers, as TensorFlow's
 * own headers give it: a plug-in's source fills these structs member by member, and a member
 * out of place would be read by the adapter as another. Included by a C and a C++ file, so
 * that both dialects agree. */
#ifndef TP_TESTS_TFCOMPAT_LAYOUT_CHECKS_H
#define TP_TESTS_TFCOMPAT_LAYOUT_CHECKS_H

#include <stddef.h>

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/experimental/grappler/grappler.h"
#include "tensorflow/c/experimental/pluggable_profiler/pluggable_profiler.h"
#include "tensorflow/c/experimental/stream_executor/stream_executor.h"
#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"

#ifdef __cplusplus
#define LAYOUT_ASSERT(condition, what) static_assert(condition, what)
#else
#define LAYOUT_ASSERT(condition, what) _Static_assert(condition, what)
#endif

#if defined(__x86_64__) && defined(__LP64__)
#define AT(type, member, offset) \
    LAYOUT_ASSERT(offsetof(type, member) == (offset), #type "." #member " offset")
#define SIZE(type, bytes) LAYOUT_ASSERT(sizeof(type) == (bytes), "sizeof " #type)
#define END(macro, bytes) LAYOUT_ASSERT((macro) == (bytes), #macro)

SIZE(TF_Buffer, 24);
AT(TF_Buffer, length, 8);
AT(TF_Buffer, data_deallocator, 16);
SIZE(TF_StringView, 16);
AT(TF_StringView, len, 8);
SIZE(TF_AllocatorAttributes, 16);
AT(TF_AllocatorAttributes, on_host, 8);
END(TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE, 9);
SIZE(TF_InputRange_Args, 32);
AT(TF_InputRange_Args, priv, 8);
AT(TF_InputRange_Args, start, 16);
AT(TF_InputRange_Args, stop, 20);
AT(TF_InputRange_Args, status, 24);
END(TF_InputRange_Args_STRUCT_SIZE, 32);

SIZE(SP_TimerFns, 24);
AT(SP_TimerFns, ext, 8);
AT(SP_TimerFns, nanoseconds, 16);
END(SP_TIMER_FNS_STRUCT_SIZE, 24);

SIZE(SP_AllocatorStats, 96);
AT(SP_AllocatorStats, num_allocs, 8);
AT(SP_AllocatorStats, bytes_in_use, 16);
AT(SP_AllocatorStats, peak_bytes_in_use, 24);
AT(SP_AllocatorStats, largest_alloc_size, 32);
AT(SP_AllocatorStats, has_bytes_limit, 40);
AT(SP_AllocatorStats, bytes_limit, 48);
AT(SP_AllocatorStats, bytes_reserved, 56);
AT(SP_AllocatorStats, peak_bytes_reserved, 64);
AT(SP_AllocatorStats, has_bytes_reservable_limit, 72);
AT(SP_AllocatorStats, bytes_reservable_limit, 80);
AT(SP_AllocatorStats, largest_free_block_bytes, 88);
END(SP_ALLOCATORSTATS_STRUCT_SIZE, 96);

SIZE(SP_DeviceMemoryBase, 40);
AT(SP_DeviceMemoryBase, ext, 8);
AT(SP_DeviceMemoryBase, opaque, 16);
AT(SP_DeviceMemoryBase, size, 24);
AT(SP_DeviceMemoryBase, payload, 32);
END(SP_DEVICE_MEMORY_BASE_STRUCT_SIZE, 40);

SIZE(SP_Device, 56);
AT(SP_Device, ext, 8);
AT(SP_Device, ordinal, 16);
AT(SP_Device, device_handle, 24);
AT(SP_Device, hardware_name, 32);
AT(SP_Device, device_vendor, 40);
AT(SP_Device, pci_bus_id, 48);
END(SP_DEVICE_STRUCT_SIZE, 56);

SIZE(SE_CreateDeviceParams, 32);
AT(SE_CreateDeviceParams, ext, 8);
AT(SE_CreateDeviceParams, ordinal, 16);
AT(SE_CreateDeviceParams, device, 24);
END(SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE, 32);

SIZE(SP_DeviceFns, 40);
AT(SP_DeviceFns, get_numa_node, 16);
AT(SP_DeviceFns, get_memory_bandwidth, 24);
AT(SP_DeviceFns, get_gflops, 32);
END(SP_DEVICE_FNS_STRUCT_SIZE, 40);

SIZE(SE_CreateDeviceFnsParams, 24);
AT(SE_CreateDeviceFnsParams, device_fns, 16);
END(SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE, 24);

SIZE(SP_StreamExecutor, 288);
AT(SP_StreamExecutor, ext, 8);
AT(SP_StreamExecutor, allocate, 16);
AT(SP_StreamExecutor, deallocate, 24);
AT(SP_StreamExecutor, host_memory_allocate, 32);
AT(SP_StreamExecutor, host_memory_deallocate, 40);
AT(SP_StreamExecutor, unified_memory_allocate, 48);
AT(SP_StreamExecutor, unified_memory_deallocate, 56);
AT(SP_StreamExecutor, get_allocator_stats, 64);
AT(SP_StreamExecutor, device_memory_usage, 72);
AT(SP_StreamExecutor, create_stream, 80);
AT(SP_StreamExecutor, destroy_stream, 88);
AT(SP_StreamExecutor, create_stream_dependency, 96);
AT(SP_StreamExecutor, get_stream_status, 104);
AT(SP_StreamExecutor, create_event, 112);
AT(SP_StreamExecutor, destroy_event, 120);
AT(SP_StreamExecutor, get_event_status, 128);
AT(SP_StreamExecutor, record_event, 136);
AT(SP_StreamExecutor, wait_for_event, 144);
AT(SP_StreamExecutor, create_timer, 152);
AT(SP_StreamExecutor, destroy_timer, 160);
AT(SP_StreamExecutor, start_timer, 168);
AT(SP_StreamExecutor, stop_timer, 176);
AT(SP_StreamExecutor, memcpy_dtoh, 184);
AT(SP_StreamExecutor, memcpy_htod, 192);
AT(SP_StreamExecutor, memcpy_dtod, 200);
AT(SP_StreamExecutor, sync_memcpy_dtoh, 208);
AT(SP_StreamExecutor, sync_memcpy_htod, 216);
AT(SP_StreamExecutor, sync_memcpy_dtod, 224);
AT(SP_StreamExecutor, block_host_for_event, 232);
AT(SP_StreamExecutor, block_host_until_done, 240);
AT(SP_StreamExecutor, synchronize_all_activity, 248);
AT(SP_StreamExecutor, mem_zero, 256);
AT(SP_StreamExecutor, memset, 264);
AT(SP_StreamExecutor, memset32, 272);
AT(SP_StreamExecutor, host_callback, 280);
END(SP_STREAMEXECUTOR_STRUCT_SIZE, 288);

SIZE(SE_CreateStreamExecutorParams, 24);
AT(SE_CreateStreamExecutorParams, stream_executor, 16);
END(SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE, 24);

SIZE(SP_Platform, 40);
AT(SP_Platform, ext, 8);
AT(SP_Platform, name, 16);
AT(SP_Platform, type, 24);
AT(SP_Platform, supports_unified_memory, 32);
AT(SP_Platform, use_bfc_allocator, 33);
AT(SP_Platform, force_memory_growth, 34);
END(SP_PLATFORM_STRUCT_SIZE, 35);

SIZE(SP_PlatformFns, 88);
AT(SP_PlatformFns, get_device_count, 16);
AT(SP_PlatformFns, create_device, 24);
AT(SP_PlatformFns, destroy_device, 32);
AT(SP_PlatformFns, create_device_fns, 40);
AT(SP_PlatformFns, destroy_device_fns, 48);
AT(SP_PlatformFns, create_stream_executor, 56);
AT(SP_PlatformFns, destroy_stream_executor, 64);
AT(SP_PlatformFns, create_timer_fns, 72);
AT(SP_PlatformFns, destroy_timer_fns, 80);
END(SP_PLATFORM_FNS_STRUCT_SIZE, 88);

SIZE(SE_PlatformRegistrationParams, 64);
AT(SE_PlatformRegistrationParams, major_version, 16);
AT(SE_PlatformRegistrationParams, minor_version, 20);
AT(SE_PlatformRegistrationParams, patch_version, 24);
AT(SE_PlatformRegistrationParams, platform, 32);
AT(SE_PlatformRegistrationParams, platform_fns, 40);
AT(SE_PlatformRegistrationParams, destroy_platform, 48);
AT(SE_PlatformRegistrationParams, destroy_platform_fns, 56);
END(SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE, 64);

SIZE(TP_OptimizerConfigs, 88);
AT(TP_OptimizerConfigs, disable_model_pruning, 16);
AT(TP_OptimizerConfigs, layout_optimizer, 60);
AT(TP_OptimizerConfigs, remapping, 64);
AT(TP_OptimizerConfigs, scoped_allocator_optimization, 84);
END(TP_OPTIMIZER_CONFIGS_STRUCT_SIZE, 88);
SIZE(TP_Optimizer, 40);
AT(TP_Optimizer, create_func, 16);
AT(TP_Optimizer, optimize_func, 24);
AT(TP_Optimizer, destroy_func, 32);
END(TP_OPTIMIZER_STRUCT_SIZE, 40);
SIZE(TP_OptimizerRegistrationParams, 56);
AT(TP_OptimizerRegistrationParams, major_version, 16);
AT(TP_OptimizerRegistrationParams, patch_version, 24);
AT(TP_OptimizerRegistrationParams, device_type, 32);
AT(TP_OptimizerRegistrationParams, optimizer_configs, 40);
AT(TP_OptimizerRegistrationParams, optimizer, 48);
END(TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE, 56);

SIZE(TP_Profiler, 24);
AT(TP_Profiler, device_type, 16);
END(TP_PROFILER_STRUCT_SIZE, 24);
SIZE(TP_ProfilerFns, 40);
AT(TP_ProfilerFns, start, 16);
AT(TP_ProfilerFns, stop, 24);
AT(TP_ProfilerFns, collect_data_xspace, 32);
END(TP_PROFILER_FNS_STRUCT_SIZE, 40);
SIZE(TF_ProfilerRegistrationParams, 64);
AT(TF_ProfilerRegistrationParams, major_version, 16);
AT(TF_ProfilerRegistrationParams, profiler, 32);
AT(TF_ProfilerRegistrationParams, profiler_fns, 40);
AT(TF_ProfilerRegistrationParams, destroy_profiler, 48);
AT(TF_ProfilerRegistrationParams, destroy_profiler_fns, 56);
END(TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE, 64);

/* The numbers plug-ins put in these enums are TensorFlow's, not tensorplug's. */
LAYOUT_ASSERT(TF_UNAUTHENTICATED == 16 && TF_DATA_LOSS == 15 && TF_UNIMPLEMENTED == 12,
              "TF_Code numbers");
LAYOUT_ASSERT(TF_UINT8 == 4 && TF_INT64 == 9 && TF_BOOL == 10 && TF_HALF == 19 &&
                  TF_UINT64 == 23 && TF_UINT4 == 30,
              "TF_DataType numbers");
LAYOUT_ASSERT(SE_EVENT_UNKNOWN == 0 && SE_EVENT_COMPLETE == 3, "SE_EventStatus numbers");
LAYOUT_ASSERT(sizeof(TF_Bool) == 1, "TF_Bool is one byte");

#undef AT
#undef SIZE
#undef END
#endif

#endif
