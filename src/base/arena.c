/* SPDX-License-Identifier: Apache-2.0 */
#include "base/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tp_arena_block {
    tp_arena_block_t *next;
    size_t used;
    size_t capacity;
    alignas(max_align_t) unsigned char data[];
};

enum { BLOCK_SIZE = 4096 };

void *tp_arena_alloc(tp_arena_t *arena, size_t size) {
    const size_t align = alignof(max_align_t);
    if (size > SIZE_MAX - align) return NULL;
    size = (size + align - 1) / align * align;
    tp_arena_block_t *block = arena->blocks;
    if (block == NULL || block->capacity - block->used < size) {
        size_t capacity = size > BLOCK_SIZE ? size : BLOCK_SIZE;
        block = malloc(sizeof *block + capacity);
        if (block == NULL) return NULL;
        block->used = 0;
        block->capacity = capacity;
        block->next = arena->blocks;
        arena->blocks = block;
    }
    void *memory = block->data + block->used;
    block->used += size;
    memset(memory, 0, size);
    return memory;
}

void *tp_arena_memdup(tp_arena_t *arena, const void *source, size_t size) {
    if (source == NULL) return NULL;
    void *copy = tp_arena_alloc(arena, size == 0 ? 1 : size);
    if (copy != NULL && size > 0) memcpy(copy, source, size);
    return copy;
}

char *tp_arena_strdup(tp_arena_t *arena, const char *text) {
    return text == NULL ? NULL : tp_arena_memdup(arena, text, strlen(text) + 1);
}

void tp_arena_free(tp_arena_t *arena) {
    while (arena->blocks != NULL) {
        tp_arena_block_t *next = arena->blocks->next;
        free(arena->blocks);
        arena->blocks = next;
    }
}
