/* SPDX-License-Identifier: Apache-2.0 */
/* The digits examples' shared pieces: see digits_common.h. The split and the shuffling, the
 * layers both models use, then the training driver (digits_run). */
#include "digits_common.h"

#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

digits_split_kind_t digits_split_kind_parse(const char *program, const char *text) {
    if (strcmp(text, "fixed") == 0) return DIGITS_SPLIT_FIXED;
    if (strcmp(text, "shuffled") == 0) return DIGITS_SPLIT_SHUFFLED;
    fprintf(stderr, "%s: --split takes 'fixed' or 'shuffled', not '%s'\n", program, text);
    exit(2);
}

void digits_split_describe(digits_split_t split, char *out, size_t size) {
    if (split.kind == DIGITS_SPLIT_FIXED)
        snprintf(out, size, "fixed split");
    else
        snprintf(out, size, "shuffled split, seed %lld", (long long)split.seed);
}

/* SplitMix64: a small seeded generator for the host's shuffling. */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void digits_shuffle(int32_t *order, int64_t n, int64_t seed, int64_t stream) {
    uint64_t state = (uint64_t)seed * 1000003u + (uint64_t)stream;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix64(&state) % (uint64_t)(i + 1));
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The rows `indices[0..n)` of images and labels, as the split's images and labels. */
static tp_status_t *take_rows(tp_context_t *c, tp_tensor_t *images, tp_tensor_t *labels,
                              const int32_t *indices, int64_t n, tp_tensor_t **out_images,
                              tp_tensor_t **out_labels) {
    tp_tensor_t *index = NULL;
    tp_status_t *error = tp_tensor_create(c, TP_INT32, TP_SHAPE(n), indices,
                                          (size_t)n * sizeof(int32_t), &index);
    if (error == NULL) error = tp_gather(c, images, index, 0, out_images);
    if (error == NULL) error = tp_gather(c, labels, index, 0, out_labels);
    tp_tensor_release(index);
    return error;
}

/* The shuffled split: the fixed split's halves joined back into the file's order, permuted by
 * the split's own seed (the training's --seed shuffles batches, not this), then cut where the
 * fixed split cuts. Loading through tp_digits_load_split keeps its check that the file holds
 * the 1,797 images. */
static tp_status_t *shuffled_split(tp_context_t *c, int64_t seed, const tp_digits_t *fixed,
                                   tp_digits_t *out) {
    tp_status_t *error = NULL;
    tp_tensor_t *images = NULL, *labels = NULL;
    tp_tensor_t *const image_halves[2] = {fixed->train_images, fixed->test_images};
    tp_tensor_t *const label_halves[2] = {fixed->train_labels, fixed->test_labels};
    int32_t order[TP_DIGITS_ROWS];
    for (int32_t i = 0; i < TP_DIGITS_ROWS; i++) order[i] = i;
    /* Stream 0: the examples' batch shuffles use streams 1, 2, ... (their epochs). */
    digits_shuffle(order, TP_DIGITS_ROWS, seed, 0);
    error = tp_concat(c, image_halves, 2, 0, &images);
    if (error == NULL) error = tp_concat(c, label_halves, 2, 0, &labels);
    if (error == NULL)
        error = take_rows(c, images, labels, order, TP_DIGITS_TRAIN_ROWS, &out->train_images,
                          &out->train_labels);
    if (error == NULL)
        error = take_rows(c, images, labels, order + TP_DIGITS_TRAIN_ROWS, TP_DIGITS_TEST_ROWS,
                          &out->test_images, &out->test_labels);
    tp_tensor_release(images);
    tp_tensor_release(labels);
    return error;
}

tp_status_t *digits_load(tp_context_t *c, digits_split_t split, tp_digits_t *out) {
    tp_digits_t fixed = {NULL, NULL, NULL, NULL};
    *out = fixed;
    tp_status_t *error = tp_digits_load_split(c, NULL, &fixed);
    if (error != NULL || split.kind == DIGITS_SPLIT_FIXED) {
        *out = fixed;
        return error;
    }
    /* On CPU:0, where tp_digits_load_split puts the fixed split. */
    error = tp_device_push(c, "/CPU:0");
    if (error == NULL) {
        error = shuffled_split(c, split.seed, &fixed, out);
        tp_status_free(tp_device_pop(c));
    }
    tp_digits_release(&fixed);
    if (error != NULL) tp_digits_release(out);
    return error;
}

/* ---- Layers ---------------------------------------------------------------------------------- */

tp_status_t *digits_scalar(tp_context_t *c, float value, tp_tensor_t **out) {
    return tp_constant(c, TP_FLOAT32, TP_SCALAR_SHAPE, &value, sizeof value, out);
}

tp_status_t *digits_zeros(tp_context_t *c, int64_t n, tp_tensor_t **out) {
    tp_status_t *error = NULL;
    tp_tensor_t *zero = NULL;
    TRY(digits_scalar(c, 0.0f, &zero));
    TRY(tp_fill(c, TP_SHAPE(n), zero, out));
done:
    tp_tensor_release(zero);
    return error;
}

/* U(-limit, limit) with limit = sqrt(6 / (inputs + units)), made from tp_random_uniform's
 * U(0, 1) as limit * (2u - 1). */
tp_status_t *digits_glorot_uniform(tp_context_t *c, int64_t inputs, int64_t units, int64_t seed,
                                   tp_tensor_t **out) {
    tp_status_t *error = NULL;
    tp_tensor_t *u = NULL, *two_limit = NULL, *limit = NULL, *scaled = NULL;
    const float l = (float)sqrt(6.0 / (double)(inputs + units));
    TRY(tp_random_uniform(c, TP_FLOAT32, TP_SHAPE(inputs, units), seed, &u));
    TRY(digits_scalar(c, 2.0f * l, &two_limit));
    TRY(digits_scalar(c, l, &limit));
    TRY(tp_mul(c, u, two_limit, &scaled));
    TRY(tp_sub(c, scaled, limit, out));
done:
    tp_tensor_release(u);
    tp_tensor_release(two_limit);
    tp_tensor_release(limit);
    tp_tensor_release(scaled);
    return error;
}

/* Reading the variables is what lets a recording tape take gradients with respect to them. */
tp_status_t *digits_dense(tp_context_t *c, tp_tensor_t *x, tp_variable_t *kernel,
                          tp_variable_t *bias, bool relu, tp_tensor_t **out) {
    tp_status_t *error = NULL;
    tp_tensor_t *w = NULL, *b = NULL, *xw = NULL, *z = NULL;
    TRY(tp_variable_read(kernel, &w));
    TRY(tp_variable_read(bias, &b));
    TRY(tp_matmul(c, x, w, false, false, &xw));
    TRY(tp_bias_add(c, xw, b, relu ? &z : out));
    if (relu) TRY(tp_relu(c, z, out));
done:
    tp_tensor_release(w);
    tp_tensor_release(b);
    tp_tensor_release(xw);
    tp_tensor_release(z);
    return error;
}

/* ---- The training driver: errors and the command line ---------------------------------------- */

enum { MAX_REPLICAS = 8 }; /* what --strategy accepts */
enum { BATCH_SIZE = 32 };

/* The running example's name, for its messages. */
static const char *program = "digits";

/* The main thread treats any error as fatal: it says what failed and why, and exits. */
static void check(tp_status_t *status, const char *what) {
    if (status == NULL) return;
    fprintf(stderr, "%s: %s failed: %s: %s\n", program, what,
            tp_code_name(tp_status_code(status)), tp_status_message(status));
    tp_status_free(status);
    exit(1);
}

typedef struct options {
    long epochs;
    long seed;
    long replicas;
    const char *device;
    bool log_placement;
    digits_split_t split;
    bool multi_worker;
    const char *save_weights;    /* a path prefix, or NULL */
    const char *checkpoint;      /* a path, or NULL */
    long checkpoint_every;       /* steps */
    long kill_at_step;           /* the last worker kills itself before this step; -1: never */
} options_t;

static void usage(void) {
    fprintf(stderr, "usage: %s [--epochs N] [--seed S] [--device NAME] [--strategy N] "
                    "[--log-placement]\n"
                    "       [--split fixed|shuffled] [--split-seed N] [--multi-worker]\n"
                    "       [--save-weights PREFIX] [--checkpoint PATH [--checkpoint-every N]]\n"
                    "       [--kill-at-step N]\n",
            program);
    exit(2);
}

static long parse_number(const char *flag, const char *text, long min, long max) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
        fprintf(stderr, "%s: %s takes a whole number from %ld to %ld, not '%s'\n", program, flag,
                min, max, text);
        exit(2);
    }
    return value;
}

static options_t parse_options(int argc, char **argv, long default_epochs) {
    options_t options = {.epochs = default_epochs, .seed = 1, .replicas = 1, .device = "CPU:0",
                         .split = {DIGITS_SPLIT_FIXED, 0}, .checkpoint_every = 100,
                         .kill_at_step = -1};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--log-placement") == 0) {
            options.log_placement = true;
            continue;
        }
        if (strcmp(flag, "--multi-worker") == 0) {
            options.multi_worker = true;
            continue;
        }
        if (i + 1 >= argc) usage();
        const char *value = argv[++i];
        if (strcmp(flag, "--epochs") == 0)
            options.epochs = parse_number(flag, value, 1, 1000);
        else if (strcmp(flag, "--seed") == 0)
            options.seed = parse_number(flag, value, 0, INT32_MAX);
        else if (strcmp(flag, "--strategy") == 0)
            options.replicas = parse_number(flag, value, 1, MAX_REPLICAS);
        else if (strcmp(flag, "--device") == 0)
            options.device = value;
        else if (strcmp(flag, "--split") == 0)
            options.split.kind = digits_split_kind_parse(program, value);
        else if (strcmp(flag, "--split-seed") == 0)
            options.split.seed = parse_number(flag, value, 0, INT32_MAX);
        else if (strcmp(flag, "--save-weights") == 0)
            options.save_weights = value;
        else if (strcmp(flag, "--checkpoint") == 0)
            options.checkpoint = value;
        else if (strcmp(flag, "--checkpoint-every") == 0)
            options.checkpoint_every = parse_number(flag, value, 1, INT32_MAX);
        else if (strcmp(flag, "--kill-at-step") == 0)
            options.kill_at_step = parse_number(flag, value, 0, INT32_MAX);
        else
            usage();
    }
    return options;
}

/* ---- The training driver: weights, data, accuracy -------------------------------------------- */

/* The weights: one copy per replica, each on its replica's device, all starting equal. Replica
 * r's are params[r * n .. (r + 1) * n) for the model's n weights, so that all the copies make
 * one array, which one optimizer update takes whole. */
typedef struct weights {
    const digits_model_t *model;
    size_t replicas;
    tp_variable_t *params[MAX_REPLICAS * DIGITS_MAX_PARAMS];
} weights_t;

static tp_variable_t *const *replica_params(const weights_t *weights, size_t r) {
    return weights->params + r * (size_t)weights->model->num_params;
}

static tp_status_t *weights_create(tp_context_t *c, const digits_model_t *model,
                                   tp_mirrored_strategy_t *strategy, int64_t seed,
                                   weights_t *weights) {
    const int n = model->num_params;
    tp_status_t *error = NULL;
    tp_tensor_t *initial[DIGITS_MAX_PARAMS] = {NULL};
    *weights = (weights_t){.model = model,
                           .replicas = tp_mirrored_strategy_num_replicas(strategy)};
    /* Drawn once on the CPU, then copied to each replica's device, so that every replica
     * starts from the same values. */
    TRY(tp_device_push(c, "/CPU:0"));
    error = model->initial_values(c, seed, initial);
    tp_status_free(tp_device_pop(c));
    if (error != NULL) goto done;
    for (size_t r = 0; r < weights->replicas; r++)
        for (int p = 0; p < n; p++)
            TRY(tp_variable_create(c, model->param_names[p], initial[p],
                                   tp_mirrored_strategy_device(strategy, r),
                                   &weights->params[r * (size_t)n + (size_t)p]));
done:
    for (int p = 0; p < n; p++) tp_tensor_release(initial[p]);
    return error;
}

static void weights_destroy(weights_t *weights) {
    const size_t count = weights->replicas * (size_t)weights->model->num_params;
    for (size_t i = 0; i < count; i++) tp_variable_destroy(weights->params[i]);
}

/* The data set, copied once to each replica's device so that a step sends only the indices of
 * its images there. */
typedef struct replica_data {
    tp_tensor_t *train_images, *train_labels, *test_images, *test_labels;
} replica_data_t;

static tp_status_t *copy_to(tp_context_t *c, const char *device, tp_tensor_t *x,
                            tp_tensor_t **out) {
    tp_status_t *error = tp_device_push(c, device);
    if (error != NULL) return error;
    error = tp_identity(c, x, out);
    tp_status_free(tp_device_pop(c));
    return error;
}

static void replica_data_release(replica_data_t *data) {
    tp_tensor_release(data->train_images);
    tp_tensor_release(data->train_labels);
    tp_tensor_release(data->test_images);
    tp_tensor_release(data->test_labels);
}

/* The percentage of `images` whose largest logit is their label's: ArgMax, Equal, Cast and
 * Mean, on the device in scope; only the final number comes back to the host. */
static tp_status_t *accuracy(tp_context_t *c, const digits_model_t *model,
                             tp_variable_t *const *params, tp_tensor_t *images,
                             tp_tensor_t *labels, double *out_percent) {
    tp_status_t *error = NULL;
    tp_tensor_t *logits = NULL, *predicted = NULL, *correct = NULL, *as_float = NULL,
                *mean = NULL;
    float share = 0.0f;
    TRY(model->forward(c, params, images, &logits));
    TRY(tp_argmax(c, logits, 1, TP_INT32, &predicted));
    TRY(tp_equal(c, predicted, labels, &correct));
    TRY(tp_cast(c, correct, TP_FLOAT32, &as_float));
    TRY(tp_mean(c, as_float, NULL, 0, false, &mean));
    TRY(tp_tensor_read(mean, &share, sizeof share));
    *out_percent = 100.0 * share;
done:
    tp_tensor_release(logits);
    tp_tensor_release(predicted);
    tp_tensor_release(correct);
    tp_tensor_release(as_float);
    tp_tensor_release(mean);
    return error;
}

/* ---- The training driver: one step ----------------------------------------------------------- */

/* One training step, shared by the replicas: what they read and what they give back. */
typedef struct step {
    weights_t *weights;
    replica_data_t *data;   /* per replica */
    const int32_t *order;   /* the batch's images, as indices */
    int64_t batch;          /* how many */
    /* out: the all-reduced gradients, laid out as weights->params */
    tp_tensor_t *grads[MAX_REPLICAS * DIGITS_MAX_PARAMS];
    float loss; /* out: the batch's mean loss, summed over every replica's part */
} step_t;

/* One replica's part of a step, on its own thread with its device in scope: the forward pass
 * on its share of the batch under a tape, the gradients, and their sum over the replicas. */
static tp_status_t *train_replica(tp_replica_context_t *replica, void *user_data) {
    step_t *step = user_data;
    const digits_model_t *model = step->weights->model;
    const int n = model->num_params;
    tp_context_t *c = tp_replica_context(replica);
    const size_t r = tp_replica_index(replica);
    tp_variable_t *const *params = replica_params(step->weights, r);
    /* Rows [begin, end) of the batch, among the replicas of every worker: shares differ by
     * one row at most. */
    int64_t begin, end;
    tp_replica_batch_shard(replica, step->batch, &begin, &end);
    const int64_t rows = end - begin;
    tp_status_t *error = NULL;
    tp_tape_t *tape = NULL;
    tp_tensor_t *indices = NULL, *images = NULL, *labels = NULL, *logits = NULL, *loss = NULL,
                *share = NULL, *weighted = NULL;
    /* The gradients, then the weighted loss: one all-reduce sums them all. */
    tp_tensor_t *grads[DIGITS_MAX_PARAMS + 1] = {NULL}, *sums[DIGITS_MAX_PARAMS + 1] = {NULL};
    TRY(tp_tensor_create(c, TP_INT32, TP_SHAPE(rows), step->order + begin,
                         (size_t)rows * sizeof(int32_t), &indices));
    TRY(tp_gather(c, step->data[r].train_images, indices, 0, &images));
    TRY(tp_gather(c, step->data[r].train_labels, indices, 0, &labels));

    TRY(tp_tape_begin_with(c, NULL, &tape));
    TRY(model->forward(c, params, images, &logits));
    TRY(tp_sparse_softmax_cross_entropy(c, labels, logits, &loss));
    /* The mean over this replica's rows, weighted by its share of the batch: summed over the
     * replicas, the batch's mean loss, whose gradients are those one device would compute. */
    TRY(digits_scalar(c, (float)rows / (float)step->batch, &share));
    TRY(tp_mul(c, loss, share, &weighted));
    TRY(tp_tape_stop(tape));
    TRY(tp_tape_gradient_variables(tape, weighted, params, (size_t)n, grads));

    grads[n] = tp_tensor_retain(weighted);
    TRY(tp_replica_all_reduce(replica, TP_REDUCE_SUM, grads, (size_t)n + 1, sums));
    for (int p = 0; p < n; p++) {
        step->grads[r * (size_t)n + (size_t)p] = sums[p];
        sums[p] = NULL;
    }
    if (r == 0) TRY(tp_tensor_read(sums[n], &step->loss, sizeof(float)));
done:
    tp_tape_destroy(tape);
    for (int p = 0; p <= n; p++) {
        tp_tensor_release(grads[p]);
        tp_tensor_release(sums[p]);
    }
    tp_tensor_release(indices);
    tp_tensor_release(images);
    tp_tensor_release(labels);
    tp_tensor_release(logits);
    tp_tensor_release(loss);
    tp_tensor_release(share);
    tp_tensor_release(weighted);
    return error;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* ---- The training driver: the epochs --------------------------------------------------------- */

int digits_run(int argc, char **argv, const digits_model_t *model) {
    program = model->program;
    if (model->num_params < 1 || model->num_params > DIGITS_MAX_PARAMS) {
        fprintf(stderr, "%s: the model has %d weights; the driver takes 1 to %d\n", program,
                model->num_params, (int)DIGITS_MAX_PARAMS);
        return 1;
    }
    const options_t options = parse_options(argc, argv, model->default_epochs);

    /* Ops the chosen device has no kernel for fall back to the CPU. */
    tp_context_options_t context_options = TP_CONTEXT_OPTIONS_INIT;
    context_options.soft_device_placement = true;
    tp_context_t *context;
    check(tp_context_create(&context_options, &context), "creating the context");

    /* The replicas' devices: the device asked for, or device 0 of its type split in as many
     * logical devices as there are replicas (256 MiB each). */
    char type[32], names[MAX_REPLICAS][48];
    const char *devices[MAX_REPLICAS];
    snprintf(type, sizeof type, "%s", options.device + (options.device[0] == '/'));
    type[strcspn(type, ":")] = '\0';
    if (options.replicas == 1) {
        snprintf(names[0], sizeof names[0], "%s", options.device);
    } else {
        char physical[48];
        uint64_t limits[MAX_REPLICAS];
        snprintf(physical, sizeof physical, "%s:0", type);
        for (long r = 0; r < options.replicas; r++) {
            limits[r] = 256ull << 20;
            snprintf(names[r], sizeof names[r], "/%s:%ld", type, r);
        }
        check(tp_context_set_logical_devices(context, physical, limits, (size_t)options.replicas),
              "splitting the device into logical devices");
    }
    for (long r = 0; r < options.replicas; r++) devices[r] = names[r];
    tp_mirrored_strategy_t *strategy;
    if (options.multi_worker)
        check(tp_multi_worker_mirrored_strategy_create(context, devices, (size_t)options.replicas,
                                                       NULL, &strategy),
              "creating the multi-worker mirrored strategy");
    else
        check(tp_mirrored_strategy_create(context, devices, (size_t)options.replicas, &strategy),
              "creating the mirrored strategy");
    const size_t replicas = tp_mirrored_strategy_num_replicas(strategy);
    const size_t worker = tp_mirrored_strategy_worker_index(strategy);
    const size_t workers = tp_mirrored_strategy_num_workers(strategy);
    /* Worker 0 speaks for the job; the others print only their replicas and failures. */
    const bool chief = worker == 0;

    tp_digits_t digits;
    check(digits_load(context, options.split, &digits), "loading the digits");
    replica_data_t data[MAX_REPLICAS];
    memset(data, 0, sizeof data);
    for (size_t r = 0; r < replicas; r++) {
        const char *device = tp_mirrored_strategy_device(strategy, r);
        check(copy_to(context, device, digits.train_images, &data[r].train_images),
              "copying the training images");
        check(copy_to(context, device, digits.train_labels, &data[r].train_labels),
              "copying the training labels");
        check(copy_to(context, device, digits.test_images, &data[r].test_images),
              "copying the test images");
        check(copy_to(context, device, digits.test_labels, &data[r].test_labels),
              "copying the test labels");
        if (workers > 1)
            printf("Worker %zu of %zu: replica %zu on %s\n", worker, workers, r, device);
        else
            printf("Replica %zu on %s\n", r, device);
        fflush(stdout);
    }

    char split[48];
    digits_split_describe(options.split, split, sizeof split);

    weights_t weights;
    check(weights_create(context, model, strategy, options.seed, &weights),
          "initialising the weights");
    tp_adam_options_t adam = TP_ADAM_OPTIONS_INIT;
    adam.learning_rate = model->learning_rate;
    tp_optimizer_t *optimizer;
    check(tp_optimizer_create_adam(context, &adam, &optimizer), "creating the Adam optimizer");

    const int64_t n = TP_DIGITS_TRAIN_ROWS;
    const size_t all_params = replicas * (size_t)model->num_params;
    /* The training state: every weight, then the optimizer's (its slots made now, so that a
     * checkpoint can fill them and worker 0 can hand them out before the first step). */
    check(tp_optimizer_build(optimizer, weights.params, all_params), "making Adam's slots");
    tp_variable_t *state[MAX_REPLICAS * DIGITS_MAX_PARAMS * 3 + 1];
    memcpy(state, weights.params, all_params * sizeof *state);
    const size_t state_count =
        all_params + tp_optimizer_variables(optimizer, state + all_params,
                                            sizeof state / sizeof *state - all_params);
    bool restored = false;
    check(digits_state_start(context, strategy, options.checkpoint, state, state_count,
                             &restored),
          "starting from worker 0's state");
    int64_t start_step = 0;
    check(tp_optimizer_iterations(optimizer, &start_step), "reading the step count");
    if (chief && restored)
        printf("Resuming from checkpoint %s at step %lld\n", options.checkpoint,
               (long long)start_step);
    int32_t order[TP_DIGITS_TRAIN_ROWS];
    for (int64_t i = 0; i < n; i++) order[i] = (int32_t)i;
    step_t step = {.weights = &weights, .data = data};
    double test_percent = 0.0;
    int64_t steps_done = 0;
    for (long epoch = 1; epoch <= options.epochs; epoch++) {
        digits_shuffle(order, n, options.seed, epoch);
        double loss_sum = 0.0;
        const double start = seconds_now();
        for (int64_t first = 0; first < n; first += BATCH_SIZE) {
            /* Steps a restored checkpoint already took: the order of batches is the seed's,
             * so the run goes on exactly where the checkpointed one was. */
            if (steps_done < start_step) {
                steps_done++;
                continue;
            }
            /* Fault injection for the tests: a worker dying mid-run. */
            if (steps_done == options.kill_at_step && worker + 1 == workers) {
                fprintf(stderr, "%s: worker %zu kills itself before step %lld\n", program,
                        worker, (long long)steps_done);
                raise(SIGKILL);
            }
            step.order = order + first;
            step.batch = n - first < BATCH_SIZE ? n - first : BATCH_SIZE;
            const bool log = options.log_placement && epoch == 1 && first == 0;
            if (log) tp_context_set_log_device_placement(context, true);
            check(tp_mirrored_strategy_run(strategy, train_replica, &step), "a training step");
            /* One update of every replica's copy: they received the same gradients, so the
             * copies stay equal. */
            check(tp_optimizer_apply(optimizer, weights.params, step.grads, all_params),
                  "Adam's update");
            if (log) tp_context_set_log_device_placement(context, false);
            loss_sum += (double)step.loss * (double)step.batch;
            for (size_t i = 0; i < all_params; i++) tp_tensor_release(step.grads[i]);
            steps_done++;
            if (options.checkpoint != NULL && chief && steps_done % options.checkpoint_every == 0)
                check(digits_checkpoint_save(options.checkpoint, state, state_count),
                      "writing a checkpoint");
        }
        check(tp_context_synchronize(context), "finishing the epoch's updates");
        const double seconds = seconds_now() - start;

        double train_percent;
        tp_variable_t *const *params = replica_params(&weights, 0);
        check(tp_device_push(context, devices[0]), "entering replica 0's device scope");
        check(accuracy(context, model, params, data[0].train_images, data[0].train_labels,
                       &train_percent),
              "measuring the training accuracy");
        check(accuracy(context, model, params, data[0].test_images, data[0].test_labels,
                       &test_percent),
              "measuring the test accuracy");
        check(tp_device_pop(context), "leaving replica 0's device scope");
        if (chief)
            printf("Epoch %ld/%ld (%s): loss %.4f, train accuracy %.2f%%, test accuracy "
                   "%.2f%%, %.2f s, %.0f images/s\n",
                   epoch, options.epochs, split, loss_sum / (double)n, train_percent,
                   test_percent, seconds, (double)n / seconds);
        fflush(stdout);
    }
    if (chief) printf("Test accuracy (%s): %.2f%%\n", split, test_percent);
    if (options.save_weights != NULL) {
        /* Each worker its own file, so that a test can compare the workers' weights. */
        char path[4096];
        snprintf(path, sizeof path, "%s-worker%zu.npz", options.save_weights, worker);
        check(tp_checkpoint_save(path, replica_params(&weights, 0), NULL,
                                 (size_t)model->num_params),
              "saving the weights");
    }

    tp_optimizer_destroy(optimizer);
    weights_destroy(&weights);
    for (size_t r = 0; r < replicas; r++) replica_data_release(&data[r]);
    tp_digits_release(&digits);
    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
    return 0;
}
