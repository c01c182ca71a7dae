/* SPDX-License-Identifier: Apache-2.0 */
/* Element-wise kernels: cheap unary ops (the transcendental ones are in cpu_transcendental.c),
 * NumPy-broadcasting binary arithmetic (Maximum and Minimum included), AddN, BiasAdd,
 * Fill, the *Like ops, Identity and Cast. */
#include <math.h>
#include <stdbool.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu_kernels.h"
#include "tensorplug/float16.h"

/* ---- Unary ----------------------------------------------------------------------------------- */

typedef enum { RELU, NEG, ABS, SQUARE, SIGN } unary_t;

typedef struct {
    unary_t op;
    tp_dtype_t dtype;
    const void *x;
    void *y;
} unary_job_t;

static double apply_float(unary_t op, double v) {
    switch (op) {
    case RELU: return v < 0 ? 0 : v; /* NaN passes through, as in NumPy */
    case NEG: return -v;
    case ABS: return fabs(v);
    case SQUARE: return v * v;
    case SIGN: return v > 0 ? 1.0 : v < 0 ? -1.0 : v; /* 0, -0 and NaN are their own sign */
    }
    return v;
}

/* Integer ops on the element widened to 64 bits (cpu_dtypes.h), `negative` saying whether a
 * signed one is below 0. They wrap as the hardware does, without undefined behaviour: the
 * store keeps the dtype's low bits, so Neg of an unsigned value wraps too, as NumPy's does. */
static uint64_t apply_integer(unary_t op, uint64_t v, bool negative) {
    switch (op) {
    case RELU: return negative ? 0 : v;
    case NEG: return 0 - v;
    case ABS: return negative ? 0 - v : v;
    case SQUARE: return v * v;
    case SIGN: return negative ? UINT64_MAX : v != 0; /* UINT64_MAX is stored as -1 */
    default: return v;
    }
}

static void unary_range(void *arg, int64_t begin, int64_t end) {
    const unary_job_t *job = arg;
    switch (job->dtype) {
    case TP_FLOAT32: {
        const float *x = job->x;
        float *y = job->y;
        if (job->op == RELU) {
            for (int64_t i = begin; i < end; i++) y[i] = x[i] < 0 ? 0.0f : x[i];
        } else {
            for (int64_t i = begin; i < end; i++) y[i] = (float)apply_float(job->op, x[i]);
        }
        break;
    }
    case TP_FLOAT64: {
        const double *x = job->x;
        double *y = job->y;
        for (int64_t i = begin; i < end; i++) y[i] = apply_float(job->op, x[i]);
        break;
    }
#define INTEGER_UNARY_CASE(dt, T, U, is_signed)                                                 \
    case dt: {                                                                                  \
        const T *x = job->x;                                                                    \
        T *y = job->y;                                                                          \
        for (int64_t i = begin; i < end; i++) {                                                 \
            uint64_t v = CPU_WIDEN(is_signed, x[i]);                                            \
            y[i] = (T)apply_integer(job->op, v, is_signed && (int64_t)v < 0);                   \
        }                                                                                       \
        break;                                                                                  \
    }
        CPU_FOR_EACH_INTEGER(INTEGER_UNARY_CASE)
#undef INTEGER_UNARY_CASE
    default: break;
    }
}

/* The cheap float ops, one loop each with the op chosen outside it: a per-element switch
 * through apply_float (a call the compiler cannot vectorise) runs them at a fraction of the
 * memory's speed. restrict: an op's output never overlaps its input. Each expression is
 * branch-free once vectorised (compares and blends). */
#define CHEAP_FLOAT_LOOP(T, EXPR)                                                              \
    do {                                                                                       \
        const T *restrict x = (const T *)job->x + begin;                                       \
        T *restrict y = (T *)job->y + begin;                                                   \
        for (int64_t i = 0; i < end - begin; i++) {                                            \
            T v = x[i];                                                                        \
            y[i] = (EXPR);                                                                     \
        }                                                                                      \
    } while (0)

/* fabs, not a compare: it clears the sign of -0 and NaN as the old path did. */
#define FABS_OF(v) _Generic((v), float: fabsf, default: fabs)(v)

#define CHEAP_FLOAT_OPS(T)                                                                     \
    do {                                                                                       \
        switch (job->op) {                                                                     \
        case RELU: CHEAP_FLOAT_LOOP(T, v < 0 ? (T)0 : v); break; /* NaN passes */              \
        case NEG: CHEAP_FLOAT_LOOP(T, -v); break;                                              \
        case ABS: CHEAP_FLOAT_LOOP(T, FABS_OF(v)); break;                                      \
        case SQUARE: CHEAP_FLOAT_LOOP(T, v * v); break;                                        \
        case SIGN: CHEAP_FLOAT_LOOP(T, v > 0 ? (T)1 : v < 0 ? (T)-1 : v); break;               \
        default: break;                                                                        \
        }                                                                                      \
    } while (0)

static void cheap_float_range(void *arg, int64_t begin, int64_t end) {
    const unary_job_t *job = arg;
    if (job->dtype == TP_FLOAT32)
        CHEAP_FLOAT_OPS(float);
    else
        CHEAP_FLOAT_OPS(double);
}

static void run_unary(unary_t op, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    unary_job_t job = {op, x.view.dtype, x.data, y.data};
    bool cheap = op == RELU || op == NEG || op == ABS || op == SQUARE || op == SIGN;
    bool is_float = job.dtype == TP_FLOAT32 || job.dtype == TP_FLOAT64;
    cpu_parallel_for(x.view.num_elements, cheap ? 1 : 16,
                     cheap && is_float ? cheap_float_range : unary_range, &job);
}

#define UNARY_KERNEL(name, op)                                                                 \
    static void name(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) { \
        (void)kernel;                                                                          \
        run_unary(op, context, status);                                                        \
    }
UNARY_KERNEL(relu, RELU)
UNARY_KERNEL(neg, NEG)
UNARY_KERNEL(abs_kernel, ABS)
UNARY_KERNEL(square, SQUARE)
UNARY_KERNEL(sign_kernel, SIGN)

/* ---- Copies and constants -------------------------------------------------------------------- */

static void constant(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t y;
    const void *bytes = NULL;
    uint64_t size = 0;
    tp_cpu_host->kernel_attr_bytes(context, "value", &bytes, &size, status);
    if (cpu_failed(status) || !cpu_output(context, 0, &y, status)) return;
    if (size > 0) memcpy(y.data, bytes, (size_t)size);
}

/* Writes `value`, converted to the tensor's dtype as Cast converts a float64, to every element
 * of `t`. */
static void fill_with(cpu_tensor_t *t, double value) {
    _Alignas(16) unsigned char element[16] = {0};
    cpu_store_double(element, t->view.dtype, 0, value);
    cpu_fill_elements(t->data, t->view.num_elements, element, cpu_element_size(&t->view));
}

static void zeros_like(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t y;
    if (cpu_output(context, 0, &y, status)) fill_with(&y, 0);
}

static void ones_like(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t y;
    if (cpu_output(context, 0, &y, status)) fill_with(&y, 1);
}

static void fill(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t value, y;
    if (!cpu_input(context, 0, &value, status) || !cpu_output(context, 0, &y, status)) return;
    size_t size = (size_t)value.view.byte_size;
    for (int64_t i = 0; i < y.view.num_elements; i++)
        memcpy((char *)y.data + (size_t)i * size, value.data, size);
}

/* ---- Cast ------------------------------------------------------------------------------------ */

/* One element on its way through Cast: a float's value (every float of every dtype is a
 * double), or an integer's or bool's bits widened (cpu_dtypes.h). */
typedef struct {
    bool is_float;
    double value;
    uint64_t bits;
    bool is_signed;
} element_t;

static element_t load_element(const void *data, tp_dtype_t dtype, int64_t i) {
    switch (dtype) {
    case TP_FLOAT32: return (element_t){true, ((const float *)data)[i], 0, false};
    case TP_FLOAT64: return (element_t){true, ((const double *)data)[i], 0, false};
    case TP_FLOAT16:
        return (element_t){true, tp_float16_to_float(((const uint16_t *)data)[i]), 0, false};
    case TP_BFLOAT16:
        return (element_t){true, tp_bfloat16_to_float(((const uint16_t *)data)[i]), 0, false};
    default: return (element_t){false, 0, cpu_load_integer(data, dtype, i), cpu_is_signed(dtype)};
    }
}

/* A float converted to an integer type saturates and maps NaN to 0, instead of the undefined
 * behaviour of a plain C conversion. */
static uint64_t saturate(double v, tp_dtype_t dtype) {
    if (isnan(v)) return 0;
    int bits = cpu_integer_bits(dtype);
    if (cpu_is_signed(dtype)) {
        double bound = ldexp(1.0, bits - 1); /* one past the largest: INT64_MAX is no double */
        if (v <= -bound) return cpu_integer_min(dtype);
        if (v >= bound) return cpu_integer_max(dtype);
        return (uint64_t)(int64_t)v;
    }
    if (v <= 0) return 0;
    if (v >= ldexp(1.0, bits)) return cpu_integer_max(dtype);
    return (uint64_t)v;
}

/* An integer as a double that rounds to a 16-bit float as the integer itself would: exact
 * below 2^53; above, the bits past the 53rd are folded into the last one kept (rounding to
 * odd), so that the double never lands on a midpoint the integer was not on, which rounding
 * twice, to a double and then to 11 or 8 bits, could otherwise do. */
static double integer_for_narrowing(const element_t *e) {
    bool negative = e->is_signed && (int64_t)e->bits < 0;
    uint64_t magnitude = negative ? 0 - e->bits : e->bits;
    int dropped = 0;
    while ((magnitude >> dropped) >> 53 != 0) dropped++;
    uint64_t kept = magnitude >> dropped;
    if (dropped > 0 && (magnitude & (((uint64_t)1 << dropped) - 1)) != 0) kept |= 1;
    double value = ldexp((double)kept, dropped);
    return negative ? -value : value;
}

static void store_element(void *data, tp_dtype_t dtype, int64_t i, const element_t *e) {
    /* From an integer directly: through double first would round twice. */
    switch (dtype) {
    case TP_FLOAT32:
        ((float *)data)[i] = e->is_float    ? (float)e->value
                             : e->is_signed ? (float)(int64_t)e->bits
                                            : (float)e->bits;
        break;
    case TP_FLOAT64:
        ((double *)data)[i] = e->is_float    ? e->value
                              : e->is_signed ? (double)(int64_t)e->bits
                                             : (double)e->bits;
        break;
    case TP_FLOAT16:
        ((uint16_t *)data)[i] =
            tp_float16_from_double(e->is_float ? e->value : integer_for_narrowing(e));
        break;
    case TP_BFLOAT16:
        ((uint16_t *)data)[i] =
            tp_bfloat16_from_double(e->is_float ? e->value : integer_for_narrowing(e));
        break;
    case TP_BOOL: ((bool *)data)[i] = e->is_float ? e->value != 0 : e->bits != 0; break;
    default:
        /* Integer to integer keeps the low bits, as C's conversions do. */
        cpu_store_integer(data, dtype, i, e->is_float ? saturate(e->value, dtype) : e->bits);
        break;
    }
}

void cpu_store_double(void *data, tp_dtype_t dtype, int64_t i, double value) {
    element_t e = {true, value, 0, false};
    store_element(data, dtype, i, &e);
}

typedef struct {
    const void *x;
    tp_dtype_t from;
    void *y;
    tp_dtype_t to;
    size_t size; /* of an output element */
} cast_job_t;

static void cast_range(void *arg, int64_t begin, int64_t end) {
    const cast_job_t *job = arg;
    for (int64_t i = begin; i < end; i++) {
        element_t e = load_element(job->x, job->from, i);
        store_element(job->y, job->to, i, &e);
    }
}

/* Direct loops for the conversions models use most, with the rules of store_element written
 * out for the pair: cast_range loads and stores each element through a switch on both dtypes,
 * which runs at a twentieth of the memory's speed. Floats to integers saturate, NaN to 0,
 * through double (exact for every float32 and for every bound here), branch-free once
 * vectorised. */
#define CAST_LOOP(From, To, EXPR)                                                              \
    static void cast_##From##_##To(void *arg, int64_t begin, int64_t end) {                    \
        const cast_job_t *job = arg;                                                           \
        const From *restrict x = (const From *)job->x + begin;                                 \
        To *restrict y = (To *)job->y + begin;                                                 \
        for (int64_t i = 0; i < end - begin; i++) {                                            \
            From v = x[i];                                                                     \
            y[i] = (EXPR);                                                                     \
        }                                                                                      \
    }
#define TO_INT32(v)                                                                            \
    ((double)(v) != (double)(v)          ? 0                                                   \
     : (double)(v) <= -2147483648.0      ? INT32_MIN                                           \
     : (double)(v) >= 2147483648.0       ? INT32_MAX                                           \
                                         : (int32_t)(v))
#define TO_INT64(v)                                                                            \
    ((double)(v) != (double)(v)               ? 0                                              \
     : (double)(v) <= -9223372036854775808.0 ? INT64_MIN                                       \
     : (double)(v) >= 9223372036854775808.0  ? INT64_MAX                                       \
                                              : (int64_t)(v))
CAST_LOOP(float, double, (double)v)
CAST_LOOP(double, float, (float)v)
CAST_LOOP(double, int32_t, TO_INT32(v))
CAST_LOOP(float, int64_t, TO_INT64(v))
CAST_LOOP(double, int64_t, TO_INT64(v))
CAST_LOOP(int32_t, float, (float)v)
CAST_LOOP(int32_t, double, (double)v)
CAST_LOOP(int64_t, float, (float)v)
CAST_LOOP(int64_t, double, (double)v)
CAST_LOOP(int32_t, int64_t, (int64_t)v)
CAST_LOOP(int64_t, int32_t, (int32_t)(uint32_t)(uint64_t)v) /* the low bits, as C's do */
CAST_LOOP(bool, float, v ? 1.0f : 0.0f)
CAST_LOOP(float, bool, v != 0)
#undef CAST_LOOP

/* float32 to int32, the conversion models use most, on SSE2 (every x86-64): the conversion
 * instruction gives 0x80000000 for NaN and for whatever lies beyond int32 either way, which is
 * the answer below and is flipped to 0x7fffffff above and masked to 0 for NaN: four
 * instructions a vector, where the selects of TO_INT32 compile to some twenty. */
static void cast_float_int32_t(void *arg, int64_t begin, int64_t end) {
    const cast_job_t *job = arg;
    const float *restrict x = (const float *)job->x + begin;
    int32_t *restrict y = (int32_t *)job->y + begin;
    int64_t n = end - begin, i = 0;
#if defined(__SSE2__)
    const __m128 above = _mm_set1_ps(2147483648.0f);
    for (; i + 4 <= n; i += 4) {
        __m128 v = _mm_loadu_ps(x + i);
        __m128i r = _mm_cvttps_epi32(v);
        r = _mm_xor_si128(r, _mm_castps_si128(_mm_cmpge_ps(v, above)));
        r = _mm_and_si128(r, _mm_castps_si128(_mm_cmpord_ps(v, v)));
        _mm_storeu_si128((__m128i *)(void *)(y + i), r);
    }
#endif
    for (; i < n; i++) y[i] = TO_INT32(x[i]);
}

static cpu_range_fn direct_cast(tp_dtype_t from, tp_dtype_t to) {
#define PAIR(a, b) ((uint32_t)(a) << 16 | (uint32_t)(b))
    switch (PAIR(from, to)) {
    case PAIR(TP_FLOAT32, TP_FLOAT64): return cast_float_double;
    case PAIR(TP_FLOAT64, TP_FLOAT32): return cast_double_float;
    case PAIR(TP_FLOAT32, TP_INT32): return cast_float_int32_t;
    case PAIR(TP_FLOAT64, TP_INT32): return cast_double_int32_t;
    case PAIR(TP_FLOAT32, TP_INT64): return cast_float_int64_t;
    case PAIR(TP_FLOAT64, TP_INT64): return cast_double_int64_t;
    case PAIR(TP_INT32, TP_FLOAT32): return cast_int32_t_float;
    case PAIR(TP_INT32, TP_FLOAT64): return cast_int32_t_double;
    case PAIR(TP_INT64, TP_FLOAT32): return cast_int64_t_float;
    case PAIR(TP_INT64, TP_FLOAT64): return cast_int64_t_double;
    case PAIR(TP_INT32, TP_INT64): return cast_int32_t_int64_t;
    case PAIR(TP_INT64, TP_INT32): return cast_int64_t_int32_t;
    case PAIR(TP_BOOL, TP_FLOAT32): return cast_bool_float;
    case PAIR(TP_FLOAT32, TP_BOOL): return cast_float_bool;
    default: return NULL;
    }
#undef PAIR
}

static void copy_range(void *arg, int64_t begin, int64_t end) {
    const cast_job_t *job = arg;
    size_t size = job->size;
    memcpy((char *)job->y + (size_t)begin * size, (const char *)job->x + (size_t)begin * size,
           (size_t)(end - begin) * size);
}

static void cast(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    cast_job_t job = {x.data, x.view.dtype, y.data, y.view.dtype, cpu_element_size(&y.view)};
    cpu_range_fn direct = job.from == job.to ? copy_range : direct_cast(job.from, job.to);
    cpu_parallel_for(x.view.num_elements, direct != NULL ? 1 : 4,
                     direct != NULL ? direct : cast_range, &job);
}

/* ---- Broadcasting binary arithmetic ---------------------------------------------------------- */

typedef enum { ADD, SUB, MUL, DIV, POW, MAXIMUM, MINIMUM } binary_t;

typedef struct {
    binary_t op;
    tp_dtype_t dtype;
    const void *x, *y;
    void *z;
    int32_t rank;
    int64_t dims[TP_MAX_RANK];
    int64_t x_strides[TP_MAX_RANK], y_strides[TP_MAX_RANK]; /* 0 where broadcast */
    bool same_shape;
    bool divided_by_zero;
    bool negative_exponent; /* a signed integer Pow's: TensorFlow refuses it */
} binary_job_t;

/* C's pow of the element's own width: float32 through powf, so that it vectorises as the
 * other spans do. */
#define POW_OF(u, v) _Generic((u), float: powf, default: pow)((u), (v))

/* The larger (smaller) of u and v, NaN where either is, as TensorFlow's Maximum (Minimum):
 * u wins where it is beyond v or NaN, else v, NaN or not. Compares and a blend once
 * vectorised, with no branch on the data. */
#define MAX_OF(u, v) ((((u) > (v)) | ((u) != (u))) ? (u) : (v))
#define MIN_OF(u, v) ((((u) < (v)) | ((u) != (u))) ? (u) : (v))

/* p to the power q by squaring, wrapping as repeated Mul would; q >= 0. */
static uint64_t integer_pow(uint64_t p, uint64_t q) {
    uint64_t result = 1;
    while (q != 0) {
        if (q & 1) result *= p;
        p *= p;
        q >>= 1;
    }
    return result;
}

/* The element offsets of x and y for output element i. */
static void offsets_of(const binary_job_t *job, int64_t i, int64_t *x_at, int64_t *y_at) {
    int64_t xo = 0, yo = 0;
    for (int32_t d = job->rank - 1; d >= 0; d--) {
        int64_t coordinate = i % job->dims[d];
        i /= job->dims[d];
        xo += coordinate * job->x_strides[d];
        yo += coordinate * job->y_strides[d];
    }
    *x_at = xo;
    *y_at = yo;
}

/* z = x OP y over one span of the innermost dimension, where x and y each either advance
 * (stride 1) or repeat one element (stride 0, broadcast). Each case is a plain loop that the
 * compiler vectorises; `u` and `v` are the elements of x and y. */
#define FLOAT_SPAN(T, EXPR)                                                                     \
    do {                                                                                        \
        if (sx == 1 && sy == 1) {                                                               \
            for (int64_t k = 0; k < n; k++) {                                                   \
                T u = xp[k], v = yp[k];                                                         \
                zp[k] = EXPR;                                                                   \
            }                                                                                   \
        } else if (sx == 1) {                                                                   \
            T v = yp[0];                                                                        \
            for (int64_t k = 0; k < n; k++) {                                                   \
                T u = xp[k];                                                                    \
                zp[k] = EXPR;                                                                   \
            }                                                                                   \
        } else if (sy == 1) {                                                                   \
            T u = xp[0];                                                                        \
            for (int64_t k = 0; k < n; k++) {                                                   \
                T v = yp[k];                                                                    \
                zp[k] = EXPR;                                                                   \
            }                                                                                   \
        } else {                                                                                \
            T u = xp[0], v = yp[0];                                                             \
            for (int64_t k = 0; k < n; k++) zp[k] = EXPR;                                       \
        }                                                                                       \
    } while (0)

/* Walks [begin, end) span by span: the broadcast offsets are computed once per span, not per
 * element. */
#define FLOAT_LOOP(T)                                                                           \
    do {                                                                                        \
        const T *x = job->x, *y = job->y;                                                       \
        T *z = job->z;                                                                          \
        int32_t last = job->rank - 1;                                                           \
        int64_t inner = job->same_shape || last < 0 ? end - begin : job->dims[last];            \
        int64_t sx = job->same_shape || last < 0 ? 1 : (job->x_strides[last] != 0);            \
        int64_t sy = job->same_shape || last < 0 ? 1 : (job->y_strides[last] != 0);            \
        for (int64_t i = begin; i < end;) {                                                     \
            int64_t a = i, b = i;                                                               \
            if (!job->same_shape) offsets_of(job, i, &a, &b);                                   \
            int64_t n = job->same_shape ? end - i : inner - i % inner;                          \
            if (n > end - i) n = end - i;                                                       \
            const T *xp = x + a, *yp = y + b;                                                   \
            T *zp = z + i;                                                                      \
            switch (job->op) {                                                                  \
            case ADD: FLOAT_SPAN(T, u + v); break;                                              \
            case SUB: FLOAT_SPAN(T, u - v); break;                                              \
            case MUL: FLOAT_SPAN(T, u * v); break;                                              \
            case DIV: FLOAT_SPAN(T, u / v); break;                                              \
            case POW: FLOAT_SPAN(T, POW_OF(u, v)); break;                                       \
            case MAXIMUM: FLOAT_SPAN(T, MAX_OF(u, v)); break;                                   \
            case MINIMUM: FLOAT_SPAN(T, MIN_OF(u, v)); break;                                   \
            }                                                                                   \
            i += n;                                                                             \
        }                                                                                       \
    } while (0)

/* Integer arithmetic wraps (through unsigned), and division by zero is reported. Division
 * truncates, as C's does; the most negative value divided by -1 wraps to itself. */
#define INTEGER_LOOP(T, U, is_signed)                                                           \
    do {                                                                                        \
        const T *x = job->x, *y = job->y;                                                       \
        T *z = job->z;                                                                          \
        for (int64_t i = begin; i < end; i++) {                                                 \
            int64_t a = i, b = i;                                                               \
            if (!job->same_shape) offsets_of(job, i, &a, &b);                                   \
            U p = (U)x[a], q = (U)y[b];                                                         \
            switch (job->op) {                                                                  \
            case ADD: z[i] = (T)(p + q); break;                                                 \
            case SUB: z[i] = (T)(p - q); break;                                                 \
            case MUL: z[i] = (T)(p * q); break;                                                 \
            case DIV:                                                                           \
                if (y[b] == 0) {                                                                \
                    job->divided_by_zero = true;                                                \
                    z[i] = 0;                                                                   \
                } else if ((is_signed) && y[b] == (T)-1) {                                      \
                    z[i] = (T)(0 - p);                                                          \
                } else {                                                                        \
                    z[i] = (T)(x[a] / y[b]);                                                    \
                }                                                                               \
                break;                                                                          \
            case POW:                                                                           \
                if ((is_signed) && (int64_t)y[b] < 0) {                                         \
                    job->negative_exponent = true;                                              \
                    z[i] = 0;                                                                   \
                } else {                                                                        \
                    z[i] = (T)integer_pow((uint64_t)p, (uint64_t)q);                            \
                }                                                                               \
                break;                                                                          \
            case MAXIMUM: z[i] = x[a] > y[b] ? x[a] : y[b]; break;                              \
            case MINIMUM: z[i] = x[a] < y[b] ? x[a] : y[b]; break;                              \
            }                                                                                   \
        }                                                                                       \
    } while (0)

static void binary_range(void *arg, int64_t begin, int64_t end) {
    binary_job_t *job = arg;
    switch (job->dtype) {
    case TP_FLOAT32: FLOAT_LOOP(float); break;
    case TP_FLOAT64: FLOAT_LOOP(double); break;
#define INTEGER_CASE(dt, T, U, is_signed)                                                       \
    case dt: INTEGER_LOOP(T, U, is_signed); break;
        CPU_FOR_EACH_INTEGER(INTEGER_CASE)
#undef INTEGER_CASE
    default: break;
    }
}

void cpu_broadcast_strides(const tp_tensor_view_t *view, int32_t rank, int64_t *strides) {
    int64_t stride = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        int32_t own = d - (rank - view->rank);
        int64_t dim = own >= 0 ? view->dims[own] : 1;
        strides[d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
}

static void run_binary(binary_t op, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    cpu_tensor_t x, y, z;
    if (!cpu_input(context, 0, &x, status) || !cpu_input(context, 1, &y, status) ||
        !cpu_output(context, 0, &z, status))
        return;
    binary_job_t job = {.op = op, .dtype = x.view.dtype, .x = x.data, .y = y.data, .z = z.data,
                        .rank = z.view.rank};
    job.same_shape = x.view.num_elements == z.view.num_elements &&
                     y.view.num_elements == z.view.num_elements;
    for (int32_t d = 0; d < z.view.rank; d++) job.dims[d] = z.view.dims[d];
    cpu_broadcast_strides(&x.view, z.view.rank, job.x_strides);
    cpu_broadcast_strides(&y.view, z.view.rank, job.y_strides);
    /* Division flags zero divisors, Pow negative exponents, from every slice; one thread
     * keeps that simple. */
    if ((op == DIV || op == POW) && cpu_is_integer(job.dtype))
        binary_range(&job, 0, z.view.num_elements);
    else
        cpu_parallel_for(z.view.num_elements, job.same_shape ? 1 : 8, binary_range, &job);
    if (job.divided_by_zero)
        tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT, "Div: integer division by zero");
    if (job.negative_exponent)
        tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT,
                                "Pow: integers to negative integer powers are not allowed");
}

#define BINARY_KERNEL(name, op)                                                                \
    static void name(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) { \
        (void)kernel;                                                                          \
        run_binary(op, context, status);                                                       \
    }
BINARY_KERNEL(add, ADD)
BINARY_KERNEL(sub, SUB)
BINARY_KERNEL(mul, MUL)
BINARY_KERNEL(divide, DIV)
BINARY_KERNEL(power, POW)
BINARY_KERNEL(maximum, MAXIMUM)
BINARY_KERNEL(minimum, MINIMUM)

/* ---- AddN and BiasAdd ------------------------------------------------------------------------ */

static void add_n(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t first, z;
    if (!cpu_input(context, 0, &first, status) || !cpu_output(context, 0, &z, status)) return;
    if (first.view.byte_size > 0) memcpy(z.data, first.data, first.view.byte_size);
    int32_t count = tp_cpu_host->kernel_num_inputs(context);
    for (int32_t k = 1; k < count; k++) {
        cpu_tensor_t x;
        if (!cpu_input(context, k, &x, status)) return;
        binary_job_t job = {.op = ADD, .dtype = x.view.dtype, .x = z.data, .y = x.data,
                            .z = z.data, .same_shape = true};
        cpu_parallel_for(z.view.num_elements, 1, binary_range, &job);
    }
}

static void bias_add(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, bias, z;
    if (!cpu_input(context, 0, &x, status) || !cpu_input(context, 1, &bias, status) ||
        !cpu_output(context, 0, &z, status))
        return;
    binary_job_t job = {.op = ADD, .dtype = x.view.dtype, .x = x.data, .y = bias.data,
                        .z = z.data, .rank = 2};
    int64_t channels = bias.view.dims[0];
    job.dims[0] = channels == 0 ? 0 : x.view.num_elements / channels;
    job.dims[1] = channels;
    job.x_strides[0] = channels;
    job.x_strides[1] = 1;
    job.y_strides[0] = 0;
    job.y_strides[1] = 1;
    cpu_parallel_for(z.view.num_elements, 8, binary_range, &job);
}

void cpu_register_elementwise_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "Relu", "T", CPU_NUMBERS, relu, status);
    cpu_register(registrar, "Neg", "T", CPU_NUMBERS, neg, status);
    cpu_register(registrar, "Abs", "T", CPU_NUMBERS, abs_kernel, status);
    cpu_register(registrar, "Square", "T", CPU_NUMBERS, square, status);
    cpu_register(registrar, "Sign", "T", CPU_NUMBERS, sign_kernel, status);
    /* These move bytes, convert or make values: 16-bit floats are theirs to handle. */
    cpu_register_native(registrar, "Const", "dtype", CPU_ALL, constant, status);
    cpu_register_native(registrar, "Identity", "T", CPU_ALL, cpu_copy_kernel, status);
    cpu_register_native(registrar, "ZerosLike", "T", CPU_ALL, zeros_like, status);
    cpu_register_native(registrar, "OnesLike", "T", CPU_ALL, ones_like, status);
    cpu_register_native(registrar, "Fill", "T", CPU_ALL, fill, status);
    cpu_register_native(registrar, "Cast", "SrcT", CPU_ALL, cast, status);
    cpu_register(registrar, "Add", "T", CPU_NUMBERS, add, status);
    cpu_register(registrar, "Sub", "T", CPU_NUMBERS, sub, status);
    cpu_register(registrar, "Mul", "T", CPU_NUMBERS, mul, status);
    cpu_register(registrar, "Div", "T", CPU_NUMBERS, divide, status);
    cpu_register(registrar, "Pow", "T", CPU_NUMBERS, power, status);
    cpu_register(registrar, "Maximum", "T", CPU_NUMBERS, maximum, status);
    cpu_register(registrar, "Minimum", "T", CPU_NUMBERS, minimum, status);
    cpu_register(registrar, "AddN", "T", CPU_NUMBERS, add_n, status);
    cpu_register(registrar, "BiasAdd", "T", CPU_NUMBERS, bias_add, status);
}
