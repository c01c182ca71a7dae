/* SPDX-License-Identifier: Apache-2.0 */
/* What the core asks of a parsed device name beyond the public parse and canonical form. */
#ifndef TP_DEVICE_DEVICE_NAME_H
#define TP_DEVICE_DEVICE_NAME_H

#include <stdbool.h>

#include "tensorplug/tensorplug.h"

/* Whether the spec can name a device of this process: replica 0, and localhost task 0 or the
 * process's own job and task (tp_task_is_self; absent fields match). */
bool tp_device_spec_is_local(const tp_device_spec_t *spec);

#endif
