/* SPDX-License-Identifier: Apache-2.0 */
/* A best-fit-with-coalescing allocator over a device's raw memory: regions taken from the
 * device, carved into chunks that split on allocation and merge with free neighbours on
 * release, found by size class. Thread-safe. Device memory is never touched: blocks are
 * (region handle, offset) pairs, as the plug-in ABI names memory. */
#ifndef TP_MEMORY_BFC_ALLOCATOR_H
#define TP_MEMORY_BFC_ALLOCATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "tensorplug/tensorplug.h"

/* Where regions come from: a device's raw allocate and deallocate. */
typedef struct tp_bfc_backend {
    tp_status_t *(*allocate)(void *state, uint64_t size, void **out_mem);
    void (*deallocate)(void *state, void *mem, uint64_t size);
    void *state;
} tp_bfc_backend_t;

typedef struct tp_bfc_options {
    uint64_t limit;          /* the most the allocator reserves from the device */
    bool allow_growth;       /* false: the first allocation reserves all of `limit` */
    uint64_t initial_region; /* with growth: the first region's size (doubling after) */
    uint64_t max_region;     /* the most the device serves in one allocation; 0: no limit */
} tp_bfc_options_t;

typedef struct tp_bfc_stats {
    uint64_t bytes_in_use;       /* in allocated chunks (rounded sizes) */
    uint64_t peak_bytes_in_use;
    uint64_t bytes_reserved;     /* in regions taken from the device */
    uint64_t bytes_limit;
    uint64_t largest_free_block;
    uint64_t live_allocations;
    uint64_t total_allocations;
} tp_bfc_stats_t;

typedef struct tp_bfc tp_bfc_t;

/* `name` ("APU_0_bfc") appears in out-of-memory messages. */
tp_status_t *tp_bfc_create(const char *name, tp_bfc_backend_t backend,
                           const tp_bfc_options_t *options, tp_bfc_t **out);
/* Returns every region to the device; chunks still allocated are counted as leaked in the
 * log line it writes, if any. */
void tp_bfc_destroy(tp_bfc_t *bfc);

/* One allocation: where its bytes are, as the plug-in ABI names memory, and the allocator's
 * record of it, which frees it without a lookup. */
typedef struct tp_bfc_chunk tp_bfc_chunk_t;
typedef struct tp_bfc_block {
    void *mem;       /* the region's handle from the device */
    uint64_t offset; /* where the block starts in it */
    tp_bfc_chunk_t *chunk;
} tp_bfc_block_t;

/* `size` > 0 bytes, 256-byte aligned. Out of memory is RESOURCE_EXHAUSTED with a one-line
 * summary of the allocator's state, and leaves nothing behind. */
tp_status_t *tp_bfc_allocate(tp_bfc_t *bfc, uint64_t size, tp_bfc_block_t *out);
/* Returns a block's chunk to its allocator; a second free of it is ignored and logged. */
void tp_bfc_free(tp_bfc_chunk_t *chunk);

const char *tp_bfc_name(const tp_bfc_t *bfc);
void tp_bfc_get_stats(tp_bfc_t *bfc, tp_bfc_stats_t *out);
void tp_bfc_reset_peak(tp_bfc_t *bfc);

#endif
