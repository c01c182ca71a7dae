/* SPDX-License-Identifier: Apache-2.0 */
/* A failure reaches exactly the tensors computed from it, while 8 threads share the devices.
 *
 * Run with TP_APU_FAIL_KERNEL_EVERY=K: every Kth Relu launched on the APUs, counted over all
 * threads, fails on its queue thread after the op returned, and the APU's message names the
 * launch and the element count. Each thread builds chains whose element count is its own
 * alone (1 + thread + THREADS * chain), so a failure message says which chain launched it:
 *
 *     x (CPU) -> Relu on APU:d -> Relu on APU:e (peer copy) -> Add on the CPU (staged through
 *     host memory) -> Relu on APU:d (copied back);
 *     a traced function of x: Relu on APU:e of Relu on APU:d
 *
 * with d and e the two APUs in an order that changes from chain to chain. Every tensor is read
 * once the whole chain is queued. What must hold, for every chain of every thread:
 *   - a value read without error equals the host's arithmetic, bit for bit (no stale memory);
 *   - a failure read names this chain's element count (never another chain's launch);
 *   - the first tensor of the chain that fails is a Relu's output, and every tensor computed
 *     from it afterwards fails with the same launch, through the peer copy, the host staging
 *     and the function (or, known already, fails the op that would read it);
 *   - no launch's failure is reported by two chains.
 * At the end every device's tensor memory is back to zero and no device keeps an error. */
#include "../unit/test_support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/device_support.h"

enum { THREADS = 8, CHAINS = 300, STEPS = 5, MAX_LAUNCHES = THREADS * CHAINS * STEPS };

static const char *const apus[2] = {"/device:APU:0", "/device:APU:1"};

/* Which chain reported each failed launch: an entry per launch number. */
static pthread_mutex_t owners_mutex = PTHREAD_MUTEX_INITIALIZER;
static int owners[MAX_LAUNCHES + 1];

typedef struct {
    tp_context_t *context;
    tp_function_t *functions[2]; /* Relu on APU:d then on APU:e, for d = 0 and 1 */
    int thread;
    int failed_chains, failures_seen, reads_ok;
    char problem[512];
} worker_t;

static tp_status_t *scoped_relu(tp_context_t *context, const char *device, tp_tensor_t *x,
                                tp_tensor_t **out) {
    tp_status_t *error = tp_device_push(context, device);
    if (error != NULL) return error;
    error = tp_relu(context, x, out);
    tp_status_free(tp_device_pop(context));
    return error;
}

typedef struct {
    int first;
} body_arg_t;

static tp_status_t *two_apus_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                  size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                  void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    int first = *(const int *)user_data;
    tp_tensor_t *inner = NULL;
    tp_status_t *error = scoped_relu(context, apus[first], inputs[0], &inner);
    if (error == NULL) error = scoped_relu(context, apus[1 - first], inner, &outputs[0]);
    tp_tensor_release(inner);
    return error;
}

/* The launch a failure names, if it is this chain's (its element count); -1 otherwise, with
 * the problem described. */
static long long launch_of(worker_t *worker, const tp_status_t *failure, int64_t count) {
    const char *message = tp_status_message(failure);
    const char *at = strstr(message, "injected failure of kernel launch ");
    long long launch = -1, elements = -1;
    if (tp_status_code(failure) != TP_INTERNAL || at == NULL ||
        sscanf(at, "injected failure of kernel launch %lld, on %lld elements", &launch,
               &elements) != 2) {
        snprintf(worker->problem, sizeof worker->problem, "an unexpected failure: %s: %s",
                 tp_code_name(tp_status_code(failure)), message);
        return -1;
    }
    if (elements != count) {
        snprintf(worker->problem, sizeof worker->problem,
                 "a chain of %lld elements got another chain's failure: %s", (long long)count,
                 message);
        return -1;
    }
    if (launch < 1 || launch > MAX_LAUNCHES) {
        snprintf(worker->problem, sizeof worker->problem, "launch out of range: %s", message);
        return -1;
    }
    return launch;
}

/* One chain: queue everything, then read every tensor in order of computation. */
static bool run_chain(worker_t *worker, int chain) {
    tp_context_t *context = worker->context;
    int64_t count = 1 + worker->thread + THREADS * chain;
    int d = (worker->thread + chain) % 2, e = 1 - d;
    float *x_values = malloc((size_t)count * sizeof *x_values);
    float *expected[STEPS], *got = malloc((size_t)count * sizeof *got);
    for (int s = 0; s < STEPS; s++) expected[s] = malloc((size_t)count * sizeof(float));
    for (int64_t i = 0; i < count; i++) {
        x_values[i] = (float)((i * 7 + worker->thread * 3 + chain) % 11) - 5.0f;
        float relu = x_values[i] > 0 ? x_values[i] : 0;
        expected[0][i] = relu;           /* Relu on APU:d */
        expected[1][i] = relu;           /* Relu on APU:e */
        expected[2][i] = relu + relu;    /* Add on the CPU */
        expected[3][i] = relu + relu;    /* Relu on APU:d again */
        expected[4][i] = relu;           /* the function */
    }
    tp_tensor_t *x = NULL, *t[STEPS] = {NULL};
    tp_status_t *made[STEPS] = {NULL}; /* an op that failed at once, knowing its input failed */
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(count), x_values,
                               (size_t)count * sizeof(float), &x));
    assert_ok(scoped_relu(context, apus[d], x, &t[0]));
    made[1] = scoped_relu(context, apus[e], t[0], &t[1]);
    if (made[1] == NULL) made[2] = tp_add(context, t[1], t[1], &t[2]);
    if (made[1] == NULL && made[2] == NULL) made[3] = scoped_relu(context, apus[d], t[2], &t[3]);
    /* The function reads x itself: its own chain of two launches. */
    made[4] = tp_function_call(worker->functions[d], &x, 1, &t[4], 1);

    long long chain_launch = -1, function_launch = -1;
    bool ok = true;
    for (int s = 0; s < STEPS && ok; s++) {
        long long *origin = s == 4 ? &function_launch : &chain_launch;
        tp_status_t *failure = made[s];
        made[s] = NULL;
        if (failure == NULL && t[s] == NULL) {
            /* Not made: an earlier op of the chain failed at once, and so did its reader. */
            ok = *origin >= 0;
            if (!ok) snprintf(worker->problem, sizeof worker->problem, "step %d missing", s);
            continue;
        }
        if (failure == NULL) failure = tp_tensor_read(t[s], got, (size_t)count * sizeof(float));
        if (failure == NULL) {
            if (*origin >= 0) {
                snprintf(worker->problem, sizeof worker->problem,
                         "step %d of a %lld-element chain read as OK after launch %lld of the "
                         "chain failed", s, (long long)count, *origin);
                ok = false;
            } else if (memcmp(got, expected[s], (size_t)count * sizeof(float)) != 0) {
                snprintf(worker->problem, sizeof worker->problem,
                         "step %d of a %lld-element chain read wrong values", s,
                         (long long)count);
                ok = false;
            }
            worker->reads_ok++;
            continue;
        }
        long long launch = launch_of(worker, failure, count);
        tp_status_free(failure);
        worker->failures_seen++;
        if (launch < 0) {
            ok = false;
        } else if (*origin < 0) {
            /* The first failure: only a Relu fails, and only a Relu launched by this step or
             * an earlier one, so it cannot first show at the Add. */
            if (s == 2) {
                snprintf(worker->problem, sizeof worker->problem,
                         "the Add of a %lld-element chain failed (launch %lld) though the Relu "
                         "it read succeeded", (long long)count, launch);
                ok = false;
            }
            *origin = launch;
            pthread_mutex_lock(&owners_mutex);
            if (owners[launch] != 0) {
                snprintf(worker->problem, sizeof worker->problem,
                         "launch %lld was reported by two chains", launch);
                ok = false;
            }
            owners[launch] = (int)count;
            pthread_mutex_unlock(&owners_mutex);
        } else if (launch != *origin) {
            snprintf(worker->problem, sizeof worker->problem,
                     "step %d reported launch %lld, the chain's first failure was %lld", s,
                     launch, *origin);
            ok = false;
        }
    }
    if (chain_launch >= 0 || function_launch >= 0) worker->failed_chains++;
    for (int s = 0; s < STEPS; s++) {
        tp_status_free(made[s]);
        tp_tensor_release(t[s]);
        free(expected[s]);
    }
    tp_tensor_release(x);
    free(x_values);
    free(got);
    return ok;
}

static void *work(void *arg) {
    worker_t *worker = arg;
    for (int chain = 0; chain < CHAINS; chain++)
        if (!run_chain(worker, chain)) break;
    return NULL;
}

static void failures_stay_with_the_tensors_computed_from_them(void **state) {
    (void)state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    assert_int_equal(tp_physical_device_count(context, "APU"), 2);
    static const int firsts[2] = {0, 1};
    tp_function_t *functions[2];
    for (int d = 0; d < 2; d++)
        assert_ok(tp_function_create(context, d == 0 ? "apu0_then_apu1" : "apu1_then_apu0",
                                     two_apus_body, 1, (void *)&firsts[d], &functions[d]));
    worker_t workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker_t){.context = context, .functions = {functions[0], functions[1]},
                                .thread = t};
        assert_int_equal(pthread_create(&threads[t], NULL, work, &workers[t]), 0);
    }
    int failed_chains = 0, failures_seen = 0, reads_ok = 0;
    bool all_ok = true;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        if (workers[t].problem[0] != '\0') {
            print_error("thread %d: %s\n", t, workers[t].problem);
            all_ok = false;
        }
        failed_chains += workers[t].failed_chains;
        failures_seen += workers[t].failures_seen;
        reads_ok += workers[t].reads_ok;
    }
    printf("%d threads x %d chains: %d failed chains, %d failed reads, %d reads OK\n", THREADS,
           CHAINS, failed_chains, failures_seen, reads_ok);
    assert_true(all_ok);
    /* Faults did fire, and most work was untouched by them. */
    assert_true(failed_chains > 0);
    assert_true(reads_ok > failures_seen);
    for (int d = 0; d < 2; d++) tp_function_destroy(functions[d]);
    assert_ok(tp_context_synchronize(context));
    assert_int_equal(tensor_bytes_in_use(context), 0);
    tp_context_destroy(context);
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(failures_stay_with_the_tensors_computed_from_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
