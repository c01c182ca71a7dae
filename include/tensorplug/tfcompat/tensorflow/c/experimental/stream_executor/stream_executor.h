/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TensorFlow's StreamExecutor C API: how a PluggableDevice plug-in describes its platform,
 * devices, memory, streams and events. tensorplug's adapter (libtensorplug_tfcompat) is the
 * host: it allocates and zeroes every SE_/SP_ struct, sets struct_size, and calls
 * SE_InitPlugin, which the plug-in defines.
 *
 * The layout is TensorFlow's newest superset: SP_Platform with use_bfc_allocator and
 * force_memory_growth, SP_StreamExecutor with mem_zero, memset and memset32 before
 * host_callback. A source written for an older layout compiles unchanged and leaves those
 * members zero, which the host treats as absent.
 *
 * Naming: SE_ structs are filled by the host, SP_ structs by the plug-in; struct_size by both.
 */
#ifndef TENSORFLOW_C_EXPERIMENTAL_STREAM_EXECUTOR_STREAM_EXECUTOR_H_
#define TENSORFLOW_C_EXPERIMENTAL_STREAM_EXECUTOR_STREAM_EXECUTOR_H_

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_status.h"

/* TensorFlow never changed these, even when the structs changed: struct_size is what counts. */
#define SE_MAJOR 0
#define SE_MINOR 0
#define SE_PATCH 1

#ifdef __cplusplus
extern "C" {
#endif

/* The plug-in defines these structs (or never does, handing out NULL or casted handles). */
typedef struct SP_Stream_st *SP_Stream;
typedef struct SP_Event_st *SP_Event;
typedef struct SP_Timer_st *SP_Timer;

/* A host callback: its argument, and the status of the work it waited for. */
typedef void (*SE_StatusCallbackFn)(void *const, TF_Status *const);

typedef struct SP_TimerFns {
    size_t struct_size;
    void *ext;
    uint64_t (*nanoseconds)(SP_Timer timer);
} SP_TimerFns;

#define SP_TIMER_FNS_STRUCT_SIZE TF_OFFSET_OF_END(SP_TimerFns, nanoseconds)

/* The only SP_ struct without `ext`. */
typedef struct SP_AllocatorStats {
    size_t struct_size;
    int64_t num_allocs;
    int64_t bytes_in_use;
    int64_t peak_bytes_in_use;
    int64_t largest_alloc_size;
    int8_t has_bytes_limit;
    int64_t bytes_limit;
    int64_t bytes_reserved;
    int64_t peak_bytes_reserved;
    int8_t has_bytes_reservable_limit;
    int64_t bytes_reservable_limit;
    int64_t largest_free_block_bytes;
} SP_AllocatorStats;

#define SP_ALLOCATORSTATS_STRUCT_SIZE \
    TF_OFFSET_OF_END(SP_AllocatorStats, largest_free_block_bytes)

/* UNKNOWN and ERROR are both failures. */
typedef enum SE_EventStatus {
    SE_EVENT_UNKNOWN,
    SE_EVENT_ERROR,
    SE_EVENT_PENDING,
    SE_EVENT_COMPLETE
} SE_EventStatus;

/* One allocation. `opaque` is the plug-in's (the host assumes it addresses bytes linearly when
 * it points into the middle of an allocation); `payload` is the plug-in's too. */
typedef struct SP_DeviceMemoryBase {
    size_t struct_size;
    void *ext;
    void *opaque;
    uint64_t size;
    uint64_t payload;
} SP_DeviceMemoryBase;

#define SP_DEVICE_MEMORY_BASE_STRUCT_SIZE TF_OFFSET_OF_END(SP_DeviceMemoryBase, payload)

typedef struct SP_Device {
    size_t struct_size;
    void *ext;
    int32_t ordinal;
    void *device_handle;
    const char *hardware_name; /* optional, NUL-terminated */
    const char *device_vendor; /* optional */
    const char *pci_bus_id;    /* optional, "0000:00:02.1" */
} SP_Device;

#define SP_DEVICE_STRUCT_SIZE TF_OFFSET_OF_END(SP_Device, pci_bus_id)

typedef struct SE_CreateDeviceParams {
    size_t struct_size;
    void *ext;
    int32_t ordinal;
    SP_Device *device; /* allocated by the host, struct_size set; filled by the plug-in */
} SE_CreateDeviceParams;

#define SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE TF_OFFSET_OF_END(SE_CreateDeviceParams, device)

typedef struct SP_DeviceFns {
    size_t struct_size;
    void *ext;
    int32_t (*get_numa_node)(const SP_Device *device);       /* optional; < 0: unknown */
    int64_t (*get_memory_bandwidth)(const SP_Device *device); /* optional; bytes per second */
    double (*get_gflops)(const SP_Device *device);            /* optional */
} SP_DeviceFns;

#define SP_DEVICE_FNS_STRUCT_SIZE TF_OFFSET_OF_END(SP_DeviceFns, get_gflops)

typedef struct SE_CreateDeviceFnsParams {
    size_t struct_size;
    void *ext;
    SP_DeviceFns *device_fns;
} SE_CreateDeviceFnsParams;

#define SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE \
    TF_OFFSET_OF_END(SE_CreateDeviceFnsParams, device_fns)

/* What drives the devices of a platform. Members marked optional may stay NULL; every other
 * member is required, and a plug-in that leaves one NULL is refused. */
typedef struct SP_StreamExecutor {
    size_t struct_size;
    void *ext;

    /* Memory. allocate leaves mem->opaque NULL on failure; memory_space is 0. */
    void (*allocate)(const SP_Device *device, uint64_t size, int64_t memory_space,
                     SP_DeviceMemoryBase *mem);
    void (*deallocate)(const SP_Device *device, SP_DeviceMemoryBase *memory);
    void *(*host_memory_allocate)(const SP_Device *device, uint64_t size);
    void (*host_memory_deallocate)(const SP_Device *device, void *mem);
    void *(*unified_memory_allocate)(const SP_Device *device, uint64_t bytes); /* optional */
    void (*unified_memory_deallocate)(const SP_Device *device, void *location); /* optional */
    /* Both return false when the numbers are not known. */
    TF_Bool (*get_allocator_stats)(const SP_Device *device, SP_AllocatorStats *stats);
    TF_Bool (*device_memory_usage)(const SP_Device *device, int64_t *free, int64_t *total);

    /* Streams. */
    void (*create_stream)(const SP_Device *device, SP_Stream *stream, TF_Status *status);
    void (*destroy_stream)(const SP_Device *device, SP_Stream stream);
    void (*create_stream_dependency)(const SP_Device *device, SP_Stream dependent,
                                     SP_Stream other, TF_Status *status);
    void (*get_stream_status)(const SP_Device *device, SP_Stream stream, TF_Status *status);

    /* Events. */
    void (*create_event)(const SP_Device *device, SP_Event *event, TF_Status *status);
    void (*destroy_event)(const SP_Device *device, SP_Event event);
    SE_EventStatus (*get_event_status)(const SP_Device *device, SP_Event event);
    void (*record_event)(const SP_Device *device, SP_Stream stream, SP_Event event,
                         TF_Status *status);
    void (*wait_for_event)(const SP_Device *const device, SP_Stream stream, SP_Event event,
                           TF_Status *const status);

    /* Timers, optional. */
    void (*create_timer)(const SP_Device *device, SP_Timer *timer, TF_Status *status);
    void (*destroy_timer)(const SP_Device *device, SP_Timer timer);
    void (*start_timer)(const SP_Device *device, SP_Stream stream, SP_Timer timer,
                        TF_Status *status);
    void (*stop_timer)(const SP_Device *device, SP_Stream stream, SP_Timer timer,
                       TF_Status *status);

    /* Copies: the first three in stream order, the sync_ ones before they return. */
    void (*memcpy_dtoh)(const SP_Device *device, SP_Stream stream, void *host_dst,
                        const SP_DeviceMemoryBase *device_src, uint64_t size,
                        TF_Status *status);
    void (*memcpy_htod)(const SP_Device *device, SP_Stream stream,
                        SP_DeviceMemoryBase *device_dst, const void *host_src, uint64_t size,
                        TF_Status *status);
    void (*memcpy_dtod)(const SP_Device *device, SP_Stream stream,
                        SP_DeviceMemoryBase *device_dst, const SP_DeviceMemoryBase *device_src,
                        uint64_t size, TF_Status *status); /* optional here */
    void (*sync_memcpy_dtoh)(const SP_Device *device, void *host_dst,
                             const SP_DeviceMemoryBase *device_src, uint64_t size,
                             TF_Status *status);
    void (*sync_memcpy_htod)(const SP_Device *device, SP_DeviceMemoryBase *device_dst,
                             const void *host_src, uint64_t size, TF_Status *status);
    void (*sync_memcpy_dtod)(const SP_Device *device, SP_DeviceMemoryBase *device_dst,
                             const SP_DeviceMemoryBase *device_src, uint64_t size,
                             TF_Status *status); /* optional here */

    /* Waiting. */
    void (*block_host_for_event)(const SP_Device *device, SP_Event event, TF_Status *status);
    /* Optional: without it the host records an event and blocks on it. */
    void (*block_host_until_done)(const SP_Device *device, SP_Stream stream,
                                  TF_Status *status);
    void (*synchronize_all_activity)(const SP_Device *device, TF_Status *status);

    /* Filling memory in stream order; optional (newer layout). */
    void (*mem_zero)(const SP_Device *device, SP_Stream stream, SP_DeviceMemoryBase *location,
                     uint64_t size, TF_Status *status);
    void (*memset)(const SP_Device *device, SP_Stream stream, SP_DeviceMemoryBase *location,
                   uint8_t pattern, uint64_t size, TF_Status *status);
    void (*memset32)(const SP_Device *device, SP_Stream stream, SP_DeviceMemoryBase *location,
                     uint32_t pattern, uint64_t size, TF_Status *status);

    /* Runs callback_fn(callback_arg, status) once the stream's earlier work is done; false
     * when it cannot, and the host then waits for the stream and calls it itself. */
    TF_Bool (*host_callback)(const SP_Device *device, SP_Stream stream,
                             SE_StatusCallbackFn callback_fn, void *callback_arg);
} SP_StreamExecutor;

#define SP_STREAMEXECUTOR_STRUCT_SIZE TF_OFFSET_OF_END(SP_StreamExecutor, host_callback)

typedef struct SE_CreateStreamExecutorParams {
    size_t struct_size;
    void *ext;
    SP_StreamExecutor *stream_executor; /* allocated by the host, filled by the plug-in */
} SE_CreateStreamExecutorParams;

#define SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE \
    TF_OFFSET_OF_END(SE_CreateStreamExecutorParams, stream_executor)

typedef struct SP_Platform {
    size_t struct_size;
    void *ext;
    /* Both [A-Z][A-Z_]*, NUL-terminated, living as long as the plug-in: name is the platform
     * ("MY_DEVICE"), type the device type ("GPU"). tensorplug names devices by `type`. */
    const char *name;
    const char *type;
    TF_Bool supports_unified_memory;
    TF_Bool use_bfc_allocator;   /* tensorplug always serves memory through its BFC allocator */
    TF_Bool force_memory_growth; /* newest layout: start small and grow, whatever the user says */
} SP_Platform;

#define SP_PLATFORM_STRUCT_SIZE TF_OFFSET_OF_END(SP_Platform, force_memory_growth)

typedef struct SP_PlatformFns {
    size_t struct_size;
    void *ext;
    void (*get_device_count)(const SP_Platform *platform, int *device_count, TF_Status *status);
    void (*create_device)(const SP_Platform *platform, SE_CreateDeviceParams *params,
                          TF_Status *status);
    /* Frees what create_device made, not the SP_Device itself (the host's). */
    void (*destroy_device)(const SP_Platform *platform, SP_Device *device);
    void (*create_device_fns)(const SP_Platform *platform, SE_CreateDeviceFnsParams *params,
                              TF_Status *status);
    void (*destroy_device_fns)(const SP_Platform *platform, SP_DeviceFns *device_fns);
    void (*create_stream_executor)(const SP_Platform *platform,
                                   SE_CreateStreamExecutorParams *params, TF_Status *status);
    void (*destroy_stream_executor)(const SP_Platform *platform,
                                    SP_StreamExecutor *stream_executor);
    /* Optional in tensorplug. */
    void (*create_timer_fns)(const SP_Platform *platform, SP_TimerFns *timer,
                             TF_Status *status);
    void (*destroy_timer_fns)(const SP_Platform *platform, SP_TimerFns *timer_fns);
} SP_PlatformFns;

#define SP_PLATFORM_FNS_STRUCT_SIZE TF_OFFSET_OF_END(SP_PlatformFns, destroy_timer_fns)

typedef struct SE_PlatformRegistrationParams {
    size_t struct_size;
    void *ext;
    int32_t major_version;
    int32_t minor_version;
    int32_t patch_version;
    SP_Platform *platform;         /* allocated and zeroed by the host, filled by the plug-in */
    SP_PlatformFns *platform_fns;  /* likewise */
    void (*destroy_platform)(SP_Platform *platform);          /* set by the plug-in */
    void (*destroy_platform_fns)(SP_PlatformFns *platform_fns); /* set by the plug-in */
} SE_PlatformRegistrationParams;

#define SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE \
    TF_OFFSET_OF_END(SE_PlatformRegistrationParams, destroy_platform_fns)

/* Defined by the plug-in: the symbol by which tensorplug recognises a TensorFlow plug-in.
 * Exported whatever visibility the plug-in is compiled with. */
TF_CAPI_EXPORT void SE_InitPlugin(SE_PlatformRegistrationParams *params, TF_Status *status);

#ifdef __cplusplus
}
#endif

#endif
