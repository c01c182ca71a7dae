/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/plugin_trust.h"

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_long pretended_user = -1;

void tp_plugin_trust_pretend_user(uid_t user) {
    atomic_store(&pretended_user, user == (uid_t)-1 ? -1 : (long)user);
}

static uid_t running_user(void) {
    long pretended = atomic_load(&pretended_user);
    return pretended >= 0 ? (uid_t)pretended : geteuid();
}

bool tp_plugin_trust_check(const struct stat *info, char *reason, size_t capacity) {
    uid_t user = running_user();
    if (info->st_uid != 0 && info->st_uid != user) {
        snprintf(reason, capacity, "it is owned by uid %lu, neither root nor the user running "
                 "the program (uid %lu)", (unsigned long)info->st_uid, (unsigned long)user);
        return false;
    }
    if ((info->st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(reason, capacity, "it is writable by %s (mode %04o)",
                 (info->st_mode & S_IWGRP) && (info->st_mode & S_IWOTH) ? "group and others"
                 : (info->st_mode & S_IWGRP)                            ? "group"
                                                                        : "others",
                 (unsigned)(info->st_mode & 07777));
        return false;
    }
    return true;
}
