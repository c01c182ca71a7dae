/* SPDX-License-Identifier: Apache-2.0 */
/* Prints the digits as tp_digits_load or tp_digits_load_split read them, one image a line in
 * the file's own form (pixel * 16, then the label), so that test_digits_file.sh can compare
 * them with what zcat shows of the file.
 *     digits_rows all|train|test [PATH]      (no PATH: tp_digits_default_path()) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorplug/training.h"

static int failed(tp_status_t *status) {
    fprintf(stderr, "%s: %s\n", tp_code_name(tp_status_code(status)), tp_status_message(status));
    tp_status_free(status);
    return 1;
}

static int print_rows(tp_tensor_t *images, tp_tensor_t *labels) {
    tp_shape_t shape = tp_tensor_shape(images);
    if (tp_tensor_dtype(images) != TP_FLOAT32 || shape.rank != 2 || shape.dims[1] != 64 ||
        tp_tensor_dtype(labels) != TP_INT32 || tp_tensor_num_elements(labels) != shape.dims[0]) {
        fprintf(stderr, "the tensors are not float32 (n, 64) and int32 (n)\n");
        return 1;
    }
    size_t rows = (size_t)shape.dims[0];
    float *pixels = malloc(rows * 64 * sizeof *pixels);
    int32_t *label = malloc(rows * sizeof *label);
    tp_status_t *status = pixels == NULL || label == NULL ? NULL : tp_tensor_read(images, pixels,
                                                                   rows * 64 * sizeof *pixels);
    if (pixels == NULL || label == NULL) return fprintf(stderr, "out of memory\n"), 1;
    if (status == NULL) status = tp_tensor_read(labels, label, rows * sizeof *label);
    if (status != NULL) return failed(status);
    int rc = 0;
    for (size_t r = 0; r < rows && rc == 0; r++) {
        for (size_t j = 0; j < 64; j++) {
            float value = pixels[r * 64 + j] * 16.0f;
            /* Scaled by 1/16 exactly: back to the whole number in the file. */
            if (!(value >= 0 && value <= 16 && value == floorf(value))) {
                fprintf(stderr, "row %zu pixel %zu is %.9g, not a whole sixteenth in [0, 1]\n",
                        r, j, (double)pixels[r * 64 + j]);
                rc = 1;
                break;
            }
            printf("%d,", (int)value);
        }
        printf("%d\n", (int)label[r]);
    }
    free(pixels);
    free(label);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3 || (strcmp(argv[1], "all") != 0 && strcmp(argv[1], "train") != 0 &&
                                 strcmp(argv[1], "test") != 0)) {
        fprintf(stderr, "usage: digits_rows all|train|test [PATH]\n");
        return 2;
    }
    const char *path = argc == 3 ? argv[2] : NULL;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    tp_context_t *context;
    tp_status_t *status = tp_context_create(&options, &context);
    if (status != NULL) return failed(status);
    int rc;
    if (strcmp(argv[1], "all") == 0) {
        tp_tensor_t *images, *labels;
        status = tp_digits_load(context, path, &images, &labels);
        rc = status != NULL ? failed(status) : print_rows(images, labels);
        if (status == NULL) {
            tp_tensor_release(images);
            tp_tensor_release(labels);
        }
    } else {
        tp_digits_t digits;
        status = tp_digits_load_split(context, path, &digits);
        bool train = strcmp(argv[1], "train") == 0;
        rc = status != NULL ? failed(status)
                            : print_rows(train ? digits.train_images : digits.test_images,
                                         train ? digits.train_labels : digits.test_labels);
        tp_digits_release(&digits);
    }
    tp_context_destroy(context);
    return rc;
}
