/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime's environment variables (TP_*). Every read goes through secure_getenv, so a
 * setuid or setgid program sees none of them: an unprivileged user's TP_PLUGIN_PATH must not
 * choose the code a privileged program runs. A value set but unusable is never silently
 * ignored: it gets one warning line naming the variable and the value, and the default is used.
 * An empty value means unset, as the test harness and shells clear variables that way. */
#ifndef TP_BASE_ENV_H
#define TP_BASE_ENV_H

#include <stdbool.h>

/* The value of `name`, or NULL when it is unset, empty, or the process runs with privileges
 * it did not start with. The string belongs to the environment. Thread-safe as getenv is. */
const char *tp_env_get(const char *name);

/* Logs, as a warning, "NAME='VALUE' PROBLEM; FALLBACK" ("TP_LOG_LEVEL='loud' is not one of
 * debug, info, warning, error; using info") once per process for each variable and value, so
 * that a variable read at every context creation does not repeat itself. Thread-safe. */
void tp_env_warn(const char *name, const char *value, const char *problem, const char *fallback);

/* The index in `choices` of the value of `name` (ASCII case-insensitive); `fallback` when the
 * variable is unset, and when its value is none of the choices, after one warning that lists
 * them and says `fallback_meaning` ("off") is used. */
int tp_env_choice(const char *name, const char *const *choices, int count, int fallback,
                  const char *fallback_meaning);

/* 1 or true, 0 or false (any case); `fallback` when unset, and after one warning when it is
 * neither. */
bool tp_env_flag(const char *name, bool fallback);

#endif
