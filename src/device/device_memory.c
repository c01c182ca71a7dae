/* SPDX-License-Identifier: Apache-2.0 */
/* A logical device's tensor memory: its allocator, and frees deferred until the work that may
 * still read or write the memory is done.
 *
 * A freed chunk waits, with the completion of the last work recorded on the device's stream,
 * in the device's deferred list; so does what waits for other work (a staging buffer, or work
 * of another device's stream on this device's memory, which holds back everything deferred
 * after it). The list is carried out in order, as far as its work is done, whenever memory is
 * asked of the device or counted; when the allocator runs short, the oldest entries are waited
 * for; synchronize and closing the device carry out all of it. So a free costs no host
 * callback and no wait: on an OpenCL device a host callback stalls the queue and takes a hop
 * through another thread, tens of microseconds for every tensor. */
#include <stdio.h>
#include <stdlib.h>

#include "base/profile_hooks.h"
#include "base/status.h"
#include "device/completion.h"
#include "device/device.h"

struct tp_deferred {
    tp_completion_t *after; /* NULL: nothing of its own to wait for */
    void (*fn)(void *arg);  /* NULL: it only holds back what comes after it */
    void *arg;
};

/* ---- The allocator --------------------------------------------------------------------------- */

static tp_status_t *raw_allocate(void *state, uint64_t size, void **out_mem) {
    return tp_physical_device_allocate(state, size, out_mem);
}

static void raw_deallocate(void *state, void *mem, uint64_t size) {
    tp_physical_device_deallocate(state, mem, size);
}

tp_status_t *tp_device_allocator(tp_device_t *device, tp_bfc_t **out) {
    tp_bfc_t *made = atomic_load_explicit(&device->allocator, memory_order_acquire);
    if (made != NULL) {
        *out = made;
        return NULL;
    }
    pthread_mutex_lock(&device->mutex);
    tp_status_t *error = NULL;
    if (device->allocator == NULL) {
        char name[64];
        snprintf(name, sizeof name, "%s_%d_bfc", device->def->type, (int)device->ordinal);
        tp_bfc_backend_t backend = {raw_allocate, raw_deallocate, device->physical};
        error = tp_bfc_create(name, backend, &device->allocator_options, &made);
        if (error == NULL) atomic_store_explicit(&device->allocator, made, memory_order_release);
    }
    *out = device->allocator;
    pthread_mutex_unlock(&device->mutex);
    return error;
}

/* Tells the profile recording the bytes the allocator has in use now. Called with no lock of
 * the device's held. */
static void report_memory(const tp_profile_hooks_t *profile, tp_device_t *device) {
    pthread_mutex_lock(&device->mutex);
    tp_bfc_t *allocator = device->allocator;
    pthread_mutex_unlock(&device->mutex);
    if (allocator == NULL) return;
    tp_bfc_stats_t stats;
    tp_bfc_get_stats(allocator, &stats);
    profile->memory(device, stats.bytes_in_use);
}

/* ---- The deferred list ----------------------------------------------------------------------- */

/* Appends an entry, holding `after`; false when there is no host memory for it. Called with
 * the list's mutex held. */
static bool push(tp_device_t *device, tp_completion_t *after, void (*fn)(void *arg), void *arg) {
    if (device->deferred_count == device->deferred_capacity) {
        size_t capacity = device->deferred_capacity == 0 ? 64 : device->deferred_capacity * 2;
        struct tp_deferred *grown = malloc(capacity * sizeof *grown);
        if (grown == NULL) return false;
        for (size_t i = 0; i < device->deferred_count; i++)
            grown[i] = device->deferred[(device->deferred_first + i) % device->deferred_capacity];
        free(device->deferred);
        device->deferred = grown;
        device->deferred_first = 0;
        device->deferred_capacity = capacity;
    }
    size_t end = (device->deferred_first + device->deferred_count) % device->deferred_capacity;
    device->deferred[end] = (struct tp_deferred){tp_completion_retain(after), fn, arg};
    device->deferred_count++;
    atomic_store_explicit(&device->deferred_waiting, device->deferred_count,
                          memory_order_release);
    return true;
}

/* Whether `after` is done, without waiting; a failure of it belongs to the values computed
 * from that work, which report it, not to the memory. */
static bool is_done(tp_completion_t *after) {
    tp_status_t *failure = NULL;
    bool done = tp_completion_poll(after, &failure);
    tp_status_free(failure);
    return done;
}

/* Carries out the oldest entries whose work is done, up to the first that is not. Nothing
 * waits: polling an event, then the allocator's own lock, is all it costs. */
static void take_back_done(tp_device_t *device) {
    /* One deferred a moment from now is taken back at the next allocation. */
    if (atomic_load_explicit(&device->deferred_waiting, memory_order_acquire) == 0) return;
    bool freed = false;
    pthread_mutex_lock(&device->deferred_mutex);
    while (device->deferred_count > 0) {
        struct tp_deferred oldest = device->deferred[device->deferred_first];
        if (!is_done(oldest.after)) break;
        device->deferred_first = (device->deferred_first + 1) % device->deferred_capacity;
        device->deferred_count--;
        atomic_store_explicit(&device->deferred_waiting, device->deferred_count,
                              memory_order_release);
        device->deferred_done++;
        if (oldest.fn != NULL) oldest.fn(oldest.arg);
        freed = freed || oldest.fn != NULL;
        tp_completion_release(oldest.after); /* resolved: it lets go of no event */
    }
    pthread_mutex_unlock(&device->deferred_mutex);
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    if (profile != NULL && freed) report_memory(profile, device);
}

/* Waits for the oldest entry's work, then carries out what is done; false when there is none.
 * The entry stays first while it is waited for, so that nothing after it goes sooner. */
static bool wait_for_oldest(tp_device_t *device) {
    pthread_mutex_lock(&device->deferred_mutex);
    bool any = device->deferred_count > 0;
    tp_completion_t *after =
        any ? tp_completion_retain(device->deferred[device->deferred_first].after) : NULL;
    pthread_mutex_unlock(&device->deferred_mutex);
    if (!any) return false;
    tp_status_free(tp_completion_wait(after));
    tp_completion_release(after);
    take_back_done(device);
    return true;
}

void tp_device_finish_deferred(tp_device_t *device) {
    pthread_mutex_lock(&device->deferred_mutex);
    uint64_t target = device->deferred_done + device->deferred_count;
    tp_completion_t *last_work = tp_completion_retain(device->last_work);
    pthread_mutex_unlock(&device->deferred_mutex);
    /* Only what was deferred before the call: other threads may go on deferring. */
    for (;;) {
        take_back_done(device);
        pthread_mutex_lock(&device->deferred_mutex);
        bool finished = device->deferred_done >= target;
        pthread_mutex_unlock(&device->deferred_mutex);
        if (finished || !wait_for_oldest(device)) break;
    }
    /* Settled, the last work lets go of its event and of the completions it read, which may
     * be other devices': none is left to outlive its device when the devices close. */
    tp_status_free(tp_completion_wait(last_work));
    tp_completion_release(last_work);
}

/* Frees now what `fn` frees, and tells a recording profile. */
static void carry_out(tp_device_t *device, void (*fn)(void *arg), void *arg) {
    fn(arg);
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    if (profile != NULL) report_memory(profile, device);
}

/* Called with the list's mutex held, which it lets go of: carries the entry out at once when
 * nothing is deferred before it and its work is done, else keeps it. */
static void defer_and_unlock(tp_device_t *device, tp_completion_t *after,
                             void (*fn)(void *arg), void *arg) {
    bool now = device->deferred_count == 0 && is_done(after);
    bool kept = !now && push(device, after, fn, arg);
    if (!now && !kept) tp_completion_retain(after);
    pthread_mutex_unlock(&device->deferred_mutex);
    if (!now && !kept) {
        /* No memory to keep it: wait for what it waits for, in order, here. */
        tp_device_finish_deferred(device);
        tp_status_free(tp_completion_wait(after));
        tp_completion_release(after);
    }
    if (!kept && fn != NULL) carry_out(device, fn, arg);
}

void tp_device_defer(tp_device_t *device, tp_completion_t *after, void (*fn)(void *arg),
                     void *arg) {
    pthread_mutex_lock(&device->deferred_mutex);
    defer_and_unlock(device, after, fn, arg);
}

void tp_device_note_work(tp_device_t *device, tp_completion_t *done) {
    tp_completion_retain(done);
    pthread_mutex_lock(&device->deferred_mutex);
    tp_completion_t *earlier = device->last_work;
    device->last_work = done;
    pthread_mutex_unlock(&device->deferred_mutex);
    tp_completion_release(earlier);
}

/* ---- Tensor memory --------------------------------------------------------------------------- */

static void free_chunk(void *chunk) { tp_bfc_free(chunk); }

void tp_device_free_in_order(tp_device_t *device, tp_bfc_chunk_t *chunk) {
    /* A synchronous device records no work (its last_work stays NULL): with nothing deferred
     * before it, the chunk's work is done and it goes back now. An entry deferred meanwhile by
     * another thread comes after this free, as it would after the lock. */
    if (device->synchronous &&
        atomic_load_explicit(&device->deferred_waiting, memory_order_acquire) == 0) {
        carry_out(device, free_chunk, chunk);
        return;
    }
    pthread_mutex_lock(&device->deferred_mutex);
    /* The stream's last recorded work ends after all work queued before the free, which is
     * all of the stream's that can still touch the chunk: its tensor's last reference is
     * gone. Other streams' work on it is deferred before it. */
    defer_and_unlock(device, device->last_work, free_chunk, chunk);
}

tp_status_t *tp_device_allocate(tp_device_t *device, uint64_t size, tp_bfc_block_t *out) {
    tp_bfc_t *allocator;
    TP_RETURN_IF_ERROR(tp_device_allocator(device, &allocator));
    take_back_done(device);
    tp_status_t *error = tp_bfc_allocate(allocator, size, out);
    /* Short of memory: what is still deferred may be enough, once its work is done. A size
     * beyond the limit never fits, whatever comes back. */
    while (error != NULL && tp_status_code(error) == TP_RESOURCE_EXHAUSTED &&
           size <= device->allocator_options.limit && wait_for_oldest(device)) {
        tp_status_free(error);
        error = tp_bfc_allocate(allocator, size, out);
    }
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    if (profile != NULL && error == NULL) report_memory(profile, device);
    return error;
}

void tp_device_memory_stats(tp_device_t *device, tp_bfc_stats_t *out) {
    pthread_mutex_lock(&device->mutex);
    tp_bfc_t *allocator = device->allocator;
    pthread_mutex_unlock(&device->mutex);
    if (allocator != NULL) {
        take_back_done(device);
        tp_bfc_get_stats(allocator, out);
        return;
    }
    *out = (tp_bfc_stats_t){.bytes_limit = device->allocator_options.limit};
}
