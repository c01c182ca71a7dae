/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU device's entry point, listed in devices/builtin.c. */
#ifndef TP_DEVICES_CPU_PLUGIN_H
#define TP_DEVICES_CPU_PLUGIN_H

#include "tensorplug/plugin.h"

const tp_plugin_descriptor_t *tp_cpu_plugin_entry(void);

#endif
