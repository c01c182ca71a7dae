/* SPDX-License-Identifier: Apache-2.0 */
/* Who may change a plug-in file or folder. Loading a plug-in runs its code as the user running
 * the program, so the file and the folder that holds it must be changeable by no one else:
 * owned by root or that user, and not writable by group or others. */
#ifndef TP_PLUGIN_PLUGIN_TRUST_H
#define TP_PLUGIN_PLUGIN_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* True when the file or folder `info` describes may be trusted; otherwise `reason` gets why,
 * as "it is ..." for a log line that names it. */
bool tp_plugin_trust_check(const struct stat *info, char *reason, size_t capacity);

/* For tests: judge as if the program ran as `user` ((uid_t)-1: as itself), so that a test that
 * cannot give a file to another user can still see one refused as someone else's. */
void tp_plugin_trust_pretend_user(uid_t user);

#endif
