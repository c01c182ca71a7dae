/* SPDX-License-Identifier: Apache-2.0 */
/* The contract between the plug-in loader and the TensorFlow compatibility adapter
 * (libtensorplug_tfcompat.so, compat/tensorflow/). The loader opens a TensorFlow plug-in (one
 * that exports SE_InitPlugin), then the adapter, and asks the adapter for a native descriptor
 * that runs the TensorFlow plug-in through plugin.h; from there the plug-in is checked, loaded
 * and refused like any native one. The adapter includes only this header and plugin.h. */
#ifndef TP_PLUGIN_TFCOMPAT_ENTRY_H
#define TP_PLUGIN_TFCOMPAT_ENTRY_H

#include <stddef.h>

#include "tensorplug/plugin.h"

#define TP_TFCOMPAT_LIBRARY_NAME "libtensorplug_tfcompat.so.1"
#define TP_TFCOMPAT_ENTRY_NAME "tp_tfcompat_entry"

/* Returns the descriptor (valid for the life of the process) of the TensorFlow plug-in opened
 * as `library` from `path`; NULL, with `reason` ("it ..."), when the adapter cannot take it. */
typedef const tp_plugin_descriptor_t *(*tp_tfcompat_entry_fn)(void *library, const char *path,
                                                              char *reason, size_t capacity);

#endif
