/* SPDX-License-Identifier: Apache-2.0 */
/* t[...] as TensorFlow reads it: ints, slices, Ellipsis and None (tp.newaxis), in any mix, made
 * into one StridedSlice with its masks; len(t) and iteration over the first dimension. */
#include "tensor_protocols.h"

/* TensorFlow's words for an index it does not take. */
static PyObject *invalid_index(PyObject *entry) {
    PyErr_Format(PyExc_TypeError,
                 "Only integers, slices (`:`), ellipsis (`...`), tp.newaxis (`None`) and "
                 "scalar tp.int32/tp.int64 tensors are valid indices, got %R",
                 entry);
    return NULL;
}

/* An int, a NumPy integer or a scalar integer Tensor as an index, in *out; 0 when `entry` is
 * none of them (nothing raised), -1 on failure. Python's bool is refused, as in TensorFlow. */
static int integer_index(PyObject *entry, int64_t *out) {
    if (PyBool_Check(entry)) return 0;
    if (TPY_TENSOR_CHECK(entry)) {
        tp_tensor_t *tensor = TPY_TENSOR(entry);
        tp_dtype_t dtype = tp_tensor_dtype(tensor);
        if (tp_tensor_shape(tensor).rank != 0 || (dtype != TP_INT32 && dtype != TP_INT64))
            return 0;
    } else if (!PyIndex_Check(entry)) {
        return 0;
    }
    PyObject *index = PyNumber_Index(entry);
    if (index == NULL) return -1;
    /* Beyond int64 it is out of any dimension's range: clamped, it fails as such. */
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (value == -1 && PyErr_Occurred()) return -1;
    *out = overflow > 0 ? INT64_MAX : overflow < 0 ? INT64_MIN : (int64_t)value;
    return 1;
}

/* A slice bound or step: None leaves *out as it is (the caller sets a mask instead). */
static int slice_part(PyObject *part, int64_t *out) {
    if (part == Py_None) return 0;
    int found = integer_index(part, out);
    if (found < 0) return -1;
    if (found == 0) {
        invalid_index(part);
        return -1;
    }
    return 0;
}

typedef struct slice_spec {
    size_t count;
    int64_t begin[TP_MAX_RANK * 2 + 1], end[TP_MAX_RANK * 2 + 1], strides[TP_MAX_RANK * 2 + 1];
    tp_strided_slice_masks_t masks;
} slice_spec_t;

/* Reads the entries of `key` (a tuple, or one entry) into `spec`. */
static int read_key(PyObject *key, slice_spec_t *spec) {
    PyObject *entries = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (entries == NULL) return -1;
    Py_ssize_t count = PyTuple_GET_SIZE(entries);
    int result = 0;
    if ((size_t)count > sizeof spec->begin / sizeof spec->begin[0]) {
        PyErr_Format(PyExc_ValueError, "an index of %zd entries; at most %d are taken", count,
                     (int)(sizeof spec->begin / sizeof spec->begin[0]));
        result = -1;
    }
    spec->count = (size_t)count;
    for (Py_ssize_t i = 0; i < count && result == 0; i++) {
        PyObject *entry = PyTuple_GET_ITEM(entries, i);
        int64_t bit = (int64_t)1 << i;
        spec->begin[i] = 0;
        spec->end[i] = 0;
        spec->strides[i] = 1;
        if (entry == Py_Ellipsis) {
            if (spec->masks.ellipsis_mask != 0) {
                PyErr_SetString(PyExc_ValueError, "an index can only have a single ellipsis "
                                "('...')");
                result = -1;
            }
            spec->masks.ellipsis_mask |= bit;
        } else if (entry == Py_None) {
            spec->masks.new_axis_mask |= bit;
        } else if (PySlice_Check(entry)) {
            PySliceObject *slice = (PySliceObject *)entry;
            if (slice_part(slice->start, &spec->begin[i]) < 0 ||
                slice_part(slice->stop, &spec->end[i]) < 0 ||
                slice_part(slice->step, &spec->strides[i]) < 0) {
                result = -1;
            } else if (spec->strides[i] == 0) {
                PyErr_SetString(PyExc_ValueError, "slice step cannot be zero");
                result = -1;
            }
            if (slice->start == Py_None) spec->masks.begin_mask |= bit;
            if (slice->stop == Py_None) spec->masks.end_mask |= bit;
        } else {
            int found = integer_index(entry, &spec->begin[i]);
            if (found == 0) invalid_index(entry);
            if (found <= 0) {
                result = -1;
            } else {
                /* end is begin + 1 except for -1, whose end (0) the shrink mask ignores. */
                spec->end[i] = spec->begin[i] == -1 ? 0 : spec->begin[i] + 1;
                spec->masks.shrink_axis_mask |= bit;
            }
        }
    }
    Py_DECREF(entries);
    return result;
}

/* An int entry outside its dimension fails in TensorFlow's words, which name the index and
 * the dimension: the entries before an ellipsis (or all, without one) name dimensions from
 * the first, those after it from the last. */
static int check_single_indices(const slice_spec_t *spec, tp_shape_t shape) {
    size_t ellipsis = spec->count;
    int32_t selecting_after = 0;
    for (size_t i = 0; i < spec->count; i++)
        if ((spec->masks.ellipsis_mask >> i) & 1) ellipsis = i;
    for (size_t i = ellipsis + 1; i < spec->count; i++)
        if (!((spec->masks.new_axis_mask >> i) & 1)) selecting_after++;
    int32_t dimension = 0;
    for (size_t i = 0; i < spec->count; i++) {
        if (i == ellipsis) {
            dimension = shape.rank - selecting_after;
            continue;
        }
        if ((spec->masks.new_axis_mask >> i) & 1) continue;
        if (((spec->masks.shrink_axis_mask >> i) & 1) && dimension >= 0 && dimension < shape.rank) {
            int64_t size = shape.dims[dimension], index = spec->begin[i];
            if (index >= size || index < -size) {
                PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                             "slice index %lld of dimension %d out of bounds.",
                             (long long)index, (int)dimension);
                return -1;
            }
        }
        dimension++;
    }
    return 0;
}

static PyObject *subscript(PyObject *self, PyObject *key) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    slice_spec_t spec = {0};
    if (read_key(key, &spec) < 0) return NULL;
    tp_tensor_t *tensor = TPY_TENSOR(self);
    if (check_single_indices(&spec, tp_tensor_shape(tensor)) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_strided_slice(context, tensor, spec.begin, spec.end, spec.strides, spec.count,
                              &spec.masks, &out);
    Py_END_ALLOW_THREADS
    if (status != NULL) return tpy_raise(status);
    return tpy_tensor_wrap(out);
}

static Py_ssize_t length(PyObject *self) {
    tp_shape_t shape = tp_tensor_shape(TPY_TENSOR(self));
    if (shape.rank == 0) {
        PyErr_SetString(PyExc_TypeError, "Scalar tensor has no `len()`");
        return -1;
    }
    return (Py_ssize_t)shape.dims[0];
}

PyMappingMethods tpy_tensor_as_mapping = {
    .mp_length = length,
    .mp_subscript = subscript,
};

/* ---- Iteration: t[0], t[1], ... over the first dimension ------------------------------------- */

typedef struct iterator_object {
    PyObject_HEAD
    PyObject *tensor;
    Py_ssize_t next, count;
} iterator_object;

static PyTypeObject iterator_type;

PyObject *tpy_tensor_iter(PyObject *self) {
    tp_shape_t shape = tp_tensor_shape(TPY_TENSOR(self));
    if (shape.rank == 0) {
        PyErr_SetString(PyExc_TypeError, "Cannot iterate over a scalar tensor.");
        return NULL;
    }
    iterator_object *iterator = PyObject_GC_New(iterator_object, &iterator_type);
    if (iterator == NULL) return NULL;
    iterator->tensor = Py_NewRef(self);
    iterator->next = 0;
    iterator->count = (Py_ssize_t)shape.dims[0];
    PyObject_GC_Track(iterator);
    return (PyObject *)iterator;
}

static PyObject *iterator_next(PyObject *self) {
    iterator_object *iterator = (iterator_object *)self;
    if (iterator->tensor == NULL || iterator->next >= iterator->count) return NULL;
    PyObject *index = PyLong_FromSsize_t(iterator->next++);
    if (index == NULL) return NULL;
    PyObject *item = subscript(iterator->tensor, index);
    Py_DECREF(index);
    return item;
}

static void iterator_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Py_CLEAR(((iterator_object *)self)->tensor);
    PyObject_GC_Del(self);
}

static int iterator_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((iterator_object *)self)->tensor);
    return 0;
}

static PyTypeObject iterator_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.TensorIterator",
    .tp_basicsize = sizeof(iterator_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = iterator_dealloc,
    .tp_traverse = iterator_traverse,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = iterator_next,
};

int tpy_init_tensor_indexing(PyObject *module) {
    (void)module;
    return PyType_Ready(&iterator_type);
}
