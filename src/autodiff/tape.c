/* SPDX-License-Identifier: Apache-2.0 */
/* The gradient tape: records the ops that depend on watched tensors, then walks them backwards
 * applying each op's gradient function (reverse-mode differentiation). */
#include "autodiff/tape.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/gradients.h"
#include "autodiff/variable.h"
#include "base/log.h"
#include "base/pointer_map.h"
#include "base/status.h"
#include "context/context.h"
#include "launch/device_scope.h"
#include "launch/execution_hooks.h"
#include "graph/trace.h"
#include "tensor/tensor.h"

/* One op the tape kept, with what its gradient function needs. */
typedef struct tape_record {
    const tp_op_def_t *def;
    tp_attr_t attrs[TP_MAX_OP_ATTRS];
    void *attr_storage[TP_MAX_OP_ATTRS]; /* copies of list and string attributes */
    tp_tensor_t **inputs;                /* retained */
    int32_t *input_slots;                /* -1: not watched, nor made by a kept op */
    int32_t num_inputs;
    tp_tensor_t *outputs[TP_MAX_OP_OUTPUTS]; /* retained */
    int32_t output_slots[TP_MAX_OP_OUTPUTS];
    int32_t num_outputs;
    /* The device it ran on, or in a trace the device scope it was traced in ("": none): its
     * gradient ops run there. */
    char device[128];
} tape_record_t;

typedef struct variable_read {
    const tp_variable_t *variable;
    int32_t slot;
} variable_read_t;

struct tp_tape {
    tp_context_t *context;
    tp_trace_t *trace; /* the trace it began in: it records only that trace's ops */
    pthread_t owner;   /* the thread whose list holds it while it records */
    bool recording, paused;
    /* A tape that is not persistent gives one set of gradients, then lets go of what it
     * recorded (consumed). */
    bool persistent, consumed;
    /* Tensors the tape follows (watched or made by kept ops), by slot; retained. */
    tp_tensor_t **slots;
    int32_t num_slots, slots_capacity;
    tp_pointer_map_t slot_of;
    tape_record_t *records;
    size_t num_records, records_capacity;
    variable_read_t *reads;
    size_t num_reads, reads_capacity;
};

/* Tapes recording on this thread, innermost last. */
enum { MAX_RECORDING = 16 };
static _Thread_local tp_tape_t *recording[MAX_RECORDING];
static _Thread_local int num_recording;
static _Thread_local int suspended;

bool tp_tape_any_recording(void) {
    return num_recording > 0 && suspended == 0;
}

void tp_tape_suspend(void) {
    suspended++;
}

void tp_tape_resume(void) {
    suspended--;
}

static bool grow(void **array, size_t *capacity, size_t needed, size_t element) {
    if (needed <= *capacity) return true;
    size_t count = *capacity == 0 ? 16 : *capacity * 2;
    void *bigger = realloc(*array, count * element);
    if (bigger == NULL) return false;
    *array = bigger;
    *capacity = count;
    return true;
}

static tp_status_t *out_of_memory(void) {
    return tp_status_make(TP_RESOURCE_EXHAUSTED, "gradient tape: out of host memory");
}

/* The slot of `tensor`, made if need be. */
static tp_status_t *slot_for(tp_tape_t *tape, tp_tensor_t *tensor, int32_t *out) {
    int32_t slot = tp_pointer_map_get(&tape->slot_of, tensor);
    if (slot < 0) {
        size_t capacity = (size_t)tape->slots_capacity;
        if (!grow((void **)&tape->slots, &capacity, (size_t)tape->num_slots + 1,
                  sizeof *tape->slots))
            return out_of_memory();
        tape->slots_capacity = (int32_t)capacity;
        slot = tape->num_slots;
        if (!tp_pointer_map_put(&tape->slot_of, tensor, slot)) return out_of_memory();
        tape->slots[tape->num_slots++] = tp_tensor_retain(tensor);
    }
    *out = slot;
    return NULL;
}

tp_status_t *tp_tape_begin(tp_context_t *context, tp_tape_t **out) {
    tp_tape_options_t options = TP_TAPE_OPTIONS_INIT;
    options.persistent = true; /* as tp_tape_begin has always been */
    return tp_tape_begin_with(context, &options, out);
}

/* The tape as execution sees it: told of every call while one records on the thread. */
static const tp_execution_observer_t recorder = {tp_tape_any_recording, tp_tape_record_op};

tp_status_t *tp_tape_begin_with(tp_context_t *context, const tp_tape_options_t *options,
                                tp_tape_t **out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out);
    *out = NULL;
    /* Joins the hooks before its first tape: until then no op pays for the tape. */
    if (!tp_execution_add_observer(&recorder))
        return tp_status_make(TP_INTERNAL, "tp_tape_begin: the execution hook table is full");
    /* Fields past an older caller's struct_size keep their defaults. */
    bool persistent = options != NULL &&
                      options->struct_size >= offsetof(tp_tape_options_t, persistent) +
                                                  sizeof options->persistent &&
                      options->persistent;
    if (num_recording == MAX_RECORDING)
        return tp_status_make(TP_RESOURCE_EXHAUSTED,
                              "tp_tape_begin: %d tapes already record on this thread; is a "
                              "tp_tape_stop missing?",
                              MAX_RECORDING);
    tp_tape_t *tape = calloc(1, sizeof *tape);
    if (tape == NULL) return out_of_memory();
    tape->context = context;
    tape->trace = tp_trace_current(context);
    tape->recording = true;
    tape->persistent = persistent;
    tape->owner = pthread_self();
    tp_context_retain(context);
    recording[num_recording++] = tape;
    *out = tape;
    return NULL;
}

tp_status_t *tp_tape_watch(tp_tape_t *tape, tp_tensor_t *tensor) {
    TP_REQUIRE_ARG(tape);
    TP_REQUIRE_ARG(tensor);
    if (tensor->context != tape->context)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tape_watch: the tensor belongs to another context");
    if (tape->consumed)
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "tp_tape_watch: the tape is not persistent and has given its "
                              "gradients already");
    int32_t slot;
    return slot_for(tape, tensor, &slot);
}

/* Takes the tape off this thread's list; false if it is not there. */
static bool unlist(tp_tape_t *tape) {
    for (int i = num_recording - 1; i >= 0; i--) {
        if (recording[i] != tape) continue;
        memmove(&recording[i], &recording[i + 1],
                (size_t)(num_recording - 1 - i) * sizeof *recording);
        num_recording--;
        return true;
    }
    return false;
}

tp_status_t *tp_tape_stop(tp_tape_t *tape) {
    TP_REQUIRE_ARG(tape);
    if (!tape->recording)
        return tp_status_make(TP_FAILED_PRECONDITION, "tp_tape_stop: the tape was stopped already");
    if (!unlist(tape))
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "tp_tape_stop: the tape records on another thread, which must stop "
                              "it");
    tape->recording = false;
    return NULL;
}

tp_status_t *tp_tape_pause(tp_tape_t *tape, bool paused) {
    TP_REQUIRE_ARG(tape);
    if (!tape->recording)
        return tp_status_make(TP_FAILED_PRECONDITION, "tp_tape_pause: the tape was stopped");
    if (!pthread_equal(tape->owner, pthread_self()))
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "tp_tape_pause: the tape records on another thread");
    tape->paused = paused;
    return NULL;
}

static void free_record(tape_record_t *record) {
    for (int32_t i = 0; i < record->num_inputs; i++) tp_tensor_release(record->inputs[i]);
    for (int32_t o = 0; o < record->num_outputs; o++) tp_tensor_release(record->outputs[o]);
    for (int a = 0; a < TP_MAX_OP_ATTRS; a++) free(record->attr_storage[a]);
    free(record->inputs);
    free(record->input_slots);
}

/* Lets go of everything recorded: the tensors the tape kept alive return to their devices. */
static void release_recorded(tp_tape_t *tape) {
    for (size_t r = 0; r < tape->num_records; r++) free_record(&tape->records[r]);
    for (int32_t s = 0; s < tape->num_slots; s++) tp_tensor_release(tape->slots[s]);
    free(tape->records);
    free(tape->slots);
    free(tape->reads);
    tp_pointer_map_free(&tape->slot_of);
    tape->records = NULL;
    tape->slots = NULL;
    tape->reads = NULL;
    tape->num_records = tape->records_capacity = tape->num_reads = tape->reads_capacity = 0;
    tape->num_slots = tape->slots_capacity = 0;
}

void tp_tape_destroy(tp_tape_t *tape) {
    if (tape == NULL) return;
    if (tape->recording && !pthread_equal(tape->owner, pthread_self())) {
        /* Its thread's list still points to it: freeing it would let that thread's next op
         * write into freed memory. Keeping it is the lesser harm. */
        tp_log_message(TP_LOG_ERROR, "tp_tape_destroy: the tape still records on the thread "
                                     "that began it; stop it there first (it is not freed)");
        return;
    }
    if (tape->recording) unlist(tape);
    release_recorded(tape);
    tp_context_release(tape->context);
    free(tape);
}

/* ---- Recording ------------------------------------------------------------------------------- */

/* The attributes with their lists and strings copied: the caller's arrays do not outlive the
 * call. */
static bool copy_attrs(tape_record_t *record, const tp_kernel_context_t *call) {
    for (size_t a = 0; a < call->op->def->num_attrs; a++) {
        tp_attr_t attr = call->attrs[a];
        size_t bytes = 0;
        if (attr.type == TP_ATTR_INT_LIST || attr.type == TP_ATTR_SHAPE)
            bytes = (size_t)attr.count * sizeof(int64_t);
        else if (attr.type == TP_ATTR_STRING && attr.s != NULL)
            bytes = strlen(attr.s) + 1;
        else if (attr.type == TP_ATTR_BYTES)
            bytes = (size_t)attr.count;
        if (bytes > 0) {
            void *copy = malloc(bytes);
            if (copy == NULL) return false;
            memcpy(copy, attr.type == TP_ATTR_INT_LIST || attr.type == TP_ATTR_SHAPE
                             ? (const void *)attr.list
                             : (const void *)attr.s,
                   bytes);
            record->attr_storage[a] = copy;
            if (attr.type == TP_ATTR_INT_LIST || attr.type == TP_ATTR_SHAPE)
                attr.list = copy;
            else
                attr.s = copy;
        }
        record->attrs[a] = attr;
    }
    return true;
}

static tp_status_t *record_on(tp_tape_t *tape, const tp_kernel_context_t *call,
                              tp_tensor_t *const *inputs, size_t num_inputs,
                              tp_tensor_t *const *outputs) {
    bool follows = false;
    for (size_t i = 0; i < num_inputs && !follows; i++)
        follows = tp_pointer_map_get(&tape->slot_of, inputs[i]) >= 0;
    if (!follows) return NULL;
    if (!grow((void **)&tape->records, &tape->records_capacity, tape->num_records + 1,
              sizeof *tape->records))
        return out_of_memory();
    tape_record_t *record = &tape->records[tape->num_records];
    memset(record, 0, sizeof *record);
    record->def = call->op->def;
    record->inputs = calloc(num_inputs + 1, sizeof *record->inputs);
    record->input_slots = calloc(num_inputs + 1, sizeof *record->input_slots);
    if (record->inputs == NULL || record->input_slots == NULL || !copy_attrs(record, call)) {
        free_record(record);
        return out_of_memory();
    }
    for (size_t i = 0; i < num_inputs; i++) {
        record->inputs[i] = tp_tensor_retain(inputs[i]);
        record->input_slots[i] = tp_pointer_map_get(&tape->slot_of, inputs[i]);
    }
    record->num_inputs = (int32_t)num_inputs;
    const tp_device_scope_t *scope = tp_device_scope_current(tape->context);
    if (call->device != NULL)
        snprintf(record->device, sizeof record->device, "%s", call->device->full_name);
    else if (scope != NULL)
        snprintf(record->device, sizeof record->device, "%s", scope->name);
    for (int32_t o = 0; o < call->num_outputs; o++) {
        record->outputs[o] = tp_tensor_retain(outputs[o]);
        record->num_outputs = o + 1;
        tp_status_t *error = slot_for(tape, outputs[o], &record->output_slots[o]);
        if (error != NULL) {
            free_record(record);
            return error;
        }
    }
    tape->num_records++;
    return NULL;
}

/* The tapes that record for `context` now: those begun in the trace running, if any. */
static bool records_here(const tp_tape_t *tape, tp_context_t *context) {
    return tape->context == context && !tape->paused && !tape->consumed &&
           tape->trace == tp_trace_current(context);
}

tp_status_t *tp_tape_record_op(tp_context_t *context, const tp_kernel_context_t *call,
                               tp_tensor_t *const *inputs, size_t num_inputs,
                               tp_tensor_t *const *outputs) {
    for (int t = 0; t < num_recording; t++)
        if (records_here(recording[t], context))
            TP_RETURN_IF_ERROR(record_on(recording[t], call, inputs, num_inputs, outputs));
    return NULL;
}

tp_status_t *tp_tape_watch_variable(tp_context_t *context, const tp_variable_t *variable,
                                    tp_tensor_t *value) {
    for (int t = 0; t < num_recording; t++) {
        tp_tape_t *tape = recording[t];
        if (!records_here(tape, context)) continue;
        int32_t slot;
        TP_RETURN_IF_ERROR(slot_for(tape, value, &slot));
        /* A value read twice is one read: its gradient must count once. */
        bool seen = false;
        for (size_t r = 0; r < tape->num_reads && !seen; r++)
            seen = tape->reads[r].variable == variable && tape->reads[r].slot == slot;
        if (seen) continue;
        if (!grow((void **)&tape->reads, &tape->reads_capacity, tape->num_reads + 1,
                  sizeof *tape->reads))
            return out_of_memory();
        tape->reads[tape->num_reads++] = (variable_read_t){variable, slot};
    }
    return NULL;
}

/* ---- Gradients ------------------------------------------------------------------------------- */

/* Adds `grad` into slot's sum; takes the reference. */
static tp_status_t *accumulate(tp_context_t *context, tp_tensor_t **sums, int32_t slot,
                               tp_tensor_t *grad) {
    if (sums[slot] == NULL) {
        sums[slot] = grad;
        return NULL;
    }
    tp_tensor_t *total;
    tp_status_t *error = tp_add(context, sums[slot], grad, &total);
    tp_tensor_release(grad);
    if (error != NULL) return error;
    tp_tensor_release(sums[slot]);
    sums[slot] = total;
    return NULL;
}

/* Runs one record's gradient function and adds what its inputs receive to their sums. */
static tp_status_t *backprop_record(tp_tape_t *tape, const tape_record_t *record,
                                    const bool *connected, tp_tensor_t **sums) {
    bool needed[64] = {false};
    bool any_needed = false, any_output_grad = false;
    if (record->num_inputs > 64)
        return tp_status_make(TP_UNIMPLEMENTED,
                              "gradient tape: %s has %d inputs; gradients take at most 64",
                              record->def->name, (int)record->num_inputs);
    for (int32_t i = 0; i < record->num_inputs; i++) {
        int32_t slot = record->input_slots[i];
        needed[i] = slot >= 0 && connected[slot];
        any_needed = any_needed || needed[i];
    }
    for (int32_t o = 0; o < record->num_outputs; o++)
        any_output_grad = any_output_grad || sums[record->output_slots[o]] != NULL;
    if (!any_needed || !any_output_grad) return NULL;
    tp_gradient_fn_t fn = tp_gradient_find(record->def->name);
    if (fn == NULL)
        return tp_status_make(TP_UNIMPLEMENTED,
                              "gradient tape: op '%s' has no gradient; the target depends on it "
                              "through a watched tensor",
                              record->def->name);
    tp_tensor_t *output_grads[TP_MAX_OP_OUTPUTS] = {NULL};
    bool made[TP_MAX_OP_OUTPUTS] = {false};
    tp_status_t *error = NULL;
    for (int32_t o = 0; o < record->num_outputs && error == NULL; o++) {
        output_grads[o] = sums[record->output_slots[o]];
        if (output_grads[o] == NULL) {
            error = tp_zeros_like(tape->context, record->outputs[o], &output_grads[o]);
            made[o] = error == NULL;
        }
    }
    tp_tensor_t *input_grads[64] = {NULL};
    if (error == NULL) {
        tp_gradient_op_t op = {tape->context, record->def, record->attrs, record->inputs,
                               record->num_inputs, record->outputs, record->num_outputs};
        error = tp_status_annotate(fn(&op, output_grads, needed, input_grads),
                                   "gradient of %s", record->def->name);
    }
    for (int32_t o = 0; o < record->num_outputs; o++)
        if (made[o]) tp_tensor_release(output_grads[o]);
    for (int32_t i = 0; i < record->num_inputs; i++) {
        if (!needed[i] || input_grads[i] == NULL) continue;
        if (error == NULL)
            error = accumulate(tape->context, sums, record->input_slots[i], input_grads[i]);
        else
            tp_tensor_release(input_grads[i]);
    }
    return error;
}

/* Marks the slots that depend on a source: the only ones worth a gradient. */
static void mark_connected(const tp_tape_t *tape, bool *connected) {
    for (size_t r = 0; r < tape->num_records; r++) {
        const tape_record_t *record = &tape->records[r];
        bool any = false;
        for (int32_t i = 0; i < record->num_inputs && !any; i++)
            any = record->input_slots[i] >= 0 && connected[record->input_slots[i]];
        for (int32_t o = 0; o < record->num_outputs && any; o++)
            connected[record->output_slots[o]] = true;
    }
}

/* Where a target's gradient starts: its slot and d(loss)/d(target), NULL for ones. */
typedef struct seed {
    tp_tensor_t *target;
    int32_t slot; /* -1: not followed; nothing flows from it */
    tp_tensor_t *gradient;
} seed_t;

/* Pushes a preferred scope on `device` unless it is "" or the caller placed the gradient
 * itself (a scope of its own); *out_pushed says whether to pop. */
static tp_status_t *enter_device(tp_tape_t *tape, bool caller_scope, const char *device,
                                 bool *out_pushed) {
    *out_pushed = false;
    if (caller_scope || device == NULL || device[0] == '\0') return NULL;
    TP_RETURN_IF_ERROR(tp_device_push_preferred(tape->context, device));
    *out_pushed = true;
    return NULL;
}

static void leave_device(tp_tape_t *tape, bool pushed) {
    if (pushed) tp_status_free(tp_device_pop(tape->context));
}

/* The seeds' gradients added into their slots' sums, where a source is reached. */
static tp_status_t *plant_seeds(tp_tape_t *tape, bool caller_scope, const seed_t *seeds,
                                size_t num_seeds, const bool *connected, tp_tensor_t **sums) {
    for (size_t t = 0; t < num_seeds; t++) {
        const seed_t *seed = &seeds[t];
        if (seed->slot < 0 || !connected[seed->slot]) continue;
        tp_tensor_t *gradient = NULL;
        if (seed->gradient != NULL) {
            gradient = tp_tensor_retain(seed->gradient);
        } else {
            /* Ones where the target is, so that the backward pass starts on its device. */
            bool pushed;
            TP_RETURN_IF_ERROR(
                enter_device(tape, caller_scope, tp_tensor_device(seed->target), &pushed));
            tp_status_t *error = tp_ones_like(tape->context, seed->target, &gradient);
            leave_device(tape, pushed);
            TP_RETURN_IF_ERROR(error);
        }
        TP_RETURN_IF_ERROR(accumulate(tape->context, sums, seed->slot, gradient));
    }
    return NULL;
}

/* The gradients of the seeds' targets, summed, with respect to the slots in `sources` (-1: not
 * followed), one per entry, in `grads_out`: NULL where nothing flows back to it. Each record's
 * gradient ops run on its device unless the caller has a scope. */
static tp_status_t *backprop(tp_tape_t *tape, const seed_t *seeds, size_t num_seeds,
                             const int32_t *sources, size_t num_sources, tp_tensor_t **grads_out) {
    size_t slots = (size_t)tape->num_slots;
    bool caller_scope = tp_device_scope_current(tape->context) != NULL;
    bool *connected = calloc(slots + 1, sizeof *connected);
    bool *is_source = calloc(slots + 1, sizeof *is_source);
    tp_tensor_t **sums = calloc(slots + 1, sizeof *sums);
    tp_status_t *error = NULL;
    if (connected == NULL || is_source == NULL || sums == NULL) error = out_of_memory();
    for (size_t s = 0; s < num_sources && error == NULL; s++)
        if (sources[s] >= 0) connected[sources[s]] = is_source[sources[s]] = true;
    if (error == NULL) {
        mark_connected(tape, connected);
        error = plant_seeds(tape, caller_scope, seeds, num_seeds, connected, sums);
    }
    for (size_t r = tape->num_records; r-- > 0 && error == NULL;) {
        const tape_record_t *record = &tape->records[r];
        bool pushed;
        error = enter_device(tape, caller_scope, record->device, &pushed);
        if (error == NULL) error = backprop_record(tape, record, connected, sums);
        leave_device(tape, pushed);
        /* Every reader of the record's outputs came later and is done: their sums are final
         * and, unless asked for, no longer needed. */
        for (int32_t o = 0; o < record->num_outputs; o++) {
            int32_t slot = record->output_slots[o];
            if (!is_source[slot]) {
                tp_tensor_release(sums[slot]);
                sums[slot] = NULL;
            }
        }
    }
    for (size_t s = 0; s < num_sources && error == NULL; s++)
        if (sources[s] >= 0 && sums[sources[s]] != NULL)
            grads_out[s] = tp_tensor_retain(sums[sources[s]]);
    if (error != NULL)
        for (size_t s = 0; s < num_sources; s++) {
            tp_tensor_release(grads_out[s]);
            grads_out[s] = NULL;
        }
    for (size_t s = 0; sums != NULL && s < slots; s++) tp_tensor_release(sums[s]);
    free(sums);
    free(is_source);
    free(connected);
    return error;
}

/* Runs the backward pass with the tape paused, so that it does not record its own work. */
static tp_status_t *backprop_paused(tp_tape_t *tape, const seed_t *seeds, size_t num_seeds,
                                    const int32_t *sources, size_t num_sources,
                                    tp_tensor_t **grads_out) {
    bool was_paused = tape->paused;
    tape->paused = true;
    tp_status_t *error = backprop(tape, seeds, num_seeds, sources, num_sources, grads_out);
    tape->paused = was_paused;
    return error;
}

/* A tape that is not persistent refuses a second gradient call. */
static tp_status_t *check_usable(const tp_tape_t *tape, const char *function) {
    if (!tape->consumed) return NULL;
    return tp_status_make(TP_FAILED_PRECONDITION,
                          "%s: the tape is not persistent and has given its gradients already "
                          "(what it recorded is freed); begin it with persistent = true "
                          "(tp_tape_begin_with) to take gradients more than once",
                          function);
}

/* After its one gradient call, a tape that is not persistent lets go of what it recorded. */
static void finish_call(tp_tape_t *tape) {
    if (tape->persistent) return;
    release_recorded(tape);
    tape->consumed = true;
}

static bool is_floating(tp_dtype_t dtype) {
    return dtype == TP_FLOAT32 || dtype == TP_FLOAT64;
}

static tp_status_t *check_target(const tp_tape_t *tape, const tp_tensor_t *target) {
    if (target->context != tape->context)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tape_gradient: the target belongs to another context");
    if (!is_floating(target->dtype))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tape_gradient: the target is %s; gradients need float32 or "
                              "float64",
                              tp_dtype_name(target->dtype));
    if (target->num_elements != 1) {
        char shape[128];
        tp_shape_format(&target->shape, shape, sizeof shape);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tape_gradient: the target has shape %s; it must be a scalar "
                              "(reduce it with tp_sum or tp_mean first)",
                              shape);
    }
    return NULL;
}

/* Zeros for each source the target does not reach; on failure every gradient is released. */
static tp_status_t *fill_zeros(tp_context_t *context, tp_tensor_t *const *like, size_t count,
                               tp_tensor_t **grads) {
    for (size_t s = 0; s < count; s++) {
        if (grads[s] != NULL) continue;
        tp_status_t *error = tp_zeros_like(context, like[s], &grads[s]);
        if (error != NULL) {
            for (size_t k = 0; k < count; k++) {
                tp_tensor_release(grads[k]);
                grads[k] = NULL;
            }
            return error;
        }
    }
    return NULL;
}

tp_status_t *tp_tape_gradient(tp_tape_t *tape, tp_tensor_t *target, tp_tensor_t *const *sources,
                              size_t num_sources, tp_tensor_t **grads) {
    TP_REQUIRE_ARG(tape);
    TP_REQUIRE_ARG(target);
    if (num_sources > 0 && (sources == NULL || grads == NULL))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tape_gradient: sources and grads are needed for %zu sources",
                              num_sources);
    TP_RETURN_IF_ERROR(check_usable(tape, "tp_tape_gradient"));
    TP_RETURN_IF_ERROR(check_target(tape, target));
    int32_t *slots = calloc(num_sources + 1, sizeof *slots);
    tp_tensor_t **results = calloc(num_sources + 1, sizeof *results);
    tp_status_t *error = slots == NULL || results == NULL ? out_of_memory() : NULL;
    for (size_t s = 0; s < num_sources && error == NULL; s++) {
        if (sources[s] == NULL)
            error = tp_status_make(TP_INVALID_ARGUMENT, "tp_tape_gradient: source %zu is NULL",
                                   s);
        else
            slots[s] = tp_pointer_map_get(&tape->slot_of, sources[s]);
    }
    if (error == NULL) {
        seed_t seed = {target, tp_pointer_map_get(&tape->slot_of, target), NULL};
        error = backprop_paused(tape, &seed, 1, slots, num_sources, results);
        /* This call's promise: zeros, not "no gradient", for what the target does not reach;
         * made with the tape paused, as the backward pass is. */
        bool was_paused = tape->paused;
        tape->paused = true;
        if (error == NULL) error = fill_zeros(tape->context, sources, num_sources, results);
        tape->paused = was_paused;
        finish_call(tape);
    }
    if (error == NULL) memcpy(grads, results, num_sources * sizeof *grads);
    free(results);
    free(slots);
    return error;
}

/* The targets and their upstream gradients, checked: floating point, of this context, each
 * upstream gradient of its target's dtype and shape. */
static tp_status_t *check_targets(const tp_tape_t *tape, tp_tensor_t *const *targets,
                                  tp_tensor_t *const *output_gradients, size_t num_targets) {
    for (size_t t = 0; t < num_targets; t++) {
        const tp_tensor_t *target = targets[t];
        if (target == NULL)
            return tp_status_make(TP_INVALID_ARGUMENT, "tp_tape_gradients: target %zu is NULL",
                                  t);
        if (target->context != tape->context)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "tp_tape_gradients: target %zu belongs to another context", t);
        if (!is_floating(target->dtype))
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "tp_tape_gradients: target %zu is %s; gradients need float32 "
                                  "or float64",
                                  t, tp_dtype_name(target->dtype));
        const tp_tensor_t *upstream = output_gradients != NULL ? output_gradients[t] : NULL;
        if (upstream == NULL) continue;
        char want[128], got[128];
        tp_shape_format(&target->shape, want, sizeof want);
        tp_shape_format(&upstream->shape, got, sizeof got);
        if (upstream->context != tape->context)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "tp_tape_gradients: output gradient %zu belongs to another "
                                  "context",
                                  t);
        if (upstream->dtype != target->dtype || strcmp(want, got) != 0)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "tp_tape_gradients: output gradient %zu is %s %s; target %zu "
                                  "is %s %s, and its gradient must be the same",
                                  t, tp_dtype_name(upstream->dtype), got, t,
                                  tp_dtype_name(target->dtype), want);
    }
    return NULL;
}

tp_status_t *tp_tape_gradients(tp_tape_t *tape, tp_tensor_t *const *targets,
                               tp_tensor_t *const *output_gradients, size_t num_targets,
                               tp_tensor_t *const *sources, size_t num_sources,
                               tp_tensor_t **grads) {
    TP_REQUIRE_ARG(tape);
    if (num_targets == 0 || targets == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "tp_tape_gradients: no targets given");
    if (num_sources > 0 && (sources == NULL || grads == NULL))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tape_gradients: sources and grads are needed for %zu sources",
                              num_sources);
    for (size_t s = 0; s < num_sources; s++) grads[s] = NULL;
    TP_RETURN_IF_ERROR(check_usable(tape, "tp_tape_gradients"));
    TP_RETURN_IF_ERROR(check_targets(tape, targets, output_gradients, num_targets));
    int32_t *slots = calloc(num_sources + 1, sizeof *slots);
    seed_t *seeds = calloc(num_targets, sizeof *seeds);
    tp_status_t *error = slots == NULL || seeds == NULL ? out_of_memory() : NULL;
    for (size_t s = 0; s < num_sources && error == NULL; s++) {
        slots[s] = sources[s] != NULL ? tp_pointer_map_get(&tape->slot_of, sources[s]) : -1;
        if (sources[s] == NULL)
            error = tp_status_make(TP_INVALID_ARGUMENT, "tp_tape_gradients: source %zu is NULL",
                                   s);
        else if (sources[s]->context != tape->context)
            error = tp_status_make(TP_INVALID_ARGUMENT,
                                   "tp_tape_gradients: source %zu belongs to another context", s);
        else if (slots[s] < 0)
            error = tp_status_make(TP_INVALID_ARGUMENT,
                                   "tp_tape_gradients: source %zu was neither watched by the "
                                   "tape (tp_tape_watch) nor made by an op it recorded",
                                   s);
    }
    for (size_t t = 0; t < num_targets && error == NULL; t++)
        seeds[t] = (seed_t){targets[t], tp_pointer_map_get(&tape->slot_of, targets[t]),
                            output_gradients != NULL ? output_gradients[t] : NULL};
    if (error == NULL) {
        error = backprop_paused(tape, seeds, num_targets, slots, num_sources, grads);
        finish_call(tape);
    }
    free(seeds);
    free(slots);
    return error;
}

tp_status_t *tp_tape_gradient_variables(tp_tape_t *tape, tp_tensor_t *target,
                                        tp_variable_t *const *variables, size_t num_variables,
                                        tp_tensor_t **grads) {
    TP_REQUIRE_ARG(tape);
    TP_REQUIRE_ARG(target);
    if (num_variables > 0 && (variables == NULL || grads == NULL))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_tape_gradient_variables: variables and grads are needed for "
                              "%zu variables",
                              num_variables);
    TP_RETURN_IF_ERROR(check_usable(tape, "tp_tape_gradient_variables"));
    TP_RETURN_IF_ERROR(check_target(tape, target));
    /* One source per read; each variable's gradient is the sum over its reads. */
    size_t n = tape->num_reads;
    int32_t *slots = calloc(n + 1, sizeof *slots);
    tp_tensor_t **per_read = calloc(n + 1, sizeof *per_read);
    tp_tensor_t **like = calloc(num_variables + 1, sizeof *like);
    tp_tensor_t **results = calloc(num_variables + 1, sizeof *results);
    tp_status_t *error =
        slots == NULL || per_read == NULL || like == NULL || results == NULL ? out_of_memory()
                                                                             : NULL;
    for (size_t r = 0; r < n && error == NULL; r++) slots[r] = tape->reads[r].slot;
    for (size_t v = 0; v < num_variables && error == NULL; v++) {
        if (variables[v] == NULL)
            error = tp_status_make(TP_INVALID_ARGUMENT,
                                   "tp_tape_gradient_variables: variable %zu is NULL", v);
        else
            error = tp_variable_read_untaped(variables[v], &like[v]);
    }
    if (error == NULL) {
        seed_t seed = {target, tp_pointer_map_get(&tape->slot_of, target), NULL};
        error = backprop_paused(tape, &seed, 1, slots, n, per_read);
        bool was_paused = tape->paused;
        tape->paused = true; /* the sums over reads are no part of the model either */
        for (size_t r = 0; r < n && error == NULL; r++) {
            if (per_read[r] == NULL) continue;
            for (size_t v = 0; v < num_variables && error == NULL; v++)
                if (tape->reads[r].variable == variables[v])
                    error = accumulate(tape->context, results, (int32_t)v,
                                       tp_tensor_retain(per_read[r]));
        }
        if (error == NULL) error = fill_zeros(tape->context, like, num_variables, results);
        tape->paused = was_paused;
        finish_call(tape);
    }
    if (error == NULL)
        memcpy(grads, results, num_variables * sizeof *grads);
    else
        for (size_t v = 0; v < num_variables && results != NULL; v++)
            tp_tensor_release(results[v]);
    for (size_t r = 0; r < n && per_read != NULL; r++) tp_tensor_release(per_read[r]);
    for (size_t v = 0; v < num_variables && like != NULL; v++) tp_tensor_release(like[v]);
    free(results);
    free(like);
    free(per_read);
    free(slots);
    return error;
}
