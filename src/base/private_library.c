/* SPDX-License-Identifier: Apache-2.0 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "base/private_library.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TP_INSTALL_LIBDIR
#define TP_INSTALL_LIBDIR "/usr/local/lib"
#endif
#ifndef TP_LIBDIR_IN_PREFIX
#define TP_LIBDIR_IN_PREFIX "lib"
#endif

int tp_private_library_candidates(const char *name,
                                  char (*paths)[TP_PRIVATE_LIBRARY_PATH_CAPACITY]) {
    int count = 0;
    Dl_info info;
    void *self = (void *)(uintptr_t)&tp_private_library_candidates;
    char object_path[PATH_MAX];
    /* A program's own name may be relative to where it was started from. */
    if (dladdr(self, &info) != 0 && info.dli_fname != NULL && info.dli_fname[0] != '\0' &&
        realpath(info.dli_fname, object_path) != NULL) {
        char folder[PATH_MAX + 64];
        snprintf(folder, sizeof folder, "%s", dirname(object_path));
        char *base = strrchr(folder, '/');
        if (base != NULL && strcmp(base, "/bin") == 0)
            snprintf(base, sizeof folder - (size_t)(base - folder), "/%s", TP_LIBDIR_IN_PREFIX);
        snprintf(paths[count++], TP_PRIVATE_LIBRARY_PATH_CAPACITY, "%s/tensorplug/%s", folder,
                 name);
        snprintf(paths[count++], TP_PRIVATE_LIBRARY_PATH_CAPACITY, "%s/%s", folder, name);
    }
    snprintf(paths[count++], TP_PRIVATE_LIBRARY_PATH_CAPACITY, "%s/tensorplug/%s",
             TP_INSTALL_LIBDIR, name);
    return count;
}

void *tp_private_library_open(char (*paths)[TP_PRIVATE_LIBRARY_PATH_CAPACITY], int count,
                              const char **out_path, char *error, size_t capacity) {
    if (capacity > 0) error[0] = '\0';
    *out_path = count > 0 ? paths[0] : "";
    for (int i = 0; i < count; i++) {
        dlerror();
        void *library = dlopen(paths[i], RTLD_NOW | RTLD_GLOBAL);
        if (library != NULL) {
            *out_path = paths[i];
            return library;
        }
        /* A file that is not there says little; one that is there and fails says why. */
        const char *message = dlerror();
        if (message != NULL && (i == 0 || access(paths[i], F_OK) == 0)) {
            snprintf(error, capacity, "%s", message);
            *out_path = paths[i];
        }
    }
    return NULL;
}
