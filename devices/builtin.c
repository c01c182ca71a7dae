/* SPDX-License-Identifier: Apache-2.0 */
/* The plug-ins compiled into the library. The core takes these entry points exactly as it
 * takes a loaded plug-in's from dlsym. */
#include <stddef.h>

#include "cpu/cpu_plugin.h"

extern const tp_plugin_entry_fn tp_builtin_plugin_entries[];
extern const size_t tp_builtin_plugin_count;

const tp_plugin_entry_fn tp_builtin_plugin_entries[] = {tp_cpu_plugin_entry};
const size_t tp_builtin_plugin_count = sizeof tp_builtin_plugin_entries /
                                       sizeof tp_builtin_plugin_entries[0];
