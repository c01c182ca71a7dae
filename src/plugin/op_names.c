/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/op_names.h"

#include <stdint.h>
#include <string.h>

/* FNV-1a: op names are short, and the index needs spread, not strength. */
static uint64_t hash_name(const char *name) {
    uint64_t hash = UINT64_C(14695981039346656037);
    for (const unsigned char *c = (const unsigned char *)name; *c != '\0'; c++)
        hash = (hash ^ *c) * UINT64_C(1099511628211);
    return hash;
}

/* Slots hold an op's index plus one, 0 marking an empty slot; the capacity is a power of two
 * kept at least twice the number of ops, so probes stay short and always end. */
static void insert(size_t *slots, size_t capacity, const tp_op_def_t *ops, size_t index) {
    size_t mask = capacity - 1;
    for (size_t slot = (size_t)hash_name(ops[index].name) & mask;; slot = (slot + 1) & mask) {
        if (slots[slot] == 0) {
            slots[slot] = index + 1;
            return;
        }
    }
}

const tp_op_def_t *tp_plugin_record_find_op(const tp_plugin_record_t *record, const char *name) {
    if (record->op_index_capacity == 0) return NULL;
    size_t mask = record->op_index_capacity - 1;
    for (size_t slot = (size_t)hash_name(name) & mask; record->op_index[slot] != 0;
         slot = (slot + 1) & mask) {
        const tp_op_def_t *op = &record->ops[record->op_index[slot] - 1];
        if (strcmp(op->name, name) == 0) return op;
    }
    return NULL;
}

bool tp_plugin_record_index_op(tp_plugin_record_t *record, size_t index) {
    size_t needed = 2 * (index + 1);
    if (needed > record->op_index_capacity) {
        size_t capacity = record->op_index_capacity == 0 ? 16 : record->op_index_capacity;
        while (capacity < needed) capacity *= 2;
        /* The arena frees nothing until the record goes, so the tables outgrown stay behind:
         * at most as much again as the last, since each is twice the one before. */
        size_t *slots = tp_arena_alloc(&record->arena, capacity * sizeof *slots);
        if (slots == NULL) return false;
        for (size_t i = 0; i < index; i++) insert(slots, capacity, record->ops, i);
        record->op_index = slots;
        record->op_index_capacity = capacity;
    }
    insert(record->op_index, record->op_index_capacity, record->ops, index);
    return true;
}
