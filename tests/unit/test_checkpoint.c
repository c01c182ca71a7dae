/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoints: variables saved to a .npz and restored by name, all or nothing, and the
 * all-or-nothing assignment they rest on. (tests/unit/npy_numpy.sh reads the same archives
 * with NumPy.) */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zip.h>

#include "cpu_fixture.h"
#include "tensorplug/training.h"

/* A context whose CPU is split into two logical devices, and a scratch folder. */
static int setup(void **state) {
    if (scratch_folder_make("/tmp/tp_test_checkpoint.XXXXXX") != 0) return -1;
    return split_cpu_context_setup(state, 2, 64ull << 20);
}

static int teardown(void **state) {
    if (scratch_folder_remove() != 0) return -1;
    return context_teardown(state);
}

/* A tensor of `dtype` and `shape` holding as many `values` as the shape has. */
static tp_tensor_t *tensor_of(tp_context_t *context, tp_dtype_t dtype, tp_shape_t shape,
                              const void *values) {
    return tensor_of_bytes(context, dtype, shape, values,
                           (size_t)element_count(shape) * tp_dtype_size(dtype));
}

static tp_variable_t *variable(tp_context_t *context, const char *name, tp_dtype_t dtype,
                               tp_shape_t shape, const void *values, const char *device) {
    tp_tensor_t *initial = tensor_of(context, dtype, shape, values);
    tp_variable_t *v;
    assert_ok(tp_variable_create(context, name, initial, device, &v));
    tp_tensor_release(initial);
    return v;
}

/* Asserts that the variable holds exactly `size` bytes `values`. */
static void assert_holds(tp_variable_t *v, const void *values, size_t size) {
    tp_tensor_t *value;
    assert_ok(tp_variable_read(v, &value));
    unsigned char back[256];
    assert_int_equal(tp_tensor_byte_size(value), size);
    assert_ok(tp_tensor_read(value, back, size));
    assert_memory_equal(back, values, size);
    assert_string_equal(tp_tensor_device(value), tp_variable_device(v));
    tp_tensor_release(value);
}

static void assign(tp_context_t *context, tp_variable_t *v, const void *values) {
    tp_tensor_t *t = tensor_of(context, tp_variable_dtype(v), tp_variable_shape(v), values);
    assert_ok(tp_variable_assign(v, t));
    tp_tensor_release(t);
}

static const float kernel_values[6] = {1.5f, -0.0f, NAN, INFINITY, 1e-45f, -3};
static const int64_t step_value = INT64_MIN;
static const bool flags_values[3] = {true, false, true};
static const float zeros[6] = {0};

static void variables_come_back_by_name_on_their_devices(void **state) {
    tp_context_t *context = *state;
    tp_variable_t *kernel =
        variable(context, "dense_0/kernel", TP_FLOAT32, TP_SHAPE(2, 3), kernel_values, "/cpu:1");
    tp_variable_t *step = variable(context, "step", TP_INT64, TP_SCALAR_SHAPE, &step_value, NULL);
    tp_variable_t *flags = variable(context, "flags", TP_BOOL, TP_SHAPE(3), flags_values, NULL);
    tp_variable_t *all[3] = {kernel, step, flags};
    assert_ok(tp_checkpoint_save(path_of("run.npz"), all, NULL, 3));

    const int64_t other_step = 5;
    const bool other_flags[3] = {false, false, false};
    assign(context, kernel, zeros);
    assign(context, step, &other_step);
    assign(context, flags, other_flags);
    /* In another order than saved: each finds its own member. */
    tp_variable_t *shuffled[3] = {flags, kernel, step};
    assert_ok(tp_checkpoint_load(context, path_of("run.npz"), shuffled, NULL, 3));
    assert_holds(kernel, kernel_values, sizeof kernel_values);
    assert_string_equal(tp_variable_device(kernel), "/job:localhost/replica:0/task:0/device:CPU:1");
    assert_holds(step, &step_value, sizeof step_value);
    assert_holds(flags, flags_values, sizeof flags_values);

    /* Names given by the caller; a name may repeat on loading (mirrored copies). */
    const char *names[2] = {"w", "n"};
    tp_variable_t *two[2] = {kernel, step};
    assert_ok(tp_checkpoint_save(path_of("named.npz"), two, names, 2));
    tp_variable_t *copy = variable(context, "copy", TP_FLOAT32, TP_SHAPE(2, 3), zeros, "/cpu:0");
    assign(context, kernel, zeros);
    tp_variable_t *mirrored[2] = {kernel, copy};
    const char *same[2] = {"w", "w"};
    assert_ok(tp_checkpoint_load(context, path_of("named.npz"), mirrored, same, 2));
    assert_holds(kernel, kernel_values, sizeof kernel_values);
    assert_holds(copy, kernel_values, sizeof kernel_values);

    assert_new_file_mode(path_of("run.npz"));
    tp_variable_destroy(copy);
    tp_variable_destroy(kernel);
    tp_variable_destroy(step);
    tp_variable_destroy(flags);
}

/* Whatever is wrong with one variable, none of them changes. */
static void a_refused_restore_changes_nothing(void **state) {
    tp_context_t *context = *state;
    tp_variable_t *kernel =
        variable(context, "kernel", TP_FLOAT32, TP_SHAPE(2, 3), kernel_values, NULL);
    tp_variable_t *step = variable(context, "step", TP_INT64, TP_SCALAR_SHAPE, &step_value, NULL);
    tp_variable_t *saved[2] = {kernel, step};
    assert_ok(tp_checkpoint_save(path_of("two.npz"), saved, NULL, 2));
    assign(context, kernel, zeros);

    char wanted[1200];
    tp_variable_t *absent = variable(context, "bias", TP_FLOAT32, TP_SHAPE(3), zeros, NULL);
    tp_variable_t *with_absent[2] = {kernel, absent};
    snprintf(wanted, sizeof wanted,
             "tp_checkpoint_load: '%s': variable 'bias': the checkpoint has no member 'bias.npy' "
             "(it holds 'kernel', 'step')",
             path_of("two.npz"));
    assert_error(tp_checkpoint_load(context, path_of("two.npz"), with_absent, NULL, 2),
                 TP_NOT_FOUND, wanted);

    tp_variable_t *wide = variable(context, "step", TP_INT64, TP_SHAPE(2), (int64_t[2]){0}, NULL);
    tp_variable_t *with_wide[2] = {kernel, wide};
    assert_error(tp_checkpoint_load(context, path_of("two.npz"), with_wide, NULL, 2),
                 TP_INVALID_ARGUMENT,
                 "variable 'step': the variable is int64 of shape (2,), the checkpoint holds "
                 "int64 of shape ()");
    tp_variable_t *narrow = variable(context, "step", TP_INT32, TP_SCALAR_SHAPE, (int32_t[1]){0},
                                     NULL);
    tp_variable_t *with_narrow[2] = {kernel, narrow};
    assert_error(tp_checkpoint_load(context, path_of("two.npz"), with_narrow, NULL, 2),
                 TP_INVALID_ARGUMENT,
                 "variable 'step': the variable is int32 of shape (), the checkpoint holds int64 "
                 "of shape ()");
    assert_holds(kernel, zeros, sizeof zeros);

    tp_variable_destroy(absent);
    tp_variable_destroy(wide);
    tp_variable_destroy(narrow);
    tp_variable_destroy(kernel);
    tp_variable_destroy(step);
}

/* An archive made by hand: members NAME -> bytes, stored or deflated. */
static void make_zip(const char *path, const char *const *members, const void *const *bytes,
                     const size_t *sizes, size_t count, bool deflate) {
    int code;
    zip_t *archive = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &code);
    assert_non_null(archive);
    for (size_t i = 0; i < count; i++) {
        zip_source_t *source = zip_source_buffer(archive, bytes[i], sizes[i], 0);
        assert_non_null(source);
        zip_int64_t index = zip_file_add(archive, members[i], source, 0);
        assert_true(index >= 0);
        assert_int_equal(zip_set_file_compression(archive, (zip_uint64_t)index,
                                                  deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0),
                         0);
    }
    assert_int_equal(zip_close(archive), 0);
}

static void malformed_archives_and_members_are_refused(void **state) {
    tp_context_t *context = *state;
    tp_variable_t *kernel =
        variable(context, "kernel", TP_FLOAT32, TP_SHAPE(2, 3), kernel_values, NULL);
    tp_variable_t *one[1] = {kernel};
    tp_tensor_t *value;
    assert_ok(tp_variable_read(kernel, &value));
    void *npy;
    size_t npy_size;
    assert_ok(tp_tensor_encode_npy(value, &npy, &npy_size));
    tp_tensor_release(value);

    /* Deflated, as numpy.savez_compressed writes, with members of no variable beside. */
    assign(context, kernel, zeros);
    const char *members[2] = {"notes.txt", "kernel.npy"};
    const void *bytes[2] = {"hello", npy};
    const size_t sizes[2] = {5, npy_size};
    make_zip(path_of("deflated.npz"), members, bytes, sizes, 2, true);
    assert_ok(tp_checkpoint_load(context, path_of("deflated.npz"), one, NULL, 1));
    assert_holds(kernel, kernel_values, sizeof kernel_values);

    /* A member that is not a .npy, one cut short, one far larger than the variable's. */
    assign(context, kernel, zeros);
    const void *garbage[1] = {"PK not an npy"};
    const size_t garbage_size[1] = {13};
    make_zip(path_of("garbage.npz"), &members[1], garbage, garbage_size, 1, false);
    assert_error(tp_checkpoint_load(context, path_of("garbage.npz"), one, NULL, 1),
                 TP_INVALID_ARGUMENT,
                 "variable 'kernel': tp_tensor_decode_npy: not a .npy file");
    const size_t cut_size[1] = {npy_size - 1};
    const void *cut[1] = {npy};
    make_zip(path_of("cut.npz"), &members[1], cut, cut_size, 1, false);
    assert_error(tp_checkpoint_load(context, path_of("cut.npz"), one, NULL, 1),
                 TP_INVALID_ARGUMENT, "truncated: dtype float32 and shape (2, 3) need 24 bytes");
    size_t huge_size[1] = {128 + 24 + 65548 + 1};
    void *huge = calloc(1, huge_size[0]);
    const void *huge_bytes[1] = {huge};
    make_zip(path_of("huge.npz"), &members[1], huge_bytes, huge_size, 1, true);
    free(huge);
    assert_error(tp_checkpoint_load(context, path_of("huge.npz"), one, NULL, 1),
                 TP_INVALID_ARGUMENT,
                 "variable 'kernel': its member holds 65701 bytes, more than a .npy of the "
                 "variable (float32, shape (2, 3)) can");
    free(npy);

    /* Not an archive, an archive cut short, no file at all. */
    const char plain[] = "just text, not a zip archive";
    write_file(path_of("plain.npz"), plain, sizeof plain - 1);
    assert_error(tp_checkpoint_load(context, path_of("plain.npz"), one, NULL, 1),
                 TP_INVALID_ARGUMENT, "plain.npz': opening it: Not a zip archive");
    assert_ok(tp_checkpoint_save(path_of("whole.npz"), one, NULL, 1));
    assert_int_equal(truncate(path_of("whole.npz"), 100), 0);
    assert_error(tp_checkpoint_load(context, path_of("whole.npz"), one, NULL, 1),
                 TP_INVALID_ARGUMENT, "whole.npz': opening it: Not a zip archive");
    assert_error(tp_checkpoint_load(context, path_of("absent.npz"), one, NULL, 1), TP_NOT_FOUND,
                 "absent.npz': opening it: No such file");
    assert_holds(kernel, zeros, sizeof zeros);
    tp_variable_destroy(kernel);
}

static void bad_saves_are_refused_and_write_nothing(void **state) {
    tp_context_t *context = *state;
    tp_variable_t *a = variable(context, "a", TP_FLOAT32, TP_SHAPE(2, 3), kernel_values, NULL);
    tp_variable_t *b = variable(context, "a", TP_FLOAT32, TP_SHAPE(2, 3), zeros, NULL);
    tp_variable_t *both[2] = {a, b};
    assert_error(tp_checkpoint_save(path_of("dup.npz"), both, NULL, 2), TP_INVALID_ARGUMENT,
                 "dup.npz': variables 0 and 1 are both named 'a'");
    const char *empty[2] = {"a", ""};
    assert_error(tp_checkpoint_save(path_of("dup.npz"), both, empty, 2), TP_INVALID_ARGUMENT,
                 "variable 1 has an empty name");
    assert_error(tp_checkpoint_save(path_of("dup.npz"), both, NULL, 0), TP_INVALID_ARGUMENT,
                 "no variables were given");
    assert_int_equal(access(path_of("dup.npz"), F_OK), -1);

    char path[600];
    snprintf(path, sizeof path, "%s/no/such/folder.npz", scratch_folder());
    assert_error(tp_checkpoint_save(path, both, NULL, 1), TP_NOT_FOUND,
                 "writing it: Failure to create temporary file: No such file or directory");
    assert_error(tp_checkpoint_save(scratch_folder(), both, NULL, 1), TP_INVALID_ARGUMENT,
                 "': it is a folder");

    /* A save over a checkpoint replaces it whole. */
    const char *names[2] = {"first", "second"};
    assert_ok(tp_checkpoint_save(path_of("over.npz"), both, names, 2));
    assert_ok(tp_checkpoint_save(path_of("over.npz"), both, NULL, 1));
    tp_variable_t *second[1] = {b};
    assert_error(tp_checkpoint_load(context, path_of("over.npz"), second, names + 1, 1),
                 TP_NOT_FOUND, "has no member 'second.npy' (it holds 'a')");
    tp_variable_destroy(a);
    tp_variable_destroy(b);
}

/* ---- tp_variable_assign_all ---------------------------------------------------------------- */

static void assign_all_checks_every_value_before_changing_any(void **state) {
    tp_context_t *context = *state;
    tp_variable_t *a = variable(context, "a", TP_FLOAT32, TP_SHAPE(2, 3), zeros, "/cpu:1");
    tp_variable_t *b = variable(context, "b", TP_FLOAT32, TP_SHAPE(3), zeros, NULL);
    tp_tensor_t *six, *three, *two;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 3), kernel_values,
                               sizeof kernel_values, &six));
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(3), kernel_values,
                               3 * sizeof(float), &three));
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2), kernel_values,
                               2 * sizeof(float), &two));
    tp_variable_t *both[2] = {a, b};
    tp_tensor_t *wrong[2] = {six, two};
    assert_error(tp_variable_assign_all(both, wrong, 2), TP_INVALID_ARGUMENT,
                 "tp_variable_assign_all: 'b' has shape (3,), the value (2,)");
    assert_holds(a, zeros, sizeof zeros);
    tp_tensor_t *with_null[2] = {six, NULL};
    assert_error(tp_variable_assign_all(both, with_null, 2), TP_INVALID_ARGUMENT,
                 "value 1 is NULL");
    tp_tensor_t *right[2] = {six, three};
    assert_ok(tp_variable_assign_all(both, right, 2));
    assert_holds(a, kernel_values, sizeof kernel_values);
    assert_holds(b, kernel_values, 3 * sizeof(float));
    tp_tensor_release(six);
    tp_tensor_release(three);
    tp_tensor_release(two);
    tp_variable_destroy(a);
    tp_variable_destroy(b);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        TEST(variables_come_back_by_name_on_their_devices),
        TEST(a_refused_restore_changes_nothing),
        TEST(malformed_archives_and_members_are_refused),
        TEST(bad_saves_are_refused_and_write_nothing),
        TEST(assign_all_checks_every_value_before_changing_any),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
