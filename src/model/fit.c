/* SPDX-License-Identifier: Apache-2.0 */
/* The training loop: batches in order, each split among the replicas, which compute their
 * gradients concurrently, all-reduce them and apply the same update. */
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include "base/status.h"
#include "model/model.h"
#include "tensor/tensor.h"

typedef struct {
    tp_model_t *model;
    const float *x, *y; /* every row, on the host */
    int64_t features, units;
    int64_t begin, count; /* the batch's rows */
    double learning_rate; /* folded into the loss; 1 when an optimizer steps */
    double *squared_error; /* by replica: its rows' summed squared error over units */
    tp_optimizer_t *optimizer; /* NULL: each replica subtracts its reduced gradients */
    /* With an optimizer: every replica's variables and reduced gradients, replica by replica,
     * for the one step the optimizer makes after the replicas return. */
    tp_variable_t **variables;
    tp_tensor_t **reduced;
    size_t num_variables; /* per replica */
} fit_step_t;

static void release_all(tp_tensor_t **tensors, size_t count) {
    for (size_t i = 0; i < count; i++) {
        tp_tensor_release(tensors[i]);
        tensors[i] = NULL;
    }
}

/* The replica's loss, weighted by its share of the batch, rows / batch, so that the sum over
 * replicas of the gradients is the gradient of the whole batch's mean loss, whatever the
 * shares (TensorFlow scales by the global batch the same way). The division by the replica
 * count of a mean all-reduce, and gradient descent's learning rate, are folded into this
 * weight: the summed gradients are the update itself, and each pass over every gradient that
 * a division and a scaling would take is saved. An optimizer takes the gradients themselves
 * (learning_rate 1). */
static tp_status_t *weighted_loss(tp_context_t *context, tp_tensor_t *loss, int64_t rows,
                                  int64_t batch, double learning_rate, tp_tensor_t **out) {
    tp_tensor_t *scale;
    TP_RETURN_IF_ERROR(tp_tensor_float_scalar(
        context, TP_FLOAT32, (double)rows / (double)batch * learning_rate, &scale));
    tp_status_t *error = tp_mul(context, loss, scale, out);
    tp_tensor_release(scale);
    return error;
}

/* The gradients of this replica's share of the batch, and its squared error. */
static tp_status_t *share_gradients(const fit_step_t *step, size_t replica, int64_t first,
                                    int64_t rows, tp_variable_t **variables,
                                    size_t num_variables, tp_tensor_t **grads) {
    tp_context_t *context = step->model->context;
    tp_tensor_t *x = NULL, *y = NULL, *prediction = NULL, *loss = NULL, *weighted = NULL;
    tp_tape_t *tape = NULL;
    /* Const, in the replica's scope: the share is copied once, straight to its device. */
    tp_status_t *error =
        tp_constant(context, TP_FLOAT32, TP_SHAPE(rows, step->features),
                    step->x + first * step->features,
                    (size_t)(rows * step->features) * sizeof(float), &x);
    if (error == NULL)
        error = tp_constant(context, TP_FLOAT32, TP_SHAPE(rows, step->units),
                            step->y + first * step->units,
                            (size_t)(rows * step->units) * sizeof(float), &y);
    if (error == NULL) error = tp_tape_begin(context, &tape);
    if (error == NULL) error = tp_model_forward(step->model, replica, x, &prediction);
    if (error == NULL) error = tp_mean_squared_error(context, y, prediction, &loss);
    if (error == NULL)
        error = weighted_loss(context, loss, rows, step->count, step->learning_rate, &weighted);
    if (error == NULL) error = tp_tape_stop(tape);
    if (error == NULL)
        error = tp_tape_gradient_variables(tape, weighted, variables, num_variables, grads);
    float mean = 0;
    if (error == NULL) error = tp_tensor_read(loss, &mean, sizeof mean);
    if (error == NULL)
        step->squared_error[replica] = (double)mean * (double)rows * (double)step->units;
    else
        release_all(grads, num_variables);
    tp_tape_destroy(tape);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_tensor_release(prediction);
    tp_tensor_release(loss);
    tp_tensor_release(weighted);
    return error;
}

/* A replica with no row this step still joins the all-reduce, with zeros. */
static tp_status_t *zero_gradients(tp_context_t *context, tp_variable_t **variables,
                                   size_t count, tp_tensor_t **grads) {
    for (size_t v = 0; v < count; v++) {
        tp_tensor_t *value;
        TP_RETURN_IF_ERROR(tp_variable_read(variables[v], &value));
        tp_status_t *error = tp_zeros_like(context, value, &grads[v]);
        tp_tensor_release(value);
        if (error != NULL) {
            release_all(grads, v);
            return error;
        }
    }
    return NULL;
}

static tp_status_t *replica_step(tp_replica_context_t *replica_context, void *arg) {
    const fit_step_t *step = arg;
    tp_model_t *model = step->model;
    size_t replica = tp_replica_index(replica_context), replicas = model->num_replicas;
    int64_t first = step->begin + step->count * (int64_t)replica / (int64_t)replicas;
    int64_t end = step->begin + step->count * (int64_t)(replica + 1) / (int64_t)replicas;
    size_t count = 2 * model->num_layers;
    tp_variable_t **variables = calloc(count, sizeof *variables);
    tp_tensor_t **grads = calloc(count, sizeof *grads);
    tp_tensor_t **reduced = calloc(count, sizeof *reduced);
    tp_status_t *error = variables == NULL || grads == NULL || reduced == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : NULL;
    step->squared_error[replica] = 0;
    if (error == NULL) {
        tp_model_replica_variables(model, replica, variables);
        error = end > first ? share_gradients(step, replica, first, end - first, variables,
                                              count, grads)
                            : zero_gradients(model->context, variables, count, grads);
    }
    if (error == NULL)
        error = tp_replica_all_reduce(replica_context, TP_REDUCE_SUM, grads, count, reduced);
    if (error == NULL && step->optimizer != NULL) {
        /* Handed over for the optimizer's one step over every replica. */
        for (size_t v = 0; v < count; v++) {
            step->variables[replica * count + v] = variables[v];
            step->reduced[replica * count + v] = reduced[v];
            reduced[v] = NULL;
        }
    }
    /* The reduced gradients already carry the learning rate: gradient descent is a
     * subtraction. */
    for (size_t v = 0; v < count && error == NULL && step->optimizer == NULL; v++)
        error = tp_variable_assign_sub(variables[v], reduced[v]);
    if (grads != NULL) release_all(grads, count);
    if (reduced != NULL) release_all(reduced, count);
    free(variables);
    free(grads);
    free(reduced);
    return error;
}

static tp_status_t *check_data(const tp_model_t *model, const tp_tensor_t *x,
                               const tp_tensor_t *y) {
    if (model->num_layers == 0)
        return tp_status_make(TP_FAILED_PRECONDITION, "the model has no layer yet");
    int64_t units = model->layers[model->num_layers - 1].units;
    char xs[128], ys[128];
    tp_shape_format(&x->shape, xs, sizeof xs);
    tp_shape_format(&y->shape, ys, sizeof ys);
    if (x->dtype != TP_FLOAT32 || x->shape.rank != 2 ||
        x->shape.dims[1] != model->input_features || x->shape.dims[0] == 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "x must be float32 of shape (rows, %lld) with rows > 0, not %s %s",
                              (long long)model->input_features, tp_dtype_name(x->dtype), xs);
    if (y->dtype != TP_FLOAT32 || y->shape.rank != 2 || y->shape.dims[0] != x->shape.dims[0] ||
        y->shape.dims[1] != units)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "y must be float32 of shape (%lld, %lld), one target row per row "
                              "of x, not %s %s",
                              (long long)x->shape.dims[0], (long long)units,
                              tp_dtype_name(y->dtype), ys);
    return NULL;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* The replicas' step, then the optimizer's over all of them, if there is one. */
static tp_status_t *run_step(fit_step_t *step) {
    tp_status_t *error = tp_mirrored_strategy_run(step->model->strategy, replica_step, step);
    if (step->optimizer == NULL) return error;
    size_t total = step->model->num_replicas * step->num_variables;
    if (error == NULL)
        error = tp_optimizer_apply(step->optimizer, step->variables, step->reduced, total);
    release_all(step->reduced, total);
    return error;
}

static tp_status_t *run_epochs(fit_step_t *step, const tp_fit_options_t *options, int64_t rows,
                               double *out_loss) {
    int64_t steps = (rows + options->batch_size - 1) / options->batch_size;
    double loss = 0;
    for (int64_t epoch = 1; epoch <= options->epochs; epoch++) {
        double start = seconds_now(), squared_error = 0;
        for (int64_t s = 0; s < steps; s++) {
            step->begin = s * options->batch_size;
            step->count = rows - step->begin < options->batch_size ? rows - step->begin
                                                                   : options->batch_size;
            TP_RETURN_IF_ERROR(tp_status_annotate(run_step(step), "epoch %lld, step %lld",
                                                  (long long)epoch, (long long)(s + 1)));
            for (size_t r = 0; r < step->model->num_replicas; r++)
                squared_error += step->squared_error[r];
        }
        double elapsed = seconds_now() - start;
        loss = squared_error / ((double)rows * (double)step->units);
        if (options->progress != NULL)
            fprintf(options->progress, "Epoch %lld/%lld: %lld steps, loss %.6f, %.0f samples/s\n",
                    (long long)epoch, (long long)options->epochs, (long long)steps, loss,
                    elapsed > 0 ? (double)rows / elapsed : 0.0);
    }
    *out_loss = loss;
    return NULL;
}

tp_status_t *tp_model_fit(tp_model_t *model, tp_tensor_t *x, tp_tensor_t *y,
                          const tp_fit_options_t *options, double *out_loss) {
    TP_REQUIRE_ARG(model);
    TP_REQUIRE_ARG(x);
    TP_REQUIRE_ARG(y);
    TP_REQUIRE_ARG(options);
    /* Options from before `optimizer` was appended are read as far as they go. */
    if (options->struct_size < offsetof(tp_fit_options_t, optimizer))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_model_fit: options->struct_size is %zu; start from "
                              "TP_FIT_OPTIONS_INIT",
                              options->struct_size);
    tp_optimizer_t *optimizer =
        options->struct_size >= offsetof(tp_fit_options_t, optimizer) + sizeof(tp_optimizer_t *)
            ? options->optimizer
            : NULL;
    if (options->epochs <= 0 || options->batch_size <= 0 ||
        !(optimizer != NULL || options->learning_rate > 0))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_model_fit: epochs (%lld), batch_size (%lld) and learning_rate "
                              "(%g) must be positive",
                              (long long)options->epochs, (long long)options->batch_size,
                              options->learning_rate);
    TP_RETURN_IF_ERROR(tp_status_annotate(check_data(model, x, y), "tp_model_fit"));
    int64_t rows = x->shape.dims[0];
    fit_step_t step = {.model = model,
                       .features = model->input_features,
                       .units = model->layers[model->num_layers - 1].units,
                       .learning_rate = optimizer != NULL ? 1.0 : options->learning_rate,
                       .optimizer = optimizer,
                       .num_variables = 2 * model->num_layers};
    float *x_host = malloc(x->byte_size), *y_host = malloc(y->byte_size);
    step.squared_error = calloc(model->num_replicas, sizeof *step.squared_error);
    bool lists = optimizer == NULL ||
                 ((step.variables = calloc(model->num_replicas * step.num_variables,
                                           sizeof *step.variables)) != NULL &&
                  (step.reduced = calloc(model->num_replicas * step.num_variables,
                                         sizeof *step.reduced)) != NULL);
    tp_status_t *error = x_host == NULL || y_host == NULL || step.squared_error == NULL || !lists
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : NULL;
    /* The data is read to the host once; each replica's share is made from it. */
    if (error == NULL) error = tp_tensor_read(x, x_host, x->byte_size);
    if (error == NULL) error = tp_tensor_read(y, y_host, y->byte_size);
    step.x = x_host;
    step.y = y_host;
    double loss = 0;
    if (error == NULL) error = run_epochs(&step, options, rows, &loss);
    if (error == NULL && out_loss != NULL) *out_loss = loss;
    free(x_host);
    free(y_host);
    free(step.squared_error);
    free(step.variables);
    free(step.reduced);
    return tp_status_annotate(error, "tp_model_fit");
}
