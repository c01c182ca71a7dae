/* SPDX-License-Identifier: Apache-2.0 */
/* Where the core's layers report what they do to the profiler (src/profiler/). The profiler is
 * a higher layer: it installs a table of functions here while it records, and the lower layers
 * (launch, eager, graph, device memory and copies, functions, the mirrored strategy) call
 * through the table without knowing the profiler. With no profile recording the table is
 * NULL, and each report point costs one load and a branch predicted not taken.
 *
 * A report point reads the table once, takes the clock if it is set, does its work, and then
 * reports with the time it took before: a profile that starts in the middle of the work misses
 * that one span, and a report that arrives after the profile stopped is dropped by the
 * profiler. Every function may be called from any thread. */
#ifndef TP_BASE_PROFILE_HOOKS_H
#define TP_BASE_PROFILE_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tp_device;
struct tp_kernel_context;

typedef struct tp_profile_hooks {
    /* An op run on this thread since `begin_ns`: inputs staged on its device, outputs
     * allocated, kernel launched. `function` is the traced function whose graph ran it, or
     * NULL for an eager op. */
    void (*op)(const struct tp_kernel_context *call, const char *function, uint64_t begin_ns);
    /* A kernel launched since `begin_ns`, the device's queue held: on a synchronous device the
     * work itself, on an asynchronous one its queueing. */
    void (*launch)(const struct tp_kernel_context *call, uint64_t begin_ns);
    /* `bytes` copied from one device's memory to another's (or within one) since `begin_ns`. */
    void (*copy)(const struct tp_device *from, const struct tp_device *to, uint64_t bytes,
                 uint64_t begin_ns);
    /* `bytes` copied between the host and `device` since `begin_ns`, waited for. */
    void (*host_copy)(const struct tp_device *device, bool to_host, uint64_t bytes,
                      uint64_t begin_ns);
    /* What the device itself reported of the work `what` it ran ("Relu", "copy"): when it
     * started and ended, on the host's CLOCK_MONOTONIC (plugin.h, event_work_times). */
    void (*device_work)(const struct tp_device *device, const char *what, uint64_t start_ns,
                        uint64_t end_ns);
    /* The bytes of the device's tensor allocator in use, after an allocation or frees. */
    void (*memory)(const struct tp_device *device, uint64_t bytes_in_use);
    /* A call of traced function `name` since `begin_ns`; `traced` when this call traced it. */
    void (*function_run)(const char *name, bool traced, uint64_t begin_ns);
    /* Step `step` (from 1) of a mirrored strategy over `replicas` devices, since `begin_ns`. */
    void (*mirrored_step)(uint64_t step, size_t replicas, uint64_t begin_ns);
    /* On the replica's own thread: replica `index` on `device` starts, and its part of the
     * step ends (begun at `begin_ns`). */
    void (*replica_begin)(size_t index, const struct tp_device *device);
    void (*replica_end)(size_t index, const struct tp_device *device, uint64_t begin_ns);
} tp_profile_hooks_t;

extern _Atomic(const tp_profile_hooks_t *) tp_profile_hooks_installed;

/* The table while a profile records, else NULL. */
static inline const tp_profile_hooks_t *tp_profile_hooks(void) {
    return atomic_load_explicit(&tp_profile_hooks_installed, memory_order_acquire);
}

/* Installs `hooks` (NULL: none); for the profiler alone. */
void tp_profile_hooks_install(const tp_profile_hooks_t *hooks);

/* Nanoseconds of CLOCK_MONOTONIC, the clock of every time reported here. */
uint64_t tp_profile_clock_ns(void);

/* The clock when `hooks` is set, else 0: the time a report point takes before its work. */
static inline uint64_t tp_profile_begin(const tp_profile_hooks_t *hooks) {
    return hooks != NULL ? tp_profile_clock_ns() : 0;
}

#endif
