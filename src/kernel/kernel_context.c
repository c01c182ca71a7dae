/* SPDX-License-Identifier: Apache-2.0 */
#include "kernel/kernel_context.h"

#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "plugin/plugin_status.h"
#include "tensor/tensor.h"

int tp_op_attr_index(const tp_op_def_t *def, const char *name) {
    /* The same pointer first: an op's definition names its type attribute with the literal its
     * inputs' type_attr use ("T"), which the compiler merges, so that the lookups of every
     * dispatch (binding, kernel constraints) mostly skip strcmp. */
    for (size_t i = 0; i < def->num_attrs; i++)
        if (def->attrs[i].name == name) return (int)i;
    for (size_t i = 0; i < def->num_attrs; i++)
        if (strcmp(def->attrs[i].name, name) == 0) return (int)i;
    return -1;
}

static const char *attr_type_name(tp_attr_type_t type) {
    switch (type) {
    case TP_ATTR_INT: return "int";
    case TP_ATTR_FLOAT: return "float";
    case TP_ATTR_BOOL: return "bool";
    case TP_ATTR_DTYPE: return "dtype";
    case TP_ATTR_SHAPE: return "shape";
    case TP_ATTR_STRING: return "string";
    case TP_ATTR_INT_LIST: return "int list";
    case TP_ATTR_BYTES: return "bytes";
    }
    return "unknown";
}

/* A shape and an int list are both lists of integers to the caller. */
static bool is_list(tp_attr_type_t type) {
    return type == TP_ATTR_SHAPE || type == TP_ATTR_INT_LIST;
}

static bool same_attr_kind(tp_attr_type_t declared, tp_attr_type_t given) {
    return declared == given || (is_list(declared) && is_list(given));
}

/* Whether an attribute's value is a dtype exactly: a cast to tp_dtype_t alone would take
 * 0x100000001 for float32. */
static bool is_dtype_value(int64_t value) {
    return value >= 0 && value <= INT32_MAX && tp_dtype_size((tp_dtype_t)value) != 0;
}

static tp_status_t *take_given_attrs(tp_kernel_context_t *call, bool *set, const tp_attr_t *attrs,
                                     size_t num_attrs) {
    const tp_op_def_t *def = call->op->def;
    for (size_t i = 0; i < num_attrs; i++) {
        const tp_attr_t *given = &attrs[i];
        if (given->name == NULL)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute %zu has no name", def->name,
                                  i);
        int index = tp_op_attr_index(def, given->name);
        if (index < 0)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s has no attribute '%s'", def->name,
                                  given->name);
        const tp_op_attr_def_t *declared = &def->attrs[index];
        if (!same_attr_kind(declared->type, given->type))
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "%s: attribute '%s' is a %s, but a %s was given", def->name,
                                  given->name, attr_type_name(declared->type),
                                  attr_type_name(given->type));
        if (set[index])
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' is given twice",
                                  def->name, given->name);
        if (is_list(given->type) && given->count > 0 && given->list == NULL)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' has %d values but "
                                  "no list", def->name, given->name, (int)given->count);
        if (is_list(given->type) && given->count < 0)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' has a negative count",
                                  def->name, given->name);
        if (given->type == TP_ATTR_BYTES &&
            (given->count < 0 || (given->count > 0 && given->s == NULL)))
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' has %d bytes but no "
                                  "data", def->name, given->name, (int)given->count);
        if (given->type == TP_ATTR_STRING && given->s == NULL)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' is a NULL string",
                                  def->name, given->name);
        /* Checked here, not only with the defaults: binding an input's dtype names it. */
        if (given->type == TP_ATTR_DTYPE && !is_dtype_value(given->i))
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' is not a dtype "
                                  "(%lld)", def->name, given->name, (long long)given->i);
        call->attrs[index] = *given;
        call->attrs[index].name = declared->name;
        call->attrs[index].type = declared->type;
        set[index] = true;
    }
    return NULL;
}

/* Sets (or checks) a type attribute from an input's dtype. */
static tp_status_t *bind_type(tp_kernel_context_t *call, bool *set, const tp_op_arg_def_t *arg,
                              tp_dtype_t dtype, int32_t input_index) {
    const tp_op_def_t *def = call->op->def;
    if (arg->type_attr == NULL) {
        if (dtype != arg->dtype)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: input %d ('%s') must be %s, not %s",
                                  def->name, (int)input_index, arg->name,
                                  tp_dtype_name(arg->dtype), tp_dtype_name(dtype));
        return NULL;
    }
    int index = tp_op_attr_index(def, arg->type_attr);
    if (!set[index]) {
        call->attrs[index] = (tp_attr_t){.name = def->attrs[index].name, .type = TP_ATTR_DTYPE,
                                         .i = dtype};
        set[index] = true;
    } else if (call->attrs[index].i != dtype) {
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: input %d ('%s') is %s, but %s is %s from an earlier input or "
                              "attribute",
                              def->name, (int)input_index, arg->name, tp_dtype_name(dtype),
                              arg->type_attr, tp_dtype_name((tp_dtype_t)call->attrs[index].i));
    }
    return NULL;
}

static tp_status_t *wrong_input_count(const tp_op_def_t *def, size_t expected,
                                      size_t num_inputs) {
    return tp_status_make(TP_INVALID_ARGUMENT, "%s takes %zu inputs, but %zu were given",
                          def->name, expected, num_inputs);
}

static tp_status_t *bind_input(tp_kernel_context_t *call, bool *set, const tp_op_arg_def_t *arg,
                               int32_t input) {
    if (call->inputs[input] == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: input %d is NULL", call->op->def->name,
                              (int)input);
    return bind_type(call, set, arg, call->inputs[input]->dtype, input);
}

static tp_status_t *bind_inputs(tp_kernel_context_t *call, bool *set, size_t num_inputs) {
    const tp_op_def_t *def = call->op->def;
    size_t single = 0, lists = 0;
    for (size_t a = 0; a < def->num_inputs; a++) {
        if (def->inputs[a].number_attr != NULL)
            lists++;
        else
            single++;
    }
    if (lists == 0) { /* nearly every op: one tensor per input, bound in one pass */
        if (num_inputs != single) return wrong_input_count(def, single, num_inputs);
        for (int32_t input = 0; input < (int32_t)num_inputs; input++)
            TP_RETURN_IF_ERROR(bind_input(call, set, &def->inputs[input], input));
        return NULL;
    }
    /* A list's length comes from its attribute, or from the inputs left over. */
    for (size_t a = 0; a < def->num_inputs; a++) {
        const char *number = def->inputs[a].number_attr;
        if (number == NULL) continue;
        int index = tp_op_attr_index(def, number);
        if (!set[index] && lists == 1 && num_inputs >= single) {
            call->attrs[index] = (tp_attr_t){.name = def->attrs[index].name, .type = TP_ATTR_INT,
                                             .i = (int64_t)(num_inputs - single)};
            set[index] = true;
        }
        if (!set[index])
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' must be given",
                                  def->name, number);
        if (call->attrs[index].i < 1)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: '%s' needs at least one tensor",
                                  def->name, def->inputs[a].name);
    }
    size_t expected = 0;
    for (size_t a = 0; a < def->num_inputs; a++) {
        const char *number = def->inputs[a].number_attr;
        size_t count = number == NULL ? 1 : (size_t)call->attrs[tp_op_attr_index(def, number)].i;
        /* Saturated: the lengths of two lists can add up past SIZE_MAX, and a sum that wrapped
         * round to num_inputs would send the loop below past the inputs. */
        expected = count > SIZE_MAX - expected ? SIZE_MAX : expected + count;
    }
    if (expected != num_inputs) return wrong_input_count(def, expected, num_inputs);
    int32_t input = 0;
    for (size_t a = 0; a < def->num_inputs; a++) {
        const tp_op_arg_def_t *arg = &def->inputs[a];
        int64_t count = arg->number_attr == NULL
                            ? 1 : call->attrs[tp_op_attr_index(def, arg->number_attr)].i;
        for (int64_t k = 0; k < count; k++, input++)
            TP_RETURN_IF_ERROR(bind_input(call, set, arg, input));
    }
    return NULL;
}

static tp_status_t *apply_defaults_and_check(tp_kernel_context_t *call, bool *set) {
    const tp_op_def_t *def = call->op->def;
    for (size_t i = 0; i < def->num_attrs; i++) {
        const tp_op_attr_def_t *declared = &def->attrs[i];
        if (!set[i]) {
            if (!declared->has_default)
                return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' must be given",
                                      def->name, declared->name);
            call->attrs[i] = (tp_attr_t){.name = declared->name, .type = declared->type,
                                         .i = declared->default_int,
                                         .f = declared->default_float,
                                         .s = declared->default_string};
        }
        if (declared->type == TP_ATTR_DTYPE) {
            tp_dtype_t dtype = (tp_dtype_t)call->attrs[i].i;
            if (!is_dtype_value(call->attrs[i].i))
                return tp_status_make(TP_INVALID_ARGUMENT, "%s: attribute '%s' is not a dtype "
                                      "(%lld)", def->name, declared->name,
                                      (long long)call->attrs[i].i);
            bool allowed = declared->num_allowed_dtypes == 0;
            /* Stops at the match: the lists are long (Add allows a dozen) and run every op. */
            for (size_t k = 0; k < declared->num_allowed_dtypes && !allowed; k++)
                allowed = declared->allowed_dtypes[k] == dtype;
            if (!allowed)
                return tp_status_make(TP_INVALID_ARGUMENT, "%s does not support %s for '%s'",
                                      def->name, tp_dtype_name(dtype), declared->name);
        }
    }
    return NULL;
}

tp_status_t *tp_kernel_context_resolve(tp_kernel_context_t *call, const tp_op_t *op,
                                       tp_tensor_t *const *inputs, size_t num_inputs,
                                       const tp_attr_t *attrs, size_t num_attrs,
                                       size_t num_outputs) {
    const tp_op_def_t *def = op->def;
    /* Every attribute slot an op uses is written below (given, bound from an input, or
     * defaulted). */
    tp_kernel_context_begin(call, op, inputs);
    if (def->num_attrs > TP_MAX_OP_ATTRS)
        return tp_status_make(TP_UNIMPLEMENTED, "%s has %zu attributes; at most %d are "
                              "supported", def->name, def->num_attrs, TP_MAX_OP_ATTRS);
    if (def->num_outputs > TP_MAX_OP_OUTPUTS)
        return tp_status_make(TP_UNIMPLEMENTED, "%s has %zu outputs; at most %d are supported",
                              def->name, def->num_outputs, TP_MAX_OP_OUTPUTS);
    if (num_inputs > INT32_MAX)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: too many inputs", def->name);
    call->num_inputs = (int32_t)num_inputs;
    if (num_inputs > 0 && inputs == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %zu inputs but the array is NULL",
                              def->name, num_inputs);
    if (num_attrs > 0 && attrs == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %zu attributes but the array is NULL",
                              def->name, num_attrs);
    if (num_outputs != def->num_outputs)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s gives %zu outputs, but room for %zu was "
                              "given", def->name, def->num_outputs, num_outputs);
    bool set[TP_MAX_OP_ATTRS] = {false};
    TP_RETURN_IF_ERROR(take_given_attrs(call, set, attrs, num_attrs));
    TP_RETURN_IF_ERROR(bind_inputs(call, set, num_inputs));
    TP_RETURN_IF_ERROR(apply_defaults_and_check(call, set));
    call->num_outputs = (int32_t)def->num_outputs;
    for (size_t o = 0; o < def->num_outputs; o++) {
        const tp_op_arg_def_t *arg = &def->outputs[o];
        call->output_dtypes[o] =
            arg->type_attr == NULL
                ? arg->dtype
                : (tp_dtype_t)call->attrs[tp_op_attr_index(def, arg->type_attr)].i;
    }
    return NULL;
}

const tp_attr_t *tp_kernel_context_attr(const tp_kernel_context_t *call, const char *name) {
    int index = tp_op_attr_index(call->op->def, name);
    return index < 0 ? NULL : &call->attrs[index];
}

/* ---- Shape inference ----------------------------------------------------------------------- */

tp_status_t *tp_kernel_context_infer_shapes(tp_kernel_context_t *call) {
    const tp_op_def_t *def = call->op->def;
    call->inferring = true;
    tp_status_t *error = NULL;
    if (call->op->infer != NULL) {
        error = call->op->infer(call);
    } else if (def->infer_shape != NULL) {
        tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
        def->infer_shape(def->op_state, call, &status);
        error = tp_plugin_status_check(&status, "shape inference of %s", def->name);
    } else {
        for (int32_t o = 0; o < call->num_outputs; o++) {
            if (call->num_inputs == 0) {
                error = tp_status_make(TP_INVALID_ARGUMENT, "%s has no inputs and no shape "
                                       "function", def->name);
                break;
            }
            call->output_shapes[o] = call->inputs[0]->shape;
            call->output_shape_set[o] = true;
        }
    }
    call->inferring = false;
    for (int32_t o = 0; error == NULL && o < call->num_outputs; o++)
        if (!call->output_shape_set[o])
            error = tp_status_make(TP_INTERNAL, "shape inference of %s set no shape for output "
                                   "%d", def->name, (int)o);
    return error;
}

/* ---- The kernel_* host functions ------------------------------------------------------------- */

static const char *kernel_op_name(const tp_kernel_context_t *call) { return call->op->def->name; }

static int32_t kernel_num_inputs(const tp_kernel_context_t *call) { return call->num_inputs; }

static int32_t kernel_num_outputs(const tp_kernel_context_t *call) { return call->num_outputs; }

static void fill_view(tp_tensor_view_t *out, const tp_tensor_t *tensor, bool with_memory) {
    size_t size = out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
    tp_tensor_view_t view = {
        .struct_size = size,
        .dtype = tensor->dtype,
        .rank = tensor->shape.rank,
        .dims = tensor->shape.dims,
        .num_elements = tensor->num_elements,
        .byte_size = tensor->byte_size,
        .mem = with_memory ? tensor->mem : NULL,
        .offset = with_memory ? tensor->offset : 0,
    };
    if (size == sizeof *out)
        *out = view; /* a view as this runtime knows it: a copy of fixed size, inlined */
    else
        memcpy(out, &view, size);
}

static bool check_view(const tp_kernel_context_t *call, tp_tensor_view_t *out, int32_t index,
                       int32_t count, const char *what, tp_plugin_status_t *status) {
    if (out == NULL || out->struct_size < offsetof(tp_tensor_view_t, mem)) {
        tp_plugin_status_set(status, TP_INVALID_ARGUMENT, "%s: %s: set the view's struct_size",
                             call->op->def->name, what);
        return false;
    }
    if (index < 0 || index >= count) {
        tp_plugin_status_set(status, TP_OUT_OF_RANGE, "%s: %s %d, but there are %d",
                             call->op->def->name, what, (int)index, (int)count);
        return false;
    }
    if (call->refused_views != NULL) {
        tp_plugin_status_set(status, TP_UNAVAILABLE, "%s", call->refused_views);
        return false;
    }
    return true;
}

static void kernel_input(const tp_kernel_context_t *call, int32_t index, tp_tensor_view_t *out,
                         tp_plugin_status_t *status) {
    if (!check_view(call, out, index, call->num_inputs, "input", status)) return;
    fill_view(out, call->inputs[index], !call->inferring && !call->making_instance);
}

static void kernel_output(const tp_kernel_context_t *call, int32_t index, tp_tensor_view_t *out,
                          tp_plugin_status_t *status) {
    if (!check_view(call, out, index, call->num_outputs, "output", status)) return;
    if (call->inferring || call->outputs[index] == NULL) {
        tp_plugin_status_set(status, TP_FAILED_PRECONDITION,
                             "%s: outputs exist only once shape inference is done",
                             call->op->def->name);
        return;
    }
    fill_view(out, call->outputs[index], !call->making_instance);
}

static void kernel_set_output_shape(tp_kernel_context_t *call, int32_t index, int32_t rank,
                                    const int64_t *dims, tp_plugin_status_t *status) {
    const char *name = call->op->def->name;
    if (!call->inferring) {
        tp_plugin_status_set(status, TP_FAILED_PRECONDITION,
                             "%s: output shapes are set only during shape inference", name);
        return;
    }
    if (index < 0 || index >= call->num_outputs) {
        tp_plugin_status_set(status, TP_OUT_OF_RANGE, "%s: output %d, but there are %d", name,
                             (int)index, (int)call->num_outputs);
        return;
    }
    if (rank < 0 || rank > TP_MAX_RANK || (rank > 0 && dims == NULL)) {
        tp_plugin_status_set(status, TP_INVALID_ARGUMENT, "%s: output rank %d is invalid", name,
                             (int)rank);
        return;
    }
    tp_shape_t shape = {.rank = rank};
    for (int32_t d = 0; d < rank; d++) shape.dims[d] = dims[d];
    int64_t count;
    tp_status_t *error = tp_shape_num_elements(&shape, &count);
    if (error != NULL) {
        tp_plugin_status_set(status, tp_status_code(error), "%s: output %d: %s", name,
                             (int)index, tp_status_message(error));
        tp_status_free(error);
        return;
    }
    call->output_shapes[index] = shape;
    call->output_shape_set[index] = true;
}

static void *kernel_device(const tp_kernel_context_t *call) {
    return call->device == NULL ? NULL : call->device->handle;
}

static void *kernel_stream(const tp_kernel_context_t *call) { return call->stream; }

/* The attribute `name` if it has the type wanted; otherwise a status naming the problem. */
static const tp_attr_t *typed_attr(const tp_kernel_context_t *call, const char *name,
                                   bool (*accepts)(tp_attr_type_t), const char *wanted,
                                   tp_plugin_status_t *status) {
    const tp_attr_t *attr = name == NULL ? NULL : tp_kernel_context_attr(call, name);
    if (attr == NULL) {
        tp_plugin_status_set(status, TP_NOT_FOUND, "%s has no attribute '%s'",
                             call->op->def->name, name == NULL ? "(null)" : name);
        return NULL;
    }
    if (!accepts(attr->type)) {
        tp_plugin_status_set(status, TP_INVALID_ARGUMENT, "%s: attribute '%s' is a %s, not a %s",
                             call->op->def->name, name, attr_type_name(attr->type), wanted);
        return NULL;
    }
    return attr;
}

static bool accepts_int(tp_attr_type_t t) { return t == TP_ATTR_INT; }
static bool accepts_float(tp_attr_type_t t) { return t == TP_ATTR_FLOAT; }
static bool accepts_bool(tp_attr_type_t t) { return t == TP_ATTR_BOOL; }
static bool accepts_dtype(tp_attr_type_t t) { return t == TP_ATTR_DTYPE; }
static bool accepts_string(tp_attr_type_t t) { return t == TP_ATTR_STRING; }
static bool accepts_bytes(tp_attr_type_t t) { return t == TP_ATTR_BYTES; }

static void kernel_attr_int(const tp_kernel_context_t *call, const char *name, int64_t *out,
                            tp_plugin_status_t *status) {
    const tp_attr_t *attr = typed_attr(call, name, accepts_int, "int", status);
    if (attr != NULL) *out = attr->i;
}

static void kernel_attr_float(const tp_kernel_context_t *call, const char *name, double *out,
                              tp_plugin_status_t *status) {
    const tp_attr_t *attr = typed_attr(call, name, accepts_float, "float", status);
    if (attr != NULL) *out = attr->f;
}

static void kernel_attr_bool(const tp_kernel_context_t *call, const char *name, int32_t *out,
                             tp_plugin_status_t *status) {
    const tp_attr_t *attr = typed_attr(call, name, accepts_bool, "bool", status);
    if (attr != NULL) *out = attr->i != 0;
}

static void kernel_attr_dtype(const tp_kernel_context_t *call, const char *name, tp_dtype_t *out,
                              tp_plugin_status_t *status) {
    const tp_attr_t *attr = typed_attr(call, name, accepts_dtype, "dtype", status);
    if (attr != NULL) *out = (tp_dtype_t)attr->i;
}

static void kernel_attr_int_list(const tp_kernel_context_t *call, const char *name,
                                 const int64_t **out_values, int32_t *out_count,
                                 tp_plugin_status_t *status) {
    const tp_attr_t *attr = typed_attr(call, name, is_list, "int list", status);
    if (attr == NULL) return;
    *out_values = attr->list;
    *out_count = attr->count;
}

static void kernel_attr_string(const tp_kernel_context_t *call, const char *name,
                               const char **out, tp_plugin_status_t *status) {
    const tp_attr_t *attr = typed_attr(call, name, accepts_string, "string", status);
    if (attr != NULL) *out = attr->s != NULL ? attr->s : "";
}

static void kernel_attr_bytes(const tp_kernel_context_t *call, const char *name,
                              const void **out_bytes, uint64_t *out_size,
                              tp_plugin_status_t *status) {
    const tp_attr_t *attr = typed_attr(call, name, accepts_bytes, "bytes", status);
    if (attr == NULL) return;
    *out_bytes = attr->s;
    *out_size = (uint64_t)attr->count;
}

void tp_kernel_context_fill_host_api(tp_host_api_t *api) {
    api->kernel_op_name = kernel_op_name;
    api->kernel_num_inputs = kernel_num_inputs;
    api->kernel_num_outputs = kernel_num_outputs;
    api->kernel_input = kernel_input;
    api->kernel_output = kernel_output;
    api->kernel_set_output_shape = kernel_set_output_shape;
    api->kernel_device = kernel_device;
    api->kernel_stream = kernel_stream;
    api->kernel_attr_int = kernel_attr_int;
    api->kernel_attr_float = kernel_attr_float;
    api->kernel_attr_bool = kernel_attr_bool;
    api->kernel_attr_dtype = kernel_attr_dtype;
    api->kernel_attr_int_list = kernel_attr_int_list;
    api->kernel_attr_string = kernel_attr_string;
    api->kernel_attr_bytes = kernel_attr_bytes;
}
