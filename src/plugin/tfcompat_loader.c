/* SPDX-License-Identifier: Apache-2.0 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "plugin/tfcompat_loader.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "plugin/tfcompat_entry.h"

#ifndef TP_INSTALL_LIBDIR
#define TP_INSTALL_LIBDIR "/usr/local/lib"
#endif
#ifndef TP_LIBDIR_IN_PREFIX
#define TP_LIBDIR_IN_PREFIX "lib"
#endif

/* Loaded once, for the first TensorFlow plug-in, and kept. */
static void *adapter;
static tp_tfcompat_entry_fn adapter_entry;

/* Where the adapter is: TP_TFCOMPAT_LIBRARY; else beside the core's library (or, for a
 * program that has the core built in, in the lib folder beside its bin folder); else the
 * installed library folder. */
static void adapter_path(char *buffer, size_t capacity) {
    const char *chosen = tp_env_get("TP_TFCOMPAT_LIBRARY");
    if (chosen != NULL && chosen[0] == '/') {
        snprintf(buffer, capacity, "%s", chosen);
        return;
    }
    Dl_info info;
    void *self = (void *)(uintptr_t)&adapter_path;
    char object_path[PATH_MAX];
    /* A program's own name may be relative to where it was started from. */
    if (dladdr(self, &info) != 0 && info.dli_fname != NULL && info.dli_fname[0] != '\0' &&
        realpath(info.dli_fname, object_path) != NULL) {
        char *folder = dirname(object_path);
        const char *base = strrchr(folder, '/');
        if (base != NULL && strcmp(base, "/bin") == 0)
            snprintf(buffer, capacity, "%.*s/%s/%s", (int)(base - folder), folder,
                     TP_LIBDIR_IN_PREFIX, TP_TFCOMPAT_LIBRARY_NAME);
        else
            snprintf(buffer, capacity, "%s/%s", folder, TP_TFCOMPAT_LIBRARY_NAME);
        return;
    }
    snprintf(buffer, capacity, "%s/%s", TP_INSTALL_LIBDIR, TP_TFCOMPAT_LIBRARY_NAME);
}

/* Loads the adapter with its names global, so that the TensorFlow plug-in's references to
 * TF_* functions resolve to it, as they resolve to libtensorflow_framework in TensorFlow. */
static bool load_adapter(char *reason, size_t capacity) {
    if (adapter_entry != NULL) return true;
    char path[PATH_MAX + 64];
    adapter_path(path, sizeof path);
    dlerror();
    void *library = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (library == NULL) {
        const char *error = dlerror();
        snprintf(reason, capacity,
                 "it is a TensorFlow plug-in, and tensorplug's TensorFlow adapter cannot be "
                 "loaded: %s", error != NULL ? error : path);
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
