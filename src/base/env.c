/* SPDX-License-Identifier: Apache-2.0 */
/* secure_getenv is a GNU extension; the rest of the core asks only for POSIX. */
#define _GNU_SOURCE
#include "base/env.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"

/* The variables and values already warned about. Each variable is read by one module, and a
 * value worth a second warning is a changed one; when the table is full a warning repeats,
 * which beats one that is lost. */
enum { MAX_WARNED = 32, WARNED_VALUE_CAPACITY = 256 };

static struct {
    char name[64];
    char value[WARNED_VALUE_CAPACITY];
} warned[MAX_WARNED];
static size_t num_warned;
static pthread_mutex_t warned_mutex = PTHREAD_MUTEX_INITIALIZER;

const char *tp_env_get(const char *name) {
    const char *value = secure_getenv(name);
    return value != NULL && value[0] != '\0' ? value : NULL;
}

/* Whether (name, value) is new, remembering it. Values longer than the table holds compare by
 * their first bytes: two such values differing only further on warn once. */
static bool first_time(const char *name, const char *value) {
    pthread_mutex_lock(&warned_mutex);
    bool first = true;
    for (size_t i = 0; i < num_warned && first; i++)
        if (strncmp(warned[i].name, name, sizeof warned[i].name - 1) == 0 &&
            strncmp(warned[i].value, value, sizeof warned[i].value - 1) == 0)
            first = false;
    if (first && num_warned < MAX_WARNED) {
        snprintf(warned[num_warned].name, sizeof warned[num_warned].name, "%s", name);
        snprintf(warned[num_warned].value, sizeof warned[num_warned].value, "%s", value);
        num_warned++;
    }
    pthread_mutex_unlock(&warned_mutex);
    return first;
}

void tp_env_warn(const char *name, const char *value, const char *problem, const char *fallback) {
    /* The log escapes control bytes, so a hostile value cannot forge or hide lines. */
    if (first_time(name, value))
        tp_log_message(TP_LOG_WARNING, "%s='%s' %s; %s", name, value, problem, fallback);
}

int tp_env_choice(const char *name, const char *const *choices, int count, int fallback,
                  const char *fallback_meaning) {
    const char *value = tp_env_get(name);
    if (value == NULL) return fallback;
    for (int i = 0; i < count; i++)
        if (strcasecmp(value, choices[i]) == 0) return i;
    char expected[256] = "is not one of ";
    size_t used = strlen(expected);
    for (int i = 0; i < count && used < sizeof expected; i++)
        used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%s",
                                 i == 0 ? "" : ", ", choices[i]);
    char using[128];
    snprintf(using, sizeof using, "using the default, %s", fallback_meaning);
    tp_env_warn(name, value, expected, using);
    return fallback;
}

bool tp_env_flag(const char *name, bool fallback) {
    static const char *const flags[] = {"1", "true", "0", "false"};
    int choice = tp_env_choice(name, flags, 4, -1, fallback ? "on" : "off");
    return choice < 0 ? fallback : choice < 2;
}
