/* SPDX-License-Identifier: Apache-2.0 */
#include "memory/bfc_allocator.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"

enum {
    GRANULE = 256,   /* alignment and smallest chunk */
    NUM_BINS = 24,   /* size classes 256 B << k; the last one takes everything larger */
    /* Freed chunks of 1..NUM_KEPT granules are kept, one per size, for the next allocation of
     * exactly that size: an op that frees its input and allocates its output alike then takes
     * no lock and splits and merges nothing. */
    NUM_KEPT = 16
};

typedef struct region {
    struct region *next;
    struct tp_bfc *owner;
    void *mem;
    uint64_t size;
} region_t;

/* A piece of a region, in use or free; in-use ones are the handles callers hold. */
typedef struct tp_bfc_chunk {
    struct tp_bfc_chunk *prev, *next;        /* neighbours in the region, by offset */
    struct tp_bfc_chunk *bin_prev, *bin_next; /* free chunks of the same size class */
    region_t *region;
    uint64_t offset, size;
    int bin;                           /* its size class while free */
    bool in_use;
} chunk_t;

struct tp_bfc {
    char name[64];
    tp_bfc_backend_t backend;
    tp_bfc_options_t options;
    pthread_mutex_t mutex;
    region_t *regions;
    uint64_t next_region_size;
    chunk_t *bins[NUM_BINS];
    uint32_t nonempty_bins; /* bit k: bins[k] has a chunk */
    chunk_t *spare; /* chunk records kept for reuse, so that splits rarely call malloc */
    struct slab *slabs;
    tp_bfc_stats_t stats; /* under the mutex: bytes_reserved and bytes_limit */
    /* Kept chunks: kept[k] holds one of k + 1 granules or NULL, taken and given by exchange.
     * A kept chunk stays in_use and outside the bins, so no neighbour merges with it, but it
     * is counted as free: every allocation the kept ones cannot serve, and every reading of
     * the statistics, first gives them all back, so the allocator looks as if none were kept
     * and best fit sees every free byte. */
    _Atomic(chunk_t *) kept[NUM_KEPT];
    /* Counted outside the mutex, since kept chunks come and go without it. */
    _Atomic uint64_t bytes_in_use, peak_bytes_in_use, live_allocations, total_allocations;
};

/* ---- Size classes ----------------------------------------------------------------------- */

/* floor(log2(granules)), capped at the last bin; `size` is at least one granule. */
static int bin_of(uint64_t size) {
    int bin = 63 - __builtin_clzll(size / GRANULE);
    return bin < NUM_BINS - 1 ? bin : NUM_BINS - 1;
}

static void bin_insert(tp_bfc_t *bfc, chunk_t *chunk) {
    int bin = bin_of(chunk->size);
    chunk->bin = bin;
    chunk->bin_prev = NULL;
    chunk->bin_next = bfc->bins[bin];
    if (chunk->bin_next != NULL) chunk->bin_next->bin_prev = chunk;
    bfc->bins[bin] = chunk;
    bfc->nonempty_bins |= UINT32_C(1) << bin;
}

static void bin_remove(tp_bfc_t *bfc, chunk_t *chunk) {
    if (chunk->bin_prev != NULL) {
        chunk->bin_prev->bin_next = chunk->bin_next;
    } else {
        bfc->bins[chunk->bin] = chunk->bin_next;
        if (chunk->bin_next == NULL) bfc->nonempty_bins &= ~(UINT32_C(1) << chunk->bin);
    }
    if (chunk->bin_next != NULL) chunk->bin_next->bin_prev = chunk->bin_prev;
}

/* The smallest free chunk of at least `size`: the best fit within the first size class that
 * has one. Classes below `size`'s cannot, and empty ones are skipped by the bitmap. */
static chunk_t *find_free(tp_bfc_t *bfc, uint64_t size) {
    uint32_t candidates = bfc->nonempty_bins & ~((UINT32_C(1) << bin_of(size)) - 1);
    while (candidates != 0) {
        int bin = __builtin_ctz(candidates);
        chunk_t *best = NULL;
        for (chunk_t *c = bfc->bins[bin]; c != NULL; c = c->bin_next)
            if (c->size >= size && (best == NULL || c->size < best->size)) best = c;
        if (best != NULL) return best;
        candidates &= candidates - 1;
    }
    return NULL;
}

/* ---- Chunk records ------------------------------------------------------------------------ */

/* Records come in slabs, so that the few a workload uses sit together in the cache. */
enum { SLAB_CHUNKS = 63 };
typedef struct slab {
    struct slab *next;
    chunk_t chunks[SLAB_CHUNKS];
} slab_t;

static chunk_t *new_chunk(tp_bfc_t *bfc) {
    if (bfc->spare == NULL) {
        slab_t *slab = malloc(sizeof *slab);
        if (slab == NULL) return NULL;
        slab->next = bfc->slabs;
        bfc->slabs = slab;
        for (int i = SLAB_CHUNKS - 1; i >= 0; i--) {
            slab->chunks[i].next = bfc->spare;
            bfc->spare = &slab->chunks[i];
        }
    }
    chunk_t *chunk = bfc->spare;
    bfc->spare = chunk->next;
    return chunk;
}

static void drop_chunk(tp_bfc_t *bfc, chunk_t *chunk) {
    chunk->next = bfc->spare;
    bfc->spare = chunk;
}

/* ---- Regions --------------------------------------------------------------------------------- */

/* Takes one region of `size` bytes from the device and offers it as one free chunk. */
static tp_status_t *take_region(tp_bfc_t *bfc, uint64_t size) {
    region_t *region = malloc(sizeof *region);
    chunk_t *chunk = new_chunk(bfc);
    tp_status_t *error = region == NULL || chunk == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : bfc->backend.allocate(bfc->backend.state, size, &region->mem);
    if (error != NULL) {
        free(region);
        if (chunk != NULL) drop_chunk(bfc, chunk);
        return error;
    }
    region->size = size;
    region->owner = bfc;
    region->next = bfc->regions;
    bfc->regions = region;
    bfc->stats.bytes_reserved += size;
    *chunk = (chunk_t){.region = region, .offset = 0, .size = size, .in_use = false};
    bin_insert(bfc, chunk);
    return NULL;
}

/* Gives back every region, each still one free chunk: a reservation that failed part way. */
static void return_untouched_regions(tp_bfc_t *bfc) {
    while (bfc->regions != NULL) {
        region_t *region = bfc->regions;
        chunk_t *chunk = NULL;
        for (int bin = 0; bin < NUM_BINS && chunk == NULL; bin++)
            for (chunk = bfc->bins[bin]; chunk != NULL && chunk->region != region;)
                chunk = chunk->bin_next;
        if (chunk != NULL) {
            bin_remove(bfc, chunk);
            drop_chunk(bfc, chunk);
        }
        bfc->regions = region->next;
        bfc->stats.bytes_reserved -= region->size;
        bfc->backend.deallocate(bfc->backend.state, region->mem, region->size);
        free(region);
    }
}

/* Takes memory of at least `needed` bytes from the device, within the limit, in regions no
 * larger than the device serves in one allocation. */
static tp_status_t *add_region(tp_bfc_t *bfc, uint64_t needed) {
    uint64_t largest = bfc->options.max_region / GRANULE * GRANULE;
    if (largest == 0) largest = UINT64_MAX / GRANULE * GRANULE;
    if (needed > largest)
        return tp_status_make(TP_RESOURCE_EXHAUSTED,
                              "the device serves at most %llu bytes in one allocation",
                              (unsigned long long)largest);
    uint64_t room = bfc->options.limit - bfc->stats.bytes_reserved;
    if (!bfc->options.allow_growth) {
        if (bfc->regions != NULL || room < needed)
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "no free block is large enough");
        /* The whole limit, once, or nothing. */
        for (room = room / GRANULE * GRANULE; room > 0;) {
            uint64_t size = room < largest ? room : largest;
            tp_status_t *error = take_region(bfc, size);
            if (error != NULL) {
                return_untouched_regions(bfc);
                return error;
            }
            room -= size;
        }
        return NULL;
    }
    uint64_t size = bfc->next_region_size > needed ? bfc->next_region_size : needed;
    if (size > room) size = room;
    if (size > largest) size = largest;
    if (size < needed)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "the limit leaves %llu bytes to grow by",
                              (unsigned long long)room);
    size = size / GRANULE * GRANULE;
    tp_status_t *error = take_region(bfc, size);
    if (error != NULL) return error;
    if (bfc->next_region_size <= UINT64_MAX / 2) bfc->next_region_size = size * 2;
    return NULL;
}

/* ---- The allocator --------------------------------------------------------------------------- */

tp_status_t *tp_bfc_create(const char *name, tp_bfc_backend_t backend,
                           const tp_bfc_options_t *options, tp_bfc_t **out) {
    tp_bfc_t *bfc = calloc(1, sizeof *bfc);
    if (bfc == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    snprintf(bfc->name, sizeof bfc->name, "%s", name);
    bfc->backend = backend;
    bfc->options = *options;
    bfc->next_region_size = options->initial_region > GRANULE ? options->initial_region
                                                              : (uint64_t)2 << 20;
    bfc->stats.bytes_limit = options->limit;
    for (int k = 0; k < NUM_KEPT; k++) atomic_init(&bfc->kept[k], NULL);
    atomic_init(&bfc->bytes_in_use, 0);
    atomic_init(&bfc->peak_bytes_in_use, 0);
    atomic_init(&bfc->live_allocations, 0);
    atomic_init(&bfc->total_allocations, 0);
    if (pthread_mutex_init(&bfc->mutex, NULL) != 0) {
        free(bfc);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "cannot create a mutex");
    }
    *out = bfc;
    return NULL;
}

void tp_bfc_destroy(tp_bfc_t *bfc) {
    if (bfc == NULL) return;
    uint64_t live = atomic_load_explicit(&bfc->live_allocations, memory_order_relaxed);
    if (live != 0)
        tp_log_message(TP_LOG_WARNING, "%s destroyed with %llu allocations (%llu bytes) live",
                       bfc->name, (unsigned long long)live,
                       (unsigned long long)atomic_load_explicit(&bfc->bytes_in_use,
                                                                memory_order_relaxed));
    while (bfc->slabs != NULL) {
        struct slab *next = bfc->slabs->next;
        free(bfc->slabs);
        bfc->slabs = next;
    }
    while (bfc->regions != NULL) {
        region_t *next = bfc->regions->next;
        bfc->backend.deallocate(bfc->backend.state, bfc->regions->mem, bfc->regions->size);
        free(bfc->regions);
        bfc->regions = next;
    }
    pthread_mutex_destroy(&bfc->mutex);
    free(bfc);
}

const char *tp_bfc_name(const tp_bfc_t *bfc) { return bfc->name; }

static uint64_t largest_free(const tp_bfc_t *bfc) {
    uint64_t largest = 0;
    for (int bin = NUM_BINS - 1; bin >= 0 && largest == 0; bin--)
        for (const chunk_t *c = bfc->bins[bin]; c != NULL; c = c->bin_next)
            if (c->size > largest) largest = c->size;
    return largest;
}

/* Called with the mutex held, after the kept chunks are given back. */
static void stats_locked(tp_bfc_t *bfc, tp_bfc_stats_t *out) {
    *out = bfc->stats;
    out->bytes_in_use = atomic_load_explicit(&bfc->bytes_in_use, memory_order_relaxed);
    out->peak_bytes_in_use = atomic_load_explicit(&bfc->peak_bytes_in_use, memory_order_relaxed);
    out->live_allocations = atomic_load_explicit(&bfc->live_allocations, memory_order_relaxed);
    out->total_allocations = atomic_load_explicit(&bfc->total_allocations, memory_order_relaxed);
    out->largest_free_block = largest_free(bfc);
}

static void describe_locked(tp_bfc_t *bfc, char *text, size_t capacity) {
    tp_bfc_stats_t stats;
    stats_locked(bfc, &stats);
    snprintf(text, capacity,
             "%s: in use %llu bytes, peak %llu, reserved %llu of limit %llu, largest free block "
             "%llu, %llu live allocations",
             bfc->name, (unsigned long long)stats.bytes_in_use,
             (unsigned long long)stats.peak_bytes_in_use,
             (unsigned long long)stats.bytes_reserved, (unsigned long long)stats.bytes_limit,
             (unsigned long long)stats.largest_free_block,
             (unsigned long long)stats.live_allocations);
}

static void count_allocation(tp_bfc_t *bfc, uint64_t size) {
    uint64_t now =
        atomic_fetch_add_explicit(&bfc->bytes_in_use, size, memory_order_relaxed) + size;
    uint64_t peak = atomic_load_explicit(&bfc->peak_bytes_in_use, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&bfc->peak_bytes_in_use, &peak,
                                                                now, memory_order_relaxed,
                                                                memory_order_relaxed)) {
    }
    atomic_fetch_add_explicit(&bfc->live_allocations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&bfc->total_allocations, 1, memory_order_relaxed);
}

static void count_free(tp_bfc_t *bfc, uint64_t size) {
    atomic_fetch_sub_explicit(&bfc->bytes_in_use, size, memory_order_relaxed);
    atomic_fetch_sub_explicit(&bfc->live_allocations, 1, memory_order_relaxed);
}

/* Folds `next` into `chunk`; both are free, and `next` follows `chunk` in the region. */
static void merge(tp_bfc_t *bfc, chunk_t *chunk, chunk_t *next) {
    chunk->size += next->size;
    chunk->next = next->next;
    if (next->next != NULL) next->next->prev = chunk;
    drop_chunk(bfc, next);
}

/* Makes an in-use chunk, already counted as freed, free: merged with free neighbours and
 * binned. Called with the mutex held. */
static void release_locked(tp_bfc_t *bfc, chunk_t *chunk) {
    chunk->in_use = false;
    if (chunk->next != NULL && !chunk->next->in_use) {
        bin_remove(bfc, chunk->next);
        merge(bfc, chunk, chunk->next);
    }
    if (chunk->prev != NULL && !chunk->prev->in_use) {
        chunk_t *previous = chunk->prev;
        bin_remove(bfc, previous);
        merge(bfc, previous, chunk);
        chunk = previous;
    }
    bin_insert(bfc, chunk);
}

/* Gives every kept chunk back to the bins. Called with the mutex held. */
static void release_kept_locked(tp_bfc_t *bfc) {
    for (int k = 0; k < NUM_KEPT; k++) {
        if (atomic_load_explicit(&bfc->kept[k], memory_order_relaxed) == NULL) continue;
        chunk_t *chunk = atomic_exchange_explicit(&bfc->kept[k], NULL, memory_order_acquire);
        if (chunk != NULL) release_locked(bfc, chunk);
    }
}

tp_status_t *tp_bfc_allocate(tp_bfc_t *bfc, uint64_t size, tp_bfc_block_t *out) {
    if (size == 0 || size > UINT64_MAX - GRANULE)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: cannot allocate %llu bytes", bfc->name,
                              (unsigned long long)size);
    uint64_t rounded = (size + GRANULE - 1) / GRANULE * GRANULE;
    uint64_t granules = rounded / GRANULE;
    if (granules <= NUM_KEPT) {
        chunk_t *kept =
            atomic_exchange_explicit(&bfc->kept[granules - 1], NULL, memory_order_acquire);
        if (kept != NULL) {
            count_allocation(bfc, kept->size);
            *out = (tp_bfc_block_t){kept->region->mem, kept->offset, kept};
            return NULL;
        }
    }
    pthread_mutex_lock(&bfc->mutex);
    release_kept_locked(bfc);
    tp_status_t *error = NULL;
    chunk_t *chunk = find_free(bfc, rounded);
    if (chunk == NULL) {
        error = add_region(bfc, rounded);
        if (error == NULL) chunk = find_free(bfc, rounded);
    }
    chunk_t *rest = NULL;
    if (chunk != NULL && chunk->size - rounded >= GRANULE) {
        rest = new_chunk(bfc);
        if (rest == NULL) chunk = NULL;
    }
    if (chunk == NULL) {
        char state[512];
        describe_locked(bfc, state, sizeof state);
        const char *why = error != NULL ? tp_status_message(error) : "out of host memory";
        tp_status_t *oom = tp_status_make(TP_RESOURCE_EXHAUSTED,
                                          "cannot allocate %llu bytes (%s); %s",
                                          (unsigned long long)size, why, state);
        tp_status_free(error);
        pthread_mutex_unlock(&bfc->mutex);
        return oom;
    }
    bin_remove(bfc, chunk);
    if (rest != NULL) {
        *rest = (chunk_t){.prev = chunk, .next = chunk->next, .region = chunk->region,
                          .offset = chunk->offset + rounded, .size = chunk->size - rounded};
        if (chunk->next != NULL) chunk->next->prev = rest;
        chunk->next = rest;
        chunk->size = rounded;
        bin_insert(bfc, rest);
    }
    chunk->in_use = true;
    count_allocation(bfc, chunk->size);
    *out = (tp_bfc_block_t){chunk->region->mem, chunk->offset, chunk};
    pthread_mutex_unlock(&bfc->mutex);
    return NULL;
}

void tp_bfc_free(tp_bfc_chunk_t *chunk) {
    tp_bfc_t *bfc = chunk->region->owner;
    /* The chunk is the caller's: no other thread writes its in_use or size now. A chunk freed
     * twice is seen here while it is kept, and by the check below once it is given back. */
    uint64_t granules = chunk->size / GRANULE;
    if (chunk->in_use && granules <= NUM_KEPT) {
        count_free(bfc, chunk->size);
        chunk_t *displaced =
            atomic_exchange_explicit(&bfc->kept[granules - 1], chunk, memory_order_acq_rel);
        if (displaced == NULL) return;
        if (displaced == chunk) {
            count_allocation(bfc, chunk->size); /* undoes the second count_free */
            atomic_fetch_sub_explicit(&bfc->total_allocations, 1, memory_order_relaxed);
            tp_log_message(TP_LOG_ERROR, "%s: a second free of the chunk at offset %llu",
                           bfc->name, (unsigned long long)chunk->offset);
            return;
        }
        pthread_mutex_lock(&bfc->mutex);
        release_locked(bfc, displaced);
        pthread_mutex_unlock(&bfc->mutex);
        return;
    }
    pthread_mutex_lock(&bfc->mutex);
    if (!chunk->in_use) {
        pthread_mutex_unlock(&bfc->mutex);
        tp_log_message(TP_LOG_ERROR, "%s: a second free of the chunk at offset %llu", bfc->name,
                       (unsigned long long)chunk->offset);
        return;
    }
    count_free(bfc, chunk->size);
    release_locked(bfc, chunk);
    pthread_mutex_unlock(&bfc->mutex);
}

void tp_bfc_get_stats(tp_bfc_t *bfc, tp_bfc_stats_t *out) {
    pthread_mutex_lock(&bfc->mutex);
    release_kept_locked(bfc);
    stats_locked(bfc, out);
    pthread_mutex_unlock(&bfc->mutex);
}

void tp_bfc_reset_peak(tp_bfc_t *bfc) {
    pthread_mutex_lock(&bfc->mutex);
    atomic_store_explicit(&bfc->peak_bytes_in_use,
                          atomic_load_explicit(&bfc->bytes_in_use, memory_order_relaxed),
                          memory_order_relaxed);
    pthread_mutex_unlock(&bfc->mutex);
}
