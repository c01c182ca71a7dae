/* SPDX-License-Identifier: Apache-2.0 */
/* What the two digits examples (digits_mlp.c, digits_cnn.c) share: the host's seeded shuffling,
 * and the choice of the train/test split of the 1,797 images. */
#ifndef TENSORPLUG_EXAMPLES_DIGITS_COMMON_H
#define TENSORPLUG_EXAMPLES_DIGITS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <tensorplug/training.h>

/* The fixed split is the project's (tp_digits_load_split: the file's first 1,437 images train,
 * its last 360 test, and those 360 are other people's handwriting). The shuffled split permutes
 * the same 1,797 images first, so that train and test come from the same writers. */
typedef enum digits_split_kind { DIGITS_SPLIT_FIXED, DIGITS_SPLIT_SHUFFLED } digits_split_kind_t;

typedef struct digits_split {
    digits_split_kind_t kind;
    int64_t seed; /* the shuffled split's permutation; unused by the fixed split */
} digits_split_t;

/* "fixed" or "shuffled" (--split's value); anything else makes `program` print why and exit
 * with status 2, as the examples' other bad options do. */
digits_split_kind_t digits_split_kind_parse(const char *program, const char *text);

/* How the progress lines name the split: "fixed split", "shuffled split, seed 3". */
void digits_split_describe(digits_split_t split, char *out, size_t size);

/* A Fisher-Yates shuffle of order[0..n), a different permutation for every (seed, stream). */
void digits_shuffle(int32_t *order, int64_t n, int64_t seed, int64_t stream);

/* The data set, split as `split` says, the four tensors on CPU:0 (tp_digits_load_split's
 * shapes). On failure *out is all NULL. */
tp_status_t *digits_load(tp_context_t *c, digits_split_t split, tp_digits_t *out);

#endif /* TENSORPLUG_EXAMPLES_DIGITS_COMMON_H */
