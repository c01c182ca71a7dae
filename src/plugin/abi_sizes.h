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
#define TP_V1_0_KERNEL_DEF_SIZE sizeof(tp_kernel_def_t)
#define TP_V1_0_GRAPH_PASS_DEF_SIZE sizeof(tp_graph_pass_def_t)

#endif
