/* SPDX-License-Identifier: Apache-2.0 */
/* Which built-in op has which gradient function, and what they share. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/gradients.h"
#include "base/status.h"

static const tp_gradient_family_t *const families[] = {
    &tp_gradients_conv,
    &tp_gradients_math,
    &tp_gradients_nn,
    &tp_gradients_shape,
    &tp_gradients_loss,
    &tp_gradients_layers,
    &tp_gradients_array,
};

enum { MAX_GRADIENTS = 512 };

static tp_gradient_entry_t index_entries[MAX_GRADIENTS];
static size_t num_entries;

static int compare_entries(const void *a, const void *b) {
    return strcmp(((const tp_gradient_entry_t *)a)->op, ((const tp_gradient_entry_t *)b)->op);
}

static void build_index(void) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (size_t i = 0; i < families[f]->count && num_entries < MAX_GRADIENTS; i++)
            index_entries[num_entries++] = families[f]->entries[i];
    qsort(index_entries, num_entries, sizeof index_entries[0], compare_entries);
}

static pthread_once_t index_once = PTHREAD_ONCE_INIT;

const tp_gradient_entry_t *tp_gradient_entries(size_t *out_count) {
    pthread_once(&index_once, build_index);
    *out_count = num_entries;
    return index_entries;
}

static int compare_op(const void *key, const void *element) {
    return strcmp((const char *)key, ((const tp_gradient_entry_t *)element)->op);
}

tp_gradient_fn_t tp_gradient_find(const char *op) {
    size_t count;
    const tp_gradient_entry_t *all = tp_gradient_entries(&count);
    const tp_gradient_entry_t *entry = bsearch(op, all, count, sizeof *all, compare_op);
    return entry != NULL ? entry->fn : NULL;
}

const tp_attr_t *tp_gradient_attr(const tp_gradient_op_t *op, const char *name) {
    for (size_t a = 0; a < op->def->num_attrs; a++)
        if (strcmp(op->def->attrs[a].name, name) == 0) return &op->attrs[a];
    return NULL;
}

void tp_gradient_release(tp_tensor_t **tensors, int32_t count) {
    for (int32_t i = 0; i < count; i++) {
        tp_tensor_release(tensors[i]);
        tensors[i] = NULL;
    }
}

tp_status_t *tp_gradient_unbroadcast(tp_context_t *context, tp_tensor_t *grad,
                                     const tp_tensor_t *input, tp_tensor_t **out) {
    tp_shape_t from = tp_tensor_shape(grad), to = tp_tensor_shape(input);
    int64_t axes[TP_MAX_RANK];
    size_t num_axes = 0;
    for (int32_t d = 0; d < from.rank; d++) {
        int32_t own = d - (from.rank - to.rank);
        if (own < 0 || (to.dims[own] == 1 && from.dims[d] != 1)) axes[num_axes++] = d;
    }
    if (num_axes == 0 && from.rank == to.rank) {
        *out = tp_tensor_retain(grad);
        return NULL;
    }
    tp_tensor_t *summed = grad;
    if (num_axes > 0) TP_RETURN_IF_ERROR(tp_sum(context, grad, axes, num_axes, false, &summed));
    tp_status_t *error = tp_reshape(context, summed, to, out);
    if (summed != grad) tp_tensor_release(summed);
    return error;
}

tp_status_t *tp_gradient_scalar(tp_context_t *context, tp_dtype_t dtype, double value,
                                tp_tensor_t **out) {
    tp_tensor_t *f64 = NULL;
    TP_RETURN_IF_ERROR(
        tp_constant(context, TP_FLOAT64, TP_SCALAR_SHAPE, &value, sizeof value, &f64));
    if (dtype == TP_FLOAT64) {
        *out = f64;
        return NULL;
    }
    tp_status_t *error = tp_cast(context, f64, dtype, out);
    tp_tensor_release(f64);
    return error;
}

TP_GRADIENT_FN(tp_gradient_none) {
    (void)op;
    (void)output_grads;
    (void)needed;
    (void)input_grads;
    return NULL;
}
