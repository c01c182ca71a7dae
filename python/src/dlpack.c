/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DLPack: tensors to and from NumPy, PyTorch and the rest without copies where the memory
 * allows. The structs are declared here from the DLPack specification's documented layout
 * (dlpack.h, the unversioned ABI of DLPack 0.x that NumPy 1.24 and PyTorch exchange in a
 * capsule named "dltensor"; a consumer renames it "used_dltensor" and calls the deleter when it
 * is done).
 *
 * Export (__dlpack__): a CPU tensor's own bytes; the managed tensor holds a reference to the
 * tensor, which its deleter releases, so it may run on any thread. Import (from_dlpack): a CPU
 * tensor of aligned, C-contiguous memory is borrowed (tp_tensor_create_borrowed) and the
 * producer's deleter runs once the runtime is done with it; anything else is copied.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_protocols.h"

/* ---- The DLPack ABI -------------------------------------------------------------------------- */

enum { DL_CPU = 1, DL_CUDA_HOST = 3, DL_EXT_DEV = 12 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6 };

typedef struct {
    int32_t device_type; /* DLDeviceType, an enum the size of an int */
    int32_t device_id;
} dl_device_t;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} dl_data_type_t;

typedef struct {
    void *data;
    dl_device_t device;
    int32_t ndim;
    dl_data_type_t dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: compact, row-major */
    uint64_t byte_offset;
} dl_tensor_t;

typedef struct dl_managed_tensor {
    dl_tensor_t dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed_tensor *self);
} dl_managed_tensor_t;

static const char capsule_name[] = "dltensor";
static const char used_capsule_name[] = "used_dltensor";

/* ---- Element types --------------------------------------------------------------------------- */

static dl_data_type_t dl_type_of(tp_dtype_t dtype) {
    uint8_t bits = (uint8_t)(tp_dtype_size(dtype) * 8);
    switch (dtype) {
    case TP_FLOAT32: case TP_FLOAT64: case TP_FLOAT16: return (dl_data_type_t){DL_FLOAT, bits, 1};
    case TP_BFLOAT16: return (dl_data_type_t){DL_BFLOAT, 16, 1};
    case TP_BOOL: return (dl_data_type_t){DL_BOOL, 8, 1};
    case TP_INT8: case TP_INT16: case TP_INT32: case TP_INT64:
        return (dl_data_type_t){DL_INT, bits, 1};
    default: return (dl_data_type_t){DL_UINT, bits, 1};
    }
}

static tp_dtype_t dtype_of_dl(dl_data_type_t type) {
    static const tp_dtype_t ints[] = {TP_INT8, TP_INT16, TP_INT32, TP_INT64};
    static const tp_dtype_t uints[] = {TP_UINT8, TP_UINT16, TP_UINT32, TP_UINT64};
    if (type.lanes != 1) return TP_DTYPE_INVALID;
    int width = type.bits == 8 ? 0 : type.bits == 16 ? 1 : type.bits == 32 ? 2
              : type.bits == 64 ? 3 : -1;
    switch (type.code) {
    case DL_INT: return width < 0 ? TP_DTYPE_INVALID : ints[width];
    case DL_UINT: return width < 0 ? TP_DTYPE_INVALID : uints[width];
    case DL_FLOAT:
        return type.bits == 16 ? TP_FLOAT16 : type.bits == 32 ? TP_FLOAT32
               : type.bits == 64 ? TP_FLOAT64 : TP_DTYPE_INVALID;
    case DL_BFLOAT: return type.bits == 16 ? TP_BFLOAT16 : TP_DTYPE_INVALID;
    case DL_BOOL: return type.bits == 8 ? TP_BOOL : TP_DTYPE_INVALID;
    default: return TP_DTYPE_INVALID;
    }
}

/* ---- Export ---------------------------------------------------------------------------------- */

/* The ordinal of a canonical device name's device, "/job:.../device:CPU:1" -> 1. */
static int32_t device_ordinal(const char *name) {
    const char *colon = strrchr(name, ':');
    return colon == NULL ? 0 : (int32_t)strtol(colon + 1, NULL, 10);
}

/* Whether the tensor lives on a CPU device (CPU:0 or a logical device split from it), whose
 * memory the host addresses. */
static bool on_host(tp_tensor_t *tensor) {
    return strstr(tp_tensor_device(tensor), "/device:CPU:") != NULL;
}

/* Releases the tensor: thread-safe, no GIL needed, as DLPack asks of a deleter. */
static void export_deleter(dl_managed_tensor_t *self) {
    tp_tensor_release(self->manager_ctx);
    free(self);
}

/* A capsule nobody consumed still owns its managed tensor. */
static void capsule_destructor(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, capsule_name)) return; /* consumed: "used_dltensor" */
    dl_managed_tensor_t *managed = PyCapsule_GetPointer(capsule, capsule_name);
    if (managed != NULL && managed->deleter != NULL) managed->deleter(managed);
}

/* __dlpack_device__(): (1, 0) for the CPU (kDLCPU); another device is kDLExtDev and its
 * ordinal, whose memory __dlpack__ does not export. */
PyObject *tpy_tensor_dlpack_device(PyObject *self, PyObject *unused) {
    (void)unused;
    tp_tensor_t *tensor = TPY_TENSOR(self);
    const char *name = tp_tensor_device(tensor);
    if (on_host(tensor)) return Py_BuildValue("(ii)", DL_CPU, 0);
    return Py_BuildValue("(ii)", DL_EXT_DEV, device_ordinal(name));
}

/* __dlpack__(stream=None): a "dltensor" capsule of the tensor's own bytes, for a CPU tensor;
 * BufferError for other devices' tensors, which are copied to the CPU first. DLPack 0.x has no
 * read-only mark: the consumer must not write the memory, since tensors are immutable (the
 * same contract as TensorFlow's export). */
PyObject *tpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"stream", NULL};
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O:__dlpack__", keywords, &stream))
        return NULL;
    tp_tensor_t *tensor = TPY_TENSOR(self);
    if (stream != Py_None) {
        PyErr_Format(PyExc_ValueError, "a CPU tensor takes no stream: stream must be None, "
                     "not %R", stream);
        return NULL;
    }
    const void *data = NULL;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_tensor_host_data(tensor, &data);
    Py_END_ALLOW_THREADS
    if (status != NULL) {
        if (tp_status_code(status) != TP_FAILED_PRECONDITION) return tpy_raise(status);
        PyErr_Format(PyExc_BufferError,
                     "DLPack exports CPU tensors only, and this one is on %s: copy it to the "
                     "CPU first (under `with tp.device(\"/CPU:0\")`, tp.identity(t))",
                     tp_tensor_device(tensor));
        tp_status_free(status);
        return NULL;
    }
    tp_shape_t shape = tp_tensor_shape(tensor);
    size_t rank = (size_t)shape.rank;
    dl_managed_tensor_t *managed = malloc(sizeof *managed + 2 * (rank + 1) * sizeof(int64_t));
    if (managed == NULL) return PyErr_NoMemory();
    int64_t *dims = (int64_t *)(managed + 1), *strides = dims + rank;
    int64_t stride = 1;
    for (int32_t d = shape.rank - 1; d >= 0; d--) {
        dims[d] = shape.dims[d];
        strides[d] = stride;
        stride *= shape.dims[d];
    }
    managed->dl_tensor = (dl_tensor_t){
        .data = (void *)data,
        .device = {DL_CPU, 0},
        .ndim = shape.rank,
        .dtype = dl_type_of(tp_tensor_dtype(tensor)),
        .shape = dims,
        .strides = strides,
        .byte_offset = 0,
    };
    managed->manager_ctx = tp_tensor_retain(tensor);
    managed->deleter = export_deleter;
    PyObject *capsule = PyCapsule_New(managed, capsule_name, capsule_destructor);
    if (capsule == NULL) export_deleter(managed);
    return capsule;
}

/* ---- Import ---------------------------------------------------------------------------------- */

/*
 * A borrowed tensor's memory goes back to its producer on whichever thread the runtime lets
 * go of it, possibly holding the runtime's locks, where calling into Python could deadlock:
 * the managed tensor is queued here, and its deleter runs with the GIL held: after the
 * release of a Tensor object (the common case, on the CPU, where the runtime lets go at once),
 * before each import, or else from a pending call of the interpreter.
 */
typedef struct pending_release {
    dl_managed_tensor_t *managed;
    struct pending_release *next;
} pending_release_t;

static pthread_mutex_t pending_mutex = PTHREAD_MUTEX_INITIALIZER;
static pending_release_t *pending;
static bool drain_scheduled;

static void run_deleters(void) {
    pthread_mutex_lock(&pending_mutex);
    if (pending == NULL) {
        pthread_mutex_unlock(&pending_mutex);
        return;
    }
    pending_release_t *list = pending;
    pending = NULL;
    pthread_mutex_unlock(&pending_mutex);
    while (list != NULL) {
        pending_release_t *next = list->next;
        if (list->managed->deleter != NULL) list->managed->deleter(list->managed);
        free(list);
        list = next;
    }
}

/* The pending call: once it has started, a later release schedules another. */
static int drain(void *unused) {
    (void)unused;
    pthread_mutex_lock(&pending_mutex);
    drain_scheduled = false;
    pthread_mutex_unlock(&pending_mutex);
    run_deleters();
    return 0;
}

void tpy_dlpack_give_back(void) { run_deleters(); }

/* The runtime's release function: no Python here, only the queue. */
static void queue_release(void *arg) {
    pending_release_t *release = arg;
    pthread_mutex_lock(&pending_mutex);
    release->next = pending;
    pending = release;
    bool schedule = !drain_scheduled;
    drain_scheduled = true;
    pthread_mutex_unlock(&pending_mutex);
    /* Callable without the GIL; a full queue of pending calls leaves the work to the next
     * import or the next release. */
    if (schedule && Py_AddPendingCall(drain, NULL) != 0) {
        pthread_mutex_lock(&pending_mutex);
        drain_scheduled = false;
        pthread_mutex_unlock(&pending_mutex);
    }
}

/* Whether the strides (elements; NULL: compact) lay the tensor out compact and row-major; a
 * dimension of size 1 may have any stride. */
static bool row_major(const dl_tensor_t *t) {
    if (t->strides == NULL) return true;
    int64_t expected = 1;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expected) return false;
        expected *= t->shape[d];
    }
    return true;
}

/* Copies a strided tensor's elements into `out`, row-major. */
static void gather(const dl_tensor_t *t, size_t element_size, int64_t count, char *out) {
    const char *base = (const char *)t->data + t->byte_offset;
    int64_t index[TP_MAX_RANK] = {0};
    for (int64_t k = 0; k < count; k++) {
        int64_t offset = 0;
        for (int32_t d = 0; d < t->ndim; d++) offset += index[d] * t->strides[d];
        memcpy(out + (size_t)k * element_size, base + offset * (int64_t)element_size,
               element_size);
        for (int32_t d = t->ndim - 1; d >= 0; d--) {
            if (++index[d] < t->shape[d]) break;
            index[d] = 0;
        }
    }
}

/* A tensor of the managed tensor's values, which it consumes (its deleter is called now or,
 * for borrowed memory, once the runtime is done). */
static int import_managed(dl_managed_tensor_t *managed, tp_tensor_t **out) {
    const dl_tensor_t *t = &managed->dl_tensor;
    if (managed->deleter == export_deleter) {
        /* One of ours: the tensor itself. */
        *out = tp_tensor_retain(managed->manager_ctx);
        export_deleter(managed);
        return 0;
    }
    int result = -1;
    tp_dtype_t dtype = dtype_of_dl(t->dtype);
    tp_context_t *context = tpy_context();
    if (context == NULL) {
        /* raised */
    } else if (t->device.device_type != DL_CPU && t->device.device_type != DL_CUDA_HOST) {
        PyErr_Format(PyExc_BufferError, "tp.from_dlpack takes tensors in host memory; this one "
                     "is on DLPack device type %d: copy it to the CPU first",
                     (int)t->device.device_type);
    } else if (dtype == TP_DTYPE_INVALID) {
        PyErr_Format(PyExc_TypeError, "a DLPack tensor of type code %d, %d bits, %d lanes is "
                     "not a tensorplug dtype", t->dtype.code, t->dtype.bits, t->dtype.lanes);
    } else if (t->ndim < 0 || t->ndim > TP_MAX_RANK) {
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT), "a DLPack tensor of rank %d is over "
                     "the largest rank, %d", (int)t->ndim, TP_MAX_RANK);
    } else {
        tp_shape_t shape = {.rank = t->ndim};
        for (int32_t d = 0; d < t->ndim; d++) shape.dims[d] = t->shape[d];
        int64_t count = 0;
        size_t element_size = tp_dtype_size(dtype);
        tp_status_t *status = tp_shape_num_elements(&shape, &count);
        const char *data = (const char *)t->data + t->byte_offset;
        size_t size = (size_t)count * element_size;
        if (status != NULL) {
            tpy_raise(status);
        } else if (row_major(t) && count > 0) {
            pending_release_t *release = malloc(sizeof *release);
            if (release != NULL) release->managed = managed;
            status = release == NULL ? NULL
                                     : tp_tensor_create_borrowed(context, dtype, shape, data,
                                                                 size, queue_release, release,
                                                                 out);
            if (release != NULL && status == NULL)
                return 0; /* the deleter runs when the runtime lets go */
            free(release);
            /* Misaligned memory, or values tp_tensor_create would refuse too (a copy says
             * which), or no memory for the record: copied. */
            tp_status_free(status);
            result = tpy_check(tp_tensor_create(context, dtype, shape, data, size, out));
        } else if (count == 0) {
            result = tpy_check(tp_tensor_create(context, dtype, shape, NULL, 0, out));
        } else {
            char *packed = malloc(size);
            if (packed == NULL) {
                PyErr_NoMemory();
            } else {
                gather(t, element_size, count, packed);
                result = tpy_check(tp_tensor_create(context, dtype, shape, packed, size, out));
                free(packed);
            }
        }
    }
    if (managed->deleter != NULL) managed->deleter(managed);
    return result;
}

/* from_dlpack(x): a tensor of x's values, x an object with __dlpack__ (NumPy arrays, PyTorch
 * tensors, tensors) or a "dltensor" capsule. Memory in the host's address space that is
 * C-contiguous and aligned to 16 bytes is shared, not copied (the producer's memory must then
 * not change while the tensor lives, as with any DLPack import); anything else is copied. */
static PyObject *from_dlpack(PyObject *self, PyObject *x) {
    (void)self;
    run_deleters();
    PyObject *capsule;
    if (PyCapsule_CheckExact(x)) {
        capsule = Py_NewRef(x);
    } else {
        PyObject *method = PyObject_GetAttrString(x, "__dlpack__");
        if (method == NULL) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "from_dlpack takes an object with __dlpack__ or a "
                         "DLPack capsule, not %.200s", Py_TYPE(x)->tp_name);
            return NULL;
        }
        capsule = PyObject_CallNoArgs(method);
        Py_DECREF(method);
        if (capsule == NULL) return NULL;
    }
    dl_managed_tensor_t *managed =
        PyCapsule_IsValid(capsule, capsule_name) ? PyCapsule_GetPointer(capsule, capsule_name)
                                                 : NULL;
    if (managed == NULL) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "from_dlpack: the capsule is not an unconsumed "
                        "\"dltensor\" (a DLPack capsule is consumed once)");
        Py_DECREF(capsule);
        return NULL;
    }
    /* Ours now: the capsule's destructor leaves it alone. */
    if (PyCapsule_SetName(capsule, used_capsule_name) < 0) {
        Py_DECREF(capsule);
        return NULL;
    }
    Py_DECREF(capsule);
    tp_tensor_t *tensor = NULL;
    if (import_managed(managed, &tensor) < 0) return NULL;
    return tpy_tensor_wrap(tensor);
}

static PyMethodDef module_functions[] = {
    {"from_dlpack", from_dlpack, METH_O,
     "from_dlpack(x): a tensor of the values of x (an object with __dlpack__, or a DLPack "
     "capsule). C-contiguous host memory aligned to 16 bytes is shared, not copied; other "
     "memory is copied."},
    {NULL, NULL, 0, NULL},
};

int tpy_init_dlpack(PyObject *module) { return PyModule_AddFunctions(module, module_functions); }
