#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "plugin/discovery.h"

#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"

#ifndef TP_INSTALL_PLUGIN_DIR
#define TP_INSTALL_PLUGIN_DIR "/usr/local/lib/tensorplug/plugins"
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
            snprintf(buffer, capacity, "%.*s/lib/tensorplug/plugins", (int)(base - folder),
                     folder);
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

/* Adds the plug-in files of one folder, sorted; an entry that names a file is that plug-in
 * alone, so that one plug-in can be loaded without its neighbours (plugin-check does). */
static bool scan_folder(const char *folder, tp_path_list_t *list, size_t *capacity) {
    struct stat entry_info;
    if (stat(folder, &entry_info) == 0 && S_ISREG(entry_info.st_mode)) {
        char *path = strdup(folder);
        if (path != NULL && append(list, capacity, path)) return true;
        free(path);
        return false;
    }
    DIR *directory = opendir(folder);
    if (directory == NULL) return true;
    size_t first = list->count;
    bool ok = true;
    struct dirent *entry;
    while (ok && (entry = readdir(directory)) != NULL) {
        if (!has_plugin_suffix(entry->d_name)) continue;
        size_t length = strlen(folder) + 1 + strlen(entry->d_name) + 1;
        char *path = malloc(length);
        if (path == NULL) {
            ok = false;
            break;
        }
        snprintf(path, length, "%s/%s", folder, entry->d_name);
        struct stat info;
        if (stat(path, &info) != 0 || !S_ISREG(info.st_mode)) {
            free(path);
            continue;
        }
        if (!append(list, capacity, path)) {
            free(path);
            ok = false;
        }
    }
    closedir(directory);
    qsort(list->paths + first, list->count - first, sizeof *list->paths, compare_names);
    return ok;
}

tp_status_t *tp_plugin_discover(const char *search_path, bool include_installed,
                                tp_path_list_t *out) {
    tp_path_list_t list = {NULL, 0};
    size_t capacity = 0;
    bool ok = true;
    const char *cursor = search_path != NULL ? search_path : "";
    while (ok && *cursor != '\0') {
        const char *end = strchr(cursor, ':');
        size_t length = end != NULL ? (size_t)(end - cursor) : strlen(cursor);
        if (length > 0 && length < PATH_MAX) {
            char folder[PATH_MAX];
            memcpy(folder, cursor, length);
            folder[length] = '\0';
            ok = scan_folder(folder, &list, &capacity);
        }
        cursor += length;
        if (*cursor == ':') cursor++;
    }
    if (ok && include_installed) {
        char folder[PATH_MAX];
        tp_installed_plugin_dir(folder, sizeof folder);
        ok = scan_folder(folder, &list, &capacity);
    }
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
