/* SPDX-License-Identifier: Apache-2.0 */
/* Several devices at once, each figure beside a baseline measured in the same run:
 * - an all-reduce (mean) of 1M float32 per replica across 2 and 4 logical CPU devices, from
 *   outside a run (tp_mirrored_strategy_all_reduce) and inside one (tp_replica_all_reduce),
 *   against memcpy of the same 4 MiB;
 * - a training step of a 784-256-10 Dense network, batch 256, on 2 logical CPU devices against
 *   1, against the same step written directly with cblas_sgemm on one thread, and on two
 *   threads with half the batch each (what the hardware allows two replicas).
 * TP_CPU_THREADS=1 is set before the first context, so every CPU kernel runs on the thread
 * that launched it: one thread per replica. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "mlp_direct.h"
#include "tensorplug/tensorplug.h"
#include "tensorplug/training.h"

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *values, int count) {
    qsort(values, (size_t)count, sizeof *values, compare_doubles);
    return count % 2 == 1 ? values[count / 2]
                          : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

/* A context with the built-in CPU alone, split into `count` logical devices. */
static tp_context_t *split_cpu_context(size_t count, uint64_t limit) {
    tp_context_t *context = bench_cpu_context();
    uint64_t limits[8];
    for (size_t i = 0; i < count; i++) limits[i] = limit;
    TP_CHECK(tp_context_set_logical_devices(context, "CPU:0", limits, count));
    return context;
}

static tp_mirrored_strategy_t *strategy_over(tp_context_t *context, size_t count) {
    static const char *const names[] = {"/cpu:0", "/cpu:1", "/cpu:2", "/cpu:3"};
    tp_mirrored_strategy_t *strategy;
    TP_CHECK(tp_mirrored_strategy_create(context, names, count, &strategy));
    return strategy;
}

/* ---- All-reduce ------------------------------------------------------------------------------ */

enum {
    REDUCE_ELEMENTS = 1 << 20,
    REDUCE_WARMUP = 2,
    REDUCE_REPEATS = 21,
    MEMCPY_REPEATS = 200,
    MAX_REPLICAS = 4
};

/* Replica r's tensor, made on its device, every element r + 1: the mean is (n + 1) / 2. */
static tp_tensor_t *replica_values(tp_context_t *context, size_t replica, float *host) {
    for (size_t i = 0; i < REDUCE_ELEMENTS; i++) host[i] = (float)(replica + 1);
    char device[16];
    snprintf(device, sizeof device, "/cpu:%zu", replica);
    TP_CHECK(tp_device_push(context, device));
    tp_tensor_t *t;
    TP_CHECK(tp_constant(context, TP_FLOAT32, TP_SHAPE(REDUCE_ELEMENTS), host,
                         REDUCE_ELEMENTS * sizeof(float), &t));
    TP_CHECK(tp_device_pop(context));
    return t;
}

static void check_mean(tp_tensor_t *const *out, size_t n, const tp_mirrored_strategy_t *strategy,
                       float *host) {
    float expected = (float)(n + 1) / 2.0f;
    for (size_t r = 0; r < n; r++) {
        if (strcmp(tp_tensor_device(out[r]), tp_mirrored_strategy_device(strategy, r)) != 0) {
            fprintf(stderr, "bench_distribute: replica %zu's mean is on %s, not %s\n", r,
                    tp_tensor_device(out[r]), tp_mirrored_strategy_device(strategy, r));
            exit(1);
        }
        TP_CHECK(tp_tensor_read(out[r], host, REDUCE_ELEMENTS * sizeof(float)));
        for (size_t i = 0; i < REDUCE_ELEMENTS; i += 4099) {
            if (host[i] != expected) {
                fprintf(stderr, "bench_distribute: replica %zu's mean is %g at %zu, not %g\n", r,
                        host[i], i, expected);
                exit(1);
            }
        }
    }
}

enum { MAX_TENSORS = 4 };

typedef struct {
    size_t count;                                   /* tensors per replica */
    tp_tensor_t *values[MAX_REPLICAS][MAX_TENSORS]; /* each replica's, on its device */
    double seconds[REDUCE_WARMUP + REDUCE_REPEATS]; /* replica 0's, per call */
} inside_run_t;

/* Every replica all-reduces its tensors WARMUP + REPEATS times in one run; replica 0 times each
 * call from its start until its means are computed. The call ends with a barrier that every
 * replica reaches only after its own sums, so replica 0's time covers the whole collective. */
static tp_status_t *reduce_repeatedly(tp_replica_context_t *replica, void *arg) {
    inside_run_t *run = arg;
    size_t r = tp_replica_index(replica);
    for (int k = 0; k < REDUCE_WARMUP + REDUCE_REPEATS; k++) {
        tp_tensor_t *means[MAX_TENSORS];
        double start = now_seconds();
        tp_status_t *error =
            tp_replica_all_reduce(replica, TP_REDUCE_MEAN, run->values[r], run->count, means);
        if (error != NULL) return error;
        for (size_t t = 0; t < run->count && error == NULL; t++) error = tp_tensor_wait(means[t]);
        if (r == 0) run->seconds[k] = now_seconds() - start;
        for (size_t t = 0; t < run->count; t++) tp_tensor_release(means[t]);
        if (error != NULL) return error;
    }
    return NULL;
}

/* Median seconds of tp_replica_all_reduce inside one run, with run->values filled. */
static double inside_run_seconds(tp_mirrored_strategy_t *strategy, inside_run_t *run) {
    TP_CHECK(tp_mirrored_strategy_run(strategy, reduce_repeatedly, run));
    return median_of(run->seconds + REDUCE_WARMUP, REDUCE_REPEATS);
}

/* Median seconds of one op on /cpu:0, until its output is computed. */
static double op_seconds(tp_context_t *context, const char *op, tp_tensor_t *const *inputs,
                         size_t count) {
    double times[REDUCE_WARMUP + REDUCE_REPEATS];
    TP_CHECK(tp_device_push(context, "/cpu:0"));
    for (int k = 0; k < REDUCE_WARMUP + REDUCE_REPEATS; k++) {
        tp_tensor_t *out;
        double start = now_seconds();
        TP_CHECK(tp_execute(context, op, inputs, count, NULL, 0, &out, 1));
        TP_CHECK(tp_tensor_wait(out));
        times[k] = now_seconds() - start;
        tp_tensor_release(out);
    }
    TP_CHECK(tp_device_pop(context));
    return median_of(times + REDUCE_WARMUP, REDUCE_REPEATS);
}

static double memcpy_seconds(float *host) {
    size_t bytes = REDUCE_ELEMENTS * sizeof(float);
    float *target = malloc(bytes);
    if (target == NULL) exit(1);
    memcpy(target, host, bytes);
    double times[MEMCPY_REPEATS];
    for (int k = 0; k < MEMCPY_REPEATS; k++) {
        double start = now_seconds();
        memcpy(target, host, bytes);
        __asm__ volatile("" : : "r"(target) : "memory"); /* the copy is used: keep it */
        times[k] = now_seconds() - start;
    }
    free(target);
    return median_of(times, MEMCPY_REPEATS);
}

static void print_reduce(const char *what, double seconds) {
    double gb = (double)(REDUCE_ELEMENTS * sizeof(float)) * 1e-9;
    printf("    %-48s %8.3f ms %7.2f GB/s\n", what, seconds * 1e3, gb / seconds);
}

static void bench_all_reduce(void) {
    float *host = malloc(REDUCE_ELEMENTS * sizeof(float));
    if (host == NULL) exit(1);
    for (size_t i = 0; i < REDUCE_ELEMENTS; i++) host[i] = (float)(i % 251);
    double copy = memcpy_seconds(host);

    tp_context_t *context = split_cpu_context(MAX_REPLICAS, 256ull << 20);
    printf("all-reduce (mean) of 1M float32 (4 MiB) per replica, logical CPU devices, "
           "algorithm bandwidth = 4 MiB / time (median of %d)\n", REDUCE_REPEATS);
    printf("    %-48s %8.3f ms %7.2f GB/s\n", "baseline: memcpy of 4 MiB", copy * 1e3,
           (double)(REDUCE_ELEMENTS * sizeof(float)) * 1e-9 / copy);
    const size_t counts[] = {2, 4};
    inside_run_t run = {.count = 1};
    for (size_t r = 0; r < MAX_REPLICAS; r++) run.values[r][0] = replica_values(context, r, host);
    for (size_t c = 0; c < 2; c++) {
        size_t n = counts[c];
        tp_mirrored_strategy_t *strategy = strategy_over(context, n);
        tp_tensor_t *per_replica[MAX_REPLICAS], *out[MAX_REPLICAS];
        for (size_t r = 0; r < n; r++) per_replica[r] = run.values[r][0];
        double outside[REDUCE_REPEATS];
        for (int k = 0; k < REDUCE_WARMUP + REDUCE_REPEATS; k++) {
            double start = now_seconds();
            TP_CHECK(tp_mirrored_strategy_all_reduce(strategy, TP_REDUCE_MEAN, per_replica, out));
            for (size_t r = 0; r < n; r++) TP_CHECK(tp_tensor_wait(out[r]));
            double seconds = now_seconds() - start;
            if (k >= REDUCE_WARMUP) outside[k - REDUCE_WARMUP] = seconds;
            if (k == 0) check_mean(out, n, strategy, host);
            for (size_t r = 0; r < n; r++) tp_tensor_release(out[r]);
        }
        double inside = inside_run_seconds(strategy, &run);
        printf("  %zu replicas (CPU:0..CPU:%zu)\n", n, n - 1);
        print_reduce("tp_mirrored_strategy_all_reduce (a run each)",
                     median_of(outside, REDUCE_REPEATS));
        print_reduce("tp_replica_all_reduce inside one run", inside);
        tp_mirrored_strategy_destroy(strategy);
    }

    /* What each replica runs for one all-reduce: its peers' tensors copied over, AddN of all
     * of them, and a Div by the number of replicas for the mean. */
    float n32 = 2.0f;
    tp_tensor_t *divisor;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &n32, sizeof n32, &divisor));
    tp_tensor_t *all[MAX_REPLICAS] = {run.values[0][0], run.values[0][0], run.values[0][0],
                                      run.values[0][0]};
    tp_tensor_t *mean_inputs[2] = {run.values[0][0], divisor};
    printf("  what one replica runs for it, each op alone on /cpu:0 (4 MiB tensors, GB/s as "
           "above)\n");
    print_reduce("Identity of a /cpu:1 tensor (copy to /cpu:0)",
                 op_seconds(context, "Identity", &run.values[1][0], 1));
    print_reduce("AddN of 2", op_seconds(context, "AddN", all, 2));
    print_reduce("AddN of 4", op_seconds(context, "AddN", all, 4));
    print_reduce("Div by a scalar (the mean)", op_seconds(context, "Div", mean_inputs, 2));
    print_reduce("Add of two (same shape, no broadcast)", op_seconds(context, "Add", all, 2));
    tp_tensor_release(divisor);
    for (size_t r = 0; r < MAX_REPLICAS; r++) tp_tensor_release(run.values[r][0]);
    TP_CHECK(tp_context_synchronize(context));
    tp_context_destroy(context);
    free(host);
}

/* ---- A training step ------------------------------------------------------------------------- */

enum {
    FEATURES = MLP_FEATURES,
    HIDDEN = MLP_HIDDEN,
    UNITS = MLP_UNITS,
    BATCH = 256,
    BATCHES = 8,
    ROWS = BATCH * BATCHES,
    FIT_REPEATS = 11
};

static const double LEARNING_RATE = 0.01;

/* ---- The baseline: the step written directly with cblas_sgemm (mlp_direct.h) ---- */

static void *share_thread(void *arg) {
    mlp_share_step(arg);
    return NULL;
}

/* Seconds for one epoch (BATCHES steps) of the direct step, with the batch split among
 * `threads` threads started for every step, as a strategy's run starts its replicas. */
static double direct_epoch_seconds(const float *x, const float *y, const mlp_weights_t *weights,
                                   mlp_share_t *shares, int threads) {
    int rows = shares[0].rows;
    double start = now_seconds();
    for (int b = 0; b < BATCHES; b++) {
        pthread_t ids[2];
        for (int t = 0; t < threads; t++) {
            shares[t].x = x + ((size_t)b * BATCH + (size_t)t * (size_t)rows) * FEATURES;
            shares[t].y = y + ((size_t)b * BATCH + (size_t)t * (size_t)rows) * UNITS;
        }
        if (threads == 1) {
            mlp_share_step(&shares[0]);
        } else {
            for (int t = 0; t < threads; t++)
                if (pthread_create(&ids[t], NULL, share_thread, &shares[t]) != 0) exit(1);
            for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
        }
        mlp_apply_all(weights, shares, threads, (float)LEARNING_RATE);
    }
    return now_seconds() - start;
}

/* ---- The runtime ---- */

static tp_model_t *dense_model(tp_context_t *context, tp_mirrored_strategy_t *strategy) {
    tp_model_t *model;
    TP_CHECK(tp_model_create(context, FEATURES, strategy, &model));
    TP_CHECK(tp_model_add_dense(model, HIDDEN, TP_ACTIVATION_RELU, TP_INITIALIZER_GLOROT_UNIFORM,
                                1));
    TP_CHECK(tp_model_add_dense(model, UNITS, TP_ACTIVATION_LINEAR,
                                TP_INITIALIZER_GLOROT_UNIFORM, 2));
    return model;
}

static double fit_seconds(tp_model_t *model, tp_tensor_t *x, tp_tensor_t *y, double *loss) {
    tp_fit_options_t options = TP_FIT_OPTIONS_INIT;
    options.epochs = 1;
    options.batch_size = BATCH;
    options.learning_rate = LEARNING_RATE;
    options.progress = NULL;
    double start = now_seconds();
    TP_CHECK(tp_model_fit(model, x, y, &options, loss));
    return now_seconds() - start;
}

/* `one`: the epoch's seconds on one device or thread, for the efficiency of two, with `note`. */
static void print_step(const char *what, double epoch_seconds, double one, const char *note) {
    printf("    %-52s %7.2f ms/step %8.0f samples/s", what, epoch_seconds * 1e3 / BATCHES,
           ROWS / epoch_seconds);
    if (one > 0) printf("   (efficiency %.2f; %s)", one / (2.0 * epoch_seconds), note);
    printf("\n");
}

static tp_status_t *empty_replica(tp_replica_context_t *replica, void *arg) {
    (void)replica;
    (void)arg;
    return NULL;
}

/* A tensor of (rows, columns), or (rows) for columns 0, of small values, made on `device`. */
static tp_tensor_t *small_values_on(tp_context_t *context, const char *device, int64_t rows,
                                    int64_t columns) {
    size_t count = (size_t)rows * (size_t)(columns > 0 ? columns : 1);
    float *values = mlp_floats(count);
    for (size_t i = 0; i < count; i++) values[i] = (float)(i % 11) * 1e-3f;
    TP_CHECK(tp_device_push(context, device));
    tp_tensor_t *t;
    TP_CHECK(tp_constant(context, TP_FLOAT32, columns > 0 ? TP_SHAPE(rows, columns) : TP_SHAPE(rows),
                         values, count * sizeof(float), &t));
    TP_CHECK(tp_device_pop(context));
    free(values);
    return t;
}

/* The model's parameter shapes: kernel and bias of each layer. */
static const int64_t PARAMETER_SHAPES[MAX_TENSORS][2] = {
    {FEATURES, HIDDEN}, {HIDDEN, 0}, {HIDDEN, UNITS}, {UNITS, 0}};

/* What a 2-device step adds to each replica's share of the work: a run, an all-reduce of the
 * gradients, and each replica's own update of its copy of the variables. */
static void print_step_pieces(tp_context_t *context, tp_mirrored_strategy_t *two) {
    double empty[REDUCE_REPEATS];
    for (int r = 0; r < REDUCE_REPEATS; r++) {
        double start = now_seconds();
        TP_CHECK(tp_mirrored_strategy_run(two, empty_replica, NULL));
        empty[r] = now_seconds() - start;
    }
    inside_run_t run = {.count = MAX_TENSORS};
    const char *devices[2] = {"/cpu:0", "/cpu:1"};
    for (size_t r = 0; r < 2; r++)
        for (size_t t = 0; t < MAX_TENSORS; t++)
            run.values[r][t] = small_values_on(context, devices[r], PARAMETER_SHAPES[t][0],
                                               PARAMETER_SHAPES[t][1]);
    double reduce = inside_run_seconds(two, &run);

    tp_variable_t *variables[MAX_TENSORS];
    for (size_t t = 0; t < MAX_TENSORS; t++)
        TP_CHECK(tp_variable_create(context, "v", run.values[0][t], "/cpu:0", &variables[t]));
    double sgd[REDUCE_REPEATS];
    for (int k = 0; k < REDUCE_WARMUP + REDUCE_REPEATS; k++) {
        double start = now_seconds();
        TP_CHECK(tp_sgd_apply(variables, run.values[0], MAX_TENSORS, LEARNING_RATE));
        TP_CHECK(tp_context_synchronize(context));
        if (k >= REDUCE_WARMUP) sgd[k - REDUCE_WARMUP] = now_seconds() - start;
    }
    printf("  per step, beside the forward and backward pass (median of %d)\n", REDUCE_REPEATS);
    printf("    %-52s %7.2f ms\n", "an empty tp_mirrored_strategy_run, 2 replicas",
           median_of(empty, REDUCE_REPEATS) * 1e3);
    printf("    %-52s %7.2f ms\n", "all-reduce (mean) of the 4 gradients, 2 replicas",
           reduce * 1e3);
    printf("    %-52s %7.2f ms\n", "tp_sgd_apply to the 4 variables of one replica",
           median_of(sgd, REDUCE_REPEATS) * 1e3);
    for (size_t t = 0; t < MAX_TENSORS; t++) {
        tp_variable_destroy(variables[t]);
        for (size_t r = 0; r < 2; r++) tp_tensor_release(run.values[r][t]);
    }
}

static void bench_training(void) {
    float *x = malloc((size_t)ROWS * FEATURES * sizeof(float));
    float *y = malloc((size_t)ROWS * UNITS * sizeof(float));
    if (x == NULL || y == NULL) exit(1);
    uint32_t seed = 12345;
    for (size_t i = 0; i < (size_t)ROWS * FEATURES; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / 16777216.0f;
    }
    for (size_t i = 0; i < (size_t)ROWS * UNITS; i++) {
        seed = seed * 1664525u + 1013904223u;
        y[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }

    tp_context_t *context = split_cpu_context(2, 1ull << 30);
    tp_tensor_t *xs, *ys;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(ROWS, FEATURES), x,
                              (size_t)ROWS * FEATURES * sizeof(float), &xs));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(ROWS, UNITS), y,
                              (size_t)ROWS * UNITS * sizeof(float), &ys));
    tp_mirrored_strategy_t *one = strategy_over(context, 1), *two = strategy_over(context, 2);
    tp_model_t *model1 = dense_model(context, one), *model2 = dense_model(context, two);

    /* The direct baseline starts from replica 0's weights of the one-device model. */
    mlp_weights_t weights = {mlp_floats((size_t)FEATURES * HIDDEN), mlp_floats(HIDDEN),
                             mlp_floats((size_t)HIDDEN * UNITS), mlp_floats(UNITS)};
    float *parts[2][2] = {{weights.w1, weights.b1}, {weights.w2, weights.b2}};
    size_t sizes[2][2] = {{(size_t)FEATURES * HIDDEN, HIDDEN}, {(size_t)HIDDEN * UNITS, UNITS}};
    for (size_t l = 0; l < 2; l++) {
        tp_tensor_t *kernel, *bias;
        TP_CHECK(tp_model_get_weights(model1, l, &kernel, &bias));
        TP_CHECK(tp_tensor_read(kernel, parts[l][0], sizes[l][0] * sizeof(float)));
        TP_CHECK(tp_tensor_read(bias, parts[l][1], sizes[l][1] * sizeof(float)));
        tp_tensor_release(kernel);
        tp_tensor_release(bias);
    }

    /* The first fit of each warms up: allocators' regions, OpenBLAS's buffers, page faults. */
    double loss1 = 0, loss2 = 0;
    (void)fit_seconds(model1, xs, ys, &loss1);
    (void)fit_seconds(model2, xs, ys, &loss2);
    mlp_share_t whole, halves[2]; /* the direct steps' scratch, made once */
    mlp_share_init(&whole, &weights, BATCH, BATCH);
    mlp_share_init(&halves[0], &weights, BATCH / 2, BATCH);
    mlp_share_init(&halves[1], &weights, BATCH / 2, BATCH);
    (void)direct_epoch_seconds(x, y, &weights, &whole, 1);
    (void)direct_epoch_seconds(x, y, &weights, halves, 2);
    double fit1[FIT_REPEATS], fit2[FIT_REPEATS], direct1[FIT_REPEATS], direct2[FIT_REPEATS];
    for (int r = 0; r < FIT_REPEATS; r++) {
        fit1[r] = fit_seconds(model1, xs, ys, &loss1);
        fit2[r] = fit_seconds(model2, xs, ys, &loss2);
        direct1[r] = direct_epoch_seconds(x, y, &weights, &whole, 1);
        direct2[r] = direct_epoch_seconds(x, y, &weights, halves, 2);
    }
    double t1 = median_of(fit1, FIT_REPEATS), t2 = median_of(fit2, FIT_REPEATS);
    double d1 = median_of(direct1, FIT_REPEATS), d2 = median_of(direct2, FIT_REPEATS);

    printf("a training step of Dense(256, relu) then Dense(10), 784 inputs, MSE, SGD, batch %d, "
           "TP_CPU_THREADS=1\n(tp_model_fit, 1 epoch of %d batches; median of %d)\n", BATCH,
           BATCHES, FIT_REPEATS);
    print_step("baseline: direct cblas_sgemm step, 1 thread", d1, 0, NULL);
    print_step("baseline: direct, 2 threads of 128 rows each", d2, d1,
               "what this machine's cores allow");
    print_step("tp_model_fit, 1 device (/cpu:0)", t1, 0, NULL);
    print_step("tp_model_fit, 2 devices (/cpu:0, /cpu:1)", t2, t1,
               "goal (issue 21): at least 0.85");
    printf("    %-52s %7.1f%%\n", "1 device's speed, as a share of the direct step's",
           100.0 * d1 / t1);
    printf("    last epoch's loss: 1 device %.6f, 2 devices %.6f (the same updates)\n", loss1,
           loss2);
    print_step_pieces(context, two);

    tp_model_destroy(model1);
    tp_model_destroy(model2);
    tp_mirrored_strategy_destroy(one);
    tp_mirrored_strategy_destroy(two);
    tp_tensor_release(xs);
    tp_tensor_release(ys);
    TP_CHECK(tp_context_synchronize(context));
    tp_context_destroy(context);
    mlp_share_free(&whole);
    mlp_share_free(&halves[0]);
    mlp_share_free(&halves[1]);
    free(weights.w1);
    free(weights.b1);
    free(weights.w2);
    free(weights.b2);
    free(x);
    free(y);
}

int main(void) {
    /* Read once per process, when the first context is made: one thread per CPU kernel, so
     * that each logical device's replica keeps to its own thread. */
    setenv("TP_CPU_THREADS", "1", 1);
    openblas_set_num_threads(1); /* for the direct baselines; the runtime sets the same */
    tp_log_set_level(TP_LOG_ERROR);
    double start = now_seconds();
    bench_all_reduce();
    bench_training();
    printf("(%.1f s in all)\n", now_seconds() - start);
    return 0;
}
