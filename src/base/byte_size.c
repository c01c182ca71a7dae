/* SPDX-License-Identifier: Apache-2.0 */
#include "base/byte_size.h"

#include <stdio.h>

const char *tp_byte_size_format(uint64_t bytes, char *text, size_t capacity) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(text, capacity, "%llu bytes", (unsigned long long)bytes);
        return text;
    }
    double value = (double)bytes / 1024.0;
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024.0;
        unit++;
    }
    snprintf(text, capacity, "%.1f %s", value, units[unit]);
    return text;
}
