/* SPDX-License-Identifier: Apache-2.0 */
/* The array ops under TensorFlow's names: making (zeros, ones, fill), reshaping and moving
 * elements (reshape, transpose, concat, slice, strided_slice, gather, pad, tile, one_hot,
 * unsorted_segment_sum, and expand_dims, squeeze and stack made of Reshape and Concat),
 * choosing them (where) and measuring them (shape, size, rank). Their shapes, axes and sizes
 * come as Python values, as TensorFlow's functions take them. */
#include "ops.h"

/* A single tensor in, a single tensor out: runs `call` on `x` (converted from values[0]) and
 * releases it. */
#define RUN_ON_X(object, call)                                                                 \
    do {                                                                                       \
        tp_tensor_t *x;                                                                        \
        if (tpy_to_tensor((object), TP_DTYPE_INVALID, &x) < 0) return NULL;                    \
        tp_tensor_t *out = NULL;                                                               \
        tp_status_t *status;                                                                   \
        TPY_RUN(status, tpy_big(&x, 1), call);                                                 \
        tp_tensor_release(x);                                                                  \
        return tpy_result(status, out);                                                        \
    } while (0)

/* reshape(tensor, shape, name=None). */
static TPY_OP_SIGNATURE(reshape) {
    (void)self;
    static const char *const names[] = {"tensor", "shape", "name"};
    PyObject *values[3];
    if (tpy_parse("reshape", names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    tp_shape_t shape;
    if (tpy_shape_arg("reshape", "shape", values[1], &shape) < 0) return NULL;
    RUN_ON_X(values[0], tp_reshape(tpy_context(), x, shape, &out));
}

/* transpose(a, perm=None, conjugate=False, name='transpose'): perm None reverses the
 * dimensions. */
static TPY_OP_SIGNATURE(transpose) {
    (void)self;
    static const char *const names[] = {"a", "perm", "conjugate", "name"};
    PyObject *values[4];
    if (tpy_parse("transpose", names, 4, 1, args, nargs, kwnames, values) < 0) return NULL;
    int64_t perm[TP_MAX_RANK];
    int rank = -1;
    if (values[1] != NULL && values[1] != Py_None &&
        tpy_int_list("transpose", "perm", values[1], perm, TP_MAX_RANK, &rank) < 0)
        return NULL;
    tp_tensor_t *x;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    if (rank < 0) {
        rank = tp_tensor_shape(x).rank;
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
    }
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_big(&x, 1), tp_transpose(tpy_context(), x, perm, (size_t)rank, &out));
    tp_tensor_release(x);
    return tpy_result(status, out);
}

/* A tensor of `shape` holding `value` everywhere, by the Fill op. */
static PyObject *filled(tp_shape_t shape, tp_tensor_t *value) {
    tp_tensor_t *out = NULL;
    tp_status_t *status = tp_fill(tpy_context(), shape, value, &out);
    tp_tensor_release(value);
    return tpy_result(status, out);
}

/* zeros(shape, dtype=tp.float32, name=None) and ones. */
static PyObject *constant_filled(const char *function, long number, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"shape", "dtype", "name"};
    PyObject *values[3];
    if (tpy_parse(function, names, 3, 1, args, nargs, kwnames, values) < 0) return NULL;
    tp_shape_t shape;
    if (tpy_shape_arg(function, "shape", values[0], &shape) < 0) return NULL;
    tp_dtype_t dtype = TP_FLOAT32;
    if (values[1] != NULL && tpy_dtype_from_object(values[1], &dtype) < 0) return NULL;
    PyObject *scalar = PyLong_FromLong(number);
    if (scalar == NULL) return NULL;
    tp_tensor_t *value;
    int converted = tpy_to_tensor(scalar, dtype, &value);
    Py_DECREF(scalar);
    if (converted < 0) return NULL;
    return filled(shape, value);
}

static TPY_OP_SIGNATURE(zeros) {
    (void)self;
    return constant_filled("zeros", 0, args, nargs, kwnames);
}

static TPY_OP_SIGNATURE(ones) {
    (void)self;
    return constant_filled("ones", 1, args, nargs, kwnames);
}

/* fill(dims, value, name=None). */
static TPY_OP_SIGNATURE(fill) {
    (void)self;
    static const char *const names[] = {"dims", "value", "name"};
    PyObject *values[3];
    if (tpy_parse("fill", names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    tp_shape_t shape;
    if (tpy_shape_arg("fill", "dims", values[0], &shape) < 0) return NULL;
    tp_tensor_t *value;
    if (tpy_to_tensor(values[1], TP_DTYPE_INVALID, &value) < 0) return NULL;
    return filled(shape, value);
}

/* concat(values, axis, name='concat'). */
static TPY_OP_SIGNATURE(concat) {
    (void)self;
    static const char *const names[] = {"values", "axis", "name"};
    PyObject *values[3];
    if (tpy_parse("concat", names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    int64_t axis;
    if (tpy_int_arg("concat", "axis", values[1], &axis) < 0) return NULL;
    tp_tensor_t **inputs = NULL;
    size_t count = 0;
    if (tpy_tensor_list("concat", values[0], &inputs, &count) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_big(inputs, count),
            tp_concat(tpy_context(), inputs, count, axis, &out));
    tpy_release_tensors(inputs, count);
    return tpy_result(status, out);
}

/* Reads lists that must be as long as each other: the begin, size, end and strides of a
 * slice. */
static int read_lists(const char *function, PyObject *const *objects, const char *const *what,
                      int num_lists, int64_t (*lists)[TP_MAX_RANK], int *count) {
    for (int i = 0; i < num_lists; i++) {
        int n = 0;
        if (tpy_int_list(function, what[i], objects[i], lists[i], TP_MAX_RANK, &n) < 0)
            return -1;
        if (i > 0 && n != *count) {
            PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                         "%s: %s has %d values and %s %d; they must have as many", function,
                         what[0], *count, what[i], n);
            return -1;
        }
        *count = n;
    }
    return 0;
}

/* slice(input_, begin, size, name=None). */
static TPY_OP_SIGNATURE(slice) {
    (void)self;
    static const char *const names[] = {"input_", "begin", "size", "name"};
    PyObject *values[4];
    if (tpy_parse("slice", names, 4, 3, args, nargs, kwnames, values) < 0) return NULL;
    int64_t lists[2][TP_MAX_RANK];
    int count = 0;
    static const char *const what[] = {"begin", "size"};
    if (read_lists("slice", values + 1, what, 2, lists, &count) < 0) return NULL;
    RUN_ON_X(values[0],
             tp_slice(tpy_context(), x, lists[0], lists[1], (size_t)count, &out));
}

/* strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
 * new_axis_mask=0, shrink_axis_mask=0, var=None, name=None). */
static TPY_OP_SIGNATURE(strided_slice) {
    (void)self;
    static const char *const names[] = {"input_",        "begin",         "end",
                                        "strides",       "begin_mask",    "end_mask",
                                        "ellipsis_mask", "new_axis_mask", "shrink_axis_mask",
                                        "var",           "name"};
    PyObject *values[11];
    if (tpy_parse("strided_slice", names, 11, 3, args, nargs, kwnames, values) < 0) return NULL;
    int64_t lists[3][TP_MAX_RANK];
    int count = 0;
    static const char *const what[] = {"begin", "end", "strides"};
    bool strided = values[3] != NULL && values[3] != Py_None;
    if (read_lists("strided_slice", values + 1, what, strided ? 3 : 2, lists, &count) < 0)
        return NULL;
    int64_t masks[5] = {0};
    for (int i = 0; i < 5; i++)
        if (values[4 + i] != NULL &&
            tpy_int_arg("strided_slice", names[4 + i], values[4 + i], &masks[i]) < 0)
            return NULL;
    tp_strided_slice_masks_t spec = {.begin_mask = masks[0], .end_mask = masks[1],
                                     .ellipsis_mask = masks[2], .new_axis_mask = masks[3],
                                     .shrink_axis_mask = masks[4]};
    RUN_ON_X(values[0], tp_strided_slice(tpy_context(), x, lists[0], lists[1],
                                         strided ? lists[2] : NULL, (size_t)count, &spec, &out));
}

/* Two tensors in, one out: params and indices of gather, data and segment ids. */
static PyObject *run_on_two(PyObject *first, PyObject *second, int64_t number,
                            tp_status_t *(*call)(tp_context_t *, tp_tensor_t *, tp_tensor_t *,
                                                 int64_t, tp_tensor_t **)) {
    tp_tensor_t *inputs[2];
    if (tpy_to_tensor(first, TP_DTYPE_INVALID, &inputs[0]) < 0) return NULL;
    if (tpy_to_tensor(second, TP_DTYPE_INVALID, &inputs[1]) < 0) {
        tp_tensor_release(inputs[0]);
        return NULL;
    }
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_big(inputs, 2), call(tpy_context(), inputs[0], inputs[1], number, &out));
    tp_tensor_release(inputs[0]);
    tp_tensor_release(inputs[1]);
    return tpy_result(status, out);
}

/* gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None): axis
 * None is 0; indices are always checked. */
static TPY_OP_SIGNATURE(gather) {
    (void)self;
    static const char *const names[] = {"params", "indices", "validate_indices", "axis",
                                        "batch_dims", "name"};
    PyObject *values[6];
    if (tpy_parse("gather", names, 6, 2, args, nargs, kwnames, values) < 0) return NULL;
    int64_t axis = 0, batch_dims = 0;
    if (values[3] != NULL && values[3] != Py_None &&
        tpy_int_arg("gather", "axis", values[3], &axis) < 0)
        return NULL;
    if (values[4] != NULL && tpy_int_arg("gather", "batch_dims", values[4], &batch_dims) < 0)
        return NULL;
    if (batch_dims != 0) {
        PyErr_Format(tpy_error_class(TP_UNIMPLEMENTED),
                     "gather(): batch_dims=%lld; tensorplug's Gather has no batch dimensions "
                     "(batch_dims=0 only)", (long long)batch_dims);
        return NULL;
    }
    return run_on_two(values[0], values[1], axis, tp_gather);
}

/* unsorted_segment_sum(data, segment_ids, num_segments, name=None). */
static TPY_OP_SIGNATURE(unsorted_segment_sum) {
    (void)self;
    static const char *const names[] = {"data", "segment_ids", "num_segments", "name"};
    PyObject *values[4];
    if (tpy_parse("unsorted_segment_sum", names, 4, 3, args, nargs, kwnames, values) < 0)
        return NULL;
    int64_t num_segments;
    if (tpy_int_arg("unsorted_segment_sum", "num_segments", values[2], &num_segments) < 0)
        return NULL;
    return run_on_two(values[0], values[1], num_segments, tp_unsorted_segment_sum);
}

/* The dtype one_hot infers from on_value or off_value when dtype is not given: a Tensor's, or
 * what tpy_to_tensor makes of a Python value (float32 for floats, int32 for ints). */
static int value_dtype(PyObject *object, tp_dtype_t *dtype) {
    if (object == NULL || object == Py_None || *dtype != TP_DTYPE_INVALID) return 0;
    tp_tensor_t *tensor;
    if (tpy_to_tensor(object, TP_DTYPE_INVALID, &tensor) < 0) return -1;
    *dtype = tp_tensor_dtype(tensor);
    tp_tensor_release(tensor);
    return 0;
}

/* one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None). */
static TPY_OP_SIGNATURE(one_hot) {
    (void)self;
    static const char *const names[] = {"indices", "depth", "on_value", "off_value",
                                        "axis",    "dtype", "name"};
    PyObject *values[7];
    if (tpy_parse("one_hot", names, 7, 2, args, nargs, kwnames, values) < 0) return NULL;
    int64_t depth, axis = -1;
    if (tpy_int_arg("one_hot", "depth", values[1], &depth) < 0) return NULL;
    if (values[4] != NULL && values[4] != Py_None &&
        tpy_int_arg("one_hot", "axis", values[4], &axis) < 0)
        return NULL;
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    if (values[5] != NULL && tpy_dtype_from_object(values[5], &dtype) < 0) return NULL;
    if (value_dtype(values[2], &dtype) < 0 || value_dtype(values[3], &dtype) < 0) return NULL;
    if (dtype == TP_DTYPE_INVALID) dtype = TP_FLOAT32;
    double on = 1.0, off = 0.0;
    if (values[2] != NULL && values[2] != Py_None &&
        tpy_double_arg("one_hot", "on_value", values[2], &on) < 0)
        return NULL;
    if (values[3] != NULL && values[3] != Py_None &&
        tpy_double_arg("one_hot", "off_value", values[3], &off) < 0)
        return NULL;
    RUN_ON_X(values[0], tp_one_hot(tpy_context(), x, depth, on, off, axis, dtype, &out));
}

/* pad(tensor, paddings, mode='CONSTANT', constant_values=0, name=None): paddings [rank, 2]. */
static TPY_OP_SIGNATURE(pad) {
    (void)self;
    static const char *const names[] = {"tensor", "paddings", "mode", "constant_values",
                                        "name"};
    PyObject *values[5];
    if (tpy_parse("pad", names, 5, 2, args, nargs, kwnames, values) < 0) return NULL;
    static const char *const modes[] = {"CONSTANT", "REFLECT", "SYMMETRIC", NULL};
    int mode = tpy_choice_arg("pad", "mode", values[2], modes);
    if (mode < 0) return NULL;
    if (mode > 0) {
        PyErr_Format(tpy_error_class(TP_UNIMPLEMENTED),
                     "pad(): mode '%s' is not implemented; tensorplug's Pad pads with a "
                     "constant (mode='CONSTANT')", modes[mode]);
        return NULL;
    }
    double constant = 0.0;
    if (values[3] != NULL &&
        tpy_double_arg("pad", "constant_values", values[3], &constant) < 0)
        return NULL;
    /* The pairs, read through NumPy's reading of nested lists and arrays. */
    tp_tensor_t *pairs = NULL, *flat = NULL;
    if (tpy_to_tensor(values[1], TP_DTYPE_INVALID, &pairs) < 0) return NULL;
    tp_shape_t shape = tp_tensor_shape(pairs);
    int64_t paddings[2 * TP_MAX_RANK];
    int count = 0;
    if (shape.rank != 2 || shape.dims[1] != 2 || shape.dims[0] > TP_MAX_RANK) {
        tp_tensor_release(pairs);
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                     "pad: paddings must be a [rank, 2] list of integers, not %R", values[1]);
        return NULL;
    }
    tp_status_t *reshaped = tp_reshape(tpy_context(), pairs, TP_SHAPE(-1), &flat);
    tp_tensor_release(pairs);
    if (tpy_check(reshaped) < 0) return NULL;
    PyObject *flat_object = tpy_tensor_wrap(flat);
    if (flat_object == NULL) return NULL;
    int read = tpy_int_list("pad", "paddings", flat_object, paddings, 2 * TP_MAX_RANK, &count);
    Py_DECREF(flat_object);
    if (read < 0) return NULL;
    RUN_ON_X(values[0],
             tp_pad(tpy_context(), x, paddings, (size_t)(count / 2), constant, &out));
}

/* tile(input, multiples, name=None). */
static TPY_OP_SIGNATURE(tile) {
    (void)self;
    static const char *const names[] = {"input", "multiples", "name"};
    PyObject *values[3];
    if (tpy_parse("tile", names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    int64_t multiples[TP_MAX_RANK];
    int count = 0;
    if (tpy_int_list("tile", "multiples", values[1], multiples, TP_MAX_RANK, &count) < 0)
        return NULL;
    RUN_ON_X(values[0], tp_tile(tpy_context(), x, multiples, (size_t)count, &out));
}

/* where(condition, x=None, y=None, name=None): x where condition holds, else y. */
static TPY_OP_SIGNATURE(where) {
    (void)self;
    static const char *const names[] = {"condition", "x", "y", "name"};
    PyObject *values[4];
    if (tpy_parse("where", names, 4, 1, args, nargs, kwnames, values) < 0) return NULL;
    bool has_x = values[1] != NULL && values[1] != Py_None;
    bool has_y = values[2] != NULL && values[2] != Py_None;
    if (has_x != has_y) {
        PyErr_SetString(PyExc_ValueError, "where(): x and y must both be given or both be None");
        return NULL;
    }
    if (!has_x) {
        PyErr_SetString(tpy_error_class(TP_UNIMPLEMENTED),
                        "where(condition) without x and y (the indices of the true elements) "
                        "needs the Where op, which tensorplug lacks");
        return NULL;
    }
    tp_tensor_t *inputs[3];
    if (tpy_to_tensor(values[0], TP_BOOL, &inputs[0]) < 0) return NULL;
    if (tpy_binary_args(values[1], values[2], &inputs[1], &inputs[2]) < 0) {
        tp_tensor_release(inputs[0]);
        return NULL;
    }
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_big(inputs, 3),
            tp_select(tpy_context(), inputs[0], inputs[1], inputs[2], &out));
    for (int i = 0; i < 3; i++) tp_tensor_release(inputs[i]);
    return tpy_result(status, out);
}

/* x reshaped to `shape` (a new reference in *out). */
static int reshaped(tp_tensor_t *x, tp_shape_t shape, tp_tensor_t **out) {
    return tpy_check(tp_reshape(tpy_context(), x, shape, out));
}

/* x's shape with a dimension of size 1 inserted at `axis` in [-rank - 1, rank]. */
static int expanded_shape(const char *function, tp_tensor_t *x, int64_t axis, tp_shape_t *out) {
    tp_shape_t shape = tp_tensor_shape(x);
    if (shape.rank >= TP_MAX_RANK || tpy_axis(function, axis, shape.rank + 1, &axis) < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                         "%s: a tensor of rank %d cannot take another dimension", function,
                         (int)shape.rank);
        return -1;
    }
    out->rank = shape.rank + 1;
    for (int32_t i = 0, j = 0; i < out->rank; i++)
        out->dims[i] = i == axis ? 1 : shape.dims[j++];
    return 0;
}

/* expand_dims(input, axis, name=None): a Reshape. */
static TPY_OP_SIGNATURE(expand_dims) {
    (void)self;
    static const char *const names[] = {"input", "axis", "name"};
    PyObject *values[3];
    if (tpy_parse("expand_dims", names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    int64_t axis;
    if (tpy_int_arg("expand_dims", "axis", values[1], &axis) < 0) return NULL;
    tp_tensor_t *x, *out = NULL;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    tp_shape_t shape;
    int result = expanded_shape("expand_dims", x, axis, &shape);
    if (result == 0) result = reshaped(x, shape, &out);
    tp_tensor_release(x);
    return result < 0 ? NULL : tpy_tensor_wrap(out);
}

/* squeeze(input, axis=None, name=None): a Reshape dropping the dimensions of size 1 (those
 * in axis, which must be 1). */
static TPY_OP_SIGNATURE(squeeze) {
    (void)self;
    static const char *const names[] = {"input", "axis", "name"};
    PyObject *values[3];
    if (tpy_parse("squeeze", names, 3, 1, args, nargs, kwnames, values) < 0) return NULL;
    int64_t axes[TP_MAX_RANK];
    int count = -1;
    if (values[1] != NULL && values[1] != Py_None &&
        tpy_int_list("squeeze", "axis", values[1], axes, TP_MAX_RANK, &count) < 0)
        return NULL;
    if (count == 0) count = -1; /* TensorFlow's squeeze_dims=[]: every dimension of size 1 */
    tp_tensor_t *x, *out = NULL;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    tp_shape_t shape = tp_tensor_shape(x), kept = {.rank = 0};
    bool drop[TP_MAX_RANK] = {false};
    int result = 0;
    for (int i = 0; i < count && result == 0; i++) {
        int64_t axis;
        result = tpy_axis("squeeze", axes[i], shape.rank, &axis);
        if (result == 0 && shape.dims[axis] != 1) {
            PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                         "squeeze: cannot squeeze dimension %lld of size %lld, not 1",
                         (long long)axes[i], (long long)shape.dims[axis]);
            result = -1;
        }
        if (result == 0) drop[axis] = true;
    }
    for (int32_t i = 0; i < shape.rank; i++)
        if (!(count < 0 ? shape.dims[i] == 1 : drop[i])) kept.dims[kept.rank++] = shape.dims[i];
    if (result == 0) result = reshaped(x, kept, &out);
    tp_tensor_release(x);
    return result < 0 ? NULL : tpy_tensor_wrap(out);
}

/* stack(values, axis=0, name='stack'): each value given a dimension of size 1 at axis, then
 * Concat along it. */
static TPY_OP_SIGNATURE(stack) {
    (void)self;
    static const char *const names[] = {"values", "axis", "name"};
    PyObject *values[3];
    if (tpy_parse("stack", names, 3, 1, args, nargs, kwnames, values) < 0) return NULL;
    int64_t axis = 0;
    if (values[1] != NULL && tpy_int_arg("stack", "axis", values[1], &axis) < 0) return NULL;
    tp_tensor_t **inputs = NULL;
    size_t count = 0;
    if (tpy_tensor_list("stack", values[0], &inputs, &count) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status = NULL;
    int result = 0;
    for (size_t i = 0; i < count && result == 0; i++) {
        tp_shape_t shape;
        tp_tensor_t *item = NULL;
        result = expanded_shape("stack", inputs[i], axis, &shape);
        if (result == 0) result = reshaped(inputs[i], shape, &item);
        tp_tensor_release(inputs[i]);
        inputs[i] = item;
    }
    if (result == 0) {
        if (axis < 0) axis += tp_tensor_shape(inputs[0]).rank;
        TPY_RUN(status, tpy_big(inputs, count),
                tp_concat(tpy_context(), inputs, count, axis, &out));
    }
    tpy_release_tensors(inputs, count);
    if (result < 0) return NULL;
    return tpy_result(status, out);
}

/* A host tensor of integers, made without an op, as TensorFlow's eager shape() gives one. */
static PyObject *host_integers(const char *function, PyObject *out_type, const int64_t *values,
                               int count, bool scalar) {
    tp_dtype_t dtype = TP_INT32;
    if (out_type != NULL && tpy_dtype_from_object(out_type, &dtype) < 0) return NULL;
    if (dtype != TP_INT32 && dtype != TP_INT64) {
        PyErr_Format(PyExc_TypeError, "%s(): out_type must be int32 or int64, not %s", function,
                     tp_dtype_name(dtype));
        return NULL;
    }
    int32_t narrow[TP_MAX_RANK];
    for (int i = 0; i < count; i++) {
        if (dtype == TP_INT32 && values[i] > INT32_MAX) {
            PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                         "%s: %lld does not fit in int32; out_type=tp.int64 holds it", function,
                         (long long)values[i]);
            return NULL;
        }
        narrow[i] = (int32_t)values[i];
    }
    tp_shape_t shape = scalar ? TP_SCALAR_SHAPE : TP_SHAPE(count);
    tp_tensor_t *out = NULL;
    size_t size = (size_t)count * (dtype == TP_INT32 ? 4 : 8);
    const void *data = dtype == TP_INT32 ? (const void *)narrow : (const void *)values;
    tp_status_t *status = tp_tensor_create(tpy_context(), dtype, shape, data, size, &out);
    return tpy_result(status, out);
}

/* shape(input, out_type=tp.int32, name=None), size(input, out_type=tp.int32, name=None) and
 * rank(input, name=None). */
static PyObject *measure(const char *function, int what, PyObject *const *args,
                         Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"input", "out_type", "name"};
    static const char *const rank_names[] = {"input", "name"};
    PyObject *values[3] = {NULL};
    if (what == 2 ? tpy_parse(function, rank_names, 2, 1, args, nargs, kwnames, values) < 0
                  : tpy_parse(function, names, 3, 1, args, nargs, kwnames, values) < 0)
        return NULL;
    if (what == 2) values[1] = NULL;
    tp_tensor_t *x;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    tp_shape_t shape = tp_tensor_shape(x);
    int64_t single = what == 1 ? tp_tensor_num_elements(x) : shape.rank;
    tp_tensor_release(x);
    if (what == 0) return host_integers(function, values[1], shape.dims, shape.rank, false);
    return host_integers(function, values[1], &single, 1, true);
}

static TPY_OP_SIGNATURE(shape) {
    (void)self;
    return measure("shape", 0, args, nargs, kwnames);
}

static TPY_OP_SIGNATURE(size) {
    (void)self;
    return measure("size", 1, args, nargs, kwnames);
}

static TPY_OP_SIGNATURE(rank) {
    (void)self;
    return measure("rank", 2, args, nargs, kwnames);
}

static PyMethodDef functions[] = {
    TPY_OP_ENTRY(reshape, "reshape(tensor, shape, name=None): one dimension may be -1."),
    TPY_OP_ENTRY(transpose, "transpose(a, perm=None, conjugate=False, name='transpose')."),
    TPY_OP_ENTRY(zeros, "zeros(shape, dtype=tp.float32, name=None)."),
    TPY_OP_ENTRY(ones, "ones(shape, dtype=tp.float32, name=None)."),
    TPY_OP_ENTRY(fill, "fill(dims, value, name=None)."),
    TPY_OP_ENTRY(concat, "concat(values, axis, name='concat')."),
    TPY_OP_ENTRY(slice, "slice(input_, begin, size, name=None)."),
    TPY_OP_ENTRY(strided_slice, "strided_slice(input_, begin, end, strides=None, *masks)."),
    TPY_OP_ENTRY(gather, "gather(params, indices, validate_indices=None, axis=None, "
                         "batch_dims=0, name=None)."),
    TPY_OP_ENTRY(unsorted_segment_sum,
                 "unsorted_segment_sum(data, segment_ids, num_segments, name=None)."),
    TPY_OP_ENTRY(one_hot, "one_hot(indices, depth, on_value=None, off_value=None, axis=None, "
                          "dtype=None, name=None)."),
    TPY_OP_ENTRY(pad, "pad(tensor, paddings, mode='CONSTANT', constant_values=0, name=None)."),
    TPY_OP_ENTRY(tile, "tile(input, multiples, name=None)."),
    TPY_OP_ENTRY(where, "where(condition, x=None, y=None, name=None)."),
    TPY_OP_ENTRY(expand_dims, "expand_dims(input, axis, name=None)."),
    TPY_OP_ENTRY(squeeze, "squeeze(input, axis=None, name=None)."),
    TPY_OP_ENTRY(stack, "stack(values, axis=0, name='stack')."),
    TPY_OP_ENTRY(shape, "shape(input, out_type=tp.int32, name=None): the dimensions."),
    TPY_OP_ENTRY(size, "size(input, out_type=tp.int32, name=None): the number of elements."),
    TPY_OP_ENTRY(rank, "rank(input, name=None): the number of dimensions."),
    {NULL, NULL, 0, NULL},
};

int tpy_init_ops_array(PyObject *module) { return PyModule_AddFunctions(module, functions); }
