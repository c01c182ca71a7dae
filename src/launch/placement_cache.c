/* SPDX-License-Identifier: Apache-2.0 */
#include "launch/placement_cache.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"

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

enum { RESOLVED_SLOTS = 256 };

typedef struct tp_resolved_slot {
    atomic_int state;
    /* An entry of the slots above, set once placed; NULL until then. */
    _Atomic(const tp_placement_entry_t *) placement;
    const tp_op_def_t *op;
    int32_t num_inputs;
    tp_dtype_t input_dtypes[TP_RESOLVED_INPUTS];
    tp_attr_t attrs[TP_RESOLVED_ATTRS];
    tp_dtype_t output_dtypes[TP_MAX_OP_OUTPUTS];
} tp_resolved_slot_t;

struct tp_placement_cache {
    slot_t slots[SLOTS];
    tp_resolved_slot_t resolved[RESOLVED_SLOTS];
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

/* Claims an empty slot for its writer; otherwise *found is the slot's state. */
static bool claim(atomic_int *state, int *found) {
    *found = EMPTY;
    return atomic_compare_exchange_strong_explicit(state, found, WRITING, memory_order_acquire,
                                                   memory_order_acquire);
}

const tp_placement_entry_t *tp_placement_cache_add(tp_context_t *context,
                                                    const tp_placement_entry_t *entry) {
    tp_placement_cache_t *cache = cache_of(context);
    if (cache == NULL) return NULL;
    size_t start = hash(&entry->key);
    for (size_t p = 0; p < PROBES; p++) {
        slot_t *slot = &cache->slots[(start + p) % SLOTS];
        int state;
        if (claim(&slot->state, &state)) {
            slot->entry = *entry;
            atomic_store_explicit(&slot->state, READY, memory_order_release);
            return &slot->entry;
        }
        /* Taken: by this key already (another thread placed the same call), or being written
         * (maybe this key; a duplicate would be harmless but the slot is not ours to read). */
        if (state != READY) return NULL;
        if (same_key(&slot->entry.key, &entry->key)) return &slot->entry;
    }
    return NULL;
}

/* ---- Resolved calls ---------------------------------------------------------------------- */

static size_t resolved_hash(const tp_op_def_t *op, const tp_dtype_t *dtypes, size_t count) {
    uint64_t h = (uint64_t)(uintptr_t)op * 0x9E3779B97F4A7C15u ^ count;
    for (size_t i = 0; i < count; i++) h = (h ^ (uint64_t)dtypes[i]) * 0x100000001B3u;
    return (size_t)(h >> 32);
}

bool tp_resolved_call_find(const tp_context_t *context, const tp_op_t *op,
                           tp_tensor_t *const *inputs, size_t num_inputs, size_t num_outputs,
                           tp_kernel_context_t *call) {
    const tp_op_def_t *def = op->def;
    if (num_inputs > TP_RESOLVED_INPUTS || (num_inputs > 0 && inputs == NULL) ||
        num_outputs != def->num_outputs)
        return false;
    tp_placement_cache_t *cache =
        atomic_load_explicit(&context->placement_cache, memory_order_acquire);
    if (cache == NULL) return false;
    tp_dtype_t dtypes[TP_RESOLVED_INPUTS];
    for (size_t i = 0; i < num_inputs; i++) {
        if (inputs[i] == NULL) return false; /* resolving names it */
        dtypes[i] = inputs[i]->dtype;
    }
    size_t start = resolved_hash(def, dtypes, num_inputs);
    const tp_resolved_slot_t *hit = NULL;
    for (size_t p = 0; p < PROBES && hit == NULL; p++) {
        const tp_resolved_slot_t *slot = &cache->resolved[(start + p) % RESOLVED_SLOTS];
        int state = atomic_load_explicit(&slot->state, memory_order_acquire);
        if (state == EMPTY) return false;
        if (state != READY || slot->op != def || slot->num_inputs != (int32_t)num_inputs)
            continue;
        bool same = true;
        for (size_t i = 0; i < num_inputs; i++) same &= slot->input_dtypes[i] == dtypes[i];
        if (same) hit = slot;
    }
    if (hit == NULL) return false;
    tp_kernel_context_begin(call, op, inputs);
    call->resolved = hit;
    call->num_inputs = (int32_t)num_inputs;
    call->num_outputs = (int32_t)num_outputs;
    memcpy(call->output_dtypes, hit->output_dtypes, num_outputs * sizeof *call->output_dtypes);
    memcpy(call->attrs, hit->attrs, def->num_attrs * sizeof *call->attrs);
    return true;
}

void tp_resolved_call_add(tp_context_t *context, const tp_kernel_context_t *call) {
    const tp_op_def_t *def = call->op->def;
    size_t num_inputs = (size_t)call->num_inputs;
    if (num_inputs > TP_RESOLVED_INPUTS || def->num_attrs > TP_RESOLVED_ATTRS) return;
    tp_placement_cache_t *cache = cache_of(context);
    if (cache == NULL) return;
    tp_dtype_t dtypes[TP_RESOLVED_INPUTS];
    for (size_t i = 0; i < num_inputs; i++) dtypes[i] = call->inputs[i]->dtype;
    size_t start = resolved_hash(def, dtypes, num_inputs);
    for (size_t p = 0; p < PROBES; p++) {
        tp_resolved_slot_t *slot = &cache->resolved[(start + p) % RESOLVED_SLOTS];
        int state;
        if (claim(&slot->state, &state)) {
            slot->op = def;
            atomic_store_explicit(&slot->placement, NULL, memory_order_relaxed);
            slot->num_inputs = (int32_t)num_inputs;
            for (size_t i = 0; i < TP_RESOLVED_INPUTS; i++)
                slot->input_dtypes[i] = i < num_inputs ? dtypes[i] : TP_DTYPE_INVALID;
            memcpy(slot->attrs, call->attrs, def->num_attrs * sizeof *slot->attrs);
            memcpy(slot->output_dtypes, call->output_dtypes,
                   def->num_outputs * sizeof *slot->output_dtypes);
            atomic_store_explicit(&slot->state, READY, memory_order_release);
            return;
        }
        /* Taken, by this call's key maybe (another thread resolved it too): a duplicate further
         * on would be harmless, but one entry per key keeps the probes short. */
        if (state != READY) return;
        bool same = slot->op == def && slot->num_inputs == (int32_t)num_inputs;
        for (size_t i = 0; i < num_inputs && same; i++) same = slot->input_dtypes[i] == dtypes[i];
        if (same) return;
    }
}

const tp_placement_entry_t *tp_resolved_call_placement(const tp_kernel_context_t *call) {
    return call->resolved == NULL
               ? NULL
               : atomic_load_explicit(&call->resolved->placement, memory_order_acquire);
}

void tp_resolved_call_keep_placement(const tp_kernel_context_t *call,
                                     const tp_placement_entry_t *entry) {
    /* The slot is read-only once READY but for this field; every writer stores the same key's
     * entry, so a race between two only stores one of two equal answers. */
    if (call->resolved != NULL && entry != NULL)
        atomic_store_explicit(&((tp_resolved_slot_t *)call->resolved)->placement, entry,
                              memory_order_release);
}
