/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU's persistent worker pool (cpu_thread_pool.h).
 *
 * One loop at a time: its slices are claimed one by one under the pool's mutex by the workers
 * and by the calling thread alike. Claiming under the mutex, and posting the next loop only
 * once every slice of the last one is done, means a worker that wakes late can never run a
 * slice of a loop other than the one it read. A loop has at most a few slices per thread, so
 * the mutex is taken a handful of times per loop, nothing beside the work itself. */
#include "cpu_thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

enum { MAX_WORKERS = 63 };

struct cpu_thread_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* workers: a loop was posted, or stop */
    pthread_cond_t finished;  /* the caller: the last slice is done */
    int workers;
    pthread_t ids[MAX_WORKERS];
    bool stopping;
    bool busy;                /* a loop is posted and not yet finished */
    /* Counts loops posted, so that a worker sees a new one; written under the lock, read
     * without it by a worker that watches for the next loop. */
    _Atomic uint64_t generation;
    int sleeping;             /* workers waiting on `wake` */
    /* The loop: slices [0, slices), `next` the first unclaimed, `done` those finished. */
    cpu_pool_range_fn fn;
    void *arg;
    int64_t count;
    int slices, next, done;
};

/* True on a worker and on a caller while it runs a slice: a loop started there runs inline. */
static _Thread_local bool inside_slice;

static void run_slice(const cpu_thread_pool_t *pool, int s) {
    int64_t base = pool->count / pool->slices, extra = pool->count % pool->slices;
    int64_t begin = base * s + (s < extra ? s : extra);
    int64_t end = begin + base + (s < extra ? 1 : 0);
    if (begin < end) pool->fn(pool->arg, begin, end);
}

/* Runs the posted loop's unclaimed slices; called and returns with the lock held. */
static void claim_slices(cpu_thread_pool_t *pool) {
    while (pool->next < pool->slices) {
        int s = pool->next++;
        pthread_mutex_unlock(&pool->lock);
        run_slice(pool, s);
        pthread_mutex_lock(&pool->lock);
        if (++pool->done == pool->slices) pthread_cond_signal(&pool->finished);
    }
}

/* How long a worker that finished its slices watches for the next loop before it sleeps.
 * Waking a sleeping thread takes from tens of microseconds to a millisecond on a virtual
 * machine, and the caller may still run its last slice for a few hundred microseconds (a
 * slice is an eighth of the loop): a 3 ms Softmax ran at 0.70-0.99x of libtorch's speed
 * with workers that slept at once, 0.84-1.16x with this watch (libgomp's spin for longer).
 * A program that goes idle pays this much of one core once. */
enum { WATCH_NS = 500 * 1000 };

/* Counts cpu_pool_park calls: a watch ends when it moves. */
static atomic_uint_fast64_t park_requests;

void cpu_pool_park(void) {
    atomic_fetch_add_explicit(&park_requests, 1, memory_order_relaxed);
}

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Watches, without the lock, until a loop after `seen` is posted, a park is asked for, or the
 * watch ends. */
static void watch_for_next_loop(cpu_thread_pool_t *pool, uint64_t seen) {
    uint_fast64_t parks = atomic_load_explicit(&park_requests, memory_order_relaxed);
    int64_t deadline = monotonic_ns() + WATCH_NS;
    for (unsigned round = 1;; round++) {
        if (atomic_load_explicit(&pool->generation, memory_order_relaxed) != seen ||
            atomic_load_explicit(&park_requests, memory_order_relaxed) != parks)
            return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (round % 256 == 0) {
            if (monotonic_ns() > deadline) return;
            /* On a machine with more threads ready than cores, lets one of them run. */
            sched_yield();
        }
    }
}

static void *worker_main(void *arg) {
    cpu_thread_pool_t *pool = arg;
    inside_slice = true;
    pthread_mutex_lock(&pool->lock);
    uint64_t seen = pool->generation;
    for (;;) {
        if (!pool->stopping && pool->generation == seen) {
            pthread_mutex_unlock(&pool->lock);
            watch_for_next_loop(pool, seen);
            pthread_mutex_lock(&pool->lock);
        }
        while (!pool->stopping && pool->generation == seen) {
            pool->sleeping++;
            pthread_cond_wait(&pool->wake, &pool->lock);
            pool->sleeping--;
        }
        if (pool->stopping) break;
        seen = pool->generation;
        claim_slices(pool);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

cpu_thread_pool_t *cpu_thread_pool_create(int threads) {
    cpu_thread_pool_t *pool = calloc(1, sizeof *pool);
    if (pool == NULL) return NULL;
    if (pthread_mutex_init(&pool->lock, NULL) != 0) {
        free(pool);
        return NULL;
    }
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->finished, NULL);
    int wanted = threads - 1 < 0 ? 0 : threads - 1 > MAX_WORKERS ? MAX_WORKERS : threads - 1;
    /* Workers block every signal (they inherit the mask), so that a program's handlers and
     * sigwait keep seeing its signals on its own threads. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    for (int w = 0; w < wanted; w++)
        if (pthread_create(&pool->ids[pool->workers], NULL, worker_main, pool) == 0)
            pool->workers++;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return pool;
}

int cpu_thread_pool_workers(const cpu_thread_pool_t *pool) { return pool->workers; }

void cpu_thread_pool_destroy(cpu_thread_pool_t *pool) {
    if (pool == NULL) return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pool->generation++; /* ends a worker's watch at once */
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int w = 0; w < pool->workers; w++) {
        /* A worker running the exit handlers (a kernel that called exit) cannot join itself. */
        if (pthread_equal(pool->ids[w], pthread_self()))
            pthread_detach(pool->ids[w]);
        else
            pthread_join(pool->ids[w], NULL);
    }
    pthread_cond_destroy(&pool->finished);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

void cpu_thread_pool_run(cpu_thread_pool_t *pool, int64_t count, int slices,
                         cpu_pool_range_fn fn, void *arg) {
    if (count <= 0) return;
    if (slices > count) slices = (int)count;
    bool inline_only = pool == NULL || pool->workers == 0 || slices <= 1 || inside_slice;
    if (!inline_only) {
        pthread_mutex_lock(&pool->lock);
        inline_only = pool->busy || pool->stopping;
        if (!inline_only) {
            pool->busy = true;
            pool->fn = fn;
            pool->arg = arg;
            pool->count = count;
            pool->slices = slices;
            pool->next = 0;
            pool->done = 0;
            pool->generation++;
            if (pool->sleeping > 0) pthread_cond_broadcast(&pool->wake);
            inside_slice = true;
            claim_slices(pool);
            inside_slice = false;
            while (pool->done < pool->slices) pthread_cond_wait(&pool->finished, &pool->lock);
            pool->busy = false;
        }
        pthread_mutex_unlock(&pool->lock);
        if (!inline_only) return;
    }
    fn(arg, 0, count);
}

/* ---- The process's pool ---------------------------------------------------------------------- */

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t shared_idle = PTHREAD_COND_INITIALIZER;
static cpu_thread_pool_t *shared_pool;
static int shared_loops;    /* loops running on shared_pool */
static int shared_devices;  /* CPU devices alive */
static bool exiting;        /* the exit handler ran: start no pool again */
static bool exit_handler_registered;

/* Runs at exit, and when the library is unloaded (glibc runs a shared object's atexit
 * handlers at dlclose): no worker may be left waiting in code that is about to go. A loop
 * still running at exit belongs to a thread that the exit interrupts: its pool is left. */
static void stop_at_exit(void) {
    pthread_mutex_lock(&shared_lock);
    exiting = true;
    cpu_thread_pool_t *pool = shared_loops == 0 ? shared_pool : NULL;
    if (pool != NULL) shared_pool = NULL;
    pthread_mutex_unlock(&shared_lock);
    cpu_thread_pool_destroy(pool);
}

void cpu_shared_pool_run(int threads, int64_t count, int slices, cpu_pool_range_fn fn,
                         void *arg) {
    pthread_mutex_lock(&shared_lock);
    if (shared_pool == NULL && !exiting) {
        if (!exit_handler_registered) exit_handler_registered = atexit(stop_at_exit) == 0;
        /* Without the handler the workers could outlive the library: run inline instead. */
        if (exit_handler_registered) shared_pool = cpu_thread_pool_create(threads);
    }
    cpu_thread_pool_t *pool = shared_pool;
    if (pool != NULL) shared_loops++;
    pthread_mutex_unlock(&shared_lock);
    if (pool == NULL) {
        fn(arg, 0, count);
        return;
    }
    cpu_thread_pool_run(pool, count, slices, fn, arg);
    pthread_mutex_lock(&shared_lock);
    if (--shared_loops == 0) pthread_cond_broadcast(&shared_idle);
    pthread_mutex_unlock(&shared_lock);
}

void cpu_shared_pool_retain(void) {
    pthread_mutex_lock(&shared_lock);
    shared_devices++;
    pthread_mutex_unlock(&shared_lock);
}

void cpu_shared_pool_release(void) {
    pthread_mutex_lock(&shared_lock);
    cpu_thread_pool_t *pool = NULL;
    if (--shared_devices == 0) {
        /* Loops still running (a kernel of a device released alongside) finish first. */
        while (shared_loops > 0) pthread_cond_wait(&shared_idle, &shared_lock);
        pool = shared_pool;
        shared_pool = NULL;
    }
    pthread_mutex_unlock(&shared_lock);
    cpu_thread_pool_destroy(pool);
}
