/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tensorplug plug-in ABI: the only header a device plug-in includes.
 *
 * A plug-in is a shared object that exports one function, TP_PLUGIN_ENTRY_NAME, returning a
 * descriptor. The host reads the descriptor's ABI version first and calls nothing else of a
 * plug-in whose major version differs or whose minor version is newer than the host's. It then
 * calls the descriptor's init with a table of host functions: everything a plug-in needs from
 * the runtime reaches it through that table, so a plug-in links against no symbol of the core
 * and one binary loads into every runtime of the same major version.
 *
 * Compatibility rules, for the host and for plug-ins alike:
 *   - every struct that crosses the boundary starts with `size_t struct_size`, set by whoever
 *     fills the struct to sizeof of the struct as that side was compiled;
 *   - fields are only ever appended, and each addition bumps TP_ABI_MINOR; a field's comment
 *     names the minor that added it when that is not 1.0;
 *   - the reader of a struct reads only the fields that struct_size says exist, and treats an
 *     absent field like a zero one;
 *   - a NULL optional function pointer means "use the host's default" (documented per field)
 *     or, where there is none, "not supported", which the host reports as an error.
 *
 * Plain C99; no type of the core appears here.
 */
#ifndef TENSORPLUG_PLUGIN_H
#define TENSORPLUG_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TP_ABI_MAJOR 1
/* 1.7 added the dtypes TP_FLOAT16 to TP_UINT64 (7..13); 1.8 tp_kernel_def_t.flags. */
#define TP_ABI_MINOR 8

#if defined(__GNUC__)
#define TP_PRINTF_LIKE(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#define TP_EXPORT __attribute__((visibility("default")))
#else
#define TP_PRINTF_LIKE(fmt_index, first_arg)
#define TP_EXPORT
#endif

/* ---- Vocabulary shared by the application API and the ABI ------------------------------ */

/* Status codes. The numbers follow the canonical codes users of gRPC and TensorFlow know. */
typedef enum tp_code {
    TP_OK = 0,
    TP_CANCELLED = 1,
    TP_UNKNOWN = 2,
    TP_INVALID_ARGUMENT = 3,
    TP_DEADLINE_EXCEEDED = 4,
    TP_NOT_FOUND = 5,
    TP_ALREADY_EXISTS = 6,
    TP_PERMISSION_DENIED = 7,
    TP_RESOURCE_EXHAUSTED = 8,
    TP_FAILED_PRECONDITION = 9,
    TP_ABORTED = 10,
    TP_OUT_OF_RANGE = 11,
    TP_UNIMPLEMENTED = 12,
    TP_INTERNAL = 13,
    TP_UNAVAILABLE = 14,
    TP_DATA_LOSS = 15
} tp_code_t;

/* Element types. The numbers are part of the ABI and never change; new ones are appended.
 * Elements are in the host's byte order. A plug-in built against a minor version that did not
 * have a dtype yet is never handed it: the host runs none of its kernels on a call that has
 * such a dtype (a kernel registered without a constraint on a dtype attribute included), and
 * refuses its registrations that name one. */
typedef enum tp_dtype {
    TP_DTYPE_INVALID = 0,
    TP_FLOAT32 = 1,
    TP_FLOAT64 = 2,
    TP_INT32 = 3,
    TP_INT64 = 4,
    TP_UINT8 = 5,
    TP_BOOL = 6,
    /* Added in 1.7. The 16-bit floats are stored as their bits; tensorplug/float16.h
     * converts them to and from float, rounding to nearest even. */
    TP_FLOAT16 = 7,  /* IEEE 754 binary16 */
    TP_BFLOAT16 = 8, /* the upper 16 bits of a float32: float32's range, 8 bits of precision */
    TP_INT8 = 9,
    TP_INT16 = 10,
    TP_UINT16 = 11,
    TP_UINT32 = 12,
    TP_UINT64 = 13
} tp_dtype_t;

/* The largest rank a tensor can have. */
#define TP_MAX_RANK 8

/* ---- Opaque host objects ----------------------------------------------------------------- */

/* Where a plug-in function reports failure: it calls host->status_set on it. Owned by the host,
 * valid only during the call it was passed to. */
typedef struct tp_plugin_status tp_plugin_status_t;

/* Collects the registrations of one plug-in during its init. Valid only during init. */
typedef struct tp_registrar tp_registrar_t;

/* One execution of an op, handed to a kernel's create and compute and to an op's shape
 * function; read through the kernel_* host functions. Valid only during that call. */
typedef struct tp_kernel_context tp_kernel_context_t;

/* Handed to a graph pass (see tp_graph_pass_def_t); read and edited through the graph_*
 * host functions (1.3). Valid only during the pass's run. */
typedef struct tp_plugin_graph tp_plugin_graph_t;

/* ---- Devices: the stream-executor part ----------------------------------------------------- */

/* What a plug-in says about one physical device; filled by tp_device_type_def_t.device_init.
 * The host sets struct_size before the call; strings must live as long as the device. */
typedef struct tp_device_info {
    size_t struct_size;
    const char *hardware_name; /* "Awesome Processing Unit (simulated)" */
    const char *vendor;        /* "tensorplug" */
    uint64_t memory_bytes;     /* total device memory */
    /* Added in 1.5: what `tensorplug devices` shows beside the name; NULL and 0 when the
     * plug-in does not say. */
    const char *driver_version; /* "OpenCL 3.0 PoCL 3.1, driver 3.1" */
    int32_t compute_units;      /* cores, compute units or streaming multiprocessors */
    /* Added in 1.5: the largest size one allocate serves (OpenCL's
     * CL_DEVICE_MAX_MEM_ALLOC_SIZE); 0: memory_bytes. The host reserves memory in regions no
     * larger, and refuses a tensor larger with RESOURCE_EXHAUSTED. */
    uint64_t max_allocation_bytes;
    uint32_t flags; /* added in 1.5: TP_DEVICE_INFO_* bits */
} tp_device_info_t;

/* What one device says of itself: bits of tp_device_info_t.flags (1.5). */
enum {
    /* The device's memory is the host's (an OpenCL CPU device, an integrated GPU sharing the
     * host's RAM): like the CPU's, it grows on demand by default instead of being reserved up
     * front, which would take the memory from every other program on the machine. */
    TP_DEVICE_INFO_HOST_MEMORY = 1u << 0
};

/* What a device type declares about itself: bits of tp_device_type_def_t.flags (1.4). */
enum {
    /* Every function that takes a stream has finished the work when it returns, and reports
     * the work's failure on its own status: a kernel's outputs are ready, or its failure
     * known, when compute returns. The host records no events to learn outcomes, and
     * tensorplug plugin-check skips the stream-ordering checks for such a device, saying so.
     * The CPU device is synchronous. */
    TP_DEVICE_SYNCHRONOUS = 1u << 0
};

/* Event states, as reported by tp_device_type_def_t.event_query. */
typedef enum tp_event_state {
    TP_EVENT_PENDING = 0,
    TP_EVENT_COMPLETE = 1,
    TP_EVENT_ERROR = 2
} tp_event_state_t;

/*
 * One device type and the functions that drive its devices. Handles are the plug-in's own:
 * `device` comes from device_init, `stream` from stream_create, `event` from event_create, and
 * device memory is named by the handle `mem` that allocate returned plus a byte offset into it
 * (so devices whose memory is not addressed linearly, such as OpenCL buffers, fit as well as
 * those whose memory is). The host never dereferences device memory.
 *
 * Every function that takes a stream enqueues in stream order and may return before the work
 * is done. A failure found while queueing is reported on that call's `status`. A failure found
 * later, when the device runs the work (a kernel or a copy that fails on the device), belongs
 * to that work alone, and the plug-in reports it through events (1.4):
 *   - the first event recorded on the stream after the failed work ends in TP_EVENT_ERROR,
 *     and event_synchronize on it reports the failure's code and message. The host records an
 *     event right after every launch and copy it queues, with no other work of that stream in
 *     between, so the event names exactly the work that failed. Events recorded later on the
 *     stream are not affected: they complete normally unless later work fails too;
 *   - a stream that waits for an event in TP_EVENT_ERROR does not fail: the host knows which
 *     tensors were computed from the failed work and reports the failure on each of them;
 *   - stream_synchronize reports only failures that no event has reported, each once;
 *   - the stream, and the device, stay usable after a failure.
 * An asynchronous device without events cannot say which work failed: the host then
 * synchronizes its stream after every launch and copy, which is correct but gives up overlap.
 * A device whose work is done when the call that queues it returns declares itself
 * TP_DEVICE_SYNCHRONOUS, and the host then records no events for outcomes.
 *
 * The code of a failure is the plug-in's own: the one it set on the status of the call that
 * reported it (event_synchronize, stream_synchronize, or the queueing call), unchanged; a
 * number that is no tp_code_t becomes TP_UNKNOWN, and a failure only event_query shows (no
 * event_synchronize) is TP_INTERNAL. A failure reported while queueing fails the op at once;
 * one reported later reaches the tensors computed from the failed work, whose reads (and the
 * ops that would use them) return it, named by op and device: "Relu on
 * /job:localhost/replica:0/task:0/device:APU:0: <the plug-in's message>". On a device without
 * events the op that queued the work fails at once instead.
 *
 * Threads: the host calls these functions from any thread, for different streams at once, and
 * may call stream_synchronize, host_callback, event_query and event_synchronize on a stream
 * while another thread queues work on it. On an asynchronous device it queues one launch or
 * copy at a time per stream (so that the event after it covers it alone); on a
 * TP_DEVICE_SYNCHRONOUS device it serializes nothing.
 */
typedef struct tp_device_type_def {
    size_t struct_size;
    /* Letters, digits and '_', starting with a letter, at most 31 characters; unique across
     * the plug-ins of a process, compared without regard to case. */
    const char *type;
    /* Placement priority: among devices with a kernel for an op, the highest priority type
     * wins. The CPU has 0; an accelerator typically uses 100. Of types of equal priority the
     * one registered first wins: plug-ins register in discovery order (TP_PLUGIN_PATH's
     * folders in turn, then the system plug-in folder, the files of each folder sorted by
     * name), a plug-in's types in the order of its calls. */
    int32_t priority;
    /* Passed back to device_count and device_init. */
    void *type_state;

    /* Required. The number of physical devices of this type present now. */
    int32_t (*device_count)(void *type_state, tp_plugin_status_t *status);
    /* Required. Opens device `ordinal` and describes it; *out_device is passed to every other
     * function. */
    void (*device_init)(void *type_state, int32_t ordinal, tp_device_info_t *info,
                        void **out_device, tp_plugin_status_t *status);
    /* Required. Releases everything device_init acquired; the host has destroyed all streams and
     * events and freed all memory of the device before it calls this. */
    void (*device_release)(void *device);

    /* Required. Raw device memory of `size` bytes (size > 0), aligned to at least 64 bytes.
     * *out_mem must not be NULL on success. */
    void (*allocate)(void *device, uint64_t size, void **out_mem, tp_plugin_status_t *status);
    /* Required. Returns memory from allocate; the host calls it only after all work that uses
     * the memory has completed. */
    void (*deallocate)(void *device, void *mem);
    /* Optional. Free and total bytes; default: total from tp_device_info_t, free unknown (0). */
    void (*memory_usage)(void *device, uint64_t *free_bytes, uint64_t *total_bytes);

    /* Required. An in-order queue of work. */
    void (*stream_create)(void *device, void **out_stream, tp_plugin_status_t *status);
    /* Required. Called only once no work is queued on the stream: the host synchronizes it
     * first (when a context is destroyed), so there is nothing to finish or drop. Events last
     * recorded on the stream may be destroyed after it. */
    void (*stream_destroy)(void *device, void *stream);
    /* Required. Blocks until all work queued on the stream is done; reports the first error
     * that work raised since the last synchronize. */
    void (*stream_synchronize)(void *device, void *stream, tp_plugin_status_t *status);

    /* Required. Copies in stream order. The host buffer (src here, dst in
     * memcpy_device_to_host) stays valid and untouched by the host until the copy is done as
     * the host learns it: an event recorded after it completes, or a synchronize of its stream
     * or device returns (on a TP_DEVICE_SYNCHRONOUS device: the call returns). The plug-in may
     * read or write it from its queue until then without copying it, and never after. */
    void (*memcpy_host_to_device)(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                                  const void *src, uint64_t size, tp_plugin_status_t *status);
    void (*memcpy_device_to_host)(void *device, void *stream, void *dst, const void *src_mem,
                                  uint64_t src_offset, uint64_t size, tp_plugin_status_t *status);
    /* Optional. A copy within one device; default: staged through host memory. */
    void (*memcpy_device_to_device)(void *device, void *stream, void *dst_mem, uint64_t dst_offset,
                                    const void *src_mem, uint64_t src_offset, uint64_t size,
                                    tp_plugin_status_t *status);
    /* Optional. A copy from this device to another device of the same type, ordered after the
     * work queued on `stream`; default: staged through host memory. */
    void (*memcpy_peer)(void *device, void *stream, void *dst_device, void *dst_mem,
                        uint64_t dst_offset, const void *src_mem, uint64_t src_offset,
                        uint64_t size, tp_plugin_status_t *status);

    /* Optional, all five or none. Events mark a point in a stream; default: the host orders
     * work by synchronizing whole streams instead. */
    void (*event_create)(void *device, void **out_event, tp_plugin_status_t *status);
    void (*event_destroy)(void *device, void *event);
    void (*event_record)(void *device, void *stream, void *event, tp_plugin_status_t *status);
    /* Makes work queued on `stream` after this call wait until `event` completes. */
    void (*stream_wait_event)(void *device, void *stream, void *event,
                              tp_plugin_status_t *status);
    tp_event_state_t (*event_query)(void *device, void *event);
    /* Optional even when events exist. Blocks the host until `event` completes, and reports on
     * `status` the failure it carries when it ends in TP_EVENT_ERROR (see "failure" above);
     * default: poll event_query, and report a failure without the plug-in's message. */
    void (*event_synchronize)(void *device, void *event, tp_plugin_status_t *status);

    /* Added in 1.1. Optional. Blocks until all work on every stream of the device is done;
     * default: synchronize each stream the host created. */
    void (*device_synchronize)(void *device, tp_plugin_status_t *status);
    /* Added in 1.1. Optional. Calls fn(arg) on some thread once the work queued before it is
     * done; default: the host synchronizes the stream and calls fn itself. fn may call the
     * device's functions (it destroys events), so call it holding no lock of the stream's. */
    void (*host_callback)(void *device, void *stream, void (*fn)(void *arg), void *arg,
                          tp_plugin_status_t *status);

    /* Added in 1.4. TP_DEVICE_* bits; 0 for an asynchronous device. */
    uint32_t flags;

    /* Added in 1.6. Optional, for an asynchronous device with events. When the device ran the
     * work queued on the stream between the event recorded there before `event` and `event`
     * itself (the host records one right after each launch and copy, so that is one launch's
     * or one copy's work): the start of its first piece and the end of its last, in
     * nanoseconds of the host's CLOCK_MONOTONIC, which a device with a clock of its own
     * converts to (OpenCL's clGetDeviceAndHostTimer gives both clocks at once). With no work
     * between the two events, start and end are both when the device reached `event`. The
     * host calls it only after `event` completed, and before recording or destroying it again;
     * a profile (tp_profiler_start) draws these times as the device's own timeline. NULL, or a
     * failure set on `status` (no times kept for this event): the profile shows when the host
     * queued the work instead. */
    void (*event_work_times)(void *device, void *event, uint64_t *out_start_ns,
                             uint64_t *out_end_ns, tp_plugin_status_t *status);
} tp_device_type_def_t;

/* ---- Ops and kernels ------------------------------------------------------------------------ */

/* Kinds of attribute an op can have. */
typedef enum tp_attr_type {
    TP_ATTR_INT = 1,    /* int64_t */
    TP_ATTR_FLOAT = 2,  /* double */
    TP_ATTR_BOOL = 3,   /* int32_t, 0 or 1 */
    TP_ATTR_DTYPE = 4,  /* tp_dtype_t */
    TP_ATTR_SHAPE = 5,  /* a list of int64_t dimensions */
    TP_ATTR_STRING = 6, /* a NUL-terminated string */
    TP_ATTR_INT_LIST = 7,
    TP_ATTR_BYTES = 8 /* added in 1.2: raw bytes, such as a Const's value */
} tp_attr_type_t;

/* One input or output of an op: either a fixed dtype, or the name of a TP_ATTR_DTYPE attribute
 * that gives it (exactly one of the two). */
typedef struct tp_op_arg_def {
    size_t struct_size;
    const char *name;
    tp_dtype_t dtype;       /* TP_DTYPE_INVALID when type_attr is used */
    const char *type_attr;  /* "T", or NULL */
    /* Added in 1.2. The name of a TP_ATTR_INT attribute N: the argument is a list of N tensors
     * (AddN's inputs). NULL: a single tensor. */
    const char *number_attr;
} tp_op_arg_def_t;

/* One attribute of an op. has_default says whether the default fields are meaningful. */
typedef struct tp_op_attr_def {
    size_t struct_size;
    const char *name;
    tp_attr_type_t type;
    /* For TP_ATTR_DTYPE: the dtypes allowed (NULL: any). */
    const tp_dtype_t *allowed_dtypes;
    size_t num_allowed_dtypes;
    int32_t has_default;
    int64_t default_int;       /* INT, BOOL, DTYPE */
    double default_float;      /* FLOAT */
    const char *default_string;/* STRING */
} tp_op_attr_def_t;

/* A new op. The host copies everything it needs; nothing must outlive the call. */
typedef struct tp_op_def {
    size_t struct_size;
    const char *name; /* CamelCase: letters and digits, starting with an upper-case letter */
    const tp_op_arg_def_t *inputs;
    size_t num_inputs;
    const tp_op_arg_def_t *outputs;
    size_t num_outputs;
    const tp_op_attr_def_t *attrs;
    size_t num_attrs;
    int32_t is_stateful; /* 1: never folded, merged or cached (random ops, for example) */
    /* Optional. Sets every output's shape with host->kernel_set_output_shape from the inputs'
     * shapes and the attributes (kernel_input gives views without memory here); default:
     * every output has the shape of input 0. */
    void (*infer_shape)(void *op_state, tp_kernel_context_t *context, tp_plugin_status_t *status);
    void *op_state;
} tp_op_def_t;

/* Restricts a TP_ATTR_DTYPE attribute of the op to the listed dtypes for one kernel. */
typedef struct tp_type_constraint {
    size_t struct_size;
    const char *attr; /* "T" */
    const tp_dtype_t *dtypes;
    size_t num_dtypes;
} tp_type_constraint_t;

/* A kernel: the implementation of one op on one device type for some dtypes. compute runs on a
 * host thread and enqueues its device work on the stream of the kernel context, returning
 * before that work is done if the device is asynchronous.
 *
 * By default each launch calls create, compute and destroy in turn, on the launching thread:
 * an instance lives for one launch, and what lasts longer belongs in kernel_state. create is
 * optional: without it compute is handed NULL. destroy is optional: it gets what create
 * returned (NULL without create) once compute has returned, failed or not. A create that fails
 * fails the launch, and neither compute nor destroy is called, so it frees what it made itself.
 *
 * compute, create and destroy may run on several threads at once for one kernel, sharing
 * kernel_state: for different devices, and on a TP_DEVICE_SYNCHRONOUS device for the same
 * device and stream.
 *
 * A kernel whose create is costly (it compiles a program, builds a library's primitive) sets
 * TP_KERNEL_REUSE_INSTANCE (1.8) instead, as TensorFlow keeps its OpKernels: see the flags. */
typedef struct tp_kernel_def {
    size_t struct_size;
    const char *op;
    const char *device_type;
    const tp_type_constraint_t *constraints;
    size_t num_constraints;
    /* Among kernels for the same op, device type and dtypes, the highest priority is used; of
     * equal priorities, the one registered first (the built-in CPU's, then the plug-ins' in
     * discovery order, each in the order of its calls). device_type may be a type that a
     * plug-in found earlier registered, the CPU included. */
    int32_t priority;
    void *kernel_state;
    void *(*create)(void *kernel_state, tp_kernel_context_t *context, tp_plugin_status_t *status);
    void (*compute)(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status);
    void (*destroy)(void *kernel);
    uint32_t flags; /* added in 1.8: TP_KERNEL_* bits; other bits are refused */
} tp_kernel_def_t;

/* How the host may use a kernel's instances: bits of tp_kernel_def_t.flags (1.8). A plug-in
 * built against an older minor has neither, and keeps the one-launch instances above. */
enum {
    /* One instance per (kernel, attribute values, input dtypes, logical device), made by the
     * first launch that needs it and handed to every later one; destroy runs once, when the
     * context's devices close (the context destroyed and its last tensor released), after
     * the device's work is done and before its stream is destroyed, on whichever thread
     * closes them. Without a create the flag changes nothing.
     *
     * create may rely on what the key holds and on nothing else: the op name, the attributes,
     * the number of inputs and outputs, their dtypes (kernel_input and kernel_output give
     * views without memory, mem NULL, while such a create runs), and kernel_device and
     * kernel_stream, which are the same for every launch on the device. Shapes differ from
     * launch to launch: what depends on them belongs in compute. create runs once per key: the
     * host makes the instances of one device one at a time (a second launch of the same key
     * waits for the first's create), so an instance is never made twice and thrown away. A
     * create that fails fails its launch and is not remembered: the next launch calls create
     * again. A context keeps at most 4096 instances per device; a launch beyond that makes a
     * one-launch instance, as without the flag. */
    TP_KERNEL_REUSE_INSTANCE = 1u << 0,
    /* With TP_KERNEL_REUSE_INSTANCE: compute may run on several threads at once on one
     * instance (it only reads it, or locks what it changes), as TensorFlow requires of
     * OpKernel::Compute. Without it the host runs one compute at a time per instance, even on
     * a TP_DEVICE_SYNCHRONOUS device, so compute may keep scratch state in the instance. */
    TP_KERNEL_CONCURRENT_COMPUTE = 1u << 1
};

/* ---- Graph optimization ---------------------------------------------------------------------- */

/* Standard passes a plug-in may switch off for graphs that have nodes on its device type. */
enum {
    TP_PASS_PRUNING = 1u << 0,
    TP_PASS_COMMON_SUBEXPRESSION = 1u << 1,
    TP_PASS_CONSTANT_FOLDING = 1u << 2,
    TP_PASS_IDENTITY_REMOVAL = 1u << 3
};

/* The one graph pass a plug-in may register. It runs after the standard passes, on graphs that
 * have at least one node placed on `device_type`, and edits the graph through the graph_* host
 * functions. A pass that sets an error on `status`, or leaves a cycle, fails the tracing of the
 * function with a message naming the pass. `run` may be called from several threads at once,
 * each with a graph of its own. */
typedef struct tp_graph_pass_def {
    size_t struct_size;
    const char *name;
    const char *device_type;
    uint32_t disabled_standard_passes; /* TP_PASS_* bits */
    void *pass_state;
    void (*run)(void *pass_state, tp_plugin_graph_t *graph, tp_plugin_status_t *status);
} tp_graph_pass_def_t;

/* ---- Kernel execution ------------------------------------------------------------------------ */

/* A tensor as a kernel sees it (added in 1.2). Its memory is `mem` (a handle from the device's
 * allocate) at byte `offset`; for a device whose handles are host pointers (the CPU) the data
 * is at (char *)mem + offset. `mem` is NULL for an empty tensor and during shape inference. */
typedef struct tp_tensor_view {
    size_t struct_size;
    tp_dtype_t dtype;
    int32_t rank;
    const int64_t *dims; /* rank entries, valid during the call */
    int64_t num_elements;
    uint64_t byte_size;
    void *mem;
    uint64_t offset;
} tp_tensor_view_t;

/* An attribute of a graph node, as a graph pass reads or gives it (added in 1.3): the field
 * its type uses is set, as in the application API's tp_attr_t. Arrays and strings the host
 * returns stay valid until the pass returns. */
typedef struct tp_plugin_attr {
    size_t struct_size;
    const char *name;
    tp_attr_type_t type;
    int64_t i;           /* TP_ATTR_INT, TP_ATTR_BOOL (0 or 1), TP_ATTR_DTYPE */
    double f;            /* TP_ATTR_FLOAT */
    const int64_t *list; /* TP_ATTR_INT_LIST, TP_ATTR_SHAPE */
    int32_t count;
    const char *s;       /* TP_ATTR_STRING; TP_ATTR_BYTES: `count` bytes at `s` */
} tp_plugin_attr_t;

/* ---- The host function table ----------------------------------------------------------------- */

typedef enum tp_log_level {
    TP_LOG_DEBUG = 0,
    TP_LOG_INFO = 1,
    TP_LOG_WARNING = 2,
    TP_LOG_ERROR = 3
} tp_log_level_t;

typedef struct tp_host_api {
    size_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;

    /* Records a failure on `status`; the message is formatted like printf and copied. Setting
     * TP_OK clears it. */
    void (*status_set)(tp_plugin_status_t *status, tp_code_t code, const char *format, ...)
        TP_PRINTF_LIKE(3, 4);
    /* Writes one line to the runtime's log, prefixed with the plug-in's name. The registrar
     * handed to init stays valid for this use for the life of the process. */
    void (*log)(tp_registrar_t *registrar, tp_log_level_t level, const char *format, ...)
        TP_PRINTF_LIKE(3, 4);

    /* Registrations, valid only during init. Each validates its argument and reports a refusal
     * on `status`; a refused registration leaves nothing behind. The host copies the strings
     * and arrays it is given. */
    void (*register_device_type)(tp_registrar_t *registrar, const tp_device_type_def_t *def,
                                 tp_plugin_status_t *status);
    void (*register_op)(tp_registrar_t *registrar, const tp_op_def_t *def,
                        tp_plugin_status_t *status);
    void (*register_kernel)(tp_registrar_t *registrar, const tp_kernel_def_t *def,
                            tp_plugin_status_t *status);
    void (*register_graph_pass)(tp_registrar_t *registrar, const tp_graph_pass_def_t *def,
                                tp_plugin_status_t *status);

    /* Added in 1.2: the code a status holds, so that a plug-in can tell whether a host
     * function it called failed. */
    tp_code_t (*status_code)(const tp_plugin_status_t *status);

    /* Added in 1.2: reading a kernel context. Inputs are on the kernel's device; the host has
     * allocated every output, with the shape inference gave, before compute is called. An
     * index out of range or an attribute of another type is reported on `status`.
     * The host does not broadcast: it checks the inputs' shapes against the op (NumPy
     * broadcasting for the built-in element-wise ops: Add, Sub, Mul, Div...) and refuses a
     * mismatch before any kernel runs, but hands the kernel each input in its own shape, so a
     * kernel of such an op broadcasts itself. Tensors are dense, in row-major order. */
    const char *(*kernel_op_name)(const tp_kernel_context_t *context);
    int32_t (*kernel_num_inputs)(const tp_kernel_context_t *context);
    int32_t (*kernel_num_outputs)(const tp_kernel_context_t *context);
    void (*kernel_input)(const tp_kernel_context_t *context, int32_t index, tp_tensor_view_t *out,
                         tp_plugin_status_t *status);
    void (*kernel_output)(const tp_kernel_context_t *context, int32_t index,
                          tp_tensor_view_t *out, tp_plugin_status_t *status);
    /* Only in an op's infer_shape. */
    void (*kernel_set_output_shape)(tp_kernel_context_t *context, int32_t index, int32_t rank,
                                    const int64_t *dims, tp_plugin_status_t *status);
    /* The plug-in's own device and stream handles for the device the kernel runs on. */
    void *(*kernel_device)(const tp_kernel_context_t *context);
    void *(*kernel_stream)(const tp_kernel_context_t *context);
    void (*kernel_attr_int)(const tp_kernel_context_t *context, const char *name, int64_t *out,
                            tp_plugin_status_t *status);
    void (*kernel_attr_float)(const tp_kernel_context_t *context, const char *name, double *out,
                              tp_plugin_status_t *status);
    void (*kernel_attr_bool)(const tp_kernel_context_t *context, const char *name,
                             int32_t *out, tp_plugin_status_t *status);
    void (*kernel_attr_dtype)(const tp_kernel_context_t *context, const char *name,
                              tp_dtype_t *out, tp_plugin_status_t *status);
    /* TP_ATTR_INT_LIST and TP_ATTR_SHAPE; the array is valid during the call. */
    void (*kernel_attr_int_list)(const tp_kernel_context_t *context, const char *name,
                                 const int64_t **out_values, int32_t *out_count,
                                 tp_plugin_status_t *status);
    void (*kernel_attr_string)(const tp_kernel_context_t *context, const char *name,
                               const char **out, tp_plugin_status_t *status);
    /* TP_ATTR_BYTES; the bytes are valid during the call. */
    void (*kernel_attr_bytes)(const tp_kernel_context_t *context, const char *name,
                              const void **out_bytes, uint64_t *out_size,
                              tp_plugin_status_t *status);

    /* Added in 1.3: reading and editing the graph a graph pass is given. Nodes are numbered
     * from 0 in dependency order (a node comes after the nodes it reads); a node added during
     * the pass takes the next number, and numbers stay valid until the pass returns, though a
     * removed node can no longer be used. A node reads (node, output) pairs; the function's
     * results are read the same way. A bad number or an edit that would change a dtype or
     * shape is reported on `status` and changes nothing. */
    int32_t (*graph_num_nodes)(const tp_plugin_graph_t *graph);
    /* The node's op ("Relu"); NULL for a function argument or a constant. */
    const char *(*graph_node_op)(const tp_plugin_graph_t *graph, int32_t node,
                                 tp_plugin_status_t *status);
    const char *(*graph_node_name)(const tp_plugin_graph_t *graph, int32_t node,
                                   tp_plugin_status_t *status);
    /* The type ("APU") and ordinal of the device the node was placed on; the type is NULL for
     * a function argument, whose device is known only at the call. */
    void (*graph_node_device)(const tp_plugin_graph_t *graph, int32_t node,
                              const char **out_type, int32_t *out_ordinal,
                              tp_plugin_status_t *status);
    int32_t (*graph_node_num_inputs)(const tp_plugin_graph_t *graph, int32_t node,
                                     tp_plugin_status_t *status);
    int32_t (*graph_node_num_outputs)(const tp_plugin_graph_t *graph, int32_t node,
                                      tp_plugin_status_t *status);
    void (*graph_node_input)(const tp_plugin_graph_t *graph, int32_t node, int32_t index,
                             int32_t *out_node, int32_t *out_output, tp_plugin_status_t *status);
    /* How many node inputs and function results read any output of the node. */
    int32_t (*graph_node_num_uses)(const tp_plugin_graph_t *graph, int32_t node,
                                   tp_plugin_status_t *status);
    /* Attribute `name` of an op node, into *out (whose struct_size the caller sets). */
    void (*graph_node_attr)(const tp_plugin_graph_t *graph, int32_t node, const char *name,
                            tp_plugin_attr_t *out, tp_plugin_status_t *status);
    /* Adds a node of `op` reading (input_nodes[i], input_outputs[i]), at most 16 inputs, on
     * the device of node `place_like` (an op node), which must have a kernel for it. Its
     * attributes are `attrs`; type attributes not given come from the inputs and others from
     * their defaults. Returns the new node's number, -1 on failure. */
    int32_t (*graph_add_node)(tp_plugin_graph_t *graph, const char *op,
                              const int32_t *input_nodes, const int32_t *input_outputs,
                              int32_t num_inputs, const tp_plugin_attr_t *attrs,
                              int32_t num_attrs, int32_t place_like,
                              tp_plugin_status_t *status);
    /* Input `index` of `node` reads (from_node, from_output) from now on. */
    void (*graph_set_input)(tp_plugin_graph_t *graph, int32_t node, int32_t index,
                            int32_t from_node, int32_t from_output, tp_plugin_status_t *status);
    /* Every reader of (node, output), function results included, reads (to_node, to_output)
     * from now on. */
    void (*graph_replace_uses)(tp_plugin_graph_t *graph, int32_t node, int32_t output,
                               int32_t to_node, int32_t to_output, tp_plugin_status_t *status);
    /* Removes a node nothing reads; inputs it leaves unread are removed as well. A function
     * argument cannot be removed. */
    void (*graph_remove_node)(tp_plugin_graph_t *graph, int32_t node,
                              tp_plugin_status_t *status);
} tp_host_api_t;

/* ---- The entry point ------------------------------------------------------------------------- */

/* Called once per process. Registers what the plug-in provides; a status set to an error makes
 * the host skip the plug-in and drop whatever it registered. `host` stays valid for the life of
 * the process and may be kept. An init must not create a context (tp_context_create), on its
 * thread or on one it waits for: plug-ins load one at a time, so that call fails with
 * FAILED_PRECONDITION, which the init should pass on; other application functions may be
 * called. */
typedef void (*tp_plugin_init_fn)(const tp_host_api_t *host, tp_registrar_t *registrar,
                                  tp_plugin_status_t *status);

/* Returned by the entry point; must stay valid for the life of the process. abi_major and
 * abi_minor directly follow struct_size in every major version, so that the host can refuse a
 * descriptor it does not understand without reading further. */
typedef struct tp_plugin_descriptor {
    size_t struct_size;
    uint32_t abi_major; /* TP_ABI_MAJOR as the plug-in was built */
    uint32_t abi_minor; /* TP_ABI_MINOR as the plug-in was built */
    const char *name;   /* "apu" */
    const char *version;/* "0.1.0" */
    tp_plugin_init_fn init;
} tp_plugin_descriptor_t;

#define TP_PLUGIN_ENTRY_NAME "tp_plugin_entry"
typedef const tp_plugin_descriptor_t *(*tp_plugin_entry_fn)(void);

/* Declares a plug-in's one exported symbol:
 *     TP_PLUGIN_ENTRY { static const tp_plugin_descriptor_t d = {...}; return &d; }        */
TP_EXPORT const tp_plugin_descriptor_t *tp_plugin_entry(void);
#define TP_PLUGIN_ENTRY TP_EXPORT const tp_plugin_descriptor_t *tp_plugin_entry(void)

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLUG_PLUGIN_H */
