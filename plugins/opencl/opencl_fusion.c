/* SPDX-License-Identifier: Apache-2.0 */
/* OpenCLFusedElementwise: one kernel in place of a chain of element-wise ops on a GPU, put
 * there by the fusion pass (opencl_fusion_pass.c). Its `expression` attribute, such as
 * "Relu(Add(x0, Mul(x1, x2)))", names the ops and the inputs they read; the kernel turns it into
 * OpenCL C that calls the element functions of kernels/elementwise.cl, the very functions the
 * unfused kernels call, so that the fused chain gives the same bits in one pass over memory.
 * Inputs broadcast to the output's shape, as the ops of the chain broadcast one into another. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* The ops the fused kernel computes: their element function (op_<function>_<dtype>) and
 * number of inputs; integer dtypes only where the function exists for them (integer Div is
 * not there: its kernel also reports a zero divisor). */
static const struct fusible_op {
    const char *op, *function;
    int arity;
    bool integers;
    bool transcendental; /* a libm-like function: tens of instructions per element */
} fusible_ops[] = {
    {"Relu", "relu", 1, true, false},         {"Neg", "neg", 1, true, false},
    {"Abs", "abs", 1, true, false},           {"Square", "square", 1, true, false},
    {"Sigmoid", "sigmoid", 1, false, true},   {"Tanh", "tanh", 1, false, true},
    {"Exp", "exp", 1, false, true},           {"Log", "log", 1, false, true},
    {"Sqrt", "sqrt", 1, false, false},        {"Add", "add", 2, true, false},
    {"Sub", "sub", 2, true, false},           {"Mul", "mul", 2, true, false},
    {"Div", "div", 2, false, false},          {"ReluGrad", "relu_grad", 2, true, false},
    {"SigmoidGrad", "sigmoid_grad", 2, false, false},
    {"TanhGrad", "tanh_grad", 2, false, false},
};

static const tp_dtype_t fused_dtypes[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32, TP_INT64};

static bool is_float(tp_dtype_t dtype) { return dtype == TP_FLOAT32 || dtype == TP_FLOAT64; }

/* The fusible op named by the `length` characters at `name` in `dtype`, or NULL. */
static const struct fusible_op *find_fusible(const char *name, size_t length, tp_dtype_t dtype) {
    for (size_t i = 0; i < COUNT(fusible_ops); i++)
        if (strlen(fusible_ops[i].op) == length && strncmp(fusible_ops[i].op, name, length) == 0)
            return is_float(dtype) || fusible_ops[i].integers ? &fusible_ops[i] : NULL;
    return NULL;
}

int opencl_fusible_arity(const char *op, tp_dtype_t dtype) {
    bool known = false;
    for (size_t d = 0; d < COUNT(fused_dtypes); d++) known |= fused_dtypes[d] == dtype;
    const struct fusible_op *found = known ? find_fusible(op, strlen(op), dtype) : NULL;
    return found != NULL ? found->arity : 0;
}

/* ---- The expression -------------------------------------------------------------------------- */

/* One op of the chain: the values it reads are the kernel's inputs (0 to num_inputs - 1) and
 * the results of the steps before it (num_inputs + step). */
typedef struct fused_step {
    const struct fusible_op *op;
    int32_t operands[2];
} fused_step_t;

typedef struct fused_chain {
    const char *text;
    size_t at;
    tp_dtype_t dtype;
    int32_t num_inputs;
    bool used[OPENCL_FUSED_MAX_INPUTS];
    fused_step_t steps[OPENCL_FUSED_MAX_OPS];
    int32_t num_steps;
    char error[160]; /* why the expression was refused */
} fused_chain_t;

static void skip_spaces(fused_chain_t *chain) {
    while (chain->text[chain->at] == ' ') chain->at++;
}

static bool expect(fused_chain_t *chain, char c) {
    skip_spaces(chain);
    if (chain->text[chain->at] == c) {
        chain->at++;
        return true;
    }
    snprintf(chain->error, sizeof chain->error, "expected '%c' at character %zu", c, chain->at);
    return false;
}

static bool is_letter_or_digit(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Input "x<k>": its index, or -1 with the error set. */
static int32_t parse_input(fused_chain_t *chain) {
    size_t start = ++chain->at;
    int64_t index = 0;
    while (chain->text[chain->at] >= '0' && chain->text[chain->at] <= '9' && index < 1000)
        index = index * 10 + (chain->text[chain->at++] - '0');
    if (chain->at == start || index >= chain->num_inputs) {
        snprintf(chain->error, sizeof chain->error,
                 "input at character %zu is not one of x0 to x%d", start - 1,
                 (int)chain->num_inputs - 1);
        return -1;
    }
    chain->used[index] = true;
    return (int32_t)index;
}

/* The value at the parser's position: an input, or an op of the chain and, first, what it
 * reads; -1 with the error set. The recursion is as deep as the chain is long, and that is
 * at most OPENCL_FUSED_MAX_OPS. */
static int32_t parse_value(fused_chain_t *chain) {
    skip_spaces(chain);
    if (chain->text[chain->at] == 'x') return parse_input(chain);
    size_t start = chain->at;
    while (is_letter_or_digit(chain->text[chain->at])) chain->at++;
    const struct fusible_op *op =
        find_fusible(chain->text + start, chain->at - start, chain->dtype);
    if (op == NULL) {
        snprintf(chain->error, sizeof chain->error,
                 "'%.*s' at character %zu is not an element-wise op the kernel fuses in %s",
                 (int)(chain->at - start > 32 ? 32 : chain->at - start), chain->text + start,
                 start, opencl_dtype_suffix(chain->dtype));
        return -1;
    }
    if (chain->num_steps == OPENCL_FUSED_MAX_OPS) {
        snprintf(chain->error, sizeof chain->error, "more than %d ops", OPENCL_FUSED_MAX_OPS);
        return -1;
    }
    fused_step_t step = {op, {-1, -1}};
    if (!expect(chain, '(')) return -1;
    for (int k = 0; k < op->arity; k++) {
        if (k > 0 && !expect(chain, ',')) return -1;
        step.operands[k] = parse_value(chain);
        if (step.operands[k] < 0) return -1;
    }
    if (!expect(chain, ')')) return -1;
    chain->steps[chain->num_steps] = step;
    return chain->num_inputs + chain->num_steps++;
}

/* Reads `text` for `num_inputs` inputs of `dtype`; false with chain->error set when it is
 * not an expression of fusible ops that reads every input. */
static bool parse_chain(const char *text, int32_t num_inputs, tp_dtype_t dtype,
                        fused_chain_t *chain) {
    *chain = (fused_chain_t){.text = text, .dtype = dtype, .num_inputs = num_inputs};
    if (num_inputs < 1 || num_inputs > OPENCL_FUSED_MAX_INPUTS) {
        snprintf(chain->error, sizeof chain->error, "%d inputs, not 1 to %d", (int)num_inputs,
                 OPENCL_FUSED_MAX_INPUTS);
        return false;
    }
    if (parse_value(chain) < 0) return false;
    skip_spaces(chain);
    if (chain->text[chain->at] != '\0') {
        snprintf(chain->error, sizeof chain->error, "unexpected text at character %zu",
                 chain->at);
        return false;
    }
    if (chain->num_steps == 0) {
        snprintf(chain->error, sizeof chain->error, "it names no op");
        return false;
    }
    for (int32_t k = 0; k < num_inputs; k++)
        if (!chain->used[k]) {
            snprintf(chain->error, sizeof chain->error, "it does not read input x%d", (int)k);
            return false;
        }
    return true;
}

/* ---- Shape ------------------------------------------------------------------------------------ */

/* The output's shape: the inputs' shapes broadcast together, as the chain's ops broadcast. */
static void infer_fused_shape(void *op_state, tp_kernel_context_t *context,
                              tp_plugin_status_t *status) {
    (void)op_state;
    int64_t dims[TP_MAX_RANK];
    int32_t rank = 0;
    for (int32_t k = 0; k < opencl_host->kernel_num_inputs(context); k++) {
        tp_tensor_view_t x;
        if (!opencl_input(context, k, &x, status)) return;
        for (int32_t d = 1; d <= x.rank; d++) {
            int64_t own = x.dims[x.rank - d];
            int64_t *out = &dims[TP_MAX_RANK - d];
            if (d > rank) *out = own;
            else if (*out == 1) *out = own;
            else if (own != 1 && own != *out) {
                opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                        "%s: input x%d's dimension %d is %lld, which does not "
                                        "broadcast with %lld", OPENCL_FUSED_OP, (int)k,
                                        (int)(x.rank - d), (long long)own, (long long)*out);
                return;
            }
        }
        if (x.rank > rank) rank = x.rank;
    }
    opencl_host->kernel_set_output_shape(context, 0, rank, dims + TP_MAX_RANK - rank, status);
}

/* ---- The generated kernel ------------------------------------------------------------------- */

/* elementwise.cl up to the end of its element functions: what every fused program starts
 * with. Found at registration. */
static opencl_prelude_t prelude = {.label = "a fused kernel"};

static const char *opencl_type(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_FLOAT64: return "double";
    case TP_INT32: return "int";
    case TP_INT64: return "long";
    default: return "float";
    }
}

/* Appends to `out` like printf; false once it is full. */
static bool append(char *out, size_t capacity, size_t *length, const char *format, ...)
    TP_PRINTF_LIKE(4, 5);
static bool append(char *out, size_t capacity, size_t *length, const char *format, ...) {
    if (*length >= capacity) return false;
    va_list args;
    va_start(args, format);
    int written = vsnprintf(out + *length, capacity - *length, format, args);
    va_end(args);
    if (written < 0 || (size_t)written >= capacity - *length) {
        *length = capacity;
        return false;
    }
    *length += (size_t)written;
    return true;
}

/* Input k as the generated code reads it at element `index`: at that index, or through its
 * broadcast strides s<k> where bit k of `broadcast` is set. */
static bool append_load(char *out, size_t capacity, size_t *n, const fused_chain_t *chain,
                        uint32_t broadcast, int32_t k, const char *index) {
    const char *type = opencl_type(chain->dtype);
    if (broadcast & (1u << k))
        return append(out, capacity, n, "CONST_AT(%s, b%d, o%d)[strided_offset(%s, rank, dims, "
                      "s%d)]", type, (int)k, (int)k, index, (int)k);
    return append(out, capacity, n, "CONST_AT(%s, b%d, o%d)[%s]", type, (int)k, (int)k, index);
}

/* Operand `value` of a step: an input read at `index`, or the result of an earlier step
 * (`suffix` "[j]" where results are arrays). */
static bool append_operand(char *out, size_t capacity, size_t *n, const fused_chain_t *chain,
                           uint32_t broadcast, int32_t value, const char *index,
                           const char *suffix) {
    if (value < chain->num_inputs)
        return append_load(out, capacity, n, chain, broadcast, value, index);
    return append(out, capacity, n, "v%d%s", (int)value, suffix);
}

/* Step s as the call of its element function. */
static bool append_step(char *out, size_t capacity, size_t *n, const fused_chain_t *chain,
                        uint32_t broadcast, int32_t s, const char *index, const char *suffix) {
    const fused_step_t *step = &chain->steps[s];
    bool ok = append(out, capacity, n, "op_%s_%s(", step->op->function,
                     opencl_dtype_suffix(chain->dtype));
    for (int k = 0; k < step->op->arity && ok; k++)
        ok = (k == 0 || append(out, capacity, n, ", ")) &&
             append_operand(out, capacity, n, chain, broadcast, step->operands[k], index,
                            suffix);
    return ok && append(out, capacity, n, ")");
}

/* The elements a work-item of a chunked kernel computes. */
#define FUSED_CHUNK 64

/* The kernel "fused" for `chain`: input k at buffer b<k>, offset o<k>, read at the output's
 * index, or through broadcast strides s<k> where bit k of `broadcast` is set.
 *
 * Each work-item computes one element, every step in registers, unless `chunked`: then each
 * computes FUSED_CHUNK elements, one loop per step over arrays that stay in cache. */
static bool generate(const fused_chain_t *chain, uint32_t broadcast, bool chunked, char *out,
                     size_t capacity) {
    const char *type = opencl_type(chain->dtype);
    int32_t last = chain->num_inputs + chain->num_steps - 1;
    size_t n = 0;
    bool ok = append(out, capacity, &n, "\n__kernel void fused(");
    for (int32_t k = 0; k < chain->num_inputs; k++)
        ok = ok && append(out, capacity, &n, "__global const char *b%d, ulong o%d, ", (int)k,
                          (int)k);
    ok = ok && append(out, capacity, &n,
                      "__global char *y_base, ulong y_offset, ulong n, int rank, long8 dims");
    for (int32_t k = 0; k < chain->num_inputs; k++)
        if (broadcast & (1u << k)) ok = ok && append(out, capacity, &n, ", long8 s%d", (int)k);
    if (!chunked) {
        ok = ok && append(out, capacity, &n, ") {\n    size_t i = get_global_id(0);\n"
                                             "    if (i >= n) return;\n");
        for (int32_t s = 0; s < chain->num_steps && ok; s++)
            ok = append(out, capacity, &n, "    %s v%d = ", type, (int)(chain->num_inputs + s)) &&
                 append_step(out, capacity, &n, chain, broadcast, s, "i", "") &&
                 append(out, capacity, &n, ";\n");
        return ok && append(out, capacity, &n, "    AT(%s, y_base, y_offset)[i] = v%d;\n}\n",
                            type, (int)last);
    }
    ok = ok && append(out, capacity, &n,
                      ") {\n    ulong start = (ulong)get_global_id(0) * %d;\n"
                      "    if (start >= n) return;\n"
                      "    int count = n - start < %d ? (int)(n - start) : %d;\n",
                      FUSED_CHUNK, FUSED_CHUNK, FUSED_CHUNK);
    for (int32_t s = 0; s < chain->num_steps && ok; s++) {
        int32_t value = chain->num_inputs + s;
        ok = value == last ||
             append(out, capacity, &n, "    %s v%d[%d];\n", type, (int)value, FUSED_CHUNK);
        ok = ok && append(out, capacity, &n, "    for (int j = 0; j < count; j++) ");
        ok = ok && (value == last
                        ? append(out, capacity, &n, "AT(%s, y_base, y_offset)[start + j] = ", type)
                        : append(out, capacity, &n, "v%d[j] = ", (int)value));
        ok = ok && append_step(out, capacity, &n, chain, broadcast, s, "start + j", "[j]") &&
             append(out, capacity, &n, ";\n");
    }
    return ok && append(out, capacity, &n, "}\n");
}

/* Whether the chain runs chunked on `device`. A CPU device (PoCL) vectorises a kernel across
 * work-items, and one work-item running several transcendental functions defeats its
 * vectoriser: four float32 Tanh fused per element ran 2x slower than the four ops apart, and
 * as fast chunked, whose loops it vectorises one by one. Cheap ops run 2x faster per element
 * than chunked there, and a GPU wants one element per work-item always. */
static bool is_chunked(const opencl_device_t *device, const fused_chain_t *chain) {
    int transcendental = 0;
    for (int32_t s = 0; s < chain->num_steps; s++)
        transcendental += chain->steps[s].op->transcendental;
    return device->is_cpu && transcendental >= 2;
}

static void fused(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    const opencl_device_t *device = opencl_host->kernel_device(context);
    tp_tensor_view_t y, x[OPENCL_FUSED_MAX_INPUTS];
    const char *expression = NULL;
    opencl_host->kernel_attr_string(context, "expression", &expression, status);
    if (opencl_failed(status) || !opencl_output(context, 0, &y, status)) return;
    fused_chain_t chain;
    if (!parse_chain(expression, opencl_host->kernel_num_inputs(context), y.dtype, &chain)) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "%s on GPU:%d (%s): expression \"%.200s\": %s", OPENCL_FUSED_OP,
                                (int)device->ordinal, device->name, expression, chain.error);
        return;
    }
    if (y.num_elements == 0) return;
    cl_mem mems[OPENCL_FUSED_MAX_INPUTS];
    cl_long8 strides[OPENCL_FUSED_MAX_INPUTS], dims = {{0}};
    opencl_arg_t args[3 * OPENCL_FUSED_MAX_INPUTS + 5];
    size_t num_args = 0;
    uint32_t broadcast = 0;
    for (int32_t k = 0; k < chain.num_inputs; k++) {
        if (!opencl_input(context, k, &x[k], status)) return;
        mems[k] = (cl_mem)x[k].mem;
        args[num_args++] = OPENCL_ARG(mems[k]);
        args[num_args++] = OPENCL_ARG(x[k].offset);
        if (x[k].num_elements != y.num_elements) broadcast |= 1u << k;
    }
    cl_mem y_mem = (cl_mem)y.mem;
    cl_ulong n = (cl_ulong)y.num_elements;
    cl_int rank = broadcast != 0 ? y.rank : 0;
    for (int32_t d = 0; d < rank; d++) dims.s[d] = y.dims[d];
    args[num_args++] = OPENCL_ARG(y_mem);
    args[num_args++] = OPENCL_ARG(y.offset);
    args[num_args++] = OPENCL_ARG(n);
    args[num_args++] = OPENCL_ARG(rank);
    args[num_args++] = OPENCL_ARG(dims);
    for (int32_t k = 0; k < chain.num_inputs; k++) {
        if (!(broadcast & (1u << k))) continue;
        opencl_broadcast_strides(&x[k], y.rank, y.dims, strides[k].s);
        args[num_args++] = OPENCL_ARG(strides[k]);
    }
    char body[8192];
    bool chunked = is_chunked(device, &chain);
    if (!generate(&chain, broadcast, chunked, body, sizeof body)) {
        opencl_host->status_set(status, TP_INTERNAL, "%s on GPU:%d (%s): its kernel for \"%.200s\" "
                                "is longer than %zu bytes", OPENCL_FUSED_OP, (int)device->ordinal,
                                device->name, expression, sizeof body);
        return;
    }
    size_t work_items = chunked ? (size_t)((n + FUSED_CHUNK - 1) / FUSED_CHUNK) : (size_t)n;
    opencl_launch_generated(context, OPENCL_FUSED_OP, &prelude, body, "fused", args, num_args,
                            work_items, status);
}

/* ---- Registration ---------------------------------------------------------------------------- */

/* Where elementwise.cl's element functions end: the fused programs' prelude. */
static bool find_prelude(tp_plugin_status_t *status) {
    static const char marker[] = "/* ---- End of the element functions";
    for (size_t p = 0; p < opencl_num_programs; p++) {
        if (strcmp(opencl_programs[p].name, "elementwise") != 0) continue;
        const char *end = strstr(opencl_programs[p].source, marker);
        if (end == NULL) break;
        prelude.text = opencl_programs[p].source;
        prelude.length = (size_t)(end - prelude.text);
        return true;
    }
    opencl_host->status_set(status, TP_INTERNAL,
                            "%s: kernels/elementwise.cl has no line \"%s\"", OPENCL_FUSED_OP,
                            marker);
    return false;
}

void opencl_register_fused_kernel(tp_registrar_t *registrar, bool fp64,
                                  tp_plugin_status_t *status) {
    if (opencl_failed(status) || !find_prelude(status)) return;
    static const tp_op_arg_def_t inputs[] = {
        {sizeof inputs[0], "x", TP_DTYPE_INVALID, "T", "N"}};
    static const tp_op_arg_def_t outputs[] = {{sizeof outputs[0], "y", TP_DTYPE_INVALID, "T", NULL}};
    static const tp_op_attr_def_t attrs[] = {
        {.struct_size = sizeof attrs[0], .name = "T", .type = TP_ATTR_DTYPE,
         .allowed_dtypes = fused_dtypes, .num_allowed_dtypes = COUNT(fused_dtypes)},
        {.struct_size = sizeof attrs[0], .name = "N", .type = TP_ATTR_INT},
        {.struct_size = sizeof attrs[0], .name = "expression", .type = TP_ATTR_STRING}};
    const tp_op_def_t op = {.struct_size = sizeof op,
                            .name = OPENCL_FUSED_OP,
                            .inputs = inputs,
                            .num_inputs = COUNT(inputs),
                            .outputs = outputs,
                            .num_outputs = COUNT(outputs),
                            .attrs = attrs,
                            .num_attrs = COUNT(attrs),
                            .infer_shape = infer_fused_shape};
    opencl_host->register_op(registrar, &op, status);
    tp_dtype_t kept[COUNT(fused_dtypes)];
    size_t num_kept = 0;
    for (size_t d = 0; d < COUNT(fused_dtypes); d++)
        if (fused_dtypes[d] != TP_FLOAT64 || fp64) kept[num_kept++] = fused_dtypes[d];
    opencl_register(registrar, OPENCL_FUSED_OP, "T", kept, num_kept, NULL, fused, status);
}
