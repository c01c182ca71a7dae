/* SPDX-License-Identifier: Apache-2.0 */
#include "graph/executor.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/profile_hooks.h"
#include "base/status.h"
#include "device/completion.h"
#include "graph/graph_placement.h"
#include "graph/memory_plan.h"
#include "launch/launch.h"
#include "tensor/tensor.h"

/* Tracing records ops of at most this many inputs. */
#define TP_MAX_STEP_INPUTS 64

/* Where a step's input comes from. */
typedef enum { FROM_ARGUMENT, FROM_CAPTURE, FROM_VALUE } source_kind_t;
typedef struct {
    source_kind_t kind;
    int32_t index; /* the argument, the capture's node, or the value */
} source_t;

/* An output of a step. */
typedef struct {
    tp_tensor_t layout; /* device, dtype, shape and sizes; no memory */
    bool result;        /* a function result: a tensor of its own, not in a block */
    int32_t block;      /* otherwise its device's block, at `offset` */
    uint64_t offset;
} value_t;

typedef struct {
    const tp_graph_node_t *node;
    const tp_kernel_def_t *kernel; /* NULL for a copy */
    tp_kernel_context_t call;      /* op, attributes, output types, device and stream */
    source_t *inputs;
    int32_t first_value;           /* its outputs are values first_value, first_value + 1, ... */
    int seed_attribute;            /* a stateful op's "seed", or -1 */
    atomic_uint_fast64_t runs;
} step_t;

typedef struct {
    tp_device_t *device;
    uint64_t size;
} block_t;

/* What one run writes: a tensor for each value that lives in a block, and the blocks. One is
 * kept for the next run, since making one costs as much as a short run. */
typedef struct {
    tp_tensor_t *planned;    /* by value; used for values in blocks */
    tp_tensor_t **tensors;   /* by value: the tensor holding it in this run */
    tp_bfc_block_t *blocks;
} run_state_t;

struct tp_executor {
    tp_context_t *context;
    const tp_graph_t *graph;
    step_t *steps;
    int32_t num_steps;
    value_t *values;
    int32_t num_values;
    block_t *blocks;
    int32_t num_blocks;
    source_t *outputs;
    _Atomic(run_state_t *) spare;
};

/* ---- Making the plan ------------------------------------------------------------------------ */

static void *zalloc(size_t count, size_t size) { return calloc(count + 1, size); }

static int32_t block_of(tp_executor_t *executor, tp_device_t *device) {
    for (int32_t b = 0; b < executor->num_blocks; b++)
        if (executor->blocks[b].device == device) return b;
    executor->blocks[executor->num_blocks] = (block_t){device, 0};
    return executor->num_blocks++;
}

static source_t source_of(const tp_graph_t *graph, const int32_t *first_value,
                          tp_graph_edge_t edge) {
    const tp_graph_node_t *node = &graph->nodes[edge.node];
    if (node->kind == TP_NODE_ARGUMENT) return (source_t){FROM_ARGUMENT, node->argument};
    if (node->kind == TP_NODE_CAPTURE) return (source_t){FROM_CAPTURE, edge.node};
    return (source_t){FROM_VALUE, first_value[edge.node] + edge.output};
}

static tp_status_t *make_step(tp_executor_t *executor, const tp_graph_node_t *node,
                              const int32_t *first_value, step_t *step) {
    step->node = node;
    step->kernel = node->kernel;
    step->first_value = first_value[node - executor->graph->nodes];
    step->seed_attribute = -1;
    atomic_init(&step->runs, 0);
    step->inputs = zalloc((size_t)node->num_inputs, sizeof *step->inputs);
    if (step->inputs == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    for (int32_t i = 0; i < node->num_inputs; i++)
        step->inputs[i] = source_of(executor->graph, first_value, node->inputs[i]);
    if (node->kind == TP_NODE_OP) {
        tp_graph_node_call(node, &step->call);
        int seed = tp_op_attr_index(node->op.def, "seed");
        if (node->op.def->is_stateful && seed >= 0 && node->attrs[seed].type == TP_ATTR_INT)
            step->seed_attribute = seed;
    }
    step->call.device = node->device;
    return tp_device_stream(node->device, &step->call.stream);
}

static tp_status_t *make_values(tp_executor_t *executor, const step_t *step) {
    const tp_graph_node_t *node = step->node;
    for (int32_t o = 0; o < node->num_outputs; o++) {
        value_t *value = &executor->values[step->first_value + o];
        tp_tensor_t *layout = &value->layout;
        layout->device = node->device;
        layout->dtype = node->output_dtypes[o];
        layout->shape = node->output_shapes[o];
        TP_RETURN_IF_ERROR(tp_tensor_check_layout(layout->dtype, &layout->shape,
                                                  &layout->num_elements, &layout->byte_size));
        value->block = block_of(executor, node->device);
    }
    return NULL;
}

/* Lays out the values of each block. A copy's value is kept apart from every other for the
 * whole run: a copy between logical devices of one physical device is queued on the source's
 * stream, which would not wait for the destination's kernels still reading shared memory. So
 * is a value in the host's memory that a step of another device reads: that device copies it
 * in its own stream order, after the host has gone on to the steps that follow. */
static tp_status_t *plan_memory(tp_executor_t *executor) {
    int32_t count = executor->num_values;
    int32_t *last_read = zalloc((size_t)count, sizeof *last_read);
    int32_t *made_by = zalloc((size_t)count, sizeof *made_by);
    int32_t *order = zalloc((size_t)count, sizeof *order);
    tp_planned_value_t *planned = zalloc((size_t)count, sizeof *planned);
    tp_status_t *error = last_read == NULL || made_by == NULL || order == NULL || planned == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : NULL;
    for (int32_t s = 0; s < executor->num_steps && error == NULL; s++) {
        const step_t *step = &executor->steps[s];
        for (int32_t o = 0; o < step->node->num_outputs; o++)
            last_read[step->first_value + o] = made_by[step->first_value + o] = s;
        for (int32_t i = 0; i < step->node->num_inputs; i++) {
            if (step->inputs[i].kind != FROM_VALUE) continue;
            int32_t v = step->inputs[i].index;
            const tp_device_t *device = executor->values[v].layout.device;
            if (device != step->node->device && tp_device_host_addressed(device))
                last_read[v] = executor->num_steps; /* read in another stream's order */
            else if (last_read[v] < s)
                last_read[v] = s;
        }
    }
    for (int32_t b = 0; b < executor->num_blocks && error == NULL; b++) {
        int32_t n = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int32_t v = 0; v < count; v++) {
                const value_t *value = &executor->values[v];
                bool copy = executor->steps[made_by[v]].kernel == NULL;
                if (value->block != b || value->result || copy != (pass == 0)) continue;
                order[n] = v;
                planned[n++] = copy ? (tp_planned_value_t){0, executor->num_steps,
                                                           value->layout.byte_size, 0}
                                    : (tp_planned_value_t){made_by[v], last_read[v],
                                                           value->layout.byte_size, 0};
            }
        error = tp_memory_plan(planned, n, &executor->blocks[b].size);
        for (int32_t i = 0; i < n && error == NULL; i++)
            executor->values[order[i]].offset = planned[i].offset;
    }
    free(last_read);
    free(made_by);
    free(order);
    free(planned);
    return error;
}

tp_status_t *tp_executor_create(tp_context_t *context, const tp_graph_t *graph,
                                tp_executor_t **out) {
    tp_executor_t *executor = calloc(1, sizeof *executor);
    int32_t *first_value = zalloc((size_t)graph->num_nodes, sizeof *first_value);
    if (executor == NULL || first_value == NULL) {
        free(executor);
        free(first_value);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    }
    executor->context = context;
    executor->graph = graph;
    atomic_init(&executor->spare, NULL);
    int32_t num_steps = 0, num_values = 0;
    for (int32_t n = 0; n < graph->num_nodes; n++) {
        const tp_graph_node_t *node = &graph->nodes[n];
        if (node->kind != TP_NODE_OP && node->kind != TP_NODE_COPY) continue;
        first_value[n] = num_values;
        num_values += node->num_outputs;
        num_steps++;
    }
    executor->steps = zalloc((size_t)num_steps, sizeof *executor->steps);
    executor->values = zalloc((size_t)num_values, sizeof *executor->values);
    executor->blocks = zalloc((size_t)num_steps, sizeof *executor->blocks);
    executor->outputs = zalloc((size_t)graph->num_outputs, sizeof *executor->outputs);
    executor->num_values = num_values;
    tp_status_t *error = executor->steps == NULL || executor->values == NULL ||
                                 executor->blocks == NULL || executor->outputs == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : NULL;
    for (int32_t n = 0; n < graph->num_nodes && error == NULL; n++) {
        const tp_graph_node_t *node = &graph->nodes[n];
        if (node->kind != TP_NODE_OP && node->kind != TP_NODE_COPY) continue;
        step_t *step = &executor->steps[executor->num_steps++];
        error = make_step(executor, node, first_value, step);
        if (error == NULL) error = make_values(executor, step);
    }
    for (int32_t i = 0; i < graph->num_outputs && error == NULL; i++) {
        executor->outputs[i] = source_of(graph, first_value, graph->outputs[i]);
        if (executor->outputs[i].kind == FROM_VALUE)
            executor->values[executor->outputs[i].index].result = true;
    }
    if (error == NULL) error = plan_memory(executor);
    free(first_value);
    if (error != NULL) {
        tp_executor_destroy(executor);
        return error;
    }
    *out = executor;
    return NULL;
}

static void free_state(run_state_t *state) {
    if (state == NULL) return;
    free(state->planned);
    free(state->tensors);
    free(state->blocks);
    free(state);
}

void tp_executor_destroy(tp_executor_t *executor) {
    if (executor == NULL) return;
    for (int32_t s = 0; executor->steps != NULL && s < executor->num_steps; s++)
        free(executor->steps[s].inputs);
    free(executor->steps);
    free(executor->values);
    free(executor->blocks);
    free(executor->outputs);
    free_state(atomic_load(&executor->spare));
    free(executor);
}

/* ---- Running -------------------------------------------------------------------------------- */

static run_state_t *take_state(tp_executor_t *executor) {
    run_state_t *state = atomic_exchange(&executor->spare, NULL);
    if (state != NULL) return state;
    state = calloc(1, sizeof *state);
    if (state == NULL) return NULL;
    int32_t count = executor->num_values;
    state->planned = zalloc((size_t)count, sizeof *state->planned);
    state->tensors = zalloc((size_t)count, sizeof *state->tensors);
    state->blocks = zalloc((size_t)executor->num_blocks, sizeof *state->blocks);
    if (state->planned == NULL || state->tensors == NULL || state->blocks == NULL) {
        free_state(state);
        return NULL;
    }
    for (int32_t v = 0; v < count; v++) {
        state->planned[v] = executor->values[v].layout;
        atomic_init(&state->planned[v].references, 1);
        state->planned[v].context = executor->context;
    }
    return state;
}

static void give_back_state(tp_executor_t *executor, run_state_t *state) {
    run_state_t *none = NULL;
    if (!atomic_compare_exchange_strong(&executor->spare, &none, state)) free_state(state);
}

/* Takes each device's block and points the values in it there. */
static tp_status_t *take_blocks(tp_executor_t *executor, run_state_t *state, int32_t *taken) {
    for (*taken = 0; *taken < executor->num_blocks; (*taken)++) {
        const block_t *block = &executor->blocks[*taken];
        state->blocks[*taken] = (tp_bfc_block_t){0};
        if (block->size == 0) continue;
        tp_status_t *error = tp_device_allocate(block->device, block->size,
                                                &state->blocks[*taken]);
        if (error != NULL)
            return tp_status_annotate(error,
                                      "OOM when allocating the %llu bytes of the intermediate "
                                      "values of function '%s' on %s",
                                      (unsigned long long)block->size, executor->graph->name,
                                      block->device->full_name);
    }
    for (int32_t v = 0; v < executor->num_values; v++) {
        const value_t *value = &executor->values[v];
        if (value->result) continue;
        tp_tensor_t *tensor = &state->planned[v];
        const tp_bfc_block_t *block = &state->blocks[value->block];
        tensor->mem = tensor->byte_size > 0 ? block->mem : NULL;
        tensor->offset = block->offset + value->offset;
        state->tensors[v] = tensor;
    }
    return NULL;
}

static void give_back_blocks(tp_executor_t *executor, run_state_t *state, int32_t taken) {
    for (int32_t b = 0; b < taken; b++)
        if (state->blocks[b].chunk != NULL)
            tp_device_free_in_order(executor->blocks[b].device, state->blocks[b].chunk);
}

static tp_tensor_t *input_of(const tp_executor_t *executor, const run_state_t *state,
                             tp_tensor_t *const *arguments, source_t source) {
    if (source.kind == FROM_ARGUMENT) return arguments[source.index];
    if (source.kind == FROM_CAPTURE) return executor->graph->nodes[source.index].captured;
    return state->tensors[source.index];
}

/* The tensor output `output` of `step` is written to: its place in a block, or a result's
 * tensor of its own. */
static tp_status_t *output_of(tp_executor_t *executor, run_state_t *state, const step_t *step,
                              int32_t output, tp_tensor_t **out) {
    int32_t v = step->first_value + output;
    if (!executor->values[v].result) {
        *out = state->tensors[v];
        return NULL;
    }
    const tp_tensor_t *layout = &executor->values[v].layout;
    TP_RETURN_IF_ERROR(tp_tensor_allocate(executor->context, layout->device, layout->dtype,
                                          &layout->shape, &state->tensors[v]));
    *out = state->tensors[v];
    return NULL;
}

static tp_status_t *run_copy(tp_executor_t *executor, run_state_t *state, const step_t *step,
                             tp_tensor_t *source) {
    tp_tensor_t *destination;
    TP_RETURN_IF_ERROR(output_of(executor, state, step, 0, &destination));
    return tp_device_copy(source->device, source->mem, source->offset, source->done,
                          destination->device, destination->mem, destination->offset,
                          source->byte_size, &destination->done);
}

/* The seed a random op draws with at its node's run `run`: its own at the first, so that a
 * function's first call draws what eager execution draws, then a 64-bit hash of the seed and
 * the run (SplitMix64's finalizer), so that calls neither repeat nor meet the draws of another
 * op's seed, as seed + run would. */
static int64_t seed_for_run(int64_t seed, uint64_t run) {
    if (run == 0) return seed;
    uint64_t z = (uint64_t)seed ^ (run * 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return (int64_t)(z ^ (z >> 31));
}

static tp_status_t *run_op(tp_executor_t *executor, run_state_t *state, step_t *step,
                           tp_tensor_t **inputs) {
    const tp_kernel_context_t *plan = &step->call;
    tp_kernel_context_t call;
    call.op = plan->op;
    memcpy(call.attrs, plan->attrs, plan->op->def->num_attrs * sizeof *call.attrs);
    call.num_inputs = plan->num_inputs;
    call.num_outputs = plan->num_outputs;
    call.device = plan->device;
    call.stream = plan->stream;
    call.inferring = false;
    call.making_instance = false;
    call.refused_views = NULL;
    if (step->seed_attribute >= 0) {
        tp_attr_t *seed = &call.attrs[step->seed_attribute];
        seed->i = seed_for_run(seed->i, atomic_fetch_add(&step->runs, 1));
    }
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    /* An argument lives where the caller made it; another device's is copied for the call.
     * Values and captures nearly always are on the step's device already. */
    bool local = tp_inputs_on_device(&call, inputs, (size_t)plan->num_inputs);
    tp_staged_inputs_t staged = {.tensors = inputs, .count = (size_t)plan->num_inputs};
    if (!local)
        TP_RETURN_IF_ERROR(tp_stage_inputs(&call, inputs, (size_t)plan->num_inputs, &staged));
    tp_status_t *error = NULL;
    for (int32_t o = 0; o < plan->num_outputs && error == NULL; o++) {
        call.output_dtypes[o] = plan->output_dtypes[o];
        call.output_shapes[o] = plan->output_shapes[o];
        error = output_of(executor, state, step, o, &call.outputs[o]);
    }
    call.inputs = staged.tensors;
    if (error == NULL) error = tp_kernel_launch(&call, step->kernel);
    if (profile != NULL && error == NULL) profile->op(&call, executor->graph->name, begin_ns);
    if (!local) tp_release_staged_inputs(&staged, inputs);
    return error;
}

static tp_status_t *run_steps(tp_executor_t *executor, run_state_t *state,
                              tp_tensor_t *const *arguments) {
    for (int32_t s = 0; s < executor->num_steps; s++) {
        step_t *step = &executor->steps[s];
        tp_tensor_t *inputs[TP_MAX_STEP_INPUTS];
        for (int32_t i = 0; i < step->node->num_inputs; i++)
            inputs[i] = input_of(executor, state, arguments, step->inputs[i]);
        tp_status_t *error = step->kernel == NULL ? run_copy(executor, state, step, inputs[0])
                                                  : run_op(executor, state, step, inputs);
        if (error != NULL)
            return tp_status_annotate(error, "in function '%s', node %s", executor->graph->name,
                                      step->node->name);
    }
    return NULL;
}

tp_status_t *tp_executor_run(tp_executor_t *executor, tp_tensor_t *const *arguments,
                             tp_tensor_t **outputs) {
    run_state_t *state = take_state(executor);
    if (state == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    for (int32_t v = 0; v < executor->num_values; v++)
        if (executor->values[v].result) state->tensors[v] = NULL;
    int32_t taken;
    tp_status_t *error = take_blocks(executor, state, &taken);
    if (error == NULL) error = run_steps(executor, state, arguments);
    if (error == NULL)
        for (int32_t i = 0; i < executor->graph->num_outputs; i++)
            outputs[i] = tp_tensor_retain(input_of(executor, state, arguments,
                                                   executor->outputs[i]));
    /* The run's own references to its results, and its blocks, once the device is done. The
     * values in blocks let go of their completions: the results hold what they need. */
    for (int32_t v = 0; v < executor->num_values; v++) {
        if (executor->values[v].result) {
            tp_tensor_release(state->tensors[v]);
        } else {
            tp_completion_release(state->planned[v].done);
            state->planned[v].done = NULL;
        }
    }
    give_back_blocks(executor, state, taken);
    give_back_state(executor, state);
    return error;
}
