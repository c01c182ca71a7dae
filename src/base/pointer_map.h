/* SPDX-License-Identifier: Apache-2.0 */
/* A hash map from pointers to small integers, for finding what is known of an object by its
 * address (a tensor's slot on a gradient tape). Not thread-safe. */
#ifndef TP_BASE_POINTER_MAP_H
#define TP_BASE_POINTER_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tp_pointer_map_entry {
    const void *key; /* NULL: empty */
    int32_t value;
} tp_pointer_map_entry_t;

typedef struct tp_pointer_map {
    tp_pointer_map_entry_t *entries;
    size_t capacity; /* a power of two, or 0 */
    size_t count;
} tp_pointer_map_t;

#define TP_POINTER_MAP_INIT {NULL, 0, 0}

/* The value of `key`, or -1. */
int32_t tp_pointer_map_get(const tp_pointer_map_t *map, const void *key);
/* Sets the value of a non-NULL `key`; false when memory runs out (the map is unchanged). */
bool tp_pointer_map_put(tp_pointer_map_t *map, const void *key, int32_t value);
void tp_pointer_map_free(tp_pointer_map_t *map);

#endif
