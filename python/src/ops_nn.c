/* SPDX-License-Identifier: Apache-2.0 */
/* tp.nn's ops under TensorFlow's names and signatures: activations, softmax and the
 * cross-entropies, bias_add, conv2d and pooling, fused_batch_norm and dropout. Where TensorFlow
 * takes a layout or axis the C op does not (NCHW, a softmax axis other than the last, logits
 * of rank other than 2), the call is made of transposes and reshapes around the op. */
#include "ops.h"

TPY_UNARY_OP(relu, "features", tp_relu)

static const int64_t to_nhwc[] = {0, 2, 3, 1};
static const int64_t to_nchw[] = {0, 3, 1, 2};

/* fn applied along `axis` of x: swapped with the last dimension around it when it is not. */
static PyObject *along_axis(const char *function, tpy_unary_fn fn, tp_tensor_t *x,
                            PyObject *axis_object) {
    int32_t rank = tp_tensor_shape(x).rank;
    int64_t axis = -1;
    if (axis_object != NULL && axis_object != Py_None &&
        tpy_int_arg(function, "axis", axis_object, &axis) < 0)
        return NULL;
    if (rank == 0) {
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                     "%s: the logits must have rank 1 or more, not 0", function);
        return NULL;
    }
    if (tpy_axis(function, axis, rank, &axis) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    if (axis == rank - 1) {
        TPY_RUN(status, tpy_big(&x, 1), fn(tpy_context(), x, &out));
        return tpy_result(status, out);
    }
    int64_t perm[TP_MAX_RANK];
    for (int32_t i = 0; i < rank; i++) perm[i] = i;
    perm[axis] = rank - 1;
    perm[rank - 1] = axis;
    tp_tensor_t *moved = NULL, *done = NULL;
    if (tpy_transpose(x, perm, rank, &moved) < 0) return NULL;
    TPY_RUN(status, tpy_big(&moved, 1), fn(tpy_context(), moved, &done));
    tp_tensor_release(moved);
    if (tpy_check(status) < 0) return NULL;
    int result = tpy_transpose(done, perm, rank, &out);
    tp_tensor_release(done);
    return result < 0 ? NULL : tpy_tensor_wrap(out);
}

/* softmax(logits, axis=None, name=None) and log_softmax: axis None is the last. */
static PyObject *softmax_kind(const char *function, tpy_unary_fn fn, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames) {
    if (nargs == 1 && kwnames == NULL) return tpy_call_unary(fn, args[0]);
    static const char *const names[] = {"logits", "axis", "name"};
    PyObject *values[3];
    if (tpy_parse(function, names, 3, 1, args, nargs, kwnames, values) < 0) return NULL;
    tp_tensor_t *x;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    PyObject *result = along_axis(function, fn, x, values[1]);
    tp_tensor_release(x);
    return result;
}

static TPY_OP_SIGNATURE(softmax) {
    (void)self;
    return softmax_kind("softmax", tp_softmax, args, nargs, kwnames);
}

static TPY_OP_SIGNATURE(log_softmax) {
    (void)self;
    return softmax_kind("log_softmax", tp_log_softmax, args, nargs, kwnames);
}

/* Whether a data_format is channels-first: "NCHW", "NC..." (TensorFlow's spellings), given
 * that `channels_last` is the other accepted one. -1 with ValueError for anything else. */
static int channels_first(const char *function, PyObject *object, const char *channels_last,
                          const char *channels_first_name) {
    if (object == NULL || object == Py_None) return 0;
    const char *const choices[] = {channels_last, channels_first_name, NULL};
    return tpy_choice_arg(function, "data_format", object, choices);
}

/* bias_add(value, bias, data_format=None, name=None). */
static TPY_OP_SIGNATURE(bias_add) {
    (void)self;
    static const char *const names[] = {"value", "bias", "data_format", "name"};
    PyObject *values[4];
    if (tpy_parse("bias_add", names, 4, 2, args, nargs, kwnames, values) < 0) return NULL;
    int first = channels_first("bias_add", values[2], "NHWC", "NCHW");
    if (first < 0) return NULL;
    tp_tensor_t *x, *bias;
    if (tpy_binary_args(values[0], values[1], &x, &bias) < 0) return NULL;
    tp_tensor_t *out = NULL, *inputs[2] = {x, bias};
    tp_status_t *status = NULL;
    int32_t rank = tp_tensor_shape(x).rank;
    if (first && rank >= 3) {
        /* The bias as [C, 1, 1]: broadcasting adds it along dimension 1. */
        tp_shape_t shape = {.rank = rank - 1};
        shape.dims[0] = -1;
        for (int32_t i = 1; i < rank - 1; i++) shape.dims[i] = 1;
        tp_tensor_t *column = NULL;
        status = tp_reshape(tpy_context(), bias, shape, &column);
        if (status == NULL)
            TPY_RUN(status, tpy_big(inputs, 2), tp_add(tpy_context(), x, column, &out));
        tp_tensor_release(column);
    } else {
        TPY_RUN(status, tpy_big(inputs, 2), tp_bias_add(tpy_context(), x, bias, &out));
    }
    tp_tensor_release(x);
    tp_tensor_release(bias);
    return tpy_result(status, out);
}

/* A window's or stride's height and width from an int, or a list of 1, 2 or 4 values (the
 * last in the order of the data format, whose batch and channel entries must be 1). */
static int read_hw(const char *function, const char *what, PyObject *object, bool first,
                   int32_t *height, int32_t *width) {
    int64_t v[4];
    int count = 0;
    if (tpy_int_list(function, what, object, v, 4, &count) < 0) return -1;
    int64_t h, w;
    if (count == 1) {
        h = w = v[0];
    } else if (count == 2) {
        h = v[0];
        w = v[1];
    } else if (count == 4) {
        int64_t batch = v[0], channels = first ? v[1] : v[3];
        h = first ? v[2] : v[1];
        w = first ? v[3] : v[2];
        if (batch != 1 || channels != 1) {
            PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                         "%s: %s in the batch and channel dimensions must be 1", function, what);
            return -1;
        }
    } else {
        PyErr_Format(PyExc_ValueError, "%s(): %s must have 1, 2 or 4 values, not %d", function,
                     what, count);
        return -1;
    }
    if (h < 1 || w < 1 || h > INT32_MAX || w > INT32_MAX) {
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                     "%s: %s must be positive, not %lld x %lld", function, what, (long long)h,
                     (long long)w);
        return -1;
    }
    *height = (int32_t)h;
    *width = (int32_t)w;
    return 0;
}

static int read_padding(const char *function, PyObject *object, tp_padding_t *out) {
    if (object != NULL && !PyUnicode_Check(object)) {
        PyErr_Format(tpy_error_class(TP_UNIMPLEMENTED),
                     "%s(): explicit paddings (%R) are not implemented; tensorplug pads "
                     "'SAME' or 'VALID'", function, object);
        return -1;
    }
    static const char *const choices[] = {"VALID", "SAME", NULL};
    int choice = tpy_choice_arg(function, "padding", object, choices);
    if (choice < 0) return -1;
    *out = choice == 1 ? TP_PADDING_SAME : TP_PADDING_VALID;
    return 0;
}

/* Runs an op on an NHWC image given in NHWC or (first) NCHW, with transposes around it for
 * NCHW. `run` gets the NHWC input (and the filter of conv2d). */
typedef tp_status_t *(*image_fn)(tp_tensor_t *input, tp_tensor_t *filter, const void *options,
                                 tp_tensor_t **out);

static PyObject *image_op(tp_tensor_t *input, tp_tensor_t *filter, bool first, image_fn run,
                          const void *options) {
    tp_tensor_t *inputs[2] = {input, filter}, *out = NULL;
    tp_status_t *status;
    if (!first) {
        TPY_RUN(status, tpy_big(inputs, 2), run(input, filter, options, &out));
        return tpy_result(status, out);
    }
    if (tp_tensor_shape(input).rank != 4) {
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                     "an NCHW image must have rank 4, not %d", (int)tp_tensor_shape(input).rank);
        return NULL;
    }
    tp_tensor_t *nhwc = NULL, *done = NULL;
    if (tpy_transpose(input, to_nhwc, 4, &nhwc) < 0) return NULL;
    inputs[0] = nhwc;
    TPY_RUN(status, tpy_big(inputs, 2), run(nhwc, filter, options, &done));
    tp_tensor_release(nhwc);
    if (tpy_check(status) < 0) return NULL;
    int result = tpy_transpose(done, to_nchw, 4, &out);
    tp_tensor_release(done);
    return result < 0 ? NULL : tpy_tensor_wrap(out);
}

static tp_status_t *run_conv2d(tp_tensor_t *input, tp_tensor_t *filter, const void *options,
                               tp_tensor_t **out) {
    return tp_conv2d(tpy_context(), input, filter, options, out);
}

static tp_status_t *run_max_pool(tp_tensor_t *input, tp_tensor_t *filter, const void *options,
                                 tp_tensor_t **out) {
    (void)filter;
    return tp_max_pool(tpy_context(), input, options, out);
}

static tp_status_t *run_avg_pool(tp_tensor_t *input, tp_tensor_t *filter, const void *options,
                                 tp_tensor_t **out) {
    (void)filter;
    return tp_avg_pool(tpy_context(), input, options, out);
}

/* conv2d(input, filters, strides, padding, data_format='NHWC', dilations=None, name=None). */
static TPY_OP_SIGNATURE(conv2d) {
    (void)self;
    static const char *const names[] = {"input",       "filters",   "strides", "padding",
                                        "data_format", "dilations", "name"};
    PyObject *values[7];
    if (tpy_parse("conv2d", names, 7, 4, args, nargs, kwnames, values) < 0) return NULL;
    int first = channels_first("conv2d", values[4], "NHWC", "NCHW");
    if (first < 0) return NULL;
    tp_conv2d_options_t options = {0};
    if (read_hw("conv2d", "strides", values[2], first, &options.stride_height,
                &options.stride_width) < 0 ||
        read_padding("conv2d", values[3], &options.padding) < 0)
        return NULL;
    if (values[5] != NULL && values[5] != Py_None &&
        read_hw("conv2d", "dilations", values[5], first, &options.dilation_height,
                &options.dilation_width) < 0)
        return NULL;
    tp_tensor_t *input, *filter;
    if (tpy_binary_args(values[0], values[1], &input, &filter) < 0) return NULL;
    PyObject *result = image_op(input, filter, first, run_conv2d, &options);
    tp_tensor_release(input);
    tp_tensor_release(filter);
    return result;
}

/* max_pool2d(input, ksize, strides, padding, data_format='NHWC', name=None), avg_pool2d. */
static PyObject *pool(const char *function, image_fn run, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"input", "ksize", "strides", "padding", "data_format",
                                        "name"};
    PyObject *values[6];
    if (tpy_parse(function, names, 6, 4, args, nargs, kwnames, values) < 0) return NULL;
    int first = channels_first(function, values[4], "NHWC", "NCHW");
    if (first < 0) return NULL;
    tp_pool_options_t options = {0};
    if (read_hw(function, "ksize", values[1], first, &options.window_height,
                &options.window_width) < 0 ||
        read_hw(function, "strides", values[2], first, &options.stride_height,
                &options.stride_width) < 0 ||
        read_padding(function, values[3], &options.padding) < 0)
        return NULL;
    tp_tensor_t *input;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &input) < 0) return NULL;
    PyObject *result = image_op(input, NULL, first, run, &options);
    tp_tensor_release(input);
    return result;
}

static TPY_OP_SIGNATURE(max_pool2d) {
    (void)self;
    return pool("max_pool2d", run_max_pool, args, nargs, kwnames);
}

static TPY_OP_SIGNATURE(avg_pool2d) {
    (void)self;
    return pool("avg_pool2d", run_avg_pool, args, nargs, kwnames);
}

typedef tp_status_t *(*xent_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t *, tp_tensor_t **,
                                tp_tensor_t **);

/* The loss of a cross-entropy op on logits of any rank >= 1: the C op takes [batch, classes],
 * so logits are seen as [-1, classes] and labels as [-1, classes] (dense) or [-1] (sparse),
 * and the loss takes the shape of logits without its last dimension. */
static PyObject *cross_entropy(const char *function, xent_fn fn, tp_tensor_t *logits,
                               tp_tensor_t *labels, bool sparse) {
    tp_shape_t shape = tp_tensor_shape(logits);
    if (shape.rank == 0) {
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                     "%s: logits must have rank 1 or more, not 0", function);
        return NULL;
    }
    tp_context_t *context = tpy_context();
    tp_tensor_t *flat_logits = NULL, *flat_labels = NULL, *loss = NULL, *out = NULL;
    tp_status_t *status = NULL;
    bool reshaped = shape.rank != 2;
    if (reshaped) {
        status = tp_reshape(context, logits, TP_SHAPE(-1, shape.dims[shape.rank - 1]),
                            &flat_logits);
        if (status == NULL)
            status = tp_reshape(context, labels,
                                sparse ? TP_SHAPE(-1) : TP_SHAPE(-1, shape.dims[shape.rank - 1]),
                                &flat_labels);
    } else {
        flat_logits = tp_tensor_retain(logits);
        flat_labels = tp_tensor_retain(labels);
    }
    if (status == NULL) {
        tp_tensor_t *inputs[2] = {flat_logits, flat_labels};
        TPY_RUN(status, tpy_big(inputs, 2), fn(context, flat_logits, flat_labels, &loss, NULL));
    }
    tp_tensor_release(flat_logits);
    tp_tensor_release(flat_labels);
    if (status == NULL && reshaped) {
        tp_shape_t loss_shape = {.rank = shape.rank - 1};
        for (int32_t i = 0; i < shape.rank - 1; i++) loss_shape.dims[i] = shape.dims[i];
        status = tp_reshape(context, loss, loss_shape, &out);
        tp_tensor_release(loss);
    } else {
        out = loss;
    }
    return tpy_result(status, out);
}

/* softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None): the loss. */
static TPY_OP_SIGNATURE(softmax_cross_entropy_with_logits) {
    (void)self;
    static const char *const function = "softmax_cross_entropy_with_logits";
    static const char *const names[] = {"labels", "logits", "axis", "name"};
    PyObject *values[4];
    if (tpy_parse(function, names, 4, 2, args, nargs, kwnames, values) < 0) return NULL;
    tp_tensor_t *logits, *labels;
    if (tpy_binary_args(values[1], values[0], &logits, &labels) < 0) return NULL;
    int32_t rank = tp_tensor_shape(logits).rank;
    int64_t axis = -1;
    PyObject *result = NULL;
    if ((values[2] == NULL || values[2] == Py_None ||
         tpy_int_arg(function, "axis", values[2], &axis) == 0) &&
        (rank == 0 || tpy_axis(function, axis, rank, &axis) == 0)) {
        if (rank == 0 || axis == rank - 1) {
            result = cross_entropy(function, tp_softmax_cross_entropy_with_logits, logits,
                                   labels, false);
        } else {
            /* The class axis moved last in both; the loss keeps the others in order. */
            int64_t perm[TP_MAX_RANK];
            for (int32_t i = 0, j = 0; i < rank; i++)
                if (i != axis) perm[j++] = i;
            perm[rank - 1] = axis;
            tp_tensor_t *moved_logits = NULL, *moved_labels = NULL;
            if (tpy_transpose(logits, perm, rank, &moved_logits) == 0 &&
                tpy_transpose(labels, perm, rank, &moved_labels) == 0)
                result = cross_entropy(function, tp_softmax_cross_entropy_with_logits,
                                       moved_logits, moved_labels, false);
            tp_tensor_release(moved_logits);
            tp_tensor_release(moved_labels);
        }
    }
    tp_tensor_release(logits);
    tp_tensor_release(labels);
    return result;
}

/* sparse_softmax_cross_entropy_with_logits(labels, logits, name=None): the loss. */
static TPY_OP_SIGNATURE(sparse_softmax_cross_entropy_with_logits) {
    (void)self;
    static const char *const function = "sparse_softmax_cross_entropy_with_logits";
    static const char *const names[] = {"labels", "logits", "name"};
    PyObject *values[3];
    if (tpy_parse(function, names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    tp_tensor_t *logits, *labels;
    if (tpy_to_tensor(values[1], TP_DTYPE_INVALID, &logits) < 0) return NULL;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &labels) < 0) {
        tp_tensor_release(logits);
        return NULL;
    }
    tp_shape_t logits_shape = tp_tensor_shape(logits), labels_shape = tp_tensor_shape(labels);
    bool agree = logits_shape.rank == labels_shape.rank + 1;
    for (int32_t i = 0; agree && i < labels_shape.rank; i++)
        agree = logits_shape.dims[i] == labels_shape.dims[i];
    PyObject *result = NULL;
    if (!agree) {
        char a[160], b[160];
        tp_shape_format(&labels_shape, a, sizeof a);
        tp_shape_format(&logits_shape, b, sizeof b);
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                     "%s: labels of shape %s must have the shape of logits (%s) without its "
                     "last dimension", function, a, b);
    } else {
        result = cross_entropy(function, tp_sparse_softmax_cross_entropy_with_logits, logits,
                               labels, true);
    }
    tp_tensor_release(logits);
    tp_tensor_release(labels);
    return result;
}

/* fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
 * data_format='NHWC', is_training=True, name=None, exponential_avg_factor=1.0): (y,
 * running_mean, running_variance). Training without mean and variance starts the averages
 * from zeros, so a factor of 1 gives the batch's own. */
static TPY_OP_SIGNATURE(fused_batch_norm) {
    (void)self;
    static const char *const function = "fused_batch_norm";
    static const char *const names[] = {"x",           "scale",       "offset", "mean",
                                        "variance",    "epsilon",     "data_format",
                                        "is_training", "name",        "exponential_avg_factor"};
    PyObject *values[10];
    if (tpy_parse(function, names, 10, 3, args, nargs, kwnames, values) < 0) return NULL;
    double epsilon = 0.001, factor = 1.0;
    bool training;
    int first = channels_first(function, values[6], "NHWC", "NCHW");
    if (first < 0 || tpy_bool_arg(values[7], true, &training) < 0) return NULL;
    if (values[5] != NULL && tpy_double_arg(function, "epsilon", values[5], &epsilon) < 0)
        return NULL;
    if (values[9] != NULL &&
        tpy_double_arg(function, "exponential_avg_factor", values[9], &factor) < 0)
        return NULL;
    bool has_stats = values[3] != NULL && values[3] != Py_None && values[4] != NULL &&
                     values[4] != Py_None;
    if (!training && !has_stats) {
        PyErr_Format(PyExc_ValueError, "%s(): inference (is_training=False) needs mean and "
                     "variance", function);
        return NULL;
    }
    /* x, scale, offset, mean, variance; scale and the others take x's dtype where they are
     * Python values. */
    tp_tensor_t *t[5] = {NULL};
    tp_tensor_t *y = NULL, *batch_mean = NULL, *batch_variance = NULL, *nhwc = NULL;
    tp_status_t *status = NULL;
    PyObject *result = NULL;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &t[0]) < 0) goto done;
    for (int i = 1; i < 5; i++) {
        if (i >= 3 && !has_stats) {
            if (tpy_check(tp_zeros_like(tpy_context(), t[1], &t[i])) < 0) goto done;
        } else if (tpy_to_tensor_like(values[i], t[0], &t[i]) < 0) {
            goto done;
        }
    }
    if (first) {
        if (tp_tensor_shape(t[0]).rank != 4) {
            PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                         "%s: an NCHW x must have rank 4, not %d", function,
                         (int)tp_tensor_shape(t[0]).rank);
            goto done;
        }
        if (tpy_transpose(t[0], to_nhwc, 4, &nhwc) < 0) goto done;
    }
    tp_tensor_t *input = first ? nhwc : t[0];
    TPY_RUN(status, tpy_big(t, 1),
            tp_fused_batch_norm(tpy_context(), input, t[1], t[2], t[3], t[4], epsilon, training,
                                factor, &y, &batch_mean, &batch_variance));
    if (tpy_check(status) < 0) goto done;
    if (first) {
        tp_tensor_t *back = NULL;
        int moved = tpy_transpose(y, to_nchw, 4, &back);
        tp_tensor_release(y);
        y = back;
        if (moved < 0) goto done;
    }
    PyObject *items[3] = {tpy_tensor_wrap(y), tpy_tensor_wrap(batch_mean),
                          tpy_tensor_wrap(batch_variance)};
    y = batch_mean = batch_variance = NULL;
    if (items[0] != NULL && items[1] != NULL && items[2] != NULL)
        result = PyTuple_Pack(3, items[0], items[1], items[2]);
    for (int i = 0; i < 3; i++) Py_XDECREF(items[i]);
done:
    for (int i = 0; i < 5; i++) tp_tensor_release(t[i]);
    tp_tensor_release(nhwc);
    tp_tensor_release(y);
    tp_tensor_release(batch_mean);
    tp_tensor_release(batch_variance);
    return result;
}

/* dropout(x, rate, noise_shape=None, seed=None, name=None): the seed rule is tp.random's. */
static TPY_OP_SIGNATURE(dropout) {
    (void)self;
    static const char *const names[] = {"x", "rate", "noise_shape", "seed", "name"};
    PyObject *values[5];
    if (tpy_parse("dropout", names, 5, 2, args, nargs, kwnames, values) < 0) return NULL;
    double rate;
    if (tpy_double_arg("dropout", "rate", values[1], &rate) < 0) return NULL;
    if (!(rate >= 0.0 && rate < 1.0)) {
        PyErr_Format(PyExc_ValueError, "dropout(): rate must be a number in [0, 1), not %R",
                     values[1]);
        return NULL;
    }
    tp_tensor_t *x;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    if (values[2] != NULL && values[2] != Py_None) {
        int64_t dims[TP_MAX_RANK];
        int count = 0;
        tp_shape_t shape = tp_tensor_shape(x);
        bool same = tpy_int_list("dropout", "noise_shape", values[2], dims, TP_MAX_RANK,
                                 &count) == 0 && count == shape.rank;
        for (int i = 0; same && i < count; i++) same = dims[i] == shape.dims[i];
        if (!same) {
            if (!PyErr_Occurred())
                PyErr_Format(tpy_error_class(TP_UNIMPLEMENTED),
                             "dropout(): noise_shape %R differs from x's shape; tensorplug's "
                             "Dropout draws one value per element", values[2]);
            tp_tensor_release(x);
            return NULL;
        }
    }
    int64_t seed;
    if (tpy_next_seed(values[3], &seed) < 0) {
        tp_tensor_release(x);
        return NULL;
    }
    tp_tensor_t *y = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_big(&x, 1), tp_dropout(tpy_context(), x, rate, seed, &y, NULL));
    tp_tensor_release(x);
    return tpy_result(status, y);
}

static PyMethodDef functions[] = {
    TPY_OP_ENTRY(relu, "relu(features, name=None): max(features, 0), element-wise."),
    TPY_OP_ENTRY(softmax, "softmax(logits, axis=None, name=None)."),
    TPY_OP_ENTRY(log_softmax, "log_softmax(logits, axis=None, name=None)."),
    TPY_OP_ENTRY(bias_add, "bias_add(value, bias, data_format=None, name=None)."),
    TPY_OP_ENTRY(conv2d, "conv2d(input, filters, strides, padding, data_format='NHWC', "
                         "dilations=None, name=None)."),
    TPY_OP_ENTRY(max_pool2d, "max_pool2d(input, ksize, strides, padding, data_format='NHWC', "
                             "name=None)."),
    TPY_OP_ENTRY(avg_pool2d, "avg_pool2d(input, ksize, strides, padding, data_format='NHWC', "
                             "name=None)."),
    TPY_OP_ENTRY(softmax_cross_entropy_with_logits,
                 "softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None)."),
    TPY_OP_ENTRY(sparse_softmax_cross_entropy_with_logits,
                 "sparse_softmax_cross_entropy_with_logits(labels, logits, name=None)."),
    TPY_OP_ENTRY(fused_batch_norm,
                 "fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, "
                 "data_format='NHWC', is_training=True, name=None, exponential_avg_factor=1.0)."),
    TPY_OP_ENTRY(dropout, "dropout(x, rate, noise_shape=None, seed=None, name=None)."),
    {NULL, NULL, 0, NULL},
};

int tpy_init_ops_nn(PyObject *module) { return PyModule_AddFunctions(module, functions); }
