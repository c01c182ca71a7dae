/* SPDX-License-Identifier: Apache-2.0 */
/* The gradient tape's hooks into the rest of the core: eager execution and tracing report each
 * op they ran, and variables report each value they hand out. */
#ifndef TP_AUTODIFF_TAPE_H
#define TP_AUTODIFF_TAPE_H

#include "kernel/kernel_context.h"
#include "tensorplug/training.h"

/* Whether a tape records on this thread: the cheap test before tp_tape_record_op. */
bool tp_tape_any_recording(void);

/* Between these, no tape of this thread records: for updates, which are not differentiable.
 * They nest. */
void tp_tape_suspend(void);
void tp_tape_resume(void);

/* Records a call that just ran (or was traced) on every tape recording on this thread for
 * `context` that watches one of its inputs. Fails only when host memory runs out. */
tp_status_t *tp_tape_record_op(tp_context_t *context, const tp_kernel_context_t *call,
                               tp_tensor_t *const *inputs, size_t num_inputs,
                               tp_tensor_t *const *outputs);

/* Makes every tape recording on this thread for `context` watch `value`, read from
 * `variable`. */
tp_status_t *tp_tape_watch_variable(tp_context_t *context, const tp_variable_t *variable,
                                    tp_tensor_t *value);

#endif
