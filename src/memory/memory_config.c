/* SPDX-License-Identifier: Apache-2.0 */
#include "memory/memory_config.h"

#include <stdlib.h>
#include <string.h>

#include "base/byte_size.h"
#include "base/env.h"
#include "base/status.h"

/* A device with growth starts with this much and doubles. */
#define INITIAL_REGION ((uint64_t)2 << 20)
/* What a device reserving up front leaves to its plug-in: 1/50 of it, at least 16 MiB, at
 * most half. */
#define MIN_RESERVE ((uint64_t)16 << 20)

static tp_status_t *refuse_when_split(const tp_memory_config_t *config, const char *device,
                                      const char *what) {
    if (config->num_logical == 0) return NULL;
    return tp_status_make(TP_FAILED_PRECONDITION,
                          "cannot set %s on %s: it is split into %zu logical devices, each "
                          "with its own memory limit",
                          what, device, config->num_logical);
}

static tp_status_t *require_total(const char *device, uint64_t total, const char *what) {
    if (total > 0) return NULL;
    return tp_status_make(TP_FAILED_PRECONDITION,
                          "cannot set %s on %s: its plug-in does not report how much memory it "
                          "has",
                          what, device);
}

tp_status_t *tp_memory_config_set_growth(tp_memory_config_t *config, const char *device,
                                         uint64_t total, bool enabled) {
    TP_RETURN_IF_ERROR(refuse_when_split(config, device, "memory growth"));
    /* Without growth a device reserves its memory up front, which needs a size. */
    if (!enabled && config->limit == 0)
        TP_RETURN_IF_ERROR(require_total(device, total, "memory growth off without a limit"));
    config->growth = enabled ? TP_GROWTH_ON : TP_GROWTH_OFF;
    return NULL;
}

tp_status_t *tp_memory_config_set_fraction(tp_memory_config_t *config, const char *device,
                                           uint64_t total, double fraction) {
    if (!(fraction > 0.0 && fraction <= 1.0))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "memory fraction %g for %s is outside (0, 1]", fraction, device);
    TP_RETURN_IF_ERROR(refuse_when_split(config, device, "a memory fraction"));
    TP_RETURN_IF_ERROR(require_total(device, total, "a memory fraction"));
    if ((uint64_t)(fraction * (double)total) < 256)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "memory fraction %g of %s leaves less than 256 bytes", fraction,
                              device);
    config->fraction = fraction;
    return NULL;
}

static tp_status_t *check_fits(const char *device, uint64_t total, uint64_t bytes,
                               const char *what) {
    if (bytes < 256)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s of %llu bytes for %s is below the smallest allocation, 256 "
                              "bytes",
                              what, (unsigned long long)bytes, device);
    if (total > 0 && bytes > total) {
        char asked[32], has[32];
        return tp_status_make(TP_INVALID_ARGUMENT, "%s of %s for %s exceeds the %s it has", what,
                              tp_byte_size_format(bytes, asked, sizeof asked), device,
                              tp_byte_size_format(total, has, sizeof has));
    }
    return NULL;
}

tp_status_t *tp_memory_config_set_limit(tp_memory_config_t *config, const char *device,
                                        uint64_t total, uint64_t limit) {
    TP_RETURN_IF_ERROR(check_fits(device, total, limit, "a memory limit"));
    TP_RETURN_IF_ERROR(refuse_when_split(config, device, "a memory limit"));
    config->limit = limit;
    return NULL;
}

tp_status_t *tp_memory_config_set_logical(tp_memory_config_t *config, const char *device,
                                          uint64_t total, const uint64_t *limits, size_t count) {
    if (count == 0 || limits == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "logical devices for %s: give at least one memory limit", device);
    if (config->growth != TP_GROWTH_DEFAULT || config->fraction > 0 || config->limit > 0)
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "cannot split %s into logical devices: memory growth, a fraction "
                              "or a limit is already set on it, and each logical device has its "
                              "own limit",
                              device);
    uint64_t sum = 0;
    for (size_t i = 0; i < count; i++) {
        TP_RETURN_IF_ERROR(check_fits(device, total, limits[i], "a logical device's limit"));
        if (limits[i] > UINT64_MAX - sum)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "the logical devices' limits for %s overflow", device);
        sum += limits[i];
    }
    if (total > 0 && sum > total) {
        char asked[32], has[32];
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "the %zu logical devices of %s ask for %s together, more than the "
                              "%s it has",
                              count, device, tp_byte_size_format(sum, asked, sizeof asked),
                              tp_byte_size_format(total, has, sizeof has));
    }
    uint64_t *copy = malloc(count * sizeof *copy);
    if (copy == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    memcpy(copy, limits, count * sizeof *copy);
    free(config->logical_limits);
    config->logical_limits = copy;
    config->num_logical = count;
    return NULL;
}

void tp_memory_config_free(tp_memory_config_t *config) {
    free(config->logical_limits);
    *config = (tp_memory_config_t)TP_MEMORY_CONFIG_INIT;
}

size_t tp_memory_config_num_devices(const tp_memory_config_t *config) {
    return config->num_logical > 0 ? config->num_logical : 1;
}

tp_bfc_options_t tp_memory_config_allocator(const tp_memory_config_t *config, size_t index,
                                            uint64_t total, bool grows_by_default,
                                            tp_growth_t forced) {
    bool growth = grows_by_default || total == 0; /* an unknown size cannot be reserved */
    if (config->growth != TP_GROWTH_DEFAULT) growth = config->growth == TP_GROWTH_ON;
    if (config->num_logical > 0) growth = false;
    if (forced != TP_GROWTH_DEFAULT) growth = forced == TP_GROWTH_ON;

    uint64_t limit;
    if (config->num_logical > 0) {
        limit = config->logical_limits[index];
    } else if (config->limit > 0 || config->fraction > 0) {
        limit = UINT64_MAX;
        if (config->limit > 0) limit = config->limit;
        uint64_t share = (uint64_t)(config->fraction * (double)total);
        if (config->fraction > 0 && share < limit) limit = share;
    } else if (total == 0) {
        limit = UINT64_MAX;
    } else if (growth) {
        limit = total;
    } else {
        uint64_t reserve = total / 50 > MIN_RESERVE ? total / 50 : MIN_RESERVE;
        if (reserve > total / 2) reserve = total / 2;
        limit = total - reserve;
    }
    if (limit == UINT64_MAX) growth = true; /* nothing known to reserve up front */
    uint64_t initial = INITIAL_REGION < limit ? INITIAL_REGION : limit;
    return (tp_bfc_options_t){limit, growth, growth ? initial : 0, 0};
}

tp_growth_t tp_memory_config_forced_growth(void) {
    static const char *const choices[] = {"true", "false"};
    switch (tp_env_choice("TP_FORCE_ALLOW_GROWTH", choices, 2, -1,
                          "what the program set for each device")) {
    case 0:
        return TP_GROWTH_ON;
    case 1:
        return TP_GROWTH_OFF;
    default:
        return TP_GROWTH_DEFAULT;
    }
}
