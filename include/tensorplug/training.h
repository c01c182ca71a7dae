/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tensorplug training: variables, gradient tapes, a small sequential model of Dense layers with
 * mean squared error and gradient descent, and mirrored data-parallel training over several
 * devices. Built on tensorplug.h; the same error and thread conventions hold.
 */
#ifndef TENSORPLUG_TRAINING_H
#define TENSORPLUG_TRAINING_H

#include "tensorplug/tensorplug.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Variables --------------------------------------------------------------------------------
 *
 * A variable holds a tensor on one device and can be given a new value; the values it held
 * before stay valid for whoever still holds them (tensors are immutable). Reads and updates are
 * thread-safe. */

typedef struct tp_variable tp_variable_t;

/* A trainable variable named `name` (copied) holding a copy of `initial` on `device` (any
 * accepted device name; NULL: the device `initial` is on). */
TP_API TP_MUST_USE tp_status_t *tp_variable_create(tp_context_t *context, const char *name,
                                                  tp_tensor_t *initial, const char *device,
                                                  tp_variable_t **out);
/* NULL is fine. Tensors read from it stay valid. */
TP_API void tp_variable_destroy(tp_variable_t *variable);
TP_API const char *tp_variable_name(const tp_variable_t *variable);
/* The canonical name of the device holding it. */
TP_API const char *tp_variable_device(const tp_variable_t *variable);
TP_API tp_dtype_t tp_variable_dtype(const tp_variable_t *variable);
TP_API tp_shape_t tp_variable_shape(const tp_variable_t *variable);
/* Its current value, a new reference. Every tape recording on this thread watches it, so
 * tp_tape_gradient_variables finds it. Fails inside a traced function's body: a graph would
 * keep the value read at trace time; pass the value as an argument instead. */
TP_API TP_MUST_USE tp_status_t *tp_variable_read(tp_variable_t *variable, tp_tensor_t **out);
/* Makes `value` (copied to the variable's device) its value; dtype and shape must match. */
TP_API TP_MUST_USE tp_status_t *tp_variable_assign(tp_variable_t *variable, tp_tensor_t *value);
/* value := value - delta, computed on the variable's device (delta broadcasts). */
TP_API TP_MUST_USE tp_status_t *tp_variable_assign_sub(tp_variable_t *variable,
                                                      tp_tensor_t *delta);

/* Gives each variables[i] the value values[i] (copied to its device), all or none: every dtype,
 * shape and context is checked and every copy made before any variable changes, so a failure
 * leaves them all as they were. A reader on another thread may see some updated before
 * others. A variable listed twice takes its last value. */
TP_API TP_MUST_USE tp_status_t *tp_variable_assign_all(tp_variable_t *const *variables,
                                                      tp_tensor_t *const *values, size_t count);

/* ---- Gradient tapes ---------------------------------------------------------------------------
 *
 * A tape records the ops this thread runs on its context while it records, eagerly or inside a
 * traced function's body, as TensorFlow's GradientTape does: an op is kept when one of its
 * inputs is watched (tp_tape_watch, or a variable read) or was made by an op kept. Tapes nest;
 * an outer tape records the ops an inner tape's gradient runs, so gradients of gradients work.
 * A tape belongs to the thread that began it. */

typedef struct tp_tape tp_tape_t;

/* Starts a persistent tape recording on this thread (gradients may be taken any number of
 * times). */
TP_API TP_MUST_USE tp_status_t *tp_tape_begin(tp_context_t *context, tp_tape_t **out);

/* How a tape records. Start from TP_TAPE_OPTIONS_INIT; fields are only ever appended. */
typedef struct tp_tape_options {
    size_t struct_size;
    /* false (the default, as TensorFlow's GradientTape): one gradient call (tp_tape_gradient,
     * tp_tape_gradients or tp_tape_gradient_variables), after which the tape frees what it
     * recorded, so that the tensors it kept alive go back to their devices; a second call, or a
     * tp_tape_watch, fails with FAILED_PRECONDITION. true: any number of calls; what it recorded
     * is kept until tp_tape_destroy. */
    bool persistent;
} tp_tape_options_t;

#define TP_TAPE_OPTIONS_INIT {sizeof(tp_tape_options_t), false}

/* Starts a tape recording on this thread with `options` (NULL: TP_TAPE_OPTIONS_INIT). */
TP_API TP_MUST_USE tp_status_t *tp_tape_begin_with(tp_context_t *context,
                                                  const tp_tape_options_t *options,
                                                  tp_tape_t **out);
/* Watches `tensor` (kept alive by the tape) so that gradients with respect to it can be taken. */
TP_API TP_MUST_USE tp_status_t *tp_tape_watch(tp_tape_t *tape, tp_tensor_t *tensor);
/* Stops recording; the tape keeps what it recorded. Stopping twice is an error. */
TP_API TP_MUST_USE tp_status_t *tp_tape_stop(tp_tape_t *tape);
/* Stops recording if need be (on the thread that began it) and frees the tape. NULL is fine. */
TP_API void tp_tape_destroy(tp_tape_t *tape);
/* Pauses (true) or resumes (false) a tape that records, as TensorFlow's
 * GradientTape.stop_recording: while paused it records no op and watches no variable read.
 * Only on the thread that began it, before tp_tape_stop (FAILED_PRECONDITION otherwise). */
TP_API TP_MUST_USE tp_status_t *tp_tape_pause(tp_tape_t *tape, bool paused);

/*
 * The gradients of `target`, which must be a floating-point scalar, with respect to each of
 * `sources`: grads[i] has the shape of sources[i] and is a new tensor; a source the target does
 * not depend on gets zeros. Each gradient op runs on the device its forward op ran on, so that
 * training on an accelerator stays there (an op that device has no kernel for falls back as
 * soft placement does: counted, and logged once), unless the calling thread has a device scope
 * on the context, which then places them all; inside a traced body they are traced too. May be
 * called more than once on a persistent tape (tp_tape_begin's). An op on the path without a
 * gradient is an error naming it.
 */
TP_API TP_MUST_USE tp_status_t *tp_tape_gradient(tp_tape_t *tape, tp_tensor_t *target,
                                                tp_tensor_t *const *sources, size_t num_sources,
                                                tp_tensor_t **grads);
/* The same with respect to variables: the sum over every value of each that the tape saw read. */
TP_API TP_MUST_USE tp_status_t *tp_tape_gradient_variables(tp_tape_t *tape, tp_tensor_t *target,
                                                          tp_variable_t *const *variables,
                                                          size_t num_variables,
                                                          tp_tensor_t **grads);

/*
 * The gradients of several targets with respect to several sources, as TensorFlow's
 * GradientTape.gradient(targets, sources, output_gradients): grads[s] is the sum over targets t
 * of output_gradients[t] . d targets[t] / d sources[s] (a vector-Jacobian product), a new tensor
 * of sources[s]'s shape, or NULL where no target depends on sources[s] through differentiable
 * ops: "no gradient", as TensorFlow's None, which is not zero (a target that depends on a
 * source only through Sign gets zeros; one reached only through a Cast to an integer, NULL).
 *   targets[t]: floating point, of any shape.
 *   output_gradients: NULL for all ones, or one per target: output_gradients[t] is
 *     d(loss)/d(targets[t]), of targets[t]'s dtype and shape, or NULL for ones (the gradient of
 *     the sum of its elements).
 *   sources[s]: each a tensor the tape watched or one an op it recorded made (a target may be a
 *     source too); any other is INVALID_ARGUMENT naming its index.
 * Where the gradient ops run, and tracing: as tp_tape_gradient. On failure every grads[s] is
 * NULL. On a tape that is not persistent this is its one gradient call (see tp_tape_options_t).
 */
TP_API TP_MUST_USE tp_status_t *tp_tape_gradients(tp_tape_t *tape, tp_tensor_t *const *targets,
                                                 tp_tensor_t *const *output_gradients,
                                                 size_t num_targets,
                                                 tp_tensor_t *const *sources, size_t num_sources,
                                                 tp_tensor_t **grads);

/* ---- Losses and optimizers ------------------------------------------------------------------- */

/* mean((y_true - y_pred)^2) over every element, a scalar. */
TP_API TP_MUST_USE tp_status_t *tp_mean_squared_error(tp_context_t *context, tp_tensor_t *y_true,
                                                     tp_tensor_t *y_pred, tp_tensor_t **out);
/* Softmax cross-entropy of `logits` [batch, classes] against `labels`, averaged over the batch:
 * a scalar, differentiable with respect to the logits (and dense labels). Labels are
 * probabilities of the logits' shape and dtype (one-hot, or smoothed), or for the sparse form
 * class indices [batch], int32 or int64. A label outside [0, classes), or a NaN or infinite
 * loss, fails with INVALID_ARGUMENT naming the row (see tp_softmax_cross_entropy_with_logits). */
TP_API TP_MUST_USE tp_status_t *tp_softmax_cross_entropy(tp_context_t *context,
                                                        tp_tensor_t *labels, tp_tensor_t *logits,
                                                        tp_tensor_t **mean_loss);
TP_API TP_MUST_USE tp_status_t *tp_sparse_softmax_cross_entropy(tp_context_t *context,
                                                               tp_tensor_t *labels,
                                                               tp_tensor_t *logits,
                                                               tp_tensor_t **mean_loss);
/* Gradient descent: each variable -= learning_rate * its gradient, on the variable's device. */
TP_API TP_MUST_USE tp_status_t *tp_sgd_apply(tp_variable_t *const *variables,
                                            tp_tensor_t *const *grads, size_t count,
                                            double learning_rate);

/* ---- Optimizers with state: SGD with momentum, Adam ---------------------------------------
 *
 * Keras's SGD and Adam. An optimizer keeps its state as variables, so that a checkpoint saves
 * and restores it beside the model's (tp_optimizer_variables lists them): the step count,
 * "optimizer/iterations", an int64 scalar on CPU:0; and for each variable it updates, slots of
 * the variable's dtype and shape on the variable's device, starting at zero: SGD with momentum
 * keeps "optimizer/NAME/momentum", Adam "optimizer/NAME/m" and "optimizer/NAME/v" (NAME: the
 * variable's name). Slots are made the first time a variable is updated, or by
 * tp_optimizer_build (to restore a checkpoint before the first step). The learning rate is a
 * plain number that the caller may change between steps (a schedule). An optimizer knows a
 * variable by its address: the variables it updates must outlive it. Thread-safe; updates
 * from several threads run one at a time. */

typedef struct tp_optimizer tp_optimizer_t;

/* velocity = momentum * velocity - learning_rate * gradient, then
 *     variable += velocity                                                (nesterov false)
 *     variable += momentum * velocity - learning_rate * gradient           (nesterov true)
 * and with momentum 0 (no slot) variable -= learning_rate * gradient. */
typedef struct tp_sgd_options {
    size_t struct_size;
    double learning_rate; /* finite, >= 0 */
    double momentum;      /* in [0, 1] */
    bool nesterov;
} tp_sgd_options_t;

#define TP_SGD_OPTIONS_INIT {sizeof(tp_sgd_options_t), 0.01, 0.0, false}

/* At step t (1 for the first update; iterations + 1):
 *     m = m + (gradient - m) * (1 - beta1)
 *     v = v + (gradient^2 - v) * (1 - beta2)
 *     variable -= alpha * m / (sqrt(v) + epsilon),
 *         alpha = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)
 * which is Adam with its bias correction folded into the step size, as Keras and TensorFlow
 * compute it (epsilon is the paper's "epsilon hat"). alpha is computed in double on the host. */
typedef struct tp_adam_options {
    size_t struct_size;
    double learning_rate; /* finite, >= 0 */
    double beta1;         /* in [0, 1) */
    double beta2;         /* in [0, 1) */
    double epsilon;       /* finite, >= 0 */
} tp_adam_options_t;

#define TP_ADAM_OPTIONS_INIT {sizeof(tp_adam_options_t), 0.001, 0.9, 0.999, 1e-7}

/* An optimizer for variables of `context`; NULL options: the defaults (..._OPTIONS_INIT). */
TP_API TP_MUST_USE tp_status_t *tp_optimizer_create_sgd(tp_context_t *context,
                                                       const tp_sgd_options_t *options,
                                                       tp_optimizer_t **out);
TP_API TP_MUST_USE tp_status_t *tp_optimizer_create_adam(tp_context_t *context,
                                                        const tp_adam_options_t *options,
                                                        tp_optimizer_t **out);
/* Frees it and its state variables. NULL is fine. */
TP_API void tp_optimizer_destroy(tp_optimizer_t *optimizer);
/* "SGD" or "Adam". */
TP_API const char *tp_optimizer_name(const tp_optimizer_t *optimizer);
TP_API double tp_optimizer_learning_rate(const tp_optimizer_t *optimizer);
/* For the updates that follow; finite and >= 0. */
TP_API TP_MUST_USE tp_status_t *tp_optimizer_set_learning_rate(tp_optimizer_t *optimizer,
                                                              double learning_rate);
/* The number of updates made: the value of "optimizer/iterations". */
TP_API TP_MUST_USE tp_status_t *tp_optimizer_iterations(tp_optimizer_t *optimizer,
                                                       int64_t *out_iterations);

/* Makes the slots of each variable that has none yet (zeros), as the first update would. */
TP_API TP_MUST_USE tp_status_t *tp_optimizer_build(tp_optimizer_t *optimizer,
                                                  tp_variable_t *const *variables,
                                                  size_t count);

/*
 * One step: updates each variables[i] by grads[i] (same dtype, float32 or float64, and shape)
 * and their slots, computed with ordinary ops on each variable's device (a gradient elsewhere
 * is copied there), and adds 1 to the step count. All or nothing: a NULL, a dtype or shape
 * that differs, a variable listed twice or of another context is refused naming the variable
 * before anything changes, and every new value is computed before any variable takes one. Not
 * recorded by gradient tapes; not inside a traced function. One call is one step: under a
 * mirrored strategy, pass every replica's variables to one call, or give each replica an
 * optimizer of its own.
 */
TP_API TP_MUST_USE tp_status_t *tp_optimizer_apply(tp_optimizer_t *optimizer,
                                                  tp_variable_t *const *variables,
                                                  tp_tensor_t *const *grads, size_t count);

/* The optimizer's state variables, the step count first and then each updated variable's slots
 * in the order the variables were first seen: up to `capacity` of them go to `out` (which may
 * be NULL for 0), owned by the optimizer. Returns how many there are. */
TP_API size_t tp_optimizer_variables(tp_optimizer_t *optimizer, tp_variable_t **out,
                                     size_t capacity);
/* The slot `slot` ("momentum", "m", "v") of `variable`, owned by the optimizer: NOT_FOUND when
 * the variable has none yet or the optimizer keeps no such slot. */
TP_API TP_MUST_USE tp_status_t *tp_optimizer_slot(tp_optimizer_t *optimizer,
                                                 const tp_variable_t *variable,
                                                 const char *slot, tp_variable_t **out);

/* ---- Mirrored strategy ------------------------------------------------------------------------
 *
 * Data parallelism over several devices of any types, as TensorFlow's MirroredStrategy: a
 * replica per device, each running the same step on its share of the batch on its own host
 * thread, the gradients all-reduced so that every replica applies the same update. */

typedef struct tp_mirrored_strategy tp_mirrored_strategy_t;
typedef struct tp_replica tp_replica_context_t; /* tagged apart from tp_replica_context() for C++ */

/* A strategy over `count` logical devices, named in any accepted form ("/cpu:1", "APU:0"); each
 * may appear once. It keeps the context alive. */
TP_API TP_MUST_USE tp_status_t *tp_mirrored_strategy_create(tp_context_t *context,
                                                           const char *const *devices,
                                                           size_t count,
                                                           tp_mirrored_strategy_t **out);
/* NULL is fine; not while a run is in progress. */
TP_API void tp_mirrored_strategy_destroy(tp_mirrored_strategy_t *strategy);
TP_API size_t tp_mirrored_strategy_num_replicas(const tp_mirrored_strategy_t *strategy);
/* The canonical name of replica `replica`'s device; NULL out of range. */
TP_API const char *tp_mirrored_strategy_device(const tp_mirrored_strategy_t *strategy,
                                               size_t replica);

/* Runs once per replica, on its own thread, with a device scope on the replica's device. */
typedef tp_status_t *(*tp_replica_fn_t)(tp_replica_context_t *replica, void *user_data);

/* Runs `fn` on every replica at once and waits for all. The first failure, by replica order, is
 * returned with the replica's device named; the other replicas still run to their end. One run
 * at a time per strategy. */
TP_API TP_MUST_USE tp_status_t *tp_mirrored_strategy_run(tp_mirrored_strategy_t *strategy,
                                                        tp_replica_fn_t fn, void *user_data);
TP_API size_t tp_replica_index(const tp_replica_context_t *replica);
TP_API tp_context_t *tp_replica_context(const tp_replica_context_t *replica);
TP_API const char *tp_replica_device(const tp_replica_context_t *replica);

typedef enum tp_reduce_op { TP_REDUCE_SUM = 0, TP_REDUCE_MEAN = 1 } tp_reduce_op_t;

/* A collective inside tp_mirrored_strategy_run: every replica passes its `count` tensors (of
 * the same dtypes and shapes on every replica) and receives in `out` their sum over replicas,
 * divided by the number of replicas for TP_REDUCE_MEAN, on its own device. Under a multi-worker
 * strategy, over the replicas of every worker, and of float32 and float64 only. Every replica
 * sums in replica order, so all receive the same values. A replica that returns without joining, or
 * tensors that differ, fail the call on every replica. */
TP_API TP_MUST_USE tp_status_t *tp_replica_all_reduce(tp_replica_context_t *replica,
                                                     tp_reduce_op_t op,
                                                     tp_tensor_t *const *values, size_t count,
                                                     tp_tensor_t **out);
/* The same from outside a run: per_replica[r] on any device; out[r] on replica r's device. */
TP_API TP_MUST_USE tp_status_t *tp_mirrored_strategy_all_reduce(tp_mirrored_strategy_t *strategy,
                                                                tp_reduce_op_t op,
                                                                tp_tensor_t *const *per_replica,
                                                                tp_tensor_t **out);

/* ---- Several workers: MultiWorkerMirroredStrategy --------------------------------------------
 *
 * Data parallelism over the processes of an MPI job (`mpirun -np N program`), as TensorFlow's
 * MultiWorkerMirroredStrategy: process K is worker K of N, its devices are named
 * /job:worker/replica:0/task:K/device:..., and each of its local devices holds a replica. A
 * replica function and tp_replica_all_reduce work as with a mirrored strategy of one process,
 * over every replica of every worker: the local replicas' tensors are summed on the host (in
 * replica order), then across workers through MPI in chunks (the next chunk is summed while
 * earlier ones travel), then copied to each local device. Every worker receives the same bits.
 * The MPI library (libtensorplug_mpi.so, Open MPI) is loaded by the first create and never by
 * a program that does not ask for it. Every worker must make the same collective calls in the
 * same order; a call that does not complete within the collective timeout fails with
 * DEADLINE_EXCEEDED naming the collective and the workers that did not join, after which the
 * worker can run no more collectives (restart the job from its last checkpoint). */

typedef struct tp_multi_worker_options {
    size_t struct_size;
    /* How long a collective may wait for the other workers; > 0. */
    double collective_timeout_seconds;
    /* Bytes per chunk of a cross-worker all-reduce; 0: 4 MiB. */
    size_t chunk_bytes;
} tp_multi_worker_options_t;

#define TP_MULTI_WORKER_OPTIONS_INIT {sizeof(tp_multi_worker_options_t), 300.0, 0}

/* A strategy over `count` local devices of this worker (as tp_mirrored_strategy_create; every
 * worker must pass the same count) and the workers of the job. Outside mpirun it is a job of
 * one worker and MPI is still loaded. A library that cannot be loaded, or MPI that cannot
 * start, is UNAVAILABLE naming why. Collective: every worker calls it. */
TP_API TP_MUST_USE tp_status_t *tp_multi_worker_mirrored_strategy_create(
    tp_context_t *context, const char *const *devices, size_t count,
    const tp_multi_worker_options_t *options, tp_mirrored_strategy_t **out);
/* The job's workers (1 for a strategy of one process) and this process's index among them. */
TP_API size_t tp_mirrored_strategy_num_workers(const tp_mirrored_strategy_t *strategy);
TP_API size_t tp_mirrored_strategy_worker_index(const tp_mirrored_strategy_t *strategy);
/* The replicas of every worker: num_workers * num_replicas. */
TP_API size_t tp_mirrored_strategy_num_global_replicas(const tp_mirrored_strategy_t *strategy);

/* Gives `count` variables the values worker 0's hold (a collective: every worker passes its
 * variables in the same order, of the same dtypes and shapes; INVALID_ARGUMENT otherwise), so
 * that training starts from identical weights. With one worker, nothing changes. */
TP_API TP_MUST_USE tp_status_t *tp_mirrored_strategy_broadcast_variables(
    tp_mirrored_strategy_t *strategy, tp_variable_t *const *variables, size_t count);

/* Input sharding: shard `shard` of `num_shards` takes items [*begin, *end) of `count`, the
 * shares differing by one item at most and lying in shard order; an empty range when `count`
 * is not positive or `shard` is out of range. Either output may be NULL. */
TP_API void tp_shard_range(int64_t count, size_t num_shards, size_t shard, int64_t *out_begin,
                           int64_t *out_end);
/* The rows [*begin, *end) of a global batch of `batch` rows that `replica` takes: its share
 * among all replicas of all workers (worker by worker, local replicas in order); an empty
 * range for a NULL replica. */
TP_API void tp_replica_batch_shard(const tp_replica_context_t *replica, int64_t batch,
                                   int64_t *out_begin, int64_t *out_end);

/* ---- A sequential model of Dense layers ------------------------------------------------------ */

typedef enum tp_activation {
    TP_ACTIVATION_LINEAR = 0,
    TP_ACTIVATION_RELU = 1,
    TP_ACTIVATION_SIGMOID = 2,
    TP_ACTIVATION_TANH = 3
} tp_activation_t;

/* How a Dense layer's kernel starts (its bias starts at zero), as Keras names them:
 * Glorot uniform, U(-l, l) with l = sqrt(6 / (inputs + units)); zeros; ones; N(0, 0.05^2). */
typedef enum tp_initializer {
    TP_INITIALIZER_GLOROT_UNIFORM = 0,
    TP_INITIALIZER_ZEROS = 1,
    TP_INITIALIZER_ONES = 2,
    TP_INITIALIZER_RANDOM_NORMAL = 3
} tp_initializer_t;

typedef struct tp_model tp_model_t;

/* A model taking float32 rows of `input_features` values. Its variables live on every device of
 * `strategy` (which must outlive the model), or, for NULL, on CPU:0. */
TP_API TP_MUST_USE tp_status_t *tp_model_create(tp_context_t *context, int64_t input_features,
                                               tp_mirrored_strategy_t *strategy,
                                               tp_model_t **out);
/* NULL is fine. */
TP_API void tp_model_destroy(tp_model_t *model);
/* Appends Dense(units, activation): y = activation(x @ kernel + bias), its kernel drawn by
 * `initializer` from `seed`. */
TP_API TP_MUST_USE tp_status_t *tp_model_add_dense(tp_model_t *model, int64_t units,
                                                  tp_activation_t activation,
                                                  tp_initializer_t initializer, int64_t seed);
TP_API size_t tp_model_num_layers(const tp_model_t *model);
/* Layer `layer`'s kernel (inputs x units) and bias (units), as replica 0 holds them: new
 * references. */
TP_API TP_MUST_USE tp_status_t *tp_model_get_weights(tp_model_t *model, size_t layer,
                                                    tp_tensor_t **out_kernel,
                                                    tp_tensor_t **out_bias);
/* The model's output for rows `x`, computed on replica 0's device. */
TP_API TP_MUST_USE tp_status_t *tp_model_predict(tp_model_t *model, tp_tensor_t *x,
                                                tp_tensor_t **out);

typedef struct tp_fit_options {
    size_t struct_size;
    int64_t epochs;       /* passes over the data; > 0 */
    int64_t batch_size;   /* rows per step, split among the replicas; > 0 */
    double learning_rate; /* of gradient descent on the mean squared error */
    /* One line per epoch: "Epoch 3/20: 8 steps, loss 0.012345, 51200 samples/s". NULL: none. */
    FILE *progress;
    /* NULL: gradient descent at learning_rate. Else the optimizer (of the model's context)
     * makes each step, once per step with every replica's variables, and learning_rate is
     * not used; its slots for the model's variables are its to list and checkpoint. Read only
     * when struct_size covers it. */
    tp_optimizer_t *optimizer;
} tp_fit_options_t;

#define TP_FIT_OPTIONS_INIT {sizeof(tp_fit_options_t), 1, 32, 0.01, NULL, NULL}

/* Trains on rows `x` (n x input_features) and targets `y` (n x units of the last layer), both
 * float32, in order, by gradient descent (or options->optimizer) on the mean squared error.
 * Each step's batch is split along its first dimension among the replicas, which run
 * concurrently; their gradients are all-reduced, weighted by their share of the batch, so the
 * update is the one a single device would make. `out_loss` (may be NULL) receives the last
 * epoch's mean loss. */
TP_API TP_MUST_USE tp_status_t *tp_model_fit(tp_model_t *model, tp_tensor_t *x, tp_tensor_t *y,
                                            const tp_fit_options_t *options, double *out_loss);

/* ---- Checkpoints: variables in a NumPy .npz file ---------------------------------------------
 *
 * A checkpoint is a zip archive of one .npy file per variable, NAME.npy, as numpy.savez writes
 * it: `numpy.load(path)[NAME]` is the variable's value. names[i] names variables[i]; for a NULL
 * `names`, each variable's own name (tp_variable_name) is used. */

/* Writes the current values of `count` (at least 1) variables, from any device, to `path`.
 * Names must be non-empty and unique. The archive replaces `path` atomically (libzip writes a
 * new file beside it and renames it), so a failed save leaves the old file, or none. Members
 * are stored uncompressed. Thread-safe. */
TP_API TP_MUST_USE tp_status_t *tp_checkpoint_save(const char *path,
                                                  tp_variable_t *const *variables,
                                                  const char *const *names, size_t count);
/* Restores `count` variables of `context` from the checkpoint at `path`, each from the member
 * of its name (a name may repeat: mirrored copies of one variable). Reads .npz files written by
 * tp_checkpoint_save, numpy.savez and numpy.savez_compressed; members no variable names are
 * ignored. All or nothing: a missing name (NOT_FOUND), a dtype or shape that differs from the
 * variable's, or a malformed archive or member (INVALID_ARGUMENT) is reported, naming the file
 * and the variable, before any variable changes. Thread-safe. */
TP_API TP_MUST_USE tp_status_t *tp_checkpoint_load(tp_context_t *context, const char *path,
                                                  tp_variable_t *const *variables,
                                                  const char *const *names, size_t count);

/* ---- Data: the UCI handwritten digits ---------------------------------------------------------
 *
 * 1,797 images of 8x8 pixels, as Debian's python3-sklearn ships them in
 * sklearn/datasets/data/digits.csv.gz: one image a line, its 64 pixels (whole numbers 0..16,
 * row by row) and then its label (0..9), comma-separated, gzip-compressed. Read through zlib
 * (datasets/). */

#define TP_DIGITS_ROWS 1797
#define TP_DIGITS_TRAIN_ROWS 1437 /* the first rows of the file */
#define TP_DIGITS_TEST_ROWS 360   /* the last */

/* Where the file is: the environment variable TP_DIGITS_PATH when it is set and not empty,
 * else the path python3-sklearn installs it to (CMake's TP_DIGITS_DEFAULT_PATH). */
TP_API const char *tp_digits_default_path(void);

/* Every image in the file at `path` (NULL: tp_digits_default_path()) as float32 images of
 * shape (n, 64), each pixel divided by 16 so that 0..16 becomes 0..1 (exactly), and int32
 * labels of shape (n), both new tensors on CPU:0. A file that is not the data set is refused,
 * with a message naming it and the line: a field that is not a whole number, a pixel outside
 * 0..16, a label outside 0..9, a line without exactly 65 fields or a file of no lines
 * (INVALID_ARGUMENT, as is a file that is not gzip); a gzip stream cut short or damaged
 * (DATA_LOSS); a file that cannot be read (NOT_FOUND, PERMISSION_DENIED, ... from the system's
 * reason). Lines may end in CRLF and the last needs no newline. Thread-safe. */
TP_API TP_MUST_USE tp_status_t *tp_digits_load(tp_context_t *context, const char *path,
                                              tp_tensor_t **out_images,
                                              tp_tensor_t **out_labels);

/* The data set split as the project fixes it: the file's first 1,437 images train, its last 360
 * test. */
typedef struct tp_digits {
    tp_tensor_t *train_images; /* float32 (1437, 64) */
    tp_tensor_t *train_labels; /* int32 (1437) */
    tp_tensor_t *test_images;  /* float32 (360, 64) */
    tp_tensor_t *test_labels;  /* int32 (360) */
} tp_digits_t;

/* tp_digits_load, split; a file of other than 1,797 images is refused (INVALID_ARGUMENT). On
 * failure *out is all NULL. */
TP_API TP_MUST_USE tp_status_t *tp_digits_load_split(tp_context_t *context, const char *path,
                                                    tp_digits_t *out);
/* Releases the four tensors and sets them to NULL. NULL is fine. */
TP_API void tp_digits_release(tp_digits_t *digits);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLUG_TRAINING_H */
