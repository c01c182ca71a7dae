/* Many threads at once: the first contexts of the process racing to load the plug-ins, then
 * contexts, tensors and log lines from every thread. Runs under ThreadSanitizer in
 * `make check`. */
#include "test_support.h"

#include <pthread.h>
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(contexts_from_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
