/* SPDX-License-Identifier: Apache-2.0 */
/* All-reduce across replicas of any device types: every replica sums all replicas' tensors in
 * replica order on its own device (or on CPU:0 when its device has no AddN kernel, the result
 * copied over), so all of them hold the same values and none waits on another's arithmetic. */
#include <stdint.h>
#include <stdlib.h>

#include "autodiff/tape.h"
#include "base/dtype.h"
#include "base/shape.h"
#include "base/status.h"
#include "distribute/strategy.h"
#include "eager/execute.h"
#include "tensor/tensor.h"

enum { MAX_REPLICAS_ON_STACK = 16 };

/* Every replica checks every offer against its own, so all of them find the same mismatch. */
static tp_status_t *check_offers(const tp_replica_group_t *group, size_t self) {
    const tp_replica_offer_t *mine = &group->offers[self];
    for (size_t r = 0; r < group->size; r++) {
        const tp_replica_offer_t *other = &group->offers[r];
        if (other->values == NULL && other->count == SIZE_MAX)
            return tp_status_make(TP_INVALID_ARGUMENT, "replica %zu passed invalid arguments", r);
        if (other->count != mine->count)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "replica %zu brings %zu tensors, replica %zu brings %zu", r,
                                  other->count, self, mine->count);
        for (size_t t = 0; t < mine->count; t++) {
            const tp_tensor_t *a = mine->values[t], *b = other->values[t];
            if (a->dtype != b->dtype || !tp_shape_equal(&a->shape, &b->shape)) {
                char sa[128], sb[128];
                tp_shape_format(&a->shape, sa, sizeof sa);
                tp_shape_format(&b->shape, sb, sizeof sb);
                return tp_status_make(TP_INVALID_ARGUMENT,
                                      "tensor %zu is %s %s on replica %zu but %s %s on replica "
                                      "%zu",
                                      t, tp_dtype_name(a->dtype), sa, self,
                                      tp_dtype_name(b->dtype), sb, r);
            }
        }
    }
    return NULL;
}

/* The sum (or mean) over replicas of tensor `t`, on `device`. */
static tp_status_t *reduce_one(tp_context_t *context, tp_device_t *device,
                               const tp_replica_group_t *group, size_t t, tp_reduce_op_t op,
                               tp_tensor_t **out) {
    size_t n = group->size;
    tp_tensor_t *stack[MAX_REPLICAS_ON_STACK];
    tp_tensor_t **inputs = n <= MAX_REPLICAS_ON_STACK ? stack : malloc(n * sizeof *inputs);
    if (inputs == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    for (size_t r = 0; r < n; r++) inputs[r] = group->offers[r].values[t];
    tp_tensor_t *sum = NULL;
    tp_status_t *error = NULL;
    if (n == 1) {
        error = tp_tensor_to_device(inputs[0], device, &sum);
    } else {
        error = tp_execute_on(context, device, "AddN", inputs, n, NULL, 0, &sum, 1);
    }
    if (inputs != stack) free(inputs);
    if (error != NULL || op == TP_REDUCE_SUM || n == 1) {
        *out = sum;
        return error;
    }
    tp_tensor_t *divisor;
    error = tp_dtype_is_float(sum->dtype)
                ? tp_tensor_float_scalar(context, sum->dtype, (double)n, &divisor)
                : tp_status_make(TP_INVALID_ARGUMENT, "a mean of %s tensors is not defined; "
                                 "use TP_REDUCE_SUM", tp_dtype_name(sum->dtype));
    if (error == NULL) {
        tp_tensor_t *pair[2] = {sum, divisor};
        error = tp_execute_on(context, device, "Div", pair, 2, NULL, 0, out, 1);
        tp_tensor_release(divisor);
    }
    tp_tensor_release(sum);
    return error;
}

tp_status_t *tp_replica_all_reduce(tp_replica_context_t *replica, tp_reduce_op_t op,
                                   tp_tensor_t *const *values, size_t count, tp_tensor_t **out) {
    TP_REQUIRE_ARG(replica);
    if (count > 0 && (values == NULL || out == NULL))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_replica_all_reduce: values and out are needed for %zu tensors",
                              count);
    tp_mirrored_strategy_t *strategy = replica->strategy;
    tp_replica_group_t *group = &strategy->group;
    tp_status_t *error = NULL;
    if (op != TP_REDUCE_SUM && op != TP_REDUCE_MEAN)
        error = tp_status_make(TP_INVALID_ARGUMENT, "unknown reduction %d", (int)op);
    for (size_t t = 0; t < count && error == NULL; t++) {
        if (values[t] == NULL)
            error = tp_status_make(TP_INVALID_ARGUMENT, "value %zu is NULL", t);
        else if (values[t]->context != strategy->context)
            error = tp_status_make(TP_INVALID_ARGUMENT, "value %zu belongs to another context",
                                   t);
        else
            error = tp_tensor_require_values(values[t], "an all-reduce");
    }
    /* A replica with bad arguments still comes to the barriers, offering nothing, so that the
     * others fail on the mismatch instead of waiting for it. */
    group->offers[replica->index] = error == NULL ? (tp_replica_offer_t){values, count}
                                                  : (tp_replica_offer_t){NULL, SIZE_MAX};
    tp_status_t *meeting = tp_replica_group_barrier(group, replica->index);
    if (meeting != NULL) {
        tp_status_free(error);
        replica->failed_by_another = true;
        return tp_status_annotate(meeting, "tp_replica_all_reduce");
    }
    if (error == NULL) error = check_offers(group, replica->index);
    size_t done = 0, across_count = 0;
    tp_tape_suspend();
    if (strategy->workers != NULL) {
        /* Every replica takes this path, so all make the same barrier calls. */
        across_count = error == NULL ? count : 0;
        tp_status_t *across = tp_multi_worker_all_reduce(replica, op, across_count, out);
        if (error == NULL && across == NULL) done = count;
        if (error == NULL) error = across;
        else tp_status_free(across);
    }
    while (done < count && error == NULL) {
        error = reduce_one(strategy->context, tp_replica_device_handle(replica), group, done, op,
                           &out[done]);
        if (error == NULL) done++;
    }
    tp_tape_resume();
    /* Nobody may let go of its tensors until every replica has read them. */
    meeting = tp_replica_group_barrier(group, replica->index);
    if (strategy->workers != NULL)
        tp_multi_worker_all_reduce_end(replica, across_count);
    if (error == NULL && meeting != NULL) {
        replica->failed_by_another = true;
        error = meeting;
    } else {
        tp_status_free(meeting);
    }
    if (error != NULL)
        for (size_t t = 0; t < done; t++) {
            tp_tensor_release(out[t]);
            out[t] = NULL;
        }
    return tp_status_annotate(error, "tp_replica_all_reduce");
}

typedef struct {
    tp_reduce_op_t op;
    tp_tensor_t *const *per_replica;
    tp_tensor_t **out;
} outside_run_t;

static tp_status_t *reduce_in_replica(tp_replica_context_t *replica, void *arg) {
    outside_run_t *run = arg;
    size_t r = tp_replica_index(replica);
    return tp_replica_all_reduce(replica, run->op, &run->per_replica[r], 1, &run->out[r]);
}

tp_status_t *tp_mirrored_strategy_all_reduce(tp_mirrored_strategy_t *strategy,
                                             tp_reduce_op_t op, tp_tensor_t *const *per_replica,
                                             tp_tensor_t **out) {
    TP_REQUIRE_ARG(strategy);
    TP_REQUIRE_ARG(per_replica);
    TP_REQUIRE_ARG(out);
    size_t n = strategy->num_replicas;
    tp_tensor_t **results = calloc(n, sizeof *results);
    if (results == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED,
                              "tp_mirrored_strategy_all_reduce: out of host memory");
    outside_run_t run = {op, per_replica, results};
    tp_status_t *error = tp_mirrored_strategy_run(strategy, reduce_in_replica, &run);
    for (size_t r = 0; r < n; r++) {
        if (error == NULL)
            out[r] = results[r];
        else
            tp_tensor_release(results[r]);
    }
    free(results);
    return error;
}
