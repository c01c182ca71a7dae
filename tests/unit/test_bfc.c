/* SPDX-License-Identifier: Apache-2.0 */
/* The BFC allocator over a fake device whose memory is host memory, so that the tests can
 * check that chunks never overlap by writing into them. */
#include "test_support.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/status.h"
#include "memory/bfc_allocator.h"

typedef struct {
    uint64_t reserved;
    int regions;
    int fail_next;  /* the next device allocation fails */
    int fail_after; /* > 0: allocations after this many succeed fail */
} fake_device_t;

static tp_status_t *fake_allocate(void *state, uint64_t size, void **out_mem) {
    fake_device_t *device = state;
    if (device->fail_next || (device->fail_after > 0 && device->regions >= device->fail_after)) {
        device->fail_next = 0;
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "the fake device is full");
    }
    void *mem = malloc((size_t)size);
    if (mem == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "no host memory");
    device->reserved += size;
    device->regions++;
    *out_mem = mem;
    return NULL;
}

static void fake_deallocate(void *state, void *mem, uint64_t size) {
    fake_device_t *device = state;
    device->reserved -= size;
    device->regions--;
    free(mem);
}

static tp_bfc_t *make_capped(fake_device_t *device, uint64_t limit, bool growth,
                             uint64_t initial, uint64_t max_region) {
    tp_bfc_backend_t backend = {fake_allocate, fake_deallocate, device};
    tp_bfc_options_t options = {limit, growth, initial, max_region};
    tp_bfc_t *bfc;
    assert_ok(tp_bfc_create("FAKE_0_bfc", backend, &options, &bfc));
    return bfc;
}

static tp_bfc_t *make(fake_device_t *device, uint64_t limit, bool growth, uint64_t initial) {
    return make_capped(device, limit, growth, initial, 0);
}

static tp_bfc_stats_t stats_of(tp_bfc_t *bfc) {
    tp_bfc_stats_t stats;
    tp_bfc_get_stats(bfc, &stats);
    return stats;
}

static void chunks_are_reused_and_merged(void **state) {
    (void)state;
    fake_device_t device = {0};
    tp_bfc_t *bfc = make(&device, 1 << 20, false, 0);
    tp_bfc_block_t block[3];
    for (int i = 0; i < 3; i++) assert_ok(tp_bfc_allocate(bfc, 1000, &block[i]));
    assert_int_equal(device.regions, 1);
    assert_int_equal(device.reserved, 1 << 20); /* no growth: the whole limit at once */
    assert_int_equal(block[0].offset, 0);
    assert_int_equal(block[1].offset, 1024); /* rounded to 256 bytes */
    assert_int_equal(block[2].offset, 2048);
    assert_ptr_equal(block[0].mem, block[2].mem); /* one region */
    tp_bfc_stats_t stats = stats_of(bfc);
    assert_int_equal(stats.bytes_in_use, 3072);
    assert_int_equal(stats.live_allocations, 3);
    tp_bfc_free(block[1].chunk);
    tp_bfc_block_t again;
    assert_ok(tp_bfc_allocate(bfc, 512, &again));
    assert_int_equal(again.offset, 1024); /* the best fit is the hole */
    tp_bfc_free(again.chunk);
    tp_bfc_free(again.chunk); /* a second free is refused, not a corruption */
    tp_bfc_free(block[0].chunk);
    tp_bfc_free(block[2].chunk);
    stats = stats_of(bfc);
    assert_int_equal(stats.bytes_in_use, 0);
    assert_int_equal(stats.live_allocations, 0);
    assert_int_equal(stats.largest_free_block, 1 << 20); /* all merged back into one */
    assert_int_equal(stats.peak_bytes_in_use, 3072);
    tp_bfc_reset_peak(bfc);
    assert_int_equal(stats_of(bfc).peak_bytes_in_use, 0);
    tp_bfc_destroy(bfc);
    assert_int_equal(device.regions, 0);
}

/* A small block freed is kept for the next allocation of its size, but the statistics, best
 * fit and the limit see it as free. */
static void a_kept_block_counts_as_free(void **state) {
    (void)state;
    fake_device_t device = {0};
    tp_bfc_t *bfc = make(&device, 8192, false, 0);
    tp_bfc_block_t first, again, other, big;
    assert_ok(tp_bfc_allocate(bfc, 1000, &first));
    tp_bfc_free(first.chunk);
    assert_ok(tp_bfc_allocate(bfc, 1000, &again));
    assert_int_equal(again.offset, first.offset);
    tp_bfc_free(again.chunk);
    assert_ok(tp_bfc_allocate(bfc, 512, &other)); /* not 1536 in use at the peak */
    tp_bfc_stats_t stats = stats_of(bfc);
    assert_int_equal(stats.bytes_in_use, 512);
    assert_int_equal(stats.peak_bytes_in_use, 1024);
    assert_int_equal(stats.live_allocations, 1);
    assert_int_equal(stats.total_allocations, 3);
    assert_int_equal(other.offset, 0); /* best fit saw the freed block */
    tp_bfc_free(other.chunk);
    assert_ok(tp_bfc_allocate(bfc, 1024, &first));
    tp_bfc_free(first.chunk); /* kept, yet the whole limit can be allocated */
    assert_ok(tp_bfc_allocate(bfc, 8192, &big));
    tp_bfc_free(big.chunk);
    stats = stats_of(bfc);
    assert_int_equal(stats.bytes_in_use, 0);
    assert_int_equal(stats.live_allocations, 0);
    assert_int_equal(stats.largest_free_block, 8192);
    tp_bfc_destroy(bfc);
    assert_int_equal(device.regions, 0);
}

static void out_of_memory_is_a_status_and_recoverable(void **state) {
    (void)state;
    fake_device_t device = {0};
    tp_bfc_t *bfc = make(&device, 1 << 20, false, 0);
    tp_bfc_block_t big, block = {0};
    assert_ok(tp_bfc_allocate(bfc, 768 << 10, &big));
    assert_error(tp_bfc_allocate(bfc, 512 << 10, &block), TP_RESOURCE_EXHAUSTED,
                 "cannot allocate 524288 bytes (no free block is large enough); FAKE_0_bfc: in "
                 "use 786432 bytes, peak 786432, reserved 1048576 of limit 1048576, largest free "
                 "block 262144, 1 live allocations");
    assert_null(block.chunk);
    tp_bfc_free(big.chunk);
    assert_ok(tp_bfc_allocate(bfc, 512 << 10, &block)); /* room again after a free */
    tp_bfc_free(block.chunk);
    assert_error(tp_bfc_allocate(bfc, 0, &block), TP_INVALID_ARGUMENT,
                 "cannot allocate 0 bytes");
    tp_bfc_destroy(bfc);
}

/* A device that serves at most 1 MiB at once (OpenCL's CL_DEVICE_MAX_MEM_ALLOC_SIZE) still
 * reserves its whole limit up front, in regions it can serve, and refuses a larger block. */
static void regions_stay_within_the_largest_device_allocation(void **state) {
    (void)state;
    fake_device_t device = {0};
    tp_bfc_t *bfc = make_capped(&device, (5 << 20) / 2, false, 0, 1 << 20);
    tp_bfc_block_t block[3], none = {0};
    assert_ok(tp_bfc_allocate(bfc, 1 << 20, &block[0]));
    assert_int_equal(device.reserved, (5 << 20) / 2); /* 1 MiB, 1 MiB and 512 KiB */
    assert_int_equal(device.regions, 3);
    assert_ok(tp_bfc_allocate(bfc, 1 << 20, &block[1]));
    assert_ok(tp_bfc_allocate(bfc, 512 << 10, &block[2]));
    assert_int_equal(device.regions, 3);
    assert_error(tp_bfc_allocate(bfc, 256, &none), TP_RESOURCE_EXHAUSTED,
                 "no free block is large enough");
    for (int i = 0; i < 3; i++) tp_bfc_free(block[i].chunk);
    assert_error(tp_bfc_allocate(bfc, (1 << 20) + 1, &none), TP_RESOURCE_EXHAUSTED,
                 "cannot allocate 1048577 bytes (the device serves at most 1048576 bytes in "
                 "one allocation)");
    tp_bfc_destroy(bfc);
    assert_int_equal(device.regions, 0);

    /* Growth takes regions no larger either. */
    bfc = make_capped(&device, 8 << 20, true, 4 << 20, 1 << 20);
    assert_ok(tp_bfc_allocate(bfc, 1000, &block[0]));
    assert_int_equal(device.reserved, 1 << 20);
    tp_bfc_free(block[0].chunk);
    tp_bfc_destroy(bfc);

    /* A reservation the device cannot finish leaves nothing reserved, and says why. */
    device.fail_after = 2;
    bfc = make_capped(&device, 3 << 20, false, 0, 1 << 20);
    assert_error(tp_bfc_allocate(bfc, 1000, &none), TP_RESOURCE_EXHAUSTED,
                 "(the fake device is full)");
    assert_int_equal(device.regions, 0);
    assert_int_equal(device.reserved, 0);
    assert_int_equal(stats_of(bfc).bytes_reserved, 0);
    assert_int_equal(stats_of(bfc).largest_free_block, 0);
    tp_bfc_destroy(bfc);
}

static void growth_doubles_regions_within_the_limit(void **state) {
    (void)state;
    fake_device_t device = {0};
    tp_bfc_t *bfc = make(&device, 16 << 20, true, 1 << 20);
    tp_bfc_block_t block[4];
    assert_ok(tp_bfc_allocate(bfc, 512 << 10, &block[0]));
    assert_int_equal(device.reserved, 1 << 20);
    assert_ok(tp_bfc_allocate(bfc, 768 << 10, &block[1])); /* needs a new region */
    assert_int_equal(device.reserved, 3 << 20);                     /* 1 MiB, then 2 MiB */
    assert_ok(tp_bfc_allocate(bfc, 5 << 20, &block[2]));   /* larger than doubling */
    assert_int_equal(device.reserved, 8 << 20);
    assert_int_equal(device.regions, 3);
    /* 8 MiB more would pass the 16 MiB limit. */
    assert_error(tp_bfc_allocate(bfc, 9 << 20, &block[3]), TP_RESOURCE_EXHAUSTED,
                 "the limit leaves 8388608 bytes to grow by");
    for (int i = 0; i < 3; i++) tp_bfc_free(block[i].chunk);
    assert_int_equal(device.reserved, 8 << 20); /* regions are kept: never shrinking */
    device.fail_next = 1;
    assert_error(tp_bfc_allocate(bfc, 8 << 20, &block[3]), TP_RESOURCE_EXHAUSTED,
                 "the fake device is full");
    assert_int_equal(stats_of(bfc).live_allocations, 0);
    tp_bfc_destroy(bfc);
    assert_int_equal(device.reserved, 0);
}

/* Alternating sizes, freed out of order: every live chunk keeps its bytes, so chunks never
 * overlap, and accounting stays exact. */
static void fragmentation_under_alternating_sizes(void **state) {
    (void)state;
    fake_device_t device = {0};
    tp_bfc_t *bfc = make(&device, 64 << 20, true, 1 << 20);
    enum { SLOTS = 200 };
    tp_bfc_block_t block[SLOTS] = {{0}};
    uint64_t size[SLOTS];
    unsigned seed = 12345;
    for (int round = 0; round < 5000; round++) {
        seed = seed * 1103515245u + 12345u;
        int slot = (int)((seed >> 8) % SLOTS);
        if (block[slot].chunk != NULL) {
            const unsigned char *bytes = (unsigned char *)block[slot].mem + block[slot].offset;
            for (uint64_t b = 0; b < size[slot]; b += 97) assert_int_equal(bytes[b], slot & 0xff);
            tp_bfc_free(block[slot].chunk);
            block[slot].chunk = NULL;
        } else {
            size[slot] = round % 2 == 0 ? 256 + (seed >> 20) % 4096
                                        : 64 * 1024 + (seed >> 12) % 65536;
            assert_ok(tp_bfc_allocate(bfc, size[slot], &block[slot]));
            memset((unsigned char *)block[slot].mem + block[slot].offset, slot & 0xff, size[slot]);
        }
    }
    uint64_t live = 0;
    for (int slot = 0; slot < SLOTS; slot++) {
        if (block[slot].chunk == NULL) continue;
        live++;
        tp_bfc_free(block[slot].chunk);
    }
    tp_bfc_stats_t stats = stats_of(bfc);
    assert_int_equal(stats.bytes_in_use, 0);
    assert_true(live > 0);
    assert_true(stats.bytes_reserved <= 64 << 20);
    tp_bfc_destroy(bfc);
}

typedef struct {
    tp_bfc_t *bfc;
    int failures;
} worker_t;

static void *allocate_and_free(void *arg) {
    worker_t *worker = arg;
    for (int i = 0; i < 2000; i++) {
        tp_bfc_block_t block;
        tp_status_t *status = tp_bfc_allocate(worker->bfc, 256 + (uint64_t)(i % 7) * 1000, &block);
        if (status != NULL) {
            tp_status_free(status);
            worker->failures++;
            continue;
        }
        tp_bfc_free(block.chunk);
    }
    return NULL;
}

static void two_threads_allocate_at_once(void **state) {
    (void)state;
    fake_device_t device = {0};
    tp_bfc_t *bfc = make(&device, 8 << 20, true, 1 << 20);
    pthread_t threads[2];
    worker_t workers[2] = {{bfc, 0}, {bfc, 0}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, allocate_and_free, &workers[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failures, 0);
    }
    tp_bfc_stats_t stats = stats_of(bfc);
    assert_int_equal(stats.bytes_in_use, 0);
    assert_int_equal(stats.total_allocations, 4000);
    tp_bfc_destroy(bfc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunks_are_reused_and_merged),
        cmocka_unit_test(out_of_memory_is_a_status_and_recoverable),
        cmocka_unit_test(growth_doubles_regions_within_the_limit),
        cmocka_unit_test(regions_stay_within_the_largest_device_allocation),
        cmocka_unit_test(fragmentation_under_alternating_sizes),
        cmocka_unit_test(a_kept_block_counts_as_free),
        cmocka_unit_test(two_threads_allocate_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
