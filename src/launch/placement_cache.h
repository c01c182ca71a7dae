/* SPDX-License-Identifier: Apache-2.0 */
/* Placements remembered per context, so that an op does not search every device for a kernel
 * each time it runs: with an accelerator's plug-in loaded, that search (and the fallback it
 * finds for every op the accelerator lacks) cost more than the rest of placement. An entry is
 * keyed by the op and the values of its dtype attributes, which is all that chooses a kernel
 * when no device scope names a device type (tp_kernel_registry_selects_by_dtypes says when that
 * holds); the devices of a context are fixed once made, so an entry never goes stale. */
#ifndef TP_LAUNCH_PLACEMENT_CACHE_H
#define TP_LAUNCH_PLACEMENT_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "context/context.h"
#include "kernel/kernel_context.h"

enum { TP_PLACEMENT_KEY_DTYPES = 6 };

typedef struct tp_placement_key {
    const tp_op_def_t *op;
    /* The op's dtype attributes' values in the op's order; unused places 0. */
    int64_t dtypes[TP_PLACEMENT_KEY_DTYPES];
} tp_placement_key_t;

typedef struct tp_placement_entry {
    tp_placement_key_t key;
    tp_device_t *device;
    const tp_kernel_def_t *kernel;
    /* The fallback counted at each use (one of context->fallbacks); NULL: none. */
    tp_fallback_record_t *fallback;
} tp_placement_entry_t;

/* Makes the key of a resolved call; false when the op has more dtype attributes than a key
 * holds (such a call is placed every time). */
bool tp_placement_key_make(const tp_kernel_context_t *call, tp_placement_key_t *key);

/* The entry for `key` in the context's cache, or NULL. Safe on any thread, lock-free. */
const tp_placement_entry_t *tp_placement_cache_find(const tp_context_t *context,
                                                     const tp_placement_key_t *key);

/* Remembers `entry` if there is room, and returns the kept copy (NULL if none); a full
 * neighbourhood or a lost race only means the next call is placed again. The cache is one
 * block, made at first use and freed with the context (free(context->placement_cache)). */
const tp_placement_entry_t *tp_placement_cache_add(tp_context_t *context,
                                                    const tp_placement_entry_t *entry);

/* ---- Resolved calls --------------------------------------------------------------------------
 * A call given no attributes resolves the same way every time its op is called with inputs of
 * the same dtypes: its attribute values and output dtypes follow from the op and those dtypes
 * alone. Resolving (tp_kernel_context_resolve) cost an eager 1-element Add an eighth of its
 * instructions, so such a call's outcome is kept in the same block, for ops of at most
 * TP_RESOLVED_INPUTS inputs and TP_RESOLVED_ATTRS attributes; only successes are kept. */
enum { TP_RESOLVED_INPUTS = 4, TP_RESOLVED_ATTRS = 4 };

/* Fills `call` as tp_kernel_context_resolve(call, op, inputs, num_inputs, NULL, 0,
 * num_outputs) would, and returns true, when that outcome is kept; false otherwise (`call`
 * then holds nothing of use). Lock-free. */
bool tp_resolved_call_find(const tp_context_t *context, const tp_op_t *op,
                           tp_tensor_t *const *inputs, size_t num_inputs, size_t num_outputs,
                           tp_kernel_context_t *call);

/* Keeps the outcome of a successful resolution of a call given no attributes, if it fits. */
void tp_resolved_call_add(tp_context_t *context, const tp_kernel_context_t *call);

/* The placement kept with the resolution `call` was filled from, or NULL. A resolution fixes
 * the dtype attributes, which are the whole placement key: an unscoped call then needs no key
 * made and no search. Lock-free. */
const tp_placement_entry_t *tp_resolved_call_placement(const tp_kernel_context_t *call);
/* Keeps `entry`, a cached placement of `call`'s key, with the resolution `call` was filled
 * from, if any. */
void tp_resolved_call_keep_placement(const tp_kernel_context_t *call,
                                     const tp_placement_entry_t *entry);

#endif
