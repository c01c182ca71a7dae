/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the extension module _tensorplug share. The module is a thin layer over
 * the public C API (tensorplug.h, training.h): it holds one process-wide context, made when
 * `import tensorplug` calls _initialize, and turns statuses into exceptions and tp_tensor_t
 * into Tensor objects. It adds no second runtime: every op is the C API's.
 *
 * Conventions: a function returning int gives 0 on success and -1 with a Python exception set;
 * one returning a pointer gives NULL with an exception set. Each file that adds functions or
 * types to the module has an init function, called by module.c in the order listed below.
 */
#ifndef TENSORPLUG_PYTHON_TPY_H
#define TENSORPLUG_PYTHON_TPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <tensorplug/tensorplug.h>
#include <tensorplug/training.h>

/* ---- The context (module.c) ------------------------------------------------------------------ */

/* The process's context; NULL with RuntimeError set before _initialize has run. */
tp_context_t *tpy_context(void);

/* ---- Errors (errors.c) ----------------------------------------------------------------------- */

/* Raises the exception for `status` (tp.errors' class for its code, carrying its message) and
 * frees the status. Returns NULL, for `return tpy_raise(status);`. */
PyObject *tpy_raise(tp_status_t *status);
/* 0 for a NULL status; otherwise tpy_raise and -1. */
int tpy_check(tp_status_t *status);
/* The exception class of a code (a borrowed reference). */
PyObject *tpy_error_class(tp_code_t code);
int tpy_init_errors(PyObject *module);

/* ---- Element types (dtype.c) ----------------------------------------------------------------- */

/* tp.float32 and its kind: a DType object, an immutable value with `name`, `size`,
 * `is_floating`, `is_integer`, `is_bool`, `as_numpy_dtype`; it compares equal to its name and to
 * the NumPy dtype of the same name. */
typedef struct tpy_dtype_object {
    PyObject_HEAD
    tp_dtype_t dtype;
} tpy_dtype_object;
extern PyTypeObject tpy_dtype_type;

/* The DType object of `dtype` (a new reference). */
PyObject *tpy_dtype_object_of(tp_dtype_t dtype);
/* Reads a dtype given as a DType, a name ("float32"), a NumPy dtype or scalar type, or Python's
 * float, int and bool (float32, int32, bool, as TensorFlow reads them). None leaves *out as
 * it is and returns 0, so that a caller can preset its default. */
int tpy_dtype_from_object(PyObject *object, tp_dtype_t *out);
/* float16, bfloat16, float32 or float64: DType.is_floating. */
bool tpy_dtype_is_floating(tp_dtype_t dtype);
int tpy_init_dtypes(PyObject *module);

/* ---- Tensors (tensor.c) ---------------------------------------------------------------------- */

typedef struct tpy_tensor_object {
    PyObject_HEAD
    tp_tensor_t *tensor;
    PyObject *weakrefs;
} tpy_tensor_object;
extern PyTypeObject tpy_tensor_type;

#define TPY_TENSOR_CHECK(object) PyObject_TypeCheck((object), &tpy_tensor_type)
#define TPY_TENSOR(object) (((tpy_tensor_object *)(object))->tensor)

/* A Tensor holding `tensor`, whose reference it takes over (released on failure too). */
PyObject *tpy_tensor_wrap(tp_tensor_t *tensor);
/* Waits for the tensor's values with the GIL released, so that other Python threads run
 * while a device works. */
int tpy_tensor_wait(tp_tensor_t *tensor);
int tpy_init_tensor(PyObject *module);

/* ---- Conversion of Python values to tensors (convert.c) -------------------------------------- */

/*
 * A tensor for `object` (a new reference in *out): a Tensor as it is (cast if `dtype` differs
 * and `cast` allows), a Python bool, int or float, a nested sequence of them, or anything with
 * the buffer protocol or __array__ (NumPy arrays, of any dtype tensorplug holds). `dtype`
 * TP_DTYPE_INVALID infers it as TensorFlow does: Python floats give float32, ints int32 (int64
 * when one does not fit), bools bool; arrays keep their own. A value that does not fit the
 * dtype asked for fails with InvalidArgumentError naming it. The tensor is made by the Const
 * op, so it lands on the device of the current tp.device scope, as tf.constant's does.
 */
int tpy_to_tensor(PyObject *object, tp_dtype_t dtype, tp_tensor_t **out);
/* The same, for an operand beside `other`: a Python scalar takes other's dtype (so that
 * `x * 2` keeps x float32 and `i + 1` keeps i int64), as TensorFlow's operators do. */
int tpy_to_tensor_like(PyObject *object, tp_tensor_t *other, tp_tensor_t **out);
int tpy_init_convert(PyObject *module);

/* ---- Running ops (execute.c) ----------------------------------------------------------------- */

/* Runs op `op` through tp_execute with the GIL released when the inputs are large enough for
 * the wait to matter, and wraps its `num_outputs` results: one Tensor, or a tuple of them
 * when num_outputs > 1. */
PyObject *tpy_execute(const char *op, tp_tensor_t *const *inputs, size_t num_inputs,
                      const tp_attr_t *attrs, size_t num_attrs, size_t num_outputs);
/* Calls a typed op function of the C API (tp_relu and the like) on converted inputs and wraps
 * the result. */
typedef tp_status_t *(*tpy_unary_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t **);
typedef tp_status_t *(*tpy_binary_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t *,
                                      tp_tensor_t **);
/* Whether a call on these tensors (NULL entries skipped) may take long enough that the GIL
 * is worth releasing around it: large inputs, or one still pending on a device. */
bool tpy_may_wait(tp_tensor_t *const *tensors, size_t count);
/* status = call, with the GIL released when `wait` (tpy_may_wait of the call's inputs). */
#define TPY_RUN(status, wait, call)                                                            \
    do {                                                                                       \
        if (wait) {                                                                            \
            Py_BEGIN_ALLOW_THREADS status = (call);                                            \
            Py_END_ALLOW_THREADS                                                               \
        } else {                                                                               \
            status = (call);                                                                   \
        }                                                                                      \
    } while (0)
/* tp_cast, the GIL released when x may make it wait (a pending input on another device):
 * 0, or -1 with the exception set. */
int tpy_cast(tp_tensor_t *x, tp_dtype_t dtype, tp_tensor_t **out);
PyObject *tpy_call_unary(tpy_unary_fn fn, PyObject *x);
PyObject *tpy_call_binary(tpy_binary_fn fn, PyObject *x, PyObject *y);

/* ---- Variables (variable.c) ------------------------------------------------------------------ */

extern PyTypeObject tpy_variable_type;
/* 1 and the variable's current value (a new reference) in *out when `object` is a tp.Variable;
 * 0 when it is not one; -1 on failure. tpy_to_tensor takes Variables through it. */
int tpy_variable_value(PyObject *object, tp_tensor_t **out);
/* The tp_variable_t of a tp.Variable (borrowed); NULL with TypeError for anything else. */
tp_variable_t *tpy_variable_handle(PyObject *object);
int tpy_init_variable(PyObject *module);

/* ---- Device configuration and scopes (config.c, device_scope.c) ------------------------------ */

/* tp.config's and tp.debugging's C calls (_physical_devices, _set_memory_growth, ...). */
int tpy_init_config(PyObject *module);
/* tp.device(name), the context manager over tp_device_push and tp_device_pop. */
int tpy_init_device_scope(PyObject *module);

/* ---- The ops under TensorFlow's names (ops_*.c; their shared helpers are in ops.h) ---------- */

int tpy_init_ops_math(PyObject *module);
int tpy_init_ops_array(PyObject *module);
int tpy_init_ops_nn(PyObject *module);
int tpy_init_ops_random(PyObject *module);
/* ---- Training: structures, tapes, traced functions (nest.c, tape.c, function.c) ------------- */

/* Appends the leaves of `structure` (lists, tuples, named tuples and dicts nest) to the list
 * `leaves`, in the order tpy_nest_pack reads them back. */
int tpy_nest_flatten(PyObject *structure, PyObject *leaves);
/* `structure` rebuilt with the items of the list `leaves` in place of its own leaves. */
PyObject *tpy_nest_pack(PyObject *structure, PyObject *leaves);
/* Tells the tapes recording on this thread that `variable` was read as `value`, so that
 * gradients with respect to the variable find the values it gave. `symbolic`: the value is a
 * tp.function's input standing for the variable while it traces; only tapes begun inside that
 * trace note it, and watch it (the C tape cannot know it for a variable's value). */
int tpy_tape_note_read(PyObject *variable, tp_tensor_t *value, bool symbolic);
int tpy_init_tape(PyObject *module);
/* Whether a tape begun outside any trace records on this thread now. */
bool tpy_tape_recording_eagerly(void);
/* Tells the tp.function tracing on this thread, if any, that its body made `tensor`: a tensor
 * the body made and did not return still runs (see function.c). Every wrapped tensor passes
 * here, so that with no trace in the process the cost is one test of a count the GIL guards. */
extern int tpy_traces_running;
void tpy_function_record_made(tp_tensor_t *tensor);
static inline void tpy_function_note_made(tp_tensor_t *tensor) {
    if (tpy_traces_running != 0) tpy_function_record_made(tensor);
}
/* While a tp.function traces on this thread: 1 with its input standing for `variable` (a new
 * reference) in *out; -1 with an exception set when the variable is not one of its inputs yet
 * (the function then traces again with it as one). 0 when no trace runs. */
int tpy_function_variable_value(PyObject *variable, tp_tensor_t **out);
/* What identifies the trace running on this thread; NULL when none. */
const void *tpy_function_tracing(void);
int tpy_init_function(PyObject *module);
int tpy_init_optimizer(PyObject *module);
/* The tp_optimizer_t of a tp.keras.optimizers optimizer (or of its _Optimizer), borrowed: valid
 * while the caller holds `object`; NULL with TypeError for anything else. A caller that hands
 * it variables to update (tp_fit_options_t.optimizer) calls tpy_optimizer_remember with them,
 * since the C optimizer knows them by address and they must outlive it. */
tp_optimizer_t *tpy_optimizer_handle(PyObject *object);
int tpy_optimizer_remember(PyObject *object, PyObject *variables);
/* A tp.Variable for `variable`, which `owner` owns and keeps alive (an optimizer's state). */
PyObject *tpy_variable_wrap_borrowed(tp_variable_t *variable, PyObject *owner, bool trainable);
/* ---- Probes for tests and benchmarks (diagnostics.c) ----------------------------------------- */

/* Live Tensor objects: tpy_tensor_wrap counts one up, the Tensor's dealloc one down (under the
 * GIL, so a plain count). */
extern Py_ssize_t tpy_live_tensors;
int tpy_init_diagnostics(PyObject *module);

/* ---- py-keras: MirroredStrategy (strategy.c) and Keras' steps (keras.c); strategy.h -------- */

int tpy_init_strategy(PyObject *module);
int tpy_init_keras(PyObject *module);

#endif /* TENSORPLUG_PYTHON_TPY_H */
