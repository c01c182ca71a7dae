/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in plug-ins' entry points, listed in devices/builtin.c: the core's only link to
 * the devices compiled into it, used exactly as a loaded plug-in's dlsym'd entry point is. */
#ifndef TP_PLUGIN_BUILTIN_PLUGINS_H
#define TP_PLUGIN_BUILTIN_PLUGINS_H

#include <stddef.h>

#include "tensorplug/plugin.h"

extern const tp_plugin_entry_fn tp_builtin_plugin_entries[];
extern const size_t tp_builtin_plugin_count;

#endif
