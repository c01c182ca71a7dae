/* SPDX-License-Identifier: Apache-2.0 */
/* Who may watch or take over an op call, without the executing layer knowing who they are: the
 * gradient tape registers an observer (told of each call that ran or was traced) and the
 * function tracer an interceptor (takes the call instead of running it). Eager execution calls
 * these hooks and includes neither autodiff/ nor graph/, so the layering of DESIGN.md holds.
 * Each registers itself the first time it is used (tp_tape_begin, tp_trace_begin); a hook list
 * that nobody has joined costs an op one relaxed load. Hooks are never removed: they are
 * process-wide functions that check their own per-thread state. */
#ifndef TP_LAUNCH_EXECUTION_HOOKS_H
#define TP_LAUNCH_EXECUTION_HOOKS_H

#include <stdbool.h>

#include "context/context.h"
#include "kernel/kernel_context.h"

typedef struct tp_execution_observer {
    /* Whether it wants calls on this thread at all: the cheap test made before `observe`. */
    bool (*active)(void);
    /* Sees a call that ran (or was intercepted) with its outputs. Fails only when it cannot
     * keep what it must (host memory); the caller then releases the outputs, so that nothing
     * the observer needed is silently missing. */
    tp_status_t *(*observe)(tp_context_t *context, const tp_kernel_context_t *call,
                            tp_tensor_t *const *inputs, size_t num_inputs,
                            tp_tensor_t *const *outputs);
} tp_execution_observer_t;

typedef struct tp_execution_interceptor {
    /* Whether it takes this thread's calls on `context` instead of letting them run. */
    bool (*wants)(const tp_context_t *context);
    /* Takes a resolved call whose output shapes are inferred and gives it outputs (symbolic
     * ones, for the tracer). On failure no output is left. */
    tp_status_t *(*take)(tp_context_t *context, tp_kernel_context_t *call,
                         tp_tensor_t *const *inputs, size_t num_inputs, tp_tensor_t **outputs);
} tp_execution_interceptor_t;

/* Adds a hook for the life of the process; adding the same one twice adds it once. The
 * structs must outlive the process's last op (static storage). False when the fixed table is
 * full (a programming error: there are two hooks in the core). */
bool tp_execution_add_observer(const tp_execution_observer_t *observer);
bool tp_execution_add_interceptor(const tp_execution_interceptor_t *interceptor);

/* The interceptor that takes this thread's calls on `context`, or NULL: calls run. */
const tp_execution_interceptor_t *tp_execution_interceptor_for(const tp_context_t *context);

/* Tells every active observer of the call; on an observer's failure the outputs are released
 * and set to NULL, and the failure is returned. */
tp_status_t *tp_execution_notify(tp_context_t *context, const tp_kernel_context_t *call,
                                 tp_tensor_t *const *inputs, size_t num_inputs,
                                 tp_tensor_t **outputs);

#endif
