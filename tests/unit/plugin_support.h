/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the tests that load plug-ins and read what the loader said: the log captured
 * into a buffer, and a plug-in's info by file name. One test program per translation unit,
 * so each has its own buffer. */
#ifndef TP_TESTS_PLUGIN_SUPPORT_H
#define TP_TESTS_PLUGIN_SUPPORT_H

#include "test_support.h"

/* What capture_log wrote, one "LEVEL line" per line; clear it by setting [0] to '\0'. */
static char captured_log[32768];

static inline void capture_log(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    size_t used = strlen(captured_log);
    snprintf(captured_log + used, sizeof captured_log - used, "%d %s\n", (int)level, line);
}

static inline size_t count_occurrences(const char *text, const char *fragment) {
    size_t count = 0;
    for (const char *at = strstr(text, fragment); at != NULL; at = strstr(at + 1, fragment))
        count++;
    return count;
}

/* The info of the plug-in whose path ends with `file`; fails the test if there is none. */
static inline tp_plugin_info_t plugin_named(const tp_context_t *context, const char *file) {
    for (size_t i = 0; i < tp_plugin_count(context); i++) {
        tp_plugin_info_t info = {.struct_size = sizeof info};
        assert_ok(tp_plugin_get(context, i, &info));
        size_t path_length = strlen(info.path), file_length = strlen(file);
        if (path_length >= file_length && strcmp(info.path + path_length - file_length, file) == 0)
            return info;
    }
    print_error("no plug-in %s\n", file);
    fail();
    return (tp_plugin_info_t){0};
}

/* What tp_list_physical_devices prints for `type` (NULL: all); the caller frees it. */
static inline char *list_devices(const tp_context_t *context, const char *type) {
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    assert_non_null(out);
    assert_ok(tp_list_physical_devices(context, type, out));
    fclose(out);
    return text;
}

#endif
