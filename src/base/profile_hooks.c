/* SPDX-License-Identifier: Apache-2.0 */
#include "base/profile_hooks.h"

#include <time.h>

_Atomic(const tp_profile_hooks_t *) tp_profile_hooks_installed = NULL;

void tp_profile_hooks_install(const tp_profile_hooks_t *hooks) {
    atomic_store_explicit(&tp_profile_hooks_installed, hooks, memory_order_release);
}

uint64_t tp_profile_clock_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
