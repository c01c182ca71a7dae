/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3",
 * SC11), the counter-based generator TensorFlow and PyTorch draw their random tensors from: a
 * keyed bijection of a 128-bit counter, so block b of the stream under key k is philox(b, k)
 * with no state to carry, and any element can be computed alone, by any thread, in any order.
 * Different keys give independent streams, which is the property the generator this replaced
 * (SplitMix64 of seed ^ mix(index)) lacked: there, seed a at index b met seed b at index a.
 *
 * How the runtime's random tensors read the stream (plugins/opencl/kernels/random.cl draws the
 * same numbers):
 *   key      = the op's 64-bit seed: low 32 bits, high 32 bits;
 *   counter  = (block's low 32 bits, block's high 32 bits, 0, 0);
 *   float32  element i uses 32-bit word i % 4 of block i / 4: a uniform value is its top 24
 *            bits times 2^-24 (every value in [0, 1) a float holds at that spacing, exactly);
 *   float64  element i uses words 2 (i % 2) (high half) and 2 (i % 2) + 1 (low half) of block
 *            i / 2: a uniform value is the top 53 bits of that 64-bit integer times 2^-53;
 *   normal   Box-Muller, computed in double: a pair (u1, u2) of uniforms of the dtype's
 *            spacing gives sqrt(-2 ln(1 - u1)) * (cos, sin)(2 pi u2); element i takes the cos
 *            when i is even and the sin when odd, from uniforms 2 (i / 2) and 2 (i / 2) + 1 of
 *            the dtype's stream (so float32 uses one block per four normals, float64 one block
 *            per two). 1 - u1 lies in (0, 1], so the logarithm is finite; the largest magnitude
 *            is sqrt(2 ln 2^24) = 5.77 for float32 and sqrt(2 ln 2^53) = 8.57 for float64.
 *   Dropout  keeps element i exactly where RandomUniform float32 with the same seed draws a
 *            value >= rate.
 * Header-only, so that the unit tests check the very code the kernels run against the
 * published known-answer vectors.
 */
#ifndef TP_DEVICES_CPU_PHILOX_H
#define TP_DEVICES_CPU_PHILOX_H

#include <stdint.h>

enum { CPU_PHILOX_ROUNDS = 10 };

/* Random123's constants: the multipliers and the Weyl sequence that bumps the key. */
#define CPU_PHILOX_M0 UINT32_C(0xD2511F53)
#define CPU_PHILOX_M1 UINT32_C(0xCD9E8D57)
#define CPU_PHILOX_W0 UINT32_C(0x9E3779B9)
#define CPU_PHILOX_W1 UINT32_C(0xBB67AE85)

/* The ten rounds of Philox-4x32 on `counter` under `key`, into `out` (may alias counter). */
static inline void cpu_philox4x32_10(const uint32_t counter[4], const uint32_t key[2],
                                     uint32_t out[4]) {
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < CPU_PHILOX_ROUNDS; round++) {
        if (round > 0) {
            k0 += CPU_PHILOX_W0;
            k1 += CPU_PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)CPU_PHILOX_M0 * c0, p1 = (uint64_t)CPU_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Block `block` of the stream of `seed`. */
static inline void cpu_philox_block(uint64_t seed, uint64_t block, uint32_t out[4]) {
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t counter[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0, 0};
    cpu_philox4x32_10(counter, key, out);
}

/* A float32-spaced uniform value in [0, 1) from one word: its top 24 bits times 2^-24. */
static inline float cpu_philox_uniform24(uint32_t word) {
    return (float)(word >> 8) * 0x1p-24f;
}

/* A float64-spaced uniform value in [0, 1) from two words: the top 53 bits of high:low. */
static inline double cpu_philox_uniform53(uint32_t high, uint32_t low) {
    return (double)((((uint64_t)high << 32) | low) >> 11) * 0x1p-53;
}

#endif
