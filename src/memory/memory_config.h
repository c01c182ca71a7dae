/* SPDX-License-Identifier: Apache-2.0 */
/* What an application asked of one physical device's memory before its context initialized
 * the devices, checked against what the device can honour, and the allocator options of its
 * logical devices that follow. */
#ifndef TP_MEMORY_MEMORY_CONFIG_H
#define TP_MEMORY_MEMORY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory/bfc_allocator.h"
#include "tensorplug/tensorplug.h"

typedef enum { TP_GROWTH_DEFAULT = -1, TP_GROWTH_OFF = 0, TP_GROWTH_ON = 1 } tp_growth_t;

typedef struct tp_memory_config {
    tp_growth_t growth;
    double fraction;          /* of the device's total; 0 when not asked for */
    uint64_t limit;           /* bytes; 0 when not asked for */
    uint64_t *logical_limits; /* NULL: one logical device over the whole device */
    size_t num_logical;
} tp_memory_config_t;

#define TP_MEMORY_CONFIG_INIT {TP_GROWTH_DEFAULT, 0.0, 0, NULL, 0}

/* The device the messages name (`device`, "/physical_device:APU:0") and its total memory
 * (`total`, 0 when the plug-in does not say). Each setter fails, changing nothing, when the
 * device cannot honour the request. */
tp_status_t *tp_memory_config_set_growth(tp_memory_config_t *config, const char *device,
                                         uint64_t total, bool enabled);
tp_status_t *tp_memory_config_set_fraction(tp_memory_config_t *config, const char *device,
                                           uint64_t total, double fraction);
tp_status_t *tp_memory_config_set_limit(tp_memory_config_t *config, const char *device,
                                        uint64_t total, uint64_t limit);
tp_status_t *tp_memory_config_set_logical(tp_memory_config_t *config, const char *device,
                                          uint64_t total, const uint64_t *limits, size_t count);
void tp_memory_config_free(tp_memory_config_t *config);

/* How many logical devices the configuration makes of its device (at least 1). */
size_t tp_memory_config_num_devices(const tp_memory_config_t *config);
/* The allocator options of logical device `index`. `grows_by_default` is the device's default
 * (the host's CPU); `forced` is TP_FORCE_ALLOW_GROWTH's verdict, which overrides everything. */
tp_bfc_options_t tp_memory_config_allocator(const tp_memory_config_t *config, size_t index,
                                            uint64_t total, bool grows_by_default,
                                            tp_growth_t forced);
/* TP_FORCE_ALLOW_GROWTH: "true" or "false"; unset is TP_GROWTH_DEFAULT, and anything else is
 * too, with a warning. */
tp_growth_t tp_memory_config_forced_growth(void);

#endif
