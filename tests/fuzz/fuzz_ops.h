/* SPDX-License-Identifier: Apache-2.0 */
/* Op calls made from fuzz input, for the targets that resolve and infer them. An input is a
 * tensor with a dtype and a shape but no memory, as shape inference sees it (and as a graph
 * pass's new node is resolved). Most calls come out nearly right, since only those reach the
 * shape functions: inputs as many as the op takes, dtypes the op allows, shapes that repeat or
 * broadcast the one before, attributes by their declared names and types. The rest are wrong
 * in one way or another: a count, a type, a name, a missing list. */
#ifndef TP_FUZZ_OPS_H
#define TP_FUZZ_OPS_H

#include "fuzz_support.h"

#include "kernel/kernel_context.h"
#include "op/op.h"
#include "tensor/tensor.h"

enum { FUZZ_MAX_INPUTS = 12, FUZZ_MAX_ATTRS = 20, FUZZ_MAX_LIST = 10 };

typedef struct {
    tp_tensor_t tensors[FUZZ_MAX_INPUTS];
    tp_tensor_t *inputs[FUZZ_MAX_INPUTS];
    size_t num_inputs;
    tp_attr_t attrs[FUZZ_MAX_ATTRS];
    size_t num_attrs;
    int64_t lists[FUZZ_MAX_ATTRS][FUZZ_MAX_LIST];
    char *blocks[FUZZ_MAX_ATTRS]; /* strings and bytes, each in a block of its exact size */
} fuzz_call_t;

/* The call's string attributes, one after another, into `out`: what a message may quote back
 * (an op naming the padding it was given), for fuzz_check_quoting. */
static inline const char *fuzz_call_strings(const fuzz_call_t *call, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (size_t a = 0; a < call->num_attrs; a++) {
        const tp_attr_t *attr = &call->attrs[a];
        if (attr->type != TP_ATTR_STRING || attr->s == NULL) continue;
        int written = snprintf(out + used, size - used, "%s", attr->s);
        if (written < 0 || (size_t)written >= size - used) break;
        used += (size_t)written;
    }
    return out;
}

/* Names that ops use, so that a wrong name is often another op's right one. */
static const char *const fuzz_names[] = {
    "T", "N", "shape", "axis", "perm", "dtype", "value", "seed", "keep_dims",
    "transpose_a", "transpose_b", "SrcT", "DstT", "x", "",
};
enum { FUZZ_NUM_NAMES = sizeof fuzz_names / sizeof fuzz_names[0] };

static inline tp_dtype_t fuzz_dtype(fuzz_input_t *in) {
    return (tp_dtype_t)(TP_FLOAT32 + fuzz_below(in, 6));
}

/* A dimension: 0 to 5, or now and then anything fuzz_int gives. */
static inline int64_t fuzz_dim(fuzz_input_t *in) {
    uint8_t b = fuzz_byte(in);
    return b < 0xf0 ? b % 6 : fuzz_int(in);
}

/* A shape: the one before again, with a dimension made 1 or dropped (as broadcasting allows),
 * or a new one, usually of rank 0 to 4. */
static inline tp_shape_t fuzz_shape(fuzz_input_t *in, const tp_shape_t *before) {
    uint8_t mode = fuzz_byte(in);
    tp_shape_t shape = before != NULL ? *before : (tp_shape_t){0};
    switch (before != NULL ? mode % 8 : 7) {
    case 0: case 1: case 2: return shape;
    case 3:
        if (shape.rank > 0) shape.dims[fuzz_below(in, (size_t)shape.rank)] = 1;
        return shape;
    case 4:
        if (shape.rank > 0) {
            shape.rank--;
            memmove(shape.dims, shape.dims + 1, (size_t)shape.rank * sizeof shape.dims[0]);
        }
        return shape;
    default:
        shape.rank = (int32_t)(mode >= 0xf0 ? fuzz_below(in, TP_MAX_RANK + 1) : mode % 5);
        for (int32_t d = 0; d < shape.rank; d++) shape.dims[d] = fuzz_dim(in);
        return shape;
    }
}

static inline const tp_op_attr_def_t *fuzz_attr_def(const tp_op_def_t *def, const char *name) {
    int index = name != NULL ? tp_op_attr_index(def, name) : -1;
    return index >= 0 ? &def->attrs[index] : NULL;
}

/* A dtype an input bound to `arg` may have: usually one its attribute allows. */
static inline tp_dtype_t fuzz_input_dtype(fuzz_input_t *in, const tp_op_def_t *def,
                                          const tp_op_arg_def_t *arg) {
    uint8_t b = fuzz_byte(in);
    if (b >= 0xf0) return fuzz_dtype(in);
    if (arg->type_attr == NULL) return arg->dtype;
    const tp_op_attr_def_t *attr = fuzz_attr_def(def, arg->type_attr);
    if (attr != NULL && attr->num_allowed_dtypes > 0)
        return attr->allowed_dtypes[b % attr->num_allowed_dtypes];
    return (tp_dtype_t)(TP_FLOAT32 + b % 6);
}

/* Inputs for `def`: one per argument, 1 to 4 for a list, inputs of one type attribute usually
 * of one dtype; now and then one more or one fewer. False when a shape is not a valid
 * tensor's, as no input's can be. */
static inline bool fuzz_make_inputs(fuzz_input_t *in, const tp_op_def_t *def,
                                    fuzz_call_t *call) {
    const tp_shape_t *before = NULL;
    const char *type_attr[FUZZ_MAX_INPUTS];
    size_t n = 0;
    for (size_t a = 0; a < def->num_inputs && n < FUZZ_MAX_INPUTS; a++) {
        const tp_op_arg_def_t *arg = &def->inputs[a];
        size_t count = arg->number_attr != NULL ? 1 + fuzz_below(in, 4) : 1;
        for (size_t k = 0; k < count && n < FUZZ_MAX_INPUTS; k++, n++) {
            tp_tensor_t *tensor = &call->tensors[n];
            type_attr[n] = arg->type_attr;
            tensor->dtype = fuzz_input_dtype(in, def, arg);
            for (size_t p = 0; p < n && arg->type_attr != NULL; p++) {
                if (type_attr[p] == NULL || strcmp(type_attr[p], arg->type_attr) != 0) continue;
                if (fuzz_byte(in) < 0xf0) tensor->dtype = call->tensors[p].dtype;
                break;
            }
            tensor->shape = fuzz_shape(in, before);
            before = &tensor->shape;
        }
    }
    uint8_t change = fuzz_byte(in);
    if (change >= 0xf8 && n < FUZZ_MAX_INPUTS) {
        call->tensors[n].dtype = fuzz_dtype(in);
        call->tensors[n].shape = fuzz_shape(in, before);
        n++;
    } else if (change >= 0xf0 && n > 0) {
        n--;
    }
    call->num_inputs = n;
    for (size_t i = 0; i < n; i++) {
        tp_tensor_t *t = &call->tensors[i];
        tp_status_t *status = tp_tensor_check_layout(t->dtype, &t->shape, &t->num_elements,
                                                     &t->byte_size);
        if (status != NULL) {
            tp_status_free(status);
            return false;
        }
        call->inputs[i] = t;
    }
    return true;
}

/* `size` bytes of the input (and a NUL), in a block of exactly that size, so that
 * AddressSanitizer sees a read past them. */
static inline char *fuzz_block(fuzz_input_t *in, size_t size, bool terminated) {
    char *block = malloc(size + terminated);
    if (block == NULL && size + terminated > 0) abort();
    for (size_t i = 0; i < size; i++) block[i] = (char)fuzz_byte(in);
    if (terminated) block[size] = '\0';
    return block;
}

static inline double fuzz_double(fuzz_input_t *in) {
    static const double specials[] = {0.0, -0.0, 0.5, 1.0, -1.0, 1e300, 1e-320};
    uint8_t b = fuzz_byte(in);
    if (b < 0xf0) return specials[b % (sizeof specials / sizeof specials[0])];
    uint64_t bits = fuzz_u64(in);
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* The value of attribute `a` of type `type`, with now and then a count or pointer that the
 * core must refuse. */
static inline void fuzz_attr_value(fuzz_input_t *in, fuzz_call_t *call, size_t a,
                                   tp_attr_type_t type) {
    tp_attr_t *attr = &call->attrs[a];
    uint8_t shape = fuzz_byte(in);
    bool odd = shape >= 0xf0;
    switch (type) {
    case TP_ATTR_FLOAT: attr->f = fuzz_double(in); break;
    case TP_ATTR_BOOL: attr->i = odd ? fuzz_int(in) : shape & 1; break;
    case TP_ATTR_DTYPE: attr->i = odd ? fuzz_int(in) : (int64_t)fuzz_dtype(in); break;
    case TP_ATTR_SHAPE:
    case TP_ATTR_INT_LIST: {
        int64_t count = odd ? fuzz_int(in) : shape % 5;
        attr->count = (int32_t)count;
        size_t listed = count >= 0 && count <= FUZZ_MAX_LIST ? (size_t)count : 0;
        for (size_t k = 0; k < listed; k++) call->lists[a][k] = fuzz_int(in);
        /* The list is NULL when its count is out of reach, as a lying caller's would be. */
        bool dropped = shape >= 0xe0 && shape < 0xf0;
        attr->list = listed == (size_t)count && !dropped ? call->lists[a] : NULL;
        break;
    }
    case TP_ATTR_STRING:
        call->blocks[a] = fuzz_block(in, shape % 8, true);
        attr->s = odd ? NULL : call->blocks[a];
        break;
    case TP_ATTR_BYTES: {
        size_t size = fuzz_byte(in);
        call->blocks[a] = fuzz_block(in, size, false);
        attr->count = odd ? (int32_t)fuzz_int(in) : (int32_t)size;
        attr->s = shape >= 0xe0 && shape < 0xf0 ? NULL : call->blocks[a];
        if (attr->count > (int32_t)size) attr->s = NULL;
        break;
    }
    default: attr->i = fuzz_int(in); break;
    }
}

/* Attributes for `def`: each declared one given or left to its default or binding, now and
 * then of another type; then, now and then, one more of any name and type. */
static inline void fuzz_make_attrs(fuzz_input_t *in, const tp_op_def_t *def, fuzz_call_t *call) {
    size_t n = 0;
    for (size_t d = 0; d < def->num_attrs && n < FUZZ_MAX_ATTRS; d++) {
        uint8_t how = fuzz_byte(in);
        if (how % 3 == 0) continue;
        tp_attr_type_t type = how >= 0xf0 ? (tp_attr_type_t)fuzz_below(in, 10) : def->attrs[d].type;
        call->attrs[n] = (tp_attr_t){.name = def->attrs[d].name, .type = type};
        fuzz_attr_value(in, call, n++, type);
    }
    while (n < FUZZ_MAX_ATTRS && fuzz_byte(in) >= 0xe0) {
        uint8_t name = fuzz_byte(in);
        tp_attr_type_t type = (tp_attr_type_t)fuzz_below(in, 10);
        call->attrs[n] = (tp_attr_t){
            .name = name % (FUZZ_NUM_NAMES + 1) < FUZZ_NUM_NAMES
                        ? fuzz_names[name % (FUZZ_NUM_NAMES + 1)] : NULL,
            .type = type};
        fuzz_attr_value(in, call, n++, type);
    }
    call->num_attrs = n;
}

static inline void fuzz_free_call(fuzz_call_t *call) {
    for (size_t a = 0; a < FUZZ_MAX_ATTRS; a++) free(call->blocks[a]);
}

#endif
