/* SPDX-License-Identifier: Apache-2.0 */
/* gettid is a GNU extension; the rest of the core asks only for POSIX. */
#define _GNU_SOURCE
#include "profiler/recorder.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A thread that records more than this in one profile loses the rest, counted as dropped:
 * about 64 MiB of events, so that a profile left on cannot take all of the host's memory. */
enum { EVENTS_PER_CHUNK = 512, MAX_EVENTS_PER_BUFFER = 1 << 20 };

typedef struct event_chunk {
    struct event_chunk *next;
    size_t count;
    tp_profile_event_t events[EVENTS_PER_CHUNK];
} event_chunk_t;

typedef struct {
    const char *text;
    uint32_t hash;
} intern_slot_t;

struct tp_profile_storage {
    event_chunk_t *first, *last;
    size_t count;
    tp_arena_t strings;
    intern_slot_t *slots; /* open addressing; capacity a power of two */
    size_t capacity, used;
    uint64_t dropped;
};

/* A thread's buffer. Buffers are never freed: a thread that exits leaves its buffer to the
 * next new thread, and an append racing with the end of a profile may still hold it. */
typedef struct buffer {
    struct buffer *next;   /* in the registry */
    pthread_mutex_t mutex; /* guards generation and storage */
    uint64_t generation;   /* the profile the storage holds events of */
    tp_profile_storage_t storage;
    tp_strbuf_t scratch;   /* the owner's alone */
    bool owned;            /* a live thread appends to it; guarded by registry_mutex */
} buffer_t;

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static buffer_t *registry;
static pthread_key_t owner_key;
static pthread_once_t owner_key_once = PTHREAD_ONCE_INIT;
static _Thread_local buffer_t *own_buffer;

/* The profile taking events (0: none), and the last one given out, under session_mutex. */
static atomic_uint_fast64_t active_generation;
static uint64_t last_generation;
static pthread_mutex_t session_mutex = PTHREAD_MUTEX_INITIALIZER;

/* ---- Storage ------------------------------------------------------------------------------ */

static uint32_t hash_text(const char *text) {
    uint32_t hash = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++)
        hash = (hash ^ *p) * 16777619u;
    return hash;
}

static bool grow_slots(tp_profile_storage_t *storage) {
    size_t capacity = storage->capacity == 0 ? 64 : storage->capacity * 2;
    intern_slot_t *slots = calloc(capacity, sizeof *slots);
    if (slots == NULL) return false;
    for (size_t i = 0; i < storage->capacity; i++) {
        if (storage->slots[i].text == NULL) continue;
        size_t at = storage->slots[i].hash & (capacity - 1);
        while (slots[at].text != NULL) at = (at + 1) & (capacity - 1);
        slots[at] = storage->slots[i];
    }
    free(storage->slots);
    storage->slots = slots;
    storage->capacity = capacity;
    return true;
}

/* The storage's copy of `text`, made once; NULL for NULL, and when out of memory. */
static const char *intern(tp_profile_storage_t *storage, const char *text) {
    if (text == NULL) return NULL;
    if ((storage->used + 1) * 2 > storage->capacity && !grow_slots(storage)) return NULL;
    uint32_t hash = hash_text(text);
    size_t at = hash & (storage->capacity - 1);
    for (;; at = (at + 1) & (storage->capacity - 1)) {
        intern_slot_t *slot = &storage->slots[at];
        if (slot->text == NULL) break;
        if (slot->hash == hash && strcmp(slot->text, text) == 0) return slot->text;
    }
    char *copy = tp_arena_strdup(&storage->strings, text);
    if (copy == NULL) return NULL;
    storage->slots[at] = (intern_slot_t){copy, hash};
    storage->used++;
    return copy;
}

static void append(tp_profile_storage_t *storage, const tp_profile_event_t *event) {
    if (storage->count >= MAX_EVENTS_PER_BUFFER) {
        storage->dropped++;
        return;
    }
    if (storage->last == NULL || storage->last->count == EVENTS_PER_CHUNK) {
        event_chunk_t *chunk = malloc(sizeof *chunk);
        if (chunk == NULL) {
            storage->dropped++;
            return;
        }
        chunk->next = NULL;
        chunk->count = 0;
        if (storage->last != NULL)
            storage->last->next = chunk;
        else
            storage->first = chunk;
        storage->last = chunk;
    }
    tp_profile_event_t copy = *event;
    copy.name = intern(storage, event->name);
    copy.process = intern(storage, event->process);
    copy.thread = intern(storage, event->thread);
    copy.args = intern(storage, event->args);
    if ((event->name != NULL && copy.name == NULL) || (event->thread != NULL && copy.thread == NULL) ||
        (event->process != NULL && copy.process == NULL) ||
        (event->args != NULL && copy.args == NULL)) {
        storage->dropped++;
        return;
    }
    storage->last->events[storage->last->count++] = copy;
    storage->count++;
}

static void storage_free(tp_profile_storage_t *storage) {
    while (storage->first != NULL) {
        event_chunk_t *next = storage->first->next;
        free(storage->first);
        storage->first = next;
    }
    tp_arena_free(&storage->strings);
    free(storage->slots);
    *storage = (tp_profile_storage_t){0};
}

/* ---- Buffers ------------------------------------------------------------------------------ */

static void disown(void *buffer) {
    pthread_mutex_lock(&registry_mutex);
    ((buffer_t *)buffer)->owned = false;
    pthread_mutex_unlock(&registry_mutex);
}

static void make_owner_key(void) {
    if (pthread_key_create(&owner_key, disown) != 0) owner_key = (pthread_key_t)-1;
}

/* This thread's buffer: a free one of a thread that exited, or a new one; NULL when out of
 * memory. */
static buffer_t *thread_buffer(void) {
    if (own_buffer != NULL) return own_buffer;
    pthread_once(&owner_key_once, make_owner_key);
    pthread_mutex_lock(&registry_mutex);
    buffer_t *buffer = registry;
    while (buffer != NULL && buffer->owned) buffer = buffer->next;
    if (buffer == NULL && (buffer = calloc(1, sizeof *buffer)) != NULL) {
        if (pthread_mutex_init(&buffer->mutex, NULL) != 0) {
            free(buffer);
            buffer = NULL;
        } else {
            buffer->next = registry;
            registry = buffer;
        }
    }
    if (buffer != NULL) buffer->owned = true;
    pthread_mutex_unlock(&registry_mutex);
    /* Without a key the buffer stays owned after the thread exits: only reuse is lost. */
    if (buffer != NULL && owner_key != (pthread_key_t)-1) pthread_setspecific(owner_key, buffer);
    own_buffer = buffer;
    return buffer;
}

tp_strbuf_t *tp_recorder_scratch(void) {
    buffer_t *buffer = thread_buffer();
    if (buffer == NULL) return NULL;
    /* A failure is sticky in a string buffer: one that ran out of memory starts over. */
    if (tp_strbuf_failed(&buffer->scratch)) {
        tp_strbuf_free(&buffer->scratch);
        buffer->scratch = (tp_strbuf_t)TP_STRBUF_INIT;
    }
    tp_strbuf_clear(&buffer->scratch);
    return &buffer->scratch;
}

/* ---- Thread labels ------------------------------------------------------------------------ */

static _Thread_local char thread_label[96];
static atomic_uint thread_numbers;

void tp_recorder_set_thread_label(const char *label) {
    snprintf(thread_label, sizeof thread_label, "%s", label);
}

const char *tp_recorder_thread_label(void) {
    if (thread_label[0] == '\0') {
        if (gettid() == getpid())
            snprintf(thread_label, sizeof thread_label, "main");
        else
            snprintf(thread_label, sizeof thread_label, "thread %u",
                     atomic_fetch_add(&thread_numbers, 1) + 1);
    }
    return thread_label;
}

/* ---- Profiles ----------------------------------------------------------------------------- */

bool tp_recorder_begin(void) {
    pthread_mutex_lock(&session_mutex);
    bool idle = atomic_load(&active_generation) == 0;
    if (idle) atomic_store_explicit(&active_generation, ++last_generation, memory_order_release);
    pthread_mutex_unlock(&session_mutex);
    return idle;
}

bool tp_recorder_active(void) {
    return atomic_load_explicit(&active_generation, memory_order_acquire) != 0;
}

void tp_recorder_add(const tp_profile_event_t *event) {
    uint64_t generation = atomic_load_explicit(&active_generation, memory_order_acquire);
    if (generation == 0) return;
    buffer_t *buffer = thread_buffer();
    if (buffer == NULL) return;
    pthread_mutex_lock(&buffer->mutex);
    /* Checked again under the buffer's mutex: the end of the profile takes each buffer's
     * events under it, so an event is either taken or never added. */
    if (atomic_load_explicit(&active_generation, memory_order_relaxed) == generation) {
        if (buffer->generation != generation) {
            storage_free(&buffer->storage);
            buffer->generation = generation;
        }
        append(&buffer->storage, event);
    }
    pthread_mutex_unlock(&buffer->mutex);
}

void tp_recorder_end(tp_profile_collection_t *out) {
    *out = (tp_profile_collection_t){0};
    pthread_mutex_lock(&session_mutex);
    uint64_t generation = atomic_exchange(&active_generation, 0);
    pthread_mutex_unlock(&session_mutex);
    if (generation == 0) return;
    pthread_mutex_lock(&registry_mutex);
    size_t capacity = 0;
    for (buffer_t *buffer = registry; buffer != NULL; buffer = buffer->next) {
        pthread_mutex_lock(&buffer->mutex);
        if (buffer->generation == generation &&
            (buffer->storage.count > 0 || buffer->storage.dropped > 0)) {
            out->dropped += buffer->storage.dropped;
            tp_profile_storage_t *taken = malloc(sizeof *taken);
            if (out->count == capacity) {
                size_t grown_capacity = capacity == 0 ? 16 : capacity * 2;
                tp_profile_storage_t **grown =
                    realloc(out->storages, grown_capacity * sizeof *grown);
                if (grown != NULL) {
                    out->storages = grown;
                    capacity = grown_capacity;
                }
            }
            if (taken != NULL && out->count < capacity) {
                *taken = buffer->storage;
                taken->dropped = 0;
                out->storages[out->count++] = taken;
                buffer->storage = (tp_profile_storage_t){0};
            } else {
                out->dropped += buffer->storage.count;
                free(taken);
                storage_free(&buffer->storage);
            }
        }
        pthread_mutex_unlock(&buffer->mutex);
    }
    pthread_mutex_unlock(&registry_mutex);
}

void tp_profile_collection_each(const tp_profile_collection_t *collection,
                                void (*fn)(const tp_profile_event_t *event, void *arg),
                                void *arg) {
    for (size_t s = 0; s < collection->count; s++)
        for (const event_chunk_t *chunk = collection->storages[s]->first; chunk != NULL;
             chunk = chunk->next)
            for (size_t i = 0; i < chunk->count; i++) fn(&chunk->events[i], arg);
}

size_t tp_profile_collection_size(const tp_profile_collection_t *collection) {
    size_t size = 0;
    for (size_t s = 0; s < collection->count; s++) size += collection->storages[s]->count;
    return size;
}

void tp_profile_collection_free(tp_profile_collection_t *collection) {
    for (size_t s = 0; s < collection->count; s++) {
        storage_free(collection->storages[s]);
        free(collection->storages[s]);
    }
    free(collection->storages);
    *collection = (tp_profile_collection_t){0};
}
