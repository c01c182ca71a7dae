/* SPDX-License-Identifier: Apache-2.0 */
/* A persistent pool of worker threads that runs the slices of one parallel loop at a time:
 * starting a thread costs tens of microseconds, more than a memory-bound kernel spends on a
 * few megabytes, so the CPU's kernels share workers that wait between loops instead. */
#ifndef TP_DEVICES_CPU_THREAD_POOL_H
#define TP_DEVICES_CPU_THREAD_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*cpu_pool_range_fn)(void *arg, int64_t begin, int64_t end);

typedef struct cpu_thread_pool cpu_thread_pool_t;

/* A pool whose loops run on `threads` threads: the caller's own and threads - 1 workers.
 * NULL when out of memory; a worker that cannot start only leaves its share to the others. */
cpu_thread_pool_t *cpu_thread_pool_create(int threads);
/* Stops and joins the workers (each finishes the slice it runs) and frees the pool. No loop
 * may be running on it. */
void cpu_thread_pool_destroy(cpu_thread_pool_t *pool);
/* The workers that started. */
int cpu_thread_pool_workers(const cpu_thread_pool_t *pool);

/* Calls fn over [0, count) in `slices` slices of (nearly) equal size, on the workers and the
 * calling thread, and returns when every slice has run. The caller takes slices too, so the
 * loop finishes even when no worker wakes (a busy machine, a forked child). Runs the whole
 * range on the calling thread when the pool already runs another caller's loop, or when
 * called from inside a slice (a nested loop): waiting there could deadlock, and the cores are
 * busy anyway. */
void cpu_thread_pool_run(cpu_thread_pool_t *pool, int64_t count, int slices,
                         cpu_pool_range_fn fn, void *arg);

/* Ends the watch of every pool's idle workers (they watch for the next loop a while before
 * they sleep): a kernel calls this before it hands work to a library with threads of its own
 * (OpenBLAS, oneDNN), which would otherwise share the cores with workers that wait for
 * nothing. */
void cpu_pool_park(void);

/* The process's pool behind cpu_parallel_for, started on first use with the thread count the
 * CPU was configured with; stopped when the last CPU device is released and when the process
 * exits (or the library is unloaded), so that no worker outlives the code it runs. */
void cpu_shared_pool_run(int threads, int64_t count, int slices, cpu_pool_range_fn fn,
                         void *arg);
/* Each CPU device holds the shared pool from device_init to device_release. */
void cpu_shared_pool_retain(void);
void cpu_shared_pool_release(void);

#endif
