/* SPDX-License-Identifier: Apache-2.0 */
/* Two threads at once on one device: each copies random bytes through a stream of its own and
 * runs every kernel of the device's type through the runtime, which shares the device's stream
 * between them. Every result must be what the same work gave on one thread. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "conformance/check.h"

enum { THREADS = 2, ROUNDS = 50, MAX_SAMPLES = 16, COPY_BYTES = 64 << 10 };

typedef struct worker {
    tp_check_t check; /* a copy, with a random state of its own */
    tp_check_sample_t **samples;
    size_t num_samples;
    tp_status_t *error;
} worker_t;

static tp_status_t *copy_round(tp_check_t *check, void *stream, void *mem, unsigned char *sent,
                               unsigned char *back) {
    uint64_t size = 1 + tp_check_random(check, COPY_BYTES);
    tp_check_random_bytes(check, sent, size);
    memset(back, 0, size);
    /* Synchronized between the two: stream order is the stream checks' to judge. */
    TP_RETURN_IF_ERROR(tp_check_to_device(check, 0, stream, mem, 0, sent, size));
    TP_RETURN_IF_ERROR(tp_check_synchronize(check, 0, stream));
    TP_RETURN_IF_ERROR(tp_check_to_host(check, 0, stream, back, mem, 0, size));
    TP_RETURN_IF_ERROR(tp_check_synchronize(check, 0, stream));
    if (memcmp(sent, back, size) != 0)
        return tp_check_failure("%llu bytes sent through a stream of one thread came back "
                                "different while another thread worked",
                                (unsigned long long)size);
    return NULL;
}

static tp_status_t *work_rounds(worker_t *worker) {
    tp_check_t *check = &worker->check;
    void *stream = NULL, *mem = NULL;
    unsigned char *sent = malloc(COPY_BYTES), *back = malloc(COPY_BYTES);
    tp_status_t *error = sent == NULL || back == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : tp_check_stream_create(check, 0, &stream);
    if (error == NULL) error = tp_check_allocate(check, 0, COPY_BYTES, &mem);
    for (int round = 0; round < ROUNDS && error == NULL; round++) {
        error = copy_round(check, stream, mem, sent, back);
        for (size_t s = 0; s < worker->num_samples && error == NULL; s++)
            error = tp_check_sample_run(check, worker->samples[s]);
    }
    if (stream != NULL) {
        tp_status_free(tp_check_synchronize(check, 0, stream));
        check->def->stream_destroy(check->devices[0]->handle, stream);
    }
    if (mem != NULL) check->def->deallocate(check->devices[0]->handle, mem);
    free(sent);
    free(back);
    return error;
}

static void *work(void *arg) {
    worker_t *worker = arg;
    worker->error = work_rounds(worker);
    return NULL;
}

/* A sample of each kernel of the device's type, in the first dtype it claims. */
static tp_status_t *take_samples(tp_check_t *check, tp_device_t *device,
                                 tp_check_sample_t **samples, size_t *count) {
    *count = 0;
    const tp_kernel_entry_t *entry;
    for (size_t k = 0; (entry = tp_check_kernel_entry(check, k)) != NULL; k++) {
        if (entry->device_type != check->def || entry->op->is_stateful) continue;
        if (*count == MAX_SAMPLES) break;
        tp_dtype_t dtypes[TP_CHECK_MAX_DTYPES];
        if (tp_check_claimed_dtypes(entry, dtypes) == 0) continue;
        TP_RETURN_IF_ERROR(
            tp_check_sample_create(check, entry, device, dtypes[0], &samples[*count]));
        if (samples[*count] != NULL) (*count)++;
    }
    return NULL;
}

tp_status_t *tp_check_two_threads(tp_check_t *check, const char *type) {
    tp_check_name(check, "%s:0 two threads", type);
    tp_status_t *error;
    if (!tp_check_devices(check, type, &error)) return error;
    tp_device_t *device = check->logical;
    tp_check_sample_t *samples[MAX_SAMPLES];
    size_t num_samples = 0;
    error = take_samples(check, device, samples, &num_samples);
    worker_t workers[THREADS];
    pthread_t threads[THREADS];
    int started = 0;
    while (started < THREADS && error == NULL) {
        workers[started] = (worker_t){*check, samples, num_samples, NULL};
        workers[started].check.random_state += (uint64_t)(started + 1) * 0x632BE59BD9B4E019u;
        if (pthread_create(&threads[started], NULL, work, &workers[started]) != 0)
            error = tp_status_make(TP_RESOURCE_EXHAUSTED, "cannot start a thread");
        else
            started++;
    }
    for (int t = 0; t < started; t++) {
        pthread_join(threads[t], NULL);
        if (error == NULL) error = workers[t].error;
        else tp_status_free(workers[t].error);
    }
    for (size_t s = 0; s < num_samples; s++) tp_check_sample_free(samples[s]);
    TP_RETURN_IF_ERROR(error);
    tp_check_detail(check, "%d threads, each %d rounds of a copy through its own stream and %zu "
                    "kernel call%s, gave what one thread did",
                    THREADS, ROUNDS, num_samples, num_samples == 1 ? "" : "s");
    return NULL;
}
