/* SPDX-License-Identifier: Apache-2.0 */
/* The host function table, and the checking and copying of what a plug-in registers. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <pthread.h>

#include "base/dtype.h"
#include "base/log.h"
#include "graph/passes.h"
#include "kernel/kernel_context.h"
#include "tensorplug/tensorplug.h"
#include "plugin/abi_sizes.h"
#include "plugin/op_names.h"
#include "plugin/plugin_record.h"
#include "plugin/plugin_status.h"

/* ---- Names ----------------------------------------------------------------------------------- */

bool tp_is_valid_device_type_name(const char *name) {
    if (name == NULL || !isalpha((unsigned char)name[0])) return false;
    size_t length = 0;
    for (; name[length] != '\0'; length++)
        if (!isalnum((unsigned char)name[length]) && name[length] != '_') return false;
    return length <= 31;
}

/* Op names are CamelCase: an upper-case letter, then letters and digits. */
static bool is_valid_op_name(const char *name) {
    if (name == NULL || !isupper((unsigned char)name[0])) return false;
    size_t length = 0;
    for (; name[length] != '\0'; length++)
        if (!isalnum((unsigned char)name[length])) return false;
    return length <= 127;
}

/* Argument and attribute names: a letter, then letters, digits and '_'. */
static bool is_valid_identifier(const char *name) {
    if (name == NULL || !isalpha((unsigned char)name[0])) return false;
    size_t length = 0;
    for (; name[length] != '\0'; length++)
        if (!isalnum((unsigned char)name[length]) && name[length] != '_') return false;
    return length <= 63;
}

/* A dtype the plug-in may name: one of the runtime's that its ABI version has, since the
 * number of a later dtype meant nothing when the plug-in was built (plugin.h). */
static bool is_valid_dtype(const tp_registrar_t *registrar, tp_dtype_t dtype) {
    return tp_dtype_size(dtype) != 0 &&
           dtype <= tp_dtype_newest_of_abi(registrar->record->abi_minor);
}

/* The dtypes of ABI 1.6 and before, which a dtype attribute of an op from a plug-in of that
 * age allows when it says "any": the plug-in's shape function and kernels cannot know more. */
static const tp_dtype_t dtypes_before_1_7[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32,
                                               TP_INT64,   TP_UINT8,   TP_BOOL};

/* ---- Refusals -------------------------------------------------------------------------------- */

/* Reports a refused registration to the plug-in and remembers the first one, so that a plug-in
 * that ignores the refusal is still skipped as a whole. */
static void refuse_registration(tp_registrar_t *registrar, tp_plugin_status_t *status,
                                tp_code_t code, const char *format, ...) TP_PRINTF_LIKE(4, 5);

static void refuse_registration(tp_registrar_t *registrar, tp_plugin_status_t *status,
                                tp_code_t code, const char *format, ...) {
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    tp_plugin_status_set(status, code, "%s", message);
    if (registrar != NULL && registrar->first_error_code == TP_OK) {
        registrar->first_error_code = code;
        snprintf(registrar->first_error, sizeof registrar->first_error, "%s", message);
    }
}

/* Checks the common preconditions of every register_* call. */
static bool registration_open(tp_registrar_t *registrar, const void *def, const char *what,
                              tp_plugin_status_t *status) {
    if (registrar == NULL) {
        tp_plugin_status_set(status, TP_INVALID_ARGUMENT, "%s: registrar is NULL", what);
        return false;
    }
    if (!registrar->accepting) {
        refuse_registration(registrar, status, TP_FAILED_PRECONDITION,
                            "%s called outside the plug-in's init", what);
        return false;
    }
    if (def == NULL) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT, "%s: definition is NULL",
                            what);
        return false;
    }
    return true;
}

/* Refuses a struct_size below ABI 1.0's or above the cap (abi_sizes.h), before any field past
 * it is read. */
static bool check_struct_size(tp_registrar_t *registrar, tp_plugin_status_t *status,
                              const char *what, size_t given_size, size_t min_size) {
    if (given_size < min_size) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "%s.struct_size is %zu, smaller than the %zu bytes of ABI 1.0", what,
                            given_size, min_size);
        return false;
    }
    if (given_size > TP_MAX_PLUGIN_STRUCT_SIZE) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "%s.struct_size is %zu, larger than the %zu bytes any struct of the "
                            "ABI may claim", what, given_size, TP_MAX_PLUGIN_STRUCT_SIZE);
        return false;
    }
    return true;
}

/* Refuses an array longer than the cap (abi_sizes.h), before any element is read. */
static bool check_array_length(tp_registrar_t *registrar, tp_plugin_status_t *status,
                               const char *what, size_t count) {
    if (count <= TP_MAX_PLUGIN_ARRAY_LENGTH) return true;
    refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                        "%s: %zu elements, more than the %zu the host accepts", what, count,
                        TP_MAX_PLUGIN_ARRAY_LENGTH);
    return false;
}

/* Copies a plug-in struct into one of the host's size, zero-filling fields the plug-in's older
 * header did not have; refuses a struct smaller than ABI 1.0's. */
static bool widen_struct(tp_registrar_t *registrar, tp_plugin_status_t *status, const char *what,
                         void *host_copy, size_t host_size, const void *given, size_t min_size) {
    size_t given_size;
    memcpy(&given_size, given, sizeof given_size);
    if (!check_struct_size(registrar, status, what, given_size, min_size)) return false;
    memset(host_copy, 0, host_size);
    memcpy(host_copy, given, given_size < host_size ? given_size : host_size);
    memcpy(host_copy, &host_size, sizeof host_size);
    return true;
}

/* Element `index` of an array a plug-in handed over: its elements are as large as the plug-in's
 * header made them, which the first element's struct_size tells, not as large as ours. */
static const void *plugin_array_element(const void *array, size_t index) {
    size_t stride;
    memcpy(&stride, array, sizeof stride);
    return (const unsigned char *)array + index * stride;
}

/* Checks the array's length and that every element declares the same struct_size, within
 * bounds, since that size is the array's stride; no element is read before its offset is known
 * to be sane. */
static bool check_array_stride(tp_registrar_t *registrar, tp_plugin_status_t *status,
                               const char *what, const void *array, size_t count, size_t min_size) {
    if (count == 0) return true;
    if (!check_array_length(registrar, status, what, count)) return false;
    size_t stride;
    memcpy(&stride, array, sizeof stride);
    if (!check_struct_size(registrar, status, what, stride, min_size)) return false;
    for (size_t i = 1; i < count; i++) {
        size_t size;
        memcpy(&size, (const unsigned char *)array + i * stride, sizeof size);
        if (size != stride) {
            refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                "%s array: element %zu has struct_size %zu, element 0 has %zu",
                                what, i, size, stride);
            return false;
        }
    }
    return true;
}

static bool grow(void **array, size_t *capacity, size_t count, size_t element_size) {
    if (count < *capacity) return true;
    size_t new_capacity = *capacity == 0 ? 8 : *capacity * 2;
    void *grown = realloc(*array, new_capacity * element_size);
    if (grown == NULL) return false;
    *array = grown;
    *capacity = new_capacity;
    return true;
}

static void refuse_out_of_memory(tp_registrar_t *registrar, tp_plugin_status_t *status,
                                 const char *what) {
    refuse_registration(registrar, status, TP_RESOURCE_EXHAUSTED,
                        "%s: out of host memory", what);
}

/* ---- Device types ---------------------------------------------------------------------------- */

static const char *missing_device_function(const tp_device_type_def_t *def) {
    struct {
        const void *fn;
        const char *name;
    } required[] = {
        {(const void *)def->device_count, "device_count"},
        {(const void *)def->device_init, "device_init"},
        {(const void *)def->device_release, "device_release"},
        {(const void *)def->allocate, "allocate"},
        {(const void *)def->deallocate, "deallocate"},
        {(const void *)def->stream_create, "stream_create"},
        {(const void *)def->stream_destroy, "stream_destroy"},
        {(const void *)def->stream_synchronize, "stream_synchronize"},
        {(const void *)def->memcpy_host_to_device, "memcpy_host_to_device"},
        {(const void *)def->memcpy_device_to_host, "memcpy_device_to_host"},
    };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (required[i].fn == NULL) return required[i].name;
    return NULL;
}

static void register_device_type(tp_registrar_t *registrar, const tp_device_type_def_t *def,
                                 tp_plugin_status_t *status) {
    static const char what[] = "register_device_type";
    if (!registration_open(registrar, def, what, status)) return;
    tp_device_type_def_t copy;
    if (!widen_struct(registrar, status, "tp_device_type_def_t", &copy, sizeof copy, def,
                      TP_V1_0_DEVICE_TYPE_DEF_SIZE))
        return;
    if (!tp_is_valid_device_type_name(copy.type)) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "device type name '%.64s' is invalid: it must be a letter followed by "
                            "letters, digits or '_', at most 31 characters",
                            copy.type == NULL ? "(null)" : copy.type);
        return;
    }
    const char *missing = missing_device_function(&copy);
    if (missing != NULL) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "device type '%s' lacks the required function %s", copy.type,
                            missing);
        return;
    }
    int events = (copy.event_create != NULL) + (copy.event_destroy != NULL) +
                 (copy.event_record != NULL) + (copy.stream_wait_event != NULL) +
                 (copy.event_query != NULL);
    if (events != 0 && events != 5) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "device type '%s' provides %d of the 5 event functions; provide all "
                            "or none",
                            copy.type, events);
        return;
    }
    tp_plugin_record_t *record = registrar->record;
    for (size_t i = 0; i < record->num_device_types; i++) {
        if (strcasecmp(record->device_types[i].type, copy.type) == 0) {
            refuse_registration(registrar, status, TP_ALREADY_EXISTS,
                                "device type '%s' is registered twice", copy.type);
            return;
        }
    }
    copy.type = tp_arena_strdup(&record->arena, copy.type);
    if (copy.type == NULL || !grow((void **)&record->device_types,
                                   &record->device_types_capacity, record->num_device_types,
                                   sizeof copy)) {
        refuse_out_of_memory(registrar, status, what);
        return;
    }
    record->device_types[record->num_device_types++] = copy;
}

/* ---- Ops ------------------------------------------------------------------------------------- */

static const tp_op_attr_def_t *find_attr(const tp_op_def_t *op, const char *name) {
    for (size_t i = 0; i < op->num_attrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0) return &op->attrs[i];
    return NULL;
}

/* Copies the attributes of an op into the arena; `op->attrs` then points at the copies. */
static bool copy_op_attrs(tp_registrar_t *registrar, tp_plugin_status_t *status,
                          tp_op_def_t *op) {
    tp_arena_t *arena = &registrar->record->arena;
    if (op->num_attrs > 0 && op->attrs == NULL) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "op %s: num_attrs is %zu but attrs is NULL", op->name, op->num_attrs);
        return false;
    }
    if (!check_array_stride(registrar, status, "tp_op_attr_def_t", op->attrs, op->num_attrs,
                            TP_V1_0_OP_ATTR_DEF_SIZE))
        return false;
    tp_op_attr_def_t *attrs = tp_arena_alloc(arena, (op->num_attrs + 1) * sizeof *attrs);
    if (attrs == NULL) return refuse_out_of_memory(registrar, status, "register_op"), false;
    for (size_t i = 0; i < op->num_attrs; i++) {
        tp_op_attr_def_t *attr = &attrs[i];
        const tp_op_attr_def_t *given = plugin_array_element(op->attrs, i);
        if (!widen_struct(registrar, status, "tp_op_attr_def_t", attr, sizeof *attr, given,
                          TP_V1_0_OP_ATTR_DEF_SIZE))
            return false;
        if (!is_valid_identifier(attr->name)) {
            refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                "op %s: attribute %zu has an invalid name", op->name, i);
            return false;
        }
        if (attr->type < TP_ATTR_INT || attr->type > TP_ATTR_BYTES) {
            refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                "op %s: attribute '%s' has unknown type %d", op->name,
                                attr->name, (int)attr->type);
            return false;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(attrs[j].name, attr->name) == 0) {
                refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                    "op %s: attribute '%s' is declared twice", op->name,
                                    attr->name);
                return false;
            }
        }
        if (!check_array_length(registrar, status, "tp_op_attr_def_t.allowed_dtypes",
                                attr->num_allowed_dtypes))
            return false;
        for (size_t j = 0; j < attr->num_allowed_dtypes; j++) {
            if (attr->allowed_dtypes == NULL ||
                !is_valid_dtype(registrar, attr->allowed_dtypes[j])) {
                refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                    "op %s: attribute '%s' allows an invalid dtype", op->name,
                                    attr->name);
                return false;
            }
        }
        if (attr->type == TP_ATTR_DTYPE && attr->has_default &&
            !is_valid_dtype(registrar, (tp_dtype_t)attr->default_int)) {
            refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                "op %s: attribute '%s' has an invalid default dtype %lld",
                                op->name, attr->name, (long long)attr->default_int);
            return false;
        }
        attr->name = tp_arena_strdup(arena, attr->name);
        attr->allowed_dtypes = tp_arena_memdup(arena, attr->allowed_dtypes,
                                               attr->num_allowed_dtypes * sizeof(tp_dtype_t));
        if (attr->num_allowed_dtypes == 0) attr->allowed_dtypes = NULL;
        if (attr->type == TP_ATTR_DTYPE && attr->num_allowed_dtypes == 0 &&
            tp_dtype_newest_of_abi(registrar->record->abi_minor) == TP_BOOL) {
            attr->allowed_dtypes = dtypes_before_1_7;
            attr->num_allowed_dtypes = sizeof dtypes_before_1_7 / sizeof *dtypes_before_1_7;
        }
        attr->default_string = tp_arena_strdup(arena, attr->default_string);
        if (attr->name == NULL || (given->default_string != NULL &&
                                   attr->default_string == NULL) ||
            (attr->num_allowed_dtypes > 0 && attr->allowed_dtypes == NULL))
            return refuse_out_of_memory(registrar, status, "register_op"), false;
    }
    op->attrs = attrs;
    return true;
}

/* Copies one list of inputs or outputs, checking each against the op's attributes. */
static bool copy_op_args(tp_registrar_t *registrar, tp_plugin_status_t *status,
                         const tp_op_def_t *op, const char *kind, const tp_op_arg_def_t *given,
                         size_t count, const tp_op_arg_def_t **out_args) {
    tp_arena_t *arena = &registrar->record->arena;
    if (count > 0 && given == NULL) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "op %s: %zu %s declared but the array is NULL", op->name, count, kind);
        return false;
    }
    if (!check_array_stride(registrar, status, "tp_op_arg_def_t", given, count,
                            TP_V1_0_OP_ARG_DEF_SIZE))
        return false;
    tp_op_arg_def_t *args = tp_arena_alloc(arena, (count + 1) * sizeof *args);
    if (args == NULL) return refuse_out_of_memory(registrar, status, "register_op"), false;
    for (size_t i = 0; i < count; i++) {
        tp_op_arg_def_t *arg = &args[i];
        if (!widen_struct(registrar, status, "tp_op_arg_def_t", arg, sizeof *arg,
                          plugin_array_element(given, i), TP_V1_0_OP_ARG_DEF_SIZE))
            return false;
        if (!is_valid_identifier(arg->name)) {
            refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                "op %s: %s %zu has an invalid name", op->name, kind, i);
            return false;
        }
        bool fixed = arg->dtype != TP_DTYPE_INVALID, by_attr = arg->type_attr != NULL;
        if (fixed == by_attr) {
            refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                "op %s: %s '%s' must give exactly one of dtype and type_attr",
                                op->name, kind, arg->name);
            return false;
        }
        if (fixed && !is_valid_dtype(registrar, arg->dtype)) {
            refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                "op %s: %s '%s' has invalid dtype %d", op->name, kind, arg->name,
                                (int)arg->dtype);
            return false;
        }
        if (by_attr) {
            const tp_op_attr_def_t *attr = find_attr(op, arg->type_attr);
            if (attr == NULL || attr->type != TP_ATTR_DTYPE) {
                refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                    "op %s: %s '%s' takes its dtype from '%.64s', which is not a "
                                    "dtype attribute of the op",
                                    op->name, kind, arg->name, arg->type_attr);
                return false;
            }
            arg->type_attr = attr->name;
        }
        if (arg->number_attr != NULL) {
            const tp_op_attr_def_t *attr = find_attr(op, arg->number_attr);
            if (attr == NULL || attr->type != TP_ATTR_INT) {
                refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                    "op %s: %s '%s' takes its length from '%.64s', which is not "
                                    "an int attribute of the op",
                                    op->name, kind, arg->name, arg->number_attr);
                return false;
            }
            arg->number_attr = attr->name;
        }
        arg->name = tp_arena_strdup(arena, arg->name);
        if (arg->name == NULL) return refuse_out_of_memory(registrar, status, "register_op"), false;
    }
    *out_args = args;
    return true;
}

static void register_op(tp_registrar_t *registrar, const tp_op_def_t *def,
                        tp_plugin_status_t *status) {
    static const char what[] = "register_op";
    if (!registration_open(registrar, def, what, status)) return;
    tp_op_def_t op;
    if (!widen_struct(registrar, status, "tp_op_def_t", &op, sizeof op, def,
                      TP_V1_0_OP_DEF_SIZE))
        return;
    if (!is_valid_op_name(op.name)) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "op name '%.64s' is invalid: it must be CamelCase letters and digits",
                            op.name == NULL ? "(null)" : op.name);
        return;
    }
    tp_plugin_record_t *record = registrar->record;
    if (tp_plugin_record_find_op(record, op.name) != NULL) {
        refuse_registration(registrar, status, TP_ALREADY_EXISTS, "op %s is registered twice",
                            op.name);
        return;
    }
    if (!copy_op_attrs(registrar, status, &op)) return;
    if (!copy_op_args(registrar, status, &op, "input", def->inputs, op.num_inputs, &op.inputs) ||
        !copy_op_args(registrar, status, &op, "output", def->outputs, op.num_outputs,
                      &op.outputs))
        return;
    op.name = tp_arena_strdup(&record->arena, op.name);
    if (op.name == NULL ||
        !grow((void **)&record->ops, &record->ops_capacity, record->num_ops, sizeof op)) {
        refuse_out_of_memory(registrar, status, what);
        return;
    }
    record->ops[record->num_ops] = op;
    if (!tp_plugin_record_index_op(record, record->num_ops)) {
        refuse_out_of_memory(registrar, status, what);
        return;
    }
    record->num_ops++;
}

/* ---- Kernels --------------------------------------------------------------------------------- */

static void register_kernel(tp_registrar_t *registrar, const tp_kernel_def_t *def,
                            tp_plugin_status_t *status) {
    static const char what[] = "register_kernel";
    if (!registration_open(registrar, def, what, status)) return;
    tp_kernel_def_t kernel;
    if (!widen_struct(registrar, status, "tp_kernel_def_t", &kernel, sizeof kernel, def,
                      TP_V1_0_KERNEL_DEF_SIZE))
        return;
    if (!is_valid_op_name(kernel.op)) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "kernel for op '%.64s': the op name is invalid",
                            kernel.op == NULL ? "(null)" : kernel.op);
        return;
    }
    if (!tp_is_valid_device_type_name(kernel.device_type)) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "kernel for op %s: device type '%.64s' is invalid", kernel.op,
                            kernel.device_type == NULL ? "(null)" : kernel.device_type);
        return;
    }
    if (kernel.compute == NULL) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "kernel for op %s on %s has no compute function", kernel.op,
                            kernel.device_type);
        return;
    }
    const uint32_t known_flags = TP_KERNEL_REUSE_INSTANCE | TP_KERNEL_CONCURRENT_COMPUTE;
    if ((kernel.flags & ~known_flags) != 0) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "kernel for op %s on %s: unknown flags 0x%x", kernel.op,
                            kernel.device_type, (unsigned)(kernel.flags & ~known_flags));
        return;
    }
    if (kernel.num_constraints > 0 && kernel.constraints == NULL) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "kernel for op %s on %s: num_constraints is %zu but constraints is "
                            "NULL",
                            kernel.op, kernel.device_type, kernel.num_constraints);
        return;
    }
    tp_plugin_record_t *record = registrar->record;
    tp_arena_t *arena = &record->arena;
    if (!check_array_stride(registrar, status, "tp_type_constraint_t", kernel.constraints,
                            kernel.num_constraints, TP_V1_0_TYPE_CONSTRAINT_SIZE))
        return;
    tp_type_constraint_t *constraints =
        tp_arena_alloc(arena, (kernel.num_constraints + 1) * sizeof *constraints);
    if (constraints == NULL) {
        refuse_out_of_memory(registrar, status, what);
        return;
    }
    for (size_t i = 0; i < kernel.num_constraints; i++) {
        tp_type_constraint_t *constraint = &constraints[i];
        if (!widen_struct(registrar, status, "tp_type_constraint_t", constraint,
                          sizeof *constraint, plugin_array_element(kernel.constraints, i),
                          TP_V1_0_TYPE_CONSTRAINT_SIZE))
            return;
        if (!check_array_length(registrar, status, "tp_type_constraint_t.dtypes",
                                constraint->num_dtypes))
            return;
        if (!is_valid_identifier(constraint->attr) || constraint->num_dtypes == 0 ||
            constraint->dtypes == NULL) {
            refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                "kernel for op %s on %s: constraint %zu needs an attribute name "
                                "and at least one dtype",
                                kernel.op, kernel.device_type, i);
            return;
        }
        for (size_t j = 0; j < constraint->num_dtypes; j++) {
            tp_dtype_t dtype = constraint->dtypes[j];
            if (!is_valid_dtype(registrar, dtype)) {
                /* A later dtype's number from an older plug-in is a mistake of its own. */
                char why[64] = "";
                if (tp_dtype_size(dtype) != 0)
                    snprintf(why, sizeof why, " (plug-in ABI 1.%u has no such dtype)",
                             (unsigned)registrar->record->abi_minor);
                refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                                    "kernel for op %s on %s: constraint on '%s' lists invalid "
                                    "dtype %d%s",
                                    kernel.op, kernel.device_type, constraint->attr, (int)dtype,
                                    why);
                return;
            }
        }
        constraint->attr = tp_arena_strdup(arena, constraint->attr);
        constraint->dtypes =
            tp_arena_memdup(arena, constraint->dtypes, constraint->num_dtypes * sizeof(tp_dtype_t));
        if (constraint->attr == NULL || constraint->dtypes == NULL)
            {
        refuse_out_of_memory(registrar, status, what);
        return;
    }
    }
    kernel.constraints = constraints;
    kernel.op = tp_arena_strdup(arena, kernel.op);
    kernel.device_type = tp_arena_strdup(arena, kernel.device_type);
    if (kernel.op == NULL || kernel.device_type == NULL ||
        !grow((void **)&record->kernels, &record->kernels_capacity, record->num_kernels,
              sizeof kernel))
        {
        refuse_out_of_memory(registrar, status, what);
        return;
    }
    record->kernels[record->num_kernels++] = kernel;
}

/* ---- Graph pass ------------------------------------------------------------------------------ */

static void register_graph_pass(tp_registrar_t *registrar, const tp_graph_pass_def_t *def,
                                tp_plugin_status_t *status) {
    static const char what[] = "register_graph_pass";
    if (!registration_open(registrar, def, what, status)) return;
    tp_plugin_record_t *record = registrar->record;
    if (record->has_graph_pass) {
        refuse_registration(registrar, status, TP_ALREADY_EXISTS,
                            "a plug-in may register one graph pass; '%s' is already registered",
                            record->graph_pass.name);
        return;
    }
    tp_graph_pass_def_t pass;
    if (!widen_struct(registrar, status, "tp_graph_pass_def_t", &pass, sizeof pass, def,
                      TP_V1_0_GRAPH_PASS_DEF_SIZE))
        return;
    const uint32_t known_passes = TP_PASS_PRUNING | TP_PASS_COMMON_SUBEXPRESSION |
                                  TP_PASS_CONSTANT_FOLDING | TP_PASS_IDENTITY_REMOVAL;
    if (!is_valid_identifier(pass.name) || !tp_is_valid_device_type_name(pass.device_type) ||
        pass.run == NULL || (pass.disabled_standard_passes & ~known_passes) != 0) {
        refuse_registration(registrar, status, TP_INVALID_ARGUMENT,
                            "graph pass '%.64s' needs a name, a valid device type, a run function "
                            "and only known TP_PASS_* bits",
                            pass.name == NULL ? "(null)" : pass.name);
        return;
    }
    pass.name = tp_arena_strdup(&record->arena, pass.name);
    pass.device_type = tp_arena_strdup(&record->arena, pass.device_type);
    if (pass.name == NULL || pass.device_type == NULL)
        {
        refuse_out_of_memory(registrar, status, what);
        return;
    }
    record->graph_pass = pass;
    record->has_graph_pass = true;
}

/* ---- The table ------------------------------------------------------------------------------- */

static void host_status_set(tp_plugin_status_t *status, tp_code_t code, const char *format, ...)
    TP_PRINTF_LIKE(3, 4);

static void host_status_set(tp_plugin_status_t *status, tp_code_t code, const char *format, ...) {
    if (status == NULL) return;
    char message[sizeof status->message];
    message[0] = '\0';
    if (format != NULL) {
        va_list args;
        va_start(args, format);
        vsnprintf(message, sizeof message, format, args);
        va_end(args);
    }
    tp_plugin_status_set(status, code, "%s", message);
}

static void host_log(tp_registrar_t *registrar, tp_log_level_t level, const char *format, ...)
    TP_PRINTF_LIKE(3, 4);

static void host_log(tp_registrar_t *registrar, tp_log_level_t level, const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    const char *name = registrar != NULL && registrar->record->name != NULL
                           ? registrar->record->name : "plug-in";
    tp_log_message(level, "[%s] %s", name, message);
}

static tp_code_t host_status_code(const tp_plugin_status_t *status) {
    return status == NULL ? TP_OK : status->code;
}

static tp_host_api_t host_api;
static pthread_once_t host_api_once = PTHREAD_ONCE_INIT;

static void build_host_api(void) {
    host_api = (tp_host_api_t){
        .struct_size = sizeof(tp_host_api_t),
        .abi_major = TP_ABI_MAJOR,
        .abi_minor = TP_ABI_MINOR,
        .status_set = host_status_set,
        .log = host_log,
        .register_device_type = register_device_type,
        .register_op = register_op,
        .register_kernel = register_kernel,
        .register_graph_pass = register_graph_pass,
        .status_code = host_status_code,
    };
    tp_kernel_context_fill_host_api(&host_api);
    tp_plugin_graph_fill_host_api(&host_api);
}

const tp_host_api_t *tp_host_api(void) {
    pthread_once(&host_api_once, build_host_api);
    return &host_api;
}
