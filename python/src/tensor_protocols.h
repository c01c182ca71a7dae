/* SPDX-License-Identifier: Apache-2.0 */
/* The Python protocols of tp.Tensor, each in a file of its own, gathered by tensor.c into the
 * type: operators and comparisons (tensor_operators.c), indexing, len and iteration
 * (tensor_indexing.c), the buffer protocol and __array__ (tensor_buffer.c) and DLPack
 * (dlpack.c). Internal to the extension; tpy.h is the shared API. */
#ifndef TENSORPLUG_PYTHON_TENSOR_PROTOCOLS_H
#define TENSORPLUG_PYTHON_TENSOR_PROTOCOLS_H

#include "tpy.h"

/* tensor_operators.c: + - * / @ ** -x +x abs(x), bool(), int(), float(), index(); comparisons
 * element-wise (TensorFlow 2), so that a Tensor is unhashable and ref() gives a key. */
extern PyNumberMethods tpy_tensor_as_number;
PyObject *tpy_tensor_richcompare(PyObject *self, PyObject *other, int op);
Py_hash_t tpy_tensor_hash(PyObject *self);
PyObject *tpy_tensor_ref(PyObject *self, PyObject *unused);
int tpy_init_tensor_operators(PyObject *module);

/* tensor_indexing.c: t[...] through one StridedSlice, len(t), iter(t). */
extern PyMappingMethods tpy_tensor_as_mapping;
PyObject *tpy_tensor_iter(PyObject *self);
int tpy_init_tensor_indexing(PyObject *module);

/* tensor_buffer.c: the read-only buffer of a CPU tensor's own memory, and __array__. */
extern PyBufferProcs tpy_tensor_as_buffer;
PyObject *tpy_tensor_array(PyObject *self, PyObject *args, PyObject *kwargs);

/* dlpack.c: __dlpack__, __dlpack_device__ and the module's from_dlpack. */
PyObject *tpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *tpy_tensor_dlpack_device(PyObject *self, PyObject *unused);
int tpy_init_dlpack(PyObject *module);
/* Gives imported memory the runtime has let go of back to its producers; called with the GIL
 * held and no runtime lock, as after a tensor's release. */
void tpy_dlpack_give_back(void);

/* tensor.c: numpy(), a copy of the values (a NumPy scalar for a scalar tensor, as TensorFlow
 * gives). */
PyObject *tpy_tensor_numpy(PyObject *self, PyObject *unused);

#endif
