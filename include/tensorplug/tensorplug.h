/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tensorplug: a tensor runtime whose devices are plug-ins. The application API.
 *
 * Errors: every fallible function returns a tp_status_t pointer, NULL on success. A non-NULL
 * status is owned by the caller, who reads its code and message and frees it with
 * tp_status_free. A function that fails leaves its outputs untouched and changes nothing.
 *
 * Threads: unless a comment says otherwise, a context and the objects made from it may be used
 * from several threads at once; a tensor is immutable once created.
 */
#ifndef TENSORPLUG_TENSORPLUG_H
#define TENSORPLUG_TENSORPLUG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The vocabulary shared with plug-ins: tp_code_t, tp_dtype_t, TP_MAX_RANK. */
#include "tensorplug/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TP_API __attribute__((visibility("default")))
#define TP_MUST_USE __attribute__((warn_unused_result))
#else
#define TP_API
#define TP_MUST_USE
#endif

#define TP_VERSION_MAJOR 0
#define TP_VERSION_MINOR 1
#define TP_VERSION_PATCH 0
#define TP_VERSION_STRING "0.1.0"

/* The runtime's version, "0.1.0", and the plug-in ABI it speaks. */
TP_API const char *tp_version(void);
TP_API void tp_abi_version(uint32_t *out_major, uint32_t *out_minor);

/* ---- Status ---------------------------------------------------------------------------------- */

typedef struct tp_status tp_status_t;

/* Never NULL. */
TP_API tp_code_t tp_status_code(const tp_status_t *status);
/* The message, "" for NULL. Valid until the status is freed. */
TP_API const char *tp_status_message(const tp_status_t *status);
/* Frees a status; NULL is fine. */
TP_API void tp_status_free(tp_status_t *status);
/* "INVALID_ARGUMENT" and so on; "UNKNOWN_CODE" for a number that is not a code. */
TP_API const char *tp_code_name(tp_code_t code);
/* A new status of `code` carrying a copy of `message`, for callbacks the library calls (a traced
 * function's body, a replica function) to report their own failures; NULL for TP_OK. Never NULL
 * otherwise: without memory for the message, a RESOURCE_EXHAUSTED status stands in. */
TP_API TP_MUST_USE tp_status_t *tp_status_create(tp_code_t code, const char *message);

/* For programs (not the library) that treat any error as fatal: prints the message with the
 * call's place and exits. */
#define TP_CHECK(expr)                                                                          \
    do {                                                                                        \
        tp_status_t *tp_check_status_ = (expr);                                                 \
        if (tp_check_status_ != NULL) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,                              \
                    tp_code_name(tp_status_code(tp_check_status_)),                             \
                    tp_status_message(tp_check_status_));                                       \
            tp_status_free(tp_check_status_);                                                   \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

/* ---- Logging --------------------------------------------------------------------------------- */

/* Receives each line the runtime logs (plug-in refusals, warnings), without a newline, with
 * control bytes and line-moving characters escaped as \xHH. It may call the log functions
 * itself: a line it logs comes back to it once, then goes to standard error. */
typedef void (*tp_log_fn)(tp_log_level_t level, const char *line, void *user_data);

/* Sends the process's log lines to `fn` instead of standard error; NULL restores standard
 * error. Process-wide; thread-safe. Lines below `min_level` are dropped (default
 * TP_LOG_INFO; TP_LOG_LEVEL=debug|info|warning|error in the environment sets it too). */
TP_API void tp_log_set_callback(tp_log_fn fn, void *user_data);
TP_API void tp_log_set_level(tp_log_level_t min_level);

/* ---- Element types --------------------------------------------------------------------------- */

/* "float32", "float64", "int32", "int64", "uint8", "bool", "float16", "bfloat16", "int8",
 * "int16", "uint16", "uint32", "uint64"; NULL for an invalid dtype. */
TP_API const char *tp_dtype_name(tp_dtype_t dtype);
/* Bytes per element; 0 for an invalid dtype. */
TP_API size_t tp_dtype_size(tp_dtype_t dtype);
/* Parses a name printed by tp_dtype_name. */
TP_API TP_MUST_USE tp_status_t *tp_dtype_from_name(const char *name, tp_dtype_t *out_dtype);

/* ---- Shapes ---------------------------------------------------------------------------------- */

/* A value type: rank 0 is a scalar. Dimensions must be >= 0. */
typedef struct tp_shape {
    int32_t rank;
    int64_t dims[TP_MAX_RANK];
} tp_shape_t;

#define TP_SHAPE_NARGS_(...) TP_SHAPE_NARGS_N_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TP_SHAPE_NARGS_N_(a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
/* TP_SHAPE(2, 3) is the shape (2, 3); TP_SCALAR_SHAPE is (). */
#define TP_SHAPE(...) ((tp_shape_t){TP_SHAPE_NARGS_(__VA_ARGS__), {__VA_ARGS__}})
#define TP_SCALAR_SHAPE ((tp_shape_t){0, {0}})

/* Checks rank and dimensions and computes the element count, failing if it overflows int64. */
TP_API TP_MUST_USE tp_status_t *tp_shape_num_elements(const tp_shape_t *shape,
                                                       int64_t *out_count);
/* Writes "(2, 3)", "(5,)" or "()"; returns the length it needed, like snprintf. */
TP_API int tp_shape_format(const tp_shape_t *shape, char *buffer, size_t capacity);

/* ---- Device names ---------------------------------------------------------------------------- */

/*
 * A parsed device name. Accepted forms: "/job:localhost/replica:0/task:0/device:CPU:0",
 * "/device:GPU:1", "/cpu:0", "/APU:0", "/physical_device:APU:0", and partial ones such as
 * "/device:GPU", "GPU:1", "/job:localhost" or "/device:GPU:*". Fields that the name does not
 * give are marked absent. Type names are case-insensitive; parsing keeps the spelling given.
 */
typedef struct tp_device_spec {
    bool has_job, has_replica, has_task, has_type, has_id;
    bool physical; /* written as /physical_device:... */
    char job[64];
    int64_t replica, task;
    char type[32];
    int64_t id;
} tp_device_spec_t;

/* Fails with a message that quotes the name when it is malformed. */
TP_API TP_MUST_USE tp_status_t *tp_device_spec_parse(const char *name, tp_device_spec_t *out_spec);
/* Writes the canonical form of a complete spec, "/job:localhost/replica:0/task:0/device:CPU:0",
 * filling an absent replica with 0 and an absent job and task with this process's (localhost
 * and 0; under mpirun, worker and its index) and writing the type in upper case; fails if the
 * type or id is absent or the buffer is too small. */
TP_API TP_MUST_USE tp_status_t *tp_device_spec_canonical(const tp_device_spec_t *spec,
                                                       char *buffer, size_t capacity);

/* ---- Context --------------------------------------------------------------------------------- */

typedef struct tp_context tp_context_t;

/* Options of a context. Start from TP_CONTEXT_OPTIONS_INIT; zero fields mean the default. */
typedef struct tp_context_options {
    size_t struct_size;
    /* Folders searched for plug-ins, separated by ':'; an entry that names a file loads that
     * plug-in alone. NULL: the environment variable TP_PLUGIN_PATH. */
    const char *plugin_path;
    /* Do not search the installed plug-in folder (<prefix>/lib/tensorplug/plugins). */
    bool skip_installed_plugins;
    /* Load no plug-in at all: only the built-in CPU device. */
    bool no_plugins;
    /* Print "Executing op MatMul in device /job:localhost/replica:0/task:0/device:CPU:0" for
     * each op run (also turned on by TP_LOG_DEVICE_PLACEMENT=1). */
    bool log_device_placement;
    /* Where those lines go; NULL: standard error. */
    FILE *placement_log;
    /* A requested device that does not exist, or has no kernel for the op, falls back to the
     * best device that can run the op instead of failing. */
    bool soft_device_placement;
    /* Every fallback is an error: an op that would run on another device than the one asked
     * for, or than the highest-priority device present, fails instead. */
    bool strict_placement;
} tp_context_options_t;

#define TP_CONTEXT_OPTIONS_INIT                                                                \
    {sizeof(tp_context_options_t), NULL, false, false, false, NULL, false, false}

/* Creates a context: the first one in the process finds and loads the plug-ins, and each
 * context registers the devices of those its search path finds. A plug-in that cannot be used
 * is skipped with one log line naming its file and the reason; it never fails the context.
 * `options` may be NULL for the defaults. */
TP_API TP_MUST_USE tp_status_t *tp_context_create(const tp_context_options_t *options,
                                                 tp_context_t **out_context);
/* Waits for the context's work, releases its devices; tensors must have been released first.
 * NULL is fine. */
TP_API void tp_context_destroy(tp_context_t *context);
/* Waits for all work queued on every device of the context, tensors' deferred frees included.
 * A failure of work that computes a tensor is that tensor's (tp_tensor_wait) and is not
 * reported here; this reports only a failure a device raised outside any tensor's work. */
TP_API TP_MUST_USE tp_status_t *tp_context_synchronize(tp_context_t *context);

/* ---- Plug-ins -------------------------------------------------------------------------------- */

/* What a context knows of one plug-in file, or of a built-in plug-in. Strings live as long as
 * the context. */
typedef struct tp_plugin_info {
    size_t struct_size;
    const char *path;      /* the file, or "<built-in>" */
    bool loaded;           /* false: refused, and `reason` says why */
    const char *reason;    /* "" when loaded */
    const char *name;      /* from the descriptor; "" when it could not be read */
    const char *version;   /* likewise */
    uint32_t abi_major, abi_minor;
    const char *device_types; /* "APU" or "APU,XPU"; "" for none */
    size_t num_ops;
    size_t num_kernels;
    bool has_graph_pass;
} tp_plugin_info_t;

/* Plug-ins in discovery order: built-ins first, then files sorted by path within each folder,
 * folders in search order. */
TP_API size_t tp_plugin_count(const tp_context_t *context);
/* Set out_info->struct_size first; the fields it covers are filled. */
TP_API TP_MUST_USE tp_status_t *tp_plugin_get(const tp_context_t *context, size_t index,
                                             tp_plugin_info_t *out_info);

/* What one check of tp_plugin_check concluded. */
typedef enum tp_plugin_check_outcome {
    TP_PLUGIN_CHECK_PASSED,
    TP_PLUGIN_CHECK_FAILED,
    TP_PLUGIN_CHECK_NOT_APPLICABLE,
} tp_plugin_check_outcome_t;

/* One check's verdict, as tp_plugin_check prints it on one line ("pass  <name>: <message>").
 * The strings live until the callback returns. */
typedef struct tp_plugin_check_verdict {
    size_t struct_size;
    const char *name;    /* "load", "APU:0 events", "kernel Relu on APU, float32", ... */
    tp_plugin_check_outcome_t outcome;
    const char *message; /* the detail of a pass, the reason of a failure, or why it is n/a */
} tp_plugin_check_verdict_t;

/* Options of tp_plugin_check. Start from TP_PLUGIN_CHECK_OPTIONS_INIT. */
typedef struct tp_plugin_check_options {
    size_t struct_size;
    /* Check only the devices and kernels of this device type (case-insensitive); NULL: every
     * type the plug-in registers. */
    const char *device_type;
    /* Seeds the random sizes, offsets and values, so that a failure can be repeated; 0: a
     * fixed default. */
    uint64_t seed;
    /* A check that has not ended after this many seconds fails as hung; 0: 120. */
    int32_t timeout_seconds;
    /* Called with each verdict as it is reached, in the order of the printed lines, on the
     * calling thread; NULL: none. For a report in another form than the printed one. */
    void (*on_verdict)(const tp_plugin_check_verdict_t *verdict, void *user_data);
    void *user_data; /* passed to on_verdict */
} tp_plugin_check_options_t;

#define TP_PLUGIN_CHECK_OPTIONS_INIT {sizeof(tp_plugin_check_options_t), NULL, 0, 0, NULL, NULL}

/*
 * The conformance check for plug-in authors: loads the plug-in file at `path` alone (beside the
 * built-in CPU) and checks its descriptor and registrations, its devices' memory, copies,
 * stream order, events and host waits, each kernel against the CPU's kernel of the same op on
 * random inputs of every dtype it claims, the errors its kernels pass on, and two threads at
 * once. Prints one line per check to `out` ("pass", "FAIL" with the reason, or "n/a" with why)
 * and ends with "N passed, N failed"; `out` may be NULL to print nothing (options->on_verdict
 * then gets the verdicts). Each check runs in a child process of its own, so one
 * that crashes or hangs fails alone; call it from a program that has not started threads.
 * Returns an error only when the check cannot run at all; the counts may be NULL.
 */
TP_API TP_MUST_USE tp_status_t *tp_plugin_check(const char *path,
                                               const tp_plugin_check_options_t *options,
                                               FILE *out, int32_t *out_passed,
                                               int32_t *out_failed);

/* ---- Physical devices ------------------------------------------------------------------------ */

typedef struct tp_physical_device tp_physical_device_t;

/* Number of physical devices, of one type (case-insensitive) or of all types for NULL. Devices
 * are ordered by type registration order (the CPU first), then ordinal. */
TP_API size_t tp_physical_device_count(const tp_context_t *context, const char *type);
/* The index-th device among those of `type` (NULL: all). Owned by the context. */
TP_API TP_MUST_USE tp_status_t *tp_physical_device_get(const tp_context_t *context,
                                                      const char *type, size_t index,
                                                      const tp_physical_device_t **out_device);
/* Looks a device up by any accepted form of its name ("/physical_device:APU:0", "/apu:0"). */
TP_API TP_MUST_USE tp_status_t *tp_physical_device_find(const tp_context_t *context,
                                                       const char *name,
                                                       const tp_physical_device_t **out_device);
/* "/physical_device:CPU:0". */
TP_API const char *tp_physical_device_name(const tp_physical_device_t *device);
/* "CPU", as the plug-in registered it. */
TP_API const char *tp_physical_device_type(const tp_physical_device_t *device);
TP_API int32_t tp_physical_device_ordinal(const tp_physical_device_t *device);
TP_API const char *tp_physical_device_hardware_name(const tp_physical_device_t *device);
TP_API const char *tp_physical_device_vendor(const tp_physical_device_t *device);
/* What the plug-in says of its driver ("OpenCL 3.0 PoCL 3.1, driver 3.1"), "" if nothing;
 * and the device's compute units (cores, streaming multiprocessors), 0 if it does not say. */
TP_API const char *tp_physical_device_driver_version(const tp_physical_device_t *device);
TP_API int32_t tp_physical_device_compute_units(const tp_physical_device_t *device);
TP_API uint64_t tp_physical_device_memory_bytes(const tp_physical_device_t *device);
/* "/job:localhost/replica:0/task:0/device:CPU:0": the name of the device with the same ordinal
 * (the logical device ops run on, unless devices were split or hidden). */
TP_API const char *tp_physical_device_full_name(const tp_physical_device_t *device);

/* Prints one line per physical device of `type` (NULL: all):
 *     PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')                       */
TP_API TP_MUST_USE tp_status_t *tp_list_physical_devices(const tp_context_t *context,
                                                        const char *type, FILE *out);

/* ---- Device memory, logical devices, visible devices ------------------------------------------
 *
 * A context makes its logical devices, the ones ops run on and tensors live in, the first time
 * it needs them: at the first tensor, op or logical-device query. Until then the application
 * may configure the physical devices with the calls below; afterwards they fail with
 * "Physical devices cannot be modified after being initialized". Each call changes nothing
 * when it fails.
 *
 * `device` names physical devices in any accepted form: one device ("APU:0",
 * "/physical_device:APU:0"), every device of a type ("APU"), or every device (NULL). An option
 * a device cannot honour is an error that names the device, never a silent no-op.
 *
 * By default the first tensor on a device reserves nearly all of its memory in one region (its
 * total less 1/50, at least 16 MiB, at most half); the host's CPU, whose memory is shared with
 * everything else, grows instead. TP_FORCE_ALLOW_GROWTH=true|false overrides every device. */

/* Memory growth: the device starts with a small region (2 MiB) and adds regions, each twice the
 * last, as tensors need them; it never gives memory back. */
TP_API TP_MUST_USE tp_status_t *tp_context_set_memory_growth(tp_context_t *context,
                                                            const char *device, bool enabled);
/* Caps what each device reserves at `fraction` (0 < fraction <= 1) of its total memory. */
TP_API TP_MUST_USE tp_status_t *tp_context_set_memory_fraction(tp_context_t *context,
                                                              const char *device,
                                                              double fraction);
/* Caps what each device reserves at `bytes`. With a fraction too, the smaller cap holds. */
TP_API TP_MUST_USE tp_status_t *tp_context_set_memory_limit(tp_context_t *context,
                                                           const char *device, uint64_t bytes);
/* Splits one physical device into `count` logical devices, the i-th limited to
 * `memory_limits[i]` bytes, each with its own stream and allocator. Logical devices are
 * numbered per type in the order of their physical devices: with APU:0 split in two, APU:0
 * and APU:1 share physical APU:0, and physical APU:1 becomes logical APU:2. Growth, fractions
 * and limits do not combine with a split. */
TP_API TP_MUST_USE tp_status_t *tp_context_set_logical_devices(tp_context_t *context,
                                                              const char *device,
                                                              const uint64_t *memory_limits,
                                                              size_t count);
/* The physical devices the context uses, as a comma-separated list ("APU:1,CPU:0"): only the
 * listed devices stay visible, renumbered from 0 per type in their order, and every device of a
 * type the list does not name is hidden, so that "CPU:0" hides every plug-in's devices. CPU:0
 * stays visible whether named or not: host data enters and leaves through it. The environment
 * variable TP_VISIBLE_DEVICES, read when the context is created, does the same. */
TP_API TP_MUST_USE tp_status_t *tp_context_set_visible_devices(tp_context_t *context,
                                                              const char *devices);

typedef struct tp_logical_device_info {
    size_t struct_size;          /* set to sizeof(tp_logical_device_info_t) */
    const char *name;            /* "/job:localhost/replica:0/task:0/device:APU:1" */
    const char *device_type;     /* "APU" */
    int32_t ordinal;             /* 1 */
    const char *physical_device; /* "/physical_device:APU:0" */
} tp_logical_device_info_t;

/* The number of logical devices of `type` (NULL: all); makes them if need be. */
TP_API TP_MUST_USE tp_status_t *tp_logical_device_count(tp_context_t *context, const char *type,
                                                       size_t *out_count);
/* The index-th logical device of `type` (NULL: all). The strings belong to the context. */
TP_API TP_MUST_USE tp_status_t *tp_logical_device_get(tp_context_t *context, const char *type,
                                                     size_t index,
                                                     tp_logical_device_info_t *out_info);
/* Prints one line per logical device of `type` (NULL: all):
 *     LogicalDevice(name='/job:localhost/replica:0/task:0/device:CPU:0', device_type='CPU') */
TP_API TP_MUST_USE tp_status_t *tp_list_logical_devices(tp_context_t *context, const char *type,
                                                       FILE *out);

typedef struct tp_memory_stats {
    size_t struct_size;          /* set to sizeof(tp_memory_stats_t) */
    uint64_t bytes_in_use;       /* by live tensors, in the allocator's 256-byte units */
    uint64_t peak_bytes_in_use;  /* since the device was made or tp_context_reset_peak_memory */
    uint64_t bytes_reserved;     /* taken from the device so far */
    uint64_t bytes_limit;        /* the most the allocator will take; UINT64_MAX: no limit */
    uint64_t largest_free_block; /* the largest allocation that fits without taking more */
    uint64_t num_allocations;    /* live */
    uint64_t total_allocations;  /* ever */
} tp_memory_stats_t;

/* The allocator statistics of one logical device ("APU:1", "/device:CPU:0"). Thread-safe. */
TP_API TP_MUST_USE tp_status_t *tp_context_memory_stats(tp_context_t *context, const char *device,
                                                       tp_memory_stats_t *out_stats);
/* Starts the peak of one logical device over from its bytes in use now. */
TP_API TP_MUST_USE tp_status_t *tp_context_reset_peak_memory(tp_context_t *context,
                                                            const char *device);

/* ---- Placement ------------------------------------------------------------------------------- */

/* Requests a device for the ops this thread runs on this context until the matching
 * tp_device_pop, as TensorFlow's `with tf.device(name)`: any accepted device name form, partial
 * ones included ("/device:APU", "/cpu:0"). Scopes nest, per thread. A malformed name fails
 * here; a device that does not exist fails (or, with soft placement, falls back) when an op
 * runs. */
TP_API TP_MUST_USE tp_status_t *tp_device_push(tp_context_t *context, const char *name);
/* Ends the innermost scope this thread pushed on `context`; fails if there is none. */
TP_API TP_MUST_USE tp_status_t *tp_device_pop(tp_context_t *context);

TP_API void tp_context_set_log_device_placement(tp_context_t *context, bool enabled);
TP_API void tp_context_set_soft_device_placement(tp_context_t *context, bool enabled);

/* How many times op `op` ran on another device than the one placement preferred (see
 * strict_placement), since the context was created; NULL counts every op. */
TP_API uint64_t tp_context_fallback_count(const tp_context_t *context, const char *op);

/* ---- Tensors --------------------------------------------------------------------------------- */

typedef struct tp_tensor tp_tensor_t;

/* A tensor of `shape` on the host's CPU:0 device, holding a copy of `data`, which must be
 * exactly num_elements * tp_dtype_size(dtype) bytes (`size`). The tensor starts with one
 * reference, owned by the caller. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_create(tp_context_t *context, tp_dtype_t dtype,
                                                tp_shape_t shape, const void *data, size_t size,
                                                tp_tensor_t **out_tensor);
/* Adds a reference; returns the tensor. */
TP_API tp_tensor_t *tp_tensor_retain(tp_tensor_t *tensor);
/* Drops a reference; the last one frees the tensor's memory on its device. NULL is fine. */
TP_API void tp_tensor_release(tp_tensor_t *tensor);

TP_API tp_dtype_t tp_tensor_dtype(const tp_tensor_t *tensor);
TP_API tp_shape_t tp_tensor_shape(const tp_tensor_t *tensor);
TP_API int64_t tp_tensor_num_elements(const tp_tensor_t *tensor);
TP_API size_t tp_tensor_byte_size(const tp_tensor_t *tensor);
/* The canonical name of the device that holds the tensor. */
TP_API const char *tp_tensor_device(const tp_tensor_t *tensor);

/* Waits until the work that produces the tensor's values is done. A tensor whose values could
 * not be computed (a kernel, copy or allocation failed, on this op or on any op it was
 * computed from) is poisoned: this and every other read of it (tp_tensor_read, printing, use
 * as an op's input) return the original failure, which names the op and the device where it
 * happened. A failure reaches only the tensors computed from the failed work. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_wait(tp_tensor_t *tensor);

/* Without waiting: *out_ready is true once the values are computed or known to be poisoned,
 * and the failure is then returned as tp_tensor_wait would. Ops are queued on asynchronous
 * devices, so an op's output may still be pending when the op returns. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_query(tp_tensor_t *tensor, bool *out_ready);

/* Copies the values to `data` (exactly tp_tensor_byte_size bytes), waiting for the work that
 * produces them; a poisoned tensor returns its failure (see tp_tensor_wait). */
TP_API TP_MUST_USE tp_status_t *tp_tensor_read(tp_tensor_t *tensor, void *data, size_t size);

/* Zero-copy access for bindings (NumPy's buffer protocol, DLPack). A tensor is immutable: the
 * bytes must not be written. */

/* Waits for the tensor's values and gives the host address of its first byte, valid while the
 * caller holds a reference to the tensor: for tensors on a device whose memory the host
 * addresses (the built-in CPU and its logical devices). Any other device fails with
 * FAILED_PRECONDITION naming it (tp_tensor_read copies from there); a poisoned tensor returns
 * its failure. An empty tensor gives a non-NULL address that must not be read. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_host_data(tp_tensor_t *tensor, const void **out_data);

/* Called once the runtime no longer reads a borrowed tensor's memory, on whichever thread
 * takes it back (after the last reference goes and the work queued on it is done), possibly
 * with runtime locks held: it must not call the runtime. */
typedef void (*tp_release_fn)(void *release_arg);

/* A tensor on the host's CPU:0 whose values are `data` itself, not a copy: `size` bytes (exactly
 * the shape's byte size), at an address aligned to 16 bytes and to the element size, that stay
 * valid and unchanged until release_fn(release_arg) is called (NULL: never). The device's memory
 * statistics do not count it. Misaligned data fails with INVALID_ARGUMENT (copy it with
 * tp_tensor_create); bool values must be 0 or 1, as tp_tensor_create checks. On failure
 * release_fn is not called. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_create_borrowed(tp_context_t *context, tp_dtype_t dtype,
                                                         tp_shape_t shape, const void *data,
                                                         size_t size, tp_release_fn release_fn,
                                                         void *release_arg,
                                                         tp_tensor_t **out_tensor);

/* Formats the tensor as NumPy and TensorFlow users know it:
 *     tp.Tensor(
 *     [[22. 28.]
 *      [49. 64.]], shape=(2, 2), dtype=float32)
 * Waits for the values. *out_text is allocated with malloc; the caller frees it. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_format(tp_tensor_t *tensor, char **out_text);
/* tp_tensor_format, then writes the text and a newline to `out`. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_print(tp_tensor_t *tensor, FILE *out);

/* ---- Saving and loading tensors: NumPy's .npy files -----------------------------------------
 *
 * The format of numpy.save and numpy.load (numpy.lib.format), version 1.0, C order, in the
 * host's byte order: numpy.load(path) gives an array of the tensor's dtype ('<f4', '<f8',
 * '<f2', '|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8', '|b1') and shape. NumPy has no
 * bfloat16: its tensors are the record [('bfloat16', '<u2')] of their bits, which numpy.load
 * reads as it is (a['bfloat16'].astype('<u4') << 16, viewed as '<f4', gives the values) and
 * tensorplug reads back as bfloat16. Loading reads versions 1.0, 2.0 and 3.0, either byte
 * order and Fortran order (which numpy.save writes for a transposed array): the tensor is the
 * array in C order. Anything else is refused with INVALID_ARGUMENT and a message naming the
 * file and what is wrong: not a .npy file, an unknown version, a header that is not NumPy's
 * dict, a dtype tensorplug does not hold (objects, strings, other records, raw bytes, complex
 * numbers, ...), a negative or overflowing dimension, a rank over TP_MAX_RANK, a file shorter
 * (truncated) or longer than its header says. */

/* Writes the tensor's values (waiting for them, from any device) to `path`, replacing the file
 * atomically: the bytes go to a new file in the same folder, flushed to disk, then renamed, so
 * that a failed save leaves the old file (or none) and never a part of one. A system error
 * names the path and the system's reason (NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED
 * for a full disk). Thread-safe. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_save_npy(tp_tensor_t *tensor, const char *path);
/* A new tensor on the host's CPU:0 (as tp_tensor_create) holding the array in the .npy file at
 * `path`; the caller owns it. Thread-safe. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_load_npy(tp_context_t *context, const char *path,
                                                  tp_tensor_t **out_tensor);
/* The same in memory: the bytes of a .npy file holding the tensor's values (*out_bytes is
 * allocated with malloc; the caller frees it), and a tensor on CPU:0 from such bytes, checked
 * as a loaded file is. */
TP_API TP_MUST_USE tp_status_t *tp_tensor_encode_npy(tp_tensor_t *tensor, void **out_bytes,
                                                    size_t *out_size);
TP_API TP_MUST_USE tp_status_t *tp_tensor_decode_npy(tp_context_t *context, const void *bytes,
                                                    size_t size, tp_tensor_t **out_tensor);

/* ---- Running ops ----------------------------------------------------------------------------- */

/* An attribute of an op call. Fill the field its type uses; TP_ATTR_* helpers below. */
typedef struct tp_attr {
    const char *name;
    tp_attr_type_t type;
    int64_t i;           /* TP_ATTR_INT, TP_ATTR_BOOL (0 or 1), TP_ATTR_DTYPE */
    double f;            /* TP_ATTR_FLOAT */
    const int64_t *list; /* TP_ATTR_INT_LIST, TP_ATTR_SHAPE */
    int32_t count;
    const char *s;       /* TP_ATTR_STRING; TP_ATTR_BYTES: `count` bytes at `s` */
} tp_attr_t;

#define TP_ATTR_INT_VALUE(n, v) ((tp_attr_t){.name = (n), .type = TP_ATTR_INT, .i = (v)})
#define TP_ATTR_FLOAT_VALUE(n, v) ((tp_attr_t){.name = (n), .type = TP_ATTR_FLOAT, .f = (v)})
#define TP_ATTR_BOOL_VALUE(n, v) ((tp_attr_t){.name = (n), .type = TP_ATTR_BOOL, .i = !!(v)})
#define TP_ATTR_DTYPE_VALUE(n, v) ((tp_attr_t){.name = (n), .type = TP_ATTR_DTYPE, .i = (v)})
#define TP_ATTR_LIST_VALUE(n, values, c)                                                      \
    ((tp_attr_t){.name = (n), .type = TP_ATTR_INT_LIST, .list = (values), .count = (c)})
#define TP_ATTR_STRING_VALUE(n, v) ((tp_attr_t){.name = (n), .type = TP_ATTR_STRING, .s = (v)})

/*
 * Runs op `op` now, on the device placement picks (see tp_device_push), with any registered
 * op, plug-ins' ops included. Inputs on other devices are copied to the op's device. Type
 * attributes ("T") are taken from the inputs; other attributes not given take their defaults.
 * Each output is a new tensor the caller owns. Returns once the work is queued: reading an
 * output waits for it, and an error the device finds later is reported there.
 */
TP_API TP_MUST_USE tp_status_t *tp_execute(tp_context_t *context, const char *op,
                                          tp_tensor_t *const *inputs, size_t num_inputs,
                                          const tp_attr_t *attrs, size_t num_attrs,
                                          tp_tensor_t **outputs, size_t num_outputs);

/* The built-in ops, by name. Each is tp_execute with its inputs and attributes. */
/* Const: a tensor holding a copy of `data` (exactly its byte size), made by the Const op on the
 * device placement picks (the CPU unless a scope asks for another). */
TP_API TP_MUST_USE tp_status_t *tp_constant(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape,
                                           const void *data, size_t size, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_identity(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_relu(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_sigmoid(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_tanh(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_exp(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_log(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_sqrt(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
/* 1 / sqrt(x). */
TP_API TP_MUST_USE tp_status_t *tp_rsqrt(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_neg(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_abs(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
/* -1, 0 or 1 as x is negative, zero or positive; a float 0 keeps its sign and NaN stays NaN. */
TP_API TP_MUST_USE tp_status_t *tp_sign(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_square(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_zeros_like(tp_context_t *c, tp_tensor_t *x,
                                             tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_ones_like(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
/* Element-wise with NumPy broadcasting. */
TP_API TP_MUST_USE tp_status_t *tp_add(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                      tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_sub(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                      tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_mul(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                      tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_div(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                      tp_tensor_t **out);
/* x to the power y, element-wise with NumPy broadcasting (TensorFlow's Pow): floats as C's pow
 * has it (0^0 = 1, a negative base to a whole power keeps its sign, to a fractional one is
 * NaN); integers exactly, wrapping as Mul does, and a negative exponent of a signed integer
 * dtype fails with INVALID_ARGUMENT, as TensorFlow refuses it. */
TP_API TP_MUST_USE tp_status_t *tp_pow(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                      tp_tensor_t **out);
/* The larger and the smaller of x and y, element-wise with NumPy broadcasting; a NaN in
 * either gives NaN, as TensorFlow's Maximum and Minimum do. */
TP_API TP_MUST_USE tp_status_t *tp_maximum(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                          tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_minimum(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                          tp_tensor_t **out);
/* The sum of `count` tensors of one shape and dtype. */
TP_API TP_MUST_USE tp_status_t *tp_add_n(tp_context_t *c, tp_tensor_t *const *inputs,
                                        size_t count, tp_tensor_t **out);
/* op(a) @ op(b), op a transpose where asked for. Two matrices run MatMul; where either has more
 * than two dimensions, each is a batch of matrices in its last two, the batch dimensions
 * broadcast as NumPy's, and the op is BatchMatMulV2 (its adj_x and adj_y the transposes):
 * [2, 1, M, K] @ [3, K, N] is [2, 3, M, N]. */
TP_API TP_MUST_USE tp_status_t *tp_matmul(tp_context_t *c, tp_tensor_t *a, tp_tensor_t *b,
                                         bool transpose_a, bool transpose_b, tp_tensor_t **out);
/* x + bias along x's last dimension. */
TP_API TP_MUST_USE tp_status_t *tp_bias_add(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *bias,
                                           tp_tensor_t **out);
/* Reductions over `axes` (negative counts from the end; none: every axis). */
TP_API TP_MUST_USE tp_status_t *tp_sum(tp_context_t *c, tp_tensor_t *x, const int64_t *axes,
                                      size_t num_axes, bool keep_dims, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_mean(tp_context_t *c, tp_tensor_t *x, const int64_t *axes,
                                       size_t num_axes, bool keep_dims, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_max(tp_context_t *c, tp_tensor_t *x, const int64_t *axes,
                                      size_t num_axes, bool keep_dims, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_min(tp_context_t *c, tp_tensor_t *x, const int64_t *axes,
                                      size_t num_axes, bool keep_dims, tp_tensor_t **out);
/* The product; of nothing it is 1. Integers wrap as Mul does. */
TP_API TP_MUST_USE tp_status_t *tp_prod(tp_context_t *c, tp_tensor_t *x, const int64_t *axes,
                                       size_t num_axes, bool keep_dims, tp_tensor_t **out);
/* One dimension of `shape` may be -1: it is inferred. */
TP_API TP_MUST_USE tp_status_t *tp_reshape(tp_context_t *c, tp_tensor_t *x, tp_shape_t shape,
                                          tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_transpose(tp_context_t *c, tp_tensor_t *x,
                                            const int64_t *perm, size_t rank,
                                            tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_cast(tp_context_t *c, tp_tensor_t *x, tp_dtype_t dtype,
                                       tp_tensor_t **out);
/* Softmax over the last dimension. */
TP_API TP_MUST_USE tp_status_t *tp_softmax(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out);
/* A tensor of `shape` filled with the scalar `value`. */
TP_API TP_MUST_USE tp_status_t *tp_fill(tp_context_t *c, tp_shape_t shape, tp_tensor_t *value,
                                       tp_tensor_t **out);
/* Random values, reproducible for a given seed: N(0, 1), and uniform in [0, 1). Drawn from
 * Philox-4x32-10 keyed by the seed, as TensorFlow and PyTorch draw theirs: element i depends
 * only on the seed and i, different seeds give independent streams, and every device draws the
 * CPU's values (uniform float32 values have 24 random bits, float64 53; normal values are
 * Box-Muller pairs of those). */
TP_API TP_MUST_USE tp_status_t *tp_random_normal(tp_context_t *c, tp_dtype_t dtype,
                                                tp_shape_t shape, int64_t seed,
                                                tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_random_uniform(tp_context_t *c, tp_dtype_t dtype,
                                                 tp_shape_t shape, int64_t seed,
                                                 tp_tensor_t **out);

/* ---- Neural-network ops (TensorFlow's semantics; float32 and float64) ---------------------- */

/* log(softmax(x)) over the last dimension, computed as x - max - log(sum(exp(x - max))), so
 * finite for logits of any size. */
TP_API TP_MUST_USE tp_status_t *tp_log_softmax(tp_context_t *c, tp_tensor_t *x,
                                              tp_tensor_t **out);
/* SoftmaxCrossEntropyWithLogits: features and labels [batch, classes] of one shape and dtype;
 * loss[b] = -sum_j labels[b, j] log(softmax(features[b])[j]), and backprop = softmax(features) -
 * labels (the gradient of the loss when each row of labels sums to one). `backprop` may be NULL.
 * A loss that is NaN or infinite fails with INVALID_ARGUMENT naming the op and the row. */
TP_API TP_MUST_USE tp_status_t *tp_softmax_cross_entropy_with_logits(tp_context_t *c,
                                                                    tp_tensor_t *features,
                                                                    tp_tensor_t *labels,
                                                                    tp_tensor_t **loss,
                                                                    tp_tensor_t **backprop);
/* SparseSoftmaxCrossEntropyWithLogits: labels are class indices [batch] (int32 or int64);
 * loss[b] = -log(softmax(features[b])[labels[b]]). A label outside [0, classes) fails with
 * INVALID_ARGUMENT naming its row and value; a loss that is NaN or infinite as above. */
TP_API TP_MUST_USE tp_status_t *tp_sparse_softmax_cross_entropy_with_logits(
    tp_context_t *c, tp_tensor_t *features, tp_tensor_t *labels, tp_tensor_t **loss,
    tp_tensor_t **backprop);
/* FusedBatchNorm over the last dimension (channels) of x, [batch, channels] or NHWC: y =
 * scale (x - mean) / sqrt(variance + epsilon) + offset, each vector [channels]. Training
 * normalises with the batch's mean and (biased) variance and gives, in batch_mean and
 * batch_variance, the running averages (1 - f) mean + f batch_mean, where the batch's variance
 * is corrected by n / (n - 1) and f is exponential_avg_factor in [0, 1] (1: the batch's own).
 * Inference normalises with mean and variance and passes them through. batch_mean and
 * batch_variance may be NULL. TensorFlow's defaults: epsilon 1e-4, factor 1. */
TP_API TP_MUST_USE tp_status_t *tp_fused_batch_norm(tp_context_t *c, tp_tensor_t *x,
                                                   tp_tensor_t *scale, tp_tensor_t *offset,
                                                   tp_tensor_t *mean, tp_tensor_t *variance,
                                                   double epsilon, bool is_training,
                                                   double exponential_avg_factor,
                                                   tp_tensor_t **y, tp_tensor_t **batch_mean,
                                                   tp_tensor_t **batch_variance);
/* Dropout: each element of x is kept, scaled by 1 / (1 - rate), with probability 1 - rate, or
 * set to 0; rate in [0, 1) (0: y is x). The draw is Philox with `seed`, the stream of
 * tp_random_uniform: element i is kept where tp_random_uniform(float32, seed) draws a value >=
 * rate. The same seed drops the same elements, so give each training step its own seed (a
 * traced function draws anew at each call). `mask` (may be NULL) receives the factors, 0 or
 * 1 / (1 - rate), that the gradient multiplies by. */
TP_API TP_MUST_USE tp_status_t *tp_dropout(tp_context_t *c, tp_tensor_t *x, double rate,
                                          int64_t seed, tp_tensor_t **y, tp_tensor_t **mask);
/* ---- Array ops (TensorFlow's, with axes, begins, sizes, multiples and paddings as arguments
 * rather than tensors). Negative axes count from the end. Ops that only move elements take
 * every dtype. Bad arguments fail with INVALID_ARGUMENT naming the op and the bad value. */

/* The index of the largest (smallest) element along `axis`, as `index_dtype` (TP_INT32 or
 * TP_INT64); ties give the first index. NaN counts as beyond every number in both searches, so
 * the first NaN's index is given, as NumPy does (TensorFlow leaves it unspecified). */
TP_API TP_MUST_USE tp_status_t *tp_argmax(tp_context_t *c, tp_tensor_t *x, int64_t axis,
                                         tp_dtype_t index_dtype, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_argmin(tp_context_t *c, tp_tensor_t *x, int64_t axis,
                                         tp_dtype_t index_dtype, tp_tensor_t **out);
/* `count` tensors of one dtype and rank (>= 1), joined along `axis`; they agree in every other
 * dimension. */
TP_API TP_MUST_USE tp_status_t *tp_concat(tp_context_t *c, tp_tensor_t *const *inputs,
                                         size_t count, int64_t axis, tp_tensor_t **out);
/* x[begin[d] : begin[d] + size[d]] in each of its `rank` dimensions; size[d] = -1 runs to the
 * end. */
TP_API TP_MUST_USE tp_status_t *tp_slice(tp_context_t *c, tp_tensor_t *x, const int64_t *begin,
                                        const int64_t *size, size_t rank, tp_tensor_t **out);
/* The masks of tp_strided_slice: bit i applies to entry i of the spec. */
typedef struct tp_strided_slice_masks {
    int64_t begin_mask;       /* entry i starts at the first element (last, stepping back) */
    int64_t end_mask;         /* entry i runs to the end (the start, stepping back) */
    int64_t ellipsis_mask;    /* entry i stands for every dimension no entry names (one bit) */
    int64_t new_axis_mask;    /* entry i inserts a dimension of size 1 */
    int64_t shrink_axis_mask; /* entry i takes the single index begin[i] and drops its dimension */
} tp_strided_slice_masks_t;
/* Python's x[begin:end:stride, ...] with TensorFlow's rules: `count` entries in begin, end and
 * strides (NULL: every stride 1); negative indices count from the end; bounds are clamped to
 * the dimension as Python clamps them; a negative stride walks backwards. Dimensions no entry
 * names are taken whole. masks NULL: none. */
TP_API TP_MUST_USE tp_status_t *tp_strided_slice(tp_context_t *c, tp_tensor_t *x,
                                                const int64_t *begin, const int64_t *end,
                                                const int64_t *strides, size_t count,
                                                const tp_strided_slice_masks_t *masks,
                                                tp_tensor_t **out);
/* params' slices along `axis` at `indices` (int32 or int64): the result's shape is params'
 * dimensions before the axis, then indices', then params' after it. An index outside the axis
 * fails naming its value and place ("indices[1,0] = 7 is not in [0, 5)"). */
TP_API TP_MUST_USE tp_status_t *tp_gather(tp_context_t *c, tp_tensor_t *params,
                                         tp_tensor_t *indices, int64_t axis, tp_tensor_t **out);
/* The sum of data's rows that share a segment id (int32 or int64): segment_ids' shape is the
 * leading part of data's, and the result is [num_segments] followed by the rest. Rows with a
 * negative id are dropped; an id >= num_segments fails. */
TP_API TP_MUST_USE tp_status_t *tp_unsorted_segment_sum(tp_context_t *c, tp_tensor_t *data,
                                                       tp_tensor_t *segment_ids,
                                                       int64_t num_segments, tp_tensor_t **out);
/* A new dimension of size `depth` at `axis` (-1: last) that holds on_value at each index and
 * off_value elsewhere, in `dtype`; an index outside [0, depth) gives all off_value, as in
 * TensorFlow. indices: uint8, int32 or int64. For an integer dtype the values must be whole
 * and in range. */
TP_API TP_MUST_USE tp_status_t *tp_one_hot(tp_context_t *c, tp_tensor_t *indices, int64_t depth,
                                          double on_value, double off_value, int64_t axis,
                                          tp_dtype_t dtype, tp_tensor_t **out);
/* x with paddings[2d] elements before and paddings[2d + 1] after it in each of its `rank`
 * dimensions, all `constant_value`. */
TP_API TP_MUST_USE tp_status_t *tp_pad(tp_context_t *c, tp_tensor_t *x, const int64_t *paddings,
                                      size_t rank, double constant_value, tp_tensor_t **out);
/* x repeated multiples[d] times along each of its `rank` dimensions. */
TP_API TP_MUST_USE tp_status_t *tp_tile(tp_context_t *c, tp_tensor_t *x,
                                       const int64_t *multiples, size_t rank,
                                       tp_tensor_t **out);
/* Where the bool condition holds, t's element, else e's; all three broadcast together
 * (TensorFlow's SelectV2, NumPy's where). */
TP_API TP_MUST_USE tp_status_t *tp_select(tp_context_t *c, tp_tensor_t *condition,
                                         tp_tensor_t *t, tp_tensor_t *e, tp_tensor_t **out);
/* Element-wise comparisons with NumPy broadcasting, giving bool tensors. Equal and NotEqual
 * take bool too. NaN compares unequal to everything. */
TP_API TP_MUST_USE tp_status_t *tp_equal(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                        tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_not_equal(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                            tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_less(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                       tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_less_equal(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                             tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_greater(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *y,
                                          tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_greater_equal(tp_context_t *c, tp_tensor_t *x,
                                                tp_tensor_t *y, tp_tensor_t **out);
/* Convolution and pooling of NHWC images ([batch, height, width, channels]), as TensorFlow's
 * Conv2D, MaxPool and AvgPool compute them. VALID uses only windows that lie inside the
 * image; SAME pads (with zeros for Conv2D, ignored by pooling) so that the output has
 * ceil(size / stride) rows and columns. */
typedef enum tp_padding { TP_PADDING_VALID = 0, TP_PADDING_SAME = 1 } tp_padding_t;

/* Zero-initialized means stride 1, dilation 1, VALID: `&(tp_conv2d_options_t){.padding =
 * TP_PADDING_SAME, .stride_height = 2, .stride_width = 2}` says only what differs. */
typedef struct tp_conv2d_options {
    int32_t stride_height, stride_width;     /* 0: 1 */
    int32_t dilation_height, dilation_width; /* taps this far apart; 0: 1 (adjacent) */
    tp_padding_t padding;
} tp_conv2d_options_t;

/* Conv2D: `input` [N,H,W,C] convolved (as a cross-correlation, like every framework) with
 * `filter` [KH,KW,C,O], giving [N,OH,OW,O]. float32 and float64, and float16 and bfloat16
 * computed in float32; options NULL: all defaults. */
TP_API TP_MUST_USE tp_status_t *tp_conv2d(tp_context_t *c, tp_tensor_t *input,
                                         tp_tensor_t *filter, const tp_conv2d_options_t *options,
                                         tp_tensor_t **out);

/* A pooling window of window_height x window_width moved by the strides; a stride of 0 moves
 * the window by its own size (Keras' default), so `.window_height = 2, .window_width = 2`
 * halves an image. */
typedef struct tp_pool_options {
    int32_t window_height, window_width;
    int32_t stride_height, stride_width; /* 0: the window's size */
    tp_padding_t padding;
} tp_pool_options_t;

/* MaxPool and AvgPool of `input` [N,H,W,C] per channel; the average counts only the values
 * inside the image (SAME's padding is not averaged in). options must not be NULL. */
TP_API TP_MUST_USE tp_status_t *tp_max_pool(tp_context_t *c, tp_tensor_t *input,
                                           const tp_pool_options_t *options, tp_tensor_t **out);
TP_API TP_MUST_USE tp_status_t *tp_avg_pool(tp_context_t *c, tp_tensor_t *input,
                                           const tp_pool_options_t *options, tp_tensor_t **out);

/* ---- Traced functions (graph mode) ------------------------------------------------------------
 *
 * A function's body builds its results from its arguments with the ordinary op API, as eager
 * code does. The first call with a given input signature (dtypes and shapes) runs the body
 * once under a trace: its ops are recorded into a graph instead of running, and the tensors it
 * sees are symbolic (reading one is an error). The graph is placed, by the eager rules and the
 * device scopes the body pushed, and every call with that signature runs the graph; a new
 * signature traces again. Tensors with values the body uses are captured by reference. Random
 * ops run at every call and draw new values each time: the first call draws what the op would
 * draw eagerly with its seed, each later call from a stream derived from the seed and the call.
 * Ops are launched on their devices' streams without waiting; the host waits only to copy a
 * value between devices. A node that fails on its device after the call returned poisons the
 * results computed from it, as an eager op does (see tp_tensor_wait). */

typedef struct tp_function tp_function_t;

/* Fills `outputs[0..num_outputs)` with one reference each, handed over: tensors it made (it
 * keeps no reference to them), or tp_tensor_retain of an argument, a captured tensor or another
 * output to return it as is. An output handed over without a reference of its own is refused
 * with a status when the trace ends. */
typedef tp_status_t *(*tp_function_body_t)(tp_context_t *context, tp_tensor_t *const *inputs,
                                           size_t num_inputs, tp_tensor_t **outputs,
                                           size_t num_outputs, void *user_data);

/* A function of `num_outputs` results (1 to 16). It keeps the context alive. */
TP_API TP_MUST_USE tp_status_t *tp_function_create(tp_context_t *context, const char *name,
                                                  tp_function_body_t body, size_t num_outputs,
                                                  void *user_data, tp_function_t **out);
/* NULL is fine. */
TP_API void tp_function_destroy(tp_function_t *function);
/* Traces if the signature is new, then runs the graph. Thread-safe. `outputs` receive new
 * tensors; on failure none. */
TP_API TP_MUST_USE tp_status_t *tp_function_call(tp_function_t *function,
                                                tp_tensor_t *const *inputs, size_t num_inputs,
                                                tp_tensor_t **outputs, size_t num_outputs);
/* How many times the body was traced. */
TP_API size_t tp_function_trace_count(const tp_function_t *function);

typedef enum tp_graph_format { TP_GRAPH_TEXT = 0, TP_GRAPH_DOT = 1 } tp_graph_format_t;
/* Writes the placed graph for the signature of `inputs` (tracing it if need be): one line per
 * node, or Graphviz DOT with ops coloured by device. */
TP_API TP_MUST_USE tp_status_t *tp_function_write_graph(tp_function_t *function,
                                                       tp_tensor_t *const *inputs,
                                                       size_t num_inputs,
                                                       tp_graph_format_t format, FILE *out);

/* Graph passes, run on each graph after placement, in this order: TP_PASS_PRUNING (drop what
 * no result depends on), TP_PASS_COMMON_SUBEXPRESSION (merge equal op nodes),
 * TP_PASS_CONSTANT_FOLDING (compute nodes whose inputs are all constants once, at trace time;
 * never random ops), TP_PASS_IDENTITY_REMOVAL (bypass an Identity that moves nothing), then
 * TP_PASS_PLUGINS (each plug-in's pass, for graphs with a node on its device type). All are on
 * by default; a plug-in may switch standard ones off for graphs on its devices. */
#define TP_PASS_PLUGINS (1u << 8)
#define TP_PASS_ALL                                                                            \
    (TP_PASS_PRUNING | TP_PASS_COMMON_SUBEXPRESSION | TP_PASS_CONSTANT_FOLDING |              \
     TP_PASS_IDENTITY_REMOVAL | TP_PASS_PLUGINS)
/* Switches the passes in `passes` (TP_PASS_* bits) on or off for functions traced from now on;
 * graphs traced already keep theirs. An unknown bit is an error and changes nothing. */
TP_API TP_MUST_USE tp_status_t *tp_context_set_graph_passes(tp_context_t *context,
                                                           uint32_t passes, bool enabled);
/* The passes switched on. */
TP_API uint32_t tp_context_graph_passes(tp_context_t *context);

/* ---- Profiling ------------------------------------------------------------------------------- */

/* A profile records what the whole process runs, from every thread and context, and is written
 * as a Chrome trace (the "traceEvents" JSON that Perfetto and chrome://tracing open): a track
 * per host thread with a span per op (its name, device, input and output dtypes and shapes),
 * per copy between devices (bytes, source, destination), per traced-function call and per
 * mirrored step (with a marker across all tracks); per device, a track of its stream (a
 * synchronous device's kernels; an asynchronous device's work as the device timed it, when its
 * plug-in reports times, else when the host queued it) and a counter of the bytes its tensors
 * hold. One profile at a time.
 *
 * TP_PROFILE=path in the environment records one without a change to the program: from the
 * creation of the process's first context until its last live context is released (destroyed,
 * and its tensors released), when the file is written; once per process. A program that never
 * releases its contexts calls tp_profiler_stop instead. */

/* Waits for the work queued on `context`'s devices (none when it is NULL), so that earlier
 * work stays out of the profile, then starts one that tp_profiler_stop writes to `path`. The
 * file is created (or emptied) now: a path that cannot be written fails here, with NOT_FOUND or
 * PERMISSION_DENIED naming the path and the system's reason. FAILED_PRECONDITION when a profile
 * is being recorded already (naming its file). Thread-safe. */
TP_API TP_MUST_USE tp_status_t *tp_profiler_start(tp_context_t *context, const char *path);
/* Waits for the work queued on `context`'s devices (none when it is NULL), so that the profile
 * holds it and the memory it frees, ends the profile and writes it. The profile ends even when
 * the write fails: the status names the path and the reason, and the partly written file is
 * removed. FAILED_PRECONDITION when no profile is being recorded. Thread-safe. */
TP_API TP_MUST_USE tp_status_t *tp_profiler_stop(tp_context_t *context);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLUG_TENSORPLUG_H */
