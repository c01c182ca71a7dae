/* Running one resolved, placed call: what eager execution and the graph executor share. */
#ifndef TP_EAGER_EXECUTE_H
#define TP_EAGER_EXECUTE_H

#include "context/context.h"
#include "kernel/kernel_context.h"

/* Inputs as the kernel sees them: the caller's tensors, or copies on the op's device. */
typedef struct tp_staged_inputs {
    tp_tensor_t **tensors;
    size_t count;
    tp_tensor_t *small[8];
} tp_staged_inputs_t;

/* Copies each input not on call->device there; errors name the op and input. */
tp_status_t *tp_stage_inputs(const tp_kernel_context_t *call, tp_tensor_t *const *inputs,
                             size_t count, tp_staged_inputs_t *staged);
/* Releases the copies among `staged`, given the inputs they were staged from. */
void tp_release_staged_inputs(tp_staged_inputs_t *staged, tp_tensor_t *const *originals);

/* Copies inputs on other devices to call->device, allocates the outputs with the call's
 * shapes and launches `kernel` on the device's stream. On success call->outputs are new
 * tensors the caller owns; on failure nothing is left. */
tp_status_t *tp_execute_call(tp_context_t *context, tp_kernel_context_t *call,
                             const tp_kernel_def_t *kernel, tp_tensor_t *const *inputs,
                             size_t num_inputs);

/* Runs the kernel on a call whose inputs are on its device, outputs allocated and stream set:
 * create, compute, destroy, with the plug-in's errors named by op and device. */
tp_status_t *tp_kernel_launch(tp_kernel_context_t *call, const tp_kernel_def_t *kernel);

/* tp_execute with the outputs on `device`: run there if it has a kernel for the op, else on
 * CPU:0 and copied to it (execute_on.c). */
tp_status_t *tp_execute_on(tp_context_t *context, tp_device_t *device, const char *op,
                           tp_tensor_t *const *inputs, size_t num_inputs, const tp_attr_t *attrs,
                           size_t num_attrs, tp_tensor_t **outputs, size_t num_outputs);

#endif
