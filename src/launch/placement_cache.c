/* SPDX-License-Identifier: Apache-2.0 */
#include "launch/placement_cache.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Open addressing in a fixed table: a context runs a few hundred distinct (op, dtypes) pairs at
 * most, and a table that never grows needs no lock for its readers. A slot is written once:
 * its state goes EMPTY -> WRITING (the writer's claim) -> READY (published, release order), and
 * a reader trusts only READY. */
enum { SLOTS = 512, PROBES = 8 };
enum { EMPTY, WRITING, READY };

typedef struct slot {
    atomic_int state;
    tp_placement_entry_t entry;
} slot_t;

struct tp_placement_cache {
    slot_t slots[SLOTS];
};

bool tp_placement_key_make(const tp_kernel_context_t *call, tp_placement_key_t *key) {
    const tp_op_def_t *op = call->op->def;
    memset(key, 0, sizeof *key);
    key->op = op;
    size_t used = 0;
    for (size_t a = 0; a < op->num_attrs; a++) {
        if (op->attrs[a].type != TP_ATTR_DTYPE) continue;
        if (used == TP_PLACEMENT_KEY_DTYPES) return false;
        key->dtypes[used++] = call->attrs[a].i;
    }
    return true;
}

static size_t hash(const tp_placement_key_t *key) {
    uint64_t h = (uint64_t)(uintptr_t)key->op * 0x9E3779B97F4A7C15u;
    for (size_t d = 0; d < TP_PLACEMENT_KEY_DTYPES; d++)
        h = (h ^ (uint64_t)key->dtypes[d]) * 0x100000001B3u;
    return (size_t)(h >> 32);
}

static bool same_key(const tp_placement_key_t *a, const tp_placement_key_t *b) {
    if (a->op != b->op) return false;
    for (size_t d = 0; d < TP_PLACEMENT_KEY_DTYPES; d++)
        if (a->dtypes[d] != b->dtypes[d]) return false;
    return true;
}

const tp_placement_entry_t *tp_placement_cache_find(const tp_context_t *context,
                                                     const tp_placement_key_t *key) {
    tp_placement_cache_t *cache =
        atomic_load_explicit(&context->placement_cache, memory_order_acquire);
    if (cache == NULL) return NULL;
    size_t start = hash(key);
    for (size_t p = 0; p < PROBES; p++) {
        slot_t *slot = &cache->slots[(start + p) % SLOTS];
        int state = atomic_load_explicit(&slot->state, memory_order_acquire);
        if (state == EMPTY) return NULL; /* slots fill in probe order: nothing further */
        if (state == READY && same_key(&slot->entry.key, key)) return &slot->entry;
    }
    return NULL;
}

static tp_placement_cache_t *cache_of(tp_context_t *context) {
    tp_placement_cache_t *cache =
        atomic_load_explicit(&context->placement_cache, memory_order_acquire);
    if (cache != NULL) return cache;
    tp_placement_cache_t *made = calloc(1, sizeof *made);
    if (made == NULL) return NULL;
    if (atomic_compare_exchange_strong_explicit(&context->placement_cache, &cache, made,
                                                memory_order_acq_rel, memory_order_acquire))
        return made;
    free(made); /* another thread made it first: `cache` now holds its table */
    return cache;
}

void tp_placement_cache_add(tp_context_t *context, const tp_placement_entry_t *entry) {
    tp_placement_cache_t *cache = cache_of(context);
    if (cache == NULL) return;
    size_t start = hash(&entry->key);
    for (size_t p = 0; p < PROBES; p++) {
        slot_t *slot = &cache->slots[(start + p) % SLOTS];
        int state = EMPTY;
        if (atomic_compare_exchange_strong_explicit(&slot->state, &state, WRITING,
                                                    memory_order_acquire,
                                                    memory_order_acquire)) {
            slot->entry = *entry;
            atomic_store_explicit(&slot->state, READY, memory_order_release);
            return;
        }
        /* Taken: by this key already (another thread placed the same call), or being written
         * (maybe this key; a duplicate would be harmless but the slot is not ours to read). */
        if (state != READY || same_key(&slot->entry.key, &entry->key)) return;
    }
}
