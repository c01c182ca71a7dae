/* SPDX-License-Identifier: Apache-2.0 */
#include "launch/execution_hooks.h"

#include <pthread.h>
#include <stdatomic.h>

#include "tensor/tensor.h"

/* Fixed tables: hooks are added a handful of times per process and read on every op, so the
 * readers take no lock. A slot is written before the count that publishes it (release), and a
 * reader loads the count (acquire) before the slots below it. */
enum { MAX_HOOKS = 4 };

static const tp_execution_observer_t *observers[MAX_HOOKS];
static atomic_int num_observers;
static const tp_execution_interceptor_t *interceptors[MAX_HOOKS];
static atomic_int num_interceptors;
/* Serialises writers only. */
static pthread_mutex_t add_mutex = PTHREAD_MUTEX_INITIALIZER;

static bool add(const void **table, atomic_int *count, const void *hook) {
    pthread_mutex_lock(&add_mutex);
    int n = atomic_load_explicit(count, memory_order_relaxed);
    bool added = true;
    for (int i = 0; i < n; i++)
        if (table[i] == hook) goto done;
    if (n == MAX_HOOKS) {
        added = false;
        goto done;
    }
    table[n] = hook;
    atomic_store_explicit(count, n + 1, memory_order_release);
done:
    pthread_mutex_unlock(&add_mutex);
    return added;
}

bool tp_execution_add_observer(const tp_execution_observer_t *observer) {
    return add((const void **)observers, &num_observers, observer);
}

bool tp_execution_add_interceptor(const tp_execution_interceptor_t *interceptor) {
    return add((const void **)interceptors, &num_interceptors, interceptor);
}

const tp_execution_interceptor_t *tp_execution_interceptor_for(const tp_context_t *context) {
    int n = atomic_load_explicit(&num_interceptors, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (interceptors[i]->wants(context)) return interceptors[i];
    return NULL;
}

tp_status_t *tp_execution_notify(tp_context_t *context, const tp_kernel_context_t *call,
                                 tp_tensor_t *const *inputs, size_t num_inputs,
                                 tp_tensor_t **outputs) {
    int n = atomic_load_explicit(&num_observers, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        if (!observers[i]->active()) continue;
        tp_status_t *error = observers[i]->observe(context, call, inputs, num_inputs, outputs);
        if (error != NULL) {
            for (int32_t o = 0; o < call->num_outputs; o++) {
                tp_tensor_release(outputs[o]);
                outputs[o] = NULL;
            }
            return error;
        }
    }
    return NULL;
}
