/* SPDX-License-Identifier: Apache-2.0 */
#include "launch/launch.h"

#include <stdlib.h>

#include "base/profile_hooks.h"
#include "base/status.h"
#include "device/completion.h"
#include "launch/kernel_instance.h"
#include "plugin/plugin_status.h"
#include "tensor/tensor.h"

void tp_release_staged_inputs(tp_staged_inputs_t *staged, tp_tensor_t *const *originals) {
    for (size_t i = 0; i < staged->count; i++)
        if (staged->tensors[i] != originals[i]) tp_tensor_release(staged->tensors[i]);
    if (staged->tensors != staged->small) free(staged->tensors);
}

tp_status_t *tp_stage_inputs(const tp_kernel_context_t *call, tp_tensor_t *const *inputs,
                             size_t count, tp_staged_inputs_t *staged) {
    staged->count = 0;
    staged->tensors = count <= 8 ? staged->small : malloc(count * sizeof *staged->tensors);
    if (staged->tensors == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "%s: out of host memory",
                              call->op->def->name);
    for (size_t i = 0; i < count; i++) {
        tp_tensor_t *input = inputs[i];
        if (input->device != call->device) {
            tp_status_t *error = tp_tensor_copy_to_device(input, call->device, &input);
            if (error != NULL) {
                tp_release_staged_inputs(staged, inputs);
                return tp_status_annotate(error, "%s: input %zu", call->op->def->name, i);
            }
        }
        staged->tensors[staged->count++] = input;
    }
    return NULL;
}

static tp_status_t *allocate_outputs(tp_context_t *context, tp_kernel_context_t *call) {
    for (int32_t o = 0; o < call->num_outputs; o++) {
        tp_status_t *error = tp_tensor_allocate(context, call->device, call->output_dtypes[o],
                                                &call->output_shapes[o], &call->outputs[o]);
        if (error != NULL) {
            char shape[256];
            tp_shape_format(&call->output_shapes[o], shape, sizeof shape);
            return tp_status_annotate(error, "%s: output %d of shape %s", call->op->def->name,
                                      (int)o, shape);
        }
    }
    return NULL;
}

/* compute on the instance the device keeps, one at a time unless the kernel allows more. */
static void compute_on_kept(tp_kept_instance_t *kept, tp_kernel_context_t *call,
                            tp_plugin_status_t *status) {
    if (kept->serialized) pthread_mutex_lock(&kept->compute_mutex);
    kept->kernel->compute(kept->instance, call, status);
    if (kept->serialized) pthread_mutex_unlock(&kept->compute_mutex);
}

/* create, compute, destroy, or compute on a kept instance; the queue is held by the caller. */
static tp_status_t *run_kernel(tp_kernel_context_t *call, const tp_kernel_def_t *kernel) {
    tp_plugin_status_t status;
    tp_plugin_status_clear(&status);
    if (tp_kernel_keeps_instances(call, kernel)) {
        tp_kept_instance_t *kept = NULL;
        TP_RETURN_IF_ERROR(tp_kernel_instance_for(call, kernel, &kept));
        if (kept != NULL) {
            compute_on_kept(kept, call, &status);
            return tp_launch_failure(&status, call);
        }
        /* The device keeps as many as it may: this launch has an instance of its own. */
    }
    void *instance = NULL;
    if (kernel->create != NULL) {
        instance = kernel->create(kernel->kernel_state, call, &status);
        TP_RETURN_IF_ERROR(tp_launch_failure(&status, call));
    }
    kernel->compute(instance, call, &status);
    if (kernel->destroy != NULL) kernel->destroy(instance);
    return tp_launch_failure(&status, call);
}

/* The launch when every input is ready and the device synchronous (the CPU, nearly always):
 * no completion to check, none to record, nothing for the outputs to carry. */
static tp_status_t *launch_ready(tp_kernel_context_t *call, const tp_kernel_def_t *kernel) {
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    tp_status_t *error = run_kernel(call, kernel);
    if (profile != NULL && error == NULL) profile->launch(call, begin_ns);
    return error;
}

tp_status_t *tp_kernel_launch(tp_kernel_context_t *call, const tp_kernel_def_t *kernel) {
    size_t count = (size_t)call->num_inputs;
    size_t first_waiting = 0;
    while (first_waiting < count && call->inputs[first_waiting]->done == NULL) first_waiting++;
    if (first_waiting == count && tp_device_is_synchronous(call->device))
        return launch_ready(call, kernel);
    tp_completion_t *small[8], **pending = small;
    size_t num_pending = 0;
    if (count > 8 && (pending = malloc(count * sizeof *pending)) == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "%s: out of host memory",
                              call->op->def->name);
    for (size_t i = 0; i < count; i++) pending[i] = call->inputs[i]->done;
    tp_status_t *error = tp_completion_check_inputs(pending, count, &num_pending);
    if (error != NULL) {
        if (pending != small) free(pending);
        return tp_status_annotate(error, "%s: an input could not be computed",
                                  call->op->def->name);
    }
    tp_completion_t *done = NULL;
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    tp_device_lock_queue(call->device);
    error = run_kernel(call, kernel);
    if (error == NULL) {
        error = tp_completion_record(call->device, call->op->def->name, pending, num_pending,
                                     &done);
    } else {
        /* A kernel that failed after queueing part of its work: an event after that part takes
         * whatever it fails with, which belongs to this failed launch, not to the next one. */
        tp_status_free(tp_completion_record(call->device, call->op->def->name, NULL, 0, &done));
        tp_completion_release(done);
        done = NULL;
    }
    tp_device_unlock_queue(call->device);
    if (profile != NULL && error == NULL) profile->launch(call, begin_ns);
    if (pending != small) free(pending);
    if (error != NULL) return error;
    for (int32_t o = 0; o < call->num_outputs; o++)
        call->outputs[o]->done = tp_completion_retain(done);
    tp_completion_release(done);
    return NULL;
}

tp_status_t *tp_execute_call(tp_context_t *context, tp_kernel_context_t *call,
                             const tp_kernel_def_t *kernel, tp_tensor_t *const *inputs,
                             size_t num_inputs) {
    TP_RETURN_IF_ERROR(tp_device_stream(call->device, &call->stream));
    bool local = tp_inputs_on_device(call, inputs, num_inputs);
    tp_staged_inputs_t staged = {.tensors = (tp_tensor_t **)inputs, .count = num_inputs};
    if (!local) TP_RETURN_IF_ERROR(tp_stage_inputs(call, inputs, num_inputs, &staged));
    call->inputs = staged.tensors;
    tp_status_t *error = allocate_outputs(context, call);
    if (error == NULL) error = tp_kernel_launch(call, kernel);
    if (!local) tp_release_staged_inputs(&staged, inputs);
    call->inputs = inputs;
    if (error != NULL) {
        for (int32_t o = 0; o < call->num_outputs; o++) {
            tp_tensor_release(call->outputs[o]);
            call->outputs[o] = NULL;
        }
    }
    return error;
}
