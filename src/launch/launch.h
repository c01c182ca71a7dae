/* SPDX-License-Identifier: Apache-2.0 */
/* One way to run a kernel, shared by eager execution and the graph executor: bring the inputs
 * to the op's device, allocate the outputs, launch, and give the outputs the completion of the
 * launch, so that each carries its own readiness and outcome (device/completion.h). */
#ifndef TP_LAUNCH_LAUNCH_H
#define TP_LAUNCH_LAUNCH_H

#include "context/context.h"
#include "kernel/kernel_context.h"
#include "tensor/tensor.h"

/* Inputs as the kernel sees them: the caller's tensors, or copies on the op's device. */
typedef struct tp_staged_inputs {
    tp_tensor_t **tensors;
    size_t count;
    tp_tensor_t *small[8];
} tp_staged_inputs_t;

/* Copies each input not on call->device there; errors name the op and input. */
tp_status_t *tp_stage_inputs(const tp_kernel_context_t *call, tp_tensor_t *const *inputs,
                             size_t count, tp_staged_inputs_t *staged);
/* Whether every input is on call->device already, so that staging would copy nothing: the
 * common case, which a caller tests inline rather than pay for staging that finds nothing. */
static inline bool tp_inputs_on_device(const tp_kernel_context_t *call,
                                       tp_tensor_t *const *inputs, size_t count) {
    bool local = true;
    for (size_t i = 0; i < count; i++) local &= inputs[i]->device == call->device;
    return local;
}

/* Releases the copies among `staged`, given the inputs they were staged from. */
void tp_release_staged_inputs(tp_staged_inputs_t *staged, tp_tensor_t *const *originals);

/* Runs the kernel on a call whose inputs are on its device, outputs allocated (with no
 * completion yet) and stream set. An input known to be poisoned fails the call with its
 * failure, and nothing is queued. Otherwise create, compute and destroy (or compute on the
 * instance the device keeps, kernel_instance.h) run with the device's queue held and the
 * launch's completion is recorded right after, so that a failure the device finds later
 * reaches exactly these outputs and what is computed from them; each output gets the
 * completion. The plug-in's errors are named by op and device. */
tp_status_t *tp_kernel_launch(tp_kernel_context_t *call, const tp_kernel_def_t *kernel);

/* Copies inputs on other devices to call->device, allocates the outputs with the call's
 * shapes and launches `kernel` on the device's stream. On success call->outputs are new
 * tensors the caller owns; on failure nothing is left. */
tp_status_t *tp_execute_call(tp_context_t *context, tp_kernel_context_t *call,
                             const tp_kernel_def_t *kernel, tp_tensor_t *const *inputs,
                             size_t num_inputs);

#endif
