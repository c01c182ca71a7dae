/* SPDX-License-Identifier: Apache-2.0 */
/* Batches of matrix products (BatchMatMulV2, and tp_matmul on stacks of matrices) on the CPU
 * against a plain triple loop: each adjoint, batch dimensions broadcast as NumPy's, a matrix
 * against a batch, empty batches and empty sums, float32 and float64; and the messages for
 * shapes that do not fit. Values are small integers, so every sum is exact in float32 and the
 * comparison is for equality. */
#include "cpu_fixture.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *what;
    tp_shape_t x, y;
    bool adj_x, adj_y;
    tp_shape_t want; /* the output's shape */
} product_case_t;

/* Element (row, col) of matrix `matrix` of `t` (shape `s`), through the adjoint if asked. */
static double element(const double *t, tp_shape_t s, int64_t matrix, bool adj, int64_t row,
                      int64_t col) {
    int64_t rows = s.dims[s.rank - 2], cols = s.dims[s.rank - 1];
    const double *base = t + matrix * rows * cols;
    return adj ? base[col * cols + row] : base[row * cols + col];
}

/* Which matrix of an operand of shape `s` output product `index` reads: its batch dimensions
 * (all but the last two) broadcast against the output's. */
static int64_t matrix_of(tp_shape_t s, tp_shape_t out, int64_t index) {
    s.rank -= 2;
    out.rank -= 2;
    return broadcast_source_index(s, out, index);
}

static double *reference(const product_case_t *k, const double *x, const double *y) {
    int64_t m = k->want.dims[k->want.rank - 2], n = k->want.dims[k->want.rank - 1];
    int64_t depth = k->x.dims[k->x.rank - (k->adj_x ? 2 : 1)];
    int64_t count = element_count(k->want), products = m * n > 0 ? count / (m * n) : 0;
    double *z = calloc((size_t)(count > 0 ? count : 1), sizeof *z);
    assert_non_null(z);
    for (int64_t p = 0; p < products; p++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0;
                for (int64_t l = 0; l < depth; l++)
                    sum += element(x, k->x, matrix_of(k->x, k->want, p), k->adj_x, i, l) *
                           element(y, k->y, matrix_of(k->y, k->want, p), k->adj_y, l, j);
                z[(p * m + i) * n + j] = sum;
            }
    return z;
}

/* Small integers in [-4, 4], different for each operand. */
static double *draw(tp_shape_t s, int seed) {
    int64_t count = element_count(s);
    double *v = malloc((size_t)(count > 0 ? count : 1) * sizeof *v);
    assert_non_null(v);
    for (int64_t i = 0; i < count; i++) v[i] = (double)((i * 7 + seed * 13 + i / 5) % 9 - 4);
    return v;
}

static void products_match_the_triple_loop(void **state) {
    tp_context_t *c = *state;
    const product_case_t cases[] = {
        {"equal batches", TP_SHAPE(3, 5, 4), TP_SHAPE(3, 4, 2), false, false, TP_SHAPE(3, 5, 2)},
        {"x adjoint", TP_SHAPE(2, 4, 3), TP_SHAPE(2, 4, 5), true, false, TP_SHAPE(2, 3, 5)},
        {"y adjoint", TP_SHAPE(2, 3, 4), TP_SHAPE(2, 5, 4), false, true, TP_SHAPE(2, 3, 5)},
        {"both adjoint", TP_SHAPE(2, 4, 3), TP_SHAPE(2, 5, 4), true, true, TP_SHAPE(2, 3, 5)},
        {"batches broadcast both ways", TP_SHAPE(2, 1, 3, 4), TP_SHAPE(3, 4, 5), false, false,
         TP_SHAPE(2, 3, 3, 5)},
        {"a matrix against a batch", TP_SHAPE(7, 4), TP_SHAPE(2, 4, 3), false, false,
         TP_SHAPE(2, 7, 3)},
        {"a batch against a matrix", TP_SHAPE(2, 3, 4), TP_SHAPE(5, 4), false, true,
         TP_SHAPE(2, 3, 5)},
        {"odd sizes", TP_SHAPE(3, 17, 13), TP_SHAPE(1, 13, 11), false, false,
         TP_SHAPE(3, 17, 11)},
        /* Enough work for the CPU to cut the batch into slices on its threads. */
        {"a batch in slices", TP_SHAPE(64, 47, 29), TP_SHAPE(64, 31, 29), false, true,
         TP_SHAPE(64, 47, 31)},
        {"a matrix repeated over a batch in slices", TP_SHAPE(2, 32, 29, 47), TP_SHAPE(29, 31),
         true, false, TP_SHAPE(2, 32, 47, 31)},
        {"an empty batch", TP_SHAPE(0, 3, 4), TP_SHAPE(0, 4, 2), false, false, TP_SHAPE(0, 3, 2)},
        {"empty sums", TP_SHAPE(2, 3, 0), TP_SHAPE(2, 0, 4), false, false, TP_SHAPE(2, 3, 4)},
    };
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++)
        for (size_t i = 0; i < COUNT_OF(cases); i++) {
            const product_case_t *k = &cases[i];
            double *xv = draw(k->x, 1), *yv = draw(k->y, 2), *want = reference(k, xv, yv);
            tp_tensor_t *x = tensor_of_doubles(c, dtypes[d], k->x, xv);
            tp_tensor_t *y = tensor_of_doubles(c, dtypes[d], k->y, yv), *z = NULL;
            assert_ok(tp_matmul(c, x, y, k->adj_x, k->adj_y, &z));
            assert_tensor_shape(z, k->want);
            size_t count = 0;
            double *got = read_doubles(z, &count);
            assert_int_equal(count, element_count(k->want));
            for (size_t e = 0; e < count; e++)
                if (got[e] != want[e])
                    fail_msg("%s, %s: element %zu is %g, not %g", k->what,
                             tp_dtype_name(dtypes[d]), e, got[e], want[e]);
            free(got);
            free(want);
            free(xv);
            free(yv);
            tp_tensor_release(x);
            tp_tensor_release(y);
            tp_tensor_release(z);
        }
}

/* BatchMatMulV2 named directly on two matrices computes what MatMul does. */
static void the_op_on_two_matrices_is_matmul(void **state) {
    tp_context_t *c = *state;
    double *xv = draw(TP_SHAPE(4, 3), 3), *yv = draw(TP_SHAPE(5, 3), 4);
    tp_tensor_t *inputs[2] = {tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(4, 3), xv),
                              tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(5, 3), yv)};
    tp_attr_t attrs[2] = {TP_ATTR_BOOL_VALUE("adj_x", false), TP_ATTR_BOOL_VALUE("adj_y", true)};
    tp_tensor_t *batched = NULL, *plain = NULL;
    assert_ok(tp_execute(c, "BatchMatMulV2", inputs, 2, attrs, 2, &batched, 1));
    assert_ok(tp_matmul(c, inputs[0], inputs[1], false, true, &plain));
    assert_tensor_shape(batched, TP_SHAPE(4, 5));
    double *a = read_doubles(batched, NULL), *b = read_doubles(plain, NULL);
    assert_memory_equal(a, b, 20 * sizeof *a);
    free(a);
    free(b);
    free(xv);
    free(yv);
    for (int i = 0; i < 2; i++) tp_tensor_release(inputs[i]);
    tp_tensor_release(batched);
    tp_tensor_release(plain);
}

static void shapes_that_do_not_fit_say_why(void **state) {
    tp_context_t *c = *state;
    static const double zeros[64];
    tp_tensor_t *b234 = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(2, 3, 4), zeros);
    tp_tensor_t *b345 = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(3, 4, 5), zeros);
    tp_tensor_t *b256 = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(2, 5, 6), zeros);
    tp_tensor_t *vector = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(4), zeros);
    tp_tensor_t *ints = tensor_of_doubles(c, TP_INT32, TP_SHAPE(2, 4, 5), zeros), *z = NULL;
    assert_op_fails(z, tp_matmul(c, b234, b345, false, false, &z), TP_INVALID_ARGUMENT,
                    "BatchMatMulV2: In[0] and In[1] must have compatible batch dimensions: "
                    "[2,3,4] vs. [3,4,5]");
    assert_op_fails(z, tp_matmul(c, b234, b256, false, false, &z), TP_INVALID_ARGUMENT,
                    "BatchMatMulV2: Matrix size-incompatible: In[0]: [2,3,4], In[1]: [2,5,6]");
    assert_op_fails(z, tp_matmul(c, b234, b256, true, true, &z), TP_INVALID_ARGUMENT,
                    "In[0]: [2,3,4], In[1]: [2,5,6] (with adjoints)");
    assert_op_fails(z, tp_matmul(c, b234, vector, false, false, &z), TP_INVALID_ARGUMENT,
                    "BatchMatMulV2: In[0] and In[1] need at least 2 dimensions each, but are "
                    "[2,3,4] and [4]");
    assert_op_fails(z, tp_matmul(c, b234, ints, false, false, &z), TP_INVALID_ARGUMENT, "int32");
    tp_tensor_release(b234);
    tp_tensor_release(b345);
    tp_tensor_release(b256);
    tp_tensor_release(vector);
    tp_tensor_release(ints);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(products_match_the_triple_loop, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(the_op_on_two_matrices_is_matmul, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(shapes_that_do_not_fit_say_why, cpu_context_setup,
                                        cpu_context_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
