/* SPDX-License-Identifier: Apache-2.0 */
/*
 * _tensorplug.KerasProgram: the hot path of tp.keras. A functional model whose layers form a
 * chain (Input -> Dense/Conv2D/MaxPooling2D/Flatten/... -> output) is handed over once, at
 * compile time, as a list of layer descriptions and its variables (one list per replica); each
 * training step is then one C call that splits the batch among the replicas, runs forward pass,
 * loss and gradient tape on each replica's thread, all-reduces the gradients and makes one
 * tp_optimizer_apply of the model's optimizer (the tp.keras.optimizers object's, so the step
 * counts once and its state is the one model.optimizer shows) over every replica's copies, all
 * with the GIL released. Python keeps the structure (layers, shapes, progress bar); no op of a
 * step goes through the interpreter.
 */
#include "tpy.h"

#include <stdlib.h>

#include "strategy.h"

typedef enum { LAYER_DENSE, LAYER_CONV2D, LAYER_MAXPOOL, LAYER_FLATTEN, LAYER_RESHAPE,
               LAYER_ACTIVATION } layer_kind_t;
typedef enum { ACT_LINEAR, ACT_RELU, ACT_SIGMOID, ACT_TANH, ACT_SOFTMAX } activation_t;
typedef enum { LOSS_NONE, LOSS_MSE, LOSS_SPARSE_CE_LOGITS, LOSS_SPARSE_CE_PROBS } loss_t;

typedef struct layer {
    layer_kind_t kind;
    activation_t activation;
    Py_ssize_t kernel, bias; /* indices into a replica's variables; -1: none */
    tp_conv2d_options_t conv;
    tp_pool_options_t pool;
    tp_shape_t shape; /* LAYER_RESHAPE: the dimensions after the batch's */
} layer_t;

typedef struct program_object {
    PyObject_HEAD
    layer_t *layers;
    size_t num_layers;
    size_t num_replicas, num_vars;
    tp_variable_t **vars;  /* [replica * num_vars + i], owned by the objects in var_objects */
    /* The trainable ones among them, as compile() found the layers: [replica * num_train + k] */
    tp_variable_t **train_vars;
    size_t num_train;
    PyObject *var_objects; /* a tuple of tuples of tp.Variable */
    PyObject *all_vars;    /* a list: every replica's variables, replica after replica */
    PyObject *strategy_object;
    tp_mirrored_strategy_t *strategy; /* NULL: one replica, on the calling thread */
    /* The strategy's workers (0 or 1: this process alone), this one's index among them and
     * the replicas of them all, among which a batch is split when there are several. */
    size_t num_workers, worker_index, num_global;
    PyObject *optimizer_object;  /* the tp.keras.optimizers object, which owns: */
    tp_optimizer_t *optimizer;
    loss_t loss;
    bool accuracy;
} program_object;

static const char *const activation_names[] = {"linear", "relu", "sigmoid", "tanh", "softmax"};

static int activation_from(PyObject *object, activation_t *out) {
    if (object == Py_None) {
        *out = ACT_LINEAR;
        return 0;
    }
    const char *name = PyUnicode_Check(object) ? PyUnicode_AsUTF8(object) : NULL;
    for (size_t i = 0; name != NULL && i < sizeof activation_names / sizeof *activation_names;
         i++) {
        if (strcmp(name, activation_names[i]) == 0) {
            *out = (activation_t)i;
            return 0;
        }
    }
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "unknown activation %R (linear, relu, sigmoid, tanh, softmax)",
                 object);
    return -1;
}

static int padding_from(const char *name, tp_padding_t *out) {
    if (strcmp(name, "valid") == 0 || strcmp(name, "VALID") == 0) *out = TP_PADDING_VALID;
    else if (strcmp(name, "same") == 0 || strcmp(name, "SAME") == 0) *out = TP_PADDING_SAME;
    else {
        PyErr_Format(PyExc_ValueError, "padding must be 'valid' or 'same', not '%s'", name);
        return -1;
    }
    return 0;
}

/* One layer description, a tuple: ("dense", kernel, bias, activation), ("conv2d", kernel, bias,
 * activation, (sh, sw), padding), ("maxpool", (ph, pw), (sh, sw), padding), ("flatten",),
 * ("reshape", dims), ("activation", activation); kernel and bias index a replica's variables
 * (bias -1: none). */
static int layer_from(PyObject *tuple, size_t num_vars, layer_t *layer) {
    memset(layer, 0, sizeof *layer);
    layer->kernel = layer->bias = -1;
    const char *kind;
    PyObject *activation = Py_None;
    const char *padding = "valid";
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) < 1) {
        PyErr_SetString(PyExc_TypeError, "a layer description is a tuple");
        return -1;
    }
    PyObject *rest = PyTuple_GetSlice(tuple, 1, PyTuple_GET_SIZE(tuple));
    if (rest == NULL) return -1;
    PyObject *kind_object = PyTuple_GET_ITEM(tuple, 0);
    kind = PyUnicode_Check(kind_object) ? PyUnicode_AsUTF8(kind_object) : "";
    if (kind == NULL) {
        Py_DECREF(rest);
        return -1;
    }
    int ok = 1;
    if (strcmp(kind, "dense") == 0) {
        layer->kind = LAYER_DENSE;
        ok = PyArg_ParseTuple(rest, "nnO:dense", &layer->kernel, &layer->bias, &activation);
    } else if (strcmp(kind, "conv2d") == 0) {
        layer->kind = LAYER_CONV2D;
        ok = PyArg_ParseTuple(rest, "nnO(ii)s:conv2d", &layer->kernel, &layer->bias, &activation,
                              &layer->conv.stride_height, &layer->conv.stride_width, &padding) &&
             padding_from(padding, &layer->conv.padding) == 0;
    } else if (strcmp(kind, "maxpool") == 0) {
        layer->kind = LAYER_MAXPOOL;
        ok = PyArg_ParseTuple(rest, "(ii)(ii)s:maxpool", &layer->pool.window_height,
                              &layer->pool.window_width, &layer->pool.stride_height,
                              &layer->pool.stride_width, &padding) &&
             padding_from(padding, &layer->pool.padding) == 0;
    } else if (strcmp(kind, "flatten") == 0) {
        layer->kind = LAYER_FLATTEN;
    } else if (strcmp(kind, "reshape") == 0) {
        layer->kind = LAYER_RESHAPE;
        PyObject *dims;
        ok = PyArg_ParseTuple(rest, "O!:reshape", &PyTuple_Type, &dims);
        if (ok && PyTuple_GET_SIZE(dims) >= TP_MAX_RANK) {
            PyErr_SetString(PyExc_ValueError, "reshape: too many dimensions");
            ok = 0;
        }
        for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(dims); i++) {
            layer->shape.dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, i));
            ok = !(layer->shape.dims[i] == -1 && PyErr_Occurred());
        }
        if (ok) layer->shape.rank = (int32_t)PyTuple_GET_SIZE(dims);
    } else if (strcmp(kind, "activation") == 0) {
        layer->kind = LAYER_ACTIVATION;
        ok = PyArg_ParseTuple(rest, "O:activation", &activation);
    } else {
        PyErr_Format(PyExc_ValueError, "unknown layer kind '%s'", kind);
        ok = 0;
    }
    Py_DECREF(rest);
    if (!ok || activation_from(activation, &layer->activation) < 0) return -1;
    if (layer->kernel >= (Py_ssize_t)num_vars || layer->bias >= (Py_ssize_t)num_vars ||
        layer->kernel < -1 || layer->bias < -1 ||
        ((layer->kind == LAYER_DENSE || layer->kind == LAYER_CONV2D) && layer->kernel < 0)) {
        PyErr_SetString(PyExc_ValueError, "a layer's variable index is out of range");
        return -1;
    }
    return 0;
}

/* KerasProgram(layers, variables, strategy=None): variables is a list per replica of the
 * tp.Variable objects the layers index; one list without a strategy. */
static int program_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    program_object *program = (program_object *)self;
    static char *keywords[] = {"layers", "variables", "strategy", NULL};
    PyObject *layers, *variables, *strategy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!|O:KerasProgram", keywords,
                                     &PyList_Type, &layers, &PyList_Type, &variables, &strategy))
        return -1;
    if (program->layers != NULL || program->var_objects != NULL || program->all_vars != NULL ||
        program->strategy_object != NULL) {
        PyErr_SetString(PyExc_TypeError, "a KerasProgram is initialized once");
        return -1;
    }
    size_t replicas = 1;
    if (strategy != Py_None) {
        program->strategy = tpy_strategy_handle(strategy);
        if (program->strategy == NULL) return -1;
        replicas = tp_mirrored_strategy_num_replicas(program->strategy);
        program->num_workers = tp_mirrored_strategy_num_workers(program->strategy);
        program->worker_index = tp_mirrored_strategy_worker_index(program->strategy);
        program->num_global = tp_mirrored_strategy_num_global_replicas(program->strategy);
        program->strategy_object = Py_NewRef(strategy);
    }
    if (PyList_GET_SIZE(variables) != (Py_ssize_t)replicas) {
        PyErr_Format(PyExc_ValueError, "variables: %zu replica lists needed, not %zd", replicas,
                     PyList_GET_SIZE(variables));
        return -1;
    }
    program->num_replicas = replicas;
    program->var_objects = PyTuple_New((Py_ssize_t)replicas);
    if (program->var_objects == NULL) return -1;
    for (size_t r = 0; r < replicas; r++) {
        PyObject *tuple = PySequence_Tuple(PyList_GET_ITEM(variables, (Py_ssize_t)r));
        if (tuple == NULL) return -1;
        PyTuple_SET_ITEM(program->var_objects, (Py_ssize_t)r, tuple);
        if (r == 0) program->num_vars = (size_t)PyTuple_GET_SIZE(tuple);
        if ((size_t)PyTuple_GET_SIZE(tuple) != program->num_vars) {
            PyErr_SetString(PyExc_ValueError, "every replica needs as many variables");
            return -1;
        }
    }
    program->all_vars = PyList_New(0);
    if (program->all_vars == NULL) return -1;
    for (size_t r = 0; r < replicas; r++) {
        PyObject *tuple = PyTuple_GET_ITEM(program->var_objects, (Py_ssize_t)r);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++)
            if (PyList_Append(program->all_vars, PyTuple_GET_ITEM(tuple, i)) < 0) return -1;
    }
    program->vars = PyMem_Calloc(replicas * program->num_vars + 1, sizeof *program->vars);
    if (program->vars == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t r = 0; r < replicas; r++) {
        PyObject *tuple = PyTuple_GET_ITEM(program->var_objects, (Py_ssize_t)r);
        for (size_t i = 0; i < program->num_vars; i++) {
            tp_variable_t *handle = tpy_variable_handle(PyTuple_GET_ITEM(tuple, (Py_ssize_t)i));
            if (handle == NULL) return -1;
            program->vars[r * program->num_vars + i] = handle;
        }
    }
    size_t count = (size_t)PyList_GET_SIZE(layers);
    program->layers = PyMem_Calloc(count + 1, sizeof *program->layers);
    if (program->layers == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        if (layer_from(PyList_GET_ITEM(layers, (Py_ssize_t)i), program->num_vars,
                       &program->layers[i]) < 0)
            return -1;
    }
    program->num_layers = count;
    return 0;
}

static void program_dealloc(PyObject *self) {
    program_object *program = (program_object *)self;
    Py_XDECREF(program->optimizer_object);
    Py_XDECREF(program->all_vars);
    PyMem_Free(program->vars);
    PyMem_Free(program->train_vars);
    PyMem_Free(program->layers);
    Py_XDECREF(program->var_objects);
    Py_XDECREF(program->strategy_object);
    Py_TYPE(self)->tp_free(self);
}

/* ---- The forward pass -------------------------------------------------------------------- */

#define TRY(expr)                                                                              \
    do {                                                                                       \
        if ((error = (expr)) != NULL) goto done;                                               \
    } while (0)

static tp_status_t *activate(tp_context_t *c, activation_t activation, tp_tensor_t *x,
                             tp_tensor_t **out) {
    switch (activation) {
    case ACT_RELU: return tp_relu(c, x, out);
    case ACT_SIGMOID: return tp_sigmoid(c, x, out);
    case ACT_TANH: return tp_tanh(c, x, out);
    case ACT_SOFTMAX: return tp_softmax(c, x, out);
    case ACT_LINEAR: break;
    }
    *out = tp_tensor_retain(x);
    return NULL;
}

/* kernel op, bias and activation: Dense and Conv2D. */
static tp_status_t *weighted(tp_context_t *c, const layer_t *layer, tp_tensor_t *const *weights,
                             tp_tensor_t *x, activation_t activation, tp_tensor_t **out) {
    tp_status_t *error = NULL;
    tp_tensor_t *z = NULL, *biased = NULL;
    if (layer->kind == LAYER_DENSE) TRY(tp_matmul(c, x, weights[layer->kernel], false, false, &z));
    else TRY(tp_conv2d(c, x, weights[layer->kernel], &layer->conv, &z));
    if (layer->bias >= 0) TRY(tp_bias_add(c, z, weights[layer->bias], &biased));
    else biased = tp_tensor_retain(z);
    TRY(activate(c, activation, biased, out));
done:
    tp_tensor_release(z);
    tp_tensor_release(biased);
    return error;
}

/* The model's output for `x` from one replica's weights (the values its variables gave when
 * read: a tape recording then watches them); with `logits`, a final softmax is left out, so
 * that the cross-entropy takes the logits, as Keras itself does. */
static tp_status_t *forward(const program_object *program, tp_context_t *c,
                            tp_tensor_t *const *weights, tp_tensor_t *x, bool logits,
                            tp_tensor_t **out) {
    tp_status_t *error = NULL;
    tp_tensor_t *current = tp_tensor_retain(x), *next = NULL;
    for (size_t i = 0; i < program->num_layers; i++) {
        const layer_t *layer = &program->layers[i];
        activation_t activation = layer->activation;
        if (logits && i + 1 == program->num_layers && activation == ACT_SOFTMAX)
            activation = ACT_LINEAR;
        tp_shape_t shape = tp_tensor_shape(current);
        switch (layer->kind) {
        case LAYER_DENSE:
        case LAYER_CONV2D: TRY(weighted(c, layer, weights, current, activation, &next)); break;
        case LAYER_MAXPOOL: TRY(tp_max_pool(c, current, &layer->pool, &next)); break;
        case LAYER_FLATTEN: {
            int64_t rest = 1;
            for (int32_t d = 1; d < shape.rank; d++) rest *= shape.dims[d];
            TRY(tp_reshape(c, current, TP_SHAPE(shape.rank > 0 ? shape.dims[0] : 1, rest), &next));
            break;
        }
        case LAYER_RESHAPE: {
            tp_shape_t target = {layer->shape.rank + 1, {shape.rank > 0 ? shape.dims[0] : 1}};
            for (int32_t d = 0; d < layer->shape.rank; d++)
                target.dims[d + 1] = layer->shape.dims[d];
            TRY(tp_reshape(c, current, target, &next));
            break;
        }
        case LAYER_ACTIVATION: TRY(activate(c, activation, current, &next)); break;
        }
        tp_tensor_release(current);
        current = next;
        next = NULL;
    }
    *out = current;
    current = NULL;
done:
    tp_tensor_release(current);
    return error;
}

/* ---- Losses and accuracy ------------------------------------------------------------------- */

static tp_status_t *compute_loss(tp_context_t *c, loss_t loss, tp_tensor_t *y, tp_tensor_t *out,
                                 tp_tensor_t **value) {
    if (loss == LOSS_MSE) return tp_mean_squared_error(c, y, out, value);
    return tp_sparse_softmax_cross_entropy(c, y, out, value);
}

/* How many rows of `out` the labels `y` call right, read on the host: the arg max against a
 * class index (sparse labels), against the arg max of a one-hot row, or out > 0.5 against a
 * 0/1 target for one output (Keras' binary accuracy). */
static tp_status_t *count_correct(tp_tensor_t *out, tp_tensor_t *y, int64_t *correct) {
    tp_status_t *error = NULL;
    tp_shape_t shape = tp_tensor_shape(out);
    int64_t rows = shape.rank > 0 ? shape.dims[0] : 1;
    int64_t classes = rows > 0 ? tp_tensor_num_elements(out) / rows : 0;
    float *values = malloc(tp_tensor_byte_size(out) + 1);
    void *labels = malloc(tp_tensor_byte_size(y) + 1);
    *correct = 0;
    if (values == NULL || labels == NULL) goto done; /* no figure rather than a failed step */
    TRY(tp_tensor_read(out, values, tp_tensor_byte_size(out)));
    TRY(tp_tensor_read(y, labels, tp_tensor_byte_size(y)));
    tp_dtype_t dtype = tp_tensor_dtype(y);
    int64_t per_row = rows > 0 ? tp_tensor_num_elements(y) / rows : 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *row = values + r * classes;
        int64_t best = 0;
        for (int64_t k = 1; k < classes; k++)
            if (row[k] > row[best]) best = k;
        double label;
        if (dtype == TP_INT32) label = ((const int32_t *)labels)[r];
        else if (dtype == TP_INT64) label = (double)((const int64_t *)labels)[r];
        else if (per_row > 1) {
            const float *target = (const float *)labels + r * per_row;
            int64_t hot = 0;
            for (int64_t k = 1; k < per_row; k++)
                if (target[k] > target[hot]) hot = k;
            label = (double)hot;
        } else {
            label = ((const float *)labels)[r];
        }
        if (classes == 1 && dtype == TP_FLOAT32) *correct += (row[0] > 0.5f) == (label > 0.5);
        else *correct += (double)best == label;
    }
done:
    free(values);
    free(labels);
    return error;
}

/* ---- A training step ----------------------------------------------------------------------- */

typedef struct step {
    const program_object *program;
    tp_tensor_t *x, *y;
    int64_t rows;
    bool train;
    tp_tensor_t **parts;   /* [2 * replica]: its rows of x, [2 * replica + 1]: of y */
    tp_tensor_t **grads;   /* [replica * num_train + k] */
    double *losses;        /* per replica: its mean loss */
    int64_t *rows_of;      /* per replica: its share of the batch */
    int64_t *correct;      /* per replica */
    /* Under several workers, the step's mean loss and rows called right over every worker's
     * rows, which replica 0 sums across workers. */
    double global_loss, global_correct;
} step_t;

/* Rows [first, first + count) of x, on the device in scope. */
static tp_status_t *rows_of(tp_context_t *c, tp_tensor_t *x, int64_t first, int64_t count,
                            tp_tensor_t **out) {
    tp_shape_t shape = tp_tensor_shape(x);
    int64_t begin[TP_MAX_RANK] = {first}, size[TP_MAX_RANK];
    for (int32_t d = 0; d < shape.rank; d++) size[d] = d == 0 ? count : -1;
    return tp_slice(c, x, begin, size, (size_t)shape.rank, out);
}

static tp_status_t *scale_all(tp_context_t *c, tp_tensor_t **grads, size_t count, float factor) {
    tp_status_t *error = NULL;
    tp_tensor_t *scalar = NULL;
    TRY(tp_constant(c, TP_FLOAT32, TP_SCALAR_SHAPE, &factor, sizeof factor, &scalar));
    for (size_t i = 0; i < count; i++) {
        tp_tensor_t *scaled;
        TRY(tp_mul(c, grads[i], scalar, &scaled));
        tp_tensor_release(grads[i]);
        grads[i] = scaled;
    }
done:
    tp_tensor_release(scalar);
    return error;
}

/* Replica r's rows [*begin, *end) of a batch of `rows`: under several workers, its share among
 * the replicas of every worker (tp_shard_range, as tp_replica_batch_shard gives it), so that
 * each worker takes its own slice; else the first rows % replicas shares are a row longer. */
static void replica_rows(const program_object *program, int64_t rows, size_t r, int64_t *begin,
                         int64_t *end) {
    if (program->num_workers > 1) {
        tp_shard_range(rows, program->num_global,
                       program->worker_index * program->num_replicas + r, begin, end);
        return;
    }
    int64_t replicas = (int64_t)program->num_replicas, index = (int64_t)r;
    int64_t base = rows / replicas, extra = rows % replicas;
    *begin = index * base + (index < extra ? index : extra);
    *end = *begin + base + (index < extra ? 1 : 0);
}

/* Cuts the batch into the replicas' shares on the calling thread, before the replicas start:
 * the rows stay where the batch is (the host), and each replica's first op copies its share to
 * its device, as TensorFlow's distributed input does. */
static tp_status_t *split_batch(tp_context_t *c, step_t *step) {
    tp_status_t *error = NULL;
    const program_object *program = step->program;
    for (size_t r = 0; r < program->num_replicas; r++) {
        int64_t begin, end;
        replica_rows(program, step->rows, r, &begin, &end);
        step->rows_of[r] = end - begin;
        if (end == begin) continue;
        if (end - begin == step->rows) {
            step->parts[2 * r] = tp_tensor_retain(step->x);
            step->parts[2 * r + 1] = tp_tensor_retain(step->y);
        } else {
            TRY(rows_of(c, step->x, begin, end - begin, &step->parts[2 * r]));
            TRY(rows_of(c, step->y, begin, end - begin, &step->parts[2 * r + 1]));
        }
    }
done:
    return error;
}

/* Under several workers: replica r's summed loss and rows called right, added up over every
 * replica of every worker (float64: the counts stay exact), for replica 0 to keep. */
static tp_status_t *sum_metrics(step_t *step, size_t r, tp_context_t *c,
                                tp_replica_context_t *replica) {
    tp_status_t *error = NULL;
    tp_tensor_t *mine = NULL, *total = NULL;
    double values[2] = {step->rows_of[r] > 0 ? step->losses[r] * (double)step->rows_of[r] : 0.0,
                        (double)step->correct[r]};
    TRY(tp_constant(c, TP_FLOAT64, TP_SHAPE(2), values, sizeof values, &mine));
    TRY(tp_replica_all_reduce(replica, TP_REDUCE_SUM, &mine, 1, &total));
    TRY(tp_tensor_read(total, values, sizeof values));
    if (r == 0) {
        step->global_loss = values[0] / (double)step->rows;
        step->global_correct = values[1];
    }
done:
    tp_tensor_release(mine);
    tp_tensor_release(total);
    return error;
}

/* Replica r's part of a step: its rows, the forward pass and loss (under a tape when training),
 * the gradients weighted by its share of the batch and, with several replicas, all-reduced. */
static tp_status_t *replica_step(step_t *step, size_t r, tp_context_t *c,
                                 tp_replica_context_t *replica) {
    const program_object *program = step->program;
    const size_t nv = program->num_vars, nt = program->num_train;
    /* The replicas whose gradients the all-reduce averages: those of every worker. */
    const size_t replicas =
        program->num_workers > 1 ? program->num_global : program->num_replicas;
    const int64_t share = step->rows_of[r];
    tp_variable_t *const *vars = program->vars + r * nv;
    tp_variable_t *const *trained = step->train ? program->train_vars + r * nt : NULL;
    tp_tensor_t **grads = step->train ? step->grads + r * nt : NULL;
    tp_status_t *error = NULL;
    tp_tensor_t *x = step->parts[2 * r], *y = step->parts[2 * r + 1], *out = NULL, *loss = NULL;
    tp_tape_t *tape = NULL;
    tp_tensor_t **weights = calloc(nv + 1, sizeof *weights);
    if (weights == NULL) goto done;
    if (share > 0) {
        if (step->train) TRY(tp_tape_begin_with(c, NULL, &tape));
        for (size_t i = 0; i < nv; i++) TRY(tp_variable_read(vars[i], &weights[i]));
        TRY(forward(program, c, weights, x, program->loss != LOSS_MSE, &out));
        TRY(compute_loss(c, program->loss, y, out, &loss));
        if (step->train && nt > 0) {
            TRY(tp_tape_stop(tape));
            TRY(tp_tape_gradient_variables(tape, loss, trained, nt, grads));
            /* MEAN over replicas of share * replicas / rows * g_r is the gradient of the whole
             * batch's mean loss, however unevenly it was split. */
            if (replicas > 1 && share * (int64_t)replicas != step->rows)
                TRY(scale_all(c, grads, nt,
                              (float)((double)share * (double)replicas / (double)step->rows)));
        }
        float value;
        TRY(tp_tensor_read(loss, &value, sizeof value));
        step->losses[r] = value;
        if (program->accuracy) TRY(count_correct(out, y, &step->correct[r]));
    } else if (step->train) {
        /* Fewer rows than replicas: this one adds nothing but must join the all-reduce. */
        for (size_t i = 0; i < nt; i++) {
            tp_tensor_t *value;
            TRY(tp_variable_read(trained[i], &value));
            error = tp_zeros_like(c, value, &grads[i]);
            tp_tensor_release(value);
            if (error != NULL) goto done;
        }
    }
    if (step->train && replica != NULL && nt > 0) {
        tp_tensor_t **reduced = calloc(nt + 1, sizeof *reduced);
        if (reduced == NULL) goto done;
        error = tp_replica_all_reduce(replica, TP_REDUCE_MEAN, grads, nt, reduced);
        for (size_t i = 0; i < nt; i++) {
            tp_tensor_release(grads[i]);
            grads[i] = reduced[i];
        }
        free(reduced);
        if (error != NULL) goto done;
    }
    if (step->train && replica != NULL && program->num_workers > 1)
        TRY(sum_metrics(step, r, c, replica));
done:
    tp_tape_destroy(tape);
    for (size_t i = 0; weights != NULL && i < nv; i++) tp_tensor_release(weights[i]);
    free(weights);
    tp_tensor_release(out);
    tp_tensor_release(loss);
    return error;
}

static tp_status_t *run_replica(tp_replica_context_t *replica, void *user_data) {
    return replica_step(user_data, tp_replica_index(replica), tp_replica_context(replica),
                        replica);
}

/* train_step(x, y) / test_step(x, y): (mean loss over the batch, rows called right or None). */
static PyObject *run_step(PyObject *self, PyObject *args, bool train) {
    program_object *program = (program_object *)self;
    PyObject *x_object, *y_object;
    if (!PyArg_ParseTuple(args, "OO", &x_object, &y_object)) return NULL;
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    if (program->layers == NULL || program->loss == LOSS_NONE || program->optimizer == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "You must compile your model before training/testing it. "
                        "Use `model.compile(optimizer, loss)`.");
        return NULL;
    }
    tp_tensor_t *x, *y;
    if (tpy_to_tensor(x_object, TP_FLOAT32, &x) < 0) return NULL;
    if (tpy_to_tensor(y_object, program->loss == LOSS_MSE ? TP_FLOAT32 : TP_DTYPE_INVALID, &y) <
        0) {
        tp_tensor_release(x);
        return NULL;
    }
    tp_shape_t xs = tp_tensor_shape(x), ys = tp_tensor_shape(y);
    const size_t replicas = program->num_replicas, nv = program->num_vars;
    if (xs.rank < 1 || ys.rank < 1 || xs.dims[0] != ys.dims[0] || xs.dims[0] == 0) {
        PyErr_Format(PyExc_ValueError, "x and y must have the same number of rows (> 0): %lld "
                                       "and %lld",
                     (long long)(xs.rank ? xs.dims[0] : 0), (long long)(ys.rank ? ys.dims[0] : 0));
        tp_tensor_release(x);
        tp_tensor_release(y);
        return NULL;
    }
    step_t step = {.program = program, .x = x, .y = y, .rows = xs.dims[0], .train = train};
    const size_t nt = program->num_train;
    step.grads = PyMem_Calloc(replicas * nt + 1, sizeof *step.grads);
    step.losses = PyMem_Calloc(replicas, sizeof *step.losses);
    step.rows_of = PyMem_Calloc(replicas, sizeof *step.rows_of);
    step.correct = PyMem_Calloc(replicas, sizeof *step.correct);
    step.parts = PyMem_Calloc(2 * replicas, sizeof *step.parts);
    tp_status_t *status = NULL;
    if (step.grads == NULL || step.losses == NULL || step.rows_of == NULL ||
        step.correct == NULL || step.parts == NULL) {
        PyErr_NoMemory();
    } else if (train) {
        Py_BEGIN_ALLOW_THREADS
        status = split_batch(context, &step);
        if (status == NULL)
            status = program->strategy != NULL
                         ? tp_mirrored_strategy_run(program->strategy, run_replica, &step)
                         : replica_step(&step, 0, context, NULL);
        /* One update of every replica's copy: they hold the same all-reduced gradients. */
        if (status == NULL && nt > 0)
            status = tp_optimizer_apply(program->optimizer, program->train_vars, step.grads,
                                        replicas * nt);
        Py_END_ALLOW_THREADS
    } else {
        /* Evaluation runs whole on replica 0's device, where predict() runs too. */
        const program_object one = {.layers = program->layers,
                                    .num_layers = program->num_layers, .num_replicas = 1,
                                    .num_vars = nv, .vars = program->vars,
                                    .loss = program->loss, .accuracy = program->accuracy};
        step.program = &one;
        const char *device =
            program->strategy ? tp_mirrored_strategy_device(program->strategy, 0) : NULL;
        Py_BEGIN_ALLOW_THREADS
        status = split_batch(context, &step);
        if (status == NULL) status = device != NULL ? tp_device_push(context, device) : NULL;
        if (status == NULL) {
            status = replica_step(&step, 0, context, NULL);
            tp_status_t *popped = device != NULL ? tp_device_pop(context) : NULL;
            if (status == NULL) status = popped;
            else tp_status_free(popped);
        }
        Py_END_ALLOW_THREADS
    }
    PyObject *result = NULL;
    if (status != NULL) {
        tpy_raise(status);
    } else if (!PyErr_Occurred()) {
        double loss = 0.0;
        int64_t correct = 0;
        for (size_t r = 0; r < replicas; r++) {
            loss += step.losses[r] * (double)step.rows_of[r] / (double)step.rows;
            correct += step.correct[r];
        }
        if (train && program->num_workers > 1) {
            loss = step.global_loss;
            correct = (int64_t)step.global_correct;
        }
        if (program->accuracy) result = Py_BuildValue("(dL)", loss, (long long)correct);
        else result = Py_BuildValue("(dO)", loss, Py_None);
    }
    for (size_t i = 0; step.grads != NULL && i < replicas * nt; i++)
        tp_tensor_release(step.grads[i]);
    PyMem_Free(step.grads);
    PyMem_Free(step.losses);
    PyMem_Free(step.rows_of);
    PyMem_Free(step.correct);
    for (size_t i = 0; step.parts != NULL && i < 2 * replicas; i++)
        tp_tensor_release(step.parts[i]);
    PyMem_Free(step.parts);
    tp_tensor_release(x);
    tp_tensor_release(y);
    return result;
}

static PyObject *train_step(PyObject *self, PyObject *args) { return run_step(self, args, true); }
static PyObject *test_step(PyObject *self, PyObject *args) { return run_step(self, args, false); }

/* __call__(x): the output for x, from replica 0's variables, on its device. */
static PyObject *program_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    program_object *program = (program_object *)self;
    PyObject *x_object;
    static char *keywords[] = {"x", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", keywords, &x_object)) return NULL;
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    if (program->layers == NULL) {
        PyErr_SetString(PyExc_ValueError, "the KerasProgram was not initialized");
        return NULL;
    }
    tp_tensor_t *x, *out = NULL;
    tp_tensor_t **weights = PyMem_Calloc(program->num_vars + 1, sizeof *weights);
    if (weights == NULL) return PyErr_NoMemory();
    /* Read through the Variables, so that a tp.GradientTape recording around model(x) sees
     * the reads and takes gradients with respect to model.trainable_variables. */
    PyObject *replica0 = PyTuple_GET_ITEM(program->var_objects, 0);
    for (size_t i = 0; i < program->num_vars; i++) {
        if (tpy_variable_value(PyTuple_GET_ITEM(replica0, (Py_ssize_t)i), &weights[i]) < 0) {
            for (size_t j = 0; j < i; j++) tp_tensor_release(weights[j]);
            PyMem_Free(weights);
            return NULL;
        }
    }
    if (tpy_to_tensor(x_object, TP_FLOAT32, &x) < 0) {
        for (size_t i = 0; i < program->num_vars; i++) tp_tensor_release(weights[i]);
        PyMem_Free(weights);
        return NULL;
    }
    const char *device =
        program->strategy ? tp_mirrored_strategy_device(program->strategy, 0) : NULL;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = device != NULL ? tp_device_push(context, device) : NULL;
    if (status == NULL) {
        status = forward(program, context, weights, x, false, &out);
        tp_status_t *popped = device != NULL ? tp_device_pop(context) : NULL;
        if (status == NULL) status = popped;
        else tp_status_free(popped);
    }
    Py_END_ALLOW_THREADS
    tp_tensor_release(x);
    for (size_t i = 0; i < program->num_vars; i++) tp_tensor_release(weights[i]);
    PyMem_Free(weights);
    if (status != NULL) {
        tp_tensor_release(out);
        return tpy_raise(status);
    }
    return tpy_tensor_wrap(out);
}

/* Every replica's trainable variables, by the flags of `trainable` (None: all). */
static int trainable_variables(const program_object *program, PyObject *trainable,
                               tp_variable_t ***out, size_t *count) {
    const size_t nv = program->num_vars, replicas = program->num_replicas;
    bool *flags = PyMem_Calloc(nv + 1, sizeof *flags);
    if (flags == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    size_t nt = 0;
    PyObject *fast = trainable == Py_None ? NULL : PySequence_Fast(trainable, "trainable: a list");
    int result = trainable != Py_None && fast == NULL ? -1 : 0;
    if (fast != NULL && PySequence_Fast_GET_SIZE(fast) != (Py_ssize_t)nv) {
        PyErr_Format(PyExc_ValueError, "trainable: %zu flags needed", nv);
        result = -1;
    }
    for (size_t i = 0; result == 0 && i < nv; i++) {
        int flag =
            fast == NULL ? 1 : PyObject_IsTrue(PySequence_Fast_GET_ITEM(fast, (Py_ssize_t)i));
        if (flag < 0) result = -1;
        flags[i] = flag == 1;
        nt += flags[i];
    }
    Py_XDECREF(fast);
    tp_variable_t **vars = result == 0 ? PyMem_Calloc(replicas * nt + 1, sizeof *vars) : NULL;
    if (result == 0 && vars == NULL) {
        PyErr_NoMemory();
        result = -1;
    }
    for (size_t r = 0, k = 0; result == 0 && r < replicas; r++)
        for (size_t i = 0; i < nv; i++)
            if (flags[i]) vars[k++] = program->vars[r * nv + i];
    PyMem_Free(flags);
    *out = vars;
    *count = nt;
    return result;
}

/* compile(loss, accuracy, optimizer, trainable=None): loss 'mse',
 * 'sparse_categorical_crossentropy' (on probabilities: the model must end in a softmax) or
 * 'sparse_categorical_crossentropy_logits'; optimizer, a tp.keras.optimizers object, which
 * makes every step; trainable, a flag per variable (None: all), read now as Keras reads
 * layer.trainable at compile. */
static PyObject *program_compile(PyObject *self, PyObject *args, PyObject *kwargs) {
    program_object *program = (program_object *)self;
    static char *keywords[] = {"loss", "accuracy", "optimizer", "trainable", NULL};
    const char *loss_name;
    int accuracy;
    PyObject *optimizer_object, *trainable = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "spO|O:compile", keywords, &loss_name,
                                     &accuracy, &optimizer_object, &trainable))
        return NULL;
    if (program->all_vars == NULL) {
        PyErr_SetString(PyExc_ValueError, "the KerasProgram was not initialized");
        return NULL;
    }
    tp_optimizer_t *optimizer = tpy_optimizer_handle(optimizer_object);
    if (optimizer == NULL) return NULL;
    loss_t loss;
    if (strcmp(loss_name, "mse") == 0) loss = LOSS_MSE;
    else if (strcmp(loss_name, "sparse_categorical_crossentropy_logits") == 0)
        loss = LOSS_SPARSE_CE_LOGITS;
    else if (strcmp(loss_name, "sparse_categorical_crossentropy") == 0)
        loss = LOSS_SPARSE_CE_PROBS;
    else {
        PyErr_Format(PyExc_ValueError, "unknown loss '%s'", loss_name);
        return NULL;
    }
    if (loss == LOSS_SPARSE_CE_PROBS &&
        (program->num_layers == 0 ||
         program->layers[program->num_layers - 1].activation != ACT_SOFTMAX)) {
        PyErr_SetString(PyExc_ValueError,
                        "sparse_categorical_crossentropy on probabilities needs a model that "
                        "ends in activation='softmax'; for logits, use "
                        "tp.keras.losses.SparseCategoricalCrossentropy(from_logits=True)");
        return NULL;
    }
    tp_variable_t **train_vars = NULL;
    size_t num_train = 0;
    if (trainable_variables(program, trainable, &train_vars, &num_train) < 0) return NULL;
    /* The C optimizer knows the variables by address: its Python half keeps them alive. */
    if (tpy_optimizer_remember(optimizer_object, program->all_vars) < 0) {
        PyMem_Free(train_vars);
        return NULL;
    }
    PyMem_Free(program->train_vars);
    program->train_vars = train_vars;
    program->num_train = num_train;
    Py_XSETREF(program->optimizer_object, Py_NewRef(optimizer_object));
    program->optimizer = optimizer;
    program->loss = loss;
    program->accuracy = accuracy != 0;
    Py_RETURN_NONE;
}

static PyMethodDef program_methods[] = {
    {"compile", (PyCFunction)(void (*)(void))program_compile, METH_VARARGS | METH_KEYWORDS,
     "Chooses the loss, the metric and the optimizer."},
    {"train_step", train_step, METH_VARARGS,
     "train_step(x, y): one step over the batch; (mean loss, rows right or None)."},
    {"test_step", test_step, METH_VARARGS,
     "test_step(x, y): the batch's (mean loss, rows right or None), no update."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject program_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug._tensorplug.KerasProgram",
    .tp_basicsize = sizeof(program_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "KerasProgram(layers, variables, strategy=None): a model's steps in C",
    .tp_dealloc = program_dealloc,
    .tp_init = program_init,
    .tp_new = PyType_GenericNew,
    .tp_call = program_call,
    .tp_methods = program_methods,
};

/* _mirror(strategy, value): copies of value on every replica's device, as a list of tensors
 * from which each replica's variable is made. */
static PyObject *mirror(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *strategy_object, *value_object;
    if (!PyArg_ParseTuple(args, "OO:_mirror", &strategy_object, &value_object)) return NULL;
    tp_mirrored_strategy_t *strategy = tpy_strategy_handle(strategy_object);
    tp_context_t *context = tpy_context();
    if (strategy == NULL || context == NULL) return NULL;
    tp_tensor_t *value;
    if (tpy_to_tensor(value_object, TP_DTYPE_INVALID, &value) < 0) return NULL;
    size_t count = tp_mirrored_strategy_num_replicas(strategy);
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t r = 0; list != NULL && r < count; r++) {
        /* A variable's copy to its device is a plain transfer, which every device can take,
         * where an op (Identity) would need a kernel there. */
        tp_variable_t *staging = NULL;
        tp_tensor_t *copy = NULL;
        tp_status_t *status = tp_variable_create(
            context, "mirror", value, tp_mirrored_strategy_device(strategy, r), &staging);
        if (status == NULL) status = tp_variable_read(staging, &copy);
        tp_variable_destroy(staging);
        PyObject *item = status != NULL ? tpy_raise(status) : tpy_tensor_wrap(copy);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)r, item);
    }
    tp_tensor_release(value);
    return list;
}

/* _load_digits(path=None): every image of the UCI digits file (float32 (n, 64) in [0, 1]) and
 * its label (int32 (n)), through tp_digits_load. */
static PyObject *load_digits(PyObject *self, PyObject *args) {
    (void)self;
    const char *path = NULL;
    if (!PyArg_ParseTuple(args, "|z:_load_digits", &path)) return NULL;
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_tensor_t *images = NULL, *labels = NULL;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_digits_load(context, path, &images, &labels);
    Py_END_ALLOW_THREADS
    if (status != NULL) return tpy_raise(status);
    PyObject *image_object = tpy_tensor_wrap(images);
    PyObject *label_object = tpy_tensor_wrap(labels);
    if (image_object == NULL || label_object == NULL) {
        Py_XDECREF(image_object);
        Py_XDECREF(label_object);
        return NULL;
    }
    return Py_BuildValue("(NN)", image_object, label_object);
}

/* _random(kind, shape, seed): the runtime's seeded draw on CPU:0, 'uniform' U(0, 1) or
 * 'normal' N(0, 1), float32; what Keras' initializers take when given a seed, so that a model
 * seeded alike in Python and in C starts from the same weights. */
static PyObject *random_values(PyObject *self, PyObject *args) {
    (void)self;
    const char *kind;
    PyObject *dims;
    long long seed;
    if (!PyArg_ParseTuple(args, "sO!L:_random", &kind, &PyTuple_Type, &dims, &seed)) return NULL;
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    bool uniform = strcmp(kind, "uniform") == 0;
    if (!uniform && strcmp(kind, "normal") != 0) {
        PyErr_Format(PyExc_ValueError, "_random: 'uniform' or 'normal', not '%s'", kind);
        return NULL;
    }
    tp_shape_t shape = {0, {0}};
    if (PyTuple_GET_SIZE(dims) > TP_MAX_RANK) {
        PyErr_SetString(PyExc_ValueError, "_random: too many dimensions");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(dims); i++) {
        shape.dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, i));
        if (shape.dims[i] == -1 && PyErr_Occurred()) return NULL;
    }
    shape.rank = (int32_t)PyTuple_GET_SIZE(dims);
    tp_tensor_t *out = NULL;
    tp_status_t *status = tp_device_push(context, "/CPU:0");
    if (status == NULL) {
        status = uniform ? tp_random_uniform(context, TP_FLOAT32, shape, seed, &out)
                         : tp_random_normal(context, TP_FLOAT32, shape, seed, &out);
        tp_status_t *popped = tp_device_pop(context);
        if (status == NULL) status = popped;
        else tp_status_free(popped);
    }
    if (status != NULL) {
        tp_tensor_release(out);
        return tpy_raise(status);
    }
    return tpy_tensor_wrap(out);
}

static PyMethodDef module_functions[] = {
    {"_mirror", mirror, METH_VARARGS, NULL},
    {"_random", random_values, METH_VARARGS, NULL},
    {"_load_digits", load_digits, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int tpy_init_keras(PyObject *module) {
    if (PyType_Ready(&program_type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "KerasProgram", (PyObject *)&program_type) < 0) return -1;
    return PyModule_AddFunctions(module, module_functions);
}
