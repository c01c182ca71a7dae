/* SPDX-License-Identifier: Apache-2.0 */
/* The APU's memory: one arena per device, carved first-fit into blocks that merge again when
 * freed. The host sees a block only as a handle, APU_ADDRESS_BASE plus its offset. */
#include <stdint.h>
#include <stdlib.h>

#include "apu_device.h"

typedef struct apu_block {
    struct apu_block *next;
    uint64_t offset;
    uint64_t size;
    bool used;
} apu_block_t;

enum { ALIGNMENT = 256 };

/* Allocations counted across devices, for TP_APU_FAIL_ALLOCATION. */
static int64_t allocation_count;
static pthread_mutex_t fault_mutex = PTHREAD_MUTEX_INITIALIZER;

bool apu_memory_init(apu_device_t *device, tp_plugin_status_t *status) {
    device->arena_bytes = apu_config.memory_bytes;
    /* calloc of a large size maps pages lazily: a 1 GiB device costs nothing until used. */
    device->arena = calloc(1, (size_t)device->arena_bytes);
    apu_block_t *all = calloc(1, sizeof *all);
    if (device->arena == NULL || all == NULL) {
        free(device->arena);
        free(all);
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                             "APU:%d: cannot reserve %llu bytes of simulated memory",
                             (int)device->ordinal, (unsigned long long)device->arena_bytes);
        return false;
    }
    *all = (apu_block_t){NULL, 0, device->arena_bytes, false};
    device->blocks = all;
    pthread_mutex_init(&device->memory_mutex, NULL);
    return true;
}

void apu_memory_release(apu_device_t *device) {
    while (device->blocks != NULL) {
        apu_block_t *next = device->blocks->next;
        free(device->blocks);
        device->blocks = next;
    }
    pthread_mutex_destroy(&device->memory_mutex);
    free(device->arena);
}

static void *handle_of(uint64_t offset) { return (void *)(uintptr_t)(APU_ADDRESS_BASE + offset); }

static bool injected_allocation_failure(void) {
    if (apu_config.fail_allocation <= 0) return false;
    pthread_mutex_lock(&fault_mutex);
    bool fail = ++allocation_count == apu_config.fail_allocation;
    pthread_mutex_unlock(&fault_mutex);
    return fail;
}

void apu_allocate(void *handle, uint64_t size, void **out_mem, tp_plugin_status_t *status) {
    apu_device_t *device = handle;
    if (injected_allocation_failure()) {
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                             "APU:%d: injected failure of allocation %lld (TP_APU_FAIL_ALLOCATION)",
                             (int)device->ordinal, (long long)apu_config.fail_allocation);
        return;
    }
    if (size == 0 || size > device->arena_bytes) {
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                             "APU:%d: cannot allocate %llu bytes of %llu", (int)device->ordinal,
                             (unsigned long long)size, (unsigned long long)device->arena_bytes);
        return;
    }
    uint64_t rounded = (size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    pthread_mutex_lock(&device->memory_mutex);
    apu_block_t *block = device->blocks;
    while (block != NULL && (block->used || block->size < rounded)) block = block->next;
    bool split_failed = false;
    if (block != NULL && block->size > rounded) {
        apu_block_t *rest = malloc(sizeof *rest);
        if (rest == NULL) {
            split_failed = true;
        } else {
            *rest = (apu_block_t){block->next, block->offset + rounded, block->size - rounded,
                                  false};
            block->next = rest;
            block->size = rounded;
        }
    }
    if (block != NULL && !split_failed) {
        block->used = true;
        device->bytes_in_use += block->size;
    }
    uint64_t in_use = device->bytes_in_use;
    pthread_mutex_unlock(&device->memory_mutex);
    if (block == NULL || split_failed) {
        apu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                             "APU:%d: out of memory allocating %llu bytes (%llu of %llu in use)",
                             (int)device->ordinal, (unsigned long long)size,
                             (unsigned long long)in_use, (unsigned long long)device->arena_bytes);
        return;
    }
    *out_mem = handle_of(block->offset);
}

void apu_deallocate(void *handle, void *mem) {
    apu_device_t *device = handle;
    uint64_t offset = (uint64_t)(uintptr_t)mem - APU_ADDRESS_BASE;
    pthread_mutex_lock(&device->memory_mutex);
    apu_block_t *previous = NULL, *block = device->blocks;
    while (block != NULL && block->offset != offset) {
        previous = block;
        block = block->next;
    }
    if (block != NULL && block->used) {
        block->used = false;
        device->bytes_in_use -= block->size;
        apu_block_t *next = block->next;
        if (next != NULL && !next->used) { /* merge with the block after */
            block->size += next->size;
            block->next = next->next;
            free(next);
        }
        if (previous != NULL && !previous->used) { /* and with the block before */
            previous->size += block->size;
            previous->next = block->next;
            free(block);
        }
    }
    pthread_mutex_unlock(&device->memory_mutex);
}

void apu_memory_usage(void *handle, uint64_t *free_bytes, uint64_t *total_bytes) {
    apu_device_t *device = handle;
    pthread_mutex_lock(&device->memory_mutex);
    *total_bytes = device->arena_bytes;
    *free_bytes = device->arena_bytes - device->bytes_in_use;
    pthread_mutex_unlock(&device->memory_mutex);
}

unsigned char *apu_translate(apu_device_t *device, const void *mem, uint64_t offset,
                             uint64_t size) {
    uint64_t address = (uint64_t)(uintptr_t)mem;
    if (address < APU_ADDRESS_BASE) return NULL;
    uint64_t start = address - APU_ADDRESS_BASE;
    unsigned char *host = NULL;
    pthread_mutex_lock(&device->memory_mutex);
    for (apu_block_t *block = device->blocks; block != NULL; block = block->next) {
        if (block->offset != start) continue;
        if (block->used && offset <= block->size && size <= block->size - offset)
            host = device->arena + start + offset;
        break;
    }
    pthread_mutex_unlock(&device->memory_mutex);
    return host;
}
