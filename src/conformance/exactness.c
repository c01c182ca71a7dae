/* SPDX-License-Identifier: Apache-2.0 */
/* The exactness classes of the built-in ops and the comparison of outputs under each. The
 * bounds are tight enough that a kernel 1.00009 times off fails every class but a long
 * accumulation, where float32 itself cannot tell (see tp_exactness_t). */
#include "conformance/exactness.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "base/dtype.h"

typedef struct op_class {
    const char *op;
    tp_exactness_t exactness;
} op_class_t;

static const op_class_t op_classes[] = {
    {"Abs", TP_EXACT_BITS},          {"Cast", TP_EXACT_BITS},
    {"Const", TP_EXACT_BITS},        {"Fill", TP_EXACT_BITS},
    {"Identity", TP_EXACT_BITS},     {"Neg", TP_EXACT_BITS},
    {"OnesLike", TP_EXACT_BITS},     {"Reshape", TP_EXACT_BITS},
    {"Transpose", TP_EXACT_BITS},    {"ZerosLike", TP_EXACT_BITS},
    {"Max", TP_EXACT_VALUES},        {"Relu", TP_EXACT_VALUES},
    {"ReluGrad", TP_EXACT_VALUES},   {"Add", TP_ROUNDED_ONCE},
    {"BiasAdd", TP_ROUNDED_ONCE},    {"Mul", TP_ROUNDED_ONCE},
    {"Square", TP_ROUNDED_ONCE},     {"Sub", TP_ROUNDED_ONCE},
    {"Div", TP_ROUNDED_APPROXIMATELY}, {"Sqrt", TP_ROUNDED_APPROXIMATELY},
    {"Exp", TP_ELEMENTARY},          {"Log", TP_ELEMENTARY},
    {"Sigmoid", TP_ELEMENTARY},      {"SigmoidGrad", TP_ELEMENTARY},
    {"Tanh", TP_ELEMENTARY},         {"TanhGrad", TP_ELEMENTARY},
    {"AddN", TP_ACCUMULATED},        {"MatMul", TP_ACCUMULATED},
    {"BatchMatMulV2", TP_ACCUMULATED},
    {"Mean", TP_ACCUMULATED},        {"Softmax", TP_ACCUMULATED},
    {"Sum", TP_ACCUMULATED},
    {"Min", TP_EXACT_VALUES},        {"Sign", TP_EXACT_VALUES},
    {"Rsqrt", TP_ELEMENTARY},        {"Pow", TP_ELEMENTARY},
    {"Maximum", TP_EXACT_VALUES},    {"Minimum", TP_EXACT_VALUES},
    {"Prod", TP_ACCUMULATED},
    /* Sums of a row, a window or a batch, in the device's order; a loss also takes exp and log
     * of them. MaxPool selects one tap; its gradient sums the taps' shares. */
    {"LogSoftmax", TP_ACCUMULATED},  {"SoftmaxCrossEntropyWithLogits", TP_ACCUMULATED},
    {"SparseSoftmaxCrossEntropyWithLogits", TP_ACCUMULATED},
    {"Conv2D", TP_ACCUMULATED},      {"Conv2DBackpropInput", TP_ACCUMULATED},
    {"Conv2DBackpropFilter", TP_ACCUMULATED}, {"AvgPool", TP_ACCUMULATED},
    {"AvgPoolGrad", TP_ACCUMULATED}, {"MaxPoolGrad", TP_ACCUMULATED},
    {"MaxPool", TP_EXACT_VALUES},
    {"FusedBatchNorm", TP_ACCUMULATED}, {"FusedBatchNormGrad", TP_ACCUMULATED},
    {"UnsortedSegmentSum", TP_ACCUMULATED},
};

tp_exactness_t tp_exactness_of(const char *op, tp_dtype_t dtype) {
    if (!tp_dtype_is_float(dtype)) return TP_EXACT_BITS;
    for (size_t i = 0; i < sizeof op_classes / sizeof *op_classes; i++)
        if (strcmp(op_classes[i].op, op) == 0) return op_classes[i].exactness;
    return TP_EXACT_BITS;
}

const char *tp_exactness_rule(tp_exactness_t exactness) {
    switch (exactness) {
    case TP_EXACT_BITS: return "bit for bit, any NaN matching any NaN";
    case TP_EXACT_VALUES: return "exactly, NaN only as NaN, +0 and -0 alike";
    case TP_ROUNDED_ONCE: return "exactly, results below the smallest normal number allowed to "
                                 "flush to zero";
    case TP_ROUNDED_APPROXIMATELY: return "within 2 ulp";
    case TP_ELEMENTARY: return "within 16 ulp + 16 eps";
    case TP_ACCUMULATED: return "within 16 ulp + 2 n eps max|y| for sums of n terms";
    }
    return "?";
}

/* The numbers of one floating-point dtype. */
typedef struct float_format {
    double epsilon, smallest_normal, smallest_subnormal;
    int mantissa_bits;
} float_format_t;

static float_format_t format_of(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_FLOAT64: return (float_format_t){DBL_EPSILON, DBL_MIN, DBL_TRUE_MIN, 52};
    case TP_FLOAT16: return (float_format_t){0x1p-10, 0x1p-14, 0x1p-24, 10};
    case TP_BFLOAT16: return (float_format_t){0x1p-7, 0x1p-126, 0x1p-133, 7};
    default: return (float_format_t){FLT_EPSILON, FLT_MIN, FLT_TRUE_MIN, 23};
    }
}

/* The spacing of the dtype's numbers at |value|. */
static double ulp(const float_format_t *format, double value) {
    if (fabs(value) < format->smallest_normal) return format->smallest_subnormal;
    return ldexp(1.0, ilogb(value) - format->mantissa_bits);
}


static uint64_t bits(const void *data, size_t size, int64_t i) {
    uint64_t value = 0;
    memcpy(&value, (const unsigned char *)data + (size_t)i * size, size);
    return value;
}

/* The bound on |got - want| for one element of a toleranced class. */
static double bound(tp_exactness_t exactness, const float_format_t *format, double want,
                    double accumulated_scale) {
    switch (exactness) {
    case TP_ROUNDED_APPROXIMATELY: return 2 * ulp(format, want);
    case TP_ELEMENTARY: return 16 * ulp(format, want) + 16 * format->epsilon;
    case TP_ACCUMULATED: return 16 * ulp(format, want) + accumulated_scale;
    default: return 0;
    }
}

/* For accumulated results, 2 n eps times the largest finite |y|. */
static double accumulated_scale(const float_format_t *format, tp_dtype_t dtype,
                                const void *want, int64_t count, int64_t terms) {
    double largest = 0;
    for (int64_t i = 0; i < count; i++) {
        double value = fabs(tp_dtype_load_double(want, dtype, i));
        if (isfinite(value) && value > largest) largest = value;
    }
    return 2.0 * (double)(terms > 0 ? terms : 1) * format->epsilon * largest;
}

/* Whether one element is within its class's bounds; *ratio says how close it came. */
static bool element_matches(tp_exactness_t exactness, const float_format_t *format, double got,
                            double want, uint64_t got_bits, uint64_t want_bits, double scale,
                            double *ratio) {
    *ratio = 0;
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (exactness == TP_EXACT_BITS) return got_bits == want_bits;
    if (exactness == TP_EXACT_VALUES || isinf(got) || isinf(want)) return got == want;
    /* Flushing a result below the smallest normal to zero is common on accelerators. */
    if (fabs(got) < format->smallest_normal && fabs(want) < format->smallest_normal) return true;
    double gap = fabs(got - want), allowed = bound(exactness, format, want, scale);
    if (gap == 0) return true;
    if (allowed == 0 || gap > allowed) return false;
    *ratio = gap / allowed;
    return true;
}

tp_value_comparison_t tp_compare_values(tp_exactness_t exactness, tp_dtype_t dtype,
                                        const void *got, const void *want, int64_t count,
                                        int64_t terms) {
    tp_value_comparison_t result = {false, -1, 0, 0, 0, 0, 0};
    size_t size = tp_dtype_size(dtype);
    if (!tp_dtype_is_float(dtype)) exactness = TP_EXACT_BITS;
    float_format_t format = format_of(dtype);
    double scale = exactness == TP_ACCUMULATED
                       ? accumulated_scale(&format, dtype, want, count, terms)
                       : 0;
    for (int64_t i = 0; i < count; i++) {
        double g = tp_dtype_load_double(got, dtype, i), ratio;
        double w = tp_dtype_load_double(want, dtype, i);
        uint64_t g_bits = bits(got, size, i), w_bits = bits(want, size, i);
        if (!element_matches(exactness, &format, g, w, g_bits, w_bits, scale, &ratio)) {
            result = (tp_value_comparison_t){true, i, g, w, g_bits, w_bits, result.worst};
            return result;
        }
        if (ratio > result.worst) result.worst = ratio;
    }
    return result;
}
