/* SPDX-License-Identifier: Apache-2.0 */
/* Many threads at once: the first contexts of the process racing to load the plug-ins, then
 * contexts, tensors and log lines from every thread. Runs under ThreadSanitizer in
 * `make check`. */
#include "test_support.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>

enum { THREADS = 8, ROUNDS = 20 };

static atomic_int log_lines;

static void count_log_line(tp_log_level_t level, const char *line, void *user_data) {
    (void)level;
    (void)line;
    (void)user_data;
    atomic_fetch_add(&log_lines, 1);
}

typedef struct {
    int index;
    int failures;
} worker_t;

static void *work(void *arg) {
    worker_t *worker = arg;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_TEST_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    for (int round = 0; round < ROUNDS; round++) {
        tp_context_t *context;
        tp_status_t *status = tp_context_create(&options, &context);
        if (status != NULL) {
            tp_status_free(status);
            worker->failures++;
            continue;
        }
        if (tp_physical_device_count(context, NULL) != 4 || tp_plugin_count(context) != 8)
            worker->failures++;
        int32_t values[64], back[64];
        for (int i = 0; i < 64; i++) values[i] = worker->index * 1000 + round * 64 + i;
        tp_tensor_t *tensor;
        status = tp_tensor_create(context, TP_INT32, TP_SHAPE(8, 8), values, sizeof values,
                                  &tensor);
        if (status == NULL) {
            status = tp_tensor_read(tensor, back, sizeof back);
            if (status == NULL && memcmp(values, back, sizeof back) != 0) worker->failures++;
            tp_tensor_release(tensor);
        }
        if (status != NULL) {
            tp_status_free(status);
            worker->failures++;
        }
        tp_context_destroy(context);
    }
    return NULL;
}

static void contexts_from_many_threads(void **state) {
    (void)state;
    tp_log_set_callback(count_log_line, NULL);
    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker_t){i, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(workers[i].failures, 0);
    }
    tp_log_set_callback(NULL, NULL);
    /* Each of the five broken test plug-ins was reported once, whichever thread met it. */
    assert_int_equal(atomic_load(&log_lines), 5);
}

typedef struct {
    tp_context_t *context;
    int index;
    int failures;
} op_worker_t;

/* Each thread computes relu(x * x + x) @ ones for its own x, on a shared context, with and
 * without a device scope, and checks every value. */
static void *run_ops(void *arg) {
    op_worker_t *worker = arg;
    tp_context_t *context = worker->context;
    for (int round = 0; round < ROUNDS; round++) {
        float x[6], ones[6] = {1, 1, 1, 1, 1, 1};
        for (int i = 0; i < 6; i++) x[i] = (float)(worker->index - 3 + i - round % 4);
        bool scoped = (round + worker->index) % 2 == 0;
        tp_tensor_t *tx = NULL, *tones = NULL, *square = NULL, *sum = NULL, *relu = NULL,
                    *product = NULL;
        tp_status_t *status = scoped ? tp_device_push(context, "/cpu:0") : NULL;
        if (status == NULL)
            status = tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 3), x, sizeof x, &tx);
        if (status == NULL)
            status = tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(3, 2), ones, sizeof ones,
                                      &tones);
        if (status == NULL) status = tp_mul(context, tx, tx, &square);
        if (status == NULL) status = tp_add(context, square, tx, &sum);
        if (status == NULL) status = tp_relu(context, sum, &relu);
        if (status == NULL) status = tp_matmul(context, relu, tones, false, false, &product);
        if (scoped) tp_status_free(tp_device_pop(context));
        float got[4];
        if (status == NULL) status = tp_tensor_read(product, got, sizeof got);
        if (status != NULL) {
            tp_status_free(status);
            worker->failures++;
        } else {
            for (int row = 0; row < 2; row++) {
                float expected = 0;
                for (int k = 0; k < 3; k++) {
                    float v = x[row * 3 + k];
                    expected += v * v + v > 0 ? v * v + v : 0;
                }
                if (got[row * 2] != expected || got[row * 2 + 1] != expected) worker->failures++;
            }
        }
        tp_tensor_t *all[] = {tx, tones, square, sum, relu, product};
        for (int i = 0; i < 6; i++) tp_tensor_release(all[i]);
    }
    return NULL;
}

static void ops_from_many_threads_on_one_context(void **state) {
    (void)state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    pthread_t threads[THREADS];
    op_worker_t workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (op_worker_t){context, i, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, run_ops, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(workers[i].failures, 0);
    }
    tp_context_destroy(context);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(contexts_from_many_threads),
        cmocka_unit_test(ops_from_many_threads_on_one_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
