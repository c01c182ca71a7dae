/* SPDX-License-Identifier: Apache-2.0 */
/* The reduction loops of cpu_math.h (Sum, Prod, Max and Min of a contiguous run, and of rows
 * combined column by column), written once over cpu_math_simd.h's vectors and included by it
 * once per element type: R_P the prefix of that type's macros (F_ or D_), R_T the type.
 * Besides cpu_math_simd.h's macros, an instance defines for each prefix:
 *   F_MIN(acc, v)         the smaller, acc where v is NaN
 *   F_GT(a, b) F_NANS(v)  the mask of a > b, of v's NaN lanes
 *   F_MASK_OR(a, b) F_ANY(mask) F_NONE  two masks joined, whether any lane is set, no lane
 * Sums are pairwise, as cpu_reduce_runs.c promises; Max and Min keep a NaN. */
#define R(name) MATH_CAT(R_P, name)

/* The value v wins over the accumulator: v beyond it, or NaN. */
static inline R_T R(pick)(bool larger, R_T v, R_T acc) {
    bool beyond = larger ? v > acc : v < acc;
    return (beyond | (v != v)) ? v : acc;
}

static inline R(V) R(pick_vector)(bool larger, R(V) v, R(V) acc) {
    R(MASK) beyond = larger ? R(GT)(v, acc) : R(GT)(acc, v);
    return R(SELECT)(R(MASK_OR)(beyond, R(NANS)(v)), v, acc);
}

/* The lanes of four accumulators folded into one value by `op`, pairwise. */
static R_T R(fold)(cpu_math_reduce_t op, R(V) *acc) {
    enum { W = R(W) };
    R_T lanes[4 * W];
    for (int u = 0; u < 4; u++) R(STORE)(lanes + u * W, acc[u]);
    for (int width = 2 * W; width > 0; width /= 2)
        for (int k = 0; k < width; k++) {
            R_T a = lanes[k], b = lanes[k + width];
            lanes[k] = op == CPU_MATH_SUM    ? a + b
                       : op == CPU_MATH_PROD ? a * b
                                             : R(pick)(op == CPU_MATH_MAX, b, a);
        }
    return lanes[0];
}

/* One block of PAIRWISE_BASE elements (rounded to 4 W) in four vector accumulators. The trip
 * count is a constant, so the compiler lays the block out as one straight run of loads: with a
 * loop's counting and branching between them the core kept fewer cache misses in flight, and
 * a sum from memory ran 20% below a single stream's speed. */
static inline R(V) R(block_sum)(const R_T *x) {
    enum { W = R(W), BLOCK = CPU_MATH_PAIRWISE_BASE / (4 * W) * (4 * W) };
    R(V) acc[4] = {R(SET1)(0), R(SET1)(0), R(SET1)(0), R(SET1)(0)};
    for (int k = 0; k < BLOCK; k += 4 * W)
        for (int u = 0; u < 4; u++) acc[u] = R(ADD)(acc[u], R(LOAD)(x + k + u * W));
    return R(ADD)(R(ADD)(acc[0], acc[1]), R(ADD)(acc[2], acc[3]));
}

/* n elements, a multiple of 4 W, summed pairwise: whole blocks (block_sum) merged on a stack
 * as a binary counter carries (two of one level become one of the next), all as vectors: the
 * lanes are folded once, by sum_run. The part of a block left at the end goes on the top. One
 * block per turn of the loop keeps the loads in the order of the addresses: unrolled four
 * blocks at a time, gcc began with the third or fourth block, and the jump ahead and back cost
 * the prefetcher a quarter of its speed from memory. */
static R(V) R(sum_blocks)(const R_T *x, int64_t n) {
    enum { W = R(W), BLOCK = CPU_MATH_PAIRWISE_BASE / (4 * W) * (4 * W) };
    R(V) stack[64]; /* a level per bit of the block count, and one being merged */
    int top = 0;
    uint64_t blocks = 0;
    int64_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        stack[top++] = R(block_sum)(x + i);
        for (uint64_t m = ++blocks; (m & 1) == 0; m >>= 1, top--)
            stack[top - 2] = R(ADD)(stack[top - 2], stack[top - 1]);
    }
    R(V) acc[4] = {R(SET1)(0), R(SET1)(0), R(SET1)(0), R(SET1)(0)};
    for (; i < n; i += 4 * W)
        for (int u = 0; u < 4; u++) acc[u] = R(ADD)(acc[u], R(LOAD)(x + i + u * W));
    stack[top++] = R(ADD)(R(ADD)(acc[0], acc[1]), R(ADD)(acc[2], acc[3]));
    for (; top > 1; top--) stack[top - 2] = R(ADD)(stack[top - 2], stack[top - 1]);
    return stack[0];
}

/* The whole blocks through sum_blocks, the rest (under 4 W) a vector at a time beside them,
 * the last few one by one. */
static R_T R(sum_run)(const R_T *x, int64_t n) {
    enum { W = R(W) };
    int64_t blocks = n / (4 * W) * (4 * W), i = blocks;
    R(V) acc[4] = {R(sum_blocks)(x, blocks), R(SET1)(0), R(SET1)(0), R(SET1)(0)};
    for (; i + W <= n; i += W) acc[1] = R(ADD)(acc[1], R(LOAD)(x + i));
    R_T tail = 0;
    for (; i < n; i++) tail += x[i];
    return R(fold)(CPU_MATH_SUM, acc) + tail;
}

static R_T R(prod_run)(const R_T *x, int64_t n) {
    enum { W = R(W), BLOCK = CPU_MATH_PAIRWISE_BASE / (4 * W) * (4 * W) };
    R(V) acc[4] = {R(SET1)(1), R(SET1)(1), R(SET1)(1), R(SET1)(1)};
    int64_t i = 0;
    /* Whole blocks with a constant trip count, straight runs of loads, as in block_sum. */
    for (; i + BLOCK <= n; i += BLOCK)
        for (int k = 0; k < BLOCK; k += 4 * W)
            for (int u = 0; u < 4; u++) acc[u] = R(MUL)(acc[u], R(LOAD)(x + i + k + u * W));
    for (; i + 4 * W <= n; i += 4 * W)
        for (int u = 0; u < 4; u++) acc[u] = R(MUL)(acc[u], R(LOAD)(x + i + u * W));
    R_T result = R(fold)(CPU_MATH_PROD, acc);
    for (; i < n; i++) result *= x[i];
    return result;
}

/* One block of extreme_run: as block_sum, a constant trip count, so that the loads run
 * straight (with a loop between them Max read memory at two thirds of a sum's speed). */
static inline void R(extreme_block)(bool larger, const R_T *x, R(V) *acc, R(MASK) *nan) {
    enum { W = R(W), BLOCK = CPU_MATH_PAIRWISE_BASE / (4 * W) * (4 * W) };
    for (int k = 0; k < BLOCK; k += 4 * W)
        for (int u = 0; u < 4; u++) {
            R(V) v = R(LOAD)(x + k + u * W);
            acc[u] = larger ? R(MAX)(acc[u], v) : R(MIN)(acc[u], v);
            *nan = R(MASK_OR)(*nan, R(NANS)(v));
        }
}

/* MAX and MIN give their accumulator where the value is NaN, so the accumulators never hold a
 * NaN and a mask of the NaNs seen alone says whether the result is one: three instructions per
 * vector, where the NaN-keeping pick takes four. */
static inline R_T R(extreme_run)(bool larger, const R_T *x, int64_t n) {
    enum { W = R(W), BLOCK = CPU_MATH_PAIRWISE_BASE / (4 * W) * (4 * W) };
    R_T start = larger ? (R_T)-INFINITY : (R_T)INFINITY;
    R(V) acc[4] = {R(SET1)(start), R(SET1)(start), R(SET1)(start), R(SET1)(start)};
    R(MASK) nan = R(NONE);
    int64_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) R(extreme_block)(larger, x + i, acc, &nan);
    for (; i + 4 * W <= n; i += 4 * W)
        for (int u = 0; u < 4; u++) {
            R(V) v = R(LOAD)(x + i + u * W);
            acc[u] = larger ? R(MAX)(acc[u], v) : R(MIN)(acc[u], v);
            nan = R(MASK_OR)(nan, R(NANS)(v));
        }
    if (R(ANY)(nan)) return (R_T)NAN;
    R_T result = R(fold)(larger ? CPU_MATH_MAX : CPU_MATH_MIN, acc);
    for (; i < n; i++) result = R(pick)(larger, x[i], result);
    return result;
}

/* Max and Min as functions of their own, so that `larger` is a constant in each loop. */
static R_T R(max_run)(const R_T *x, int64_t n) { return R(extreme_run)(true, x, n); }
static R_T R(min_run)(const R_T *x, int64_t n) { return R(extreme_run)(false, x, n); }

static R_T R(reduce_loop)(cpu_math_reduce_t op, const R_T *x, int64_t n) {
    switch (op) {
    case CPU_MATH_SUM: return R(sum_run)(x, n);
    case CPU_MATH_PROD: return R(prod_run)(x, n);
    case CPU_MATH_MAX: return R(max_run)(x, n);
    case CPU_MATH_MIN: return R(min_run)(x, n);
    }
    return 0;
}

/* Eight rows of a sum in one pass, as a balanced tree: eight streams from memory at once, and
 * the additions of a pairwise sum's lowest levels. */
static inline R(V) R(eight_rows)(const R_T *in, int64_t stride) {
    R(V) a = R(ADD)(R(LOAD)(in), R(LOAD)(in + stride));
    R(V) b = R(ADD)(R(LOAD)(in + 2 * stride), R(LOAD)(in + 3 * stride));
    R(V) c = R(ADD)(R(LOAD)(in + 4 * stride), R(LOAD)(in + 5 * stride));
    R(V) d = R(ADD)(R(LOAD)(in + 6 * stride), R(LOAD)(in + 7 * stride));
    return R(ADD)(R(ADD)(a, b), R(ADD)(c, d));
}

/* One combining loop over the columns, whole vectors then the rest one by one: EXPR combines
 * vector (or scalar) `acc` with `v`, STEP the same for scalars. */
#define R_ROWS(EXPR, STEP)                                                                     \
    do {                                                                                       \
        int64_t c = 0;                                                                         \
        for (; c + W <= n; c += W) {                                                           \
            R(V) acc = into ? R(LOAD)(out + c) : R(LOAD)(in + c);                              \
            for (int64_t r = into ? 0 : 1; r < count; r++) {                                   \
                R(V) v = R(LOAD)(in + r * stride + c);                                         \
                acc = EXPR;                                                                    \
            }                                                                                  \
            R(STORE)(out + c, acc);                                                            \
        }                                                                                      \
        for (; c < n; c++) {                                                                   \
            R_T acc = into ? out[c] : in[c];                                                   \
            for (int64_t r = into ? 0 : 1; r < count; r++) {                                   \
                R_T v = in[r * stride + c];                                                    \
                acc = STEP;                                                                    \
            }                                                                                  \
            out[c] = acc;                                                                      \
        }                                                                                      \
    } while (0)

static void R(rows_loop)(cpu_math_reduce_t op, R_T *out, const R_T *in, int64_t stride,
                         int64_t count, int64_t n, bool into) {
    enum { W = R(W) };
    switch (op) {
    case CPU_MATH_SUM:
        if (count == 8 && !into) {
            int64_t c = 0;
            for (; c + W <= n; c += W) R(STORE)(out + c, R(eight_rows)(in + c, stride));
            for (; c < n; c++) {
                const R_T *p = in + c;
                out[c] = ((p[0] + p[stride]) + (p[2 * stride] + p[3 * stride])) +
                         ((p[4 * stride] + p[5 * stride]) + (p[6 * stride] + p[7 * stride]));
            }
        } else {
            R_ROWS(R(ADD)(acc, v), acc + v);
        }
        break;
    case CPU_MATH_PROD: R_ROWS(R(MUL)(acc, v), acc * v); break;
    case CPU_MATH_MAX: R_ROWS(R(pick_vector)(true, v, acc), R(pick)(true, v, acc)); break;
    case CPU_MATH_MIN: R_ROWS(R(pick_vector)(false, v, acc), R(pick)(false, v, acc)); break;
    }
}

#undef R_ROWS
#undef R
#undef R_P
#undef R_T
