/* SPDX-License-Identifier: Apache-2.0 */
/*
 * float16 (IEEE 754 binary16) and bfloat16 (the upper 16 bits of a binary32) to and from the
 * wider floats: the one implementation that the runtime, its CPU device, plug-ins and
 * applications share, so that a value is rounded the same way wherever it is made.
 *
 * A value is held as its bits in a uint16_t, which is the byte layout of TP_FLOAT16 and
 * TP_BFLOAT16 tensor elements (host byte order, like every other dtype).
 *
 *   - Widening (to float) is exact: every float16 and bfloat16 value is a float.
 *   - Narrowing rounds to nearest, ties to even (IEEE 754's default): a value past the
 *     largest finite number by half a unit or more becomes an infinity of its sign, one below
 *     half the smallest subnormal a zero of its sign, and subnormal results are kept, not
 *     flushed.
 *   - NaN stays NaN of its sign: quiet, with the leading bits of its payload that fit.
 *
 * Plain C99, static inline, integer operations on the bits only: no libm, no compiler
 * half-precision type, and nothing read from or raised in the floating-point environment, so
 * that the results do not depend on the compiler, its flags or the rounding mode in force.
 */
#ifndef TENSORPLUG_FLOAT16_H
#define TENSORPLUG_FLOAT16_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Shared steps (not part of the API) ----------------------------------------------------- */

static inline float tp_float16_internal_float_of_bits(uint32_t bits) {
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static inline uint32_t tp_float16_internal_bits_of_float(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* A subnormal's fraction shifted up until `hidden` (the place of its format's implicit leading
 * bit) is set, *exponent lowered as it goes: the same value as a wider format's normal number
 * holds it. */
static inline uint64_t tp_float16_internal_normalize(uint64_t fraction, uint64_t hidden,
                                                     int32_t *exponent) {
    while ((fraction & hidden) == 0) {
        fraction <<= 1;
        (*exponent)--;
    }
    return fraction;
}

/* Rounds (-1)^sign * significand * 2^(exponent - 52), significand normalised to 53 bits (bit 52
 * set), to the finite or infinite number of a format with `mantissa_bits` stored fraction bits
 * and exponent bias `bias` (15 and 10 for float16, 127 and 7 for bfloat16). */
static inline uint16_t tp_float16_internal_round(uint32_t sign, uint64_t significand,
                                                 int32_t exponent, int32_t mantissa_bits,
                                                 int32_t bias) {
    const uint16_t sign_bit = (uint16_t)(sign << 15);
    const int32_t min_exponent = 1 - bias;
    /* The bits dropped: those below the format's precision, and for a result below the
     * smallest normal number also those below the smallest subnormal's. */
    int32_t shift = 52 - mantissa_bits;
    if (exponent < min_exponent) shift += min_exponent - exponent;
    if (shift > 63) return sign_bit; /* below a quarter of the smallest subnormal */
    uint64_t kept = significand >> shift;
    uint64_t dropped = significand & ((UINT64_C(1) << shift) - 1);
    uint64_t halfway = UINT64_C(1) << (shift - 1);
    if (dropped > halfway || (dropped == halfway && (kept & 1) != 0)) kept++;
    if (exponent < min_exponent)
        /* A subnormal; rounding up to 2^mantissa_bits makes the smallest normal's bits. */
        return (uint16_t)(sign_bit | kept);
    if ((kept >> (mantissa_bits + 1)) != 0) { /* rounded up to the next power of two */
        kept >>= 1;
        exponent++;
    }
    const uint16_t all_ones = (uint16_t)(((1u << (15 - mantissa_bits)) - 1) << mantissa_bits);
    if (exponent > bias) return (uint16_t)(sign_bit | all_ones); /* overflow: infinity */
    return (uint16_t)(sign_bit | ((uint32_t)(exponent + bias) << mantissa_bits) |
                      (kept & ((UINT64_C(1) << mantissa_bits) - 1)));
}

/* A NaN or an infinity of the narrow format: `payload` is the wide value's fraction field,
 * `payload_bits` its width. NaN keeps its leading payload bits and is made quiet. */
static inline uint16_t tp_float16_internal_special(uint32_t sign, uint64_t payload,
                                                   int32_t payload_bits, int32_t mantissa_bits) {
    uint16_t bits = (uint16_t)((sign << 15) |
                               (((1u << (15 - mantissa_bits)) - 1) << mantissa_bits));
    if (payload == 0) return bits;
    return (uint16_t)(bits | (1u << (mantissa_bits - 1)) |
                      (payload >> (payload_bits - mantissa_bits)));
}

/* Narrows a double to the format; the float entry points widen their bits to this form. */
static inline uint16_t tp_float16_internal_from_double_bits(uint64_t bits, int32_t mantissa_bits,
                                                            int32_t bias) {
    uint32_t sign = (uint32_t)(bits >> 63);
    int32_t field = (int32_t)((bits >> 52) & 0x7ff);
    uint64_t fraction = bits & ((UINT64_C(1) << 52) - 1);
    if (field == 0x7ff) return tp_float16_internal_special(sign, fraction, 52, mantissa_bits);
    if (field == 0 && fraction == 0) return (uint16_t)(sign << 15);
    int32_t exponent = field == 0 ? -1022 : field - 1023;
    uint64_t significand = field == 0 ? tp_float16_internal_normalize(fraction, UINT64_C(1) << 52,
                                                                      &exponent)
                                      : fraction | (UINT64_C(1) << 52);
    return tp_float16_internal_round(sign, significand, exponent, mantissa_bits, bias);
}

/* Narrows a double to the format, from its bits. */
static inline uint16_t tp_float16_internal_narrow(double value, int32_t mantissa_bits,
                                                  int32_t bias) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return tp_float16_internal_from_double_bits(bits, mantissa_bits, bias);
}

/* ---- float16 -------------------------------------------------------------------------------- */

static inline float tp_float16_to_float(uint16_t half) {
    uint32_t sign = (uint32_t)(half & 0x8000) << 16;
    uint32_t field = (half >> 10) & 0x1f, fraction = half & 0x3ff;
    if (field - 1 < 30) /* a normal number: the common case, rebiased */
        return tp_float16_internal_float_of_bits(sign | (field + 112) << 23 | fraction << 13);
    if (field == 0x1f) /* infinity, or NaN with its payload */
        return tp_float16_internal_float_of_bits(sign | 0x7f800000u | fraction << 13);
    if (field == 0 && fraction == 0) return tp_float16_internal_float_of_bits(sign);
    int32_t exponent = -14; /* a subnormal float16 is a normal float */
    fraction = (uint32_t)tp_float16_internal_normalize(fraction, 0x400, &exponent) & 0x3ff;
    return tp_float16_internal_float_of_bits(sign | (uint32_t)(exponent + 127) << 23 |
                                             fraction << 13);
}

static inline uint16_t tp_float16_from_double(double value) {
    return tp_float16_internal_narrow(value, 10, 15);
}

/* The rounding of tp_float16_from_double, done on a float's bits directly, which is several
 * times faster (test_float16 holds the two to the same results). */
static inline uint16_t tp_float16_from_float(float value) {
    uint32_t bits = tp_float16_internal_bits_of_float(value);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x47800000u) { /* 2^16 and above: infinity; NaN quiet, payload kept */
        if (magnitude <= 0x7f800000u) return (uint16_t)(sign | 0x7c00);
        return (uint16_t)(sign | 0x7e00 | ((magnitude >> 13) & 0x3ff));
    }
    if (magnitude >= 0x38800000u) {
        /* A normal float16, or one that rounds up to infinity: rebias the exponent, add just
         * under half a unit of the kept bits (and the kept bit, for ties to even), truncate;
         * a carry out of the fraction is the rounding up into the next binade. */
        uint32_t rebiased = magnitude - 0x38000000u;
        rebiased += 0xfffu + ((rebiased >> 13) & 1u);
        return (uint16_t)(sign | (rebiased >> 13));
    }
    /* Below 2^-14: a subnormal float16 (its unit is 2^-24), zero below 2^-25. */
    uint32_t field = magnitude >> 23;
    if (field < 102) return sign;
    uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u, shift = 126 - field;
    uint32_t kept = significand >> shift, dropped = significand & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (dropped > halfway || (dropped == halfway && (kept & 1u) != 0)) kept++;
    return (uint16_t)(sign | kept);
}

/* ---- bfloat16 ------------------------------------------------------------------------------- */

static inline float tp_bfloat16_to_float(uint16_t bfloat) {
    return tp_float16_internal_float_of_bits((uint32_t)bfloat << 16);
}

/* bfloat16 has float's exponent range, so rounding a float is adding just under half a unit
 * of the kept bits (and the kept bit, for ties to even) and truncating: a carry into the
 * exponent is the rounding up to the next power of two, or to infinity. */
static inline uint16_t tp_bfloat16_from_float(float value) {
    uint32_t bits = tp_float16_internal_bits_of_float(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, payload's leading bits kept */
        return (uint16_t)((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1);
    return (uint16_t)(bits >> 16);
}

static inline uint16_t tp_bfloat16_from_double(double value) {
    return tp_float16_internal_narrow(value, 7, 127);
}

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLUG_FLOAT16_H */
