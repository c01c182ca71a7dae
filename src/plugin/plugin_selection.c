/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/plugin_selection.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/env.h"

/* Plug-in names are at most 63 printable characters (plugin_record.c); a list entry is held to
 * the same, without the comma that separates entries. */
enum { MAX_NAME = 63 };

static bool is_name_character(char c) { return c > 0x20 && c < 0x7f && c != ','; }

/* Whether `list` reads as "name[,name]...", with no empty entry. */
static bool is_well_formed(const char *list) {
    size_t length = 0;
    for (const char *c = list;; c++) {
        if (*c == ',' || *c == '\0') {
            if (length == 0) return false;
            if (*c == '\0') return true;
            length = 0;
        } else if (!is_name_character(*c) || ++length > MAX_NAME) {
            return false;
        }
    }
}

/* TP_PLUGINS when it is a well-formed list; NULL when unset, "none" or malformed (with one
 * warning per call site's reading, as for any malformed variable). */
static const char *selection_list(void) {
    const char *value = tp_env_get("TP_PLUGINS");
    if (value == NULL || strcasecmp(value, "none") == 0) return NULL;
    if (!is_well_formed(value)) {
        tp_env_warn("TP_PLUGINS", value,
                    "is neither 'none' nor a comma-separated list of plug-in names",
                    "every plug-in is used");
        return NULL;
    }
    return value;
}

/* The entry of the list at `*cursor`, as its start and length; moves `*cursor` past it. False
 * at the end of the list. */
static bool next_entry(const char **cursor, const char **out_entry, size_t *out_length) {
    if (**cursor == '\0') return false;
    *out_entry = *cursor;
    *out_length = strcspn(*cursor, ",");
    *cursor += *out_length;
    if (**cursor == ',') (*cursor)++;
    return true;
}

static bool entry_is(const char *entry, size_t length, const char *name) {
    return strlen(name) == length && strncmp(entry, name, length) == 0;
}

static bool list_contains(const char *list, const char *name) {
    const char *entry;
    size_t length;
    while (next_entry(&list, &entry, &length))
        if (entry_is(entry, length, name)) return true;
    return false;
}

bool tp_plugin_selection_is_none(void) {
    const char *value = tp_env_get("TP_PLUGINS");
    return value != NULL && strcasecmp(value, "none") == 0;
}

bool tp_plugin_selection_allows(const char *name) {
    if (tp_plugin_selection_is_none()) return false;
    const char *list = selection_list();
    return list == NULL || list_contains(list, name);
}

size_t tp_plugin_selection_missing(const char *const *names, size_t count, char *buffer,
                                   size_t capacity) {
    if (capacity > 0) buffer[0] = '\0';
    const char *list = selection_list();
    if (list == NULL) return 0;
    size_t missing = 0, used = 0;
    const char *entry;
    size_t length;
    while (next_entry(&list, &entry, &length)) {
        bool found = false;
        for (size_t i = 0; i < count && !found; i++) found = entry_is(entry, length, names[i]);
        if (!found) {
            size_t room = used < capacity ? capacity - used : 0;
            int written = snprintf(room > 0 ? buffer + used : NULL, room, "%s'%.*s'",
                                   missing > 0 ? ", " : "", (int)length, entry);
            if (written > 0) used += (size_t)written;
            missing++;
        }
    }
    return missing;
}
