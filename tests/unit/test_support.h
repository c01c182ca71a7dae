/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the unit tests. */
#ifndef TP_TESTS_TEST_SUPPORT_H
#define TP_TESTS_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/dtype.h"
#include "tensorplug/tensorplug.h"

/* Fails the test with the status's message if it is an error. */
#define assert_ok(expr)                                                                        \
    do {                                                                                       \
        tp_status_t *assert_status_ = (expr);                                                  \
        if (assert_status_ != NULL) {                                                          \
            print_error("%s: %s\n", tp_code_name(tp_status_code(assert_status_)),             \
                        tp_status_message(assert_status_));                                    \
            tp_status_free(assert_status_);                                                    \
            fail();                                                                            \
        }                                                                                      \
    } while (0)

/* Asserts that `expr` fails with `code` and a message containing `fragment`. */
#define assert_error(expr, code, fragment)                                                     \
    do {                                                                                       \
        tp_status_t *assert_status_ = (expr);                                                  \
        assert_non_null(assert_status_);                                                       \
        if (tp_status_code(assert_status_) != (code) ||                                        \
            strstr(tp_status_message(assert_status_), (fragment)) == NULL) {                   \
            print_error("got %s: '%s'\nwanted %s containing '%s'\n",                           \
                        tp_code_name(tp_status_code(assert_status_)),                          \
                        tp_status_message(assert_status_), tp_code_name(code), (fragment));    \
            tp_status_free(assert_status_);                                                    \
            fail();                                                                            \
        }                                                                                      \
        tp_status_free(assert_status_);                                                        \
    } while (0)

/* The number of elements of `shape`. */
static inline int64_t element_count(tp_shape_t shape) {
    int64_t count = 0;
    assert_ok(tp_shape_num_elements(&shape, &count));
    return count;
}

static inline bool same_shape(tp_shape_t a, tp_shape_t b) {
    if (a.rank != b.rank) return false;
    for (int32_t d = 0; d < a.rank; d++)
        if (a.dims[d] != b.dims[d]) return false;
    return true;
}

/* The element of an operand of `shape` that element i of a result of shape `out` reads, by
 * NumPy's broadcasting: the operand's dimensions align with the result's last ones, and a
 * dimension of 1 repeats. */
static inline int64_t broadcast_source_index(tp_shape_t shape, tp_shape_t out, int64_t i) {
    int64_t index = 0, stride = 1;
    for (int32_t d = out.rank - 1; d >= 0; d--) {
        int64_t coordinate = i % out.dims[d];
        i /= out.dims[d];
        int32_t own = d - (out.rank - shape.rank);
        int64_t dim = own >= 0 ? shape.dims[own] : 1;
        if (dim != 1) index += coordinate * stride;
        stride *= dim;
    }
    return index;
}

/* Fails the test, naming both shapes, unless `tensor` has shape `want`. */
static inline void assert_tensor_shape(tp_tensor_t *tensor, tp_shape_t want) {
    tp_shape_t got = tp_tensor_shape(tensor);
    if (!same_shape(got, want)) {
        char got_text[128], want_text[128];
        tp_shape_format(&got, got_text, sizeof got_text);
        tp_shape_format(&want, want_text, sizeof want_text);
        fail_msg("shape %s, wanted %s", got_text, want_text);
    }
}

/* A float32 tensor of `shape` on the host, holding `values` (as many as the shape has). */
static inline tp_tensor_t *floats(tp_context_t *context, tp_shape_t shape, const float *values) {
    tp_tensor_t *t;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, shape, values,
                               (size_t)element_count(shape) * sizeof(float), &t));
    return t;
}

/* `expr` is an op call that fails with `code` and a message containing `fragment`, and leaves
 * its output `out` NULL. */
#define assert_op_fails(out, expr, code, fragment)                                             \
    do {                                                                                       \
        (out) = NULL;                                                                          \
        assert_error((expr), (code), (fragment));                                              \
        assert_null(out);                                                                      \
    } while (0)

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

/* A tensor of exactly the `size` bytes at `data` (tp_tensor_create checks them against the
 * shape and dtype). */
static inline tp_tensor_t *tensor_of_bytes(tp_context_t *context, tp_dtype_t dtype,
                                           tp_shape_t shape, const void *data, size_t size) {
    tp_tensor_t *tensor = NULL;
    assert_ok(tp_tensor_create(context, dtype, shape, data, size, &tensor));
    return tensor;
}

/* TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(2), 1, -2): a tensor of those values, as `ctype`. */
#define TENSOR_OF(c, dtype, ctype, shape, ...)                                                 \
    tensor_of_bytes((c), (dtype), (shape), (const ctype[]){__VA_ARGS__},                       \
                    sizeof((const ctype[]){__VA_ARGS__}))

/* A tensor of `dtype` and `shape` holding `values` (as many as the shape has), each converted
 * to the dtype as a C cast does. */
static inline tp_tensor_t *tensor_of_doubles(tp_context_t *context, tp_dtype_t dtype,
                                             tp_shape_t shape, const double *values) {
    int64_t count = element_count(shape);
    size_t size = (size_t)count * tp_dtype_size(dtype);
    void *buffer = malloc(size > 0 ? size : 1);
    assert_non_null(buffer);
    for (int64_t i = 0; i < count; i++) tp_dtype_store_double(buffer, dtype, i, values[i]);
    tp_tensor_t *tensor = NULL;
    tp_status_t *status = tp_tensor_create(context, dtype, shape, buffer, size, &tensor);
    free(buffer);
    assert_ok(status);
    return tensor;
}

/* Every element of `tensor`, whatever its dtype, as doubles in a malloc'd array; their number
 * in *out_count unless it is NULL. */
static inline double *read_doubles(tp_tensor_t *tensor, size_t *out_count) {
    size_t count = (size_t)tp_tensor_num_elements(tensor), size = tp_tensor_byte_size(tensor);
    tp_dtype_t dtype = tp_tensor_dtype(tensor);
    void *raw = malloc(size > 0 ? size : 1);
    double *values = malloc(count > 0 ? count * sizeof *values : 1);
    assert_non_null(raw);
    assert_non_null(values);
    tp_status_t *status = tp_tensor_read(tensor, raw, size);
    if (status == NULL)
        for (size_t i = 0; i < count; i++)
            values[i] = tp_dtype_load_double(raw, dtype, (int64_t)i);
    free(raw);
    if (status != NULL) free(values);
    assert_ok(status);
    if (out_count != NULL) *out_count = count;
    return values;
}

/* The file at `path` has the permissions a new file gets: 0666 less the umask. */
static inline void assert_new_file_mode(const char *path) {
    struct stat info;
    assert_int_equal(stat(path, &info), 0);
    mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(info.st_mode & 0777, 0666 & ~mask);
}

/* A cmocka setup step: a context made with `options`, kept in *state; -1 if it fails. */
static inline int create_context_state(void **state, const tp_context_options_t *options) {
    tp_context_t *context;
    tp_status_t *status = tp_context_create(options, &context);
    if (status != NULL) {
        print_error("%s\n", tp_status_message(status));
        tp_status_free(status);
        return -1;
    }
    *state = context;
    return 0;
}

/* The scratch folder of a test program, made by scratch_folder_make and removed with all it
 * holds by scratch_folder_remove. */
static inline char *scratch_folder(void) {
    static char folder[256];
    return folder;
}

/* Makes the scratch folder from a mkdtemp template ("/tmp/tp_test_x.XXXXXX"); -1 if it fails. */
static inline int scratch_folder_make(const char *name_template) {
    snprintf(scratch_folder(), 256, "%s", name_template);
    return mkdtemp(scratch_folder()) != NULL ? 0 : -1;
}

static inline int scratch_folder_remove(void) {
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch_folder());
    return system(command) == 0 ? 0 : -1;
}

/* Writes the file at `path` to hold the `size` bytes at `bytes`. */
static inline void write_file(const char *path, const void *bytes, size_t size) {
    FILE *file = fopen(path, "wb");
    assert_non_null(file);
    if (size > 0) assert_int_equal(fwrite(bytes, 1, size, file), size);
    assert_int_equal(fclose(file), 0);
}

/* The path of `name` in the scratch folder, in a buffer that the next call reuses. */
static inline const char *path_of(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch_folder(), name);
    return path;
}

#ifdef TP_TEST_PLUGIN_DIR
/* A cmocka setup: a context with the test plug-ins, whose broken ones are refused quietly. */
static inline int test_plugins_setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_TEST_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_log_set_level(TP_LOG_ERROR);
    return create_context_state(state, &options);
}
#endif

#endif
