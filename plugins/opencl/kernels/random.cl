/* SPDX-License-Identifier: Apache-2.0 */
/* Random kernels of tensorplug's OpenCL plug-in: RandomUniform and RandomStandardNormal from
 * Philox-4x32-10, reading its stream exactly as the CPU device does (devices/cpu/cpu_philox.h
 * documents the mapping), so that a seed gives the same tensor on either device. Philox is
 * counter-based: block b under key k is a pure function of (b, k), so one work-item computes
 * one block (four float32 or two float64 elements) and the split into work-groups cannot change
 * a value.
 *
 * How close to the CPU's values:
 *   - RandomUniform, both dtypes: bit for bit on every device. The values are integers below
 *     2^24 (float32) or 2^53 (float64) times a power of two, exact in either type.
 *   - RandomStandardNormal with -DTP_FP64: Box-Muller in double in the CPU's order of
 *     operations, float32 rounding once at the end. sqrt and the arithmetic round as the CPU
 *     rounds, but log, cos and sin are the device's: OpenCL allows them a few ulp and the CPU's
 *     C library is not correctly rounded either, so float64 values may differ in their last
 *     bits (float32 values only where that crosses a rounding boundary of float).
 *   - RandomStandardNormal float32 without -DTP_FP64: Box-Muller in float, not the CPU's bits
 *     but within a few float ulp of its values: 1 - u1 and 2 u2 are exact in float (u has 24
 *     bits), and cospi/sinpi take the angle in half turns, so no rounded 2 pi enters. */

/* Philox-4x32-10 of counter (block, 0, 0) under key (seed's low word, seed's high word). */
static uint4 philox_block(ulong seed, ulong block) {
    uint c0 = (uint)block, c1 = (uint)(block >> 32), c2 = 0, c3 = 0;
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    return (uint4)(c0, c1, c2, c3);
}

/* The top 24 bits of a word times 2^-24: exact in float. */
static float uniform24(uint word) {
    return (float)(word >> 8) * 0x1p-24f;
}

__kernel void uniform_float32(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    ulong block = get_global_id(0), first = 4 * block;
    if (first >= n) return;
    uint words[4];
    vstore4(philox_block(seed, block), 0, words);
    __global float *y = AT(float, y_base, y_offset);
    for (ulong k = 0; k < 4 && first + k < n; k++) y[first + k] = uniform24(words[k]);
}

#ifdef TP_FP64

/* The top 53 bits of high:low times 2^-53: exact in double. */
static double uniform53(uint high, uint low) {
    return (double)(upsample(high, low) >> 11) * 0x1p-53;
}

/* Box-Muller: the (cos, sin) pair of normals from uniforms u1, u2 in [0, 1), as the CPU
 * computes it. */
static double2 box_muller(double u1, double u2) {
    double radius = sqrt(-2.0 * log(1.0 - u1)), angle = 6.283185307179586 * u2;
    return (double2)(radius * cos(angle), radius * sin(angle));
}

__kernel void uniform_float64(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    ulong block = get_global_id(0), first = 2 * block;
    if (first >= n) return;
    uint4 w = philox_block(seed, block);
    __global double *y = AT(double, y_base, y_offset);
    y[first] = uniform53(w.s0, w.s1);
    if (first + 1 < n) y[first + 1] = uniform53(w.s2, w.s3);
}

__kernel void normal_float32(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    ulong block = get_global_id(0), first = 4 * block;
    if (first >= n) return;
    uint4 w = philox_block(seed, block);
    double2 a = box_muller(uniform24(w.s0), uniform24(w.s1));
    double2 b = box_muller(uniform24(w.s2), uniform24(w.s3));
    float values[4] = {(float)a.s0, (float)a.s1, (float)b.s0, (float)b.s1};
    __global float *y = AT(float, y_base, y_offset);
    for (ulong k = 0; k < 4 && first + k < n; k++) y[first + k] = values[k];
}

__kernel void normal_float64(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    ulong block = get_global_id(0), first = 2 * block;
    if (first >= n) return;
    uint4 w = philox_block(seed, block);
    double2 pair = box_muller(uniform53(w.s0, w.s1), uniform53(w.s2, w.s3));
    __global double *y = AT(double, y_base, y_offset);
    y[first] = pair.s0;
    if (first + 1 < n) y[first + 1] = pair.s1;
}

#else

/* Without doubles, Box-Muller in float (see the top of the file). */
static float2 box_muller_float(uint w1, uint w2) {
    float radius = sqrt(-2.0f * log(1.0f - uniform24(w1))), turns = 2.0f * uniform24(w2);
    return (float2)(radius * cospi(turns), radius * sinpi(turns));
}

__kernel void normal_float32(ulong seed, __global char *y_base, ulong y_offset, ulong n) {
    ulong block = get_global_id(0), first = 4 * block;
    if (first >= n) return;
    uint4 w = philox_block(seed, block);
    float2 a = box_muller_float(w.s0, w.s1), b = box_muller_float(w.s2, w.s3);
    float values[4] = {a.s0, a.s1, b.s0, b.s1};
    __global float *y = AT(float, y_base, y_offset);
    for (ulong k = 0; k < 4 && first + k < n; k++) y[first + k] = values[k];
}

#endif

/* ---- Dropout --------------------------------------------------------------------------------- */

/* Dropout keeps element i exactly where RandomUniform float32 with the same seed draws a value
 * >= rate: word i % 4 of block i / 4, its top 24 bits compared with `threshold`, the smallest
 * t with t * 2^-24 >= rate (the host computes it exactly), so no rounding of the rate enters.
 * mask = scale where kept, 0 where dropped; y = x * mask, as on the CPU. */
#define DROPOUT(T, suffix)                                                                         \
    __kernel void dropout_##suffix(ulong seed, __global const char *x_base, ulong x_offset,        \
                                   __global char *y_base, ulong y_offset, __global char *m_base,   \
                                   ulong m_offset, ulong n, uint threshold, T scale) {             \
        ulong block = get_global_id(0), first = 4 * block;                                         \
        if (first >= n) return;                                                                    \
        uint words[4];                                                                             \
        vstore4(philox_block(seed, block), 0, words);                                              \
        __global const T *x = CONST_AT(T, x_base, x_offset);                                       \
        __global T *y = AT(T, y_base, y_offset), *mask = AT(T, m_base, m_offset);                  \
        for (ulong k = 0; k < 4 && first + k < n; k++) {                                           \
            T m = (words[k] >> 8) >= threshold ? scale : (T)0;                                     \
            mask[first + k] = m;                                                                   \
            y[first + k] = x[first + k] * m;                                                       \
        }                                                                                          \
    }

DROPOUT(float, float32)
#ifdef TP_FP64
DROPOUT(double, float64)
#endif
