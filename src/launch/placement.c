/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing the device an op runs on: the rules of DESIGN.md, with fallbacks that are logged,
 * counted and, in strict mode, refused. */
#include "launch/placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "device/device_name.h"
#include "launch/device_scope.h"
#include "launch/placement_cache.h"
#include "kernel/kernel_registry.h"

/* The device with a kernel whose type has the highest priority, the first (lowest ordinal) of
 * that type; registry order breaks ties between types of equal priority. */
static tp_placement_t best_device(const tp_device_registry_t *registry,
                                  const tp_kernel_context_t *call) {
    tp_placement_t best = {NULL, NULL};
    for (size_t i = 0; i < registry->num_devices; i++) {
        tp_device_t *device = registry->devices[i];
        if (best.device != NULL && device->def->priority <= best.device->def->priority) continue;
        const tp_kernel_def_t *kernel = tp_kernel_registry_find(registry, call, device->def);
        if (kernel != NULL) best = (tp_placement_t){device, kernel};
    }
    return best;
}

/* The first device of the highest-priority type present, kernel or not: where the op would
 * run if every device had every kernel. */
static const tp_device_t *preferred_device(const tp_device_registry_t *registry) {
    const tp_device_t *preferred = NULL;
    for (size_t i = 0; i < registry->num_devices; i++)
        if (preferred == NULL || registry->devices[i]->def->priority > preferred->def->priority)
            preferred = registry->devices[i];
    return preferred;
}

static bool matches(const tp_device_spec_t *spec, const tp_device_t *device) {
    if (!tp_device_spec_is_local(spec)) return false;
    if (spec->has_type && strcasecmp(spec->type, device->def->type) != 0) return false;
    return !spec->has_id || spec->id == device->ordinal;
}

/* The name of what the scope asked for, canonical when it names one device. */
static void requested_name(const tp_device_scope_t *scope, char *text, size_t capacity) {
    tp_status_t *error = tp_device_spec_canonical(&scope->spec, text, capacity);
    if (error != NULL) snprintf(text, capacity, "%s", scope->name);
    tp_status_free(error);
}

/* Records a fallback and logs the first of each (op, from, to); returns its record, NULL
 * if none could be kept (no host memory: the fallback is logged but not counted). */
static tp_fallback_record_t *note_fallback(tp_context_t *context, const char *op,
                                           const char *from, const char *to) {
    pthread_mutex_lock(&context->fallback_mutex);
    tp_fallback_record_t *record = NULL;
    for (size_t i = 0; i < context->num_fallbacks && record == NULL; i++) {
        tp_fallback_record_t *r = context->fallbacks[i];
        if (strcmp(r->op, op) == 0 && strcmp(r->from, from) == 0 && strcmp(r->to, to) == 0)
            record = r;
    }
    bool first = record == NULL;
    if (first && context->num_fallbacks == context->fallbacks_capacity) {
        size_t capacity = context->fallbacks_capacity == 0 ? 8 : context->fallbacks_capacity * 2;
        tp_fallback_record_t **grown = realloc(context->fallbacks, capacity * sizeof *grown);
        if (grown != NULL) {
            context->fallbacks = grown;
            context->fallbacks_capacity = capacity;
        }
    }
    if (first && context->num_fallbacks < context->fallbacks_capacity &&
        (record = calloc(1, sizeof *record)) != NULL) {
        context->fallbacks[context->num_fallbacks++] = record;
        snprintf(record->op, sizeof record->op, "%s", op);
        snprintf(record->from, sizeof record->from, "%s", from);
        snprintf(record->to, sizeof record->to, "%s", to);
    }
    if (record != NULL) atomic_fetch_add_explicit(&record->count, 1, memory_order_relaxed);
    pthread_mutex_unlock(&context->fallback_mutex);
    if (first)
        tp_log_message(TP_LOG_WARNING, "op %s cannot run on %s; it falls back to %s", op, from,
                       to);
    return record;
}

uint64_t tp_context_fallback_count(const tp_context_t *context, const char *op) {
    if (context == NULL) return 0;
    tp_context_t *mutable_context = (tp_context_t *)context; /* the lock is not the value */
    uint64_t total = 0;
    pthread_mutex_lock(&mutable_context->fallback_mutex);
    for (size_t i = 0; i < context->num_fallbacks; i++)
        if (op == NULL || strcmp(context->fallbacks[i]->op, op) == 0)
            total += atomic_load_explicit(&context->fallbacks[i]->count, memory_order_relaxed);
    pthread_mutex_unlock(&mutable_context->fallback_mutex);
    return total;
}

/* head then tail into `out`, cut to fit as snprintf would. Every op that runs on the CPU
 * because a preferred device type lacks its kernel (Add beside the APU) names that type here,
 * and snprintf's general formatting cost a sixth of such an op's dispatch. */
static void join(char *out, size_t capacity, const char *head, const char *tail) {
    size_t used = strnlen(head, capacity - 1);
    memcpy(out, head, used);
    size_t rest = strnlen(tail, capacity - 1 - used);
    memcpy(out + used, tail, rest);
    out[used + rest] = '\0';
}

/* Takes `chosen` instead of `from`: an error in strict mode, else counted and logged once.
 * `kept` (may be NULL) receives the record note_fallback returned. */
static tp_status_t *fall_back(tp_context_t *context, const tp_kernel_context_t *call,
                              const char *from, tp_placement_t chosen, tp_placement_t *out,
                              tp_fallback_record_t **kept) {
    const char *op = call->op->def->name;
    if (context->strict_placement)
        return tp_status_make(TP_FAILED_PRECONDITION,
                              "strict placement: op %s would fall back from %s to %s", op, from,
                              chosen.device->full_name);
    tp_fallback_record_t *record = note_fallback(context, op, from, chosen.device->full_name);
    if (kept != NULL) *kept = record;
    *out = chosen;
    return NULL;
}

/* " with T=float32", " with SrcT=float32, DstT=uint16": every dtype attribute of the call,
 * which decide whether a kernel exists; "" for an op without one. */
static void describe_dtypes(const tp_kernel_context_t *call, char *out, size_t capacity) {
    const tp_op_def_t *def = call->op->def;
    size_t used = 0;
    out[0] = '\0';
    for (size_t a = 0; a < def->num_attrs && used < capacity; a++) {
        if (def->attrs[a].type != TP_ATTR_DTYPE) continue;
        const char *name = tp_dtype_name((tp_dtype_t)call->attrs[a].i);
        int n = snprintf(out + used, capacity - used, "%s%s=%s", used == 0 ? " with " : ", ",
                         def->attrs[a].name, name != NULL ? name : "?");
        used += n > 0 ? (size_t)n : 0;
    }
}

static tp_status_t *no_kernel_anywhere(const tp_kernel_context_t *call) {
    char dtypes[128];
    describe_dtypes(call, dtypes, sizeof dtypes);
    return tp_status_make(TP_NOT_FOUND, "no device has a kernel for op %s%s",
                          call->op->def->name, dtypes);
}

bool tp_placement_any_device_matches(const tp_device_registry_t *registry,
                                     const tp_device_spec_t *spec) {
    for (size_t i = 0; i < registry->num_devices; i++)
        if (matches(spec, registry->devices[i])) return true;
    return false;
}

/* Placement with no device type asked for: the same for every call of an op with the same
 * dtype attributes, so it is made once and then found in the cache, fallback count included.
 * Errors and strict-mode refusals are not cached: they are made again, message and all. */
static tp_status_t *place_unscoped(tp_context_t *context, const tp_kernel_context_t *call,
                                   tp_placement_t *out) {
    tp_placement_key_t key;
    const tp_placement_entry_t *hit = tp_resolved_call_placement(call);
    bool keyed = hit != NULL || tp_placement_key_make(call, &key);
    if (hit == NULL && keyed) {
        hit = tp_placement_cache_find(context, &key);
        tp_resolved_call_keep_placement(call, hit);
    }
    if (hit != NULL) {
        /* The record stays until the context goes; the add needs no lock. */
        if (hit->fallback != NULL)
            atomic_fetch_add_explicit(&hit->fallback->count, 1, memory_order_relaxed);
        *out = (tp_placement_t){hit->device, hit->kernel};
        return NULL;
    }
    const tp_device_registry_t *registry = &context->registry;
    tp_placement_t best = best_device(registry, call);
    if (best.device == NULL) return no_kernel_anywhere(call);
    tp_fallback_record_t *kept = NULL;
    const tp_device_t *preferred = preferred_device(registry);
    if (preferred->def->priority > best.device->def->priority) {
        char from[64];
        join(from, sizeof from, preferred->def->type, " devices");
        TP_RETURN_IF_ERROR(fall_back(context, call, from, best, out, &kept));
        /* A fallback whose record could not be kept (no host memory) would go uncounted. */
        if (kept == NULL) return NULL;
    } else {
        *out = best;
    }
    if (keyed && tp_kernel_registry_selects_by_dtypes(registry, call->op->def))
        tp_resolved_call_keep_placement(
            call, tp_placement_cache_add(context, &(tp_placement_entry_t){key, best.device,
                                                                          best.kernel, kept}));
    return NULL;
}

tp_status_t *tp_place_op(tp_context_t *context, const tp_kernel_context_t *call,
                         tp_placement_t *out) {
    return tp_place_op_in_scope(context, call, tp_device_scope_current(context), out);
}

tp_status_t *tp_place_op_in_scope(tp_context_t *context, const tp_kernel_context_t *call,
                                  const tp_device_scope_t *scope, tp_placement_t *out) {
    const tp_device_registry_t *registry = &context->registry;
    const char *op = call->op->def->name;

    if (scope == NULL || !scope->spec.has_type) return place_unscoped(context, call, out);

    const tp_device_t *matched = NULL;
    for (size_t i = 0; i < registry->num_devices; i++) {
        tp_device_t *device = registry->devices[i];
        if (!matches(&scope->spec, device)) continue;
        if (matched == NULL) matched = device;
        const tp_kernel_def_t *kernel = tp_kernel_registry_find(registry, call, device->def);
        if (kernel != NULL) {
            *out = (tp_placement_t){device, kernel};
            return NULL;
        }
    }
    /* Only a placement that failed or fell back names the request: formatting it costs more
     * than the placement itself, at every op in a scope. */
    char requested[128];
    requested_name(scope, requested, sizeof requested);
    tp_placement_t best = best_device(registry, call);
    if ((scope->preferred || atomic_load(&context->soft_device_placement)) && best.device != NULL)
        return fall_back(context, call, requested, best, out, NULL);
    if (matched == NULL)
        return tp_status_make(TP_NOT_FOUND, "Error copying tensor to device: %s. %s unknown "
                              "device.", requested, requested);
    tp_strbuf_t types = TP_STRBUF_INIT;
    tp_kernel_registry_describe_types(registry, call, &types);
    char dtypes[128];
    describe_dtypes(call, dtypes, sizeof dtypes);
    tp_status_t *error = tp_status_make(
        TP_INVALID_ARGUMENT,
        "Could not satisfy device specification '%s' for op %s: no kernel for %s%s on %s "
        "devices; device types with a kernel: %s",
        scope->name, op, op, dtypes, matched->def->type, tp_strbuf_text(&types));
    tp_strbuf_free(&types);
    return error;
}

bool tp_device_can_run(tp_context_t *context, const tp_device_t *device, const char *op_name,
                       tp_tensor_t *const *inputs, size_t num_inputs, const tp_attr_t *attrs,
                       size_t num_attrs) {
    tp_op_t op;
    if (!tp_kernel_registry_find_op(&context->registry, op_name, &op)) return false;
    tp_kernel_context_t call;
    tp_status_t *error =
        tp_kernel_context_resolve(&call, &op, inputs, num_inputs, attrs, num_attrs,
                                  op.def->num_outputs);
    if (error != NULL) {
        tp_status_free(error);
        return false;
    }
    return tp_kernel_registry_find(&context->registry, &call, device->def) != NULL;
}
