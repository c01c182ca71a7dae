/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU's persistent worker pool: every index runs exactly once whatever the split, nested
 * loops run inline, host threads may share the pool, and its workers are gone once the CPU
 * device is released. In the concurrency label, so the thread sanitizer build runs it. */
#define _GNU_SOURCE
#include "cpu_fixture.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../../devices/cpu/cpu_kernels.h"
#include "../../devices/cpu/cpu_thread_pool.h"

typedef struct {
    int *hits;
    atomic_int calls;
} visit_t;

static void visit(void *arg, int64_t begin, int64_t end) {
    visit_t *v = arg;
    atomic_fetch_add(&v->calls, 1);
    for (int64_t i = begin; i < end; i++) v->hits[i]++; /* each index is one slice's */
}

static void every_index_runs_once(void **state) {
    (void)state;
    const int thread_counts[] = {1, 2, 3, 5};
    const int64_t counts[] = {0, 1, 2, 7, 1000, 100003};
    const int slice_counts[] = {1, 2, 3, 8, 64};
    for (size_t t = 0; t < COUNT_OF(thread_counts); t++) {
        cpu_thread_pool_t *pool = cpu_thread_pool_create(thread_counts[t]);
        assert_non_null(pool);
        assert_int_equal(cpu_thread_pool_workers(pool), thread_counts[t] - 1);
        for (size_t c = 0; c < COUNT_OF(counts); c++) {
            for (size_t s = 0; s < COUNT_OF(slice_counts); s++) {
                int64_t n = counts[c];
                visit_t v = {calloc((size_t)n + 1, sizeof(int)), 0};
                assert_non_null(v.hits);
                cpu_thread_pool_run(pool, n, slice_counts[s], visit, &v);
                for (int64_t i = 0; i < n; i++)
                    if (v.hits[i] != 1)
                        fail_msg("threads %d, count %lld, slices %d: index %lld ran %d times",
                                 thread_counts[t], (long long)n, slice_counts[s], (long long)i,
                                 v.hits[i]);
                /* No empty slice is called, and never more slices than asked. */
                int calls = atomic_load(&v.calls);
                assert_true(calls <= slice_counts[s] && calls <= (n > 0 ? n : 0));
                if (n == 0) assert_int_equal(calls, 0);
                free(v.hits);
            }
        }
        cpu_thread_pool_destroy(pool);
    }
}

typedef struct {
    cpu_thread_pool_t *pool;
    pthread_t outer;
    atomic_int nested_on_other_thread;
    atomic_llong total;
} nest_t;

static void inner(void *arg, int64_t begin, int64_t end) {
    nest_t *n = arg;
    if (!pthread_equal(pthread_self(), n->outer)) atomic_fetch_add(&n->nested_on_other_thread, 1);
    atomic_fetch_add(&n->total, end - begin);
}

static void outer(void *arg, int64_t begin, int64_t end) {
    nest_t *parent = arg;
    for (int64_t i = begin; i < end; i++) {
        nest_t child = {parent->pool, pthread_self(), 0, 0};
        cpu_thread_pool_run(parent->pool, 1000, 4, inner, &child);
        atomic_fetch_add(&parent->nested_on_other_thread, atomic_load(&child.nested_on_other_thread));
        atomic_fetch_add(&parent->total, atomic_load(&child.total));
    }
}

/* A loop started from inside a slice runs whole on that slice's thread: it neither waits for
 * the pool it is part of (a deadlock) nor runs on another thread. */
static void nested_loops_run_inline(void **state) {
    (void)state;
    cpu_thread_pool_t *pool = cpu_thread_pool_create(3);
    assert_non_null(pool);
    nest_t n = {pool, pthread_self(), 0, 0};
    cpu_thread_pool_run(pool, 16, 8, outer, &n);
    assert_int_equal(atomic_load(&n.nested_on_other_thread), 0);
    assert_int_equal(atomic_load(&n.total), 16 * 1000);
    cpu_thread_pool_destroy(pool);
}

typedef struct {
    cpu_thread_pool_t *pool; /* NULL: the shared pool through cpu_parallel_for */
    int64_t sum;
} caller_t;

static void add_indices(void *arg, int64_t begin, int64_t end) {
    atomic_llong *sum = arg;
    long long s = 0;
    for (int64_t i = begin; i < end; i++) s += i;
    atomic_fetch_add(sum, s);
}

enum { CALLER_LOOPS = 300, CALLER_COUNT = 70001 };

static void *caller_main(void *arg) {
    caller_t *c = arg;
    for (int k = 0; k < CALLER_LOOPS; k++) {
        atomic_llong sum = 0;
        if (c->pool != NULL)
            cpu_thread_pool_run(c->pool, CALLER_COUNT, 6, add_indices, &sum);
        else
            cpu_parallel_for(CALLER_COUNT, 4, add_indices, &sum);
        if (atomic_load(&sum) != (int64_t)CALLER_COUNT * (CALLER_COUNT - 1) / 2) c->sum = -1;
    }
    return NULL;
}

/* Host threads calling at once each get every index of their own loops, on a pool of their
 * own and on the shared pool; a caller that finds the pool busy runs its loop itself. */
static void host_threads_share_the_pool(void **state) {
    (void)state;
    cpu_thread_pool_t *pool = cpu_thread_pool_create(3);
    assert_non_null(pool);
    for (int shared = 0; shared < 2; shared++) {
        pthread_t ids[4];
        caller_t callers[4];
        for (int t = 0; t < 4; t++) {
            callers[t] = (caller_t){shared ? NULL : pool, 0};
            assert_int_equal(pthread_create(&ids[t], NULL, caller_main, &callers[t]), 0);
        }
        for (int t = 0; t < 4; t++) {
            assert_int_equal(pthread_join(ids[t], NULL), 0);
            assert_int_equal(callers[t].sum, 0);
        }
    }
    cpu_thread_pool_destroy(pool);
}

/* Pools made and stopped many times leave no thread and no memory behind (the sanitizer
 * builds check the memory). */
static int thread_count_now(void) {
    DIR *tasks = opendir("/proc/self/task");
    assert_non_null(tasks);
    int count = 0;
    for (struct dirent *e; (e = readdir(tasks)) != NULL;)
        if (e->d_name[0] != '.') count++;
    closedir(tasks);
    return count;
}

static void pools_stop_cleanly(void **state) {
    (void)state;
    int before = thread_count_now();
    for (int k = 0; k < 50; k++) {
        cpu_thread_pool_t *pool = cpu_thread_pool_create(4);
        assert_non_null(pool);
        if (k % 2 == 0) {
            atomic_llong sum = 0;
            cpu_thread_pool_run(pool, 1000, 4, add_indices, &sum);
            assert_int_equal(atomic_load(&sum), 999 * 1000 / 2);
        }
        cpu_thread_pool_destroy(pool);
    }
    assert_int_equal(thread_count_now(), before);
}

/* The CPU device's kernels run on the shared pool, whose workers stop when the last CPU
 * device is released with its context. TP_CPU_THREADS (main) asks for 3 threads: 2 workers. */
static void device_release_stops_the_shared_pool(void **state) {
    (void)state;
    /* The loops above ran on the shared pool with no device alive; a device coming and going
     * stops those workers too. */
    cpu_shared_pool_retain();
    cpu_shared_pool_release();
    int before = thread_count_now();
    for (int round = 0; round < 3; round++) {
        tp_context_t *context = NULL;
        assert_int_equal(cpu_context_setup((void **)&context), 0);
        enum { N = 1 << 20 };
        float *values = malloc(N * sizeof *values);
        assert_non_null(values);
        for (int i = 0; i < N; i++) values[i] = (float)(i % 7) - 3.0f;
        tp_tensor_t *x = floats(context, TP_SHAPE(N), values), *y = NULL;
        assert_ok(tp_relu(context, x, &y));
        const void *data = NULL;
        assert_ok(tp_tensor_host_data(y, &data));
        const float *out = data;
        for (int i = 0; i < N; i++)
            if (out[i] != (values[i] < 0 ? 0.0f : values[i])) fail_msg("Relu wrong at %d", i);
        assert_int_equal(thread_count_now(), before + 2);
        tp_tensor_release(x);
        tp_tensor_release(y);
        free(values);
        assert_int_equal(cpu_context_teardown((void **)&context), 0);
        assert_int_equal(thread_count_now(), before);
    }
}

int main(void) {
    /* Before the first context: the CPU reads its thread count once. */
    setenv("TP_CPU_THREADS", "3", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_index_runs_once),
        cmocka_unit_test(nested_loops_run_inline),
        cmocka_unit_test(host_threads_share_the_pool),
        cmocka_unit_test(pools_stop_cleanly),
        cmocka_unit_test(device_release_stops_the_shared_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
