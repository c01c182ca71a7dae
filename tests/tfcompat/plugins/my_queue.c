/* SPDX-License-Identifier: Apache-2.0 */
/* MY_DEVICE's streams: each an in-order queue of tasks run by a thread of its own, so that
 * the device is truly asynchronous, as a GPU is: a copy, a kernel's work, an event or a host
 * callback is done some time after the call that queued it returns. */
#include <pthread.h>
#include <stdlib.h>

#include "my_device.h"

typedef struct task {
    struct task *next;
    my_task_fn fn;
    void *arg;
} task_t;

enum { STREAM_MAGIC = 0x5354524d };

struct SP_Stream_st {
    int magic;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    task_t *head, *tail;
    int busy, stopping;
    pthread_t thread;
};

static void *run_stream(void *opaque) {
    SP_Stream stream = opaque;
    pthread_mutex_lock(&stream->lock);
    for (;;) {
        while (stream->head == NULL && !stream->stopping)
            pthread_cond_wait(&stream->changed, &stream->lock);
        if (stream->head == NULL) break;
        task_t *task = stream->head;
        stream->head = task->next;
        if (stream->head == NULL) stream->tail = NULL;
        stream->busy = 1;
        pthread_mutex_unlock(&stream->lock);
        task->fn(task->arg);
        free(task);
        pthread_mutex_lock(&stream->lock);
        stream->busy = 0;
        pthread_cond_broadcast(&stream->changed);
    }
    pthread_mutex_unlock(&stream->lock);
    return NULL;
}

SP_Stream my_stream_create(void) {
    SP_Stream stream = calloc(1, sizeof *stream);
    if (stream == NULL) return NULL;
    stream->magic = STREAM_MAGIC;
    pthread_mutex_init(&stream->lock, NULL);
    pthread_cond_init(&stream->changed, NULL);
    if (pthread_create(&stream->thread, NULL, run_stream, stream) != 0) {
        pthread_mutex_destroy(&stream->lock);
        pthread_cond_destroy(&stream->changed);
        free(stream);
        return NULL;
    }
    return stream;
}

void my_stream_destroy(SP_Stream stream) {
    pthread_mutex_lock(&stream->lock);
    stream->stopping = 1;
    pthread_cond_broadcast(&stream->changed);
    pthread_mutex_unlock(&stream->lock);
    pthread_join(stream->thread, NULL);
    pthread_mutex_destroy(&stream->lock);
    pthread_cond_destroy(&stream->changed);
    free(stream);
}

int my_stream_is_mine(SP_Stream stream) { return stream != NULL && stream->magic == STREAM_MAGIC; }

int my_stream_enqueue(SP_Stream stream, my_task_fn fn, void *arg) {
    task_t *task = malloc(sizeof *task);
    if (task == NULL) return 0;
    task->next = NULL;
    task->fn = fn;
    task->arg = arg;
    pthread_mutex_lock(&stream->lock);
    if (stream->tail != NULL)
        stream->tail->next = task;
    else
        stream->head = task;
    stream->tail = task;
    pthread_cond_broadcast(&stream->changed);
    pthread_mutex_unlock(&stream->lock);
    return 1;
}

void my_stream_wait(SP_Stream stream) {
    pthread_mutex_lock(&stream->lock);
    while (stream->head != NULL || stream->busy) pthread_cond_wait(&stream->changed, &stream->lock);
    pthread_mutex_unlock(&stream->lock);
}

/* Every stream alive, for synchronize_all_activity. */
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static SP_Stream *streams;
static size_t num_streams, streams_capacity;

int my_streams_add(SP_Stream stream) {
    pthread_mutex_lock(&streams_lock);
    if (num_streams == streams_capacity) {
        size_t capacity = streams_capacity == 0 ? 8 : streams_capacity * 2;
        SP_Stream *grown = realloc(streams, capacity * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&streams_lock);
            return 0;
        }
        streams = grown;
        streams_capacity = capacity;
    }
    streams[num_streams++] = stream;
    pthread_mutex_unlock(&streams_lock);
    return 1;
}

void my_streams_remove(SP_Stream stream) {
    pthread_mutex_lock(&streams_lock);
    for (size_t i = 0; i < num_streams; i++)
        if (streams[i] == stream) streams[i] = streams[--num_streams];
    if (num_streams == 0) {
        free(streams);
        streams = NULL;
        streams_capacity = 0;
    }
    pthread_mutex_unlock(&streams_lock);
}

void my_streams_wait_all(void) {
    pthread_mutex_lock(&streams_lock);
    for (size_t i = 0; i < num_streams; i++) my_stream_wait(streams[i]);
    pthread_mutex_unlock(&streams_lock);
}
