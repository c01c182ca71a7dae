/* SPDX-License-Identifier: Apache-2.0 */
/* How the built-in ops are written down: each family of ops (ops_*.c) lists its definitions
 * with their shape functions in a table, and builtin_ops.c gathers the families into one index.
 * A family's table may be in any order. */
#ifndef TP_OP_OP_DEFS_H
#define TP_OP_OP_DEFS_H

#include "op/op.h"

/* One built-in op: its definition and the function that infers its output shapes. */
typedef struct tp_builtin_op_entry {
    tp_op_def_t def;
    tp_shape_fn_t infer;
} tp_builtin_op_entry_t;

typedef struct tp_op_family {
    const char *name; /* "basic", for messages */
    const tp_builtin_op_entry_t *entries;
    size_t count;
} tp_op_family_t;

/* The families builtin_ops.c gathers; each defined in its ops_*.c. */
extern const tp_op_family_t tp_ops_basic;
extern const tp_op_family_t tp_ops_nn;
extern const tp_op_family_t tp_ops_array;
extern const tp_op_family_t tp_ops_conv;

/* The dtype lists ops accept, in one place, so that a dtype added to the runtime reaches every
 * op that takes its kind. Use as `static const tp_dtype_t floats[] = {TP_OP_FLOAT_DTYPES};`. */
#define TP_OP_FLOAT_DTYPES TP_FLOAT32, TP_FLOAT64, TP_FLOAT16, TP_BFLOAT16
#define TP_OP_NUMBER_DTYPES                                                                     \
    TP_OP_FLOAT_DTYPES, TP_INT32, TP_INT64, TP_INT8, TP_INT16, TP_UINT8, TP_UINT16, TP_UINT32,  \
        TP_UINT64

#define TP_OP_COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* An input or output whose dtype is attribute "T". */
#define TP_OP_ARG(arg_name) {sizeof(tp_op_arg_def_t), arg_name, TP_DTYPE_INVALID, "T", NULL}
/* An input or output whose dtype is attribute `attr`. */
#define TP_OP_TYPED_ARG(arg_name, attr)                                                        \
    {sizeof(tp_op_arg_def_t), arg_name, TP_DTYPE_INVALID, attr, NULL}
/* An input or output of one fixed dtype. */
#define TP_OP_FIXED_ARG(arg_name, dtype) {sizeof(tp_op_arg_def_t), arg_name, dtype, NULL, NULL}

/* Attribute "T", restricted to `allowed` (NULL: any dtype). */
#define TP_OP_TYPE_ATTR(allowed, n)                                                            \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "T", .type = TP_ATTR_DTYPE,             \
     .allowed_dtypes = (allowed), .num_allowed_dtypes = (n)}

/* A table entry: an op with inputs `in`, outputs `out`, attributes `attr_list` (arrays) and its
 * shape function. */
#define TP_OP_ENTRY(op_name, in, out, attr_list, shape_fn)                                      \
    {{.struct_size = sizeof(tp_op_def_t), .name = op_name, .inputs = in,                      \
      .num_inputs = TP_OP_COUNT(in), .outputs = out, .num_outputs = TP_OP_COUNT(out),         \
      .attrs = attr_list, .num_attrs = TP_OP_COUNT(attr_list)},                               \
     shape_fn}

#endif
