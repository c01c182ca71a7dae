/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU's random numbers: Philox-4x32-10 against the known-answer vectors published with
 * Random123 (its tests/kat_vectors), the random ops' values against the mapping cpu_philox.h
 * documents, and statistical checks that the streams of different seeds are independent and
 * have the distributions they claim. Every value is deterministic, so no check can flake. */
#include "cpu_fixture.h"

#include <math.h>
#include <stdlib.h>

#include "../../devices/cpu/cpu_philox.h"

static const double two_pi = 6.283185307179586;

typedef tp_status_t *(*random_fn)(tp_context_t *, tp_dtype_t, tp_shape_t, int64_t,
                                  tp_tensor_t **);

/* The values of a random op's tensor of `count` elements, as doubles (caller frees). */
static double *draw(tp_context_t *c, random_fn fn, tp_dtype_t dtype, int64_t count,
                    int64_t seed) {
    tp_tensor_t *t = NULL;
    assert_ok(fn(c, dtype, TP_SHAPE(count), seed, &t));
    assert_int_equal(tp_tensor_dtype(t), dtype);
    double *values = read_doubles(t, NULL);
    tp_tensor_release(t);
    return values;
}

/* ---- Known answers --------------------------------------------------------------------------- */

/* Random123's kat_vectors, the three "philox4x32 10" lines: counter, key, expected output. */
static void philox_matches_the_random123_known_answers(void **state) {
    (void)state;
    static const struct {
        uint32_t counter[4], key[2], expected[4];
    } vectors[] = {
        {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
         {0x00000000, 0x00000000},
         {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        uint32_t out[4];
        cpu_philox4x32_10(vectors[v].counter, vectors[v].key, out);
        for (int w = 0; w < 4; w++)
            if (out[w] != vectors[v].expected[w])
                fail_msg("vector %zu word %d: %08x, expected %08x", v, w, out[w],
                         vectors[v].expected[w]);
    }
    /* The block helper puts the seed in the key and the block number in the counter's low
     * words, so seed 0's block 0 is the all-zero vector. */
    uint32_t out[4];
    cpu_philox_block(0, 0, out);
    assert_int_equal(out[0], 0x6627e8d5);
    assert_int_equal(out[3], 0x9b00dbd8);
}

/* ---- The ops' values ------------------------------------------------------------------------- */

/* RandomUniform reads the stream as cpu_philox.h says, for seeds that use the key's high word
 * and its sign bit, and for lengths that end inside a block. */
static void uniform_values_follow_the_documented_stream(void **state) {
    tp_context_t *c = *state;
    const int64_t seeds[] = {0, 1, -1, INT64_C(0x123456789abcdef), INT64_MIN};
    const int64_t lengths[] = {1, 7, 4099};
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
            int64_t n = lengths[l];
            double *f32 = draw(c, tp_random_uniform, TP_FLOAT32, n, seeds[s]);
            double *f64 = draw(c, tp_random_uniform, TP_FLOAT64, n, seeds[s]);
            for (int64_t i = 0; i < n; i++) {
                uint32_t w[4];
                cpu_philox_block((uint64_t)seeds[s], (uint64_t)(i / 4), w);
                double expected32 = (double)(w[i % 4] >> 8) / 16777216.0;
                cpu_philox_block((uint64_t)seeds[s], (uint64_t)(i / 2), w);
                uint64_t bits = ((uint64_t)w[2 * (i % 2)] << 32 | w[2 * (i % 2) + 1]) >> 11;
                double expected64 = (double)bits / 9007199254740992.0;
                if (f32[i] != expected32 || f64[i] != expected64)
                    fail_msg("seed %lld element %lld of %lld: %.9g and %.17g, expected %.9g and "
                             "%.17g",
                             (long long)seeds[s], (long long)i, (long long)n, f32[i], f64[i],
                             expected32, expected64);
            }
            free(f32);
            free(f64);
        }
    }
}

/* Box-Muller over the same stream: element 2k is the cosine and 2k + 1 the sine of the pair of
 * uniforms 2k and 2k + 1. */
static void normal_values_are_box_muller_over_the_stream(void **state) {
    tp_context_t *c = *state;
    enum { N = 1001 };
    const int64_t seed = 987654321;
    double *f32 = draw(c, tp_random_normal, TP_FLOAT32, N, seed);
    double *f64 = draw(c, tp_random_normal, TP_FLOAT64, N, seed);
    double *u32 = draw(c, tp_random_uniform, TP_FLOAT32, N + 1, seed);
    double *u64 = draw(c, tp_random_uniform, TP_FLOAT64, N + 1, seed);
    for (int i = 0; i < N; i++) {
        int k = i / 2 * 2;
        double r32 = sqrt(-2 * log(1 - u32[k])), a32 = two_pi * u32[k + 1];
        double r64 = sqrt(-2 * log(1 - u64[k])), a64 = two_pi * u64[k + 1];
        double e32 = (float)(r32 * (i % 2 == 0 ? cos(a32) : sin(a32)));
        double e64 = r64 * (i % 2 == 0 ? cos(a64) : sin(a64));
        /* The same formula; only M_PI's last bit and the order of rounding may differ. */
        if (fabs(f32[i] - e32) > 1e-6 * fmax(1, fabs(e32)) ||
            fabs(f64[i] - e64) > 1e-13 * fmax(1, fabs(e64)))
            fail_msg("element %d: %.9g and %.17g, expected %.9g and %.17g", i, f32[i], f64[i],
                     e32, e64);
    }
    free(f32);
    free(f64);
    free(u32);
    free(u64);
}

/* Element i does not depend on how long the tensor is, nor on how the kernel splits the work
 * between threads (a million elements run on every core). */
static void values_do_not_depend_on_the_length_or_the_threads(void **state) {
    tp_context_t *c = *state;
    enum { LONG = 1 << 20, SHORT = 13 };
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    const random_fn fns[] = {tp_random_uniform, tp_random_normal};
    for (size_t f = 0; f < 2; f++) {
        for (size_t d = 0; d < 2; d++) {
            double *whole = draw(c, fns[f], dtypes[d], LONG, 5);
            double *prefix = draw(c, fns[f], dtypes[d], SHORT, 5);
            for (int i = 0; i < SHORT; i++) assert_true(whole[i] == prefix[i]);
            /* Spot checks deep in the slices other threads computed. */
            for (int64_t i = LONG - 1; i > 0; i -= 65537) {
                uint32_t w[4];
                if (f != 0 || d != 0) continue;
                cpu_philox_block(5, (uint64_t)(i / 4), w);
                assert_true(whole[i] == (double)cpu_philox_uniform24(w[i % 4]));
            }
            free(whole);
            free(prefix);
        }
    }
}

/* ---- Independence and distributions ---------------------------------------------------------- */

static double correlation(const double *x, const double *y, size_t n) {
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxy / sqrt(sxx * syy);
}

/* Seeds 0..7, which differ in a bit or two: every pair of streams, and each stream with itself
 * one element on, is uncorrelated. For independent streams the correlation of N pairs is about
 * normal with deviation 1/sqrt(N); five deviations bound 28 + 8 draws with room to spare. */
static void streams_of_nearby_seeds_are_uncorrelated(void **state) {
    tp_context_t *c = *state;
    enum { SEEDS = 8, N = 1 << 16 };
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    const double bound = 5.0 / sqrt((double)N);
    for (size_t d = 0; d < 2; d++) {
        double *streams[SEEDS];
        for (int s = 0; s < SEEDS; s++)
            streams[s] = draw(c, tp_random_uniform, dtypes[d], N, s);
        double worst = 0;
        for (int a = 0; a < SEEDS; a++) {
            for (int b = a + 1; b < SEEDS; b++) {
                double r = correlation(streams[a], streams[b], N);
                if (fabs(r) > bound)
                    fail_msg("%s: seeds %d and %d correlate %.5f (bound %.5f)",
                             tp_dtype_name(dtypes[d]), a, b, r, bound);
                worst = fmax(worst, fabs(r));
            }
            double lag = correlation(streams[a], streams[a] + 1, N - 1);
            if (fabs(lag) > bound)
                fail_msg("%s: seed %d correlates %.5f with itself one element on",
                         tp_dtype_name(dtypes[d]), a, lag);
        }
        /* Not all of them can be zero: the check measures something. */
        assert_true(worst > 0);
        for (int s = 0; s < SEEDS; s++) free(streams[s]);
    }
}

/* The defect Philox replaced: (seed a, index b) gave the value of (seed b, index a). */
static void seed_and_index_do_not_commute(void **state) {
    tp_context_t *c = *state;
    enum { K = 32 };
    double *streams[K];
    for (int s = 0; s < K; s++) streams[s] = draw(c, tp_random_uniform, TP_FLOAT64, K, s);
    int equal = 0;
    for (int a = 0; a < K; a++)
        for (int b = a + 1; b < K; b++) equal += streams[a][b] == streams[b][a];
    for (int s = 0; s < K; s++) free(streams[s]);
    assert_int_equal(equal, 0);
}

/* 64 equal bins of 2^16 float32 uniforms: Pearson's chi-square with 63 degrees of freedom has
 * mean 63 and deviation 11.2; 63 + 6 deviations is far out in the tail. */
static void uniform_fills_equal_bins_equally(void **state) {
    tp_context_t *c = *state;
    enum { N = 1 << 16, BINS = 64 };
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < 2; d++) {
        double *u = draw(c, tp_random_uniform, dtypes[d], N, 99);
        int64_t counts[BINS] = {0};
        double low = 1, high = 0;
        for (int i = 0; i < N; i++) {
            counts[(int)(u[i] * BINS)]++;
            low = fmin(low, u[i]);
            high = fmax(high, u[i]);
        }
        free(u);
        double expected = (double)N / BINS, chi2 = 0;
        for (int b = 0; b < BINS; b++)
            chi2 += (counts[b] - expected) * (counts[b] - expected) / expected;
        if (chi2 > 63 + 6 * 11.2 || low < 0 || high >= 1)
            fail_msg("%s: chi-square %.1f, values in [%.9g, %.9g]", tp_dtype_name(dtypes[d]),
                     chi2, low, high);
    }
}

/* Mean 0, deviation 1, and the share within one deviation of the mean is 68.27%. */
static void normal_has_the_standard_moments_and_shape(void **state) {
    tp_context_t *c = *state;
    enum { N = 1 << 17 };
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < 2; d++) {
        double *x = draw(c, tp_random_normal, dtypes[d], N, 2024);
        double sum = 0, squares = 0, within = 0, largest = 0;
        for (int i = 0; i < N; i++) sum += x[i];
        double mean = sum / N;
        for (int i = 0; i < N; i++) {
            squares += (x[i] - mean) * (x[i] - mean);
            within += fabs(x[i]) < 1;
            largest = fmax(largest, fabs(x[i]));
        }
        free(x);
        double deviation = sqrt(squares / (N - 1)), share = within / N;
        /* Deviations of the estimates: 1/sqrt(N) = 0.0028 for the mean, 0.0020 for the
         * deviation, 0.0013 for the share; five of each. */
        if (fabs(mean) > 0.014 || fabs(deviation - 1) > 0.01 || fabs(share - 0.6827) > 0.0065)
            fail_msg("%s: mean %.5f, deviation %.5f, share within one %.5f",
                     tp_dtype_name(dtypes[d]), mean, deviation, share);
        /* The largest magnitude Box-Muller can give from 24- or 53-bit uniforms. */
        assert_true(largest <= (dtypes[d] == TP_FLOAT32 ? 5.8 : 8.6));
    }
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(philox_matches_the_random123_known_answers),
        TEST(uniform_values_follow_the_documented_stream),
        TEST(normal_values_are_box_muller_over_the_stream),
        TEST(values_do_not_depend_on_the_length_or_the_threads),
        TEST(streams_of_nearby_seeds_are_uncorrelated),
        TEST(seed_and_index_do_not_commute),
        TEST(uniform_fills_equal_bins_equally),
        TEST(normal_has_the_standard_moments_and_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
