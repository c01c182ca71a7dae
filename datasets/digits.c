/* SPDX-License-Identifier: Apache-2.0 */
/* The UCI digits file as tensors: read in pieces, inflated and parsed as it comes
 * (digits_parse.c), then made into tensors on CPU:0 and, for the split, cut at row 1,437. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/env.h"
#include "base/printable.h"
#include "base/status.h"
#include "datasets/digits_parse.h"
#include "tensorplug/training.h"

enum {
    READ_CHUNK = 65536,
    SHOWN = 1024, /* a path as messages show it */
};

/* Read as every TP_ variable is (base/env.h): empty is unset, and a set-user-ID program does
 * not let its caller choose the file. */
const char *tp_digits_default_path(void) {
    const char *path = tp_env_get("TP_DIGITS_PATH");
    return path != NULL ? path : TP_DIGITS_DEFAULT_PATH;
}

static tp_status_t *system_failure(const char *what) {
    int error = errno;
    return tp_status_make(tp_code_from_errno(error), "%s: %s", what, strerror(error));
}

/* Feeds the file at `path` to `parser`, piece by piece. */
static tp_status_t *read_file(const char *path, tp_digits_parser_t *parser) {
    int fd;
    do fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return system_failure("opening it");
    unsigned char *chunk = malloc(READ_CHUNK);
    tp_status_t *error =
        chunk == NULL ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory") : NULL;
    while (error == NULL) {
        ssize_t n = read(fd, chunk, READ_CHUNK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) error = system_failure("reading it"); /* a folder: EISDIR */
        else if (n == 0) break;
        else error = tp_digits_parser_feed(parser, chunk, (size_t)n);
    }
    free(chunk);
    close(fd);
    if (error == NULL) error = tp_digits_parser_finish(parser);
    return error;
}

/* Rows [first, first + count) of what `parser` holds as images and labels on CPU:0. */
static tp_status_t *make_tensors(tp_context_t *context, const tp_digits_parser_t *parser,
                                 size_t first, size_t count, tp_tensor_t **out_images,
                                 tp_tensor_t **out_labels) {
    tp_tensor_t *images = NULL, *labels = NULL;
    tp_status_t *error = tp_tensor_create(
        context, TP_FLOAT32, TP_SHAPE((int64_t)count, TP_DIGITS_PIXELS),
        parser->images + first * TP_DIGITS_PIXELS, count * TP_DIGITS_PIXELS * sizeof(float),
        &images);
    if (error == NULL)
        error = tp_tensor_create(context, TP_INT32, TP_SHAPE((int64_t)count),
                                 parser->labels + first, count * sizeof(int32_t), &labels);
    if (error != NULL) {
        tp_tensor_release(images);
        return error;
    }
    *out_images = images;
    *out_labels = labels;
    return NULL;
}

/* Parses the file into `parser` (initialised here; the caller frees it). */
static tp_status_t *parse(const char *function, const char *path, tp_digits_parser_t *parser) {
    tp_status_t *error = tp_digits_parser_init(parser);
    if (error == NULL) error = read_file(path, parser);
    char shown[SHOWN];
    tp_printable_copy(shown, sizeof shown, path);
    return tp_status_annotate(error, "%s: '%s'", function, shown);
}

tp_status_t *tp_digits_load(tp_context_t *context, const char *path, tp_tensor_t **out_images,
                            tp_tensor_t **out_labels) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out_images);
    TP_REQUIRE_ARG(out_labels);
    if (path == NULL) path = tp_digits_default_path();
    tp_digits_parser_t parser;
    tp_status_t *error = parse(__func__, path, &parser);
    if (error == NULL)
        error = tp_status_annotate(
            make_tensors(context, &parser, 0, parser.rows, out_images, out_labels), __func__);
    tp_digits_parser_free(&parser);
    return error;
}

tp_status_t *tp_digits_load_split(tp_context_t *context, const char *path, tp_digits_t *out) {
    TP_REQUIRE_ARG(out);
    memset(out, 0, sizeof *out);
    TP_REQUIRE_ARG(context);
    if (path == NULL) path = tp_digits_default_path();
    tp_digits_parser_t parser;
    tp_status_t *error = parse(__func__, path, &parser);
    if (error == NULL && parser.rows != TP_DIGITS_ROWS) {
        char shown[SHOWN];
        tp_printable_copy(shown, sizeof shown, path);
        error = tp_status_make(TP_INVALID_ARGUMENT,
                               "%s: '%s' holds %zu images; the split (the first %d train, the "
                               "last %d test) is made for the %d of the UCI digits",
                               __func__, shown, parser.rows, TP_DIGITS_TRAIN_ROWS,
                               TP_DIGITS_TEST_ROWS, TP_DIGITS_ROWS);
    }
    if (error == NULL) {
        error = make_tensors(context, &parser, 0, TP_DIGITS_TRAIN_ROWS, &out->train_images,
                             &out->train_labels);
        if (error == NULL)
            error = make_tensors(context, &parser, TP_DIGITS_ROWS - TP_DIGITS_TEST_ROWS,
                                 TP_DIGITS_TEST_ROWS, &out->test_images, &out->test_labels);
        error = tp_status_annotate(error, __func__);
    }
    tp_digits_parser_free(&parser);
    if (error != NULL) tp_digits_release(out);
    return error;
}

void tp_digits_release(tp_digits_t *digits) {
    if (digits == NULL) return;
    tp_tensor_release(digits->train_images);
    tp_tensor_release(digits->train_labels);
    tp_tensor_release(digits->test_images);
    tp_tensor_release(digits->test_labels);
    memset(digits, 0, sizeof *digits);
}
