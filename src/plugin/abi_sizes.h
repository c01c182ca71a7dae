/* SPDX-License-Identifier: Apache-2.0 */
/* The smallest struct_size the host accepts for each struct a plug-in hands it: the size the
 * struct had in ABI 1.0. Fields appended by later minors are read as zero when absent. */
#ifndef TP_PLUGIN_ABI_SIZES_H
#define TP_PLUGIN_ABI_SIZES_H

#include <stddef.h>

#include "tensorplug/plugin.h"

#define TP_V1_0_DESCRIPTOR_SIZE sizeof(tp_plugin_descriptor_t)
#define TP_V1_0_DEVICE_INFO_SIZE sizeof(tp_device_info_t)
#define TP_V1_0_DEVICE_TYPE_DEF_SIZE offsetof(tp_device_type_def_t, device_synchronize)
#define TP_V1_0_OP_ARG_DEF_SIZE offsetof(tp_op_arg_def_t, number_attr)
#define TP_V1_0_OP_ATTR_DEF_SIZE sizeof(tp_op_attr_def_t)
#define TP_V1_0_OP_DEF_SIZE sizeof(tp_op_def_t)
#define TP_V1_0_TYPE_CONSTRAINT_SIZE sizeof(tp_type_constraint_t)
#define TP_V1_0_KERNEL_DEF_SIZE offsetof(tp_kernel_def_t, flags)
#define TP_V1_0_GRAPH_PASS_DEF_SIZE sizeof(tp_graph_pass_def_t)

/* The largest struct_size, and so array stride, the host accepts from a plug-in. The ABI's
 * largest struct is a few hundred bytes and grows only by appended fields, so a size beyond
 * this is a corrupt or hostile value: refused before use, it cannot send the host reading or
 * striding far outside what the plug-in owns (a 1 TiB stride put element 1 of an array in
 * unmapped memory). */
#define TP_MAX_PLUGIN_STRUCT_SIZE ((size_t)64 * 1024)

/* The most elements the host accepts in one array a plug-in hands over (attributes, inputs,
 * outputs, constraints, dtypes): far beyond any real op, and small enough that no count times
 * stride, nor count plus one times a host struct's size, can overflow. */
#define TP_MAX_PLUGIN_ARRAY_LENGTH ((size_t)4096)

#endif
