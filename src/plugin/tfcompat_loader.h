/* SPDX-License-Identifier: Apache-2.0 */
/* Recognising a TensorFlow PluggableDevice plug-in (it exports SE_InitPlugin and no native
 * entry point) and opening it through the TensorFlow adapter, libtensorplug_tfcompat. The
 * adapter is loaded, with its TF_* names visible to later libraries, only when such a plug-in
 * is found: the core exports none of them and links nothing of the adapter. */
#ifndef TP_PLUGIN_TFCOMPAT_LOADER_H
#define TP_PLUGIN_TFCOMPAT_LOADER_H

#include <stddef.h>

#include "tensorplug/plugin.h"

typedef enum tp_tfcompat_result {
    TP_TFCOMPAT_NOT_TENSORFLOW, /* not a TensorFlow plug-in: the caller goes on as before */
    TP_TFCOMPAT_OPENED,         /* *out_library and *out_descriptor are set */
    TP_TFCOMPAT_REFUSED         /* `reason` says why, as "it ..." */
} tp_tfcompat_result_t;

/* Tries `path` as a TensorFlow plug-in. `library` is the file as dlopen opened it (NULL when
 * it could not, with `open_error` saying why): a plug-in that needs TensorFlow's functions
 * opens only once the adapter is loaded. Called under the plug-in library's lock. */
tp_tfcompat_result_t tp_tfcompat_open(const char *path, void *library, const char *open_error,
                                      void **out_library,
                                      const tp_plugin_descriptor_t **out_descriptor,
                                      char *reason, size_t capacity);

#endif
