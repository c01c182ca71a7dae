/* SPDX-License-Identifier: Apache-2.0 */
/* What the two digits examples (digits_mlp.c, digits_cnn.c) share: a training driver that runs a
 * model given as a digits_model_t (its options, the epoch loop over a MirroredStrategy, the
 * accuracies), the layers both models use, the host's seeded shuffling, and the choice of the
 * train/test split of the 1,797 images. */
#ifndef TENSORPLUG_EXAMPLES_DIGITS_COMMON_H
#define TENSORPLUG_EXAMPLES_DIGITS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorplug/training.h>

/* ---- The model a digits example describes ---------------------------------------------------- */

enum { DIGITS_MAX_PARAMS = 8 }; /* the most weights (kernels, biases) a model may have */

/* A model maps images [n, 64] (float32 pixels in [0, 1]) to logits [n, 10]. Its weights are
 * `num_params` variables, named `param_names`; `initial_values` draws their starting values,
 * in that order, with the device in scope (the driver puts the CPU there); `forward` reads
 * them (`params[0..num_params)`) on the device in scope, under the driver's gradient tape
 * while it trains. */
typedef struct digits_model {
    const char *program; /* names the program in its messages: "digits_mlp" */
    int num_params;      /* at most DIGITS_MAX_PARAMS */
    const char *const *param_names;
    tp_status_t *(*initial_values)(tp_context_t *c, int64_t seed, tp_tensor_t **initial);
    tp_status_t *(*forward)(tp_context_t *c, tp_variable_t *const *params, tp_tensor_t *images,
                            tp_tensor_t **logits);
    double learning_rate; /* Adam's */
    long default_epochs;  /* when --epochs is not given */
} digits_model_t;

/* Trains `model` with Adam on the softmax cross-entropy, in batches of 32, as the command line
 * `argv` asks, and returns main's exit status. Each step runs through a MirroredStrategy, of
 * one replica unless --strategy asks for more, so that the same code trains on one device or
 * several. Any failure is fatal: it prints why and exits (1, or 2 for a bad option).
 *
 * Options:
 *   --epochs N      passes over the 1,437 training images (default: the model's)
 *   --seed S        seeds the initial weights and each epoch's shuffling (default 1)
 *   --device NAME   where to train: "CPU:0" (the default), "APU:0", "GPU:0", ... An op the
 *                   device has no kernel for runs on the CPU instead (soft placement), and
 *                   that is logged once per op.
 *   --strategy N    data parallelism over N logical devices split from device 0 of that
 *                   type: each replica takes its share of every batch and the replicas'
 *                   gradients are all-reduced, so that every copy of the weights takes the
 *                   same update.
 *   --log-placement log the device of every op of the first step (standard error).
 *   --split KIND    which images train and which test: "fixed" (the default) takes the
 *                   file's first 1,437 and last 360 (tp_digits_load_split); "shuffled"
 *                   permutes the 1,797 images first (Fisher-Yates), then cuts them the same way.
 *   --split-seed N  seeds the shuffled split's permutation (default 0), apart from --seed.
 *   --multi-worker  under `mpirun -np N`: a MultiWorkerMirroredStrategy over the N workers
 *                   (each with --strategy's replicas), each replica taking its rows of every
 *                   global batch of 32; worker 0 alone prints the epochs.
 *   --checkpoint PATH, --checkpoint-every N (default 100)
 *                   worker 0 saves the weights and Adam's state to PATH every N steps; a run
 *                   that finds PATH resumes from it ("Resuming from checkpoint PATH at step S").
 *   --save-weights PREFIX  each worker saves its final weights to PREFIX-workerK.npz.
 *   --kill-at-step N  the last worker kills itself (SIGKILL) before step N: a fault for tests.
 *
 * It prints the replicas' devices, one line per epoch (the mean training loss, the accuracy on
 * the training and on the test images, the time and images per second of the epoch's
 * training) and finally the test accuracy, each line naming the split. */
int digits_run(int argc, char **argv, const digits_model_t *model);

/* ---- Layers for the models ------------------------------------------------------------------- */

/* A model's functions return a status: they jump to their clean-up at the first failure and
 * hand the status back (they declare `tp_status_t *error = NULL;` and a `done:` label). */
#define TRY(expr)                                                                               \
    do {                                                                                        \
        if ((error = (expr)) != NULL) goto done;                                                \
    } while (0)

/* A float32 scalar, for the constants of a model's arithmetic. */
tp_status_t *digits_scalar(tp_context_t *c, float value, tp_tensor_t **out);

/* A float32 vector of n zeros: biases start at zero. */
tp_status_t *digits_zeros(tp_context_t *c, int64_t n, tp_tensor_t **out);

/* Glorot's uniform initialisation (Keras' default for Dense kernels) of an [inputs, units]
 * kernel. */
tp_status_t *digits_glorot_uniform(tp_context_t *c, int64_t inputs, int64_t units, int64_t seed,
                                   tp_tensor_t **out);

/* A dense layer: x @ kernel + bias, followed by ReLU when `relu`. */
tp_status_t *digits_dense(tp_context_t *c, tp_tensor_t *x, tp_variable_t *kernel,
                          tp_variable_t *bias, bool relu, tp_tensor_t **out);

/* ---- The data -------------------------------------------------------------------------------- */

/* The fixed split is the project's (tp_digits_load_split: the file's first 1,437 images train,
 * its last 360 test, and those 360 are other people's handwriting). The shuffled split permutes
 * the same 1,797 images first, so that train and test come from the same writers. */
typedef enum digits_split_kind { DIGITS_SPLIT_FIXED, DIGITS_SPLIT_SHUFFLED } digits_split_kind_t;

typedef struct digits_split {
    digits_split_kind_t kind;
    int64_t seed; /* the shuffled split's permutation; unused by the fixed split */
} digits_split_t;

/* "fixed" or "shuffled" (--split's value); anything else makes `program` print why and exit
 * with status 2, as the examples' other bad options do. */
digits_split_kind_t digits_split_kind_parse(const char *program, const char *text);

/* How the progress lines name the split: "fixed split", "shuffled split, seed 3". */
void digits_split_describe(digits_split_t split, char *out, size_t size);

/* A Fisher-Yates shuffle of order[0..n), a different permutation for every (seed, stream). */
void digits_shuffle(int32_t *order, int64_t n, int64_t seed, int64_t stream);

/* The data set, split as `split` says, the four tensors on CPU:0 (tp_digits_load_split's
 * shapes). On failure *out is all NULL. */
tp_status_t *digits_load(tp_context_t *c, digits_split_t split, tp_digits_t *out);

/* ---- Checkpoints and resuming (digits_resume.c) --------------------------------------------- */

/* Saves the training state (every replica's weights and the optimizer's state; copies that
 * share a name are saved once) to `path`, atomically. */
tp_status_t *digits_checkpoint_save(const char *path, tp_variable_t *const *state, size_t count);

/* The start of training, a collective of every worker: worker 0 restores the state from the
 * checkpoint at `path` when there is one (*out_restored), then every worker takes worker 0's
 * state, so that all start identical. */
tp_status_t *digits_state_start(tp_context_t *c, tp_mirrored_strategy_t *strategy,
                                const char *path, tp_variable_t *const *state, size_t count,
                                bool *out_restored);

#endif /* TENSORPLUG_EXAMPLES_DIGITS_COMMON_H */
