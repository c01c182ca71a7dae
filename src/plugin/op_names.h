/* SPDX-License-Identifier: Apache-2.0 */
/* A plug-in's ops by name: a hash index over the record's ops, so that checking a new op for a
 * duplicate and resolving a kernel's op cost the same whether the plug-in has ten ops or a
 * hundred thousand (a linear search made registration quadratic: 40,000 took 11.8 s). */
#ifndef TP_PLUGIN_OP_NAMES_H
#define TP_PLUGIN_OP_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "plugin/plugin_record.h"

/* The op `name` of `record`, or NULL. */
const tp_op_def_t *tp_plugin_record_find_op(const tp_plugin_record_t *record, const char *name);

/* Indexes record->ops[index], which must be the last op so far (index == record->num_ops, before
 * num_ops counts it). False when out of host memory; the index is then unchanged. */
bool tp_plugin_record_index_op(tp_plugin_record_t *record, size_t index);

#endif
