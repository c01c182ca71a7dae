/* SPDX-License-Identifier: Apache-2.0 */
#include "base/pointer_map.h"

#include <stdlib.h>

/* Fibonacci hashing: allocation addresses share their low bits, so mix before masking. */
static size_t slot_of(const void *key, size_t capacity) {
    return (size_t)(((uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 17) &
           (capacity - 1);
}

static tp_pointer_map_entry_t *find(const tp_pointer_map_entry_t *entries, size_t capacity,
                                    const void *key) {
    size_t at = slot_of(key, capacity);
    while (entries[at].key != NULL && entries[at].key != key) at = (at + 1) & (capacity - 1);
    return (tp_pointer_map_entry_t *)&entries[at];
}

int32_t tp_pointer_map_get(const tp_pointer_map_t *map, const void *key) {
    if (map->capacity == 0 || key == NULL) return -1;
    const tp_pointer_map_entry_t *entry = find(map->entries, map->capacity, key);
    return entry->key != NULL ? entry->value : -1;
}

static bool grow(tp_pointer_map_t *map) {
    size_t capacity = map->capacity == 0 ? 64 : map->capacity * 2;
    tp_pointer_map_entry_t *entries = calloc(capacity, sizeof *entries);
    if (entries == NULL) return false;
    for (size_t i = 0; i < map->capacity; i++)
        if (map->entries[i].key != NULL)
            *find(entries, capacity, map->entries[i].key) = map->entries[i];
    free(map->entries);
    map->entries = entries;
    map->capacity = capacity;
    return true;
}

bool tp_pointer_map_put(tp_pointer_map_t *map, const void *key, int32_t value) {
    /* Kept at most half full, so probes stay short. */
    if (2 * (map->count + 1) > map->capacity && !grow(map)) return false;
    tp_pointer_map_entry_t *entry = find(map->entries, map->capacity, key);
    if (entry->key == NULL) map->count++;
    entry->key = key;
    entry->value = value;
    return true;
}

void tp_pointer_map_free(tp_pointer_map_t *map) {
    free(map->entries);
    *map = (tp_pointer_map_t)TP_POINTER_MAP_INIT;
}
