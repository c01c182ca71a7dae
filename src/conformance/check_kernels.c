/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel checks. A plug-in's kernel runs on random inputs of several shapes and sizes, with
 * NaN, infinities, signed zeros and denormals among them, built from its op's schema alone,
 * and is compared with the CPU's kernel of the same op: as exactly as the op's class says
 * (exactness.h), and to the bit between two runs of its own. Then it is made to meet a failing
 * host function, and must pass the error on as a status. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/dtype.h"
#include "base/shape.h"
#include "base/status.h"
#include "conformance/check.h"
#include "conformance/exactness.h"
#include "eager/execute.h"
#include "kernel/kernel_registry.h"
#include "tensor/tensor.h"

enum {
    MAX_INPUTS = 8,
    NUM_SHAPE_SETS = 12,
    /* The last set, a million elements, is tried only while the check is young and only on a
     * device with room for it. */
    LARGE_SET = NUM_SHAPE_SETS - 1,
    LARGE_SET_SECONDS = 20
};

/* What the values of a set's floating-point inputs are. */
typedef enum value_kind {
    RANDOM_VALUES,  /* uniform in [-2, 2] */
    SPECIAL_PAIRS,  /* every pair of special values between the first two inputs */
    SPECIAL_MIXED,  /* random, one in `special_every` a special value */
} value_kind_t;

/* The shapes tried, each for every input of the op: same-shape elementwise calls of several
 * ranks, an empty one and odd lengths up to a million, the two-input forms a matrix product
 * and a broadcast take; then special values. */
typedef struct shape_set {
    tp_shape_t first, second, rest;
    value_kind_t values;
    int special_every;
} shape_set_t;

static shape_set_t same_shape(tp_shape_t shape, value_kind_t values, int special_every) {
    return (shape_set_t){shape, shape, shape, values, special_every};
}

static shape_set_t shape_set(int index) {
    const tp_shape_t matrix = TP_SHAPE(2, 3);
    switch (index) {
    case 0: return same_shape(matrix, RANDOM_VALUES, 0);
    case 1: return same_shape(TP_SHAPE(4099), RANDOM_VALUES, 0);
    case 2: return same_shape(TP_SCALAR_SHAPE, RANDOM_VALUES, 0);
    case 3: return same_shape(TP_SHAPE(0, 3), RANDOM_VALUES, 0);
    case 4: return same_shape(TP_SHAPE(2, 3, 4), RANDOM_VALUES, 0);
    case 5: return (shape_set_t){TP_SHAPE(3, 4), TP_SHAPE(4, 5), matrix, RANDOM_VALUES, 0};
    case 6: return (shape_set_t){matrix, TP_SHAPE(3), matrix, RANDOM_VALUES, 0};
    case 7: return same_shape(TP_SHAPE(1, 7), RANDOM_VALUES, 0);
    case 8: return same_shape(TP_SHAPE(100), SPECIAL_PAIRS, 0);
    case 9: return (shape_set_t){TP_SHAPE(3, 4), TP_SHAPE(4, 5), matrix, SPECIAL_MIXED, 4};
    case 10: return same_shape(TP_SHAPE(65537), SPECIAL_MIXED, 16);
    default: return same_shape(TP_SHAPE(1048577), RANDOM_VALUES, 0);
    }
}

/* The values that kernels get wrong: NaN, the infinities, both zeros, the smallest and the
 * largest denormal, and ordinary numbers to meet them. */
enum { NUM_SPECIALS = 10 };

static double special_value(tp_dtype_t dtype, int index) {
    double smallest = FLT_TRUE_MIN, normal = FLT_MIN;
    switch (dtype) {
    case TP_FLOAT64: smallest = DBL_TRUE_MIN, normal = DBL_MIN; break;
    case TP_FLOAT16: smallest = 0x1p-24, normal = 0x1p-14; break;
    case TP_BFLOAT16: smallest = 0x1p-133, normal = 0x1p-126; break;
    default: break;
    }
    const double values[NUM_SPECIALS] = {NAN,      INFINITY, -INFINITY, 0.0,  -0.0,
                                         smallest, -(normal - smallest), 1.5, -0.75, 2.0};
    return values[index];
}

/* One formed call: host inputs and the attributes the op needs beyond its defaults. */
typedef struct formed_call {
    tp_op_t op;
    tp_tensor_t *inputs[MAX_INPUTS];
    size_t num_inputs;
    tp_attr_t attrs[TP_MAX_OP_ATTRS];
    size_t num_attrs;
    int64_t dims[TP_MAX_RANK];
    tp_shape_t shape; /* of the first input, for the message */
} formed_call_t;

static void formed_call_free(formed_call_t *call) {
    for (size_t i = 0; i < call->num_inputs; i++) tp_tensor_release(call->inputs[i]);
    call->num_inputs = 0;
}

/* Values that every op can take: floats in [-2, 2] with the set's special values among them,
 * integers in -9..-1 and 1..9 (no division by zero; unsigned ones positive), booleans 0 or 1.
 * `input` is the input's position, which decides its part of the special pairs. */
static void random_values(tp_check_t *check, tp_dtype_t dtype, const shape_set_t *set,
                          size_t input, void *data, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        double value = (double)tp_check_random(check, 1u << 20) / (double)(1u << 18) - 2.0;
        int64_t integer = 1 + (int64_t)tp_check_random(check, 9);
        if (tp_dtype_kind(dtype) != TP_DTYPE_KIND_UNSIGNED && tp_check_random(check, 2) == 0)
            integer = -integer;
        if (set->values == SPECIAL_PAIRS && input < 2)
            value = special_value(dtype, (int)((input == 0 ? i : i / NUM_SPECIALS) % NUM_SPECIALS));
        else if (set->values == SPECIAL_MIXED &&
                 tp_check_random(check, (uint64_t)set->special_every) == 0)
            value = special_value(dtype, (int)tp_check_random(check, NUM_SPECIALS));
        if (dtype == TP_BOOL) integer &= 1;
        tp_dtype_store_double(data, dtype, i, tp_dtype_is_float(dtype) ? value : (double)integer);
    }
}

static tp_status_t *random_tensor(tp_check_t *check, tp_dtype_t dtype, tp_shape_t shape,
                                  const shape_set_t *set, size_t input, tp_tensor_t **out) {
    int64_t count;
    size_t bytes;
    TP_RETURN_IF_ERROR(tp_tensor_check_layout(dtype, &shape, &count, &bytes));
    void *data = bytes > 0 ? malloc(bytes) : NULL;
    if (bytes > 0 && data == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of memory");
    random_values(check, dtype, set, input, data, count);
    tp_status_t *error = tp_tensor_create(check->context, dtype, shape, data, bytes, out);
    free(data);
    return error;
}

/* Values for the attributes the op requires without a default, guessed from their kind: a
 * shape is the first input's, a dtype the one under test. Fails for kinds no guess fits. */
static tp_status_t *guess_attributes(formed_call_t *call, tp_dtype_t dtype) {
    const tp_op_def_t *def = call->op.def;
    call->num_attrs = 0;
    for (int32_t d = 0; d < call->shape.rank; d++) call->dims[d] = call->shape.dims[d];
    for (size_t a = 0; a < def->num_attrs; a++) {
        const tp_op_attr_def_t *attr = &def->attrs[a];
        if (attr->has_default) continue;
        bool bound_by_input = false;
        for (size_t i = 0; i < def->num_inputs; i++)
            bound_by_input |= (def->inputs[i].type_attr != NULL &&
                               strcmp(def->inputs[i].type_attr, attr->name) == 0) ||
                              (def->inputs[i].number_attr != NULL &&
                               strcmp(def->inputs[i].number_attr, attr->name) == 0);
        if (bound_by_input) continue;
        tp_attr_t *value = &call->attrs[call->num_attrs++];
        *value = (tp_attr_t){.name = attr->name, .type = attr->type};
        switch (attr->type) {
        case TP_ATTR_DTYPE: value->i = dtype; break;
        case TP_ATTR_SHAPE:
        case TP_ATTR_INT_LIST: value->list = call->dims; value->count = call->shape.rank; break;
        case TP_ATTR_INT: value->i = 1; break;
        case TP_ATTR_FLOAT: value->f = 0.5; break;
        case TP_ATTR_BOOL: value->i = 0; break;
        default:
            return tp_check_failure("%s needs attribute '%s' without a default, of a kind the "
                                    "check cannot make up", def->name, attr->name);
        }
    }
    return NULL;
}

/* Inputs of set `index` for the op: tensors of the dtype under test where the op's type
 * attribute decides, of the fixed dtype elsewhere; a list takes two tensors. */
static tp_status_t *form_call(tp_check_t *check, const tp_op_t *op, tp_dtype_t dtype, int index,
                              formed_call_t *call) {
    call->op = *op;
    call->num_inputs = 0;
    shape_set_t shapes = shape_set(index);
    call->shape = shapes.first;
    for (size_t a = 0; a < op->def->num_inputs; a++) {
        const tp_op_arg_def_t *arg = &op->def->inputs[a];
        tp_dtype_t arg_dtype = arg->type_attr != NULL ? dtype : arg->dtype;
        for (int k = 0; k < (arg->number_attr != NULL ? 2 : 1); k++) {
            if (call->num_inputs == MAX_INPUTS) {
                formed_call_free(call);
                return tp_check_failure("%s takes more than %d inputs", op->def->name,
                                        MAX_INPUTS);
            }
            tp_shape_t shape = call->num_inputs == 0   ? shapes.first
                               : call->num_inputs == 1 ? shapes.second
                                                       : shapes.rest;
            tp_status_t *error = random_tensor(check, arg_dtype, shape, &shapes,
                                               call->num_inputs,
                                               &call->inputs[call->num_inputs]);
            if (error != NULL) {
                formed_call_free(call);
                return error;
            }
            call->num_inputs++;
        }
    }
    tp_status_t *error = guess_attributes(call, dtype);
    if (error != NULL) formed_call_free(call);
    return error;
}

/* Runs the call with `kernel` on `device`; the outputs are the caller's. `refusal`, when not
 * NULL, makes the kernel's views fail with it. */
static tp_status_t *run_kernel(tp_check_t *check, formed_call_t *formed, tp_device_t *device,
                               const tp_kernel_def_t *kernel, const char *refusal,
                               tp_tensor_t **outputs, int32_t *out_count) {
    tp_kernel_context_t call;
    TP_RETURN_IF_ERROR(tp_kernel_context_resolve(&call, &formed->op, formed->inputs,
                                                 formed->num_inputs, formed->attrs,
                                                 formed->num_attrs,
                                                 formed->op.def->num_outputs));
    call.device = device;
    TP_RETURN_IF_ERROR(tp_kernel_context_infer_shapes(&call));
    if (kernel == NULL) kernel = tp_kernel_registry_find(&check->context->registry, &call,
                                                         device->def);
    if (kernel == NULL)
        return tp_status_make(TP_NOT_FOUND, "no CPU kernel of %s for these dtypes",
                              formed->op.def->name);
    call.refused_views = refusal;
    TP_RETURN_IF_ERROR(
        tp_execute_call(check->context, &call, kernel, formed->inputs, formed->num_inputs));
    for (int32_t o = 0; o < call.num_outputs; o++) outputs[o] = call.outputs[o];
    *out_count = call.num_outputs;
    return NULL;
}

static void release_all(tp_tensor_t **tensors, int32_t count) {
    for (int32_t i = 0; i < count; i++) tp_tensor_release(tensors[i]);
}

/* How many terms one element of an accumulated result can sum, at most: the ratio of the
 * inputs' elements to the output's (a reduction) plus the longest dimension (a product). */
static int64_t accumulated_terms(const formed_call_t *call, const tp_tensor_t *output) {
    int64_t largest_input = 0, longest_dimension = 0;
    for (size_t i = 0; i < call->num_inputs; i++) {
        const tp_tensor_t *input = call->inputs[i];
        if (input->num_elements > largest_input) largest_input = input->num_elements;
        for (int32_t d = 0; d < input->shape.rank; d++)
            if (input->shape.dims[d] > longest_dimension) longest_dimension = input->shape.dims[d];
    }
    int64_t outputs = output->num_elements > 0 ? output->num_elements : 1;
    return largest_input / outputs + longest_dimension;
}

/* "-0 (bits 0x80000000)": a value and, where bits decide, its bits. */
static void describe_value(double value, uint64_t bits, tp_dtype_t dtype, bool with_bits,
                           char *out, size_t capacity) {
    if (!with_bits || !tp_dtype_is_float(dtype)) {
        snprintf(out, capacity, "%.9g", value);
        return;
    }
    snprintf(out, capacity, "%.9g (bits 0x%0*llx)", value, 2 * (int)tp_dtype_size(dtype),
             (unsigned long long)bits);
}

/* Reads outputs to host memory: a failure the device deferred surfaces here. The device is
 * synchronized first, so that the read judges the kernel's values alone and a copy that does
 * not keep stream order fails the stream checks, not this one. */
static tp_status_t *read_outputs(tp_tensor_t **outputs, int32_t count, void **out_data) {
    for (int32_t o = 0; o < count; o++) out_data[o] = NULL;
    if (count > 0) TP_RETURN_IF_ERROR(tp_device_synchronize(outputs[0]->device));
    for (int32_t o = 0; o < count; o++) {
        out_data[o] = malloc(outputs[o]->byte_size > 0 ? outputs[o]->byte_size : 1);
        if (out_data[o] == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of memory");
        TP_RETURN_IF_ERROR(tp_tensor_read(outputs[o], out_data[o], outputs[o]->byte_size));
    }
    return NULL;
}

static void free_data(void **data, int32_t count) {
    for (int32_t o = 0; o < count; o++) free(data[o]);
}

/* What comparing the formed calls found. */
typedef struct comparison {
    double worst; /* of the bound, for toleranced classes */
    int64_t calls;
    int64_t largest; /* elements of the largest first input compared */
    bool specials;   /* special values were among the inputs */
} comparison_t;

/* The first element at which two runs' outputs differ in their bits, or -1. */
static int64_t first_difference(const void *a, const void *b, int64_t count, size_t bytes) {
    if (memcmp(a, b, bytes) == 0) return -1;
    size_t size = count > 0 ? bytes / (size_t)count : 1;
    for (int64_t i = 0; i < count; i++)
        if (memcmp((const char *)a + (size_t)i * size, (const char *)b + (size_t)i * size,
                   size) != 0)
            return i;
    return 0;
}

/* Runs the plug-in's kernel twice and the CPU's once on the formed call and compares. When the
 * CPU cannot run the call (a shape the op refuses, no CPU kernel), *skipped is set with the
 * error: the call is not one to compare on. */
static tp_status_t *compare_call(tp_check_t *check, const tp_kernel_entry_t *entry,
                                 tp_device_t *device, formed_call_t *formed,
                                 comparison_t *found, bool *skipped) {
    tp_device_t *host = check->context->registry.host_device;
    tp_tensor_t *expected[TP_MAX_OP_OUTPUTS], *runs[2][TP_MAX_OP_OUTPUTS];
    int32_t count = 0, run_counts[2] = {0, 0};
    void *expected_data[TP_MAX_OP_OUTPUTS], *run_data[2][TP_MAX_OP_OUTPUTS];
    *skipped = true;
    TP_RETURN_IF_ERROR(run_kernel(check, formed, host, NULL, NULL, expected, &count));
    tp_status_t *error = read_outputs(expected, count, expected_data);
    if (error == NULL) *skipped = false;
    for (int r = 0; r < 2; r++) {
        if (error == NULL)
            error = run_kernel(check, formed, device, entry->kernel, NULL, runs[r],
                               &run_counts[r]);
        if (error == NULL) error = read_outputs(runs[r], run_counts[r], run_data[r]);
    }
    char shape[64];
    tp_shape_format(&formed->shape, shape, sizeof shape);
    for (int32_t o = 0; o < count && error == NULL; o++) {
        const tp_tensor_t *want = expected[o], *got = runs[0][o];
        if (got->dtype != want->dtype || !tp_shape_equal(&got->shape, &want->shape)) {
            error = tp_check_failure("output %d of the call on %s inputs has another dtype or "
                                     "shape than the CPU's", (int)o, shape);
            break;
        }
        tp_exactness_t exactness = tp_exactness_of(formed->op.def->name, want->dtype);
        tp_value_comparison_t against_cpu =
            tp_compare_values(exactness, want->dtype, run_data[0][o], expected_data[o],
                              want->num_elements, accumulated_terms(formed, want));
        int64_t differs = first_difference(run_data[0][o], run_data[1][o], want->num_elements,
                                           want->byte_size);
        if (against_cpu.mismatch) {
            char got_text[64], want_text[64];
            bool with_bits = exactness == TP_EXACT_BITS;
            describe_value(against_cpu.got, against_cpu.got_bits, want->dtype, with_bits,
                           got_text, sizeof got_text);
            describe_value(against_cpu.want, against_cpu.want_bits, want->dtype, with_bits,
                           want_text, sizeof want_text);
            error = tp_check_failure("on %s inputs, output %d element %lld is %s; the CPU gives "
                                     "%s (%s's %s results must match %s)", shape, (int)o,
                                     (long long)against_cpu.at, got_text, want_text,
                                     formed->op.def->name, tp_dtype_name(want->dtype),
                                     tp_exactness_rule(exactness));
        } else if (differs >= 0) {
            error = tp_check_failure("on %s inputs, two runs gave different bits (element %lld): "
                                     "the kernel is not deterministic", shape, (long long)differs);
        } else if (against_cpu.worst > found->worst) {
            found->worst = against_cpu.worst;
        }
    }
    if (error == NULL) {
        found->calls++;
        if (formed->num_inputs > 0 && formed->inputs[0]->num_elements > found->largest)
            found->largest = formed->inputs[0]->num_elements;
    }
    free_data(expected_data, count);
    release_all(expected, count);
    for (int r = 0; r < 2; r++) {
        free_data(run_data[r], run_counts[r]);
        release_all(runs[r], run_counts[r]);
    }
    return error;
}

bool tp_check_kernel_argument(tp_check_t *check, const char *argument, const char *what,
                              const tp_kernel_entry_t **entry, tp_op_t *op,
                              tp_device_t **device, tp_dtype_t *dtype, tp_status_t **error) {
    const char *dtype_name = strchr(argument, ' ');
    *dtype = TP_DTYPE_INVALID;
    tp_status_t *bad = dtype_name != NULL ? tp_dtype_from_name(dtype_name + 1, dtype) : NULL;
    if (dtype_name == NULL || bad != NULL) {
        tp_status_free(bad);
        tp_check_name(check, "kernel %s", argument);
        *error = tp_check_failure("bad kernel check '%s'", argument);
        return false;
    }
    size_t index = (size_t)strtoul(argument, NULL, 10);
    *entry = tp_check_kernel_entry(check, index);
    if (*entry == NULL) {
        tp_check_name(check, "kernel %s", argument);
        *error = tp_check_failure("the plug-in has no kernel %zu", index);
        return false;
    }
    tp_check_name(check, "kernel %s on %s, %s%s", (*entry)->op->name,
                  (*entry)->device_type->type, tp_dtype_name(*dtype), what);
    if (!tp_kernel_registry_find_op(&check->context->registry, (*entry)->op->name, op)) {
        *error = tp_check_failure("no op %s", (*entry)->op->name);
        return false;
    }
    if (!tp_check_devices(check, (*entry)->device_type->type, error)) return false;
    *device = check->logical;
    return true;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Why the set is not tried, or NULL: special values are for floating point, and the large set
 * needs time left and room on the device (the call's inputs and outputs, twice over). */
static const char *set_left_out(int set, tp_dtype_t dtype, const tp_op_def_t *op,
                                const tp_physical_device_t *device, double elapsed,
                                char *reason, size_t capacity) {
    shape_set_t shapes = shape_set(set);
    if (shapes.values != RANDOM_VALUES && !tp_dtype_is_float(dtype)) return "";
    if (set != LARGE_SET) return NULL;
    char name[64];
    tp_shape_format(&shapes.first, name, sizeof name);
    if (elapsed > LARGE_SET_SECONDS) {
        snprintf(reason, capacity, "the %s inputs were left out: the check had run %.0f s",
                 name, elapsed);
        return reason;
    }
    int64_t elements = 0;
    tp_status_free(tp_shape_num_elements(&shapes.first, &elements));
    uint64_t bytes = (uint64_t)elements * tp_dtype_size(dtype) *
                     (op->num_inputs + op->num_outputs) * 2;
    uint64_t memory = device->memory_bytes;
    if (memory != 0 && bytes > memory / 2) {
        snprintf(reason, capacity, "the %s inputs were left out: %s:%d has %llu MiB", name,
                 device->def->type, (int)device->ordinal, (unsigned long long)(memory >> 20));
        return reason;
    }
    return NULL;
}

tp_status_t *tp_check_kernel(tp_check_t *check, const char *argument) {
    const tp_kernel_entry_t *entry;
    tp_op_t op;
    tp_device_t *device;
    tp_dtype_t dtype;
    tp_status_t *error;
    if (!tp_check_kernel_argument(check, argument, "", &entry, &op, &device, &dtype, &error))
        return error;
    if (op.def->is_stateful) {
        tp_check_not_applicable(check, "%s is stateful (random, for one): its results are not "
                                       "the CPU's to compare", op.def->name);
        return NULL;
    }
    comparison_t found = {0, 0, 0, false};
    char last_reason[256] = "", left_out[256] = "";
    double start = seconds_now();
    for (int set = 0; set < NUM_SHAPE_SETS; set++) {
        const char *reason = set_left_out(set, dtype, op.def, check->devices[0],
                                          seconds_now() - start, left_out, sizeof left_out);
        if (reason != NULL) continue;
        formed_call_t formed;
        bool skipped = true;
        error = form_call(check, &op, dtype, set, &formed);
        if (error == NULL) {
            int64_t calls = found.calls;
            error = compare_call(check, entry, device, &formed, &found, &skipped);
            formed_call_free(&formed);
            if (found.calls > calls && shape_set(set).values != RANDOM_VALUES)
                found.specials = true;
        }
        if (error == NULL) continue;
        if (!skipped) return tp_status_annotate(error, "%s", op.def->name);
        snprintf(last_reason, sizeof last_reason, "%s", tp_status_message(error));
        tp_status_free(error);
    }
    if (found.calls == 0) {
        tp_check_not_applicable(check, "no call of %s for %s could be compared with the CPU (%s)",
                                op.def->name, tp_dtype_name(dtype), last_reason);
        return NULL;
    }
    tp_exactness_t exactness = tp_exactness_of(op.def->name, dtype);
    char closeness[64] = "";
    if (exactness >= TP_ROUNDED_APPROXIMATELY)
        snprintf(closeness, sizeof closeness, " (at worst %.2g of the bound)", found.worst);
    tp_check_detail(check, "%lld input shapes against the CPU, up to %lld elements%s: matched "
                    "%s%s; "
                    "two runs gave the same bits%s%s",
                    (long long)found.calls, (long long)found.largest,
                    found.specials ? ", NaN, infinities, signed zeros and denormals among them"
                                   : "",
                    tp_exactness_rule(exactness), closeness, left_out[0] != '\0' ? "; " : "",
                    left_out);
    return NULL;
}

/* ---- Samples: one call of a kernel, for the checks that run it again ------------------------ */

struct tp_check_sample {
    formed_call_t formed;
    tp_device_t *device;
    const tp_kernel_def_t *kernel;
    void *data[TP_MAX_OP_OUTPUTS];
    size_t bytes[TP_MAX_OP_OUTPUTS];
    int32_t count;
};

void tp_check_sample_free(tp_check_sample_t *sample) {
    if (sample == NULL) return;
    formed_call_free(&sample->formed);
    free_data(sample->data, sample->count);
    free(sample);
}

/* Whether the call is one the op takes: the CPU runs it. */
static tp_status_t *cpu_takes(tp_check_t *check, formed_call_t *formed) {
    tp_tensor_t *outputs[TP_MAX_OP_OUTPUTS];
    int32_t count = 0;
    TP_RETURN_IF_ERROR(run_kernel(check, formed, check->context->registry.host_device, NULL,
                                  NULL, outputs, &count));
    release_all(outputs, count);
    return NULL;
}

/* Runs the sample's call on the plug-in and reads every output into `data`. */
static tp_status_t *run_sample(tp_check_t *check, tp_check_sample_t *sample, void **data,
                               size_t *bytes, int32_t *count) {
    tp_tensor_t *outputs[TP_MAX_OP_OUTPUTS];
    *count = 0;
    TP_RETURN_IF_ERROR(run_kernel(check, &sample->formed, sample->device, sample->kernel, NULL,
                                  outputs, count));
    tp_status_t *error = read_outputs(outputs, *count, data);
    for (int32_t o = 0; o < *count; o++) bytes[o] = outputs[o]->byte_size;
    release_all(outputs, *count);
    if (error != NULL) {
        free_data(data, *count);
        *count = 0;
    }
    return error;
}

tp_status_t *tp_check_sample_create(tp_check_t *check, const tp_kernel_entry_t *entry,
                                    tp_device_t *device, tp_dtype_t dtype,
                                    tp_check_sample_t **out) {
    *out = NULL;
    tp_op_t op;
    if (!tp_kernel_registry_find_op(&check->context->registry, entry->op->name, &op))
        return tp_check_failure("no op %s", entry->op->name);
    tp_check_sample_t *sample = calloc(1, sizeof *sample);
    if (sample == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of memory");
    sample->device = device;
    sample->kernel = entry->kernel;
    for (int set = 0; set < NUM_SHAPE_SETS; set++) {
        bool skipped = true;
        tp_status_t *error = form_call(check, &op, dtype, set, &sample->formed);
        if (error == NULL) error = cpu_takes(check, &sample->formed);
        if (error == NULL) skipped = false;
        if (error == NULL) error = run_sample(check, sample, sample->data, sample->bytes,
                                                &sample->count);
        if (error == NULL) {
            *out = sample;
            return NULL;
        }
        formed_call_free(&sample->formed);
        if (!skipped) {
            tp_check_sample_free(sample);
            return error;
        }
        tp_status_free(error);
    }
    free(sample);
    return NULL;
}

tp_status_t *tp_check_sample_run(tp_check_t *check, tp_check_sample_t *sample) {
    void *data[TP_MAX_OP_OUTPUTS];
    size_t bytes[TP_MAX_OP_OUTPUTS];
    int32_t count;
    TP_RETURN_IF_ERROR(run_sample(check, sample, data, bytes, &count));
    tp_status_t *error = NULL;
    for (int32_t o = 0; o < count && error == NULL; o++)
        if (bytes[o] != sample->bytes[o] || memcmp(data[o], sample->data[o], bytes[o]) != 0)
            error = tp_check_failure("%s on %s gave other bits than its first run",
                                     sample->formed.op.def->name, sample->device->full_name);
    free_data(data, count);
    return error;
}

/* ---- Errors ---------------------------------------------------------------------------------- */

static const char refusal[] =
    "plugin-check refused the kernel's inputs and outputs to see that it passes the error on";

tp_status_t *tp_check_kernel_errors(tp_check_t *check, const char *argument) {
    const tp_kernel_entry_t *entry;
    tp_op_t op;
    tp_device_t *device;
    tp_dtype_t dtype;
    tp_status_t *error;
    if (!tp_check_kernel_argument(check, argument, ", errors", &entry, &op, &device, &dtype,
                                  &error))
        return error;
    tp_check_sample_t *sample;
    TP_RETURN_IF_ERROR(tp_check_sample_create(check, entry, device, dtype, &sample));
    if (sample == NULL) {
        tp_check_not_applicable(check, "no call of %s for %s could be formed", op.def->name,
                                tp_dtype_name(dtype));
        return NULL;
    }
    tp_tensor_t *outputs[TP_MAX_OP_OUTPUTS];
    int32_t count = 0;
    tp_status_t *refused =
        run_kernel(check, &sample->formed, device, entry->kernel, refusal, outputs, &count);
    char message[512] = "";
    if (refused == NULL) {
        release_all(outputs, count);
        error = tp_check_failure("%s returned success although kernel_input and kernel_output "
                                 "failed: a kernel must return the host's errors",
                                 op.def->name);
    } else {
        snprintf(message, sizeof message, "%s", tp_status_message(refused));
        tp_status_free(refused);
        error = tp_status_annotate(tp_context_synchronize(check->context),
                                   "after the refused call, a synchronize");
    }
    if (error == NULL)
        error = tp_status_annotate(tp_check_sample_run(check, sample), "after the refused call");
    tp_check_sample_free(sample);
    TP_RETURN_IF_ERROR(error);
    tp_check_detail(check, "a failing host function became the status \"%s\"; the next call "
                    "gave the same bits as before", message);
    return NULL;
}
