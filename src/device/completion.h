/* SPDX-License-Identifier: Apache-2.0 */
/* The readiness and outcome of work queued on a device, carried by the tensors it writes.
 *
 * A launch or copy on an asynchronous device gets an event recorded right after it (the
 * plug-in reports a failure of queued work through the first event after it, plugin.h), and
 * a completion holds that event with the completions of the values the work read that were
 * still pending. A completion fails with the first failure among its inputs (the original
 * status, which names the op and device where it happened) or else its own event's: so a
 * failure reaches exactly the tensors computed from the failed work, on any device and in any
 * number of steps, and never a tensor that merely shared the stream.
 *
 * Work on a synchronous device, or whose inputs were all done, needs no completion: a tensor
 * whose completion is NULL is ready. Once resolved, a completion lets go of its inputs and
 * its event, so chains grow only as long as the work the host has queued ahead of the device;
 * waits and releases walk them without recursion. */
#ifndef TP_DEVICE_COMPLETION_H
#define TP_DEVICE_COMPLETION_H

#include <stdbool.h>
#include <stddef.h>

#include "device/device.h"

typedef struct tp_completion tp_completion_t;

/* Call right after queueing work on `device`, with its queue locked (tp_device_lock_queue),
 * so that no other work comes between the two: the completion of that work and of `inputs`
 * (the pending completions of the values it read, as tp_completion_check_inputs keeps them),
 * named `what` ("Relu", "copy"; a string that lives as long as the process) in failures.
 * *out is NULL when the work and its inputs are done already (a synchronous device, nothing
 * pending). An asynchronous device without events is synchronized here instead, and a failure
 * of the work is returned as the call's own. */
tp_status_t *tp_completion_record(tp_device_t *device, const char *what,
                                  tp_completion_t *const *inputs, size_t num_inputs,
                                  tp_completion_t **out);

/* Before a launch that reads values with completions `inputs` (NULL entries are ready):
 * returns a copy of the failure of one that is known to have failed, so that the work is not
 * queued at all; otherwise moves those still pending to the front of `inputs` and sets
 * *out_pending to their count. Nothing waits. */
tp_status_t *tp_completion_check_inputs(tp_completion_t **inputs, size_t num_inputs,
                                        size_t *out_pending);

/* Blocks until the work and everything it read are done. NULL when all succeeded, otherwise
 * a copy of the first failure. NULL `completion` is done. */
tp_status_t *tp_completion_wait(tp_completion_t *completion);

/* Without blocking: true when the outcome is known, *out_failure then holding a copy of the
 * failure or NULL. */
bool tp_completion_poll(tp_completion_t *completion, tp_status_t **out_failure);

tp_completion_t *tp_completion_retain(tp_completion_t *completion);
/* May be called while the work is pending: the event goes back to its device once the stream
 * is past it. */
void tp_completion_release(tp_completion_t *completion);

#endif
