#include "memory/bfc_allocator.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"

enum {
    GRANULE = 256,   /* alignment and smallest chunk */
    NUM_BINS = 24    /* size classes 256 B << k; the last one takes everything larger */
};

typedef struct region {
    struct region *next;
    void *mem;
    uint64_t size;
} region_t;

typedef struct chunk {
    struct chunk *prev, *next;         /* neighbours in the region, by offset */
    struct chunk *bin_prev, *bin_next; /* free chunks of the same size class */
    region_t *region;
    uint64_t offset, size;
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
    chunk_t *spare; /* chunk records kept for reuse, so that splits rarely call malloc */
    /* In-use chunks by (region handle, offset): open addressing, linear probing. */
    chunk_t **table;
    size_t table_capacity, table_count;
    tp_bfc_stats_t stats;
};

/* ---- Size classes ----------------------------------------------------------------------- */

static int bin_of(uint64_t size) {
    uint64_t granules = size / GRANULE;
    int bin = 0;
    while (granules > 1 && bin < NUM_BINS - 1) {
        granules >>= 1;
        bin++;
    }
    return bin;
}

static void bin_insert(tp_bfc_t *bfc, chunk_t *chunk) {
    int bin = bin_of(chunk->size);
    chunk->bin_prev = NULL;
    chunk->bin_next = bfc->bins[bin];
    if (chunk->bin_next != NULL) chunk->bin_next->bin_prev = chunk;
    bfc->bins[bin] = chunk;
}

static void bin_remove(tp_bfc_t *bfc, chunk_t *chunk) {
    if (chunk->bin_prev != NULL)
        chunk->bin_prev->bin_next = chunk->bin_next;
    else
        bfc->bins[bin_of(chunk->size)] = chunk->bin_next;
    if (chunk->bin_next != NULL) chunk->bin_next->bin_prev = chunk->bin_prev;
}

/* The smallest free chunk of at least `size`: the best fit within the first size class that
 * has one. */
static chunk_t *find_free(tp_bfc_t *bfc, uint64_t size) {
    for (int bin = bin_of(size); bin < NUM_BINS; bin++) {
        chunk_t *best = NULL;
        for (chunk_t *c = bfc->bins[bin]; c != NULL; c = c->bin_next)
            if (c->size >= size && (best == NULL || c->size < best->size)) best = c;
        if (best != NULL) return best;
    }
    return NULL;
}

/* ---- Chunk records ------------------------------------------------------------------------ */

static chunk_t *new_chunk(tp_bfc_t *bfc) {
    chunk_t *chunk = bfc->spare;
    if (chunk != NULL) {
        bfc->spare = chunk->next;
        return chunk;
    }
    return malloc(sizeof *chunk);
}

static void drop_chunk(tp_bfc_t *bfc, chunk_t *chunk) {
    chunk->next = bfc->spare;
    bfc->spare = chunk;
}

/* ---- The in-use table ------------------------------------------------------------------------ */

static size_t slot_of(const tp_bfc_t *bfc, const void *mem, uint64_t offset) {
    uint64_t key = (uint64_t)(uintptr_t)mem ^ (offset * UINT64_C(0x9E3779B97F4A7C15));
    key ^= key >> 29;
    key *= UINT64_C(0xBF58476D1CE4E5B9);
    key ^= key >> 32;
    return (size_t)key & (bfc->table_capacity - 1);
}

static bool table_grow(tp_bfc_t *bfc) {
    size_t capacity = bfc->table_capacity == 0 ? 64 : bfc->table_capacity * 2;
    chunk_t **table = calloc(capacity, sizeof *table);
    if (table == NULL) return false;
    chunk_t **old = bfc->table;
    size_t old_capacity = bfc->table_capacity;
    bfc->table = table;
    bfc->table_capacity = capacity;
    for (size_t i = 0; i < old_capacity; i++) {
        if (old[i] == NULL) continue;
        size_t slot = slot_of(bfc, old[i]->region->mem, old[i]->offset);
        while (table[slot] != NULL) slot = (slot + 1) & (capacity - 1);
        table[slot] = old[i];
    }
    free(old);
    return true;
}

/* Reserves room for one more entry; false when out of host memory. */
static bool table_reserve(tp_bfc_t *bfc) {
    return (bfc->table_count + 1) * 4 <= bfc->table_capacity * 3 || table_grow(bfc);
}

static void table_put(tp_bfc_t *bfc, chunk_t *chunk) {
    size_t slot = slot_of(bfc, chunk->region->mem, chunk->offset);
    while (bfc->table[slot] != NULL) slot = (slot + 1) & (bfc->table_capacity - 1);
    bfc->table[slot] = chunk;
    bfc->table_count++;
}

/* Removes and returns the chunk at (mem, offset), keeping every other entry reachable by
 * shifting the probe sequence back over the hole. */
static chunk_t *table_take(tp_bfc_t *bfc, const void *mem, uint64_t offset) {
    if (bfc->table_capacity == 0) return NULL;
    size_t mask = bfc->table_capacity - 1, slot = slot_of(bfc, mem, offset);
    while (bfc->table[slot] != NULL &&
           (bfc->table[slot]->region->mem != mem || bfc->table[slot]->offset != offset))
        slot = (slot + 1) & mask;
    chunk_t *found = bfc->table[slot];
    if (found == NULL) return NULL;
    size_t hole = slot;
    for (size_t next = (hole + 1) & mask; bfc->table[next] != NULL; next = (next + 1) & mask) {
        size_t home = slot_of(bfc, bfc->table[next]->region->mem, bfc->table[next]->offset);
        /* Move the entry back if its home is not between the hole and where it sits. */
        bool stays = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
        if (!stays) {
            bfc->table[hole] = bfc->table[next];
            hole = next;
        }
    }
    bfc->table[hole] = NULL;
    bfc->table_count--;
    return found;
}

/* ---- Regions --------------------------------------------------------------------------------- */

/* Takes a region of at least `needed` bytes from the device, within the limit. */
static tp_status_t *add_region(tp_bfc_t *bfc, uint64_t needed) {
    uint64_t room = bfc->options.limit - bfc->stats.bytes_reserved;
    uint64_t size;
    if (!bfc->options.allow_growth) {
        if (bfc->regions != NULL || room < needed)
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "no free block is large enough");
        size = room; /* the whole limit, once */
    } else {
        size = bfc->next_region_size > needed ? bfc->next_region_size : needed;
        if (size > room) size = room;
        if (size < needed)
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "the limit leaves %llu bytes to grow by",
                                  (unsigned long long)room);
    }
    size = size / GRANULE * GRANULE;
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
    region->next = bfc->regions;
    bfc->regions = region;
    bfc->stats.bytes_reserved += size;
    if (bfc->options.allow_growth && bfc->next_region_size <= UINT64_MAX / 2)
        bfc->next_region_size = size * 2;
    *chunk = (chunk_t){.region = region, .offset = 0, .size = size, .in_use = false};
    bin_insert(bfc, chunk);
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
    if (pthread_mutex_init(&bfc->mutex, NULL) != 0) {
        free(bfc);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "cannot create a mutex");
    }
    *out = bfc;
    return NULL;
}

void tp_bfc_destroy(tp_bfc_t *bfc) {
    if (bfc == NULL) return;
    if (bfc->stats.live_allocations != 0)
        tp_log_message(TP_LOG_WARNING, "%s destroyed with %llu allocations (%llu bytes) live",
                       bfc->name, (unsigned long long)bfc->stats.live_allocations,
                       (unsigned long long)bfc->stats.bytes_in_use);
    /* Every chunk record is either in use (in the table) or free (in a bin). */
    for (size_t i = 0; i < bfc->table_capacity; i++)
        if (bfc->table[i] != NULL) drop_chunk(bfc, bfc->table[i]);
    for (int bin = 0; bin < NUM_BINS; bin++) {
        chunk_t *c = bfc->bins[bin];
        while (c != NULL) {
            chunk_t *next = c->bin_next;
            drop_chunk(bfc, c);
            c = next;
        }
    }
    while (bfc->spare != NULL) {
        chunk_t *next = bfc->spare->next;
        free(bfc->spare);
        bfc->spare = next;
    }
    while (bfc->regions != NULL) {
        region_t *next = bfc->regions->next;
        bfc->backend.deallocate(bfc->backend.state, bfc->regions->mem, bfc->regions->size);
        free(bfc->regions);
        bfc->regions = next;
    }
    free(bfc->table);
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

static void describe_locked(const tp_bfc_t *bfc, char *text, size_t capacity) {
    snprintf(text, capacity,
             "%s: in use %llu bytes, peak %llu, reserved %llu of limit %llu, largest free block "
             "%llu, %llu live allocations",
             bfc->name, (unsigned long long)bfc->stats.bytes_in_use,
             (unsigned long long)bfc->stats.peak_bytes_in_use,
             (unsigned long long)bfc->stats.bytes_reserved,
             (unsigned long long)bfc->stats.bytes_limit, (unsigned long long)largest_free(bfc),
             (unsigned long long)bfc->stats.live_allocations);
}

tp_status_t *tp_bfc_allocate(tp_bfc_t *bfc, uint64_t size, void **out_mem, uint64_t *out_offset) {
    if (size == 0 || size > UINT64_MAX - GRANULE)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: cannot allocate %llu bytes", bfc->name,
                              (unsigned long long)size);
    uint64_t rounded = (size + GRANULE - 1) / GRANULE * GRANULE;
    pthread_mutex_lock(&bfc->mutex);
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
    if (chunk != NULL && !table_reserve(bfc)) {
        if (rest != NULL) drop_chunk(bfc, rest);
        chunk = NULL;
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
    table_put(bfc, chunk);
    tp_bfc_stats_t *stats = &bfc->stats;
    stats->bytes_in_use += chunk->size;
    if (stats->bytes_in_use > stats->peak_bytes_in_use)
        stats->peak_bytes_in_use = stats->bytes_in_use;
    stats->live_allocations++;
    stats->total_allocations++;
    *out_mem = chunk->region->mem;
    *out_offset = chunk->offset;
    pthread_mutex_unlock(&bfc->mutex);
    return NULL;
}

/* Folds `next` into `chunk`; both are free, and `next` follows `chunk` in the region. */
static void merge(tp_bfc_t *bfc, chunk_t *chunk, chunk_t *next) {
    chunk->size += next->size;
    chunk->next = next->next;
    if (next->next != NULL) next->next->prev = chunk;
    drop_chunk(bfc, next);
}

void tp_bfc_free(tp_bfc_t *bfc, void *mem, uint64_t offset) {
    pthread_mutex_lock(&bfc->mutex);
    chunk_t *chunk = table_take(bfc, mem, offset);
    if (chunk == NULL) {
        pthread_mutex_unlock(&bfc->mutex);
        tp_log_message(TP_LOG_ERROR, "%s: free of memory it did not allocate (offset %llu)",
                       bfc->name, (unsigned long long)offset);
        return;
    }
    chunk->in_use = false;
    bfc->stats.bytes_in_use -= chunk->size;
    bfc->stats.live_allocations--;
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
    pthread_mutex_unlock(&bfc->mutex);
}

void tp_bfc_get_stats(tp_bfc_t *bfc, tp_bfc_stats_t *out) {
    pthread_mutex_lock(&bfc->mutex);
    *out = bfc->stats;
    out->largest_free_block = largest_free(bfc);
    pthread_mutex_unlock(&bfc->mutex);
}

void tp_bfc_reset_peak(tp_bfc_t *bfc) {
    pthread_mutex_lock(&bfc->mutex);
    bfc->stats.peak_bytes_in_use = bfc->stats.bytes_in_use;
    pthread_mutex_unlock(&bfc->mutex);
}

void tp_bfc_describe(tp_bfc_t *bfc, char *text, size_t capacity) {
    pthread_mutex_lock(&bfc->mutex);
    describe_locked(bfc, text, capacity);
    pthread_mutex_unlock(&bfc->mutex);
}
