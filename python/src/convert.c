/* SPDX-License-Identifier: Apache-2.0 */
/* Python values to tensors: scalars directly, everything else through NumPy's reading of it
 * (nested lists, arrays, anything with the buffer protocol or __array__). */
#include <math.h>
#include <string.h>

#include "tpy.h"

static PyObject *numpy_module;

static PyObject *numpy(void) {
    if (numpy_module == NULL) numpy_module = PyImport_ImportModule("numpy");
    return numpy_module;
}

/* Makes the tensor on the host's CPU:0, as an eager tf.constant is made: no op runs (so none is
 * logged), and an op under a device scope copies it where it runs. */
static int make_constant(tp_dtype_t dtype, tp_shape_t shape, const void *data, size_t size,
                         tp_tensor_t **out) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return -1;
    return tpy_check(tp_tensor_create(context, dtype, shape, data, size, out));
}

static int value_does_not_fit(PyObject *object, tp_dtype_t dtype) {
    PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT), "%R does not fit in a tensor of dtype %s",
                 object, tp_dtype_name(dtype));
    return -1;
}

/* A Python bool, int or float as a scalar of `dtype` (inferred when invalid); 1 if `object` is
 * none of them, so that the caller goes on. */
static int scalar_tensor(PyObject *object, tp_dtype_t dtype, tp_tensor_t **out) {
    double real;
    long long integer = 0;
    bool is_int = false;
    if (PyBool_Check(object)) {
        if (dtype == TP_DTYPE_INVALID) dtype = TP_BOOL;
        integer = object == Py_True;
        real = (double)integer;
        is_int = true;
    } else if (PyLong_CheckExact(object)) {
        int overflow = 0;
        integer = PyLong_AsLongLongAndOverflow(object, &overflow);
        if (integer == -1 && PyErr_Occurred()) return -1;
        if (overflow != 0) return dtype == TP_DTYPE_INVALID || dtype == TP_UINT64 ? 1
                                                                                : value_does_not_fit(object, dtype);
        if (dtype == TP_DTYPE_INVALID) dtype = integer == (int32_t)integer ? TP_INT32 : TP_INT64;
        real = (double)integer;
        is_int = true;
    } else if (PyFloat_CheckExact(object)) {
        if (dtype == TP_DTYPE_INVALID) dtype = TP_FLOAT32;
        real = PyFloat_AS_DOUBLE(object);
    } else {
        return 1;
    }
    union {
        float f32;
        double f64;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        bool b;
    } value;
    bool fits = true;
    switch (dtype) {
    case TP_FLOAT32: value.f32 = (float)real; break;
    case TP_FLOAT64: value.f64 = real; break;
    case TP_FLOAT16:
    case TP_BFLOAT16: {
        /* Made as float32 and cast, so that the runtime's rounding is the only one. */
        tp_tensor_t *wide;
        float f32 = (float)real;
        if (make_constant(TP_FLOAT32, TP_SCALAR_SHAPE, &f32, sizeof f32, &wide) < 0) return -1;
        tp_context_t *context = tpy_context();
        int result = tpy_check(tp_cast(context, wide, dtype, out));
        tp_tensor_release(wide);
        return result;
    }
    case TP_BOOL:
        fits = is_int ? (integer == 0 || integer == 1) : (real == 0.0 || real == 1.0);
        value.b = real != 0.0;
        break;
#define INTEGER_CASE(code, field, type, lo, hi)                                                \
    case code:                                                                                 \
        fits = is_int ? integer >= (lo) && integer <= (hi)                                     \
                      : real == floor(real) && real >= (double)(lo) && real <= (double)(hi);   \
        value.field = (type)(is_int ? integer : (long long)real);                              \
        break;
        INTEGER_CASE(TP_INT8, i8, int8_t, INT8_MIN, INT8_MAX)
        INTEGER_CASE(TP_INT16, i16, int16_t, INT16_MIN, INT16_MAX)
        INTEGER_CASE(TP_INT32, i32, int32_t, INT32_MIN, INT32_MAX)
        INTEGER_CASE(TP_INT64, i64, int64_t, INT64_MIN, INT64_MAX)
        INTEGER_CASE(TP_UINT8, u8, uint8_t, 0, UINT8_MAX)
        INTEGER_CASE(TP_UINT16, u16, uint16_t, 0, UINT16_MAX)
        INTEGER_CASE(TP_UINT32, u32, uint32_t, 0, UINT32_MAX)
        INTEGER_CASE(TP_UINT64, u64, uint64_t, 0, INT64_MAX)
#undef INTEGER_CASE
    default:
        PyErr_Format(PyExc_TypeError, "dtype %d is not a tensorplug dtype", (int)dtype);
        return -1;
    }
    if (!fits) return value_does_not_fit(object, dtype);
    return make_constant(dtype, TP_SCALAR_SHAPE, &value, tp_dtype_size(dtype), out);
}

/* The dtype of a buffer's struct format and item size; TP_DTYPE_INVALID when tensorplug holds
 * no such element. */
static tp_dtype_t dtype_of_format(const char *format, Py_ssize_t itemsize) {
    if (format == NULL) format = "B";
    if (*format == '<' || *format == '=' || *format == '@' || *format == '|') format++;
    if (format[0] == '\0' || format[1] != '\0') return TP_DTYPE_INVALID;
    switch (format[0]) {
    case 'f': return itemsize == 4 ? TP_FLOAT32 : TP_DTYPE_INVALID;
    case 'd': return itemsize == 8 ? TP_FLOAT64 : TP_DTYPE_INVALID;
    case 'e': return itemsize == 2 ? TP_FLOAT16 : TP_DTYPE_INVALID;
    case '?': return TP_BOOL;
    case 'b': case 'h': case 'i': case 'l': case 'q':
        return itemsize == 1 ? TP_INT8 : itemsize == 2 ? TP_INT16 : itemsize == 4 ? TP_INT32
               : itemsize == 8 ? TP_INT64 : TP_DTYPE_INVALID;
    case 'B': case 'H': case 'I': case 'L': case 'Q':
        return itemsize == 1 ? TP_UINT8 : itemsize == 2 ? TP_UINT16 : itemsize == 4 ? TP_UINT32
               : itemsize == 8 ? TP_UINT64 : TP_DTYPE_INVALID;
    default: return TP_DTYPE_INVALID;
    }
}

/* A tensor holding a copy of a C-contiguous NumPy array's values. */
static int array_tensor(PyObject *array, tp_tensor_t **out) {
    Py_buffer view;
    if (PyObject_GetBuffer(array, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    tp_dtype_t dtype = dtype_of_format(view.format, view.itemsize);
    int result = -1;
    if (dtype == TP_DTYPE_INVALID) {
        PyErr_Format(PyExc_TypeError, "an array of elements '%s' is not a tensorplug dtype",
                     view.format == NULL ? "B" : view.format);
    } else if (view.ndim > TP_MAX_RANK) {
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                     "an array of rank %d is over the largest rank, %d", view.ndim, TP_MAX_RANK);
    } else {
        tp_shape_t shape = {.rank = view.ndim};
        for (int i = 0; i < view.ndim; i++) shape.dims[i] = view.shape[i];
        result = make_constant(dtype, shape, view.buf, (size_t)view.len, out);
    }
    PyBuffer_Release(&view);
    return result;
}

/* NumPy's name of the dtype an array is made in to become a tensor of `dtype`. */
static const char *numpy_name(tp_dtype_t dtype) {
    return dtype == TP_BFLOAT16 ? "float32" : dtype == TP_BOOL ? "bool" : tp_dtype_name(dtype);
}

/* `object` as a C-contiguous NumPy array of the elements the tensor will hold (a new
 * reference in *out_array), and the tensor's dtype in *out_dtype: bfloat16 is held as float32
 * until the runtime casts it. */
static int to_array(PyObject *object, tp_dtype_t dtype, PyObject **out_array,
                    tp_dtype_t *out_dtype) {
    PyObject *np = numpy();
    if (np == NULL) return -1;
    bool from_array = PyObject_CheckBuffer(object) ||
                      PyObject_HasAttrString(object, "__array_interface__") ||
                      PyObject_HasAttrString(object, "__array__");
    PyObject *array = PyObject_CallMethod(np, "asarray", "O", object);
    if (array == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%R cannot be a tensor: it is not a number, a nested "
                     "list of numbers of one shape, or an array", object);
        return -1;
    }
    PyObject *kind_object = PyObject_GetAttrString(array, "dtype");
    PyObject *kind = kind_object == NULL ? NULL : PyObject_GetAttrString(kind_object, "kind");
    Py_XDECREF(kind_object);
    const char *kind_text = kind == NULL ? NULL : PyUnicode_AsUTF8(kind);
    if (kind_text == NULL) {
        Py_XDECREF(kind);
        Py_DECREF(array);
        return -1;
    }
    char k = kind_text[0];
    Py_DECREF(kind);
    if (strchr("biuf", k) == NULL) {
        PyErr_Format(PyExc_TypeError, "%R cannot be a tensor: its elements are not numbers "
                     "of one kind", object);
        Py_DECREF(array);
        return -1;
    }
    tp_dtype_t target = dtype;
    if (target == TP_DTYPE_INVALID && !from_array) {
        /* Python's numbers, as TensorFlow reads them: float32, and int32 where every value
         * fits. */
        if (k == 'f') target = TP_FLOAT32;
        if (k == 'i') {
            PyObject *low = PyObject_CallMethod(array, "min", NULL);
            PyObject *high = PyObject_CallMethod(array, "max", NULL);
            long long lo = low == NULL ? 0 : PyLong_AsLongLong(low);
            long long hi = high == NULL ? 0 : PyLong_AsLongLong(high);
            Py_XDECREF(low);
            Py_XDECREF(high);
            PyErr_Clear(); /* an empty array has no min: int32 */
            target = lo >= INT32_MIN && hi <= INT32_MAX ? TP_INT32 : TP_INT64;
        }
    }
    if (target != TP_DTYPE_INVALID) {
        PyObject *converted = PyObject_CallMethod(array, "astype", "s", numpy_name(target));
        if (converted == NULL) {
            Py_DECREF(array);
            return -1;
        }
        /* A value the conversion changed does not fit (300 as uint8, 0.5 as int32). */
        if (k != 'f' || (target != TP_FLOAT32 && target != TP_FLOAT64 && target != TP_FLOAT16 &&
                         target != TP_BFLOAT16)) {
            PyObject *same = PyObject_CallMethod(np, "array_equal", "OO", converted, array);
            int equal = same == NULL ? -1 : PyObject_IsTrue(same);
            Py_XDECREF(same);
            if (equal <= 0) {
                Py_DECREF(converted);
                Py_DECREF(array);
                return equal < 0 ? -1 : value_does_not_fit(object, target);
            }
        }
        Py_SETREF(array, converted);
    }
    /* numpy.require, not ascontiguousarray, which makes a 0-d array (numpy.float32(2)) 1-d. */
    PyObject *contiguous = PyObject_CallMethod(np, "require", "OOs", array, Py_None, "C");
    Py_DECREF(array);
    if (contiguous == NULL) return -1;
    *out_array = contiguous;
    *out_dtype = target;
    return 0;
}

/* The tensor of an array made by to_array. */
static int tensor_of_array(PyObject *array, tp_dtype_t dtype, tp_tensor_t **out) {
    tp_tensor_t *made = NULL;
    if (array_tensor(array, &made) < 0) return -1;
    if (dtype != TP_BFLOAT16) {
        *out = made;
        return 0;
    }
    int result = tpy_check(tp_cast(tpy_context(), made, TP_BFLOAT16, out));
    tp_tensor_release(made);
    return result;
}

int tpy_to_tensor(PyObject *object, tp_dtype_t dtype, tp_tensor_t **out) {
    if (TPY_TENSOR_CHECK(object)) {
        tp_tensor_t *tensor = TPY_TENSOR(object);
        if (dtype != TP_DTYPE_INVALID && dtype != tp_tensor_dtype(tensor)) {
            PyErr_Format(PyExc_TypeError,
                         "a tensor of dtype %s where one of dtype %s is asked for; "
                         "tp.cast converts it",
                         tp_dtype_name(tp_tensor_dtype(tensor)), tp_dtype_name(dtype));
            return -1;
        }
        *out = tp_tensor_retain(tensor);
        return 0;
    }
    tp_tensor_t *value;
    int is_variable = tpy_variable_value(object, &value);
    if (is_variable < 0) return -1;
    if (is_variable) {
        if (dtype == TP_DTYPE_INVALID || dtype == tp_tensor_dtype(value)) {
            *out = value;
            return 0;
        }
        PyErr_Format(PyExc_TypeError, "a variable of dtype %s where dtype %s is asked for",
                     tp_dtype_name(tp_tensor_dtype(value)), tp_dtype_name(dtype));
        tp_tensor_release(value);
        return -1;
    }
    int scalar = scalar_tensor(object, dtype, out);
    if (scalar <= 0) return scalar;
    PyObject *array;
    if (to_array(object, dtype, &array, &dtype) < 0) return -1;
    int result = tensor_of_array(array, dtype, out);
    Py_DECREF(array);
    return result;
}

int tpy_to_tensor_like(PyObject *object, tp_tensor_t *other, tp_tensor_t **out) {
    if (PyFloat_CheckExact(object) || PyLong_CheckExact(object) || PyBool_Check(object))
        return tpy_to_tensor(object, tp_tensor_dtype(other), out);
    return tpy_to_tensor(object, TP_DTYPE_INVALID, out);
}

/* constant(value, dtype=None, shape=None, name=None): tf.constant. With `shape`, a scalar
 * value fills it and a value of as many elements is reshaped to it. `name` is accepted and, as
 * in eager TensorFlow, not used. */
static PyObject *constant(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *keywords[] = {"value", "dtype", "shape", "name", NULL};
    PyObject *value, *dtype_object = Py_None, *shape_object = Py_None, *name = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO:constant", keywords, &value,
                                     &dtype_object, &shape_object, &name))
        return NULL;
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    if (tpy_dtype_from_object(dtype_object, &dtype) < 0) return NULL;
    tp_tensor_t *tensor = NULL;
    if (shape_object == Py_None) {
        if (tpy_to_tensor(value, dtype, &tensor) < 0) return NULL;
        return tpy_tensor_wrap(tensor);
    }
    /* The values are shaped on the host, so that no op runs: a value of as many elements is
     * reshaped, a single value fills the shape. */
    PyObject *values = TPY_TENSOR_CHECK(value) ? PyObject_CallMethod(value, "numpy", NULL)
                                               : Py_NewRef(value);
    if (values == NULL) return NULL;
    PyObject *array;
    int converted = to_array(values, dtype, &array, &dtype);
    Py_DECREF(values);
    if (converted < 0) return NULL;
    PyObject *shaped = NULL;
    PyObject *size = PyObject_GetAttrString(array, "size");
    Py_ssize_t count = size == NULL ? -1 : PyLong_AsSsize_t(size);
    Py_XDECREF(size);
    if (count == 1) {
        PyObject *element_type = PyObject_GetAttrString(array, "dtype");
        PyObject *single = PyObject_CallMethod(array, "reshape", "(())");
        if (element_type != NULL && single != NULL)
            shaped = PyObject_CallMethod(numpy(), "full", "OOO", shape_object, single,
                                         element_type);
        Py_XDECREF(element_type);
        Py_XDECREF(single);
    } else if (count >= 0) {
        shaped = PyObject_CallMethod(array, "reshape", "O", shape_object);
        if (shaped == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "Eager execution of tp.constant with unsupported "
                         "shape: a value of %zd elements cannot have shape %R", count,
                         shape_object);
        }
    }
    Py_DECREF(array);
    if (shaped == NULL) return NULL;
    int result = tensor_of_array(shaped, dtype, &tensor);
    Py_DECREF(shaped);
    return result < 0 ? NULL : tpy_tensor_wrap(tensor);
}

static PyMethodDef module_functions[] = {
    {"constant", (PyCFunction)(void (*)(void))constant, METH_VARARGS | METH_KEYWORDS,
     "constant(value, dtype=None, shape=None, name=None): a tensor holding a copy of value."},
    {NULL, NULL, 0, NULL},
};

int tpy_init_convert(PyObject *module) { return PyModule_AddFunctions(module, module_functions); }
