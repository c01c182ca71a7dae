#include "device/completion.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/status.h"
#include "plugin/plugin_status.h"

enum { PENDING, SUCCEEDED, FAILED };

struct tp_completion {
    atomic_int references;
    atomic_int state;       /* PENDING until resolved, then never changes */
    pthread_mutex_t mutex;  /* held by the one thread resolving it */
    tp_status_t *failure;   /* FAILED: what every reader gets a copy of */
    tp_device_t *device;
    void *event;            /* recorded after the work; NULL when the device needs none */
    const char *what;
    int32_t depth;          /* 1 + the deepest input */
    size_t num_inputs;
    tp_completion_t *inputs[];
};

/* ---- Making one ------------------------------------------------------------------------------ */

static tp_status_t *make(tp_device_t *device, void *event, const char *what,
                         tp_completion_t *const *inputs, size_t num_inputs,
                         tp_completion_t **out) {
    tp_completion_t *completion = malloc(sizeof *completion + num_inputs * sizeof *inputs);
    if (completion == NULL || pthread_mutex_init(&completion->mutex, NULL) != 0) {
        free(completion);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "%s on %s: out of host memory", what,
                              device->full_name);
    }
    atomic_init(&completion->references, 1);
    atomic_init(&completion->state, PENDING);
    completion->failure = NULL;
    completion->device = device;
    completion->event = event;
    completion->what = what;
    completion->depth = 1;
    completion->num_inputs = num_inputs;
    for (size_t i = 0; i < num_inputs; i++) {
        completion->inputs[i] = tp_completion_retain(inputs[i]);
        if (inputs[i]->depth + 1 > completion->depth) completion->depth = inputs[i]->depth + 1;
    }
    *out = completion;
    return NULL;
}

tp_status_t *tp_completion_record(tp_device_t *device, const char *what,
                                  tp_completion_t *const *inputs, size_t num_inputs,
                                  tp_completion_t **out) {
    *out = NULL;
    const tp_device_type_def_t *def = device->def;
    void *event = NULL;
    if (!tp_device_is_synchronous(device)) {
        void *stream;
        TP_RETURN_IF_ERROR(tp_device_stream(device, &stream));
        tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
        if (def->event_create == NULL) {
            /* No event can say which work failed: learn it now, the queue still held. */
            def->stream_synchronize(device->handle, stream, &status);
            TP_RETURN_IF_ERROR(
                tp_plugin_status_check(&status, "%s on %s", what, device->full_name));
        } else {
            TP_RETURN_IF_ERROR(tp_device_take_event(device, &event));
            def->event_record(device->handle, stream, event, &status);
            tp_status_t *error = tp_plugin_status_check(&status, "recording an event after %s "
                                                        "on %s", what, device->full_name);
            if (error != NULL) {
                /* A record that failed may still be queued: destroy it once the stream is
                 * idle rather than reuse it. */
                tp_status_free(tp_device_synchronize(device));
                def->event_destroy(device->handle, event);
                return error;
            }
        }
    }
    if (event == NULL && num_inputs == 0) return NULL;
    if (event == NULL && num_inputs == 1) {
        *out = tp_completion_retain(inputs[0]);
        return NULL;
    }
    tp_status_t *error = make(device, event, what, inputs, num_inputs, out);
    if (error != NULL && event != NULL) {
        tp_status_free(tp_device_synchronize(device));
        tp_device_give_event(device, event);
    }
    return error;
}

/* ---- Learning the outcome -------------------------------------------------------------------- */

/* Blocks until the event is past; the failure it carries, named by the work it follows. */
static tp_status_t *wait_event(tp_completion_t *completion) {
    tp_device_t *device = completion->device;
    const tp_device_type_def_t *def = device->def;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    if (def->event_synchronize != NULL) {
        def->event_synchronize(device->handle, completion->event, &status);
        /* A plug-in that reports the failure without the state still failed the work. */
        return tp_plugin_status_check(&status, "%s on %s", completion->what, device->full_name);
    }
    tp_event_state_t state;
    for (unsigned spins = 0;
         (state = def->event_query(device->handle, completion->event)) == TP_EVENT_PENDING;
         spins++) {
        if (spins < 64) {
            sched_yield();
        } else {
            struct timespec pause = {0, 50 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    if (state == TP_EVENT_COMPLETE) return NULL;
    return tp_status_make(TP_INTERNAL, "%s on %s: the device reported a failure (its plug-in "
                          "has no event_synchronize to say which)", completion->what,
                          device->full_name);
}

/* Sets the outcome and lets go of what it no longer needs. Called with the mutex held. */
static void resolve(tp_completion_t *completion, tp_status_t *failure) {
    completion->failure = failure;
    atomic_store_explicit(&completion->state, failure != NULL ? FAILED : SUCCEEDED,
                          memory_order_release);
    for (size_t i = 0; i < completion->num_inputs; i++)
        tp_completion_release(completion->inputs[i]);
    completion->num_inputs = 0;
    if (completion->event != NULL) tp_device_give_event(completion->device, completion->event);
    completion->event = NULL;
}

static tp_status_t *outcome(const tp_completion_t *completion) {
    return atomic_load_explicit(&completion->state, memory_order_acquire) == FAILED
               ? tp_status_copy(completion->failure)
               : NULL;
}

tp_status_t *tp_completion_wait(tp_completion_t *completion) {
    if (completion == NULL) return NULL;
    if (atomic_load_explicit(&completion->state, memory_order_acquire) != PENDING)
        return outcome(completion);
    pthread_mutex_lock(&completion->mutex);
    if (atomic_load_explicit(&completion->state, memory_order_relaxed) == PENDING) {
        /* Inputs were made earlier, so waiting for them under this lock cannot cycle. Their
         * failure is the origin and wins over this work's own, which may only follow from it;
         * the event is still waited for, so that it is past before it is reused. */
        tp_status_t *failure = NULL;
        for (size_t i = 0; i < completion->num_inputs && failure == NULL; i++)
            failure = tp_completion_wait(completion->inputs[i]);
        tp_status_t *own = completion->event != NULL ? wait_event(completion) : NULL;
        if (failure == NULL) {
            failure = own;
        } else {
            tp_status_free(own);
        }
        resolve(completion, failure);
    }
    pthread_mutex_unlock(&completion->mutex);
    return outcome(completion);
}

bool tp_completion_poll(tp_completion_t *completion, tp_status_t **out_failure) {
    *out_failure = NULL;
    if (completion == NULL) return true;
    if (atomic_load_explicit(&completion->state, memory_order_acquire) != PENDING) {
        *out_failure = outcome(completion);
        return true;
    }
    if (pthread_mutex_trylock(&completion->mutex) != 0) return false; /* being resolved */
    bool known = atomic_load_explicit(&completion->state, memory_order_relaxed) != PENDING;
    if (!known) {
        tp_status_t *failure = NULL;
        bool inputs_known = true;
        for (size_t i = 0; i < completion->num_inputs && failure == NULL && inputs_known; i++)
            inputs_known = tp_completion_poll(completion->inputs[i], &failure);
        bool event_past = completion->event == NULL ||
                          completion->device->def->event_query(completion->device->handle,
                                                               completion->event) !=
                              TP_EVENT_PENDING;
        if (failure != NULL) {
            /* The origin is known; it is kept once the event is past, so that the event is
             * not reused before. */
            known = true;
            if (event_past) {
                tp_status_free(completion->event != NULL ? wait_event(completion) : NULL);
                resolve(completion, tp_status_copy(failure));
            }
            pthread_mutex_unlock(&completion->mutex);
            *out_failure = failure;
            return true;
        }
        if (inputs_known && event_past) {
            resolve(completion, completion->event != NULL ? wait_event(completion) : NULL);
            known = true;
        }
    }
    pthread_mutex_unlock(&completion->mutex);
    if (known) *out_failure = outcome(completion);
    return known;
}

tp_status_t *tp_completion_check_inputs(tp_completion_t **inputs, size_t num_inputs,
                                        size_t *out_pending) {
    size_t pending = 0;
    for (size_t i = 0; i < num_inputs; i++) {
        tp_completion_t *input = inputs[i];
        if (input == NULL) continue;
        tp_status_t *failure = NULL;
        bool known = input->depth >= TP_COMPLETION_MAX_DEPTH
                         ? (failure = tp_completion_wait(input), true)
                         : tp_completion_poll(input, &failure);
        if (failure != NULL) return failure;
        if (known) continue;
        bool seen = false; /* one value read twice is one input */
        for (size_t j = 0; j < pending && !seen; j++) seen = inputs[j] == input;
        if (!seen) inputs[pending++] = input;
    }
    *out_pending = pending;
    return NULL;
}

/* ---- Lifetime -------------------------------------------------------------------------------- */

tp_completion_t *tp_completion_retain(tp_completion_t *completion) {
    if (completion != NULL)
        atomic_fetch_add_explicit(&completion->references, 1, memory_order_relaxed);
    return completion;
}

typedef struct {
    tp_device_t *device;
    void *event;
} late_event_t;

static void give_late_event(void *arg) {
    late_event_t *late = arg;
    tp_device_give_event(late->device, late->event);
    free(late);
}

void tp_completion_release(tp_completion_t *completion) {
    if (completion == NULL) return;
    if (atomic_fetch_sub_explicit(&completion->references, 1, memory_order_acq_rel) != 1) return;
    for (size_t i = 0; i < completion->num_inputs; i++)
        tp_completion_release(completion->inputs[i]);
    if (completion->event != NULL) {
        /* Unresolved: the stream may not have reached the event yet. A failure it carries
         * belongs to work nobody holds a result of any more, and is dropped with it. */
        tp_device_t *device = completion->device;
        late_event_t *late = malloc(sizeof *late);
        tp_status_t *error = late == NULL ? tp_status_make(TP_RESOURCE_EXHAUSTED, "no memory")
                                          : NULL;
        if (late != NULL) {
            *late = (late_event_t){device, completion->event};
            error = tp_device_then(device, give_late_event, late);
        }
        if (error != NULL) {
            tp_status_free(error);
            tp_status_free(wait_event(completion));
            tp_device_give_event(device, completion->event);
            free(late);
        }
    }
    tp_status_free(completion->failure);
    pthread_mutex_destroy(&completion->mutex);
    free(completion);
}
