/* SPDX-License-Identifier: Apache-2.0 */
/* What the OpenCL plug-in's files share: its devices, streams and programs, the launch of a
 * kernel, and the helpers that turn OpenCL's error codes into statuses. */
#ifndef TENSORPLUG_OPENCL_DEVICE_H
#define TENSORPLUG_OPENCL_DEVICE_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opencl_sources.h"
#include "tensorplug/plugin.h"

extern const tp_host_api_t *opencl_host;

/* The most kernel names the plug-in's programs have, on every device alike. */
#define OPENCL_MAX_KERNELS 512

/* Kernel objects of one kernel name on one device that no launch is using: OpenCL kernel
 * objects hold their arguments, so two threads never share one between setting its
 * arguments and queueing it. */
typedef struct opencl_idle_kernels {
    cl_kernel *items;
    size_t count, capacity;
} opencl_idle_kernels_t;

typedef struct opencl_built_program {
    cl_program program;   /* NULL until built */
    char failure[1024];   /* why it could not be built, once it could not */
} opencl_built_program_t;

/* A program the plug-in generates at run time (a fused kernel): a prelude, the start of one of
 * the embedded programs, then `body`, which names it among the device's generated programs. */
typedef struct opencl_generated_program {
    char *body;
    opencl_built_program_t built;
    opencl_idle_kernels_t idle; /* of its one kernel */
} opencl_generated_program_t;

/* One OpenCL device, opened by device_init on a context made when the plug-in loaded. */
typedef struct opencl_device {
    int32_t ordinal;
    cl_platform_id platform;
    cl_device_id id;
    cl_context context;      /* shared by the devices of one platform */
    char name[256], vendor[256];
    char device_version[256];/* CL_DEVICE_VERSION: part of what keys the program cache */
    /* "OpenCL 3.0 PoCL 3.1, driver 3.1+debian": the version, ", driver ", and
     * CL_DRIVER_VERSION as describe() reads it (128 bytes), so it always fits. */
    char driver[256 + 16 + 128];
    cl_uint compute_units;
    uint64_t memory_bytes;   /* CL_DEVICE_GLOBAL_MEM_SIZE, less the driver's share on a GPU */
    uint64_t largest_buffer; /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    bool has_fp64;           /* cl_khr_fp64 */
    bool is_cpu;             /* CL_DEVICE_TYPE_CPU, such as PoCL's */
    bool host_memory;        /* a CPU device, or a GPU sharing the host's memory */

    pthread_mutex_t mutex;   /* guards everything below */
    uint64_t used_bytes;
    opencl_built_program_t programs[OPENCL_MAX_PROGRAMS]; /* as opencl_programs */
    opencl_idle_kernels_t kernels[OPENCL_MAX_KERNELS];
    opencl_generated_program_t **generated; /* each kept until the device is released */
    size_t num_generated, generated_capacity;
} opencl_device_t;

/* The int64 values a device-side check fills: record[0] is 0 while the input is good. */
#define OPENCL_RECORD_SIZE 16
/* Writes what a failed check's record says ("row 1 has label 7, ...") into `text`. */
typedef void (*opencl_describe_fn)(const int64_t *record, char *text, size_t capacity);

/* A command the plug-in queued, kept until an event or a synchronize has read its outcome:
 * OpenCL reports a command that fails on the device only through its event's status. */
typedef struct opencl_command {
    cl_event event;
    const char *what; /* "Relu", "memcpy_host_to_device": static text */
    /* A check the device made: the command reads a flag into *flag (malloc'ed, owned here),
     * and a flag other than 0 once the command is done fails it with `failure`. */
    int32_t *flag;
    const char *failure; /* "integer division by zero": static text */
    /* A check that says where: the command reads OPENCL_RECORD_SIZE int64 values into *record
     * (malloc'ed, owned here), and record[0] other than 0 fails it with the text `describe`
     * makes of the record. */
    int64_t *record;
    opencl_describe_fn describe;
} opencl_command_t;

typedef struct opencl_commands {
    opencl_command_t *items;
    size_t count, capacity;
} opencl_commands_t;

/* An in-order command queue and the commands queued on it since the last event record. */
typedef struct opencl_stream {
    opencl_device_t *device;
    cl_command_queue queue;
    pthread_mutex_t mutex; /* guards pending */
    opencl_commands_t pending;
} opencl_stream_t;

/* ---- Errors (opencl_errors.c) ---------------------------------------------------------------- */

/* The OpenCL name of an error code ("CL_OUT_OF_RESOURCES"), or "OpenCL error -N". */
const char *opencl_error_name(cl_int code, char *buffer, size_t capacity);
/* Sets `status` to the failure of OpenCL call `call` made for `what` (an op, "allocate") on
 * `device`: "Relu on GPU:0 (name): clEnqueueNDRangeKernel failed: CL_OUT_OF_RESOURCES". */
void opencl_fail(tp_plugin_status_t *status, const opencl_device_t *device, const char *what,
                 const char *call, cl_int code);

/* ---- Memory (opencl_memory.c) ---------------------------------------------------------------- */

void opencl_allocate(void *device, uint64_t size, void **out_mem, tp_plugin_status_t *status);
void opencl_deallocate(void *device, void *mem);
void opencl_memory_usage(void *device, uint64_t *free_bytes, uint64_t *total_bytes);

/* ---- Streams, copies, events, callbacks (opencl_stream.c) ------------------------------------ */

void opencl_fill_stream_functions(tp_device_type_def_t *def);
/* Takes `event` of a command just queued on `stream` into the stream's pending commands. */
void opencl_stream_track(opencl_stream_t *stream, cl_event event, const char *what,
                         tp_plugin_status_t *status);
/* The outcome of queueing a command of `what` with OpenCL call `call`: tracked if `error` is
 * CL_SUCCESS, else the call's failure on `status`. False when `status` holds a failure. */
bool opencl_stream_queued(opencl_stream_t *stream, const char *what, const char *call,
                          cl_int error, cl_event event, tp_plugin_status_t *status);
/* Queues, after the work before it, a check of the 4-byte flag at `flag_mem` that a kernel of
 * `what` set: a flag other than 0 fails that work with `failure`, through the first event
 * recorded after it or the stream's synchronize. */
void opencl_stream_check_flag(opencl_stream_t *stream, cl_mem flag_mem, const char *what,
                              const char *failure, tp_plugin_status_t *status);
/* As opencl_stream_check_flag, for a record of OPENCL_RECORD_SIZE int64 values at `record_mem`
 * that a kernel of `what` filled: record[0] other than 0 fails that work with the text
 * `describe` makes of the record. */
void opencl_stream_check_record(opencl_stream_t *stream, cl_mem record_mem, const char *what,
                                opencl_describe_fn describe, tp_plugin_status_t *status);

/* ---- Programs and launches (opencl_program.c) ----------------------------------------------- */

/* The id of kernel `name` of program `program` (kernels/PROGRAM.cl), the same on every
 * device; only during init. -1 with `status` set when there is no such program or the table
 * is full. */
int32_t opencl_kernel_id(const char *program, const char *name, tp_plugin_status_t *status);
/* Releases the device's programs and kernel objects (device_release). */
void opencl_programs_release(opencl_device_t *device);

/* One argument of a kernel launch. */
typedef struct opencl_arg {
    size_t size;
    const void *value; /* NULL with a size: local memory of that many bytes */
} opencl_arg_t;
#define OPENCL_ARG(x) ((opencl_arg_t){sizeof(x), &(x)})
#define OPENCL_LOCAL(bytes) ((opencl_arg_t){(bytes), NULL})

/* Queues kernel `id` for op `what` over `global` work-items in groups of `local` (0: the
 * device chooses) on the kernel context's stream, and tracks it. Never waits for the device.
 * False with `status` set when it cannot be queued. */
bool opencl_launch(tp_kernel_context_t *context, const char *what, int32_t id,
                   const opencl_arg_t *args, size_t num_args, size_t global, size_t local,
                   tp_plugin_status_t *status);

/* The text a generated program starts with: the first `length` bytes of an embedded program,
 * `label` naming it in build failures ("the element functions of kernels/elementwise.cl"). */
typedef struct opencl_prelude {
    const char *text;
    size_t length;
    const char *label;
} opencl_prelude_t;

/* Queues kernel `name` of the program `prelude` + `body`, built on the kernel context's device
 * the first time it is launched there (through the disk cache, as the embedded programs are)
 * and kept for the device's life, over `global` work-items; tracked as `what`. Never waits
 * for the device. False with `status` set when it cannot be built or queued. */
bool opencl_launch_generated(tp_kernel_context_t *context, const char *what,
                             const opencl_prelude_t *prelude, const char *body,
                             const char *name, const opencl_arg_t *args, size_t num_args,
                             size_t global, tp_plugin_status_t *status);

/* ---- What kernels share (opencl_kernel_support.c) ------------------------------------------- */

bool opencl_failed(const tp_plugin_status_t *status);
/* Input or output `index` of the kernel call into *view; false with `status` set. */
bool opencl_input(tp_kernel_context_t *context, int32_t index, tp_tensor_view_t *view,
                  tp_plugin_status_t *status);
bool opencl_output(tp_kernel_context_t *context, int32_t index, tp_tensor_view_t *view,
                   tp_plugin_status_t *status);
/* "float32", as kernel names end; NULL for a dtype the plug-in does not know. */
const char *opencl_dtype_suffix(tp_dtype_t dtype);
size_t opencl_dtype_size(tp_dtype_t dtype);
/* log2 of the element size: the index into tables of kernels by size (1, 2, 4, 8 bytes), those
 * that move bytes whatever the dtype (kernels/array.cl, kernels/index.cl). */
int opencl_size_index(tp_dtype_t dtype);
/* The bytes of `value` in `dtype`, low bytes first, as the CPU writes an op's scalar attribute
 * (OneHot's on_value and off_value, Pad's constant_value); the core's shape functions checked
 * that an integer dtype's value is whole and in range. */
cl_ulong opencl_scalar_bits(tp_dtype_t dtype, double value);
/* The number of tp_dtype_t values: tables of kernel ids by dtype have this many entries. */
#define OPENCL_NUM_DTYPES 7
/* ids[dtype], the op's kernel for `dtype`, if it exists and the context's device can run it
 * (float64 needs cl_khr_fp64); else -1 with UNIMPLEMENTED on `status`, naming op and device. */
int32_t opencl_kernel_for(const char *op, const int32_t *ids, tp_dtype_t dtype,
                          tp_kernel_context_t *context, tp_plugin_status_t *status);
/* Queues a device-side copy of y's bytes from x (Identity, Reshape, a Transpose that moves
 * nothing), tracked as `what`. */
void opencl_copy_tensor(tp_kernel_context_t *context, const char *what,
                        const tp_tensor_view_t *x, const tp_tensor_view_t *y,
                        tp_plugin_status_t *status);
/* Queues check kernel `id` on one work-item with `args` and, after them, a zeroed record of
 * OPENCL_RECORD_SIZE int64 values (args has room for num_args + 1), then the read of the
 * record (opencl_stream_check_record): record[0] other than 0 fails `what` with the text
 * `describe` makes of it. False with `status` set when it cannot be queued. */
bool opencl_launch_check(tp_kernel_context_t *context, const char *what, int32_t id,
                         opencl_arg_t *args, size_t num_args, opencl_describe_fn describe,
                         tp_plugin_status_t *status);
/* Strides that read `view` at each index of a tensor of `rank` dims `dims`: 0 along the
 * dimensions the view repeats, as NumPy broadcasting does. */
void opencl_broadcast_strides(const tp_tensor_view_t *view, int32_t rank, const int64_t *dims,
                              cl_long *strides);
typedef void (*opencl_compute_fn)(void *kernel, tp_kernel_context_t *context,
                                  tp_plugin_status_t *status);
/* Registers `op`'s GPU kernel for `num_dtypes` dtypes of type attribute `attr`; its create
 * hands `state` to compute. Nothing when `status` already holds a failure. */
void opencl_register(tp_registrar_t *registrar, const char *op, const char *attr,
                     const tp_dtype_t *dtypes, size_t num_dtypes, void *state,
                     opencl_compute_fn compute, tp_plugin_status_t *status);
/* A kernel's create that hands its kernel_state (the op's table) to compute. */
void *opencl_share_op(void *kernel_state, tp_kernel_context_t *context,
                      tp_plugin_status_t *status);

/* ---- Kernels (one file each kind) ------------------------------------------------------------ */

void opencl_register_elementwise_kernels(tp_registrar_t *registrar, bool fp64,
                                         tp_plugin_status_t *status);
void opencl_register_reduction_kernels(tp_registrar_t *registrar, bool fp64,
                                       tp_plugin_status_t *status);
void opencl_register_random_kernels(tp_registrar_t *registrar, bool fp64,
                                    tp_plugin_status_t *status);
void opencl_register_matmul_kernels(tp_registrar_t *registrar, bool fp64,
                                    tp_plugin_status_t *status);
void opencl_register_layout_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);
void opencl_register_conv_kernels(tp_registrar_t *registrar, bool fp64,
                                  tp_plugin_status_t *status);
void opencl_register_compare_kernels(tp_registrar_t *registrar, bool fp64,
                                     tp_plugin_status_t *status);
void opencl_register_loss_kernels(tp_registrar_t *registrar, bool fp64,
                                  tp_plugin_status_t *status);
void opencl_register_array_kernels(tp_registrar_t *registrar, bool fp64,
                                   tp_plugin_status_t *status);
void opencl_register_index_kernels(tp_registrar_t *registrar, bool fp64,
                                   tp_plugin_status_t *status);
void opencl_register_batch_norm_kernels(tp_registrar_t *registrar, bool fp64,
                                        tp_plugin_status_t *status);

/* ---- Fusion (opencl_fusion.c, opencl_fusion_pass.c) ----------------------------------------- */

/* The op that computes a chain of element-wise ops in one kernel, and its limits. */
#define OPENCL_FUSED_OP "OpenCLFusedElementwise"
#define OPENCL_FUSED_MAX_INPUTS 8 /* each broadcast one passes 64 bytes of strides */
#define OPENCL_FUSED_MAX_OPS 32
/* How many inputs element-wise op `op` has (1 or 2) when the fused kernel computes it in
 * `dtype`; 0 when it does not. */
int opencl_fusible_arity(const char *op, tp_dtype_t dtype);
void opencl_register_fused_kernel(tp_registrar_t *registrar, bool fp64,
                                  tp_plugin_status_t *status);
/* The graph pass that puts OPENCL_FUSED_OP in place of chains; after the fused kernel. */
void opencl_register_fusion_pass(tp_registrar_t *registrar, tp_plugin_status_t *status);

#endif
