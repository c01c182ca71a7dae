/* SPDX-License-Identifier: Apache-2.0 */
/* The checks of the plug-in as a whole: that it loads, what it registered, and the plan of the
 * device and kernel checks that follow from its registrations. */
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "conformance/check.h"

tp_status_t *tp_check_load(tp_check_t *check, const char *argument) {
    (void)argument;
    tp_check_name(check, "load");
    const tp_plugin_record_t *record = check->plugin->record;
    if (check->plugin->refusal != NULL)
        return tp_check_failure("refused: %s", check->plugin->refusal);
    uint32_t major, minor;
    tp_abi_version(&major, &minor);
    tp_check_detail(check, "%s %s, plug-in ABI %u.%u (this runtime speaks %u.%u)", record->name,
                    record->version, (unsigned)record->abi_major, (unsigned)record->abi_minor,
                    (unsigned)major, (unsigned)minor);
    return NULL;
}

const tp_kernel_entry_t *tp_check_kernel_entry(const tp_check_t *check, size_t index) {
    const tp_device_registry_t *registry = &check->context->registry;
    const tp_plugin_record_t *record = check->plugin->record;
    for (size_t k = 0; k < registry->num_kernels; k++) {
        const tp_kernel_entry_t *entry = &registry->kernels[k];
        bool own = entry->kernel >= record->kernels &&
                   entry->kernel < record->kernels + record->num_kernels;
        if (own && index-- == 0) return entry;
    }
    return NULL;
}

static bool type_selected(const tp_check_t *check, const char *type) {
    return check->options->device_type == NULL ||
           strcasecmp(check->options->device_type, type) == 0;
}

/* The dtypes of `list` that the kernel's plug-in knows (plugin.h: an older plug-in is never
 * handed a later dtype), at most TP_CHECK_MAX_DTYPES. */
static size_t known_dtypes(const tp_kernel_entry_t *entry, const tp_dtype_t *list, size_t count,
                           tp_dtype_t *out) {
    size_t kept = 0;
    for (size_t i = 0; i < count && kept < TP_CHECK_MAX_DTYPES; i++)
        if (list[i] <= entry->newest_dtype) out[kept++] = list[i];
    return kept;
}

size_t tp_check_claimed_dtypes(const tp_kernel_entry_t *entry, tp_dtype_t *out) {
    const tp_op_def_t *op = entry->op;
    for (size_t a = 0; a < op->num_attrs; a++) {
        if (op->attrs[a].type != TP_ATTR_DTYPE) continue;
        const tp_kernel_def_t *kernel = entry->kernel;
        for (size_t c = 0; c < kernel->num_constraints; c++)
            if (strcmp(kernel->constraints[c].attr, op->attrs[a].name) == 0)
                return known_dtypes(entry, kernel->constraints[c].dtypes,
                                    kernel->constraints[c].num_dtypes, out);
        if (op->attrs[a].allowed_dtypes != NULL)
            return known_dtypes(entry, op->attrs[a].allowed_dtypes,
                                op->attrs[a].num_allowed_dtypes, out);
        break;
    }
    /* An op without type attributes runs its fixed dtypes: one run, named after the first. */
    if (op->num_inputs > 0 && op->inputs[0].type_attr == NULL) {
        out[0] = op->inputs[0].dtype;
        return 1;
    }
    static const tp_dtype_t every[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32,   TP_INT64, TP_UINT8,
                                       TP_BOOL,    TP_FLOAT16, TP_BFLOAT16, TP_INT8, TP_INT16,
                                       TP_UINT16,  TP_UINT32,  TP_UINT64};
    return known_dtypes(entry, every, sizeof every / sizeof *every, out);
}

static void plan_device_checks(tp_check_t *check, const char *type) {
    static const char *const keys[] = {"allocate",     "empty-tensor", "allocate-too-much",
                                       "round-trips",  "device-copy",  "peer-copy",
                                       "stream-order", "events",       "host-waits"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) tp_check_plan(check, keys[k], type);
}

static void plan_kernel_checks(tp_check_t *check, size_t index,
                               const tp_kernel_entry_t *entry) {
    tp_dtype_t dtypes[TP_CHECK_MAX_DTYPES];
    size_t count = tp_check_claimed_dtypes(entry, dtypes);
    char argument[64];
    for (size_t d = 0; d < count; d++) {
        snprintf(argument, sizeof argument, "%zu %s", index, tp_dtype_name(dtypes[d]));
        tp_check_plan(check, "kernel", argument);
    }
    snprintf(argument, sizeof argument, "%zu %s", index, tp_dtype_name(dtypes[0]));
    tp_check_plan(check, "kernel-errors", argument);
    tp_check_plan(check, "kernel-memory", argument);
}

/* "APU (2 devices: Awesome Processing Unit (simulated) by tensorplug, 1024 MiB each)" */
static tp_status_t *describe_type(tp_check_t *check, const tp_device_type_def_t *def,
                                  tp_strbuf_t *text) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    int32_t count = def->device_count(def->type_state, &status);
    TP_RETURN_IF_ERROR(tp_plugin_status_check(&status, "device_count of %s", def->type));
    const tp_device_registry_t *registry = &check->context->registry;
    int32_t opened = 0;
    const tp_physical_device_t *first = NULL;
    for (size_t d = 0; d < registry->num_physical_devices; d++) {
        const tp_physical_device_t *device = registry->physical_devices[d];
        if (device->def != def) continue;
        if (first == NULL) first = device;
        opened++;
        if (device->hardware_name[0] == '\0' || device->vendor[0] == '\0')
            return tp_check_failure("%s gives no hardware name or no vendor", device->name);
        uint64_t free_bytes = 0, total_bytes = 0;
        if (def->memory_usage != NULL) {
            def->memory_usage(device->handle, &free_bytes, &total_bytes);
            if (free_bytes > total_bytes)
                return tp_check_failure("%s: memory_usage says %llu bytes free of %llu",
                                        device->name, (unsigned long long)free_bytes,
                                        (unsigned long long)total_bytes);
        }
    }
    if (count != opened)
        return tp_check_failure("device_count of %s says %d, but %d opened", def->type,
                                (int)count, (int)opened);
    tp_strbuf_printf(text, "%s (%d device%s", def->type, (int)count, count == 1 ? "" : "s");
    if (first != NULL)
        tp_strbuf_printf(text, ": %s by %s, %llu MiB", first->hardware_name, first->vendor,
                          (unsigned long long)(first->memory_bytes >> 20));
    tp_strbuf_puts(text, ")");
    return NULL;
}

tp_status_t *tp_check_registrations(tp_check_t *check, const char *argument) {
    (void)argument;
    tp_check_name(check, "registrations");
    const tp_plugin_record_t *record = check->plugin->record;
    if (check->plugin->refusal != NULL) {
        tp_check_not_applicable(check, "the plug-in did not load");
        return NULL;
    }
    if (record->num_device_types == 0 && record->num_ops == 0 && record->num_kernels == 0 &&
        !record->has_graph_pass)
        return tp_check_failure("the plug-in registered nothing");
    tp_strbuf_t text = TP_STRBUF_INIT;
    tp_status_t *error = NULL;
    bool selected_found = check->options->device_type == NULL;
    for (size_t t = 0; t < record->num_device_types && error == NULL; t++) {
        const tp_device_type_def_t *def = &record->device_types[t];
        tp_strbuf_puts(&text, t == 0 ? "device type " : ", device type ");
        error = describe_type(check, def, &text);
        if (error == NULL && type_selected(check, def->type)) {
            selected_found = true;
            plan_device_checks(check, def->type);
        }
    }
    size_t kernels = 0;
    for (const tp_kernel_entry_t *entry; error == NULL &&
                                         (entry = tp_check_kernel_entry(check, kernels)) != NULL;
         kernels++)
        if (type_selected(check, entry->device_type->type))
            plan_kernel_checks(check, kernels, entry);
    if (error == NULL && !selected_found)
        error = tp_check_failure("the plug-in registers no device type %s",
                                 check->options->device_type);
    for (size_t t = 0; t < record->num_device_types && error == NULL; t++)
        if (type_selected(check, record->device_types[t].type))
            tp_check_plan(check, "two-threads", record->device_types[t].type);
    if (error == NULL)
        tp_check_detail(check, "%s%s%zu op%s, %zu kernel%s%s%s", tp_strbuf_text(&text),
                        text.length > 0 ? "; " : "", record->num_ops,
                        record->num_ops == 1 ? "" : "s", kernels, kernels == 1 ? "" : "s",
                        record->has_graph_pass ? ", graph pass " : "",
                        record->has_graph_pass ? record->graph_pass.name : "");
    tp_strbuf_free(&text);
    return error;
}
