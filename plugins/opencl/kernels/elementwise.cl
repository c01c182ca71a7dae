/* SPDX-License-Identifier: Apache-2.0 */
/* Element-wise kernels of tensorplug's OpenCL plug-in: unary math, broadcasting binary
 * arithmetic, the activation gradients, Fill and Cast. One work-item per output element; every
 * kernel checks its index against `n`, since the global size may be rounded up to a group.
 *
 * Tensors arrive as a buffer and a byte offset into it. A binary kernel given rank 0 reads both
 * inputs at the output's index (their shapes equal the output's); otherwise it maps the
 * output's index to each input's through the output's dims and the inputs' broadcast strides
 * (0 along a dimension the input repeats), as NumPy broadcasting does.
 *
 * Results match the CPU device's: float32 math is done in double and rounded once where the
 * device has doubles (-DTP_FP64), integers wrap, float-to-integer casts saturate with NaN to 0,
 * and integer division by zero raises the launch's flag. */

/* ---- Element functions ---------------------------------------------------------------------- */

/* op_<op>_<dtype> computes one element of an op. The kernels below call them, and so do the
 * kernels the fusion pass generates (opencl_fusion.c), which take this file's text up to the
 * end of this section: a fused chain computes each element exactly as the unfused ops do. */
#define UNARY_FUNCTION(op, T, suffix, expression)                                                  \
    static T op_##op##_##suffix(T x) { return (expression); }
#define BINARY_FUNCTION(op, T, suffix, expression)                                                 \
    static T op_##op##_##suffix(T a, T b) { return (expression); }

/* Relu keeps NaN, as a comparison with NaN is false; Maximum and Minimum give NaN where either
 * operand is, as the CPU does, and b where the two are equal (0 and -0). The gradients take
 * (gradients, features) for ReluGrad and (y, dy) for SigmoidGrad and TanhGrad. */
#define FLOAT_FUNCTIONS(T, M, suffix)                                                              \
    UNARY_FUNCTION(relu, T, suffix, x < (T)0 ? (T)0 : x)                                           \
    UNARY_FUNCTION(neg, T, suffix, -x)                                                             \
    UNARY_FUNCTION(abs, T, suffix, fabs(x))                                                        \
    UNARY_FUNCTION(square, T, suffix, x * x)                                                       \
    UNARY_FUNCTION(sigmoid, T, suffix, (T)((M)1 / ((M)1 + exp(-(M)x))))                            \
    UNARY_FUNCTION(tanh, T, suffix, (T)tanh((M)x))                                                 \
    UNARY_FUNCTION(exp, T, suffix, (T)exp((M)x))                                                   \
    UNARY_FUNCTION(log, T, suffix, (T)log((M)x))                                                   \
    UNARY_FUNCTION(sqrt, T, suffix, (T)sqrt((M)x))                                                 \
    UNARY_FUNCTION(rsqrt, T, suffix, (T)((M)1 / sqrt((M)x)))                                       \
    UNARY_FUNCTION(sign, T, suffix, x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : x)                        \
    BINARY_FUNCTION(add, T, suffix, a + b)                                                         \
    BINARY_FUNCTION(sub, T, suffix, a - b)                                                         \
    BINARY_FUNCTION(mul, T, suffix, a * b)                                                         \
    BINARY_FUNCTION(div, T, suffix, a / b)                                                         \
    BINARY_FUNCTION(maximum, T, suffix, isnan(a) || a > b ? a : b)                                 \
    BINARY_FUNCTION(minimum, T, suffix, isnan(a) || a < b ? a : b)                                 \
    BINARY_FUNCTION(relu_grad, T, suffix, b > (T)0 ? a : (T)0)                                     \
    BINARY_FUNCTION(sigmoid_grad, T, suffix, b * a * ((T)1 - a))                                   \
    BINARY_FUNCTION(tanh_grad, T, suffix, b * ((T)1 - a * a))

/* Integers wrap: the arithmetic is done unsigned, where overflow is defined. Division is not
 * here: its kernel also reports a zero divisor. */
#define INTEGER_FUNCTIONS(T, U, suffix)                                                            \
    UNARY_FUNCTION(relu, T, suffix, x > (T)0 ? x : (T)0)                                           \
    UNARY_FUNCTION(neg, T, suffix, (T)((U)0 - (U)x))                                               \
    UNARY_FUNCTION(abs, T, suffix, x < (T)0 ? (T)((U)0 - (U)x) : x)                                \
    UNARY_FUNCTION(square, T, suffix, (T)((U)x * (U)x))                                            \
    UNARY_FUNCTION(sign, T, suffix, x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : (T)0)                     \
    BINARY_FUNCTION(add, T, suffix, (T)((U)a + (U)b))                                              \
    BINARY_FUNCTION(sub, T, suffix, (T)((U)a - (U)b))                                              \
    BINARY_FUNCTION(mul, T, suffix, (T)((U)a * (U)b))                                              \
    BINARY_FUNCTION(maximum, T, suffix, a > b ? a : b)                                             \
    BINARY_FUNCTION(minimum, T, suffix, a < b ? a : b)                                             \
    BINARY_FUNCTION(relu_grad, T, suffix, b > (T)0 ? a : (T)0)

FLOAT_FUNCTIONS(float, MATH_TYPE_float, float32)
#ifdef TP_FP64
FLOAT_FUNCTIONS(double, MATH_TYPE_double, float64)
#endif
INTEGER_FUNCTIONS(int, uint, int32)
INTEGER_FUNCTIONS(long, ulong, int64)

/* ---- End of the element functions ---------------------------------------------------------- */

/* ---- Unary ----------------------------------------------------------------------------------- */

#define UNARY(op, T, suffix)                                                                       \
    __kernel void op##_##suffix(__global const char *x_base, ulong x_offset,                       \
                                __global char *y_base, ulong y_offset, ulong n) {                  \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        AT(T, y_base, y_offset)[i] = op_##op##_##suffix(CONST_AT(T, x_base, x_offset)[i]);         \
    }

#define FLOAT_UNARY(T, suffix)                                                                     \
    UNARY(relu, T, suffix) UNARY(neg, T, suffix) UNARY(abs, T, suffix) UNARY(square, T, suffix)    \
    UNARY(sigmoid, T, suffix) UNARY(tanh, T, suffix) UNARY(exp, T, suffix) UNARY(log, T, suffix)   \
    UNARY(sqrt, T, suffix) UNARY(rsqrt, T, suffix) UNARY(sign, T, suffix)

#define INTEGER_UNARY(T, suffix)                                                                   \
    UNARY(relu, T, suffix) UNARY(neg, T, suffix) UNARY(abs, T, suffix) UNARY(square, T, suffix)    \
    UNARY(sign, T, suffix)

FLOAT_UNARY(float, float32)
#ifdef TP_FP64
FLOAT_UNARY(double, float64)
#endif
INTEGER_UNARY(int, int32)
INTEGER_UNARY(long, int64)

/* ---- Binary, with broadcasting --------------------------------------------------------------- */

/* The parameters every binary kernel starts with. (Not a variadic macro for the kernels that
 * take more: OpenCL C before 3.0 has none, and NVIDIA's compiler refuses them.) */
#define BINARY_PARAMS                                                                              \
    __global const char *a_base, ulong a_offset, __global const char *b_base, ulong b_offset,      \
        __global char *z_base, ulong z_offset, ulong n, int rank, long8 dims, long8 a_strides,     \
        long8 b_strides

#define BINARY_OPERANDS(T)                                                                         \
    size_t i = get_global_id(0);                                                                   \
    if (i >= n) return;                                                                            \
    long ia = (long)i, ib = (long)i;                                                               \
    if (rank > 0) {                                                                                \
        ia = strided_offset(i, rank, dims, a_strides);                                            \
        ib = strided_offset(i, rank, dims, b_strides);                                            \
    }                                                                                              \
    T a = CONST_AT(T, a_base, a_offset)[ia];                                                       \
    T b = CONST_AT(T, b_base, b_offset)[ib];

#define BINARY(op, T, suffix)                                                                      \
    __kernel void op##_##suffix(BINARY_PARAMS) {                                                   \
        BINARY_OPERANDS(T)                                                                         \
        AT(T, z_base, z_offset)[i] = op_##op##_##suffix(a, b);                                     \
    }

/* Division truncates as C's does; x / -1 wraps instead of trapping on the smallest value, and a
 * zero divisor gives 0 and sets *divided_by_zero, which the plug-in reports as the op's
 * failure. */
#define INTEGER_DIV(T, U, suffix)                                                                  \
    __kernel void div_##suffix(BINARY_PARAMS, __global int *divided_by_zero) {                     \
        BINARY_OPERANDS(T)                                                                         \
        T z = 0;                                                                                   \
        if (b == (T)0)                                                                             \
            *divided_by_zero = 1;                                                                  \
        else if (b == (T)-1)                                                                       \
            z = (T)((U)0 - (U)a);                                                                  \
        else                                                                                       \
            z = a / b;                                                                             \
        AT(T, z_base, z_offset)[i] = z;                                                            \
    }

BINARY(add, float, float32) BINARY(sub, float, float32)
BINARY(mul, float, float32) BINARY(div, float, float32)
BINARY(maximum, float, float32) BINARY(minimum, float, float32)
#ifdef TP_FP64
BINARY(add, double, float64) BINARY(sub, double, float64)
BINARY(mul, double, float64) BINARY(div, double, float64)
BINARY(maximum, double, float64) BINARY(minimum, double, float64)
#endif
BINARY(add, int, int32) BINARY(sub, int, int32) BINARY(mul, int, int32)
BINARY(maximum, int, int32) BINARY(minimum, int, int32)
INTEGER_DIV(int, uint, int32)
BINARY(add, long, int64) BINARY(sub, long, int64) BINARY(mul, long, int64)
BINARY(maximum, long, int64) BINARY(minimum, long, int64)
INTEGER_DIV(long, ulong, int64)

/* ---- Activation gradients: two inputs of the output's shape ---------------------------------- */

#define GRADIENT(op, T, suffix)                                                                    \
    __kernel void op##_##suffix(__global const char *a_base, ulong a_offset,                       \
                                __global const char *b_base, ulong b_offset,                       \
                                __global char *z_base, ulong z_offset, ulong n) {                  \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        AT(T, z_base, z_offset)[i] = op_##op##_##suffix(CONST_AT(T, a_base, a_offset)[i],          \
                                                        CONST_AT(T, b_base, b_offset)[i]);         \
    }

GRADIENT(relu_grad, float, float32)
GRADIENT(sigmoid_grad, float, float32)
GRADIENT(tanh_grad, float, float32)
#ifdef TP_FP64
GRADIENT(relu_grad, double, float64)
GRADIENT(sigmoid_grad, double, float64)
GRADIENT(tanh_grad, double, float64)
#endif
GRADIENT(relu_grad, int, int32)
GRADIENT(relu_grad, long, int64)

/* ---- Fill: every element a copy of the one-element tensor `value` ---------------------------- */

#define FILL(name, T)                                                                              \
    __kernel void name(__global const char *v_base, ulong v_offset, __global char *y_base,         \
                       ulong y_offset, ulong n) {                                                  \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        AT(T, y_base, y_offset)[i] = CONST_AT(T, v_base, v_offset)[0];                             \
    }

FILL(fill_1, uchar)
FILL(fill_4, uint)
FILL(fill_8, ulong)

/* ---- Cast ------------------------------------------------------------------------------------ */

/* Each source dtype read as the value it stands for: floats as themselves, integers and bools
 * as integers (a bool byte is 0 or 1). */
#define FROM_float32 float
#define FROM_float64 double
#define FROM_int32 int
#define FROM_int64 long
#define FROM_uint8 uchar
#define FROM_bool uchar

/* To each destination dtype: from a float, saturating with NaN to 0, as the CPU does; from an
 * integer, wrapping. The bounds are written in the source's own float type (a float32 source
 * needs no double): where an integer limit is not a float of that type it rounds up to the
 * next power of two, past every value that still fits. */
#define SATURATE(x, T, low, high, low_value, high_value)                                           \
    (isnan(x) ? (T)0 : (x) <= (low) ? (low_value) : (x) >= (high) ? (high_value) : (T)(x))

#define FROM_FLOAT32_float32(x) (x)
#define FROM_FLOAT32_float64(x) ((double)(x))
#define FROM_FLOAT32_int32(x) SATURATE(x, int, -2147483648.0f, 2147483647.0f, INT_MIN, INT_MAX)
#define FROM_FLOAT32_int64(x) SATURATE(x, long, -9223372036854775808.0f, 9223372036854775807.0f, LONG_MIN, \
                                                   LONG_MAX)
#define FROM_FLOAT32_uint8(x) SATURATE(x, uchar, 0.0f, 255.0f, (uchar)0, (uchar)255)
#define FROM_FLOAT32_bool(x) ((uchar)((x) != 0.0f))
#define FROM_FLOAT64_float32(x) ((float)(x))
#define FROM_FLOAT64_float64(x) (x)
#define FROM_FLOAT64_int32(x) SATURATE(x, int, -2147483648.0, 2147483647.0, INT_MIN, INT_MAX)
#define FROM_FLOAT64_int64(x) SATURATE(x, long, -9223372036854775808.0, 9223372036854775807.0, LONG_MIN, \
                                                  LONG_MAX)
#define FROM_FLOAT64_uint8(x) SATURATE(x, uchar, 0.0, 255.0, (uchar)0, (uchar)255)
#define FROM_FLOAT64_bool(x) ((uchar)((x) != 0.0))
#define FROM_INTEGER_float32(x) ((float)(x))
#define FROM_INTEGER_float64(x) ((double)(x))
#define FROM_INTEGER_int32(x) ((int)(uint)(ulong)(x))
#define FROM_INTEGER_int64(x) ((long)(x))
#define FROM_INTEGER_uint8(x) ((uchar)((ulong)(x) & 0xff))
#define FROM_INTEGER_bool(x) ((uchar)((x) != 0))
#define TO_TYPE_float32 float
#define TO_TYPE_float64 double
#define TO_TYPE_int32 int
#define TO_TYPE_int64 long
#define TO_TYPE_uint8 uchar
#define TO_TYPE_bool uchar

#define CAST(from, to, convert)                                                                    \
    __kernel void cast_##from##_##to(__global const char *x_base, ulong x_offset,                  \
                                     __global char *y_base, ulong y_offset, ulong n) {             \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        FROM_##from x = CONST_AT(FROM_##from, x_base, x_offset)[i];                                \
        AT(TO_TYPE_##to, y_base, y_offset)[i] = convert##_##to(x);                                 \
    }

#define CASTS(from, convert)                                                                       \
    CAST(from, float32, convert) CAST(from, int32, convert) CAST(from, int64, convert)             \
    CAST(from, uint8, convert) CAST(from, bool, convert)

CASTS(float32, FROM_FLOAT32)
CASTS(int32, FROM_INTEGER)
CASTS(int64, FROM_INTEGER)
CASTS(uint8, FROM_INTEGER)
CASTS(bool, FROM_INTEGER)
#ifdef TP_FP64
CASTS(float64, FROM_FLOAT64)
CAST(float64, float64, FROM_FLOAT64)
CAST(float32, float64, FROM_FLOAT32)
CAST(int32, float64, FROM_INTEGER)
CAST(int64, float64, FROM_INTEGER)
CAST(uint8, float64, FROM_INTEGER)
CAST(bool, float64, FROM_INTEGER)
#endif
