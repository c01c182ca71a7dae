/* SPDX-License-Identifier: Apache-2.0 */
/* The multi-worker mirrored strategy: a mirrored strategy over this worker's devices joined to
 * the other workers of an MPI job. Its all-reduce reduces locally first (on the host, replica
 * by replica in order, chunk by chunk), then across workers (worker_collectives.c), then copies
 * the result to every local device, so that each worker's replicas and every worker hold the
 * same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/variable.h"
#include "base/dtype.h"
#include "base/status.h"
#include "context/context.h"
#include "distribute/strategy.h"
#include "tensor/tensor.h"

tp_status_t *tp_multi_worker_mirrored_strategy_create(tp_context_t *context,
                                                      const char *const *devices, size_t count,
                                                      const tp_multi_worker_options_t *options,
                                                      tp_mirrored_strategy_t **out) {
    TP_REQUIRE_ARG(out);
    tp_multi_worker_options_t chosen = TP_MULTI_WORKER_OPTIONS_INIT;
    if (options != NULL) {
        if (options->struct_size < sizeof(size_t) + sizeof(double))
            return tp_status_make(TP_INVALID_ARGUMENT, "tp_multi_worker_mirrored_strategy_create:"
                                  " options.struct_size %zu is too small",
                                  options->struct_size);
        chosen.collective_timeout_seconds = options->collective_timeout_seconds;
        if (options->struct_size >= sizeof chosen) chosen.chunk_bytes = options->chunk_bytes;
    }
    if (!(chosen.collective_timeout_seconds > 0) || !isfinite(chosen.collective_timeout_seconds))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_multi_worker_mirrored_strategy_create: the collective timeout "
                              "must be a finite number of seconds above 0, not %g",
                              chosen.collective_timeout_seconds);
    if (chosen.chunk_bytes != 0 && chosen.chunk_bytes < 64)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_multi_worker_mirrored_strategy_create: chunks of %zu bytes are "
                              "too small (at least 64, or 0 for the default)",
                              chosen.chunk_bytes);
    /* The devices are checked before MPI is loaded, so that a mistake costs no job. */
    tp_mirrored_strategy_t *strategy;
    TP_RETURN_IF_ERROR(tp_mirrored_strategy_create(context, devices, count, &strategy));
    tp_worker_comm_t *workers = NULL;
    tp_status_t *error = tp_worker_comm_get(&workers);
    strategy->leader_results = calloc(1, sizeof *strategy->leader_results);
    if (error == NULL && strategy->leader_results == NULL)
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    /* Replicas are numbered worker by worker, so every worker must bring as many. */
    if (error == NULL)
        error = tp_worker_agree(workers, "the number of local devices of each worker",
                                (uint64_t)count, chosen.collective_timeout_seconds);
    if (error != NULL) {
        tp_mirrored_strategy_destroy(strategy);
        return tp_status_annotate(error, "tp_multi_worker_mirrored_strategy_create");
    }
    strategy->workers = workers;
    strategy->worker_index = (size_t)tp_worker_comm_rank(workers);
    strategy->num_workers = (size_t)tp_worker_comm_size(workers);
    strategy->options = chosen;
    *out = strategy;
    return NULL;
}

void tp_multi_worker_strategy_free(tp_mirrored_strategy_t *strategy) {
    free(strategy->leader_results);
    tp_status_free(strategy->leader_error);
}

size_t tp_mirrored_strategy_num_workers(const tp_mirrored_strategy_t *strategy) {
    if (strategy == NULL) return 0;
    return strategy->workers != NULL ? strategy->num_workers : 1;
}

size_t tp_mirrored_strategy_worker_index(const tp_mirrored_strategy_t *strategy) {
    return strategy != NULL && strategy->workers != NULL ? strategy->worker_index : 0;
}

size_t tp_mirrored_strategy_num_global_replicas(const tp_mirrored_strategy_t *strategy) {
    return tp_mirrored_strategy_num_workers(strategy) * tp_mirrored_strategy_num_replicas(strategy);
}

void tp_shard_range(int64_t count, size_t num_shards, size_t shard, int64_t *out_begin,
                    int64_t *out_end) {
    int64_t begin = 0, end = 0;
    if (count > 0 && num_shards > 0 && shard < num_shards) {
        /* In 128 bits: count * shard must not overflow for any int64 count. */
        begin = (int64_t)((__int128)count * (__int128)shard / (__int128)num_shards);
        end = (int64_t)((__int128)count * (__int128)(shard + 1) / (__int128)num_shards);
    }
    if (out_begin != NULL) *out_begin = begin;
    if (out_end != NULL) *out_end = end;
}

void tp_replica_batch_shard(const tp_replica_context_t *replica, int64_t batch,
                            int64_t *out_begin, int64_t *out_end) {
    if (replica == NULL) {
        tp_shard_range(0, 0, 0, out_begin, out_end);
        return;
    }
    const tp_mirrored_strategy_t *strategy = replica->strategy;
    size_t global = tp_mirrored_strategy_worker_index(strategy) * strategy->num_replicas +
                    replica->index;
    tp_shard_range(batch, tp_mirrored_strategy_num_global_replicas(strategy), global, out_begin,
                   out_end);
}

/* ---- The all-reduce ---------------------------------------------------------------------- */

/* A tensor of at least this many bytes is summed straight from the replicas' memory into its
 * result's, in a collective of its own; smaller ones travel together through one buffer, where
 * copying them in and out costs less than a collective each. */
#define DIRECT_BYTES ((size_t)256 << 10)

/* What one collective sums: `n` tensors of one dtype laid end to end, tensor i at elements
 * [starts[i], starts[i + 1]), and each local replica's values of them where the host reads
 * them, values[r * n + i]. */
typedef struct local_sum {
    size_t replicas, n, element_size;
    tp_dtype_t dtype;
    const size_t *starts;
    const void **values;
} local_sum_t;

/* Elements [offset, offset + count) of tensor i summed over the replicas, in replica order,
 * into `out`. */
static void sum_replicas(const local_sum_t *sum, size_t i, size_t offset, size_t count,
                         void *out) {
    const size_t size = sum->element_size;
    if (count == 0) return;
    memcpy(out, (const char *)sum->values[i] + offset * size, count * size);
    for (size_t r = 1; r < sum->replicas; r++) {
        const void *in = (const char *)sum->values[r * sum->n + i] + offset * size;
        if (sum->dtype == TP_FLOAT64) {
            double *o = out;
            const double *v = in;
            for (size_t k = 0; k < count; k++) o[k] += v[k];
        } else {
            float *o = out;
            const float *v = in;
            for (size_t k = 0; k < count; k++) o[k] += v[k];
        }
    }
}

/* The collective's fill: elements [begin, end) of the laid-out tensors, summed locally. */
static void fill_chunk(size_t begin, size_t end, void *into, void *arg) {
    const local_sum_t *sum = arg;
    size_t i = 0;
    while (sum->starts[i + 1] <= begin) i++;
    for (size_t at = begin; at < end; i++) {
        size_t stop = sum->starts[i + 1] < end ? sum->starts[i + 1] : end;
        sum_replicas(sum, i, at - sum->starts[i], stop - at,
                     (char *)into + (at - begin) * sum->element_size);
        at = stop;
    }
}

static void divide(void *values, size_t count, tp_dtype_t dtype, double divisor) {
    if (dtype == TP_FLOAT64) {
        double *v = values;
        for (size_t i = 0; i < count; i++) v[i] /= divisor;
    } else {
        float *v = values;
        for (size_t i = 0; i < count; i++) v[i] /= (float)divisor;
    }
}

/* Replica r's value of offered tensor t where the host reads it: the tensor itself (*out_held
 * a new reference) when its device's memory is host memory, else a copy on the host. */
static tp_status_t *host_values(tp_mirrored_strategy_t *strategy, size_t r, size_t t,
                                tp_tensor_t **out_held, const void **out_values) {
    tp_tensor_t *value = strategy->group.offers[r].values[t];
    if (tp_device_host_addressed(value->device))
        *out_held = tp_tensor_retain(value);
    else
        TP_RETURN_IF_ERROR(tp_tensor_copy_to_device(
            value, strategy->context->registry.host_device, out_held));
    return tp_tensor_host_data(*out_held, out_values);
}

/* A host tensor of `shape` whose values the host writes: `*out_data` is where. */
static tp_status_t *host_result(tp_mirrored_strategy_t *strategy, tp_dtype_t dtype,
                                const tp_shape_t *shape, tp_tensor_t **out, void **out_data) {
    TP_RETURN_IF_ERROR(tp_tensor_allocate(strategy->context,
                                          strategy->context->registry.host_device, dtype, shape,
                                          out));
    *out_data = (*out)->mem == NULL ? NULL : (char *)(*out)->mem + (*out)->offset;
    return NULL;
}

/* One collective: the offered tensors `indices[0..n)` (one dtype) summed over all replicas of
 * all workers, as host tensors in results[indices[i]]. A lone tensor is summed into its
 * result's memory, and, on a worker of one replica, read where it lies: no copy at all. */
static tp_status_t *reduce_group(tp_mirrored_strategy_t *strategy, tp_dtype_t dtype,
                                 tp_reduce_op_t op, const size_t *indices, size_t n,
                                 tp_tensor_t **results) {
    const size_t replicas = strategy->num_replicas, size = tp_dtype_size(dtype);
    tp_tensor_t *const *first = strategy->group.offers[0].values;
    size_t *starts = malloc((n + 1) * sizeof *starts);
    tp_tensor_t **held = calloc(replicas * n, sizeof *held);
    const void **values = calloc(replicas * n, sizeof *values);
    tp_status_t *error = NULL;
    if (starts == NULL || held == NULL || values == NULL)
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    if (error == NULL) starts[0] = 0;
    for (size_t i = 0; i < n && error == NULL; i++)
        starts[i + 1] = starts[i] + (size_t)first[indices[i]]->num_elements;
    for (size_t r = 0; r < replicas && error == NULL; r++)
        for (size_t i = 0; i < n && error == NULL; i++)
            error = host_values(strategy, r, indices[i], &held[r * n + i], &values[r * n + i]);
    const size_t total = error == NULL ? starts[n] : 0;
    tp_tensor_t *out = NULL;
    void *buffer = NULL;
    if (error == NULL)
        error = host_result(strategy, dtype,
                            n == 1 ? &first[indices[0]]->shape : &TP_SHAPE((int64_t)total),
                            &out, &buffer);
    local_sum_t sum = {replicas, n, size, dtype, starts, values};
    bool abandoned = false;
    if (error == NULL && total > 0) {
        /* Nothing to add locally: the ring reads the one replica's values where they lie. */
        const bool direct = n == 1 && replicas == 1;
        tp_worker_all_reduce_args_t args = {
            .count = total, .dtype = dtype == TP_FLOAT64 ? TP_COMM_FLOAT64 : TP_COMM_FLOAT32,
            .chunk_elements = (strategy->options.chunk_bytes != 0 ? strategy->options.chunk_bytes
                                                                  : (size_t)4 << 20) / size,
            .timeout_s = strategy->options.collective_timeout_seconds,
            .fill = direct ? NULL : fill_chunk, .fill_arg = &sum,
            .source = direct ? values[0] : NULL, .buffer = buffer};
        error = tp_worker_all_reduce(strategy->workers, &args, &abandoned);
    }
    if (error == NULL && op == TP_REDUCE_MEAN)
        divide(buffer, total, dtype, (double)tp_mirrored_strategy_num_global_replicas(strategy));
    if (error == NULL && n == 1) {
        results[indices[0]] = out;
        out = NULL;
    }
    for (size_t i = 0; i < n && error == NULL && out != NULL; i++) {
        void *data;
        error = host_result(strategy, dtype, &first[indices[i]]->shape, &results[indices[i]],
                            &data);
        if (error == NULL && starts[i + 1] > starts[i])
            memcpy(data, (char *)buffer + starts[i] * size, (starts[i + 1] - starts[i]) * size);
    }
    /* Given up in flight, MPI may still read the replicas' memory and write the result's. */
    for (size_t h = 0; held != NULL && h < replicas * n; h++)
        if (abandoned)
            tp_worker_comm_park(strategy->workers, held[h]);
        else
            tp_tensor_release(held[h]);
    if (abandoned)
        tp_worker_comm_park(strategy->workers, out);
    else
        tp_tensor_release(out);
    free(starts);
    free(held);
    free(values);
    return error;
}

/* The leader's work for the tensors of `dtype` among the `count` offered: the small ones in one
 * collective, then each large one in its own, in tensor order on every worker. */
static tp_status_t *reduce_dtype(tp_mirrored_strategy_t *strategy, tp_dtype_t dtype,
                                 tp_reduce_op_t op, size_t count, tp_tensor_t **results) {
    tp_tensor_t *const *offered = strategy->group.offers[0].values;
    size_t *small = malloc(count * sizeof *small), num_small = 0;
    if (small == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    for (size_t t = 0; t < count; t++)
        if (offered[t]->dtype == dtype && offered[t]->byte_size < DIRECT_BYTES)
            small[num_small++] = t;
    tp_status_t *error =
        num_small > 0 ? reduce_group(strategy, dtype, op, small, num_small, results) : NULL;
    for (size_t t = 0; t < count && error == NULL; t++)
        if (offered[t]->dtype == dtype && offered[t]->byte_size >= DIRECT_BYTES)
            error = reduce_group(strategy, dtype, op, &t, 1, results);
    free(small);
    return error;
}

/* Replica 0's part: the sums of every tensor, into strategy->leader_results. */
static tp_status_t *lead(tp_mirrored_strategy_t *strategy, tp_reduce_op_t op, size_t count) {
    const tp_replica_offer_t *offer = &strategy->group.offers[0];
    /* Replaced (or NULL) even on failure: tp_multi_worker_all_reduce_end walks `count`. */
    tp_tensor_t **results = calloc(count, sizeof *results);
    free(strategy->leader_results);
    strategy->leader_results = results;
    if (results == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    for (size_t t = 0; t < count; t++)
        if (offer->values[t]->dtype != TP_FLOAT32 && offer->values[t]->dtype != TP_FLOAT64)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "tensor %zu is %s; an all-reduce across workers takes float32 "
                                  "and float64",
                                  t, tp_dtype_name(offer->values[t]->dtype));
    tp_status_t *error = reduce_dtype(strategy, TP_FLOAT32, op, count, results);
    if (error == NULL) error = reduce_dtype(strategy, TP_FLOAT64, op, count, results);
    return error;
}

tp_status_t *tp_multi_worker_all_reduce(tp_replica_context_t *replica, tp_reduce_op_t op,
                                        size_t count, tp_tensor_t **out) {
    tp_mirrored_strategy_t *strategy = replica->strategy;
    tp_replica_group_t *group = &strategy->group;
    const bool leader = replica->index == 0;
    if (leader && count > 0) strategy->leader_error = lead(strategy, op, count);
    tp_status_t *error = tp_replica_group_barrier(group, replica->index);
    if (error != NULL) return error;
    if (count > 0 && strategy->leader_error != NULL) {
        replica->failed_by_another = !leader;
        return tp_status_make(tp_status_code(strategy->leader_error), "%s",
                              tp_status_message(strategy->leader_error));
    }
    size_t done = 0;
    for (; done < count && error == NULL; done++)
        error = tp_tensor_to_device(strategy->leader_results[done],
                                    tp_replica_device_handle(replica), &out[done]);
    for (size_t t = 0; error != NULL && t + 1 < done; t++) {
        tp_tensor_release(out[t]);
        out[t] = NULL;
    }
    return error;
}

void tp_multi_worker_all_reduce_end(tp_replica_context_t *replica, size_t count) {
    tp_mirrored_strategy_t *strategy = replica->strategy;
    if (replica->index != 0 || count == 0 || strategy->leader_results == NULL) return;
    for (size_t t = 0; t < count; t++) {
        tp_tensor_release(strategy->leader_results[t]);
        strategy->leader_results[t] = NULL;
    }
    tp_status_free(strategy->leader_error);
    strategy->leader_error = NULL;
}

/* ---- Broadcast of variables from worker 0 ------------------------------------------------ */

/* FNV-1a over the variables' dtypes and shapes: what every worker must agree on before
 * worker 0's bytes can land in its variables. */
static uint64_t layout_hash(tp_variable_t *const *variables, size_t count) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < count; i++) {
        tp_shape_t shape = tp_variable_shape(variables[i]);
        int64_t words[2 + TP_MAX_RANK] = {tp_variable_dtype(variables[i]), shape.rank};
        for (int d = 0; d < shape.rank && d < TP_MAX_RANK; d++) words[2 + d] = shape.dims[d];
        const unsigned char *bytes = (const unsigned char *)words;
        for (size_t b = 0; b < sizeof words; b++) hash = (hash ^ bytes[b]) * 0x100000001b3ull;
    }
    return hash;
}

tp_status_t *tp_mirrored_strategy_broadcast_variables(tp_mirrored_strategy_t *strategy,
                                                      tp_variable_t *const *variables,
                                                      size_t count) {
    TP_REQUIRE_ARG(strategy);
    if (count > 0 && variables == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "tp_mirrored_strategy_broadcast_variables: "
                              "variables is NULL for %zu of them", count);
    for (size_t i = 0; i < count; i++)
        if (variables[i] == NULL)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "tp_mirrored_strategy_broadcast_variables: variable %zu is "
                                  "NULL", i);
    if (strategy->workers == NULL || count == 0) return NULL;
    const double timeout = strategy->options.collective_timeout_seconds;
    tp_tensor_t **values = calloc(count, sizeof *values);
    size_t total = 0;
    tp_status_t *error = values == NULL ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host "
                                                         "memory")
                                        : NULL;
    for (size_t i = 0; i < count && error == NULL; i++) {
        error = tp_variable_read_untaped(variables[i], &values[i]);
        if (error == NULL) total += values[i]->byte_size;
    }
    if (error == NULL)
        error = tp_worker_agree(strategy->workers, "the variables' dtypes and shapes",
                                layout_hash(variables, count), timeout);
    char *bytes = error == NULL ? malloc(total > 0 ? total : 1) : NULL;
    if (error == NULL && bytes == NULL)
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory for %zu bytes", total);
    size_t at = 0;
    for (size_t i = 0; i < count && error == NULL; i++) {
        error = tp_tensor_read(values[i], bytes + at, values[i]->byte_size);
        at += values[i]->byte_size;
    }
    bool abandoned = false;
    if (error == NULL)
        error = tp_worker_broadcast(strategy->workers, "the broadcast of variables from worker 0",
                                    bytes, total, 0, timeout, &abandoned);
    at = 0;
    for (size_t i = 0; i < count && error == NULL; i++) {
        tp_tensor_t *received;
        error = tp_tensor_create(strategy->context, values[i]->dtype, values[i]->shape,
                                 bytes + at, values[i]->byte_size, &received);
        at += values[i]->byte_size;
        if (error != NULL) break;
        tp_tensor_release(values[i]);
        values[i] = received;
    }
    if (error == NULL) error = tp_variable_assign_all(variables, values, count);
    for (size_t i = 0; values != NULL && i < count; i++) tp_tensor_release(values[i]);
    free(values);
    if (abandoned)
        tp_worker_comm_park(strategy->workers, bytes);
    else
        free(bytes);
    return tp_status_annotate(error, "tp_mirrored_strategy_broadcast_variables");
}
