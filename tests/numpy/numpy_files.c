/* SPDX-License-Identifier: Apache-2.0 */
/* The C side of test_numpy_files.sh: writes .npy files and a checkpoint for NumPy to read, and
 * reads what NumPy wrote. Each array it writes or reads is printed as one line,
 *     NAME DTYPE SHAPE HEX
 * with the values' bytes in C order and little-endian, in hex, as the script prints what NumPy
 * loads, so that the two sides can be compared line for line.
 *   numpy_files write DIR                  the files, into DIR
 *   numpy_files read FILE...               loads each .npy; a refusal prints "FILE refused: ..."
 *   numpy_files restore FILE NAME:DTYPE:DIMS...   variables of zeros restored from a .npz
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorplug/training.h>

static void print_tensor(const char *name, tp_tensor_t *tensor) {
    size_t size = tp_tensor_byte_size(tensor);
    unsigned char *bytes = malloc(size + 1);
    TP_CHECK(tp_tensor_read(tensor, bytes, size));
    tp_shape_t shape = tp_tensor_shape(tensor);
    char shape_text[256];
    tp_shape_format(&shape, shape_text, sizeof shape_text);
    /* The host is little-endian here, as the machines this runs on are; a big-endian host would
     * print its own order and the comparison would say so. */
    printf("%s %s %s ", name, tp_dtype_name(tp_tensor_dtype(tensor)), shape_text);
    for (size_t i = 0; i < size; i++) printf("%02x", bytes[i]);
    printf("\n");
    free(bytes);
}

static tp_tensor_t *tensor_of(tp_context_t *context, tp_dtype_t dtype, tp_shape_t shape,
                              const void *values) {
    int64_t count;
    TP_CHECK(tp_shape_num_elements(&shape, &count));
    tp_tensor_t *t;
    TP_CHECK(tp_tensor_create(context, dtype, shape, values, (size_t)count * tp_dtype_size(dtype),
                              &t));
    return t;
}

static void save(tp_context_t *context, const char *dir, const char *name, tp_dtype_t dtype,
                 tp_shape_t shape, const void *values) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tp_tensor_t *t = tensor_of(context, dtype, shape, values);
    TP_CHECK(tp_tensor_save_npy(t, path));
    print_tensor(name, t);
    tp_tensor_release(t);
}

static int write_files(tp_context_t *context, const char *dir) {
    const float f32[6] = {1.5f, -0.0f, NAN, INFINITY, -INFINITY, 1e-45f};
    const double f64[6] = {0.1, -0.0, NAN, 1.7976931348623157e308, 5e-324, -2};
    const int32_t i32[6] = {INT32_MIN, INT32_MAX, 0, -1, 1, 7};
    const int64_t i64[6] = {INT64_MIN, INT64_MAX, 0, -1, 1, 7};
    const uint8_t u8[6] = {0, 255, 1, 127, 128, 7};
    const bool b[6] = {true, false, false, true, true, false};
    save(context, dir, "float32.npy", TP_FLOAT32, TP_SHAPE(2, 3), f32);
    save(context, dir, "float64.npy", TP_FLOAT64, TP_SHAPE(3, 2), f64);
    save(context, dir, "int32.npy", TP_INT32, TP_SHAPE(6), i32);
    save(context, dir, "int64.npy", TP_INT64, TP_SHAPE(1, 2, 3), i64);
    save(context, dir, "uint8.npy", TP_UINT8, TP_SHAPE(2, 3), u8);
    save(context, dir, "bool.npy", TP_BOOL, TP_SHAPE(2, 3), b);
    /* The dtypes of ABI 1.7: float16 1.5, -0, NaN, inf, 65504 and its smallest subnormal;
     * bfloat16 1.5, -0, NaN, -inf, 3.3895314e38 (its largest) and 0.10009765625. */
    const uint16_t f16[6] = {0x3e00, 0x8000, 0x7e00, 0x7c00, 0x7bff, 0x0001};
    const uint16_t bf16[6] = {0x3fc0, 0x8000, 0x7fc0, 0xff80, 0x7f7f, 0x3dcd};
    const int8_t i8[6] = {INT8_MIN, INT8_MAX, 0, -1, 1, 7};
    const int16_t i16[6] = {INT16_MIN, INT16_MAX, 0, -1, 1, 7};
    const uint16_t u16[6] = {0, UINT16_MAX, 1, 32767, 32768, 7};
    const uint32_t u32[6] = {0, UINT32_MAX, 1, 2147483647u, 2147483648u, 7};
    const uint64_t u64[6] = {0, UINT64_MAX, 1, UINT64_C(1) << 63, (UINT64_C(1) << 63) - 1, 7};
    save(context, dir, "float16.npy", TP_FLOAT16, TP_SHAPE(2, 3), f16);
    save(context, dir, "bfloat16.npy", TP_BFLOAT16, TP_SHAPE(3, 2), bf16);
    save(context, dir, "int8.npy", TP_INT8, TP_SHAPE(6), i8);
    save(context, dir, "int16.npy", TP_INT16, TP_SHAPE(6), i16);
    save(context, dir, "uint16.npy", TP_UINT16, TP_SHAPE(6), u16);
    save(context, dir, "uint32.npy", TP_UINT32, TP_SHAPE(2, 3), u32);
    save(context, dir, "uint64.npy", TP_UINT64, TP_SHAPE(6), u64);
    save(context, dir, "scalar.npy", TP_FLOAT64, TP_SCALAR_SHAPE, f64);
    save(context, dir, "empty.npy", TP_FLOAT32, TP_SHAPE(0, 3), f32);
    float *large = malloc(300 * 257 * sizeof *large);
    for (int i = 0; i < 300 * 257; i++) large[i] = (float)i * 0.5f - 1000.0f;
    save(context, dir, "large.npy", TP_FLOAT32, TP_SHAPE(300, 257), large);
    free(large);

    /* A training run's variables. */
    tp_tensor_t *kernel = tensor_of(context, TP_FLOAT32, TP_SHAPE(2, 3), f32);
    tp_tensor_t *bias = tensor_of(context, TP_FLOAT32, TP_SHAPE(3), f32 + 3);
    tp_tensor_t *step = tensor_of(context, TP_INT64, TP_SCALAR_SHAPE, i64 + 1);
    tp_variable_t *variables[3];
    TP_CHECK(tp_variable_create(context, "dense_0/kernel", kernel, NULL, &variables[0]));
    TP_CHECK(tp_variable_create(context, "dense_0/bias", bias, NULL, &variables[1]));
    TP_CHECK(tp_variable_create(context, "step", step, NULL, &variables[2]));
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoint.npz", dir);
    TP_CHECK(tp_checkpoint_save(path, variables, NULL, 3));
    print_tensor("checkpoint.npz:dense_0/kernel", kernel);
    print_tensor("checkpoint.npz:dense_0/bias", bias);
    print_tensor("checkpoint.npz:step", step);
    for (int i = 0; i < 3; i++) tp_variable_destroy(variables[i]);
    tp_tensor_release(kernel);
    tp_tensor_release(bias);
    tp_tensor_release(step);
    return 0;
}

static int read_files(tp_context_t *context, int count, char **paths) {
    for (int i = 0; i < count; i++) {
        tp_tensor_t *t;
        tp_status_t *error = tp_tensor_load_npy(context, paths[i], &t);
        const char *name = strrchr(paths[i], '/') != NULL ? strrchr(paths[i], '/') + 1 : paths[i];
        if (error != NULL) {
            printf("%s refused: %s: %s\n", name, tp_code_name(tp_status_code(error)),
                   tp_status_message(error));
            tp_status_free(error);
            continue;
        }
        print_tensor(name, t);
        tp_tensor_release(t);
    }
    return 0;
}

/* NAME:DTYPE:DIMS, DIMS comma-separated ("" for a scalar). */
static tp_variable_t *zero_variable(tp_context_t *context, char *spec) {
    char *name = strtok(spec, ":"), *dtype_name = strtok(NULL, ":"), *dims = strtok(NULL, ":");
    tp_dtype_t dtype;
    TP_CHECK(tp_dtype_from_name(dtype_name, &dtype));
    tp_shape_t shape = TP_SCALAR_SHAPE;
    for (char *d = dims != NULL ? strtok(dims, ",") : NULL; d != NULL; d = strtok(NULL, ","))
        shape.dims[shape.rank++] = atoll(d);
    int64_t count;
    TP_CHECK(tp_shape_num_elements(&shape, &count));
    void *zeros = calloc(1, (size_t)count * tp_dtype_size(dtype) + 1);
    tp_tensor_t *t = tensor_of(context, dtype, shape, zeros);
    free(zeros);
    tp_variable_t *v;
    TP_CHECK(tp_variable_create(context, name, t, NULL, &v));
    tp_tensor_release(t);
    return v;
}

static int restore(tp_context_t *context, const char *path, int count, char **specs) {
    tp_variable_t **variables = calloc((size_t)count, sizeof *variables);
    for (int i = 0; i < count; i++) variables[i] = zero_variable(context, specs[i]);
    tp_status_t *error = tp_checkpoint_load(context, path, variables, NULL, (size_t)count);
    const char *file = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
    if (error != NULL) {
        printf("%s refused: %s: %s\n", file, tp_code_name(tp_status_code(error)),
               tp_status_message(error));
        tp_status_free(error);
    }
    for (int i = 0; i < count; i++) {
        if (error == NULL) {
            tp_tensor_t *value;
            TP_CHECK(tp_variable_read(variables[i], &value));
            char name[512];
            snprintf(name, sizeof name, "%s:%s", file, tp_variable_name(variables[i]));
            print_tensor(name, value);
            tp_tensor_release(value);
        }
        tp_variable_destroy(variables[i]);
    }
    free(variables);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: numpy_files write DIR | read FILE... | restore FILE SPEC...\n");
        return 2;
    }
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));
    int status = 2;
    if (strcmp(argv[1], "write") == 0) status = write_files(context, argv[2]);
    if (strcmp(argv[1], "read") == 0) status = read_files(context, argc - 2, argv + 2);
    if (strcmp(argv[1], "restore") == 0) status = restore(context, argv[2], argc - 3, argv + 3);
    tp_context_destroy(context);
    return status;
}
