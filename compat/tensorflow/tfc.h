/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of the TensorFlow adapter share. Nothing here is exported: the adapter's
 * exported names are TensorFlow's (TF_CAPI_EXPORT) and tp_tfcompat_entry. */
#ifndef TP_COMPAT_TENSORFLOW_TFC_H
#define TP_COMPAT_TENSORFLOW_TFC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/experimental/stream_executor/stream_executor.h"
#include "tensorflow/c/kernels.h"
#include "tensorplug/plugin.h"

/* ---- Values -------------------------------------------------------------------------------- */

struct TF_Status {
    TF_Code code;
    char *message; /* NULL: "" */
    struct tfc_payload *payloads;
};

/* Bytes shared by the tensors that view them (TF_TensorBitcastFrom). */
typedef struct tfc_buffer {
    atomic_int references;
    void *data;
    size_t length;
    /* NULL for memory the tensor does not own: device memory, a kernel's inputs and outputs. */
    void (*deallocator)(void *data, size_t length, void *arg);
    void *deallocator_arg;
} tfc_buffer_t;

struct TF_Tensor {
    TF_DataType dtype;
    int num_dims;
    int64_t *dims;
    tfc_buffer_t *buffer;
    bool on_device;   /* the data is an address in the plug-in's device memory */
    uint64_t payload; /* of the plug-in's allocation the data lies in, for its copies */
};

/* A tensor of `dtype` and `dims` over `data` that it does not own, in the device allocation
 * `allocation` (NULL: host memory); NULL when out of memory. */
TF_Tensor *tfc_tensor_view(TF_DataType dtype, const int64_t *dims, int num_dims, void *data,
                           size_t length, const SP_DeviceMemoryBase *allocation);
/* Sets `status` to `code` with a printf-style message. */
void tfc_status_printf(TF_Status *status, TF_Code code, const char *format, ...)
    TP_PRINTF_LIKE(3, 4);
/* Frees what a TF_Status held on the stack owns, leaving it TF_OK. */
void tfc_status_reset(TF_Status *status);
/* Passes a TensorFlow status on to the host's, prefixed with `what` (the plug-in function that
 * failed); returns whether it was TF_OK. Resets `tf_status`. */
bool tfc_status_to_host(TF_Status *tf_status, tp_plugin_status_t *status, const char *what);
/* TF_UNIMPLEMENTED naming `function`, for what the adapter declares but does not do yet. */
void tfc_unimplemented(TF_Status *status, const char *function, const char *why);

/* ---- Tables -------------------------------------------------------------------------------- */

/* tensorplug's dtype for TensorFlow's; TP_DTYPE_INVALID where tensorplug has none. */
tp_dtype_t tfc_dtype_to_tp(TF_DataType dtype);
/* TensorFlow's dtype for tensorplug's; 0 where TensorFlow has none. */
TF_DataType tfc_dtype_from_tp(tp_dtype_t dtype);
/* tensorplug's op for TensorFlow's op `name` when they agree on inputs and attributes; NULL
 * when tensorplug has no such op. */
const char *tfc_op_to_tp(const char *name);

/* ---- Platforms and devices ------------------------------------------------------------------ */

/* One TensorFlow plug-in: its platform as SE_InitPlugin filled it, and everything the adapter
 * made for it. Never freed: plug-ins stay loaded for the life of the process. */
typedef struct tfc_plugin {
    const char *path;
    void *library;
    const tp_host_api_t *host;
    tp_registrar_t *registrar;
    tp_plugin_status_t *host_status; /* the init's, while it runs */
    SE_PlatformRegistrationParams params;
    SP_Platform platform;
    SP_PlatformFns platform_fns;
    SP_DeviceFns device_fns;
    SP_StreamExecutor stream_executor;
    SP_TimerFns timer_fns;
    bool has_timer_fns;
    char type[32]; /* platform.type, checked */
    tp_device_type_def_t device_type;
} tfc_plugin_t;

/* A device the host opened (device_init): the plug-in's SP_Device, owned by the adapter. */
typedef struct tfc_device {
    tfc_plugin_t *plugin;
    SP_Device device;
} tfc_device_t;

/* tensorplug's memory handle: TensorFlow's allocation, kept whole for deallocate. */
typedef struct tfc_memory {
    SP_DeviceMemoryBase base;
} tfc_memory_t;

/* tensorplug's stream and event handles: TensorFlow plug-ins may hand out NULL ones. */
typedef struct tfc_stream {
    SP_Stream stream;
} tfc_stream_t;

/* Calls SE_InitPlugin as TensorFlow does and checks what it filled; on failure `status` says
 * why (naming the member at fault) and everything made is torn down in reverse. */
void tfc_platform_init(tfc_plugin_t *plugin, void (*init)(SE_PlatformRegistrationParams *,
                                                          TF_Status *),
                       TF_Status *status);
/* Undoes tfc_platform_init, in reverse order. */
void tfc_platform_teardown(tfc_plugin_t *plugin);
/* Fills plugin->device_type from the stream executor. */
void tfc_device_type_fill(tfc_plugin_t *plugin);
/* Calls fn(arg) once the work queued on `stream` so far is done: from the plug-in's
 * host_callback, or, where it declines, here after waiting for the stream. */
void tfc_after_stream(tfc_device_t *device, SP_Stream stream, void (*fn)(void *arg), void *arg,
                      tp_plugin_status_t *status);
/* Device memory of an allocation at `offset`, as the plug-in's copy functions take it. */
SP_DeviceMemoryBase tfc_memory_at(const tfc_memory_t *memory, uint64_t offset);

/* ---- Kernels ------------------------------------------------------------------------------- */

/* The plug-in whose SE_InitPlugin or TF_InitKernel is running; kernel builders register with
 * it. Plug-ins load one at a time. */
extern tfc_plugin_t *tfc_loading_plugin;
/* The host's function table, the same for every plug-in; set before any kernel can run. */
extern const tp_host_api_t *tfc_host;

/* A registered kernel builder, kept for the life of the process. */
typedef struct tfc_kernel {
    struct tfc_kernel *next;
    tfc_plugin_t *plugin;
    char *name;    /* the kernel's label */
    char *tf_op;   /* TensorFlow's op name ("AddV2") */
    void *(*create)(TF_OpKernelConstruction *);
    void (*compute)(void *, TF_OpKernelContext *);
    void (*destroy)(void *);
} tfc_kernel_t;

/* What a kernel's create_func is handed. */
struct TF_OpKernelConstruction {
    tp_kernel_context_t *context;
    tp_plugin_status_t *host_status; /* borrowed for the host calls; cleared after each */
    const tfc_kernel_t *kernel;
    TF_Status failure;
};

/* What a kernel's compute_func is handed. */
struct TF_OpKernelContext {
    tp_kernel_context_t *context;
    tp_plugin_status_t *host_status;
    const tfc_kernel_t *kernel;
    tfc_device_t *device;
    tfc_stream_t *stream;
    TF_Status failure;
    struct tfc_temp *temps; /* TF_AllocateTemp's, freed once the stream passes the kernel */
};

/* The native kernel functions that run a TensorFlow kernel (kernel_state: tfc_kernel_t). */
void *tfc_kernel_create(void *kernel_state, tp_kernel_context_t *context,
                        tp_plugin_status_t *status);
void tfc_kernel_compute(void *instance, tp_kernel_context_t *context,
                        tp_plugin_status_t *status);
void tfc_kernel_destroy(void *instance);

/* Whether the last host call on `host_status` succeeded; if not, clears it and sets `status`
 * to say that `function` failed on `what`. */
bool tfc_host_ok(tp_plugin_status_t *host_status, TF_Status *status, const char *function,
                 const char *what);

#endif
