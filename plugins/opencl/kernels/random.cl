/* SPDX-License-Identifier: Apache-2.0 */
/* Random kernels of tensorplug's OpenCL plug-in: RandomUniform and RandomStandardNormal, the
 * CPU device's generator (devices/cpu/cpu_random.c) step for step, so that a seed gives the
 * same tensor on either device. It is counter-based: element i depends only on the seed and i
 * (SplitMix64 of the mixed seed and a stream position), so one work-item computes one element
 * and the split into work-groups cannot change a value.
 *
 * How close to the CPU's values:
 *   - RandomUniform, both dtypes: bit for bit on every device. A float64 value is an integer
 *     below 2^53 times 2^-53, exact in double; a float32 value is that double rounded to
 *     float, done here in integer arithmetic, which needs no cl_khr_fp64 and gives the same
 *     bits.
 *   - RandomStandardNormal with -DTP_FP64: Box-Muller in double in the CPU's order of
 *     operations, float32 rounding once at the end. sqrt and the arithmetic round as the CPU
 *     rounds, but log and cos are the device's: OpenCL allows them a few ulp and the CPU's C
 *     library is not correctly rounded either, so float64 values may differ in their last bits
 *     (float32 values only where that crosses a rounding boundary of float).
 *   - RandomStandardNormal float32 without -DTP_FP64: Box-Muller in float, not the CPU's bits
 *     but within a few float ulp of its values. */
static ulong mix(ulong z) {
    z += 0x9E3779B97F4A7C15ul;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ul;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBul;
    return z ^ (z >> 31);
}

/* The 53 random bits of stream position `counter` under `key` (the mixed seed): the CPU's
 * uniform value is this integer times 2^-53. */
static ulong bits53(ulong key, ulong counter) {
    return mix(key ^ mix(counter)) >> 11;
}

/* (float)((double)k * 0x1p-53) for k <= 2^53, with integers only: k rounded to nearest, ties
 * to even, at 24 significant bits, then scaled by a power of two, which is exact since every
 * result is a normal float. */
static float float_times_2_to_minus_53(ulong k) {
    int shift = max(0, 40 - (int)clz(k)); /* bits below the 24 that a float keeps */
    ulong kept = k >> shift;
    if (shift > 0) {
        ulong rest = k & ((1ul << shift) - 1), halfway = 1ul << (shift - 1);
        if (rest > halfway || (rest == halfway && (kept & 1) != 0)) kept++;
    }
    /* kept <= 2^24 converts exactly; 2^(shift - 53) is between 2^-53 and 2^-23. */
    return (float)kept * as_float((uint)(127 + shift - 53) << 23);
}

__kernel void uniform_float32(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    float value = float_times_2_to_minus_53(bits53(mix(seed), i));
    /* Rounding may reach 1.0f; uniform values stay below 1. */
    AT(float, y_base, y_offset)[i] = value < 1.0f ? value : 0x1.fffffep-1f;
}

#ifdef TP_FP64

__kernel void uniform_float64(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    AT(double, y_base, y_offset)[i] = (double)bits53(mix(seed), i) * 0x1p-53;
}

/* Box-Muller on two independent uniforms; 1 - u keeps log() away from 0. */
static double normal(ulong key, ulong i) {
    double u1 = 1.0 - (double)bits53(key, 2 * i) * 0x1p-53;
    double u2 = (double)bits53(key, 2 * i + 1) * 0x1p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

__kernel void normal_float32(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    AT(float, y_base, y_offset)[i] = (float)normal(mix(seed), i);
}

__kernel void normal_float64(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    AT(double, y_base, y_offset)[i] = normal(mix(seed), i);
}

#else

/* Without doubles, Box-Muller in float: not the CPU's bits (see the top of the file), but
 * within a few float ulp of its values, as each factor is taken from the exact integers: a
 * float u1 = 1 - u near 1 would lose u's digits, so log(1 - u) is log1p(-u) there; and
 * cos(2 pi u2) comes from the quarter turn u2 is in and the exact rest of it, so that the
 * values near the zeros of cos keep float's relative precision. */
static float minus_2_log_1_minus(ulong k) {
    float log_u1 = k < (1ul << 52) ? log1p(-float_times_2_to_minus_53(k))
                                   : log(float_times_2_to_minus_53((1ul << 53) - k));
    return -2.0f * log_u1;
}

static float cos_2_pi_times_2_to_minus_53(ulong k) {
    /* The angle is pi/2 (quarter + rest 2^-51); past half a quarter, pi/2 - the angle is the
     * smaller one to round. */
    ulong quarter = k >> 51, rest = k & ((1ul << 51) - 1);
    bool upper = rest >= (1ul << 50);
    float x = 0.5f * float_times_2_to_minus_53((upper ? (1ul << 51) - rest : rest) << 2);
    float cos_rest = upper ? sinpi(x) : cospi(x), sin_rest = upper ? cospi(x) : sinpi(x);
    return quarter == 0 ? cos_rest : quarter == 1 ? -sin_rest : quarter == 2 ? -cos_rest : sin_rest;
}

__kernel void normal_float32(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    ulong key = mix(seed);
    AT(float, y_base, y_offset)[i] = sqrt(minus_2_log_1_minus(bits53(key, 2 * i))) *
                                     cos_2_pi_times_2_to_minus_53(bits53(key, 2 * i + 1));
}

#endif
