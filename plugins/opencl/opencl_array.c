/* SPDX-License-Identifier: Apache-2.0 */
/* Concat, Slice, Pad and Select on the GPU, from kernels/array.cl: each a walk of byte copies
 * by element size, so one kernel serves every dtype. compute only queues work.
 *
 * Tile has no GPU kernel yet, though it is the same walk over (multiple, dimension) pairs:
 * plugin-check forms its calls with the input's dims as multiples, which for its 65537-element
 * input asks for a 17 GB output on the CPU and then again on PoCL's device, more than the
 * check's machine has. */
#include <stdio.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef enum { CONCAT, SLICE, PAD, SELECT } array_kind_t;

typedef struct array_op {
    const char *op;
    array_kind_t kind;
} array_op_t;

static array_op_t ops[] = {
    {"Concat", CONCAT}, {"Slice", SLICE}, {"Pad", PAD}, {"Select", SELECT},
};

/* walk_N and select_N by log2 of the element size (1, 2, 4, 8 bytes). */
static int32_t walk_ids[4], select_ids[4];

static void row_major(int32_t rank, const int64_t *dims, cl_long *strides) {
    cl_long stride = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= dims[d];
    }
}

/* One walk of `n` elements over `rank` dims (see kernels/array.cl). */
typedef struct walk {
    cl_int rank;
    cl_long16 dims, from, to;
    cl_long from_start, to_start;
} walk_t;

static bool launch_walk(tp_kernel_context_t *context, const char *what,
                        const tp_tensor_view_t *x, const tp_tensor_view_t *y, const walk_t *walk,
                        tp_plugin_status_t *status) {
    walk_t w = *walk;
    if (w.rank == 0) { /* a scalar: one row of one element */
        w.rank = 1;
        w.dims.s[0] = 1;
    }
    cl_ulong n = 1;
    for (cl_int d = 0; d < w.rank; d++) n *= (cl_ulong)w.dims.s[d];
    if (n == 0) return true;
    cl_long row_length = w.dims.s[w.rank - 1], from_step = w.from.s[w.rank - 1],
            to_step = w.to.s[w.rank - 1];
    cl_ulong rows = n / (cl_ulong)row_length;
    cl_mem x_mem = (cl_mem)x->mem, y_mem = (cl_mem)y->mem;
    const opencl_arg_t args[] = {
        OPENCL_ARG(x_mem),        OPENCL_ARG(x->offset),   OPENCL_ARG(y_mem),
        OPENCL_ARG(y->offset),    OPENCL_ARG(rows),        OPENCL_ARG(w.rank),
        OPENCL_ARG(w.dims),       OPENCL_ARG(w.from),      OPENCL_ARG(w.to),
        OPENCL_ARG(w.from_start), OPENCL_ARG(w.to_start),  OPENCL_ARG(row_length),
        OPENCL_ARG(from_step),    OPENCL_ARG(to_step)};
    int32_t id = walk_ids[opencl_size_index(y->dtype)];
    return opencl_launch(context, what, id, args, COUNT(args), (size_t)rows, 0, status);
}

static void concat(tp_kernel_context_t *context, const char *what, const tp_tensor_view_t *y,
                   tp_plugin_status_t *status) {
    int64_t axis = 0;
    opencl_host->kernel_attr_int(context, "axis", &axis, status);
    if (opencl_failed(status)) return;
    if (axis < 0) axis += y->rank;
    walk_t walk = {.rank = y->rank};
    row_major(y->rank, y->dims, walk.to.s);
    int32_t count = opencl_host->kernel_num_inputs(context);
    int64_t offset = 0;
    for (int32_t i = 0; i < count && !opencl_failed(status); i++) {
        tp_tensor_view_t x;
        if (!opencl_input(context, i, &x, status)) return;
        for (int32_t d = 0; d < x.rank; d++) walk.dims.s[d] = x.dims[d];
        row_major(x.rank, x.dims, walk.from.s);
        walk.to_start = offset * walk.to.s[axis];
        launch_walk(context, what, &x, y, &walk, status);
        offset += x.dims[axis];
    }
}

static void slice(tp_kernel_context_t *context, const char *what, const tp_tensor_view_t *x,
                  const tp_tensor_view_t *y, tp_plugin_status_t *status) {
    const int64_t *begin = NULL;
    int32_t count = 0;
    opencl_host->kernel_attr_int_list(context, "begin", &begin, &count, status);
    if (opencl_failed(status)) return;
    walk_t walk = {.rank = y->rank};
    for (int32_t d = 0; d < y->rank; d++) walk.dims.s[d] = y->dims[d];
    row_major(y->rank, y->dims, walk.to.s);
    row_major(x->rank, x->dims, walk.from.s);
    for (int32_t d = 0; d < x->rank && d < count; d++) walk.from_start += begin[d] * walk.from.s[d];
    launch_walk(context, what, x, y, &walk, status);
}

/* The constant everywhere, then the input inside the borders. */
static void pad(tp_kernel_context_t *context, const char *what, const tp_tensor_view_t *x,
                const tp_tensor_view_t *y, tp_plugin_status_t *status) {
    const int64_t *paddings = NULL;
    int32_t count = 0;
    double constant = 0;
    opencl_host->kernel_attr_int_list(context, "paddings", &paddings, &count, status);
    opencl_host->kernel_attr_float(context, "constant_value", &constant, status);
    if (opencl_failed(status)) return;
    cl_ulong pattern = opencl_scalar_bits(y->dtype, constant);
    opencl_stream_t *stream = opencl_host->kernel_stream(context);
    cl_event event;
    cl_int error = clEnqueueFillBuffer(stream->queue, (cl_mem)y->mem, &pattern,
                                       opencl_dtype_size(y->dtype), y->offset, y->byte_size, 0,
                                       NULL, &event);
    if (!opencl_stream_queued(stream, what, "clEnqueueFillBuffer", error, event, status)) return;
    walk_t walk = {.rank = x->rank};
    for (int32_t d = 0; d < x->rank; d++) walk.dims.s[d] = x->dims[d];
    row_major(x->rank, x->dims, walk.from.s);
    row_major(y->rank, y->dims, walk.to.s);
    for (int32_t d = 0; d < y->rank && 2 * d + 1 < count; d++)
        walk.to_start += paddings[2 * d] * walk.to.s[d];
    launch_walk(context, what, x, y, &walk, status);
}

static void select_op(tp_kernel_context_t *context, const char *what, const tp_tensor_view_t *y,
                      tp_plugin_status_t *status) {
    tp_tensor_view_t views[3];
    for (int32_t k = 0; k < 3; k++)
        if (!opencl_input(context, k, &views[k], status)) return;
    cl_long8 dims = {{0}}, strides[3] = {{{0}}};
    cl_int rank = 0;
    if (views[0].num_elements != y->num_elements || views[1].num_elements != y->num_elements ||
        views[2].num_elements != y->num_elements) {
        rank = y->rank;
        for (int32_t d = 0; d < y->rank; d++) dims.s[d] = y->dims[d];
        for (int32_t k = 0; k < 3; k++)
            opencl_broadcast_strides(&views[k], y->rank, y->dims, strides[k].s);
    }
    cl_mem mems[3] = {(cl_mem)views[0].mem, (cl_mem)views[1].mem, (cl_mem)views[2].mem};
    cl_mem y_mem = (cl_mem)y->mem;
    cl_ulong n = (cl_ulong)y->num_elements;
    const opencl_arg_t args[] = {
        OPENCL_ARG(mems[0]),    OPENCL_ARG(views[0].offset), OPENCL_ARG(mems[1]),
        OPENCL_ARG(views[1].offset), OPENCL_ARG(mems[2]),    OPENCL_ARG(views[2].offset),
        OPENCL_ARG(y_mem),      OPENCL_ARG(y->offset),       OPENCL_ARG(n),
        OPENCL_ARG(rank),       OPENCL_ARG(dims),            OPENCL_ARG(strides[0]),
        OPENCL_ARG(strides[1]), OPENCL_ARG(strides[2])};
    int32_t id = select_ids[opencl_size_index(y->dtype)];
    opencl_launch(context, what, id, args, COUNT(args), (size_t)n, 0, status);
}

static void compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const array_op_t *op = kernel;
    tp_tensor_view_t x = {0}, y;
    if (!opencl_output(context, 0, &y, status)) return;
    if (op->kind != CONCAT && op->kind != SELECT && !opencl_input(context, 0, &x, status)) return;
    if (y.num_elements == 0) return;
    switch (op->kind) {
    case CONCAT: concat(context, op->op, &y, status); break;
    case SLICE: slice(context, op->op, &x, &y, status); break;
    case PAD: pad(context, op->op, &x, &y, status); break;
    case SELECT: select_op(context, op->op, &y, status); break;
    }
}

void opencl_register_array_kernels(tp_registrar_t *registrar, bool fp64,
                                   tp_plugin_status_t *status) {
    static const char *const sizes[4] = {"1", "2", "4", "8"};
    for (int s = 0; s < 4 && !opencl_failed(status); s++) {
        char name[32];
        snprintf(name, sizeof name, "walk_%s", sizes[s]);
        walk_ids[s] = opencl_kernel_id("array", name, status);
        snprintf(name, sizeof name, "select_%s", sizes[s]);
        select_ids[s] = opencl_kernel_id("array", name, status);
    }
    /* Bytes are bytes: float64 moves on any device, but is offered only where the plug-in
     * offers float64 at all, so that a float64 graph does not half-run on a GPU. */
    tp_dtype_t dtypes[] = {TP_FLOAT32, TP_INT32, TP_INT64, TP_UINT8, TP_BOOL, TP_FLOAT64};
    size_t num_dtypes = fp64 ? COUNT(dtypes) : COUNT(dtypes) - 1;
    for (size_t i = 0; i < COUNT(ops) && !opencl_failed(status); i++)
        opencl_register(registrar, ops[i].op, "T", dtypes, num_dtypes, &ops[i], compute, status);
}
