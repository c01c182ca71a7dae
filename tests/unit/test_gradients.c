/* SPDX-License-Identifier: Apache-2.0 */
/* The gradient tape and variables: every op with a gradient checked against central finite
 * differences in float64; variables' values, updates and gradients; the tape's errors, stopping,
 * nesting (second derivatives); and tapes inside a traced function's body. */
#include "cpu_fixture.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensorplug/training.h"

/* ---- Tensors in and out ---------------------------------------------------------------------- */

static tp_tensor_t *make_f64(tp_context_t *c, tp_shape_t shape, const double *values) {
    size_t size = (size_t)element_count(shape) * sizeof(double);
    tp_tensor_t *tensor = NULL;
    assert_ok(tp_tensor_create(c, TP_FLOAT64, shape, values, size, &tensor));
    return tensor;
}

/* F64(c, TP_SHAPE(2, 2), 1, 2, 3, 4): a float64 tensor of those values. */
#define F64(c, shape, ...) make_f64((c), (shape), (const double[]){__VA_ARGS__})

static void read_f64(tp_tensor_t *tensor, double *out, int64_t count) {
    assert_int_equal(tp_tensor_dtype(tensor), TP_FLOAT64);
    assert_int_equal(tp_tensor_num_elements(tensor), count);
    assert_ok(tp_tensor_read(tensor, out, (size_t)count * sizeof *out));
}

static double read_scalar(tp_tensor_t *tensor) {
    double value = 0;
    assert_int_equal(tp_tensor_shape(tensor).rank, 0);
    read_f64(tensor, &value, 1);
    return value;
}

/* A scalar within `tolerance` of `want`. */
#define expect_scalar(tensor, want, tolerance)                                                 \
    do {                                                                                       \
        double expect_got_ = read_scalar(tensor), expect_want_ = (want);                       \
        if (!(fabs(expect_got_ - expect_want_) <= (tolerance)))                                \
            fail_msg("got %.17g, wanted %.17g", expect_got_, expect_want_);                    \
    } while (0)

static bool close_to(double got, double want, double relative, double absolute) {
    return fabs(got - want) <= relative * fmax(fabs(got), fabs(want)) + absolute;
}

/* The tensor has `count` values, each within 1e-12 (relative) of `want`. */
static void expect_values(tp_tensor_t *tensor, const double *want, int64_t count) {
    double *got = malloc((size_t)count * sizeof *got + 1);
    assert_non_null(got);
    read_f64(tensor, got, count);
    for (int64_t i = 0; i < count; i++) {
        if (!close_to(got[i], want[i], 1e-12, 1e-14)) {
            print_error("element %lld: got %.17g, wanted %.17g\n", (long long)i, got[i],
                        want[i]);
            free(got);
            fail();
        }
    }
    free(got);
}

static void expect_all(tp_tensor_t *tensor, double want) {
    int64_t count = tp_tensor_num_elements(tensor);
    double *values = malloc((size_t)count * sizeof *values + 1);
    assert_non_null(values);
    for (int64_t i = 0; i < count; i++) values[i] = want;
    expect_values(tensor, values, count);
    free(values);
}

static void release_all(tp_tensor_t **tensors, size_t count) {
    for (size_t i = 0; i < count; i++) tp_tensor_release(tensors[i]);
}

/* ---- Finite differences ---------------------------------------------------------------------- */

enum { MAX_INPUTS = 3 };

/* The op under test applied to `inputs`: one tensor, of any shape. */
typedef tp_status_t *(*op_under_test_t)(tp_context_t *c, tp_tensor_t *const *inputs,
                                        const void *param, tp_tensor_t **out);

typedef struct gradient_case {
    const char *label;
    op_under_test_t op;
    const void *param;
    size_t num_inputs;
    tp_shape_t shapes[MAX_INPUTS];
} gradient_case_t;

/* A fixed weight for element k of the op's result: varied, of both signs, never 0, so that the
 * gradient is not all ones and a misplaced element shows. */
static double weight(int64_t k) {
    double fraction = fmod(0.6180339887 * (double)(k + 1), 1.0);
    return (k % 3 == 1 ? -1.0 : 1.0) * (0.25 + fraction);
}

/* The value of element k of input i: |v| in [0.2, 1.0], away from ReLU's kink at 0. */
static double input_value(size_t i, int64_t k) {
    uint32_t state = (uint32_t)(i * 7919u + (uint64_t)k * 104729u + 12345u);
    state = state * 1664525u + 1013904223u;
    state ^= state >> 13;
    state = state * 1664525u + 1013904223u;
    double unit = (double)(state >> 8) / (double)(1u << 24);
    return ((state >> 3) & 1 ? -1.0 : 1.0) * (0.2 + 0.8 * unit);
}

/* f(inputs) = sum(op(inputs) * W), a float64 scalar. */
static tp_status_t *objective(tp_context_t *c, const gradient_case_t *test,
                              tp_tensor_t *const *inputs, tp_tensor_t **out) {
    tp_tensor_t *y = NULL, *weights = NULL, *weighted = NULL;
    tp_status_t *error = test->op(c, inputs, test->param, &y);
    if (error != NULL) return error;
    int64_t count = tp_tensor_num_elements(y);
    double *values = malloc((size_t)count * sizeof *values + 1);
    assert_non_null(values);
    for (int64_t k = 0; k < count; k++) values[k] = weight(k);
    error = tp_tensor_create(c, TP_FLOAT64, tp_tensor_shape(y), values,
                             (size_t)count * sizeof *values, &weights);
    free(values);
    if (error == NULL) error = tp_mul(c, y, weights, &weighted);
    if (error == NULL) error = tp_sum(c, weighted, NULL, 0, false, out);
    tp_tensor_release(weighted);
    tp_tensor_release(weights);
    tp_tensor_release(y);
    return error;
}

/* f at the host values `values[i]` of each input, with no tape. */
static double evaluate(tp_context_t *c, const gradient_case_t *test, double *const *values) {
    tp_tensor_t *inputs[MAX_INPUTS] = {NULL}, *f = NULL;
    for (size_t i = 0; i < test->num_inputs; i++)
        inputs[i] = make_f64(c, test->shapes[i], values[i]);
    assert_ok(objective(c, test, inputs, &f));
    double result = read_scalar(f);
    tp_tensor_release(f);
    release_all(inputs, test->num_inputs);
    return result;
}

/* The tape's gradient of f with respect to every input equals (f(x+h) - f(x-h)) / 2h, element
 * by element, to 1e-6 relative and 1e-8 absolute. */
static void check_gradient(tp_context_t *c, const gradient_case_t *test) {
    const double h = 1e-6;
    assert_true(test->num_inputs >= 1 && test->num_inputs <= MAX_INPUTS);
    double *values[MAX_INPUTS] = {NULL}, *analytic[MAX_INPUTS] = {NULL};
    int64_t counts[MAX_INPUTS] = {0};
    tp_tensor_t *inputs[MAX_INPUTS] = {NULL}, *grads[MAX_INPUTS] = {NULL}, *f = NULL;
    for (size_t i = 0; i < test->num_inputs; i++) {
        counts[i] = element_count(test->shapes[i]);
        values[i] = malloc((size_t)counts[i] * sizeof(double) + 1);
        analytic[i] = malloc((size_t)counts[i] * sizeof(double) + 1);
        assert_true(values[i] != NULL && analytic[i] != NULL);
        for (int64_t k = 0; k < counts[i]; k++) values[i][k] = input_value(i, k);
        inputs[i] = make_f64(c, test->shapes[i], values[i]);
    }

    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    for (size_t i = 0; i < test->num_inputs; i++) assert_ok(tp_tape_watch(tape, inputs[i]));
    tp_status_t *error = objective(c, test, inputs, &f);
    if (error == NULL) error = tp_tape_gradient(tape, f, inputs, test->num_inputs, grads);
    tp_tape_destroy(tape);
    tp_tensor_release(f);
    if (error != NULL) print_error("in %s:\n", test->label);
    assert_ok(error);
    for (size_t i = 0; i < test->num_inputs; i++) {
        assert_non_null(grads[i]);
        assert_tensor_shape(grads[i], test->shapes[i]);
        read_f64(grads[i], analytic[i], counts[i]);
    }
    release_all(grads, test->num_inputs);
    release_all(inputs, test->num_inputs);

    bool ok = true;
    for (size_t i = 0; i < test->num_inputs; i++) {
        for (int64_t k = 0; k < counts[i]; k++) {
            double saved = values[i][k];
            values[i][k] = saved + h;
            double plus = evaluate(c, test, values);
            values[i][k] = saved - h;
            double minus = evaluate(c, test, values);
            values[i][k] = saved;
            double numeric = (plus - minus) / (2 * h);
            if (!close_to(analytic[i][k], numeric, 1e-6, 1e-8)) {
                print_error("%s: input %zu element %lld: tape %.12g, finite differences %.12g\n",
                            test->label, i, (long long)k, analytic[i][k], numeric);
                ok = false;
            }
        }
    }
    for (size_t i = 0; i < test->num_inputs; i++) {
        free(values[i]);
        free(analytic[i]);
    }
    if (!ok) fail_msg("%s: the gradient differs from finite differences", test->label);
}

static void check_gradients(tp_context_t *c, const gradient_case_t *tests, size_t count) {
    for (size_t t = 0; t < count; t++) check_gradient(c, &tests[t]);
}

/* ---- The ops under test ---------------------------------------------------------------------- */

typedef tp_status_t *(*unary_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t **);
typedef tp_status_t *(*binary_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t *, tp_tensor_t **);

static tp_status_t *unary(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                          tp_tensor_t **out) {
    return (*(const unary_fn *)param)(c, x[0], out);
}

static tp_status_t *binary(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                           tp_tensor_t **out) {
    return (*(const binary_fn *)param)(c, x[0], x[1], out);
}

/* op(x, x): one tensor on both sides. */
static tp_status_t *binary_same(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                                tp_tensor_t **out) {
    return (*(const binary_fn *)param)(c, x[0], x[0], out);
}

static const unary_fn neg_fn = tp_neg, square_fn = tp_square, identity_fn = tp_identity,
                      relu_fn = tp_relu, sigmoid_fn = tp_sigmoid, tanh_fn = tp_tanh;
static const binary_fn add_fn = tp_add, sub_fn = tp_sub, mul_fn = tp_mul, div_fn = tp_div,
                       bias_add_fn = tp_bias_add;

typedef struct {
    bool transpose_a, transpose_b;
} transposes_t;

static tp_status_t *matmul(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                           tp_tensor_t **out) {
    const transposes_t *t = param;
    return tp_matmul(c, x[0], x[1], t->transpose_a, t->transpose_b, out);
}

static tp_status_t *add_n(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                          tp_tensor_t **out) {
    (void)param;
    return tp_add_n(c, x, 3, out);
}

/* add_n(x, y, x): x's gradient is counted twice. */
static tp_status_t *add_n_repeated(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                                   tp_tensor_t **out) {
    (void)param;
    tp_tensor_t *terms[3] = {x[0], x[1], x[0]};
    return tp_add_n(c, terms, 3, out);
}

typedef struct {
    bool mean;
    size_t num_axes;
    int64_t axes[TP_MAX_RANK];
    bool keep_dims;
} reduction_t;

static tp_status_t *reduce(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                           tp_tensor_t **out) {
    const reduction_t *r = param;
    const int64_t *axes = r->num_axes > 0 ? r->axes : NULL;
    return r->mean ? tp_mean(c, x[0], axes, r->num_axes, r->keep_dims, out)
                   : tp_sum(c, x[0], axes, r->num_axes, r->keep_dims, out);
}

/* The scalar x[0] repeated over (3, 4). */
static tp_status_t *fill(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                         tp_tensor_t **out) {
    (void)param;
    return tp_fill(c, TP_SHAPE(3, 4), x[0], out);
}

static tp_status_t *reshape(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                            tp_tensor_t **out) {
    return tp_reshape(c, x[0], *(const tp_shape_t *)param, out);
}

typedef struct {
    size_t rank; /* 0: the default permutation, reversing the dimensions */
    int64_t perm[TP_MAX_RANK];
} permutation_t;

static tp_status_t *transpose(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                              tp_tensor_t **out) {
    const permutation_t *p = param;
    return tp_transpose(c, x[0], p->rank > 0 ? p->perm : NULL, p->rank, out);
}

/* tanh(x @ w + b) - x @ w: several ops chained, one intermediate read twice. */
static tp_status_t *dense_tanh(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                               tp_tensor_t **out) {
    (void)param;
    tp_tensor_t *product = NULL, *shifted = NULL, *activated = NULL;
    tp_status_t *error = tp_matmul(c, x[0], x[1], false, false, &product);
    if (error == NULL) error = tp_bias_add(c, product, x[2], &shifted);
    if (error == NULL) error = tp_tanh(c, shifted, &activated);
    if (error == NULL) error = tp_sub(c, activated, product, out);
    tp_tensor_release(product);
    tp_tensor_release(shifted);
    tp_tensor_release(activated);
    return error;
}

/* mean(square(x @ w + b)), b broadcast over the rows: the loss of the traced-function tests. */
static tp_status_t *squared_loss(tp_context_t *c, tp_tensor_t *const *x, tp_tensor_t **out) {
    tp_tensor_t *product = NULL, *shifted = NULL, *squared = NULL;
    tp_status_t *error = tp_matmul(c, x[0], x[1], false, false, &product);
    if (error == NULL) error = tp_add(c, product, x[2], &shifted);
    if (error == NULL) error = tp_square(c, shifted, &squared);
    if (error == NULL) error = tp_mean(c, squared, NULL, 0, false, out);
    tp_tensor_release(product);
    tp_tensor_release(shifted);
    tp_tensor_release(squared);
    return error;
}

static tp_status_t *squared_loss_op(tp_context_t *c, tp_tensor_t *const *x, const void *param,
                                    tp_tensor_t **out) {
    (void)param;
    return squared_loss(c, x, out);
}

/* ---- Every op's gradient against finite differences ------------------------------------------ */

static void matmul_gradients_for_every_transpose_combination(void **state) {
    static const transposes_t plain = {false, false}, ta = {true, false}, tb = {false, true},
                              both = {true, true};
    const gradient_case_t tests[] = {
        {"MatMul", matmul, &plain, 2, {TP_SHAPE(3, 4), TP_SHAPE(4, 5)}},
        {"MatMul transpose_a", matmul, &ta, 2, {TP_SHAPE(4, 3), TP_SHAPE(4, 5)}},
        {"MatMul transpose_b", matmul, &tb, 2, {TP_SHAPE(3, 4), TP_SHAPE(5, 4)}},
        {"MatMul both transposed", matmul, &both, 2, {TP_SHAPE(4, 3), TP_SHAPE(5, 4)}},
        /* Square operands: a wrong transpose in a gradient keeps the shape but not the values. */
        {"MatMul square", matmul, &plain, 2, {TP_SHAPE(3, 3), TP_SHAPE(3, 3)}},
        {"MatMul square transpose_a", matmul, &ta, 2, {TP_SHAPE(3, 3), TP_SHAPE(3, 3)}},
        {"MatMul square transpose_b", matmul, &tb, 2, {TP_SHAPE(3, 3), TP_SHAPE(3, 3)}},
        {"MatMul square both", matmul, &both, 2, {TP_SHAPE(3, 3), TP_SHAPE(3, 3)}},
    };
    check_gradients(*state, tests, COUNT_OF(tests));
}

static void bias_add_gradients_of_the_value_and_the_bias(void **state) {
    const gradient_case_t tests[] = {
        {"BiasAdd rank 2", binary, &bias_add_fn, 2, {TP_SHAPE(3, 4), TP_SHAPE(4)}},
        {"BiasAdd rank 3", binary, &bias_add_fn, 2, {TP_SHAPE(2, 3, 4), TP_SHAPE(4)}},
    };
    check_gradients(*state, tests, COUNT_OF(tests));
}

static void add_sub_mul_div_gradients_with_broadcasting(void **state) {
    static const binary_fn *const fns[4] = {&add_fn, &sub_fn, &mul_fn, &div_fn};
    static const char *const names[4] = {"Add", "Sub", "Mul", "Div"};
    static const tp_shape_t pairs[][2] = {
        {TP_SHAPE(3, 4), TP_SHAPE(3, 4)}, {TP_SHAPE(3, 4), TP_SHAPE(4)},
        {TP_SHAPE(3, 4), TP_SHAPE(3, 1)}, {TP_SHAPE(3, 4), TP_SCALAR_SHAPE},
        {TP_SHAPE(4), TP_SHAPE(3, 4)},    {TP_SCALAR_SHAPE, TP_SHAPE(3, 4)},
        {TP_SHAPE(3, 1), TP_SHAPE(1, 4)}, {TP_SHAPE(2, 1, 4), TP_SHAPE(3, 1)},
    };
    char label[96];
    for (size_t f = 0; f < 4; f++) {
        for (size_t p = 0; p < COUNT_OF(pairs); p++) {
            char a[32], b[32];
            tp_shape_format(&pairs[p][0], a, sizeof a);
            tp_shape_format(&pairs[p][1], b, sizeof b);
            snprintf(label, sizeof label, "%s %s %s", names[f], a, b);
            gradient_case_t test = {label, binary, fns[f], 2, {pairs[p][0], pairs[p][1]}};
            check_gradient(*state, &test);
        }
        gradient_case_t same = {names[f], binary_same, fns[f], 1, {TP_SHAPE(3, 4)}};
        check_gradient(*state, &same);
    }
}

static void unary_gradients(void **state) {
    const gradient_case_t tests[] = {
        {"Neg", unary, &neg_fn, 1, {TP_SHAPE(3, 4)}},
        {"Square", unary, &square_fn, 1, {TP_SHAPE(3, 4)}},
        {"Identity", unary, &identity_fn, 1, {TP_SHAPE(3, 4)}},
        {"Relu", unary, &relu_fn, 1, {TP_SHAPE(3, 4)}},
        {"Sigmoid", unary, &sigmoid_fn, 1, {TP_SHAPE(3, 4)}},
        {"Tanh", unary, &tanh_fn, 1, {TP_SHAPE(3, 4)}},
        {"Square of a scalar", unary, &square_fn, 1, {TP_SCALAR_SHAPE}},
        {"Fill", fill, NULL, 1, {TP_SCALAR_SHAPE}},
    };
    check_gradients(*state, tests, COUNT_OF(tests));
}

static void relu_passes_gradient_only_where_its_input_is_positive(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(4), -2.0, -0.5, 0.5, 3.0), *y = NULL, *f = NULL, *g = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_relu(c, x, &y));
    assert_ok(tp_sum(c, y, NULL, 0, false, &f));
    assert_ok(tp_tape_gradient(tape, f, &x, 1, &g));
    expect_values(g, (const double[]){0, 0, 1, 1}, 4);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, y, f, g};
    release_all(all, COUNT_OF(all));
}

static void add_n_gradients(void **state) {
    const gradient_case_t tests[] = {
        {"AddN", add_n, NULL, 3, {TP_SHAPE(2, 3), TP_SHAPE(2, 3), TP_SHAPE(2, 3)}},
        {"AddN with an input twice", add_n_repeated, NULL, 2, {TP_SHAPE(2, 3), TP_SHAPE(2, 3)}},
    };
    check_gradients(*state, tests, COUNT_OF(tests));
}

static void sum_and_mean_gradients_over_any_axes(void **state) {
    static const reduction_t reductions[] = {
        {false, 0, {0}, false},    {false, 1, {1}, false},    {false, 1, {-1}, false},
        {false, 2, {0, 2}, false}, {false, 1, {1}, true},     {false, 0, {0}, true},
        {false, 3, {0, 1, 2}, false}, {false, 2, {-3, 1}, true},
    };
    char label[96];
    for (int m = 0; m < 2; m++) {
        for (size_t r = 0; r < COUNT_OF(reductions); r++) {
            reduction_t reduction = reductions[r];
            reduction.mean = m == 1;
            snprintf(label, sizeof label, "%s over %zu axes (first %lld)%s",
                     m == 1 ? "Mean" : "Sum", reduction.num_axes, (long long)reduction.axes[0],
                     reduction.keep_dims ? " keep_dims" : "");
            gradient_case_t test = {label, reduce, &reduction, 1, {TP_SHAPE(2, 3, 4)}};
            check_gradient(*state, &test);
        }
    }
}

static void reshape_and_transpose_gradients(void **state) {
    static const tp_shape_t to_rows = TP_SHAPE(4, -1), to_vector = TP_SHAPE(24),
                            to_scalar = TP_SCALAR_SHAPE;
    static const permutation_t rotate = {3, {2, 0, 1}}, swap = {3, {0, 2, 1}},
                               reverse = {0, {0}}, matrix_default = {0, {0}};
    const gradient_case_t tests[] = {
        {"Reshape to (4, -1)", reshape, &to_rows, 1, {TP_SHAPE(2, 3, 4)}},
        {"Reshape to (24,)", reshape, &to_vector, 1, {TP_SHAPE(2, 3, 4)}},
        {"Reshape to ()", reshape, &to_scalar, 1, {TP_SHAPE(1, 1)}},
        /* (2, 0, 1) is not its own inverse: a gradient transposing by perm again fails. */
        {"Transpose (2, 0, 1)", transpose, &rotate, 1, {TP_SHAPE(2, 3, 4)}},
        {"Transpose (0, 2, 1)", transpose, &swap, 1, {TP_SHAPE(2, 3, 4)}},
        {"Transpose default rank 3", transpose, &reverse, 1, {TP_SHAPE(2, 3, 4)}},
        {"Transpose default rank 2", transpose, &matrix_default, 1, {TP_SHAPE(3, 5)}},
    };
    check_gradients(*state, tests, COUNT_OF(tests));
}

static void chained_ops_gradients(void **state) {
    const gradient_case_t tests[] = {
        {"tanh(x @ w + b) - x @ w", dense_tanh, NULL, 3,
         {TP_SHAPE(4, 3), TP_SHAPE(3, 2), TP_SHAPE(2)}},
        {"mean(square(x @ w + b))", squared_loss_op, NULL, 3,
         {TP_SHAPE(4, 3), TP_SHAPE(3, 2), TP_SHAPE(2)}},
    };
    check_gradients(*state, tests, COUNT_OF(tests));
}

/* ---- Gradients by hand: ties, kinks, casts and second derivatives ---------------------------- */

/* The gradient of `target` with respect to the one source `x` on `tape`. */
static tp_tensor_t *gradient_of(tp_tape_t *tape, tp_tensor_t *target, tp_tensor_t *x) {
    tp_tensor_t *grad = NULL;
    assert_ok(tp_tape_gradient(tape, target, &x, 1, &grad));
    assert_non_null(grad);
    return grad;
}

/* Max and Min share a result's gradient evenly among the elements that tie for it, as
 * TensorFlow does. */
static void max_and_min_split_the_gradient_among_ties(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(2, 3), 1, 3, 3, 2, 2, 2);
    tp_tensor_t *u = F64(c, TP_SHAPE(2, 3), 2, 1, 1, 1, 5, 4);
    tp_tensor_t *w = F64(c, TP_SHAPE(2), 1, 3);
    tp_tensor_t *max = NULL, *weighted = NULL, *f = NULL, *min = NULL, *g = NULL;
    const int64_t one = 1;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_tape_watch(tape, u));
    assert_ok(tp_max(c, x, &one, 1, false, &max));
    assert_ok(tp_mul(c, max, w, &weighted));
    assert_ok(tp_sum(c, weighted, NULL, 0, false, &f));
    assert_ok(tp_min(c, u, NULL, 0, true, &min));
    assert_ok(tp_sum(c, min, NULL, 0, false, &g));
    tp_tensor_t *df = gradient_of(tape, f, x), *dg = gradient_of(tape, g, u);
    /* Row 0's maximum 3 twice: 1/2 each; row 1's 2 three times, weighted by 3: 1 each. */
    expect_values(df, (const double[]){0, 0.5, 0.5, 1, 1, 1}, 6);
    expect_values(dg, (const double[]){0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0}, 6);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, u, w, max, weighted, f, min, g, df, dg};
    release_all(all, COUNT_OF(all));
}

/* |x| and sign(x) at their kink: TensorFlow's subgradient 0, and sign's gradient is zeros. */
static void abs_and_sign_at_zero(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(3), -2, 0, 3);
    tp_tensor_t *absolute = NULL, *sign = NULL, *f = NULL, *g = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_abs(c, x, &absolute));
    assert_ok(tp_sum(c, absolute, NULL, 0, false, &f));
    assert_ok(tp_sign(c, x, &sign));
    assert_ok(tp_sum(c, sign, NULL, 0, false, &g));
    tp_tensor_t *df = gradient_of(tape, f, x), *dg = gradient_of(tape, g, x);
    expect_values(df, (const double[]){-1, 0, 1}, 3);
    expect_values(dg, (const double[]){0, 0, 0}, 3);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, absolute, sign, f, g, df, dg};
    release_all(all, COUNT_OF(all));
}

/* Between floats the gradient is cast back to the source's dtype; through an integer nothing
 * flows (tp_tape_gradient gives zeros for it). */
static void cast_gradients_between_floats_and_through_integers(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(2), 1.5, -2);
    tp_tensor_t *narrow = NULL, *f = NULL, *integer = NULL, *back = NULL, *squared = NULL,
                *g = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_cast(c, x, TP_FLOAT32, &narrow));
    assert_ok(tp_sum(c, narrow, NULL, 0, false, &f));
    assert_ok(tp_cast(c, x, TP_INT32, &integer));
    assert_ok(tp_cast(c, integer, TP_FLOAT64, &back));
    assert_ok(tp_square(c, back, &squared));
    assert_ok(tp_sum(c, squared, NULL, 0, false, &g));
    tp_tensor_t *df = gradient_of(tape, f, x), *dg = gradient_of(tape, g, x);
    expect_values(df, (const double[]){1, 1}, 2); /* float64, the source's dtype */
    expect_values(dg, (const double[]){0, 0}, 2);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, narrow, f, integer, back, squared, g, df, dg};
    release_all(all, COUNT_OF(all));
}

/* d/dx at x = 4 of exp, log, sqrt and rsqrt: e^4, 1/4, 1/4 and -1/16; Rsqrt's in float32 too,
 * whose constant -1/2 is cast from float64. */
static void math_function_gradients_by_hand(void **state) {
    tp_context_t *c = *state;
    const unary_fn fns[] = {tp_exp, tp_log, tp_sqrt, tp_rsqrt};
    const double want[] = {exp(4.0), 0.25, 0.25, -0.0625};
    for (size_t i = 0; i < COUNT_OF(fns); i++) {
        tp_tensor_t *x = F64(c, TP_SCALAR_SHAPE, 4), *y = NULL;
        tp_tape_t *tape = NULL;
        assert_ok(tp_tape_begin(c, &tape));
        assert_ok(tp_tape_watch(tape, x));
        assert_ok(fns[i](c, x, &y));
        tp_tensor_t *grad = gradient_of(tape, y, x);
        expect_scalar(grad, want[i], 1e-12 * fabs(want[i]));
        tp_tape_destroy(tape);
        tp_tensor_t *all[] = {x, y, grad};
        release_all(all, COUNT_OF(all));
    }
    float four = 4, got = 0;
    tp_tensor_t *x = floats(c, TP_SCALAR_SHAPE, &four), *y = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_rsqrt(c, x, &y));
    tp_tensor_t *grad = gradient_of(tape, y, x);
    assert_int_equal(tp_tensor_dtype(grad), TP_FLOAT32);
    assert_ok(tp_tensor_read(grad, &got, sizeof got));
    assert_true(got == -0.0625f);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, y, grad};
    release_all(all, COUNT_OF(all));
}

/* The activations' gradients have gradients: nested tapes give sigmoid'' = s (1 - s)(1 - 2s),
 * tanh'' = -2 t (1 - t^2), and relu'' = 0 away from 0. */
static void activations_have_second_derivatives(void **state) {
    tp_context_t *c = *state;
    const unary_fn fns[] = {tp_sigmoid, tp_tanh, tp_relu};
    const double xs[3] = {-1, 0.5, 2};
    for (size_t i = 0; i < COUNT_OF(fns); i++) {
        tp_tensor_t *x = F64(c, TP_SHAPE(3), xs[0], xs[1], xs[2]);
        tp_tensor_t *y = NULL, *f = NULL, *first = NULL, *g = NULL, *second = NULL;
        tp_tape_t *outer = NULL, *inner = NULL;
        assert_ok(tp_tape_begin(c, &outer));
        assert_ok(tp_tape_watch(outer, x));
        assert_ok(tp_tape_begin(c, &inner));
        assert_ok(tp_tape_watch(inner, x));
        assert_ok(fns[i](c, x, &y));
        assert_ok(tp_sum(c, y, NULL, 0, false, &f));
        first = gradient_of(inner, f, x);
        tp_tape_destroy(inner);
        assert_ok(tp_sum(c, first, NULL, 0, false, &g));
        second = gradient_of(outer, g, x);
        tp_tape_destroy(outer);
        double want[3];
        for (int k = 0; k < 3; k++) {
            double s = 1 / (1 + exp(-xs[k])), t = tanh(xs[k]);
            want[k] = i == 0 ? s * (1 - s) * (1 - 2 * s) : i == 1 ? -2 * t * (1 - t * t) : 0;
        }
        expect_values(second, want, 3);
        tp_tensor_t *all[] = {x, y, f, first, g, second};
        release_all(all, COUNT_OF(all));
    }
}

/* ---- Variables ------------------------------------------------------------------------------- */

static tp_variable_t *make_variable(tp_context_t *c, const char *name, tp_tensor_t *initial) {
    tp_variable_t *variable = NULL;
    assert_ok(tp_variable_create(c, name, initial, NULL, &variable));
    return variable;
}

static void expect_variable(tp_variable_t *variable, const double *want, int64_t count) {
    tp_tensor_t *value = NULL;
    assert_ok(tp_variable_read(variable, &value));
    expect_values(value, want, count);
    tp_tensor_release(value);
}

static void variables_read_assign_and_assign_sub(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *initial = F64(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tp_variable_t *w = make_variable(c, "w", initial);
    tp_tensor_release(initial); /* the variable holds its own reference */
    assert_string_equal(tp_variable_name(w), "w");
    assert_string_equal(tp_variable_device(w), "/job:localhost/replica:0/task:0/device:CPU:0");
    assert_int_equal(tp_variable_dtype(w), TP_FLOAT64);
    assert_true(same_shape(tp_variable_shape(w), TP_SHAPE(2, 3)));

    tp_tensor_t *first = NULL, *second = NULL;
    assert_ok(tp_variable_read(w, &first));
    assert_ok(tp_variable_read(w, &second));
    assert_ptr_equal(first, second); /* tensors are immutable: one value, one tensor */
    expect_values(first, (const double[]){1, 2, 3, 4, 5, 6}, 6);

    tp_tensor_t *next = F64(c, TP_SHAPE(2, 3), 10, 20, 30, 40, 50, 60);
    assert_ok(tp_variable_assign(w, next));
    tp_tensor_release(next);
    expect_variable(w, (const double[]){10, 20, 30, 40, 50, 60}, 6);
    expect_values(first, (const double[]){1, 2, 3, 4, 5, 6}, 6); /* the old value stays */

    tp_tensor_t *delta = F64(c, TP_SHAPE(2, 3), 1, 1, 2, 2, 3, 3);
    assert_ok(tp_variable_assign_sub(w, delta));
    expect_variable(w, (const double[]){9, 19, 28, 38, 47, 57}, 6);
    tp_tensor_t *row = F64(c, TP_SHAPE(3), 0.5, 1, 1.5), *scalar = F64(c, TP_SCALAR_SHAPE, 7);
    assert_ok(tp_variable_assign_sub(w, row)); /* the delta broadcasts */
    expect_variable(w, (const double[]){8.5, 18, 26.5, 37.5, 46, 55.5}, 6);
    assert_ok(tp_variable_assign_sub(w, scalar));
    expect_variable(w, (const double[]){1.5, 11, 19.5, 30.5, 39, 48.5}, 6);

    /* A variable made on CPU:0 by name holds a copy. */
    tp_variable_t *copy = NULL;
    assert_ok(tp_variable_create(c, "copy", first, "/cpu:0", &copy));
    expect_variable(copy, (const double[]){1, 2, 3, 4, 5, 6}, 6);

    tp_tensor_t *all[] = {first, second, delta, row, scalar};
    release_all(all, COUNT_OF(all));
    tp_variable_destroy(copy);
    tp_variable_destroy(w);
    tp_variable_destroy(NULL);
}

static void variable_updates_refuse_wrong_shapes_and_dtypes(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *initial = F64(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tp_variable_t *w = make_variable(c, "weights", initial);
    tp_tensor_t *transposed = F64(c, TP_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    assert_error(tp_variable_assign(w, transposed), TP_INVALID_ARGUMENT,
                 "tp_variable_assign: 'weights' has shape (2, 3), the value (3, 2)");
    const float singles[6] = {1, 2, 3, 4, 5, 6};
    tp_tensor_t *single = NULL;
    assert_ok(tp_tensor_create(c, TP_FLOAT32, TP_SHAPE(2, 3), singles, sizeof singles, &single));
    assert_error(tp_variable_assign(w, single), TP_INVALID_ARGUMENT,
                 "'weights' holds float64, the value is float32");
    assert_error(tp_variable_assign_sub(w, single), TP_INVALID_ARGUMENT,
                 "'weights' holds float64, the value is float32");
    tp_tensor_t *stacked = F64(c, TP_SHAPE(2, 1, 3), 1, 1, 1, 1, 1, 1);
    assert_error(tp_variable_assign_sub(w, stacked), TP_INVALID_ARGUMENT,
                 "'weights' has shape (2, 3); a delta of shape (2, 1, 3) would change it");
    tp_tensor_t *wrong = F64(c, TP_SHAPE(2), 1, 1);
    tp_status_t *status = tp_variable_assign_sub(w, wrong);
    assert_non_null(status);
    assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
    tp_status_free(status);
    /* Nothing of that changed the value. */
    expect_variable(w, (const double[]){1, 2, 3, 4, 5, 6}, 6);
    tp_tensor_t *all[] = {initial, transposed, single, stacked, wrong};
    release_all(all, COUNT_OF(all));
    tp_variable_destroy(w);
}

static void a_variable_read_twice_gets_its_gradient_once(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *initial = F64(c, TP_SHAPE(2, 2), 1.5, -2, 0.25, 3);
    tp_tensor_t *other_initial = F64(c, TP_SHAPE(3), 1, 2, 3);
    tp_variable_t *w = make_variable(c, "w", initial), *unused = make_variable(c, "u",
                                                                               other_initial);
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    tp_tensor_t *first = NULL, *second = NULL, *product = NULL, *loss = NULL;
    assert_ok(tp_variable_read(w, &first));
    assert_ok(tp_variable_read(w, &second));
    assert_ptr_equal(first, second);
    assert_ok(tp_mul(c, first, second, &product));
    assert_ok(tp_sum(c, product, NULL, 0, false, &loss));
    assert_ok(tp_tape_stop(tape));
    expect_scalar(loss, 2.25 + 4 + 0.0625 + 9, 1e-12);

    tp_variable_t *variables[2] = {w, unused};
    tp_tensor_t *grads[2] = {NULL, NULL};
    assert_ok(tp_tape_gradient_variables(tape, loss, variables, 2, grads));
    assert_tensor_shape(grads[0], TP_SHAPE(2, 2));
    expect_values(grads[0], (const double[]){3, -4, 0.5, 6}, 4); /* d sum(w*w) / dw = 2w */
    assert_tensor_shape(grads[1], TP_SHAPE(3));
    expect_all(grads[1], 0);
    /* The read value as a source gives the same. */
    tp_tensor_t *by_tensor = NULL;
    assert_ok(tp_tape_gradient(tape, loss, &first, 1, &by_tensor));
    expect_values(by_tensor, (const double[]){3, -4, 0.5, 6}, 4);
    /* Asking again gives the same again. */
    tp_tensor_t *again[2] = {NULL, NULL};
    assert_ok(tp_tape_gradient_variables(tape, loss, variables, 2, again));
    expect_values(again[0], (const double[]){3, -4, 0.5, 6}, 4);
    tp_tape_destroy(tape);

    tp_tensor_t *all[] = {initial, other_initial, first, second, product, loss, grads[0],
                          grads[1], by_tensor, again[0], again[1]};
    release_all(all, COUNT_OF(all));
    tp_variable_destroy(unused);
    tp_variable_destroy(w);
}

/* Values read before and after an assignment are distinct: the gradient sums over both. */
static void a_variable_gradient_sums_over_every_value_read(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *initial = F64(c, TP_SHAPE(3), 1, 2, 3), *next = F64(c, TP_SHAPE(3), 4, 5, 6);
    tp_tensor_t *scale = F64(c, TP_SHAPE(3), 2, -1, 0.5);
    tp_variable_t *w = make_variable(c, "w", initial);
    tp_tensor_t *before_tape = NULL;
    assert_ok(tp_variable_read(w, &before_tape)); /* no tape records yet: not watched */

    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    tp_tensor_t *old_value = NULL, *new_value = NULL, *square = NULL, *scaled = NULL,
                *total = NULL, *loss = NULL, *ignored_sum = NULL;
    assert_ok(tp_variable_read(w, &old_value));
    assert_ptr_equal(old_value, before_tape);
    assert_ok(tp_variable_assign(w, next));
    assert_ok(tp_variable_read(w, &new_value));
    assert_ok(tp_square(c, old_value, &square));       /* d/dw = 2 * old */
    assert_ok(tp_mul(c, new_value, scale, &scaled));    /* d/dw = scale */
    assert_ok(tp_add(c, square, scaled, &total));
    assert_ok(tp_sum(c, total, NULL, 0, false, &loss));
    assert_ok(tp_sum(c, before_tape, NULL, 0, false, &ignored_sum));
    tp_tensor_t *grad = NULL;
    assert_ok(tp_tape_gradient_variables(tape, loss, &w, 1, &grad));
    expect_values(grad, (const double[]){2 + 2, 4 - 1, 6 + 0.5}, 3);
    tp_tape_destroy(tape);

    tp_tensor_t *all[] = {initial, next, scale, before_tape, old_value, new_value, square,
                          scaled, total, loss, ignored_sum, grad};
    release_all(all, COUNT_OF(all));
    tp_variable_destroy(w);
}

/* ---- Tape behaviour -------------------------------------------------------------------------- */

static void a_source_the_target_does_not_reach_gets_zeros(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(2), 3, -1), *y = F64(c, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_t *unwatched = F64(c, TP_SHAPE(3), 1, 1, 1);
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_tape_watch(tape, y));
    tp_tensor_t *square = NULL, *loss = NULL, *y_neg = NULL;
    assert_ok(tp_neg(c, y, &y_neg)); /* recorded, but the target does not use it */
    assert_ok(tp_mul(c, x, x, &square));
    assert_ok(tp_sum(c, square, NULL, 0, false, &loss));
    tp_tensor_t *sources[3] = {x, y, unwatched}, *grads[3] = {NULL, NULL, NULL};
    assert_ok(tp_tape_gradient(tape, loss, sources, 3, grads));
    expect_values(grads[0], (const double[]){6, -2}, 2);
    assert_tensor_shape(grads[1], TP_SHAPE(2, 2));
    expect_all(grads[1], 0);
    assert_tensor_shape(grads[2], TP_SHAPE(3));
    expect_all(grads[2], 0);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, y, unwatched, square, loss, y_neg, grads[0], grads[1], grads[2]};
    release_all(all, COUNT_OF(all));
}

static void the_target_must_be_a_floating_point_scalar(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(2), 3, -1), *square = NULL, *grad = NULL;
    const int32_t count = 4;
    tp_tensor_t *integer = NULL;
    assert_ok(tp_tensor_create(c, TP_INT32, TP_SCALAR_SHAPE, &count, sizeof count, &integer));
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_tape_watch(tape, integer));
    assert_ok(tp_square(c, x, &square));
    assert_error(tp_tape_gradient(tape, square, &x, 1, &grad), TP_INVALID_ARGUMENT,
                 "the target has shape (2,); it must be a scalar");
    assert_null(grad);
    assert_error(tp_tape_gradient(tape, integer, &x, 1, &grad), TP_INVALID_ARGUMENT,
                 "the target is int32; gradients need float32 or float64");
    assert_null(grad);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, square, integer};
    release_all(all, COUNT_OF(all));
}

/* Every built-in op that is differentiable has a gradient (the gradient check walks them), so
 * the op without one is a plug-in's: many_ops' Op0 (float32; its kernel writes nothing, which
 * does not matter to the tape). */
static void an_op_without_a_gradient_on_the_path_is_named(void **state) {
    (void)state;
    assert_int_equal(setenv("TP_MANY_OPS", "1", 1), 0);
    assert_int_equal(setenv("TP_MANY_KERNELS_PER_OP", "1", 1), 0);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_EXTRA_PLUGIN_DIR "/many_ops.so";
    options.skip_installed_plugins = true;
    tp_context_t *c = NULL;
    assert_ok(tp_context_create(&options, &c));
    tp_tensor_t *x = floats(c, TP_SHAPE(2, 2), (const float[]){0.5f, -1, 2, 0.25f});
    tp_tensor_t *opaque = NULL, *opaque_sum = NULL, *square = NULL, *square_sum = NULL,
                *grad = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_execute(c, "Op0", &x, 1, NULL, 0, &opaque, 1));
    assert_ok(tp_sum(c, opaque, NULL, 0, false, &opaque_sum));
    assert_ok(tp_square(c, x, &square));
    assert_ok(tp_sum(c, square, NULL, 0, false, &square_sum));
    tp_status_t *status = tp_tape_gradient(tape, opaque_sum, &x, 1, &grad);
    bool named = status != NULL && tp_status_code(status) == TP_UNIMPLEMENTED &&
                 strstr(tp_status_message(status), "op 'Op0' has no gradient") != NULL;
    if (!named) print_error("got '%s'\n", status != NULL ? tp_status_message(status) : "ok");
    tp_status_free(status);
    assert_null(grad);
    /* Ops without a gradient off the target's path do not matter. */
    status = tp_tape_gradient(tape, square_sum, &x, 1, &grad);
    float values[4] = {0};
    if (status == NULL) status = tp_tensor_read(grad, values, sizeof values);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, opaque, opaque_sum, square, square_sum, grad};
    release_all(all, COUNT_OF(all));
    uint64_t in_use = tensor_bytes_in_use(c);
    tp_context_destroy(c);
    assert_true(named);
    assert_ok(status);
    assert_true(values[0] == 1 && values[1] == -2 && values[2] == 4 && values[3] == 0.5f);
    assert_int_equal(in_use, 0);
}

static void ops_after_stop_are_not_recorded(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(3), 1, -2, 0.5);
    tp_tensor_t *square = NULL, *recorded = NULL, *unrecorded = NULL, *cube = NULL,
                *cube_sum = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_mul(c, x, x, &square));
    assert_ok(tp_sum(c, square, NULL, 0, false, &recorded));
    assert_ok(tp_tape_stop(tape));
    assert_error(tp_tape_stop(tape), TP_FAILED_PRECONDITION, "stopped already");
    assert_ok(tp_sum(c, square, NULL, 0, false, &unrecorded));
    assert_ok(tp_mul(c, square, x, &cube));
    assert_ok(tp_sum(c, cube, NULL, 0, false, &cube_sum));

    tp_tensor_t *grads[3] = {NULL, NULL, NULL};
    assert_ok(tp_tape_gradient(tape, recorded, &x, 1, &grads[0]));
    expect_values(grads[0], (const double[]){2, -4, 1}, 3);
    assert_ok(tp_tape_gradient(tape, unrecorded, &x, 1, &grads[1]));
    expect_all(grads[1], 0);
    assert_ok(tp_tape_gradient(tape, cube_sum, &x, 1, &grads[2]));
    expect_all(grads[2], 0);
    /* An intermediate the tape made is a source as well as a watched tensor. */
    tp_tensor_t *by_intermediate = NULL;
    assert_ok(tp_tape_gradient(tape, recorded, &square, 1, &by_intermediate));
    assert_tensor_shape(by_intermediate, TP_SHAPE(3));
    expect_all(by_intermediate, 1);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, square, recorded, unrecorded, cube, cube_sum,
                          grads[0], grads[1], grads[2], by_intermediate};
    release_all(all, COUNT_OF(all));
}

/* A paused tape records nothing until resumed, variable reads included. */
static void ops_while_paused_are_not_recorded(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(2), 1, -2), *a = NULL, *b = NULL, *ab = NULL, *v0 = NULL;
    tp_tensor_t *sum = NULL;
    tp_variable_t *variable = NULL;
    assert_ok(tp_variable_create(c, "w", x, NULL, &variable));
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_mul(c, x, x, &a)); /* recorded: 2x */
    assert_ok(tp_tape_pause(tape, true));
    assert_ok(tp_mul(c, x, x, &b)); /* not recorded */
    assert_ok(tp_variable_read(variable, &v0)); /* not watched */
    assert_ok(tp_tape_pause(tape, false));
    assert_ok(tp_add(c, a, b, &ab));
    assert_ok(tp_sum(c, ab, NULL, 0, false, &sum));
    tp_tensor_t *grads[2] = {NULL, NULL};
    assert_ok(tp_tape_gradient(tape, sum, &x, 1, &grads[0]));
    expect_values(grads[0], (const double[]){2, -4}, 2);
    assert_ok(tp_tape_gradient_variables(tape, sum, &variable, 1, &grads[1]));
    expect_all(grads[1], 0);
    assert_ok(tp_tape_stop(tape));
    assert_error(tp_tape_pause(tape, true), TP_FAILED_PRECONDITION, "stopped");
    assert_error(tp_tape_pause(NULL, true), TP_INVALID_ARGUMENT, "NULL");
    tp_tape_destroy(tape);
    tp_variable_destroy(variable);
    tp_tensor_t *all[] = {x, a, b, ab, v0, sum, grads[0], grads[1]};
    release_all(all, COUNT_OF(all));
}

/* A tape destroyed while it records stops; a later tape starts afresh. */
static void a_tape_destroyed_while_recording_stops_recording(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SCALAR_SHAPE, 3), *y = NULL, *z = NULL, *grad = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_square(c, x, &y));
    tp_tape_destroy(tape);
    tp_tape_destroy(NULL);
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, y));
    assert_ok(tp_mul(c, y, x, &z));
    assert_ok(tp_tape_gradient(tape, z, &x, 1, &grad)); /* x is not watched by this tape */
    expect_scalar(grad, 0, 0);
    tp_tensor_release(grad);
    assert_ok(tp_tape_gradient(tape, z, &y, 1, &grad));
    expect_scalar(grad, 3, 1e-12);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, y, z, grad};
    release_all(all, COUNT_OF(all));
}

/* Tapes nest up to 16 deep on a thread; a 17th is refused until one stops. */
static void at_most_sixteen_tapes_record_at_once(void **state) {
    tp_context_t *c = *state;
    tp_tape_t *tapes[17] = {NULL};
    for (int t = 0; t < 16; t++) assert_ok(tp_tape_begin(c, &tapes[t]));
    assert_error(tp_tape_begin(c, &tapes[16]), TP_RESOURCE_EXHAUSTED,
                 "16 tapes already record on this thread");
    assert_null(tapes[16]);
    assert_ok(tp_tape_stop(tapes[3]));
    assert_ok(tp_tape_begin(c, &tapes[16]));
    for (int t = 0; t < 17; t++) tp_tape_destroy(tapes[t]);
}

/* x^3 as x * x * x: the inner tape's gradient, 3x^2, is recorded by the outer tape, whose own
 * gradient of it is 6x. At x = 2 both are 12. */
static void nested_tapes_give_second_derivatives(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SCALAR_SHAPE, 2.0);
    tp_tensor_t *square = NULL, *cube = NULL, *first = NULL, *second = NULL;
    tp_tape_t *outer = NULL, *inner = NULL;
    assert_ok(tp_tape_begin(c, &outer));
    assert_ok(tp_tape_watch(outer, x));
    assert_ok(tp_tape_begin(c, &inner));
    assert_ok(tp_tape_watch(inner, x));
    assert_ok(tp_mul(c, x, x, &square));
    assert_ok(tp_mul(c, square, x, &cube));
    expect_scalar(cube, 8, 0);
    assert_ok(tp_tape_gradient(inner, cube, &x, 1, &first));
    tp_tape_destroy(inner);
    expect_scalar(first, 12, 1e-12);
    tp_status_t *status = tp_tape_gradient(outer, first, &x, 1, &second);
    tp_tape_destroy(outer);
    tp_tensor_t *all[] = {x, square, cube, first};
    release_all(all, COUNT_OF(all));
    assert_ok(status);
    double value = read_scalar(second);
    tp_tensor_release(second);
    if (fabs(value - 12) > 1e-12) fail_msg("d2(x^3)/dx2 at 2: got %.17g, wanted 12", value);
}

/* The same through reductions and broadcasting, with vectors: for f = sum(x * x * x), the
 * inner gradient is 3x^2; the outer gradient of sum(3x^2 * v) is 6x * v, and of
 * mean(3x^2) + sum(square(x)) it is 6x / n + 2x. */
static void nested_tapes_through_reductions(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(3), 1, -2, 0.5), *v = F64(c, TP_SHAPE(3), 2, 1, -3);
    tp_tensor_t *square = NULL, *cube = NULL, *f = NULL, *first = NULL, *weighted = NULL,
                *targets[2] = {NULL, NULL}, *mean = NULL, *squares = NULL, *squares_sum = NULL;
    tp_tape_t *outer = NULL, *inner = NULL;
    assert_ok(tp_tape_begin(c, &outer));
    assert_ok(tp_tape_watch(outer, x));
    assert_ok(tp_tape_begin(c, &inner));
    assert_ok(tp_tape_watch(inner, x));
    assert_ok(tp_mul(c, x, x, &square));
    assert_ok(tp_mul(c, square, x, &cube));
    assert_ok(tp_sum(c, cube, NULL, 0, false, &f));
    tp_status_t *status = tp_tape_gradient(inner, f, &x, 1, &first);
    tp_tape_destroy(inner);
    if (status == NULL) {
        expect_values(first, (const double[]){3, 12, 0.75}, 3);
        assert_ok(tp_mul(c, first, v, &weighted));
        assert_ok(tp_sum(c, weighted, NULL, 0, false, &targets[0]));
        assert_ok(tp_mean(c, first, NULL, 0, false, &mean));
        assert_ok(tp_square(c, first, &squares));
        assert_ok(tp_sum(c, squares, NULL, 0, false, &squares_sum));
        assert_ok(tp_add(c, mean, squares_sum, &targets[1]));
    }
    tp_tensor_t *second[2] = {NULL, NULL};
    for (int t = 0; t < 2 && status == NULL; t++)
        status = tp_tape_gradient(outer, targets[t], &x, 1, &second[t]);
    tp_tape_destroy(outer);
    tp_tensor_t *all[] = {x, v, square, cube, f, first, weighted, targets[0], targets[1], mean,
                          squares, squares_sum};
    release_all(all, COUNT_OF(all));
    assert_ok(status);
    expect_values(second[0], (const double[]){12, -12, -9}, 3); /* 6x * v */
    /* d/dx [mean(3x^2) + sum(9x^4)] = 2x + 36x^3 */
    expect_values(second[1], (const double[]){2 + 36, -4 - 288, 1 + 4.5}, 3);
    release_all(second, 2);
}

/* ---- tp_tape_gradients: upstream gradients, several targets, "no gradient" ---------------- */

/* A non-scalar target with an upstream gradient v: d(sum(v * x^2))/dx = 2 x v; without one
 * (NULL, for all or for that target) the upstream gradient is ones. */
static void upstream_gradients_seed_the_backward_pass(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(3), 1, 2, 3), *v = F64(c, TP_SHAPE(3), 1, -2, 0.5);
    tp_tensor_t *y = NULL, *grad = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_square(c, x, &y));
    assert_ok(tp_tape_gradients(tape, &y, &v, 1, &x, 1, &grad));
    expect_values(grad, (const double[]){2, -8, 3}, 3);
    tp_tensor_release(grad);
    assert_ok(tp_tape_gradients(tape, &y, NULL, 1, &x, 1, &grad));
    expect_values(grad, (const double[]){2, 4, 6}, 3);
    tp_tensor_release(grad);
    tp_tensor_t *no_upstream = NULL;
    assert_ok(tp_tape_gradients(tape, &y, &no_upstream, 1, &x, 1, &grad));
    expect_values(grad, (const double[]){2, 4, 6}, 3);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, v, y, grad};
    release_all(all, COUNT_OF(all));
}

/* Targets' gradients add up: for y1 = x^2 (upstream v) and y2 = sum(x * w), d/dx = 2 x v + w
 * and d/dw = x; a target listed twice counts twice; a target that is a source gets its own
 * upstream gradient. */
static void several_targets_add_their_gradients(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(2), 3, -1), *w = F64(c, TP_SHAPE(2), 0.5, 4);
    tp_tensor_t *v = F64(c, TP_SHAPE(2), 1, 10);
    tp_tensor_t *y1 = NULL, *product = NULL, *y2 = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_tape_watch(tape, w));
    assert_ok(tp_square(c, x, &y1));
    assert_ok(tp_mul(c, x, w, &product));
    assert_ok(tp_sum(c, product, NULL, 0, false, &y2));
    tp_tensor_t *targets[3] = {y1, y2, y2}, *upstream[3] = {v, NULL, NULL};
    tp_tensor_t *sources[3] = {x, w, y1}, *grads[3] = {NULL, NULL, NULL};
    assert_ok(tp_tape_gradients(tape, targets, upstream, 2, sources, 3, grads));
    expect_values(grads[0], (const double[]){6 + 0.5, -20 + 4}, 2);
    expect_values(grads[1], (const double[]){3, -1}, 2);
    expect_values(grads[2], (const double[]){1, 10}, 2); /* y1 is a target and a source */
    release_all(grads, 3);
    assert_ok(tp_tape_gradients(tape, targets, upstream, 3, sources, 2, grads));
    expect_values(grads[0], (const double[]){6 + 1, -20 + 8}, 2);
    expect_values(grads[1], (const double[]){6, -2}, 2);
    release_all(grads, 2);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, w, v, y1, product, y2};
    release_all(all, COUNT_OF(all));
}

/* NULL where nothing flows back: a watched tensor the target does not use, one reached only
 * through a Cast to an integer; zeros where it does flow and is zero (through Sign). */
static void no_gradient_is_null_and_not_zero(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(2), 1.5, -2), *unused = F64(c, TP_SHAPE(3), 1, 2, 3);
    tp_tensor_t *rounded = F64(c, TP_SHAPE(2), 0.25, 7), *stepped = F64(c, TP_SHAPE(2), -1, 1);
    tp_tensor_t *square = NULL, *integer = NULL, *back = NULL, *sign = NULL, *sum1 = NULL,
                *sum2 = NULL, *sum3 = NULL, *total = NULL, *f = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    tp_tensor_t *sources[4] = {x, unused, rounded, stepped}, *grads[4] = {NULL};
    for (int i = 0; i < 4; i++) assert_ok(tp_tape_watch(tape, sources[i]));
    assert_ok(tp_square(c, x, &square));
    assert_ok(tp_cast(c, rounded, TP_INT32, &integer));
    assert_ok(tp_cast(c, integer, TP_FLOAT64, &back));
    assert_ok(tp_sign(c, stepped, &sign));
    assert_ok(tp_sum(c, square, NULL, 0, false, &sum1));
    assert_ok(tp_sum(c, back, NULL, 0, false, &sum2));
    assert_ok(tp_sum(c, sign, NULL, 0, false, &sum3));
    assert_ok(tp_add(c, sum1, sum2, &total));
    assert_ok(tp_add(c, total, sum3, &f));
    assert_ok(tp_tape_gradients(tape, &f, NULL, 1, sources, 4, grads));
    expect_values(grads[0], (const double[]){3, -4}, 2);
    assert_null(grads[1]);
    assert_null(grads[2]);
    assert_non_null(grads[3]);
    expect_values(grads[3], (const double[]){0, 0}, 2);
    /* The old call keeps its promise of zeros for both. */
    tp_tensor_t *old[4] = {NULL};
    assert_ok(tp_tape_gradient(tape, f, sources, 4, old));
    expect_all(old[1], 0);
    expect_all(old[2], 0);
    tp_tape_destroy(tape);
    release_all(grads, 4);
    release_all(old, 4);
    tp_tensor_t *all[] = {x, unused, rounded, stepped, square, integer, back, sign, sum1, sum2,
                          sum3, total, f};
    release_all(all, COUNT_OF(all));
}

/* Bad arguments are refused before the tape spends its one call: a source it never saw (named
 * by index), a NULL source, an upstream gradient of another shape or dtype, an integer target,
 * no targets. */
static void tp_tape_gradients_refuses_bad_arguments(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(3), 1, 2, 3), *stranger = F64(c, TP_SHAPE(3), 4, 5, 6);
    tp_tensor_t *short_upstream = F64(c, TP_SHAPE(2), 1, 1);
    tp_tensor_t *y = NULL, *integer = NULL, *f32_upstream = NULL;
    assert_ok(tp_cast(c, x, TP_FLOAT32, &f32_upstream));
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin_with(c, NULL, &tape)); /* not persistent */
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_square(c, x, &y));
    assert_ok(tp_cast(c, x, TP_INT32, &integer));
    tp_tensor_t *sources[2] = {x, stranger}, *grads[2] = {x, x}; /* overwritten with NULL */
    assert_error(tp_tape_gradients(tape, &y, NULL, 1, sources, 2, grads), TP_INVALID_ARGUMENT,
                 "tp_tape_gradients: source 1 was neither watched by the tape (tp_tape_watch) "
                 "nor made by an op it recorded");
    assert_null(grads[0]);
    assert_null(grads[1]);
    tp_tensor_t *with_null[2] = {x, NULL};
    assert_error(tp_tape_gradients(tape, &y, NULL, 1, with_null, 2, grads), TP_INVALID_ARGUMENT,
                 "source 1 is NULL");
    assert_error(tp_tape_gradients(tape, &y, &short_upstream, 1, &x, 1, grads),
                 TP_INVALID_ARGUMENT,
                 "output gradient 0 is float64 (2,); target 0 is float64 (3,), and its gradient "
                 "must be the same");
    assert_error(tp_tape_gradients(tape, &y, &f32_upstream, 1, &x, 1, grads),
                 TP_INVALID_ARGUMENT, "output gradient 0 is float32 (3,); target 0 is float64");
    assert_error(tp_tape_gradients(tape, &integer, NULL, 1, &x, 1, grads), TP_INVALID_ARGUMENT,
                 "target 0 is int32; gradients need float32 or float64");
    assert_error(tp_tape_gradients(tape, NULL, NULL, 0, &x, 1, grads), TP_INVALID_ARGUMENT,
                 "no targets given");
    /* None of those spent the tape's one call. */
    assert_ok(tp_tape_gradients(tape, &y, NULL, 1, &x, 1, grads));
    expect_values(grads[0], (const double[]){2, 4, 6}, 3);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, stranger, short_upstream, y, integer, f32_upstream, grads[0]};
    release_all(all, COUNT_OF(all));
}

/* Bytes in use on CPU:0 (whose frees are not deferred). */
static uint64_t cpu_bytes(tp_context_t *c) {
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    assert_ok(tp_context_memory_stats(c, "CPU:0", &stats));
    return stats.bytes_in_use;
}

/* A tape that is not persistent gives one set of gradients, through any of the three calls,
 * frees what it kept alive right then, and refuses a second call and new watches; a persistent
 * one keeps everything until it is destroyed. */
static void a_tape_that_is_not_persistent_gives_one_set_of_gradients(void **state) {
    tp_context_t *c = *state;
    enum { N = 4096 }; /* 32 KiB of float64 kept alive by the tape alone */
    double *values = malloc(N * sizeof *values), *twice = malloc(N * sizeof *twice);
    assert_true(values != NULL && twice != NULL);
    for (int i = 0; i < N; i++) {
        values[i] = (double)(i % 7) - 3;
        twice[i] = 2 * values[i]; /* d(sum(x^2))/dx */
    }
    for (int persistent = 0; persistent < 2; persistent++) {
        for (int call = 0; call < 3; call++) {
            tp_tensor_t *x = make_f64(c, TP_SHAPE(N), values), *y = NULL, *f = NULL;
            tp_tensor_t *grad = NULL, *again = NULL;
            tp_variable_t *variable = make_variable(c, "v", x);
            tp_tape_options_t options = TP_TAPE_OPTIONS_INIT;
            options.persistent = persistent == 1;
            tp_tape_t *tape = NULL;
            assert_ok(tp_tape_begin_with(c, &options, &tape));
            tp_tensor_t *read = NULL;
            assert_ok(tp_variable_read(variable, &read));
            assert_ok(tp_tape_watch(tape, x));
            assert_ok(tp_square(c, call == 2 ? read : x, &y));
            assert_ok(tp_sum(c, y, NULL, 0, false, &f));
            tp_tensor_release(y); /* now only the tape keeps it */
            tp_tensor_release(read);
            uint64_t before = cpu_bytes(c);
            tp_status_t *first =
                call == 0   ? tp_tape_gradient(tape, f, &x, 1, &grad)
                : call == 1 ? tp_tape_gradients(tape, &f, NULL, 1, &x, 1, &grad)
                            : tp_tape_gradient_variables(tape, f, &variable, 1, &grad);
            assert_ok(first);
            uint64_t after = cpu_bytes(c);
            /* The gradient (32 KiB) came; y (32 KiB) went, unless the tape persists. */
            int64_t change = (int64_t)after - (int64_t)before;
            if (persistent == 1)
                assert_true(change >= N * 8);
            else
                assert_true(change < N * 8 / 2);
            tp_status_t *second = call == 0   ? tp_tape_gradient(tape, f, &x, 1, &again)
                                  : call == 1 ? tp_tape_gradients(tape, &f, NULL, 1, &x, 1,
                                                                  &again)
                                              : tp_tape_gradient_variables(tape, f, &variable,
                                                                           1, &again);
            if (persistent == 1) {
                assert_ok(second);
                expect_values(again, twice, N);
            } else {
                const char *name = call == 0   ? "tp_tape_gradient:"
                                   : call == 1 ? "tp_tape_gradients:"
                                               : "tp_tape_gradient_variables:";
                assert_non_null(second);
                assert_int_equal(tp_status_code(second), TP_FAILED_PRECONDITION);
                const char *message = tp_status_message(second);
                if (strstr(message, name) == NULL ||
                    strstr(message, "the tape is not persistent and has given its gradients "
                                    "already") == NULL)
                    fail_msg("got '%s'", message);
                tp_status_free(second);
                assert_null(again);
                assert_error(tp_tape_watch(tape, x), TP_FAILED_PRECONDITION,
                             "not persistent");
            }
            expect_values(grad, twice, N);
            tp_tape_destroy(tape);
            tp_variable_destroy(variable);
            tp_tensor_t *all[] = {x, f, grad, again};
            release_all(all, COUNT_OF(all));
        }
    }
    free(values);
    free(twice);
}

/* ---- Where gradient ops run ------------------------------------------------------------------- */

static const char *const CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0";
static const char *const CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1";

static int two_cpus_setup(void **state) {
    return split_cpu_context_setup(state, 2, 64ull << 20);
}

/* x on CPU:0; a = x * x on CPU:0; y = a * a, f = sum(y) on CPU:1. The gradient 4x^3 is made by
 * Mul's gradient on CPU:0 (a's) from what Mul's on CPU:1 and Sum's on CPU:1 made: the
 * result is on CPU:0, and a source made on CPU:1 gets its gradient there. With a scope of
 * the caller's, everything runs in it. */
static void gradient_ops_run_where_their_forward_ops_ran(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(2), 1, -2), *a = NULL, *y = NULL, *f = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_mul(c, x, x, &a));
    assert_ok(tp_device_push(c, "/cpu:1"));
    assert_ok(tp_mul(c, a, a, &y));
    assert_ok(tp_sum(c, y, NULL, 0, false, &f));
    assert_ok(tp_device_pop(c));
    assert_string_equal(tp_tensor_device(a), CPU0);
    assert_string_equal(tp_tensor_device(f), CPU1);

    tp_tensor_t *sources[3] = {x, a, y}, *grads[3] = {NULL};
    assert_ok(tp_tape_gradients(tape, &f, NULL, 1, sources, 3, grads));
    expect_values(grads[0], (const double[]){4, -32}, 2); /* 4 x^3 */
    expect_values(grads[1], (const double[]){2, 8}, 2);   /* 2 a */
    expect_values(grads[2], (const double[]){1, 1}, 2);
    assert_string_equal(tp_tensor_device(grads[0]), CPU0);
    assert_string_equal(tp_tensor_device(grads[1]), CPU1);
    assert_string_equal(tp_tensor_device(grads[2]), CPU1);
    release_all(grads, 3);
    /* tp_tape_gradient places them the same way. */
    assert_ok(tp_tape_gradient(tape, f, &a, 1, grads));
    assert_string_equal(tp_tensor_device(grads[0]), CPU1);
    tp_tensor_release(grads[0]);

    /* The caller's scope wins, for every op. */
    for (int d = 0; d < 2; d++) {
        assert_ok(tp_device_push(c, d == 0 ? "/cpu:0" : "/device:CPU:1"));
        tp_status_t *status = tp_tape_gradients(tape, &f, NULL, 1, sources, 3, grads);
        assert_ok(tp_device_pop(c));
        assert_ok(status);
        for (int s = 0; s < 3; s++)
            assert_string_equal(tp_tensor_device(grads[s]), d == 0 ? CPU0 : CPU1);
        expect_values(grads[0], (const double[]){4, -32}, 2);
        release_all(grads, 3);
    }
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, a, y, f};
    release_all(all, COUNT_OF(all));
}

/* Relu runs on the test accelerator ACC (its only kernel); ReluGrad, which ACC lacks, is asked
 * for there and falls back to the CPU, counted, instead of failing as a scope of the caller's
 * would. */
static void a_gradient_op_the_forward_device_lacks_falls_back(void **state) {
    (void)state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_KERNEL_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_context_t *c = NULL;
    assert_ok(tp_context_create(&options, &c));
    tp_tensor_t *x = floats(c, TP_SHAPE(3), (const float[]){-1, 2, 3}), *y = NULL, *f = NULL;
    tp_tensor_t *grad = NULL;
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_relu(c, x, &y));
    assert_ok(tp_sum(c, y, NULL, 0, false, &f));
    bool on_acc = strstr(tp_tensor_device(y), "device:ACC:0") != NULL;
    uint64_t fallbacks = tp_context_fallback_count(c, "ReluGrad");
    tp_status_t *status = tp_tape_gradients(tape, &f, NULL, 1, &x, 1, &grad);
    uint64_t more = tp_context_fallback_count(c, "ReluGrad") - fallbacks;
    float values[3] = {0};
    if (status == NULL) status = tp_tensor_read(grad, values, sizeof values);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, y, f, grad};
    release_all(all, COUNT_OF(all));
    uint64_t in_use = tensor_bytes_in_use(c);
    tp_context_destroy(c);
    assert_true(on_acc);
    assert_ok(status);
    assert_true(values[0] == 0 && values[1] == 1 && values[2] == 1);
    assert_int_equal(more, 1);
    assert_int_equal(in_use, 0);
}

/* ---- Tapes in traced functions --------------------------------------------------------------- */

/* outputs: loss = mean(square(x @ w + b)) and its gradients with respect to x, w and b. */
static tp_status_t *loss_and_gradients(tp_context_t *c, tp_tensor_t *const *inputs,
                                       tp_tensor_t **outputs) {
    tp_tape_t *tape = NULL;
    tp_status_t *error = tp_tape_begin(c, &tape);
    for (size_t i = 0; i < 3 && error == NULL; i++) error = tp_tape_watch(tape, inputs[i]);
    if (error == NULL) error = squared_loss(c, inputs, &outputs[0]);
    if (error == NULL) error = tp_tape_gradient(tape, outputs[0], inputs, 3, &outputs[1]);
    if (error != NULL) {
        tp_tensor_release(outputs[0]);
        outputs[0] = NULL;
    }
    tp_tape_destroy(tape);
    return error;
}

static tp_status_t *gradient_body(tp_context_t *c, tp_tensor_t *const *inputs,
                                  size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                  void *user_data) {
    (void)num_inputs; /* 3, as every call passes */
    (void)num_outputs;
    (void)user_data;
    return loss_and_gradients(c, inputs, outputs);
}

static void expect_same_results(tp_tensor_t *const *got, tp_tensor_t *const *want) {
    for (size_t o = 0; o < 4; o++) {
        int64_t count = tp_tensor_num_elements(want[o]);
        assert_true(same_shape(tp_tensor_shape(got[o]), tp_tensor_shape(want[o])));
        double *expected = malloc((size_t)count * sizeof *expected + 1);
        assert_non_null(expected);
        read_f64(want[o], expected, count);
        expect_values(got[o], expected, count);
        free(expected);
    }
}

static void a_tape_inside_a_traced_function_equals_the_eager_tape(void **state) {
    tp_context_t *c = *state;
    tp_function_t *function = NULL;
    assert_ok(tp_function_create(c, "gradients", gradient_body, 4, NULL, &function));
    for (int round = 0; round < 2; round++) {
        double xs[12], ws[6], bs[2];
        for (int k = 0; k < 12; k++) xs[k] = input_value((size_t)round, k);
        for (int k = 0; k < 6; k++) ws[k] = input_value((size_t)round + 5, k);
        for (int k = 0; k < 2; k++) bs[k] = input_value((size_t)round + 9, k);
        tp_tensor_t *inputs[3] = {make_f64(c, TP_SHAPE(4, 3), xs),
                                  make_f64(c, TP_SHAPE(3, 2), ws), make_f64(c, TP_SHAPE(2), bs)};
        tp_tensor_t *traced[4] = {NULL}, *eager[4] = {NULL};
        assert_ok(tp_function_call(function, inputs, 3, traced, 4));
        assert_int_equal(tp_function_trace_count(function), 1);
        assert_ok(loss_and_gradients(c, inputs, eager));
        assert_tensor_shape(traced[0], TP_SCALAR_SHAPE);
        assert_tensor_shape(traced[1], TP_SHAPE(4, 3));
        assert_tensor_shape(traced[2], TP_SHAPE(3, 2));
        assert_tensor_shape(traced[3], TP_SHAPE(2));
        expect_same_results(traced, eager);

        /* And by hand: with r = x @ w + b over n = 8 elements, db = sum over rows of 2r / n. */
        double r[8], db[2] = {0, 0};
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 2; j++) {
                r[i * 2 + j] = bs[j];
                for (int k = 0; k < 3; k++) r[i * 2 + j] += xs[i * 3 + k] * ws[k * 2 + j];
                db[j] += 2 * r[i * 2 + j] / 8;
            }
        expect_values(traced[3], db, 2);
        release_all(traced, 4);
        release_all(eager, 4);
        release_all(inputs, 3);
    }
    tp_function_destroy(function);
}

static tp_status_t *reading_body(tp_context_t *c, tp_tensor_t *const *inputs,
                                 size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                 void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    tp_tensor_t *value = NULL;
    tp_status_t *error = tp_variable_read(user_data, &value);
    if (error == NULL) error = tp_mul(c, inputs[0], value, &outputs[0]);
    tp_tensor_release(value);
    return error;
}

static void a_variable_read_in_a_traced_function_is_refused(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *initial = F64(c, TP_SHAPE(2), 1, 2), *x = F64(c, TP_SHAPE(2), 3, 4);
    tp_variable_t *w = make_variable(c, "kernel", initial);
    tp_function_t *function = NULL;
    assert_ok(tp_function_create(c, "reads", reading_body, 1, w, &function));
    tp_tensor_t *y = NULL;
    tp_status_t *status = tp_function_call(function, &x, 1, &y, 1);
    assert_non_null(status);
    const char *message = tp_status_message(status);
    bool ok = strstr(message, "traced function") != NULL && strstr(message, "'kernel'") != NULL;
    if (!ok) print_error("got '%s'\n", message);
    tp_status_free(status);
    assert_true(ok);
    assert_null(y);
    /* Eagerly the same read works. */
    assert_ok(reading_body(c, &x, 1, &y, 1, w));
    expect_values(y, (const double[]){3, 8}, 2);
    tp_function_destroy(function);
    tp_variable_destroy(w);
    tp_tensor_t *all[] = {initial, x, y};
    release_all(all, COUNT_OF(all));
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(matmul_gradients_for_every_transpose_combination),
        TEST(bias_add_gradients_of_the_value_and_the_bias),
        TEST(add_sub_mul_div_gradients_with_broadcasting),
        TEST(unary_gradients),
        TEST(relu_passes_gradient_only_where_its_input_is_positive),
        TEST(add_n_gradients),
        TEST(sum_and_mean_gradients_over_any_axes),
        TEST(reshape_and_transpose_gradients),
        TEST(chained_ops_gradients),
        TEST(max_and_min_split_the_gradient_among_ties),
        TEST(abs_and_sign_at_zero),
        TEST(cast_gradients_between_floats_and_through_integers),
        TEST(math_function_gradients_by_hand),
        TEST(activations_have_second_derivatives),
        TEST(variables_read_assign_and_assign_sub),
        TEST(variable_updates_refuse_wrong_shapes_and_dtypes),
        TEST(a_variable_read_twice_gets_its_gradient_once),
        TEST(a_variable_gradient_sums_over_every_value_read),
        TEST(a_source_the_target_does_not_reach_gets_zeros),
        TEST(the_target_must_be_a_floating_point_scalar),
        cmocka_unit_test(an_op_without_a_gradient_on_the_path_is_named),
        TEST(upstream_gradients_seed_the_backward_pass),
        TEST(several_targets_add_their_gradients),
        TEST(no_gradient_is_null_and_not_zero),
        TEST(tp_tape_gradients_refuses_bad_arguments),
        TEST(a_tape_that_is_not_persistent_gives_one_set_of_gradients),
        cmocka_unit_test_setup_teardown(gradient_ops_run_where_their_forward_ops_ran,
                                        two_cpus_setup, cpu_context_teardown),
        cmocka_unit_test(a_gradient_op_the_forward_device_lacks_falls_back),
        TEST(ops_after_stop_are_not_recorded),
        TEST(ops_while_paused_are_not_recorded),
        TEST(a_tape_destroyed_while_recording_stops_recording),
        TEST(at_most_sixteen_tapes_record_at_once),
        TEST(nested_tapes_give_second_derivatives),
        TEST(nested_tapes_through_reductions),
        TEST(a_tape_inside_a_traced_function_equals_the_eager_tape),
        TEST(a_variable_read_in_a_traced_function_is_refused),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
