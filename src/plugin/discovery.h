/* SPDX-License-Identifier: Apache-2.0 */
/* Finding plug-in files: every "*.so" in each folder of a search path, sorted by name within a
 * folder, folders in the order given, then the installed plug-in folder. An entry of the path
 * that names a file rather than a folder is that one plug-in. Relative entries, and folders
 * that someone besides root and the running user can change, are skipped with a line each;
 * a setuid or setgid program ignores the search path, and TP_PLUGINS=none finds nothing
 * (plugin_selection.h). */
#ifndef TP_PLUGIN_DISCOVERY_H
#define TP_PLUGIN_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>

#include "tensorplug/tensorplug.h"

typedef struct tp_path_list {
    char **paths;
    size_t count;
} tp_path_list_t;

/* `search_path` is ':'-separated and may be NULL or empty. A folder that does not exist is
 * skipped quietly. A path from the environment (TP_PLUGIN_PATH) is ignored, with a warning, in
 * a setuid or setgid program; one the program chose itself (its plugin_path option) is not,
 * as glibc ignores LD_LIBRARY_PATH there but not the paths a program gives dlopen. Fails only
 * when out of host memory; *out is then empty. */
tp_status_t *tp_plugin_discover(const char *search_path, bool path_from_environment,
                                bool include_installed,
                                tp_path_list_t *out);
void tp_path_list_free(tp_path_list_t *list);

/* The installed plug-in folder: "tensorplug/plugins" beside the library that holds this code
 * (or, for a program linked statically into <prefix>/bin, the plug-in folder of <prefix>: lib/ or
 * Debian's multiarch lib/<triplet>/), and the folder configured at build time when neither can be
 * found. */
void tp_installed_plugin_dir(char *buffer, size_t capacity);

/* For tests: discover as a setuid program does, without being one. */
void tp_plugin_discovery_force_secure_mode(bool forced);

#endif
