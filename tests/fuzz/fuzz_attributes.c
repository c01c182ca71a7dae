/* SPDX-License-Identifier: Apache-2.0 */
/* Attributes, both ways the core decodes them. An op definition a plug-in registers (its
 * attributes' types, defaults and allowed dtypes, and the arguments that take their dtype or
 * list length from them) is built from the input and goes through the registrar's checks; an
 * accepted one, or now and then a built-in op, is then called with attribute values of any
 * name, type and count, which tp_kernel_context_resolve checks and completes. The op's shape
 * function reads every attribute back through the plug-in ABI's typed accessors, as a
 * plug-in's does: the right accessor gives the resolved value, any other refuses. */
#include "fuzz_ops.h"

#include "base/arena.h"
#include "plugin/plugin_record.h"
#include "plugin/plugin_status.h"

enum { MAX_DEF_ATTRS = 18, MAX_DEF_ARGS = 4, MAX_DEF_OUTPUTS = 5 };

/* An op definition as a plug-in would hand it over, with what it points at. */
typedef struct {
    tp_op_def_t def;
    tp_op_attr_def_t attrs[MAX_DEF_ATTRS];
    tp_op_arg_def_t inputs[MAX_DEF_ARGS], outputs[MAX_DEF_OUTPUTS];
    tp_dtype_t allowed[MAX_DEF_ATTRS][3];
} op_def_t;

static const tp_host_api_t *host;
static const tp_op_def_t *to_register;
/* Which wrong output shape the shape function tries first, chosen per input (0: none). */
static uint8_t misuse;

static const char *any_name(fuzz_input_t *in) {
    size_t index = fuzz_below(in, FUZZ_NUM_NAMES + 1);
    return index < FUZZ_NUM_NAMES ? fuzz_names[index] : NULL;
}

/* Each value is read in a statement of its own: the order in which an initializer list's
 * expressions are evaluated is unspecified, and the input must mean the same to every
 * compiler. */
static void make_attr_def(fuzz_input_t *in, op_def_t *op, size_t a) {
    tp_op_attr_def_t *attr = &op->attrs[a];
    uint8_t shape = fuzz_byte(in);
    *attr = (tp_op_attr_def_t){.struct_size = sizeof *attr};
    attr->name = any_name(in);
    attr->type = (tp_attr_type_t)(shape >= 0xf8 ? fuzz_below(in, 10) : 1 + shape % 8);
    attr->has_default = fuzz_bool(in);
    attr->default_int = attr->type == TP_ATTR_DTYPE ? (int64_t)fuzz_dtype(in) : fuzz_int(in);
    attr->default_float = fuzz_double(in);
    attr->default_string = fuzz_bool(in) ? "default" : NULL;
    attr->num_allowed_dtypes = fuzz_below(in, 4);
    for (size_t k = 0; k < attr->num_allowed_dtypes; k++)
        op->allowed[a][k] = fuzz_byte(in) >= 0xf8 ? (tp_dtype_t)fuzz_int(in) : fuzz_dtype(in);
    /* A count without its array, which the registrar must refuse. */
    attr->allowed_dtypes = fuzz_byte(in) >= 0xf8 ? NULL : op->allowed[a];
}

static void make_arg_def(fuzz_input_t *in, tp_op_arg_def_t *arg, const char *name) {
    uint8_t how = fuzz_byte(in);
    *arg = (tp_op_arg_def_t){.struct_size = sizeof *arg, .name = name};
    if (how & 1)
        arg->type_attr = any_name(in);
    else
        arg->dtype = how >= 0xf0 ? (tp_dtype_t)fuzz_int(in) : fuzz_dtype(in);
    if (how & 2) arg->dtype = fuzz_dtype(in); /* both: refused */
    if (how & 4) arg->number_attr = any_name(in);
}

static void infer_shape(void *op_state, tp_kernel_context_t *context, tp_plugin_status_t *status);

static void make_op_def(fuzz_input_t *in, op_def_t *op) {
    static const char *const arg_names[] = {"a", "b", "c", "d", "e"};
    op->def = (tp_op_def_t){.struct_size = sizeof op->def, .inputs = op->inputs,
                            .outputs = op->outputs, .attrs = op->attrs, .op_state = op};
    op->def.name = fuzz_byte(in) >= 0xf8 ? "notCamel" : "FuzzOp";
    op->def.num_inputs = fuzz_below(in, MAX_DEF_ARGS + 1);
    op->def.num_outputs = fuzz_below(in, MAX_DEF_OUTPUTS + 1);
    uint8_t attrs = fuzz_byte(in);
    op->def.num_attrs = attrs >= 0xf8 ? MAX_DEF_ATTRS : attrs % 6;
    op->def.infer_shape = fuzz_bool(in) ? infer_shape : NULL;
    for (size_t a = 0; a < op->def.num_attrs; a++) make_attr_def(in, op, a);
    for (size_t i = 0; i < op->def.num_inputs; i++) make_arg_def(in, &op->inputs[i], arg_names[i]);
    for (size_t o = 0; o < op->def.num_outputs; o++)
        make_arg_def(in, &op->outputs[o], arg_names[o]);
}

static void register_fuzz_op(const tp_host_api_t *api, tp_registrar_t *registrar,
                             tp_plugin_status_t *status) {
    host = api;
    api->register_op(registrar, to_register, status);
}

/* ---- Reading attributes back, as a plug-in does ----------------------------------------- */

/* Reads `attr` with the accessor for `as`; true if the accessor accepted it. */
static bool read_attr(const tp_kernel_context_t *call, const char *name, tp_attr_type_t as,
                      const tp_attr_t *expected) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    int64_t i = 0;
    double f = 0;
    int32_t b = 0, count = 0;
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    const int64_t *list = NULL;
    const char *s = NULL;
    const void *bytes = NULL;
    uint64_t size = 0;
    bool same = true;
    switch (as) {
    case TP_ATTR_INT:
        host->kernel_attr_int(call, name, &i, &status);
        same = i == expected->i;
        break;
    case TP_ATTR_FLOAT:
        host->kernel_attr_float(call, name, &f, &status);
        same = memcmp(&f, &expected->f, sizeof f) == 0;
        break;
    case TP_ATTR_BOOL:
        host->kernel_attr_bool(call, name, &b, &status);
        same = b == (expected->i != 0);
        break;
    case TP_ATTR_DTYPE:
        host->kernel_attr_dtype(call, name, &dtype, &status);
        same = (int64_t)dtype == expected->i;
        break;
    case TP_ATTR_SHAPE:
    case TP_ATTR_INT_LIST:
        host->kernel_attr_int_list(call, name, &list, &count, &status);
        same = count == expected->count && list == expected->list;
        break;
    case TP_ATTR_STRING:
        host->kernel_attr_string(call, name, &s, &status);
        same = s != NULL && strcmp(s, expected->s != NULL ? expected->s : "") == 0;
        break;
    case TP_ATTR_BYTES:
        host->kernel_attr_bytes(call, name, &bytes, &size, &status);
        same = size == (uint64_t)expected->count && bytes == expected->s;
        break;
    }
    if (status.code != TP_OK) return false;
    if (!same) fuzz_fail(name, "an accessor gave another value than the call resolved");
    return true;
}

static bool accessor_fits(tp_attr_type_t declared, tp_attr_type_t as) {
    bool list = as == TP_ATTR_SHAPE || as == TP_ATTR_INT_LIST;
    return declared == as || (list && (declared == TP_ATTR_SHAPE || declared == TP_ATTR_INT_LIST));
}

static void check_accessors(const tp_kernel_context_t *call) {
    const tp_op_def_t *def = call->op->def;
    for (size_t a = 0; a < def->num_attrs; a++) {
        const tp_attr_t *resolved = &call->attrs[a];
        for (int as = TP_ATTR_INT; as <= TP_ATTR_BYTES; as++)
            if (read_attr(call, def->attrs[a].name, (tp_attr_type_t)as, resolved) !=
                accessor_fits(def->attrs[a].type, (tp_attr_type_t)as))
                fuzz_fail(def->attrs[a].name, "an accessor of the wrong type answered");
    }
    tp_attr_t none = {0};
    if (read_attr(call, "NoSuchAttribute", TP_ATTR_INT, &none) ||
        read_attr(call, NULL, TP_ATTR_INT, &none))
        fuzz_fail(def->name, "an attribute the op does not have was read");
}

/* A shape function's mistakes: an output that does not exist, a rank out of range, no
 * dimensions, a negative dimension, more elements than 64 bits count. Each must be refused,
 * and set nothing. */
static void try_wrong_shape(tp_kernel_context_t *context, int32_t outputs) {
    static const int64_t negative[] = {2, -1}, huge[] = {INT64_MAX, 2};
    tp_plugin_status_t refused = TP_PLUGIN_STATUS_INIT;
    switch (misuse % 7) {
    case 0: return;
    case 1: host->kernel_set_output_shape(context, outputs, 0, NULL, &refused); break;
    case 2: host->kernel_set_output_shape(context, -1, 0, NULL, &refused); break;
    case 3: host->kernel_set_output_shape(context, 0, TP_MAX_RANK + 1, huge, &refused); break;
    case 4: host->kernel_set_output_shape(context, 0, 2, NULL, &refused); break;
    case 5: host->kernel_set_output_shape(context, 0, 2, negative, &refused); break;
    default: host->kernel_set_output_shape(context, 0, 2, huge, &refused); break;
    }
    if (refused.code == TP_OK) fuzz_fail(host->kernel_op_name(context), "a wrong shape was set");
    if (outputs > 0 && context->output_shape_set[0] && misuse % 7 > 2)
        fuzz_fail(host->kernel_op_name(context), "a refused shape was kept");
}

/* What a plug-in's shape function does: read the attributes, look at the inputs (views without
 * memory), try the outputs (refused until inference is done), then set each output's shape
 * from an input, or a scalar. */
static void infer_shape(void *op_state, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)op_state;
    check_accessors(context);
    int32_t inputs = host->kernel_num_inputs(context), outputs = host->kernel_num_outputs(context);
    tp_tensor_view_t view = {.struct_size = sizeof view};
    tp_plugin_status_t refused = TP_PLUGIN_STATUS_INIT;
    host->kernel_output(context, 0, &view, &refused);
    if (refused.code == TP_OK) fuzz_fail(host->kernel_op_name(context), "output during inference");
    try_wrong_shape(context, outputs);
    for (int32_t o = 0; o < outputs; o++) {
        int32_t rank = 0;
        const int64_t *dims = NULL;
        if (inputs > 0) {
            host->kernel_input(context, o % inputs, &view, status);
            if (status->code != TP_OK) return;
            if (view.mem != NULL) fuzz_fail(host->kernel_op_name(context), "memory in inference");
            rank = view.rank;
            dims = view.dims;
        }
        host->kernel_set_output_shape(context, o, rank, dims, status);
        if (status->code != TP_OK) return;
    }
}

/* ---- The checks after a call resolved --------------------------------------------------- */

static void check_resolved(const tp_kernel_context_t *call) {
    const tp_op_def_t *def = call->op->def;
    for (size_t a = 0; a < def->num_attrs; a++) {
        const tp_attr_t *attr = &call->attrs[a];
        const tp_op_attr_def_t *declared = &def->attrs[a];
        if (attr->name != declared->name || attr->type != declared->type)
            fuzz_fail(declared->name, "resolved under another name or type");
        bool list = attr->type == TP_ATTR_SHAPE || attr->type == TP_ATTR_INT_LIST;
        if ((list || attr->type == TP_ATTR_BYTES) &&
            (attr->count < 0 || (attr->count > 0 && (list ? (const void *)attr->list
                                                           : (const void *)attr->s) == NULL)))
            fuzz_fail(declared->name, "resolved with a count its values do not have");
        if (attr->type != TP_ATTR_DTYPE) continue;
        bool allowed = declared->num_allowed_dtypes == 0;
        for (size_t k = 0; k < declared->num_allowed_dtypes; k++)
            allowed |= declared->allowed_dtypes[k] == (tp_dtype_t)attr->i;
        if (tp_dtype_size((tp_dtype_t)attr->i) == 0 || !allowed)
            fuzz_fail(declared->name, "resolved to a dtype the op does not allow");
    }
    for (int32_t o = 0; o < call->num_outputs; o++)
        if (tp_dtype_size(call->output_dtypes[o]) == 0) fuzz_fail(def->name, "output dtype");
}

static void call_op(fuzz_input_t *in, const tp_op_t *op) {
    fuzz_call_t call_data = {0};
    if (!fuzz_make_inputs(in, op->def, &call_data)) return;
    fuzz_make_attrs(in, op->def, &call_data);
    misuse = fuzz_byte(in);
    tp_kernel_context_t call;
    tp_status_t *status = tp_kernel_context_resolve(&call, op, call_data.inputs,
                                                    call_data.num_inputs, call_data.attrs,
                                                    call_data.num_attrs, op->def->num_outputs);
    if (fuzz_check_status(status)) {
        fuzz_say(op->def->name, "resolved");
        check_resolved(&call);
        check_accessors(&call);
        char quoted[1024];
        fuzz_check_quoting(tp_kernel_context_infer_shapes(&call),
                           fuzz_call_strings(&call_data, quoted, sizeof quoted));
    }
    fuzz_free_call(&call_data);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    host = tp_host_api();
    fuzz_quiet_log();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input_t in = {data, size};
    if (fuzz_byte(&in) < 0x40) {
        size_t count;
        const tp_op_t *ops = tp_builtin_ops(&count);
        call_op(&in, &ops[fuzz_below(&in, count)]);
        return 0;
    }
    op_def_t op_def;
    make_op_def(&in, &op_def);
    to_register = &op_def.def;
    static const tp_plugin_descriptor_t descriptor = {
        sizeof descriptor, TP_ABI_MAJOR, TP_ABI_MINOR, "fuzz", "0.1.0", register_fuzz_op};
    tp_plugin_record_t record = {.arena = TP_ARENA_INIT, .path = "fuzz"};
    tp_plugin_record_init_from_descriptor(&record, &descriptor);
    fuzz_say("registration", record.refusal != NULL ? record.refusal : "accepted");
    if (record.refusal == NULL) {
        if (record.num_ops != 1) fuzz_fail("FuzzOp", "accepted but not registered");
        tp_op_t op = {&record.ops[0], NULL, &record};
        call_op(&in, &op);
    } else if (record.num_ops != 0) {
        fuzz_fail("FuzzOp", "refused but registered");
    }
    free(record.ops);
    free(record.device_types);
    free(record.kernels);
    tp_arena_free(&record.arena);
    return 0;
}
