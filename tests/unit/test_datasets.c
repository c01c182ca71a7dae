/* SPDX-License-Identifier: Apache-2.0 */
/* The digits loader on gzip files this test writes with zlib: whole ones are read row by row
 * into pixels / 16 and labels, the split cuts at row 1,437, and every way a file can be wrong
 * (a field, a line, the gzip stream, the file itself) is refused with the file and the line
 * named. The real file is checked against zcat by tests/datasets/test_digits_file.sh. */
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cpu_fixture.h"
#include "tensorplug/training.h"

static int setup(void **state) {
    if (scratch_folder_make("/tmp/tp_test_datasets.XXXXXX") != 0) return -1;
    return cpu_context_setup(state);
}

static int teardown(void **state) {
    if (scratch_folder_remove() != 0) return -1;
    return cpu_context_teardown(state);
}

/* Writes `text` to the file `name` as one gzip member (mode "wb") or one more ("ab"). */
static const char *write_gz(const char *name, const char *mode, const char *text, size_t size) {
    const char *path = path_of(name);
    gzFile file = gzopen(path, mode);
    assert_non_null(file);
    if (size > 0) assert_int_equal(gzwrite(file, text, (unsigned)size), (int)size);
    assert_int_equal(gzclose(file), Z_OK);
    return path;
}

static const char *write_gz_text(const char *name, const char *text) {
    return write_gz(name, "wb", text, strlen(text));
}

static const char *write_bytes(const char *name, const void *bytes, size_t size) {
    const char *path = path_of(name);
    write_file(path, bytes, size);
    return path;
}

/* The whole of the file at `path`, malloc'd. */
static unsigned char *read_bytes(const char *path, size_t *out_size) {
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    assert_int_equal(fseek(file, 0, SEEK_END), 0);
    long size = ftell(file);
    assert_true(size > 0);
    rewind(file);
    unsigned char *bytes = malloc((size_t)size);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, (size_t)size, file), (size_t)size);
    fclose(file);
    *out_size = (size_t)size;
    return bytes;
}

/* Pixels that look random enough that deflate cannot fold the rows into a few bytes. */
static int pixel(int row, int j) {
    uint32_t h = (uint32_t)row * 2654435761u ^ (uint32_t)j * 40503u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    return (int)((h ^ (h >> 15)) % 17);
}

/* A line of pixels pixel(row, j) and label row % 10, with its newline, appended to `text`. */

static size_t append_row(char *text, size_t used, size_t capacity, int row) {
    for (int j = 0; j < 64; j++) {
        int n = snprintf(text + used, capacity - used, "%d,", pixel(row, j));
        assert_true(n > 0 && (size_t)n < capacity - used);
        used += (size_t)n;
    }
    int n = snprintf(text + used, capacity - used, "%d\n", row % 10);
    assert_true(n > 0 && (size_t)n < capacity - used);
    return used + (size_t)n;
}

/* `rows` lines as append_row makes them, malloc'd. */
static char *rows_text(int rows, size_t *out_length) {
    size_t capacity = (size_t)rows * 200 + 1, used = 0;
    char *text = malloc(capacity);
    assert_non_null(text);
    text[0] = '\0';
    for (int row = 0; row < rows; row++) used = append_row(text, used, capacity, row);
    *out_length = used;
    return text;
}

/* Asserts that `images` (n, 64) and `labels` (n) hold rows first_row.. of append_row's. */
static void assert_rows(tp_tensor_t *images, tp_tensor_t *labels, int first_row, int64_t n) {
    assert_int_equal(tp_tensor_dtype(images), TP_FLOAT32);
    assert_int_equal(tp_tensor_dtype(labels), TP_INT32);
    assert_tensor_shape(images, TP_SHAPE(n, 64));
    assert_tensor_shape(labels, TP_SHAPE(n));
    assert_string_equal(tp_tensor_device(images), "/job:localhost/replica:0/task:0/device:CPU:0");
    float *pixels = malloc((size_t)n * 64 * sizeof *pixels);
    int32_t *got = malloc((size_t)n * sizeof *got);
    assert_non_null(pixels);
    assert_non_null(got);
    assert_ok(tp_tensor_read(images, pixels, (size_t)n * 64 * sizeof *pixels));
    assert_ok(tp_tensor_read(labels, got, (size_t)n * sizeof *got));
    for (int64_t i = 0; i < n; i++) {
        int row = first_row + (int)i;
        for (int j = 0; j < 64; j++) {
            float want = (float)pixel(row, j) / 16.0f;
            if (pixels[i * 64 + j] != want)
                fail_msg("row %d pixel %d is %.9g, expected %.9g", row, j,
                         (double)pixels[i * 64 + j], (double)want);
        }
        assert_int_equal(got[i], row % 10);
    }
    free(pixels);
    free(got);
}

static void reads_pixels_over_sixteen_and_labels(void **state) {
    tp_context_t *context = *state;
    size_t length;
    char *text = rows_text(5, &length);
    const char *path = write_gz("five.csv.gz", "wb", text, length);
    tp_tensor_t *images, *labels;
    assert_ok(tp_digits_load(context, path, &images, &labels));
    assert_rows(images, labels, 0, 5);
    tp_tensor_release(images);
    tp_tensor_release(labels);

    /* The same rows in two gzip members, one after the other, as `cat a.gz b.gz` makes. */
    size_t half = length / 2;
    write_gz("members.csv.gz", "wb", text, half);
    path = write_gz("members.csv.gz", "ab", text + half, length - half);
    assert_ok(tp_digits_load(context, path, &images, &labels));
    assert_rows(images, labels, 0, 5);
    tp_tensor_release(images);
    tp_tensor_release(labels);
    free(text);
}

/* Blanks around numbers, CRLF line ends, leading zeros, no newline after the last line. */
static void reads_the_forms_numpy_reads(void **state) {
    tp_context_t *context = *state;
    char text[2048];
    size_t used = 0;
    for (int line = 0; line < 2; line++) {
        for (int j = 0; j < 64; j++)
            used += (size_t)snprintf(text + used, sizeof text - used, j == 5 ? " 016\t," : "%d,",
                                     j % 2);
        used += (size_t)snprintf(text + used, sizeof text - used, line == 0 ? "7\r\n" : " 3");
    }
    const char *path = write_gz_text("forms.csv.gz", text);
    tp_tensor_t *images, *labels;
    assert_ok(tp_digits_load(context, path, &images, &labels));
    float pixels[128];
    int32_t got[2];
    assert_ok(tp_tensor_read(images, pixels, sizeof pixels));
    assert_ok(tp_tensor_read(labels, got, sizeof got));
    for (int i = 0; i < 128; i++)
        assert_true(pixels[i] == (i % 64 == 5 ? 1.0f : (float)(i % 2) / 16.0f));
    assert_int_equal(got[0], 7);
    assert_int_equal(got[1], 3);
    tp_tensor_release(images);
    tp_tensor_release(labels);
}

typedef struct {
    int field;           /* 1-based field of line 2 to replace; 0: the whole line */
    const char *value;   /* what goes there */
    const char *message; /* expected after "'<path>': " */
} bad_line_t;

/* Line 2 of a 3-line file made bad in one way each: refused, naming the file and line 2. */
static void refuses_each_malformed_line(void **state) {
    tp_context_t *context = *state;
    char long_line[1100];
    memset(long_line, '1', sizeof long_line - 1);
    long_line[sizeof long_line - 1] = '\0';
    const bad_line_t cases[] = {
        {7, "x", "line 2: field 7 ('x') is not a whole number"},
        {7, "1.5", "line 2: field 7 ('1.5') is not a whole number"},
        {3, "", "line 2: field 3 ('') is not a whole number"},
        {64, "-", "line 2: field 64 ('-') is not a whole number"},
        {2, "1e1", "line 2: field 2 ('1e1') is not a whole number"},
        {2, "\x01'\\", "line 2: field 2 ('\\x01\\x27\\x5C') is not a whole number"},
        {65, "nine", "line 2: field 65 ('nine') is not a whole number"},
        {5, "17", "line 2: pixel 5 is 17, outside 0..16"},
        {1, "-1", "line 2: pixel 1 is -1, outside 0..16"},
        {64, "99999999999999999999", "line 2: pixel 64 is 99999999999999999999, outside 0..16"},
        {65, "10", "line 2: the label is 10, outside 0..9"},
        {65, "-3", "line 2: the label is -3, outside 0..9"},
        {65, "5,5", "line 2 has 66 fields; each line holds 65: 64 pixels, then the label"},
        {0, "1,2,3", "line 2 has 3 fields; each line holds 65"},
        {0, "7", "line 2 has 1 field; each line holds 65"},
        {0, "", "line 2 is empty; each line holds 64 pixels and a label"},
        {0, "\r", "line 2 is empty"},
        {0, long_line, "line 2 is longer than 1024 bytes"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[4096];
        size_t used = append_row(text, 0, sizeof text, 0);
        if (cases[c].field == 0) {
            used += (size_t)snprintf(text + used, sizeof text - used, "%s\n", cases[c].value);
        } else {
            for (int f = 1; f <= 65; f++)
                used += (size_t)snprintf(text + used, sizeof text - used, "%s%s",
                                         f == cases[c].field ? cases[c].value
                                         : f == 65           ? "4"
                                                             : "16",
                                         f == 65 ? "\n" : ",");
        }
        used = append_row(text, used, sizeof text, 2);
        const char *path = write_gz("bad.csv.gz", "wb", text, used);
        char expected[1024];
        snprintf(expected, sizeof expected, "tp_digits_load: '%s': %s", path, cases[c].message);
        tp_tensor_t *images = NULL, *labels = NULL;
        print_message("case %zu: %s\n", c, cases[c].message);
        assert_error(tp_digits_load(context, path, &images, &labels), TP_INVALID_ARGUMENT,
                     expected);
        assert_null(images);
        assert_null(labels);
    }
}

/* A gzip file cut short anywhere (in its header, its data, its trailer) is DATA_LOSS; one whose
 * check values do not match its data is too. */
static void refuses_a_truncated_or_damaged_stream(void **state) {
    tp_context_t *context = *state;
    size_t length;
    char *text = rows_text(40, &length);
    const char *path = write_gz("whole.csv.gz", "wb", text, length);
    free(text);
    size_t size;
    unsigned char *bytes = read_bytes(path, &size);
    const size_t cuts[] = {1, 9, 10, 30, size / 2, size - 8, size - 4, size - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        path = write_bytes("cut.csv.gz", bytes, cuts[c]);
        char expected[1024];
        snprintf(expected, sizeof expected, "tp_digits_load: '%s': the gzip stream is cut short "
                 "in line ", path);
        tp_tensor_t *images, *labels;
        print_message("cut at %zu of %zu bytes\n", cuts[c], size);
        assert_error(tp_digits_load(context, path, &images, &labels), TP_DATA_LOSS, expected);
        assert_error(tp_digits_load(context, path, &images, &labels), TP_DATA_LOSS,
                     "the file is truncated");
    }
    /* Cut at its middle, it is cut in a line past the first (40 rows of ~150 bytes deflate to
     * about 1 KiB), and that line is the one named. */
    path = write_bytes("cut.csv.gz", bytes, size / 2);
    tp_tensor_t *images, *labels;
    tp_status_t *status = tp_digits_load(context, path, &images, &labels);
    assert_non_null(status);
    const char *in_line = strstr(tp_status_message(status), "in line ");
    assert_non_null(in_line);
    long line = strtol(in_line + strlen("in line "), NULL, 10);
    assert_true(line > 1 && line <= 40);
    tp_status_free(status);

    /* The trailer's CRC-32, then its length, no longer match what the data inflates to. */
    bytes[size - 8] ^= 0x01;
    path = write_bytes("crc.csv.gz", bytes, size);
    assert_error(tp_digits_load(context, path, &images, &labels), TP_DATA_LOSS,
                 "its gzip data is damaged in line 41 (incorrect data check)");
    bytes[size - 8] ^= 0x01;
    bytes[size - 1] ^= 0x01;
    path = write_bytes("length.csv.gz", bytes, size);
    assert_error(tp_digits_load(context, path, &images, &labels), TP_DATA_LOSS,
                 "(incorrect length check)");
    free(bytes);
}

/* Bytes that are not gzip: text, nothing, or garbage after a whole stream. */
static void refuses_what_is_not_gzip(void **state) {
    tp_context_t *context = *state;
    size_t length;
    char *text = rows_text(2, &length);
    const char *path = write_bytes("plain.csv", text, length);
    char expected[1024];
    snprintf(expected, sizeof expected, "tp_digits_load: '%s': not a gzip file (incorrect header "
             "check)", path);
    tp_tensor_t *images, *labels;
    assert_error(tp_digits_load(context, path, &images, &labels), TP_INVALID_ARGUMENT, expected);

    path = write_bytes("empty.csv.gz", "", 0);
    assert_error(tp_digits_load(context, path, &images, &labels), TP_INVALID_ARGUMENT,
                 "empty.csv.gz': the file is empty, not a gzip file");

    /* A gzip stream of nothing: whole, but no image in it. */
    path = write_gz("nothing.csv.gz", "wb", "", 0);
    assert_error(tp_digits_load(context, path, &images, &labels), TP_INVALID_ARGUMENT,
                 "nothing.csv.gz': the file holds no images");

    path = write_gz("garbage.csv.gz", "wb", text, length);
    size_t size;
    unsigned char *bytes = read_bytes(path, &size);
    unsigned char *longer = malloc(size + 4);
    assert_non_null(longer);
    memcpy(longer, bytes, size);
    memcpy(longer + size, "junk", 4);
    path = write_bytes("garbage.csv.gz", longer, size + 4);
    assert_error(tp_digits_load(context, path, &images, &labels), TP_INVALID_ARGUMENT,
                 "garbage.csv.gz': after its gzip stream, the file holds bytes that are not gzip "
                 "data");
    free(longer);
    free(bytes);
    free(text);
}

static void refuses_a_file_it_cannot_read(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *images, *labels;
    const char *path = path_of("missing.csv.gz");
    char expected[1024];
    snprintf(expected, sizeof expected, "tp_digits_load: '%s': opening it: No such file or "
             "directory", path);
    assert_error(tp_digits_load(context, path, &images, &labels), TP_NOT_FOUND, expected);
    /* A folder opens, then cannot be read. */
    assert_error(tp_digits_load(context, scratch_folder(), &images, &labels), TP_INVALID_ARGUMENT,
                 "reading it: Is a directory");
    /* A name with a control byte is shown escaped. */
    assert_error(tp_digits_load(context, "/nonexistent/a\nb.gz", &images, &labels), TP_NOT_FOUND,
                 "'/nonexistent/a\\x0Ab.gz': opening it");
    assert_error(tp_digits_load(NULL, path, &images, &labels), TP_INVALID_ARGUMENT,
                 "argument 'context' is NULL");
    assert_error(tp_digits_load(context, path, NULL, &labels), TP_INVALID_ARGUMENT,
                 "argument 'out_images' is NULL");
    tp_digits_t digits;
    assert_error(tp_digits_load_split(context, path, &digits), TP_NOT_FOUND,
                 "tp_digits_load_split: '");
    assert_null(digits.train_images);
    assert_null(digits.test_labels);
}

/* 1,797 rows split: rows 0..1436 train, 1437..1796 test; any other count is refused. */
static void splits_at_row_1437(void **state) {
    tp_context_t *context = *state;
    size_t length;
    char *text = rows_text(TP_DIGITS_ROWS, &length);
    const char *path = write_gz("full.csv.gz", "wb", text, length);
    tp_digits_t digits;
    assert_ok(tp_digits_load_split(context, path, &digits));
    assert_rows(digits.train_images, digits.train_labels, 0, TP_DIGITS_TRAIN_ROWS);
    assert_rows(digits.test_images, digits.test_labels, TP_DIGITS_TRAIN_ROWS,
                TP_DIGITS_TEST_ROWS);
    tp_digits_release(&digits);
    assert_null(digits.train_images);
    tp_digits_release(NULL);

    /* One row short: the last line dropped. */
    size_t cut = length - 1;
    while (text[cut - 1] != '\n') cut--;
    path = write_gz("short.csv.gz", "wb", text, cut);
    char expected[1024];
    snprintf(expected, sizeof expected, "tp_digits_load_split: '%s' holds 1796 images; the "
             "split (the first 1437 train, the last 360 test) is made for the 1797 of the UCI "
             "digits", path);
    assert_error(tp_digits_load_split(context, path, &digits), TP_INVALID_ARGUMENT, expected);
    assert_null(digits.train_images);
    assert_null(digits.test_images);
    free(text);
}

/* TP_DIGITS_PATH, when set and not empty, is where the file is; NULL paths read it. */
static void the_default_path_follows_the_environment(void **state) {
    tp_context_t *context = *state;
    assert_int_equal(unsetenv("TP_DIGITS_PATH"), 0);
    assert_string_equal(tp_digits_default_path(), TP_DIGITS_DEFAULT_PATH);
    assert_int_equal(setenv("TP_DIGITS_PATH", "", 1), 0);
    assert_string_equal(tp_digits_default_path(), TP_DIGITS_DEFAULT_PATH);

    size_t length;
    char *text = rows_text(3, &length);
    const char *path = write_gz("env.csv.gz", "wb", text, length);
    free(text);
    assert_int_equal(setenv("TP_DIGITS_PATH", path, 1), 0);
    assert_string_equal(tp_digits_default_path(), path);
    tp_tensor_t *images, *labels;
    assert_ok(tp_digits_load(context, NULL, &images, &labels));
    assert_rows(images, labels, 0, 3);
    tp_tensor_release(images);
    tp_tensor_release(labels);
    assert_int_equal(setenv("TP_DIGITS_PATH", path_of("elsewhere.gz"), 1), 0);
    assert_error(tp_digits_load(context, NULL, &images, &labels), TP_NOT_FOUND,
                 "elsewhere.gz': opening it");
    assert_int_equal(unsetenv("TP_DIGITS_PATH"), 0);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        TEST(reads_pixels_over_sixteen_and_labels),
        TEST(reads_the_forms_numpy_reads),
        TEST(refuses_each_malformed_line),
        TEST(refuses_a_truncated_or_damaged_stream),
        TEST(refuses_what_is_not_gzip),
        TEST(refuses_a_file_it_cannot_read),
        TEST(splits_at_row_1437),
        TEST(the_default_path_follows_the_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
