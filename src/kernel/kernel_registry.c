/* SPDX-License-Identifier: Apache-2.0 */
#include "kernel/kernel_registry.h"

#include <stdint.h>
#include <string.h>

#include "plugin/op_names.h"

bool tp_kernel_registry_find_op(const tp_device_registry_t *registry, const char *name,
                                tp_op_t *out_op) {
    const tp_op_t *builtin = tp_builtin_op_find(name);
    if (builtin != NULL) {
        *out_op = *builtin;
        return true;
    }
    for (size_t i = 0; i < registry->num_plugins; i++) {
        const tp_plugin_entry_t *entry = &registry->plugins[i];
        if (entry->refusal != NULL) continue;
        const tp_op_def_t *def = tp_plugin_record_find_op(entry->record, name);
        if (def != NULL) {
            *out_op = (tp_op_t){def, NULL, entry->record};
            return true;
        }
    }
    return false;
}

/* Whether every dtype of the call is one the kernel's plug-in knows: its dtype attributes,
 * constrained or not, and the op's fixed dtypes. */
static bool knows_dtypes(const tp_kernel_entry_t *entry, const tp_kernel_context_t *call) {
    const tp_op_def_t *op = call->op->def;
    for (size_t a = 0; a < op->num_attrs; a++)
        if (op->attrs[a].type == TP_ATTR_DTYPE && call->attrs[a].i > entry->newest_dtype)
            return false;
    for (size_t i = 0; i < op->num_inputs; i++)
        if (op->inputs[i].dtype > entry->newest_dtype) return false;
    for (size_t o = 0; o < op->num_outputs; o++)
        if (op->outputs[o].dtype > entry->newest_dtype) return false;
    return true;
}

static bool satisfies(const tp_kernel_entry_t *entry, const tp_kernel_context_t *call) {
    const tp_kernel_def_t *kernel = entry->kernel;
    if (!knows_dtypes(entry, call)) return false;
    for (size_t c = 0; c < kernel->num_constraints; c++) {
        const tp_type_constraint_t *constraint = &kernel->constraints[c];
        const tp_attr_t *attr = tp_kernel_context_attr(call, constraint->attr);
        if (attr == NULL) return false;
        bool listed = false;
        for (size_t d = 0; d < constraint->num_dtypes; d++)
            listed |= constraint->dtypes[d] == (tp_dtype_t)attr->i;
        if (!listed) return false;
    }
    return true;
}

const tp_kernel_def_t *tp_kernel_registry_find(const tp_device_registry_t *registry,
                                               const tp_kernel_context_t *call,
                                               const tp_device_type_def_t *device_type) {
    const tp_kernel_def_t *best = NULL;
    uintptr_t op = (uintptr_t)call->op->def;
    /* The first entry of the op: the index is sorted by op pointer. */
    size_t low = 0, high = registry->num_kernels;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if ((uintptr_t)registry->kernels[middle].op < op)
            low = middle + 1;
        else
            high = middle;
    }
    for (size_t i = low; i < registry->num_kernels && registry->kernels[i].op == call->op->def;
         i++) {
        const tp_kernel_entry_t *entry = &registry->kernels[i];
        if (entry->device_type != device_type) continue;
        if (!satisfies(entry, call)) continue;
        /* Strictly greater: of equal priorities the first registered, met first, stays. */
        if (best == NULL || entry->kernel->priority > best->priority) best = entry->kernel;
    }
    return best;
}

static bool is_dtype_attr(const tp_op_def_t *op, const char *name) {
    for (size_t a = 0; a < op->num_attrs; a++)
        if (op->attrs[a].type == TP_ATTR_DTYPE && strcmp(op->attrs[a].name, name) == 0)
            return true;
    return false;
}

bool tp_kernel_registry_selects_by_dtypes(const tp_device_registry_t *registry,
                                          const tp_op_def_t *op) {
    /* The registrar does not require a constraint to name a dtype attribute, so each is
     * checked; a linear walk, as this runs once per op and context. */
    for (size_t i = 0; i < registry->num_kernels; i++) {
        const tp_kernel_entry_t *entry = &registry->kernels[i];
        if (entry->op != op) continue;
        for (size_t c = 0; c < entry->kernel->num_constraints; c++)
            if (!is_dtype_attr(op, entry->kernel->constraints[c].attr)) return false;
    }
    return true;
}

void tp_kernel_registry_describe_types(const tp_device_registry_t *registry,
                                       const tp_kernel_context_t *call, tp_strbuf_t *out) {
    size_t listed = 0;
    for (size_t i = 0; i < registry->num_devices; i++) {
        const tp_device_t *device = registry->devices[i];
        if (device->ordinal != 0) continue; /* one mention per type */
        if (tp_kernel_registry_find(registry, call, device->def) == NULL) continue;
        tp_strbuf_printf(out, "%s%s", listed++ == 0 ? "" : ", ", device->def->type);
    }
    if (listed == 0) tp_strbuf_puts(out, "none");
}
