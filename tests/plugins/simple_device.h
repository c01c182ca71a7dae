/* SPDX-License-Identifier: Apache-2.0 */
/* A small, complete device for the test plug-ins: host memory behind a synchronous stream. Each
 * test plug-in links its own copy, as a vendor's plug-in would. */
#ifndef TP_TESTS_SIMPLE_DEVICE_H
#define TP_TESTS_SIMPLE_DEVICE_H

#include "tensorplug/plugin.h"

/* Fills `def` (whose struct_size the caller sets) for `count` devices of `type`. */
void simple_device_fill(tp_device_type_def_t *def, const char *type, int32_t count,
                        const tp_host_api_t *host);

/* Registers `count` devices of `type` at `priority`, the struct as this header has it. */
void simple_device_register(const tp_host_api_t *host, tp_registrar_t *registrar,
                            const char *type, int32_t count, int32_t priority,
                            tp_plugin_status_t *status);

#endif
