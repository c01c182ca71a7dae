/* SPDX-License-Identifier: Apache-2.0 */
#include "op/shape_functions.h"

#include <stdio.h>
#include <string.h>

#include "base/dtype.h"
#include "base/shape.h"
#include "base/status.h"
#include "kernel/kernel_context.h"
#include "tensor/tensor.h"

static const char *op_name(const tp_kernel_context_t *call) { return call->op->def->name; }

static void set_output(tp_kernel_context_t *call, int32_t index, const tp_shape_t *shape) {
    call->output_shapes[index] = *shape;
    call->output_shape_set[index] = true;
}

static const tp_shape_t *input_shape(const tp_kernel_context_t *call, int32_t index) {
    return &call->inputs[index]->shape;
}

const char *tp_bracketed_list(const int64_t *values, int32_t count, char *text, size_t capacity) {
    size_t used = (size_t)snprintf(text, capacity, "[");
    for (int32_t i = 0; i < count && used < capacity; i++)
        used += (size_t)snprintf(text + used, capacity - used, i == 0 ? "%lld" : ",%lld",
                                 (long long)values[i]);
    if (used < capacity) snprintf(text + used, capacity - used, "]");
    return text;
}

const char *tp_shape_text(const tp_shape_t *shape, char *text, size_t capacity) {
    return tp_bracketed_list(shape->dims, shape->rank, text, capacity);
}

tp_status_t *tp_shape_same_as_input(tp_kernel_context_t *call) {
    set_output(call, 0, input_shape(call, 0));
    return NULL;
}

tp_status_t *tp_broadcast_shapes(const tp_shape_t *a, const tp_shape_t *b, tp_shape_t *out) {
    tp_shape_t result = {.rank = a->rank > b->rank ? a->rank : b->rank};
    for (int32_t d = 0; d < result.rank; d++) {
        int32_t da = d - (result.rank - a->rank), db = d - (result.rank - b->rank);
        int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
        if (x != y && x != 1 && y != 1) {
            char ta[256], tb[256];
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "Incompatible shapes: %s vs. %s", tp_shape_text(a, ta, sizeof ta),
                                  tp_shape_text(b, tb, sizeof tb));
        }
        result.dims[d] = x == 1 ? y : x;
    }
    *out = result;
    return NULL;
}

tp_status_t *tp_shape_broadcast(tp_kernel_context_t *call) {
    tp_shape_t shape;
    /* Annotated only on failure: the variadic call cost every binary op 26 instructions. */
    tp_status_t *error = tp_broadcast_shapes(input_shape(call, 0), input_shape(call, 1), &shape);
    if (error != NULL) return tp_status_annotate(error, "%s", op_name(call));
    set_output(call, 0, &shape);
    return NULL;
}

tp_status_t *tp_shape_all_inputs_equal(tp_kernel_context_t *call) {
    for (int32_t i = 1; i < call->num_inputs; i++) {
        if (!tp_shape_equal(input_shape(call, 0), input_shape(call, i))) {
            char ta[256], tb[256];
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "%s: all inputs must have one shape; input 0 is %s, input %d is "
                                  "%s",
                                  op_name(call), tp_shape_text(input_shape(call, 0), ta, sizeof ta),
                                  (int)i, tp_shape_text(input_shape(call, i), tb, sizeof tb));
        }
    }
    set_output(call, 0, input_shape(call, 0));
    return NULL;
}

tp_status_t *tp_shape_matmul(tp_kernel_context_t *call) {
    const tp_shape_t *a = input_shape(call, 0), *b = input_shape(call, 1);
    char ta[256], tb[256];
    if (a->rank != 2 || b->rank != 2)
        return tp_status_make(TP_INVALID_ARGUMENT, "MatMul: inputs must be matrices, but are %s "
                              "and %s", tp_shape_text(a, ta, sizeof ta),
                              tp_shape_text(b, tb, sizeof tb));
    bool transpose_a = tp_kernel_context_attr(call, "transpose_a")->i != 0;
    bool transpose_b = tp_kernel_context_attr(call, "transpose_b")->i != 0;
    int64_t m = a->dims[transpose_a ? 1 : 0], k = a->dims[transpose_a ? 0 : 1];
    int64_t k2 = b->dims[transpose_b ? 1 : 0], n = b->dims[transpose_b ? 0 : 1];
    if (k != k2)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "MatMul: Matrix size-incompatible: In[0]: %s, In[1]: %s%s",
                              tp_shape_text(a, ta, sizeof ta), tp_shape_text(b, tb, sizeof tb),
                              transpose_a || transpose_b ? " (with transposes)" : "");
    tp_shape_t out = {.rank = 2, .dims = {m, n}};
    set_output(call, 0, &out);
    return NULL;
}

/* BatchMatMulV2: x [..., M, K] times y [..., K, N] (adj_x, adj_y: each matrix conjugate-
 * transposed, a transpose for real numbers), the dimensions before the last two broadcast as
 * NumPy's: [..., M, N]. */
tp_status_t *tp_shape_batch_matmul(tp_kernel_context_t *call) {
    const tp_shape_t *x = input_shape(call, 0), *y = input_shape(call, 1);
    char tx[256], ty[256];
    if (x->rank < 2 || y->rank < 2)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "BatchMatMulV2: In[0] and In[1] need at least 2 dimensions each, "
                              "but are %s and %s",
                              tp_shape_text(x, tx, sizeof tx), tp_shape_text(y, ty, sizeof ty));
    bool adj_x = tp_kernel_context_attr(call, "adj_x")->i != 0;
    bool adj_y = tp_kernel_context_attr(call, "adj_y")->i != 0;
    const int64_t *xm = x->dims + x->rank - 2, *ym = y->dims + y->rank - 2;
    int64_t m = xm[adj_x ? 1 : 0], k = xm[adj_x ? 0 : 1];
    int64_t k2 = ym[adj_y ? 1 : 0], n = ym[adj_y ? 0 : 1];
    if (k != k2)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "BatchMatMulV2: Matrix size-incompatible: In[0]: %s, In[1]: %s%s",
                              tp_shape_text(x, tx, sizeof tx), tp_shape_text(y, ty, sizeof ty),
                              adj_x || adj_y ? " (with adjoints)" : "");
    tp_shape_t x_batch = {.rank = x->rank - 2}, y_batch = {.rank = y->rank - 2}, out;
    memcpy(x_batch.dims, x->dims, (size_t)x_batch.rank * sizeof *x->dims);
    memcpy(y_batch.dims, y->dims, (size_t)y_batch.rank * sizeof *y->dims);
    tp_status_t *batch_error = tp_broadcast_shapes(&x_batch, &y_batch, &out);
    if (batch_error != NULL) {
        tp_status_free(batch_error);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "BatchMatMulV2: In[0] and In[1] must have compatible batch "
                              "dimensions: %s vs. %s",
                              tp_shape_text(x, tx, sizeof tx), tp_shape_text(y, ty, sizeof ty));
    }
    out.dims[out.rank++] = m;
    out.dims[out.rank++] = n;
    set_output(call, 0, &out);
    return NULL;
}

tp_status_t *tp_shape_bias_add(tp_kernel_context_t *call) {
    const tp_shape_t *x = input_shape(call, 0), *bias = input_shape(call, 1);
    char tx[256], tb[256];
    if (x->rank < 1 || bias->rank != 1 || bias->dims[0] != x->dims[x->rank - 1])
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "BiasAdd: bias must be a vector as long as the last dimension of "
                              "the input; got input %s and bias %s",
                              tp_shape_text(x, tx, sizeof tx), tp_shape_text(bias, tb, sizeof tb));
    set_output(call, 0, x);
    return NULL;
}

tp_status_t *tp_reduction_mask(const int64_t *axes, int32_t count, int32_t rank,
                               bool mask[TP_MAX_RANK]) {
    for (int32_t d = 0; d < TP_MAX_RANK; d++) mask[d] = count == 0 && d < rank;
    for (int32_t i = 0; i < count; i++) {
        int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (axis < 0 || axis >= rank)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "axis %lld is out of range for a tensor of rank %d",
                                  (long long)axes[i], (int)rank);
        if (mask[axis])
            return tp_status_make(TP_INVALID_ARGUMENT, "axis %lld is given twice",
                                  (long long)axes[i]);
        mask[axis] = true;
    }
    return NULL;
}

tp_status_t *tp_shape_reduce(tp_kernel_context_t *call) {
    const tp_shape_t *x = input_shape(call, 0);
    const tp_attr_t *axis = tp_kernel_context_attr(call, "axis");
    bool keep_dims = tp_kernel_context_attr(call, "keep_dims")->i != 0;
    bool mask[TP_MAX_RANK];
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_reduction_mask(axis->list, axis->count, x->rank,
                                                            mask),
                                          "%s", op_name(call)));
    tp_shape_t out = {.rank = 0};
    for (int32_t d = 0; d < x->rank; d++) {
        if (!mask[d])
            out.dims[out.rank++] = x->dims[d];
        else if (keep_dims)
            out.dims[out.rank++] = 1;
    }
    set_output(call, 0, &out);
    return NULL;
}

tp_status_t *tp_shape_reshape(tp_kernel_context_t *call) {
    const tp_tensor_t *x = call->inputs[0];
    const tp_attr_t *attr = tp_kernel_context_attr(call, "shape");
    if (attr->count > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "Reshape: rank %d is more than %d",
                              (int)attr->count, TP_MAX_RANK);
    tp_shape_t out = {.rank = attr->count};
    int32_t inferred = -1;
    int64_t known = 1;
    for (int32_t d = 0; d < out.rank; d++) {
        out.dims[d] = attr->list[d];
        if (out.dims[d] == -1) {
            if (inferred >= 0)
                return tp_status_make(TP_INVALID_ARGUMENT,
                                      "Reshape: only one dimension may be -1");
            inferred = d;
        } else if (out.dims[d] < 0) {
            return tp_status_make(TP_INVALID_ARGUMENT, "Reshape: dimension %d is %lld", (int)d,
                                  (long long)out.dims[d]);
        } else {
            if (out.dims[d] != 0 && known > INT64_MAX / out.dims[d])
                return tp_status_make(TP_INVALID_ARGUMENT, "Reshape: the shape is too large");
            known *= out.dims[d];
        }
    }
    if (inferred >= 0) {
        if (known == 0 || x->num_elements % known != 0)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "Reshape: cannot infer the -1 dimension: %lld elements do not "
                                  "divide into blocks of %lld",
                                  (long long)x->num_elements, (long long)known);
        out.dims[inferred] = x->num_elements / known;
        known = x->num_elements;
    }
    if (known != x->num_elements) {
        char tx[256], to[256];
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "Reshape: cannot reshape a tensor with %lld elements to shape %s "
                              "(%lld elements); the input is %s",
                              (long long)x->num_elements, tp_shape_text(&out, to, sizeof to),
                              (long long)known, tp_shape_text(&x->shape, tx, sizeof tx));
    }
    set_output(call, 0, &out);
    return NULL;
}

tp_status_t *tp_shape_transpose(tp_kernel_context_t *call) {
    const tp_shape_t *x = input_shape(call, 0);
    const tp_attr_t *perm = tp_kernel_context_attr(call, "perm");
    tp_shape_t out = {.rank = x->rank};
    if (perm->count == 0) {
        for (int32_t d = 0; d < x->rank; d++) out.dims[d] = x->dims[x->rank - 1 - d];
        set_output(call, 0, &out);
        return NULL;
    }
    if (perm->count != x->rank)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "Transpose: perm has %d entries for a tensor of rank %d",
                              (int)perm->count, (int)x->rank);
    bool seen[TP_MAX_RANK] = {false};
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t p = perm->list[d];
        if (p < 0 || p >= x->rank || seen[p])
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "Transpose: perm is not a permutation of 0..%d",
                                  (int)x->rank - 1);
        seen[p] = true;
        out.dims[d] = x->dims[p];
    }
    set_output(call, 0, &out);
    return NULL;
}

/* The "shape" attribute of the ops that make a tensor from nothing but a shape. */
static tp_status_t *shape_attribute(const tp_kernel_context_t *call, tp_shape_t *out) {
    const tp_attr_t *attr = tp_kernel_context_attr(call, "shape");
    if (attr->count > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: rank %d is more than %d", op_name(call),
                              (int)attr->count, TP_MAX_RANK);
    tp_shape_t shape = {.rank = attr->count};
    for (int32_t d = 0; d < shape.rank; d++) shape.dims[d] = attr->list[d];
    int64_t count;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_shape_num_elements(&shape, &count), "%s",
                                          op_name(call)));
    *out = shape;
    return NULL;
}

tp_status_t *tp_shape_from_attr(tp_kernel_context_t *call) {
    tp_shape_t shape;
    TP_RETURN_IF_ERROR(shape_attribute(call, &shape));
    set_output(call, 0, &shape);
    return NULL;
}

/* The shape attribute, checked against the number of value bytes. */
tp_status_t *tp_shape_const(tp_kernel_context_t *call) {
    tp_shape_t shape;
    TP_RETURN_IF_ERROR(shape_attribute(call, &shape));
    tp_dtype_t dtype = (tp_dtype_t)tp_kernel_context_attr(call, "dtype")->i;
    int64_t count;
    size_t bytes;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_tensor_check_layout(dtype, &shape, &count, &bytes),
                                          "Const"));
    const tp_attr_t *value = tp_kernel_context_attr(call, "value");
    if ((uint64_t)value->count != (uint64_t)bytes) {
        char text[256];
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "Const: a %s tensor of shape %s needs %zu bytes of value, but %d "
                              "were given",
                              tp_dtype_name(dtype), tp_shape_text(&shape, text, sizeof text), bytes,
                              (int)value->count);
    }
    TP_RETURN_IF_ERROR(tp_dtype_check_values(dtype, value->s, bytes, "Const"));
    set_output(call, 0, &shape);
    return NULL;
}

tp_status_t *tp_shape_fill(tp_kernel_context_t *call) {
    if (input_shape(call, 0)->rank != 0) {
        char text[256];
        return tp_status_make(TP_INVALID_ARGUMENT, "Fill: value must be a scalar, not %s",
                              tp_shape_text(input_shape(call, 0), text, sizeof text));
    }
    return tp_shape_from_attr(call);
}

tp_status_t *tp_shape_softmax(tp_kernel_context_t *call) {
    if (input_shape(call, 0)->rank < 1)
        return tp_status_make(TP_INVALID_ARGUMENT, "Softmax: logits must have rank >= 1");
    return tp_shape_same_as_input(call);
}
