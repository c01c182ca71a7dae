/* SPDX-License-Identifier: Apache-2.0 */
/* A bump allocator for data that lives and dies together (one plug-in's registrations). */
#ifndef TP_BASE_ARENA_H
#define TP_BASE_ARENA_H

#include <stddef.h>

typedef struct tp_arena_block tp_arena_block_t;

typedef struct tp_arena {
    tp_arena_block_t *blocks;
} tp_arena_t;

#define TP_ARENA_INIT {NULL}

/* Zeroed memory aligned for any type; NULL when out of memory. */
void *tp_arena_alloc(tp_arena_t *arena, size_t size);
/* Copies of strings and bytes; a NULL source gives NULL. */
char *tp_arena_strdup(tp_arena_t *arena, const char *text);
void *tp_arena_memdup(tp_arena_t *arena, const void *source, size_t size);
void tp_arena_free(tp_arena_t *arena);

#endif
