/* SPDX-License-Identifier: Apache-2.0 */
#include "device/completion.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/profile_hooks.h"
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
    completion->num_inputs = num_inputs;
    for (size_t i = 0; i < num_inputs; i++) completion->inputs[i] = tp_completion_retain(inputs[i]);
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
    /* The queue is still held: no work comes between, so its end is the end of all so far. */
    if (error == NULL && event != NULL) tp_device_note_work(device, *out);
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

/* While a profile records, hands it the device's own times of the work `event` followed, when
 * the plug-in keeps them (plugin.h, 1.6). Called once the event is past, before it is given
 * back for reuse. */
static void report_work_times(tp_device_t *device, const char *what, void *event) {
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    if (profile == NULL || device->def->event_work_times == NULL) return;
    uint64_t start_ns = 0, end_ns = 0;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    device->def->event_work_times(device->handle, event, &start_ns, &end_ns, &status);
    tp_status_t *error = tp_plugin_status_check(&status, "event_work_times on %s",
                                                device->full_name);
    /* Without times the profile shows when the host queued the work, as for any device. */
    if (error == NULL && start_ns > 0 && end_ns >= start_ns)
        profile->device_work(device, what, start_ns, end_ns);
    tp_status_free(error);
}

/* Sets the outcome and lets go of what it no longer needs. Called with the mutex held. */
static void resolve(tp_completion_t *completion, tp_status_t *failure) {
    completion->failure = failure;
    atomic_store_explicit(&completion->state, failure != NULL ? FAILED : SUCCEEDED,
                          memory_order_release);
    for (size_t i = 0; i < completion->num_inputs; i++)
        tp_completion_release(completion->inputs[i]);
    completion->num_inputs = 0;
    if (completion->event != NULL) {
        report_work_times(completion->device, completion->what, completion->event);
        tp_device_give_event(completion->device, completion->event);
    }
    completion->event = NULL;
}

static int state_of(const tp_completion_t *completion) {
    return atomic_load_explicit(&completion->state, memory_order_acquire);
}

static tp_status_t *outcome(const tp_completion_t *completion) {
    return state_of(completion) == FAILED ? tp_status_copy(completion->failure) : NULL;
}

/* A stack of completions to visit, each held by a reference while on it: a dependent that
 * resolves meanwhile lets go of its inputs. On the C stack while small. */
typedef struct {
    tp_completion_t **items, *small[32];
    size_t count, capacity;
} visit_stack_t;

static bool push(visit_stack_t *stack, tp_completion_t *completion) {
    if (stack->count == stack->capacity) {
        size_t capacity = stack->capacity * 2;
        tp_completion_t **grown = stack->items == stack->small
                                      ? malloc(capacity * sizeof *grown)
                                      : realloc(stack->items, capacity * sizeof *grown);
        if (grown == NULL) return false;
        if (stack->items == stack->small)
            for (size_t i = 0; i < stack->count; i++) grown[i] = stack->small[i];
        stack->items = grown;
        stack->capacity = capacity;
    }
    stack->items[stack->count++] = tp_completion_retain(completion);
    return true;
}

static void clear(visit_stack_t *stack) {
    while (stack->count > 0) tp_completion_release(stack->items[--stack->count]);
    if (stack->items != stack->small) free(stack->items);
}

/* Resolves `root` and the pending completions it depends on, oldest first, without recursion
 * (a host far ahead of its device makes long chains). A completion is resolved once all its
 * inputs are: with the failure of the first failed input, the origin, which wins over its own
 * (a consequence), or else its event's. Its event is waited for either way, so that it is past
 * before it is reused. With `block` false nothing waits: it stops at the first completion that
 * is busy or whose event is pending, and returns false; so it visits only finished work, and
 * each completion is resolved once, however often a launch polls. No thread holds two
 * completions' mutexes at once. */
static bool settle(tp_completion_t *root, bool block) {
    if (state_of(root) != PENDING) return true;
    visit_stack_t stack;
    stack.items = stack.small;
    stack.count = 0;
    stack.capacity = sizeof stack.small / sizeof stack.small[0];
    bool settled = push(&stack, root);
    while (settled && stack.count > 0) {
        tp_completion_t *completion = stack.items[stack.count - 1];
        if (state_of(completion) != PENDING) {
            tp_completion_release(stack.items[--stack.count]);
            continue;
        }
        if (block) {
            pthread_mutex_lock(&completion->mutex);
        } else if (pthread_mutex_trylock(&completion->mutex) != 0) {
            settled = false; /* another thread is resolving it */
            break;
        }
        /* Without waiting, a completion whose own event is pending cannot settle now: looking
         * further down its chain would only cost time at every launch. */
        if (!block && state_of(completion) == PENDING && completion->event != NULL &&
            completion->device->def->event_query(completion->device->handle,
                                                 completion->event) == TP_EVENT_PENDING) {
            pthread_mutex_unlock(&completion->mutex);
            settled = false;
            break;
        }
        tp_completion_t *unresolved = NULL;
        tp_status_t *failure = NULL;
        for (size_t i = 0; state_of(completion) == PENDING && i < completion->num_inputs; i++) {
            tp_completion_t *input = completion->inputs[i];
            int input_state = state_of(input);
            if (input_state == PENDING) {
                unresolved = input;
                break;
            }
            if (input_state == FAILED && failure == NULL) failure = outcome(input);
        }
        if (state_of(completion) != PENDING) {
            tp_status_free(failure);
        } else if (unresolved != NULL) {
            tp_status_free(failure);
            settled = push(&stack, unresolved);
        } else {
            tp_status_t *own = completion->event != NULL ? wait_event(completion) : NULL;
            if (failure == NULL) {
                failure = own;
            } else {
                tp_status_free(own);
            }
            resolve(completion, failure);
        }
        pthread_mutex_unlock(&completion->mutex);
    }
    clear(&stack);
    if (!settled && block) {
        /* No memory for the visit: wait for the device itself, which settles the events. */
        tp_status_free(tp_device_synchronize(root->device));
        return false;
    }
    return settled;
}

tp_status_t *tp_completion_wait(tp_completion_t *completion) {
    if (completion == NULL) return NULL;
    if (!settle(completion, true) && state_of(completion) == PENDING)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "waiting for %s on %s: out of host memory",
                              completion->what, completion->device->full_name);
    return outcome(completion);
}

bool tp_completion_poll(tp_completion_t *completion, tp_status_t **out_failure) {
    *out_failure = NULL;
    if (completion == NULL) return true;
    if (!settle(completion, false)) return false;
    *out_failure = outcome(completion);
    return true;
}

tp_status_t *tp_completion_check_inputs(tp_completion_t **inputs, size_t num_inputs,
                                        size_t *out_pending) {
    size_t pending = 0;
    for (size_t i = 0; i < num_inputs; i++) {
        tp_completion_t *input = inputs[i];
        if (input == NULL) continue;
        tp_status_t *failure = NULL;
        bool known = tp_completion_poll(input, &failure);
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
    const char *what;
} late_event_t;

static void give_late_event(void *arg) {
    late_event_t *late = arg;
    report_work_times(late->device, late->what, late->event);
    tp_device_give_event(late->device, late->event);
    free(late);
}

/* Frees one completion whose last reference went, its inputs already taken care of. */
static void destroy(tp_completion_t *completion) {
    if (completion->event != NULL) {
        /* Unresolved: the stream may not have reached the event yet. A failure it carries
         * belongs to work nobody holds a result of any more, and is dropped with it. */
        tp_device_t *device = completion->device;
        late_event_t *late = malloc(sizeof *late);
        tp_status_t *error = late == NULL ? tp_status_make(TP_RESOURCE_EXHAUSTED, "no memory")
                                          : NULL;
        if (late != NULL) {
            *late = (late_event_t){device, completion->event, completion->what};
            error = tp_device_then(device, give_late_event, late);
        }
        if (error != NULL) {
            tp_status_free(error);
            tp_status_free(wait_event(completion));
            report_work_times(device, completion->what, completion->event);
            tp_device_give_event(device, completion->event);
            free(late);
        }
    }
    tp_status_free(completion->failure);
    pthread_mutex_destroy(&completion->mutex);
    free(completion);
}

static bool last_reference(tp_completion_t *completion) {
    return atomic_fetch_sub_explicit(&completion->references, 1, memory_order_acq_rel) == 1;
}

/* Without recursion, since a dropped chain of pending work can be long. */
void tp_completion_release(tp_completion_t *completion) {
    if (completion == NULL || !last_reference(completion)) return;
    visit_stack_t freed;
    freed.items = freed.small;
    freed.count = 0;
    freed.capacity = sizeof freed.small / sizeof freed.small[0];
    freed.items[freed.count++] = completion;
    while (freed.count > 0) {
        tp_completion_t *next = freed.items[--freed.count];
        for (size_t i = 0; i < next->num_inputs; i++) {
            tp_completion_t *input = next->inputs[i];
            if (!last_reference(input)) continue;
            if (freed.count == freed.capacity) {
                size_t capacity = freed.capacity * 2;
                tp_completion_t **grown = freed.items == freed.small
                                              ? malloc(capacity * sizeof *grown)
                                              : realloc(freed.items, capacity * sizeof *grown);
                if (grown == NULL) {
                    /* No room to defer it: free its chain now, by recursion. */
                    atomic_fetch_add_explicit(&input->references, 1, memory_order_relaxed);
                    tp_completion_release(input);
                    continue;
                }
                if (freed.items == freed.small)
                    for (size_t j = 0; j < freed.count; j++) grown[j] = freed.small[j];
                freed.items = grown;
                freed.capacity = capacity;
            }
            freed.items[freed.count++] = input;
        }
        next->num_inputs = 0;
        destroy(next);
    }
    if (freed.items != freed.small) free(freed.items);
}
