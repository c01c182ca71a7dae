/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance check's inside: what one check sees and the helpers the checks share. Each
 * check runs in a child process of its own (plugin_check.c) with a context that loaded the
 * plug-in under test alone, drives the plug-in's device table directly where the ABI is the
 * subject, and the runtime where the plug-in's behaviour through it is. */
#ifndef TP_CONFORMANCE_CHECK_H
#define TP_CONFORMANCE_CHECK_H

#include <pthread.h>
#include <stdbool.h>

#include "context/context.h"
#include "op/op.h"
#include "plugin/plugin_status.h"

typedef struct tp_check {
    tp_context_t *context;
    const tp_plugin_entry_t *plugin; /* the plug-in under test in the context's registry */
    const tp_plugin_check_options_t *options;
    const char *path;
    FILE *channel; /* to the parent process, which prints the verdicts */
    uint64_t random_state;
    /* Devices of the type a device check is about, by ordinal. */
    const tp_device_type_def_t *def;
    tp_physical_device_t *devices[2];
    int32_t num_devices;
    tp_device_t *logical; /* the runtime's device <type>:0, for checks through it */
    /* Set by the check: its name, and the detail of a pass or why it does not apply. */
    char name[128];
    char detail[512];
    bool not_applicable;
} tp_check_t;

/* Runs one check: NULL when it passed or does not apply (see tp_check_not_applicable), else
 * the reason it failed. `argument` is what the plan gave the check (a device type, a kernel). */
typedef tp_status_t *(*tp_check_fn)(tp_check_t *check, const char *argument);

/* One kind of check, as the plan names it. */
typedef struct tp_check_kind {
    const char *key;
    tp_check_fn run;
} tp_check_kind_t;

/* The name printed for the check, and the detail of its pass. */
void tp_check_name(tp_check_t *check, const char *format, ...) TP_PRINTF_LIKE(2, 3);
void tp_check_detail(tp_check_t *check, const char *format, ...) TP_PRINTF_LIKE(2, 3);
/* Marks the check not applicable, saying why; the check then returns NULL. */
void tp_check_not_applicable(tp_check_t *check, const char *format, ...) TP_PRINTF_LIKE(2, 3);
/* A failure with a printf-style reason. */
tp_status_t *tp_check_failure(const char *format, ...) TP_PRINTF_LIKE(1, 2);

/* Adds a check to the plan (from the "plan" check only): `key` and its argument. */
void tp_check_plan(tp_check_t *check, const char *key, const char *argument);

/* A uniformly distributed number below `bound` (> 0), from the check's seeded generator. */
uint64_t tp_check_random(tp_check_t *check, uint64_t bound);
void tp_check_random_bytes(tp_check_t *check, void *buffer, size_t size);

/* Finds the plug-in's devices of `type` into check->def, check->devices and check->logical; a
 * type the
 * plug-in did not register fails, a type with no device present makes the check not
 * applicable (and returns false with *out NULL). */
bool tp_check_devices(tp_check_t *check, const char *type, tp_status_t **out);

/* The plug-in's functions, each turning its status into a tp_status_t naming the function. */
tp_status_t *tp_check_allocate(tp_check_t *check, int32_t device, uint64_t size, void **out);
tp_status_t *tp_check_stream_create(tp_check_t *check, int32_t device, void **out);
tp_status_t *tp_check_synchronize(tp_check_t *check, int32_t device, void *stream);
tp_status_t *tp_check_to_device(tp_check_t *check, int32_t device, void *stream, void *mem,
                                uint64_t offset, const void *source, uint64_t size);
tp_status_t *tp_check_to_host(tp_check_t *check, int32_t device, void *stream, void *target,
                              const void *mem, uint64_t offset, uint64_t size);

/* Holding a stream: a host callback that blocks the stream's queue until opened, so that work
 * queued behind it is certainly pending and a function that does not wait for it is caught
 * rather than lucky. A device without host_callback, or one that calls back on the calling
 * thread, cannot be held: unless it declares itself synchronous, its ordering checks fail,
 * since passing them on end results alone would vouch for what was never seen. */
typedef struct tp_check_gate {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    pthread_t checker;
    bool entered, open, held;
    bool on_caller_thread; /* host_callback called back before it returned */
} tp_check_gate_t;

/* Whether the device type under test declares TP_DEVICE_SYNCHRONOUS. */
bool tp_check_synchronous(const tp_check_t *check);
/* Why `gate` could not hold its stream ("QDEV has no host_callback"), for a failure. */
const char *tp_check_gate_problem(const tp_check_t *check, const tp_check_gate_t *gate,
                                  char *buffer, size_t capacity);

/* Queues the gate on `stream`; *held says whether the stream is now held. The gate must be
 * opened before the stream is synchronized or destroyed. */
tp_status_t *tp_check_gate_close(tp_check_t *check, int32_t device, void *stream,
                                 tp_check_gate_t *gate);
void tp_check_gate_open(tp_check_gate_t *gate);
/* After the stream is synchronized, when the callback has certainly returned. */
void tp_check_gate_destroy(tp_check_gate_t *gate);

/* The checks, by file. */
tp_status_t *tp_check_load(tp_check_t *check, const char *argument);
tp_status_t *tp_check_registrations(tp_check_t *check, const char *argument);
tp_status_t *tp_check_allocate_sizes(tp_check_t *check, const char *type);
tp_status_t *tp_check_empty_tensor(tp_check_t *check, const char *type);
tp_status_t *tp_check_allocate_too_much(tp_check_t *check, const char *type);
tp_status_t *tp_check_round_trips(tp_check_t *check, const char *type);
tp_status_t *tp_check_device_copy(tp_check_t *check, const char *type);
tp_status_t *tp_check_peer_copy(tp_check_t *check, const char *type);
tp_status_t *tp_check_stream_order(tp_check_t *check, const char *type);
tp_status_t *tp_check_events(tp_check_t *check, const char *type);
tp_status_t *tp_check_host_waits(tp_check_t *check, const char *type);
tp_status_t *tp_check_kernel(tp_check_t *check, const char *kernel_and_dtype);
tp_status_t *tp_check_kernel_errors(tp_check_t *check, const char *kernel);
tp_status_t *tp_check_kernel_memory(tp_check_t *check, const char *kernel);
tp_status_t *tp_check_two_threads(tp_check_t *check, const char *type);

/* The kernel and dtype a kernel check's argument names ("0 float32"), set up, the check named
 * "kernel <op> on <type>, <dtype><what>"; false when the check ends here, with *error saying
 * why (NULL: not applicable). */
bool tp_check_kernel_argument(tp_check_t *check, const char *argument, const char *what,
                              const tp_kernel_entry_t **entry, tp_op_t *op,
                              tp_device_t **device, tp_dtype_t *dtype, tp_status_t **error);

/* The kernels the plug-in registered for its own device types, in registration order: the
 * index-th one, or NULL. */
const tp_kernel_entry_t *tp_check_kernel_entry(const tp_check_t *check, size_t index);
/* The dtypes a kernel claims (at most TP_CHECK_MAX_DTYPES): its constraint on the op's first
 * type attribute, or what the op allows there, less those its plug-in's ABI version lacks. */
enum { TP_CHECK_MAX_DTYPES = 16 };
size_t tp_check_claimed_dtypes(const tp_kernel_entry_t *entry, tp_dtype_t *out);

/* One call of a kernel, for the checks that run it again: the first of the kernel check's input
 * shapes that the op and the CPU take, with what the plug-in's kernel gave on it (whether
 * that is right is the kernel check's to say). */
typedef struct tp_check_sample tp_check_sample_t;
/* *out is NULL when no call could be formed; an error is a failure of the kernel. */
tp_status_t *tp_check_sample_create(tp_check_t *check, const tp_kernel_entry_t *entry,
                                    tp_device_t *device, tp_dtype_t dtype,
                                    tp_check_sample_t **out);
/* Runs the call again: it must give the same bits. Thread-safe for one sample. */
tp_status_t *tp_check_sample_run(tp_check_t *check, tp_check_sample_t *sample);
void tp_check_sample_free(tp_check_sample_t *sample);

#endif
