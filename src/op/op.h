/* SPDX-License-Identifier: Apache-2.0 */
/* Ops: what an op takes, gives and is parameterized by, and how its output shapes follow
 * from its inputs. Built-in ops live in the core; plug-ins add theirs through register_op. */
#ifndef TP_OP_OP_H
#define TP_OP_OP_H

#include "tensorplug/tensorplug.h"

struct tp_plugin_record;

enum { TP_MAX_OP_OUTPUTS = 4, TP_MAX_OP_ATTRS = 16 };

/* Sets the call's output shapes from its inputs and attributes; errors name the op. */
typedef tp_status_t *(*tp_shape_fn_t)(tp_kernel_context_t *call);

typedef struct tp_op {
    const tp_op_def_t *def;
    tp_shape_fn_t infer;                  /* built-in ops; NULL for a plug-in's */
    const struct tp_plugin_record *plugin;/* NULL for built-in ops */
} tp_op_t;

/* The built-in ops, sorted by name. */
const tp_op_t *tp_builtin_ops(size_t *out_count);
const tp_op_t *tp_builtin_op_find(const char *name);
/* How many ops the families declare: tp_builtin_ops' count unless the index overflowed. */
size_t tp_builtin_ops_declared(void);

/* The index of attribute `name` in the op's definition, or -1. */
int tp_op_attr_index(const tp_op_def_t *def, const char *name);

#endif
