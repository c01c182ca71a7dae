/* SPDX-License-Identifier: Apache-2.0 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "plugin/tfcompat_loader.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/private_library.h"
#include "plugin/tfcompat_entry.h"

/* Loaded once, for the first TensorFlow plug-in, and kept. */
static void *adapter;
static tp_tfcompat_entry_fn adapter_entry;

/* Where the adapter may be, in order: TP_TFCOMPAT_LIBRARY, then where tensorplug's private
 * libraries are (base/private_library.h). Returns how many paths it wrote. */
enum { MAX_CANDIDATES = TP_PRIVATE_LIBRARY_CANDIDATES + 1,
       CANDIDATE_CAPACITY = TP_PRIVATE_LIBRARY_PATH_CAPACITY };

static int adapter_candidates(char (*paths)[CANDIDATE_CAPACITY]) {
    int count = 0;
    const char *chosen = tp_env_get("TP_TFCOMPAT_LIBRARY");
    if (chosen != NULL && chosen[0] == '/')
        snprintf(paths[count++], CANDIDATE_CAPACITY, "%s", chosen);
    return count + tp_private_library_candidates(TP_TFCOMPAT_LIBRARY_NAME, paths + count);
}

/* Loads the adapter with its names global, so that the TensorFlow plug-in's references to
 * TF_* functions resolve to it, as they resolve to libtensorflow_framework in TensorFlow. */
static bool load_adapter(char *reason, size_t capacity) {
    if (adapter_entry != NULL) return true;
    char paths[MAX_CANDIDATES][CANDIDATE_CAPACITY];
    int count = adapter_candidates(paths);
    const char *path = paths[0];
    char error[512] = "";
    void *library = tp_private_library_open(paths, count, &path, error, sizeof error);
    if (library == NULL) {
        snprintf(reason, capacity,
                 "it is a TensorFlow plug-in, and tensorplug's TensorFlow adapter cannot be "
                 "loaded: %s", error);
        return false;
    }
    void *symbol = dlsym(library, TP_TFCOMPAT_ENTRY_NAME);
    if (symbol == NULL) {
        snprintf(reason, capacity, "it is a TensorFlow plug-in, and %s exports no %s", path,
                 TP_TFCOMPAT_ENTRY_NAME);
        dlclose(library);
        return false;
    }
    adapter = library;
    memcpy(&adapter_entry, &symbol, sizeof adapter_entry);
    return true;
}

/* Whether the file exports SE_InitPlugin. A file whose TF_* references do not resolve yet
 * still opens with lazy binding, which calls none of them. */
static bool exports_se_init(const char *path, void *library) {
    if (library != NULL) return dlsym(library, "SE_InitPlugin") != NULL;
    void *lazy = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (lazy == NULL) return false;
    bool found = dlsym(lazy, "SE_InitPlugin") != NULL;
    dlclose(lazy);
    return found;
}

tp_tfcompat_result_t tp_tfcompat_open(const char *path, void *library, const char *open_error,
                                      void **out_library,
                                      const tp_plugin_descriptor_t **out_descriptor,
                                      char *reason, size_t capacity) {
    if (!exports_se_init(path, library)) return TP_TFCOMPAT_NOT_TENSORFLOW;
    if (!load_adapter(reason, capacity)) {
        if (library != NULL) dlclose(library);
        return TP_TFCOMPAT_REFUSED;
    }
    if (library == NULL) {
        dlerror();
        library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (library == NULL) {
            const char *error = dlerror();
            snprintf(reason, capacity,
                     "it is a TensorFlow plug-in that needs a function tensorplug's TensorFlow "
                     "adapter does not provide: %s",
                     error != NULL ? error : open_error != NULL ? open_error : "unknown error");
            return TP_TFCOMPAT_REFUSED;
        }
    }
    const tp_plugin_descriptor_t *descriptor = adapter_entry(library, path, reason, capacity);
    if (descriptor == NULL) {
        dlclose(library);
        return TP_TFCOMPAT_REFUSED;
    }
    *out_library = library;
    *out_descriptor = descriptor;
    return TP_TFCOMPAT_OPENED;
}
