/* SPDX-License-Identifier: Apache-2.0 */
/* The digits examples' shared pieces: see digits_common.h. */
#include "digits_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

digits_split_kind_t digits_split_kind_parse(const char *program, const char *text) {
    if (strcmp(text, "fixed") == 0) return DIGITS_SPLIT_FIXED;
    if (strcmp(text, "shuffled") == 0) return DIGITS_SPLIT_SHUFFLED;
    fprintf(stderr, "%s: --split takes 'fixed' or 'shuffled', not '%s'\n", program, text);
    exit(2);
}

void digits_split_describe(digits_split_t split, char *out, size_t size) {
    if (split.kind == DIGITS_SPLIT_FIXED)
        snprintf(out, size, "fixed split");
    else
        snprintf(out, size, "shuffled split, seed %lld", (long long)split.seed);
}

/* SplitMix64: a small seeded generator for the host's shuffling. */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void digits_shuffle(int32_t *order, int64_t n, int64_t seed, int64_t stream) {
    uint64_t state = (uint64_t)seed * 1000003u + (uint64_t)stream;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix64(&state) % (uint64_t)(i + 1));
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The rows `indices[0..n)` of images and labels, as the split's images and labels. */
static tp_status_t *take_rows(tp_context_t *c, tp_tensor_t *images, tp_tensor_t *labels,
                              const int32_t *indices, int64_t n, tp_tensor_t **out_images,
                              tp_tensor_t **out_labels) {
    tp_tensor_t *index = NULL;
    tp_status_t *error = tp_tensor_create(c, TP_INT32, TP_SHAPE(n), indices,
                                          (size_t)n * sizeof(int32_t), &index);
    if (error == NULL) error = tp_gather(c, images, index, 0, out_images);
    if (error == NULL) error = tp_gather(c, labels, index, 0, out_labels);
    tp_tensor_release(index);
    return error;
}

/* The shuffled split: the fixed split's halves joined back into the file's order, permuted by
 * the split's own seed (the training's --seed shuffles batches, not this), then cut where the
 * fixed split cuts. Loading through tp_digits_load_split keeps its check that the file holds
 * the 1,797 images. */
static tp_status_t *shuffled_split(tp_context_t *c, int64_t seed, const tp_digits_t *fixed,
                                   tp_digits_t *out) {
    tp_status_t *error = NULL;
    tp_tensor_t *images = NULL, *labels = NULL;
    tp_tensor_t *const image_halves[2] = {fixed->train_images, fixed->test_images};
    tp_tensor_t *const label_halves[2] = {fixed->train_labels, fixed->test_labels};
    int32_t order[TP_DIGITS_ROWS];
    for (int32_t i = 0; i < TP_DIGITS_ROWS; i++) order[i] = i;
    /* Stream 0: the examples' batch shuffles use streams 1, 2, ... (their epochs). */
    digits_shuffle(order, TP_DIGITS_ROWS, seed, 0);
    error = tp_concat(c, image_halves, 2, 0, &images);
    if (error == NULL) error = tp_concat(c, label_halves, 2, 0, &labels);
    if (error == NULL)
        error = take_rows(c, images, labels, order, TP_DIGITS_TRAIN_ROWS, &out->train_images,
                          &out->train_labels);
    if (error == NULL)
        error = take_rows(c, images, labels, order + TP_DIGITS_TRAIN_ROWS, TP_DIGITS_TEST_ROWS,
                          &out->test_images, &out->test_labels);
    tp_tensor_release(images);
    tp_tensor_release(labels);
    return error;
}

tp_status_t *digits_load(tp_context_t *c, digits_split_t split, tp_digits_t *out) {
    tp_digits_t fixed = {NULL, NULL, NULL, NULL};
    *out = fixed;
    tp_status_t *error = tp_digits_load_split(c, NULL, &fixed);
    if (error != NULL || split.kind == DIGITS_SPLIT_FIXED) {
        *out = fixed;
        return error;
    }
    /* On CPU:0, where tp_digits_load_split puts the fixed split. */
    error = tp_device_push(c, "/CPU:0");
    if (error == NULL) {
        error = shuffled_split(c, split.seed, &fixed, out);
        tp_status_free(tp_device_pop(c));
    }
    tp_digits_release(&fixed);
    if (error != NULL) tp_digits_release(out);
    return error;
}
