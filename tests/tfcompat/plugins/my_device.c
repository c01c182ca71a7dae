/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A TensorFlow PluggableDevice plug-in written as a vendor writes one: against TensorFlow's C
 * API headers only (tensorplug's compatibility copies), never against plugin.h or the core.
 * Device MY_DEVICE has memory of its own: the addresses it hands out are tagged so that the
 * host cannot dereference them (a host that did would crash), and every copy checks that it
 * touches only live allocations, named with the payload allocate gave. Its streams are queues
 * with threads of their own (my_queue.c), so its copies, kernels and events happen after the
 * calls that queue them return. Its kernels are in my_kernels.c. Compiled with BROKEN_* defined, it is one of the
 * broken variants the loader refuses.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/c/experimental/grappler/grappler.h"
#include "tensorflow/c/experimental/stream_executor/stream_executor.h"
#include "tensorflow/c/kernels.h"
#include "my_device.h"
#ifdef BROKEN_UNRESOLVED_SYMBOL
#include "tensorflow/c/ops.h"
#endif

#define MEMORY_BYTES (64u << 20)
/* Device addresses are host addresses with this bit set: linear, but not dereferenceable. */
#define DEVICE_TAG ((uintptr_t)1 << 62)

/* ---- Device memory ------------------------------------------------------------------------ */

typedef struct allocation {
    struct allocation *next;
    char *host;
    uint64_t size;
    uint64_t id; /* the payload of its SP_DeviceMemoryBase */
} allocation_t;

static pthread_mutex_t memory_lock = PTHREAD_MUTEX_INITIALIZER;
static allocation_t *allocations;
static int64_t live_allocations, bytes_in_use;
static uint64_t last_id;

/* For the test program (dlsym): allocations the device holds now. */
__attribute__((visibility("default"))) int64_t my_device_live_allocations(void);
int64_t my_device_live_allocations(void) {
    pthread_mutex_lock(&memory_lock);
    int64_t count = live_allocations;
    pthread_mutex_unlock(&memory_lock);
    return count;
}

/* The allocation holding `size` bytes at device address `address`, or NULL. Called locked. */
static allocation_t *allocation_at(const void *address, uint64_t size) {
    uintptr_t tagged = (uintptr_t)address;
    if ((tagged & DEVICE_TAG) == 0) return NULL;
    char *host = (char *)(tagged & ~DEVICE_TAG);
    for (allocation_t *a = allocations; a != NULL; a = a->next)
        if (host >= a->host && host + size <= a->host + a->size) return a;
    return NULL;
}

char *my_device_host_address(const void *address, uint64_t size) {
    pthread_mutex_lock(&memory_lock);
    allocation_t *a = allocation_at(address, size);
    pthread_mutex_unlock(&memory_lock);
    return a == NULL ? NULL : (char *)((uintptr_t)address & ~DEVICE_TAG);
}

/* The same for memory the host names by SP_DeviceMemoryBase: its payload must be the one
 * allocate gave, which the host keeps for the plug-in. */
static char *memory_address(const SP_DeviceMemoryBase *memory, uint64_t size) {
    pthread_mutex_lock(&memory_lock);
    allocation_t *a = allocation_at(memory->opaque, size);
    int ok = a != NULL && a->id == memory->payload;
    pthread_mutex_unlock(&memory_lock);
    return ok ? (char *)((uintptr_t)memory->opaque & ~DEVICE_TAG) : NULL;
}

static void *device_address(char *host) { return (void *)((uintptr_t)host | DEVICE_TAG); }

static void allocate(const SP_Device *device, uint64_t size, int64_t memory_space,
                     SP_DeviceMemoryBase *mem) {
    (void)device;
    (void)memory_space;
    mem->struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
    mem->opaque = NULL;
    allocation_t *a = malloc(sizeof *a);
    char *host = a != NULL && size <= MEMORY_BYTES ? malloc(size) : NULL;
    if (host == NULL) {
        free(a);
        return;
    }
    a->host = host;
    a->size = size;
    pthread_mutex_lock(&memory_lock);
    a->id = ++last_id;
    mem->payload = a->id;
    a->next = allocations;
    allocations = a;
    live_allocations++;
    bytes_in_use += (int64_t)size;
    pthread_mutex_unlock(&memory_lock);
    mem->opaque = device_address(host);
    mem->size = size;
}

static void deallocate(const SP_Device *device, SP_DeviceMemoryBase *memory) {
    (void)device;
    if (memory->opaque == NULL) return;
    char *host = (char *)((uintptr_t)memory->opaque & ~DEVICE_TAG);
    /* The payload, too, must be allocate's: the host hands the whole struct back. */
    pthread_mutex_lock(&memory_lock);
    for (allocation_t **link = &allocations; *link != NULL; link = &(*link)->next) {
        if ((*link)->host == host && (*link)->id == memory->payload) {
            allocation_t *a = *link;
            *link = a->next;
            live_allocations--;
            bytes_in_use -= (int64_t)a->size;
            free(a->host);
            free(a);
            break;
        }
    }
    pthread_mutex_unlock(&memory_lock);
}

static void *host_memory_allocate(const SP_Device *device, uint64_t size) {
    (void)device;
    return malloc(size);
}

static void host_memory_deallocate(const SP_Device *device, void *mem) {
    (void)device;
    free(mem);
}

static TF_Bool get_allocator_stats(const SP_Device *device, SP_AllocatorStats *stats) {
    (void)device;
    (void)stats;
    return 0;
}

static TF_Bool device_memory_usage(const SP_Device *device, int64_t *free_bytes,
                                   int64_t *total_bytes) {
    (void)device;
    pthread_mutex_lock(&memory_lock);
    *free_bytes = MEMORY_BYTES - bytes_in_use;
    pthread_mutex_unlock(&memory_lock);
    *total_bytes = MEMORY_BYTES;
    return 1;
}

/* ---- Streams and events ------------------------------------------------------------------- */

static void create_stream(const SP_Device *device, SP_Stream *stream, TF_Status *status) {
    (void)device;
    *stream = my_stream_create();
    if (*stream != NULL && !my_streams_add(*stream)) {
        my_stream_destroy(*stream);
        *stream = NULL;
    }
    if (*stream == NULL)
        TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "no memory or thread for a stream");
    else
        TF_SetStatus(status, TF_OK, "");
}

static void destroy_stream(const SP_Device *device, SP_Stream stream) {
    (void)device;
    my_streams_remove(stream);
    my_stream_destroy(stream);
}

static void create_stream_dependency(const SP_Device *device, SP_Stream dependent,
                                     SP_Stream other, TF_Status *status) {
    (void)device, (void)dependent;
    my_stream_wait(other);
    TF_SetStatus(status, TF_OK, "");
}

static void get_stream_status(const SP_Device *device, SP_Stream stream, TF_Status *status) {
    (void)device;
    if (!my_stream_is_mine(stream))
        TF_SetStatus(status, TF_INTERNAL, "not a stream of " DEVICE_TYPE);
    else
        TF_SetStatus(status, TF_OK, "");
}

/* An event is pending from its record until its stream reaches it. */
static pthread_mutex_t event_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t event_changed = PTHREAD_COND_INITIALIZER;

struct SP_Event_st {
    SE_EventStatus state;
};

static void create_event(const SP_Device *device, SP_Event *event, TF_Status *status) {
    (void)device;
    *event = calloc(1, sizeof **event);
    if (*event == NULL) {
        TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "no memory for an event");
        return;
    }
    (*event)->state = SE_EVENT_COMPLETE; /* nothing to wait for before it is recorded */
    TF_SetStatus(status, TF_OK, "");
}

static void destroy_event(const SP_Device *device, SP_Event event) {
    (void)device;
    free(event);
}

static SE_EventStatus get_event_status(const SP_Device *device, SP_Event event) {
    (void)device;
    pthread_mutex_lock(&event_lock);
    SE_EventStatus state = event->state;
    pthread_mutex_unlock(&event_lock);
    return state;
}

static void complete_event(void *arg) {
    SP_Event event = arg;
    pthread_mutex_lock(&event_lock);
    event->state = SE_EVENT_COMPLETE;
    pthread_cond_broadcast(&event_changed);
    pthread_mutex_unlock(&event_lock);
}

static void await_event(void *arg) {
    SP_Event event = arg;
    pthread_mutex_lock(&event_lock);
    while (event->state == SE_EVENT_PENDING) pthread_cond_wait(&event_changed, &event_lock);
    pthread_mutex_unlock(&event_lock);
}

static void record_event(const SP_Device *device, SP_Stream stream, SP_Event event,
                         TF_Status *status) {
    (void)device;
    pthread_mutex_lock(&event_lock);
    SE_EventStatus before = event->state;
    event->state = SE_EVENT_PENDING;
    pthread_mutex_unlock(&event_lock);
    if (!my_stream_enqueue(stream, complete_event, event)) {
        pthread_mutex_lock(&event_lock);
        event->state = before;
        pthread_mutex_unlock(&event_lock);
        TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "no memory to record an event");
        return;
    }
    TF_SetStatus(status, TF_OK, "");
}

static void wait_for_event(const SP_Device *const device, SP_Stream stream, SP_Event event,
                           TF_Status *const status) {
    (void)device;
    if (!my_stream_enqueue(stream, await_event, event))
        TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "no memory to wait for an event");
    else
        TF_SetStatus(status, TF_OK, "");
}

static void block_host_for_event(const SP_Device *device, SP_Event event, TF_Status *status) {
    (void)device;
    await_event(event);
    TF_SetStatus(status, TF_OK, "");
}

static void block_host_until_done(const SP_Device *device, SP_Stream stream, TF_Status *status) {
    (void)device;
    my_stream_wait(stream);
    TF_SetStatus(status, TF_OK, "");
}

static void synchronize_all_activity(const SP_Device *device, TF_Status *status) {
    (void)device;
    my_streams_wait_all();
    TF_SetStatus(status, TF_OK, "");
}

typedef struct callback {
    SE_StatusCallbackFn fn;
    void *arg;
} callback_t;

static void run_callback(void *opaque) {
    callback_t *callback = opaque;
    TF_Status *status = TF_NewStatus();
    callback->fn(callback->arg, status);
    TF_DeleteStatus(status);
    free(callback);
}

static TF_Bool host_callback(const SP_Device *device, SP_Stream stream,
                             SE_StatusCallbackFn callback_fn, void *callback_arg) {
    (void)device;
    callback_t *callback = malloc(sizeof *callback);
    if (callback == NULL) return 0;
    callback->fn = callback_fn;
    callback->arg = callback_arg;
    if (!my_stream_enqueue(stream, run_callback, callback)) {
        free(callback);
        return 0;
    }
    return 1;
}

/* ---- Copies: the addresses are checked when queued, the bytes move on the stream ---------- */

typedef struct copy {
    void *dst;
    const void *src;
    uint64_t size;
} copy_t;

static void run_copy(void *opaque) {
    copy_t *copy = opaque;
    memcpy(copy->dst, copy->src, copy->size);
    free(copy);
}

static void copy_on(SP_Stream stream, void *dst, const void *src, uint64_t size,
                    TF_Status *status) {
    if (dst == NULL || src == NULL) {
        TF_SetStatus(status, TF_INVALID_ARGUMENT, "a copy outside " DEVICE_TYPE "'s memory");
        return;
    }
    copy_t *copy = malloc(sizeof *copy);
    if (copy != NULL) *copy = (copy_t){dst, src, size};
    if (copy == NULL || !my_stream_enqueue(stream, run_copy, copy)) {
        free(copy);
        TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "no memory to queue a copy");
        return;
    }
    TF_SetStatus(status, TF_OK, "");
}

static void copy_now(void *dst, const void *src, uint64_t size, TF_Status *status) {
    if (dst == NULL || src == NULL) {
        TF_SetStatus(status, TF_INVALID_ARGUMENT, "a copy outside " DEVICE_TYPE "'s memory");
        return;
    }
    /* The sync copies wait for no stream: TensorFlow calls them only for memory no queued
     * work uses. */
    memcpy(dst, src, size);
    TF_SetStatus(status, TF_OK, "");
}

static void sync_memcpy_dtoh(const SP_Device *device, void *host_dst,
                             const SP_DeviceMemoryBase *device_src, uint64_t size,
                             TF_Status *status) {
    (void)device;
    copy_now(host_dst, memory_address(device_src, size), size, status);
}

static void sync_memcpy_htod(const SP_Device *device, SP_DeviceMemoryBase *device_dst,
                             const void *host_src, uint64_t size, TF_Status *status) {
    (void)device;
    copy_now(memory_address(device_dst, size), host_src, size, status);
}

static void sync_memcpy_dtod(const SP_Device *device, SP_DeviceMemoryBase *device_dst,
                             const SP_DeviceMemoryBase *device_src, uint64_t size,
                             TF_Status *status) {
    (void)device;
    copy_now(memory_address(device_dst, size),
             memory_address(device_src, size), size, status);
}

static void memcpy_dtoh(const SP_Device *device, SP_Stream stream, void *host_dst,
                        const SP_DeviceMemoryBase *device_src, uint64_t size, TF_Status *status) {
    (void)device;
    copy_on(stream, host_dst, memory_address(device_src, size), size, status);
}

static void memcpy_htod(const SP_Device *device, SP_Stream stream,
                        SP_DeviceMemoryBase *device_dst, const void *host_src, uint64_t size,
                        TF_Status *status) {
    (void)device;
    copy_on(stream, memory_address(device_dst, size), host_src, size, status);
}

static void memcpy_dtod(const SP_Device *device, SP_Stream stream,
                        SP_DeviceMemoryBase *device_dst, const SP_DeviceMemoryBase *device_src,
                        uint64_t size, TF_Status *status) {
    (void)device;
    copy_on(stream, memory_address(device_dst, size),
            memory_address(device_src, size), size, status);
}

/* ---- Platform ----------------------------------------------------------------------------- */

static void get_device_count(const SP_Platform *platform, int *device_count, TF_Status *status) {
    (void)platform;
    *device_count = 1;
    TF_SetStatus(status, TF_OK, "");
}

static void create_device(const SP_Platform *platform, SE_CreateDeviceParams *params,
                          TF_Status *status) {
    (void)platform;
    params->device->struct_size = SP_DEVICE_STRUCT_SIZE;
    params->device->ordinal = params->ordinal;
    params->device->device_handle = NULL;
    params->device->hardware_name = "My Device (tensorplug tfcompat test)";
    params->device->device_vendor = "tensorplug tests";
    TF_SetStatus(status, TF_OK, "");
}

static void destroy_device(const SP_Platform *platform, SP_Device *device) {
    (void)platform;
    device->device_handle = NULL;
}

static void create_device_fns(const SP_Platform *platform, SE_CreateDeviceFnsParams *params,
                              TF_Status *status) {
    (void)platform;
    params->device_fns->struct_size = SP_DEVICE_FNS_STRUCT_SIZE;
    TF_SetStatus(status, TF_OK, "");
}

static void destroy_device_fns(const SP_Platform *platform, SP_DeviceFns *device_fns) {
    (void)platform, (void)device_fns;
}

static void create_stream_executor(const SP_Platform *platform,
                                   SE_CreateStreamExecutorParams *params, TF_Status *status) {
    (void)platform;
    SP_StreamExecutor *se = params->stream_executor;
    se->struct_size = SP_STREAMEXECUTOR_STRUCT_SIZE;
    se->allocate = allocate;
    se->deallocate = deallocate;
    se->host_memory_allocate = host_memory_allocate;
    se->host_memory_deallocate = host_memory_deallocate;
    se->get_allocator_stats = get_allocator_stats;
    se->device_memory_usage = device_memory_usage;
    se->create_stream = create_stream;
    se->destroy_stream = destroy_stream;
    se->create_stream_dependency = create_stream_dependency;
    se->get_stream_status = get_stream_status;
    se->create_event = create_event;
    se->destroy_event = destroy_event;
    se->get_event_status = get_event_status;
    se->record_event = record_event;
    se->wait_for_event = wait_for_event;
    se->memcpy_dtoh = memcpy_dtoh;
    se->memcpy_htod = memcpy_htod;
    se->memcpy_dtod = memcpy_dtod;
    se->sync_memcpy_dtoh = sync_memcpy_dtoh;
    se->sync_memcpy_htod = sync_memcpy_htod;
    se->sync_memcpy_dtod = sync_memcpy_dtod;
    se->block_host_for_event = block_host_for_event;
    se->block_host_until_done = block_host_until_done;
    se->synchronize_all_activity = synchronize_all_activity;
    se->host_callback = host_callback;
#ifdef BROKEN_MISSING_CALLBACK
    se->memcpy_dtoh = NULL;
#endif
#ifdef BROKEN_ZERO_STRUCT_SIZE
    se->struct_size = 0;
#endif
    TF_SetStatus(status, TF_OK, "");
}

static void destroy_stream_executor(const SP_Platform *platform, SP_StreamExecutor *se) {
    (void)platform, (void)se;
}

static void destroy_platform(SP_Platform *platform) { (void)platform; }

static void destroy_platform_fns(SP_PlatformFns *platform_fns) { (void)platform_fns; }

void SE_InitPlugin(SE_PlatformRegistrationParams *params, TF_Status *status) {
    params->platform->struct_size = SP_PLATFORM_STRUCT_SIZE;
    params->platform->name = DEVICE_TYPE;
#ifdef BROKEN_BAD_TYPE_NAME
    params->platform->type = "my device";
#else
    params->platform->type = DEVICE_TYPE;
#endif
    params->platform_fns->get_device_count = get_device_count;
    params->platform_fns->create_device = create_device;
    params->platform_fns->destroy_device = destroy_device;
    params->platform_fns->create_device_fns = create_device_fns;
    params->platform_fns->destroy_device_fns = destroy_device_fns;
    params->platform_fns->create_stream_executor = create_stream_executor;
    params->platform_fns->destroy_stream_executor = destroy_stream_executor;
    params->destroy_platform = destroy_platform;
    params->destroy_platform_fns = destroy_platform_fns;
#ifdef BROKEN_UNRESOLVED_SYMBOL
    /* A function of TensorFlow's op API, which tensorplug's adapter does not provide. */
    TF_DeleteOpDefinitionBuilder(TF_NewOpDefinitionBuilder("MyOp"));
#endif
    TF_SetStatus(status, TF_OK, "");
}
