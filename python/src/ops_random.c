/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp.random.normal, tp.random.uniform and tp.random.set_seed, and the seeds of every random
 * op (tp.nn.dropout too). The C ops are pure functions of their seed; the sequence of seeds is
 * kept here, by this rule (tensorplug/random.py tells users):
 *
 * - A call without seed= draws the n-th seed of the process's sequence, n counting such calls.
 *   The sequence starts from the global seed set by tp.random.set_seed(s), so a program that
 *   sets it draws the same values at every run; without a global seed it starts from a value
 *   drawn at import, and each run differs.
 * - A call with seed=k draws the m-th seed of k's own sequence, m counting the calls with
 *   seed=k. It starts from the global seed, or from TensorFlow's default 87654321 when none
 *   is set, so seed=k alone is reproducible from run to run, as in TensorFlow.
 * - set_seed (any value, None included) restarts every sequence.
 */
#include <time.h>
#include <unistd.h>

#include "ops.h"

#define DEFAULT_GLOBAL_SEED 87654321

static bool has_global_seed;
static uint64_t global_seed;
static uint64_t process_seed;  /* the start without a global seed, drawn at import */
static uint64_t unseeded_calls;
static PyObject *seeded_calls; /* dict: op seed -> calls so far */

/* SplitMix64's finalizer: a bijection that spreads every input bit over the output. */
static uint64_t mix(uint64_t value) {
    value += UINT64_C(0x9e3779b97f4a7c15);
    value = (value ^ (value >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    value = (value ^ (value >> 27)) * UINT64_C(0x94d049bb133111eb);
    return value ^ (value >> 31);
}

static int64_t derive(uint64_t start, uint64_t stream, uint64_t n) {
    return (int64_t)(mix(mix(mix(start) ^ stream) ^ n) & (uint64_t)INT64_MAX);
}

int tpy_next_seed(PyObject *op_seed, int64_t *out) {
    if (op_seed == NULL || op_seed == Py_None) {
        uint64_t start = has_global_seed ? global_seed : process_seed;
        *out = derive(start, 0, unseeded_calls++);
        return 0;
    }
    int64_t k;
    if (tpy_int_arg("random", "seed", op_seed, &k) < 0) return -1;
    PyObject *key = PyLong_FromLongLong(k);
    if (key == NULL) return -1;
    PyObject *count = PyDict_GetItemWithError(seeded_calls, key);
    unsigned long long n = 0;
    if (count == NULL && PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    if (count != NULL) n = PyLong_AsUnsignedLongLong(count);
    PyObject *next = PyLong_FromUnsignedLongLong(n + 1);
    int stored = next == NULL ? -1 : PyDict_SetItem(seeded_calls, key, next);
    Py_XDECREF(next);
    Py_DECREF(key);
    if (stored < 0) return -1;
    uint64_t start = has_global_seed ? global_seed : DEFAULT_GLOBAL_SEED;
    *out = derive(start, mix((uint64_t)k) | 1, n);
    return 0;
}

/* set_seed(seed): the global seed; None clears it. */
static TPY_OP_SIGNATURE(set_seed) {
    (void)self;
    static const char *const names[] = {"seed"};
    PyObject *values[1];
    if (tpy_parse("set_seed", names, 1, 1, args, nargs, kwnames, values) < 0) return NULL;
    int64_t seed = 0;
    if (values[0] != Py_None && tpy_int_arg("set_seed", "seed", values[0], &seed) < 0)
        return NULL;
    has_global_seed = values[0] != Py_None;
    global_seed = (uint64_t)seed;
    unseeded_calls = 0;
    PyDict_Clear(seeded_calls);
    Py_RETURN_NONE;
}

static bool is_number(PyObject *object, double value) {
    return object == NULL ||
           ((PyFloat_CheckExact(object) || PyLong_CheckExact(object)) &&
            PyFloat_AsDouble(object) == value);
}

/* *x = *x op value, `value` a tensor-like taking x's dtype when it is a Python number. On
 * failure *x is released and NULL. */
static int apply(tpy_binary_fn fn, tp_tensor_t **x, PyObject *value) {
    tp_tensor_t *operand = NULL, *out = NULL;
    if (tpy_to_tensor_like(value, *x, &operand) < 0) {
        tp_tensor_release(*x);
        *x = NULL;
        return -1;
    }
    tp_tensor_t *inputs[2] = {*x, operand};
    tp_status_t *status;
    TPY_RUN(status, tpy_big(inputs, 2), fn(tpy_context(), *x, operand, &out));
    tp_tensor_release(operand);
    tp_tensor_release(*x);
    *x = out;
    return tpy_check(status);
}

/* A bound of uniform (NULL: `fallback`) as a tensor of x's dtype (a new reference). */
static int bound_tensor(PyObject *value, double fallback, tp_tensor_t *x, tp_tensor_t **out) {
    PyObject *number = value == NULL ? PyFloat_FromDouble(fallback) : Py_NewRef(value);
    if (number == NULL) return -1;
    tp_tensor_t *tensor = NULL;
    int result = tpy_to_tensor_like(number, x, &tensor);
    Py_DECREF(number);
    if (result < 0 || tp_tensor_dtype(tensor) == tp_tensor_dtype(x)) {
        *out = tensor;
        return result;
    }
    result = tpy_check(tp_cast(tpy_context(), tensor, tp_tensor_dtype(x), out));
    tp_tensor_release(tensor);
    return result;
}

/* maxval - minval as a Tensor of x's dtype, for bounds given as tensors. */
static PyObject *tensor_width(PyObject *minval, PyObject *maxval, tp_tensor_t *x) {
    tp_tensor_t *low = NULL, *high = NULL, *width = NULL;
    PyObject *result = NULL;
    if (bound_tensor(minval, 0.0, x, &low) == 0 && bound_tensor(maxval, 1.0, x, &high) == 0) {
        tp_status_t *status = tp_sub(tpy_context(), high, low, &width);
        result = tpy_result(status, width);
    }
    tp_tensor_release(low);
    tp_tensor_release(high);
    return result;
}

/* Reads shape, dtype and seed, the arguments every random op has. */
static int random_args(const char *function, PyObject *shape_object, PyObject *dtype_object,
                       PyObject *seed_object, tp_shape_t *shape, tp_dtype_t *dtype,
                       int64_t *seed) {
    if (tpy_shape_arg(function, "shape", shape_object, shape) < 0) return -1;
    *dtype = TP_FLOAT32;
    if (dtype_object != NULL && tpy_dtype_from_object(dtype_object, dtype) < 0) return -1;
    return tpy_next_seed(seed_object, seed);
}

/* normal(shape, mean=0.0, stddev=1.0, dtype=tp.float32, seed=None, name=None). */
static TPY_OP_SIGNATURE(normal) {
    (void)self;
    static const char *const names[] = {"shape", "mean", "stddev", "dtype", "seed", "name"};
    PyObject *values[6];
    if (tpy_parse("normal", names, 6, 1, args, nargs, kwnames, values) < 0) return NULL;
    tp_shape_t shape;
    tp_dtype_t dtype;
    int64_t seed;
    if (random_args("normal", values[0], values[3], values[4], &shape, &dtype, &seed) < 0)
        return NULL;
    if (dtype != TP_FLOAT32 && dtype != TP_FLOAT64 && dtype != TP_FLOAT16 &&
        dtype != TP_BFLOAT16) {
        PyErr_Format(PyExc_ValueError, "normal(): dtype must be a float dtype, not %s",
                     tp_dtype_name(dtype));
        return NULL;
    }
    tp_tensor_t *x = NULL;
    if (tpy_check(tp_random_normal(tpy_context(), dtype, shape, seed, &x)) < 0) return NULL;
    if (!is_number(values[2], 1.0) && apply(tp_mul, &x, values[2]) < 0) return NULL;
    if (!is_number(values[1], 0.0) && apply(tp_add, &x, values[1]) < 0) return NULL;
    return tpy_tensor_wrap(x);
}

/* uniform(shape, minval=0, maxval=None, dtype=tp.float32, seed=None, name=None): floats in
 * [minval, maxval) (maxval None: 1), or integers (int32, int64, maxval required) drawn as
 * floor(u * (maxval - minval)) + minval with u a float64 in [0, 1). */
static TPY_OP_SIGNATURE(uniform) {
    (void)self;
    static const char *const names[] = {"shape", "minval", "maxval", "dtype", "seed", "name"};
    PyObject *values[6];
    if (tpy_parse("uniform", names, 6, 1, args, nargs, kwnames, values) < 0) return NULL;
    tp_shape_t shape;
    tp_dtype_t dtype;
    int64_t seed;
    if (random_args("uniform", values[0], values[3], values[4], &shape, &dtype, &seed) < 0)
        return NULL;
    bool integer = dtype == TP_INT32 || dtype == TP_INT64;
    if (!integer && dtype != TP_FLOAT32 && dtype != TP_FLOAT64 && dtype != TP_FLOAT16 &&
        dtype != TP_BFLOAT16) {
        PyErr_Format(PyExc_ValueError, "uniform(): dtype must be a float dtype, int32 or "
                     "int64, not %s", tp_dtype_name(dtype));
        return NULL;
    }
    PyObject *minval = values[1], *maxval = values[2];
    if (maxval == Py_None) maxval = NULL;
    if (minval == Py_None) minval = NULL;
    if (integer && maxval == NULL) {
        PyErr_Format(PyExc_ValueError, "uniform(): maxval must be given for dtype %s",
                     tp_dtype_name(dtype));
        return NULL;
    }
    tp_context_t *context = tpy_context();
    tp_tensor_t *x = NULL;
    if (tpy_check(tp_random_uniform(context, integer ? TP_FLOAT64 : dtype, shape, seed, &x)) < 0)
        return NULL;
    bool unit = is_number(minval, 0.0) && is_number(maxval, 1.0);
    if (!unit) {
        /* The width, maxval - minval, in x's dtype; computed here for Python numbers, so that
         * the common call runs two ops and not three. */
        PyObject *width;
        double low = 0.0, high = 1.0;
        bool numbers = (minval == NULL || PyFloat_Check(minval) || PyLong_Check(minval)) &&
                       (maxval == NULL || PyFloat_Check(maxval) || PyLong_Check(maxval));
        if (numbers) {
            if ((minval != NULL && tpy_double_arg("uniform", "minval", minval, &low) < 0) ||
                (maxval != NULL && tpy_double_arg("uniform", "maxval", maxval, &high) < 0)) {
                tp_tensor_release(x);
                return NULL;
            }
            width = PyFloat_FromDouble(high - low);
        } else {
            width = tensor_width(minval, maxval, x);
        }
        if (width == NULL) {
            tp_tensor_release(x);
            return NULL;
        }
        int scaled = apply(tp_mul, &x, width);
        Py_DECREF(width);
        if (scaled < 0) return NULL;
    }
    if (integer) {
        /* u * width >= 0, so the cast's truncation is the floor. */
        tp_tensor_t *whole = NULL;
        tp_status_t *status = tp_cast(context, x, dtype, &whole);
        tp_tensor_release(x);
        if (tpy_check(status) < 0) return NULL;
        x = whole;
    }
    if (!is_number(minval, 0.0) && apply(tp_add, &x, minval) < 0) return NULL;
    return tpy_tensor_wrap(x);
}

static PyMethodDef functions[] = {
    {"random_set_seed", (PyCFunction)(void (*)(void))op_set_seed, METH_FASTCALL | METH_KEYWORDS,
     "set_seed(seed): the global random seed (None: none)."},
    {"random_normal", (PyCFunction)(void (*)(void))op_normal, METH_FASTCALL | METH_KEYWORDS,
     "normal(shape, mean=0.0, stddev=1.0, dtype=tp.float32, seed=None, name=None)."},
    {"random_uniform", (PyCFunction)(void (*)(void))op_uniform, METH_FASTCALL | METH_KEYWORDS,
     "uniform(shape, minval=0, maxval=None, dtype=tp.float32, seed=None, name=None)."},
    {NULL, NULL, 0, NULL},
};

int tpy_init_ops_random(PyObject *module) {
    seeded_calls = PyDict_New();
    if (seeded_calls == NULL) return -1;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    process_seed = mix((uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec) ^
                   mix((uint64_t)getpid());
    return PyModule_AddFunctions(module, functions);
}
