/* SPDX-License-Identifier: Apache-2.0 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "plugin/discovery.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/env.h"
#include "base/log.h"
#include "base/printable.h"
#include "base/status.h"
#include "plugin/plugin_selection.h"
#include "plugin/plugin_trust.h"

#ifndef TP_INSTALL_PLUGIN_DIR
#define TP_INSTALL_PLUGIN_DIR "/usr/local/lib/tensorplug/plugins"
#endif
/* The same folder relative to the prefix: lib/tensorplug/plugins, or Debian's
 * lib/x86_64-linux-gnu/tensorplug/plugins. */
#ifndef TP_PLUGIN_DIR_IN_PREFIX
#define TP_PLUGIN_DIR_IN_PREFIX "lib/tensorplug/plugins"
#endif

void tp_installed_plugin_dir(char *buffer, size_t capacity) {
    Dl_info info;
    void *self = (void *)(uintptr_t)&tp_installed_plugin_dir;
    if (dladdr(self, &info) != 0 && info.dli_fname != NULL && info.dli_fname[0] == '/') {
        char object_path[PATH_MAX];
        snprintf(object_path, sizeof object_path, "%s", info.dli_fname);
        char *folder = dirname(object_path);
        const char *base = strrchr(folder, '/');
        if (base != NULL && strcmp(base, "/bin") == 0)
            snprintf(buffer, capacity, "%.*s/%s", (int)(base - folder), folder,
                     TP_PLUGIN_DIR_IN_PREFIX);
        else
            snprintf(buffer, capacity, "%s/tensorplug/plugins", folder);
        return;
    }
    snprintf(buffer, capacity, "%s", TP_INSTALL_PLUGIN_DIR);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_plugin_suffix(const char *name) {
    size_t length = strlen(name);
    return length > 3 && strcmp(name + length - 3, ".so") == 0;
}

static bool append(tp_path_list_t *list, size_t *capacity, char *path) {
    if (list->count == *capacity) {
        size_t grown_capacity = *capacity == 0 ? 16 : *capacity * 2;
        char **grown = realloc(list->paths, grown_capacity * sizeof *grown);
        if (grown == NULL) return false;
        list->paths = grown;
        *capacity = grown_capacity;
    }
    list->paths[list->count++] = path;
    return true;
}

/* Whether `text` reads on a terminal as it is (tp_printable_copy changes nothing). */
static bool is_printable(const char *text) {
    char shown[PATH_MAX * TP_PRINTABLE_EXPANSION + 1];
    size_t length = strlen(text);
    return length < PATH_MAX && tp_printable_copy(shown, sizeof shown, text) == length &&
           memcmp(shown, text, length) == 0;
}

/* Adds the plug-in files of one folder, sorted, when the folder may be trusted; an entry that
 * names a file is that plug-in alone, so that one plug-in can be loaded without its neighbours
 * (plugin-check does). Every "*.so" is listed whatever it is: the loader refuses a FIFO, a
 * folder or a link loop with a line of its own, where skipping it would hide it. A folder that
 * does not exist is skipped quietly; one that cannot be used gets a line. Fails only when out
 * of host memory. */
static bool scan_folder(const char *folder, tp_path_list_t *list, size_t *capacity) {
    struct stat info;
    if (stat(folder, &info) != 0) {
        if (errno == ELOOP)
            tp_log_message(TP_LOG_WARNING, "skipped plug-in folder %s: it is a symbolic link "
                           "loop", folder);
        else if (errno != ENOENT && errno != ENOTDIR)
            tp_log_message(TP_LOG_WARNING, "skipped plug-in folder %s: %s", folder,
                           strerror(errno));
        return true;
    }
    if (!S_ISDIR(info.st_mode)) {
        char *path = strdup(folder);
        if (path != NULL && append(list, capacity, path)) return true;
        free(path);
        return false;
    }
    /* What is judged is the folder opened, not whatever the path names a moment later. */
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    char reason[256];
    bool usable = fd >= 0 && fstat(fd, &info) == 0;
    if (!usable)
        snprintf(reason, sizeof reason, "it cannot be opened: %s", strerror(errno));
    else
        usable = tp_plugin_trust_check(&info, reason, sizeof reason);
    DIR *directory = usable ? fdopendir(fd) : NULL;
    if (usable && directory == NULL)
        snprintf(reason, sizeof reason, "it cannot be read: %s", strerror(errno));
    if (directory == NULL) {
        if (fd >= 0) close(fd);
        tp_log_message(TP_LOG_WARNING, "skipped plug-in folder %s: %s", folder, reason);
        return true;
    }
    size_t first = list->count;
    bool ok = true;
    struct dirent *entry;
    while (ok && (entry = readdir(directory)) != NULL) {
        if (!has_plugin_suffix(entry->d_name)) continue;
        if (!is_printable(entry->d_name)) {
            /* Its name would put control bytes in every line and listing that names it. */
            char shown[NAME_MAX * TP_PRINTABLE_EXPANSION + 1];
            tp_printable_copy(shown, sizeof shown, entry->d_name);
            tp_log_message(TP_LOG_WARNING, "skipped plug-in file %s/%s: its name holds bytes "
                           "that are not printable", folder, shown);
            continue;
        }
        size_t length = strlen(folder) + 1 + strlen(entry->d_name) + 1;
        char *path = malloc(length);
        if (path == NULL) {
            ok = false;
            break;
        }
        snprintf(path, length, "%s/%s", folder, entry->d_name);
        if (!append(list, capacity, path)) {
            free(path);
            ok = false;
        }
    }
    closedir(directory);
    qsort(list->paths + first, list->count - first, sizeof *list->paths, compare_names);
    return ok;
}

/* ---- Secure mode ------------------------------------------------------------------------------ */

static atomic_bool secure_mode_forced;

void tp_plugin_discovery_force_secure_mode(bool forced) {
    atomic_store(&secure_mode_forced, forced);
}

/* A setuid or setgid program (or one with file capabilities) runs with rights its user does
 * not have: the kernel marks it AT_SECURE, and the user's search path must not pick its code. */
static bool secure_mode(void) {
    return atomic_load(&secure_mode_forced) || getauxval(AT_SECURE) != 0;
}

/* ---- The search ------------------------------------------------------------------------------- */

tp_status_t *tp_plugin_discover(const char *search_path, bool path_from_environment,
                                bool include_installed,
                                tp_path_list_t *out) {
    tp_path_list_t list = {NULL, 0};
    size_t capacity = 0;
    bool ok = true;
    if (tp_plugin_selection_is_none()) {
        *out = list;
        return NULL;
    }
    char installed[PATH_MAX];
    tp_installed_plugin_dir(installed, sizeof installed);
    if (path_from_environment && search_path != NULL && search_path[0] != '\0' &&
        secure_mode()) {
        tp_log_message(TP_LOG_WARNING, "ignored the plug-in search path '%s': a setuid or setgid "
                       "program loads plug-ins only from %s", search_path, installed);
        search_path = NULL;
    }
    const char *cursor = search_path != NULL ? search_path : "";
    while (ok && *cursor != '\0') {
        const char *end = strchr(cursor, ':');
        size_t length = end != NULL ? (size_t)(end - cursor) : strlen(cursor);
        if (length > 0 && length < PATH_MAX) {
            char folder[PATH_MAX];
            memcpy(folder, cursor, length);
            folder[length] = '\0';
            /* A relative entry would name another folder in every working directory. */
            if (!is_printable(folder))
                tp_log_message(TP_LOG_WARNING, "skipped plug-in search path entry '%s': it "
                               "holds bytes that are not printable", folder);
            else if (folder[0] != '/')
                tp_log_message(TP_LOG_WARNING, "skipped plug-in search path entry '%s': it is "
                               "not an absolute path", folder);
            else
                ok = scan_folder(folder, &list, &capacity);
        }
        cursor += length;
        if (*cursor == ':') cursor++;
    }
    if (ok && include_installed) ok = scan_folder(installed, &list, &capacity);
    if (!ok) {
        tp_path_list_free(&list);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory listing plug-ins");
    }
    *out = list;
    return NULL;
}

void tp_path_list_free(tp_path_list_t *list) {
    for (size_t i = 0; i < list->count; i++) free(list->paths[i]);
    free(list->paths);
    list->paths = NULL;
    list->count = 0;
}
