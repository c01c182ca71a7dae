/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gradient check: every op that has a gradient function (tp_gradient_entries) has cases
 * (cases_*.c), and for each case, drawn several times with fixed seeds, the tape's gradient of
 * sum over the op's floating-point outputs of sum(output * W), W fixed random weights (the
 * upstream gradients of tp_tape_gradients), equals central finite differences of the same sum
 * computed on the host, element by element, in float64. An op with a gradient and no case fails, and so does a case whose op has no
 * gradient (a misspelt name would otherwise check nothing).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "autodiff/gradients.h"
#include "base/status.h"
#include "device_support.h"
#include "gradcheck.h"
#include "tensorplug/training.h"

/* Every family of cases: one line each. */
static const gradcheck_family_t *const families[] = {
    &gradcheck_cases_basic,
    &gradcheck_cases_nn,
    &gradcheck_cases_array,
    &gradcheck_cases_conv,
};

enum {
    NUM_FAMILIES = sizeof families / sizeof families[0],
    REPETITIONS = 8, /* draws of the sizes and values per case */
    MAX_SIZE = 4,    /* GRADCHECK_SIZE_* are drawn in [0, MAX_SIZE] */
    MAX_OUTPUTS = 8,
    NUM_SIZES = 4
};

static const double DEFAULT_TOLERANCE = 1e-6;
/* The finite-difference step, relative to max(1, |x|): central differences err by about
 * h^2 |f'''| from truncation and eps |f| / h from rounding, both far below 1e-6 here. */
static const double DEFAULT_STEP = 1e-6;

/* ---- Random numbers: splitmix64, seeded per case and repetition ----------------------------- */

typedef struct {
    uint64_t state;
} rng_t;

static uint64_t next_u64(rng_t *rng) {
    uint64_t z = (rng->state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double uniform(rng_t *rng, double low, double high) {
    return low + (high - low) * (double)(next_u64(rng) >> 11) / 9007199254740992.0;
}

static int64_t below(rng_t *rng, int64_t limit) {
    return limit <= 0 ? 0 : (int64_t)(next_u64(rng) % (uint64_t)limit);
}

/* From the case's op and description, so that adding a case elsewhere changes no other's
 * draws. */
static uint64_t seed_of(const gradcheck_case_t *test, int repetition) {
    uint64_t hash = UINT64_C(1469598103934665603);
    for (const char *text = test->op; *text != '\0'; text++)
        hash = (hash ^ (unsigned char)*text) * UINT64_C(1099511628211);
    for (const char *text = test->what; text != NULL && *text != '\0'; text++)
        hash = (hash ^ (unsigned char)*text) * UINT64_C(1099511628211);
    return hash ^ ((uint64_t)repetition * UINT64_C(0x2545f4914f6cdd1d));
}

/* ---- One drawing of a case ------------------------------------------------------------------- */

typedef struct {
    const gradcheck_case_t *test;
    int repetition;
    int64_t sizes[NUM_SIZES];
    tp_shape_t shapes[GRADCHECK_MAX_INPUTS];
    int64_t counts[GRADCHECK_MAX_INPUTS];
    double *values[GRADCHECK_MAX_INPUTS]; /* host values, as doubles */
    tp_attr_t attrs[GRADCHECK_MAX_ATTRS];
    int64_t attr_lists[GRADCHECK_MAX_ATTRS][TP_MAX_RANK];
    int num_outputs;
    double *weights[MAX_OUTPUTS]; /* NULL for outputs that are not floating point */
    int64_t output_counts[MAX_OUTPUTS];
    tp_dtype_t output_dtypes[MAX_OUTPUTS];
    char label[512]; /* "Add (what) with inputs (3, 4) (4,)": for messages */
} drawing_t;

static bool is_float(tp_dtype_t dtype) {
    return dtype == TP_FLOAT32 || dtype == TP_FLOAT64;
}

/* A dimension or limit that may name a drawn size. */
static int64_t resolve(const drawing_t *d, int64_t value) {
    return value <= GRADCHECK_SIZE_A && value >= GRADCHECK_SIZE_D ? d->sizes[-value - 1] : value;
}

static void draw_values(rng_t *rng, const gradcheck_input_t *input, tp_shape_t shape,
                        int64_t count, int64_t limit, double *out) {
    switch (input->values) {
    case GRADCHECK_ANY:
        for (int64_t k = 0; k < count; k++) out[k] = uniform(rng, -2, 2);
        break;
    case GRADCHECK_POSITIVE:
        for (int64_t k = 0; k < count; k++) out[k] = uniform(rng, 0.5, 2);
        break;
    case GRADCHECK_AWAY_FROM_ZERO:
        for (int64_t k = 0; k < count; k++)
            out[k] = (next_u64(rng) & 1 ? -1 : 1) * uniform(rng, 0.5, 2);
        break;
    case GRADCHECK_DISTINCT: {
        /* A shuffled grid with a jitter smaller than its step less 0.1. */
        double step = count > 0 && 4.0 / (double)count > 0.15 ? 4.0 / (double)count : 0.15;
        for (int64_t k = 0; k < count; k++) out[k] = (double)k;
        for (int64_t k = count - 1; k > 0; k--) {
            int64_t j = below(rng, k + 1);
            double swap = out[k];
            out[k] = out[j];
            out[j] = swap;
        }
        for (int64_t k = 0; k < count; k++)
            out[k] = -2 + out[k] * step + uniform(rng, 0, step - 0.1);
        break;
    }
    case GRADCHECK_INDEX:
        for (int64_t k = 0; k < count; k++) out[k] = (double)below(rng, limit);
        break;
    case GRADCHECK_BOOL:
        for (int64_t k = 0; k < count; k++) out[k] = (double)(next_u64(rng) & 1);
        break;
    case GRADCHECK_PROBABILITIES: {
        int64_t width = shape.rank > 0 ? shape.dims[shape.rank - 1] : 1;
        for (int64_t row = 0; width > 0 && row < count / width; row++) {
            double total = 0;
            for (int64_t j = 0; j < width; j++) total += out[row * width + j] = uniform(rng, 0.1, 1);
            for (int64_t j = 0; j < width; j++) out[row * width + j] /= total;
        }
        break;
    }
    }
}

static void free_drawing(drawing_t *d) {
    for (int i = 0; i < GRADCHECK_MAX_INPUTS; i++) free(d->values[i]);
    for (int o = 0; o < MAX_OUTPUTS; o++) free(d->weights[o]);
    memset(d, 0, sizeof *d);
}

/* Sizes, shapes, values and attributes of one repetition; false (with a message) for a case
 * that is malformed. The first repetition draws no size 0, so every case checks some values. */
static bool draw(const gradcheck_case_t *test, int repetition, drawing_t *d) {
    memset(d, 0, sizeof *d);
    d->test = test;
    d->repetition = repetition;
    rng_t rng = {seed_of(test, repetition)};
    for (int s = 0; s < NUM_SIZES; s++)
        d->sizes[s] = repetition == 0 ? 1 + below(&rng, MAX_SIZE) : below(&rng, MAX_SIZE + 1);
    if (test->num_inputs < 0 || test->num_inputs > GRADCHECK_MAX_INPUTS ||
        test->num_attrs < 0 || test->num_attrs > GRADCHECK_MAX_ATTRS ||
        test->num_outputs < 0 || test->num_outputs > MAX_OUTPUTS) {
        print_error("%s (%s): %d inputs, %d attributes, %d outputs: out of range\n", test->op,
                    test->what, test->num_inputs, test->num_attrs, test->num_outputs);
        return false;
    }
    int used = snprintf(d->label, sizeof d->label, "%s (%s) with sizes %lld %lld %lld %lld, "
                        "inputs", test->op, test->what, (long long)d->sizes[0],
                        (long long)d->sizes[1], (long long)d->sizes[2], (long long)d->sizes[3]);
    for (int i = 0; i < test->num_inputs; i++) {
        const gradcheck_input_t *input = &test->inputs[i];
        tp_shape_t shape = {.rank = input->rank};
        if (input->rank < 0 || input->rank > TP_MAX_RANK) {
            print_error("%s (%s): input %d has rank %d\n", test->op, test->what, i, input->rank);
            return false;
        }
        for (int32_t k = 0; k < input->rank; k++) {
            shape.dims[k] = resolve(d, input->dims[k]);
            if (shape.dims[k] < 0) {
                print_error("%s (%s): input %d dimension %d is %lld\n", test->op, test->what, i,
                            k, (long long)input->dims[k]);
                return false;
            }
        }
        d->shapes[i] = shape;
        assert_ok(tp_shape_num_elements(&shape, &d->counts[i]));
        d->values[i] = calloc((size_t)d->counts[i] + 1, sizeof(double));
        assert_non_null(d->values[i]);
        draw_values(&rng, input, shape, d->counts[i], resolve(d, input->limit), d->values[i]);
        char text[128];
        tp_shape_format(&shape, text, sizeof text);
        if (used > 0 && (size_t)used < sizeof d->label)
            used += snprintf(d->label + used, sizeof d->label - (size_t)used, " %s %s", text,
                             tp_dtype_name(input->dtype));
    }
    for (int a = 0; a < test->num_attrs; a++) {
        tp_attr_t attr = test->attrs[a];
        bool list = attr.type == TP_ATTR_SHAPE || attr.type == TP_ATTR_INT_LIST;
        if (test->sized_attrs && list && attr.count > 0) {
            if (attr.count > TP_MAX_RANK) {
                print_error("%s (%s): attribute %s has %d entries\n", test->op, test->what,
                            attr.name, (int)attr.count);
                return false;
            }
            for (int32_t k = 0; k < attr.count; k++)
                d->attr_lists[a][k] = resolve(d, attr.list[k]);
            attr.list = d->attr_lists[a];
        }
        d->attrs[a] = attr;
    }
    d->num_outputs = test->num_outputs == 0 ? 1 : test->num_outputs;
    return true;
}

/* ---- Running the op -------------------------------------------------------------------------- */

/* A tensor of `dtype` and `shape` holding the `count` `values`: made in float64, then cast. */
static tp_status_t *cast_from_doubles(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape,
                                      const double *values, int64_t count, tp_tensor_t **out) {
    tp_tensor_t *f64 = NULL;
    tp_status_t *error =
        tp_tensor_create(c, TP_FLOAT64, shape, values, (size_t)count * sizeof(double), &f64);
    if (error != NULL || dtype == TP_FLOAT64) {
        *out = f64;
        return error;
    }
    error = tp_cast(c, f64, dtype, out);
    tp_tensor_release(f64);
    return error;
}

/* A tensor of input i's dtype and shape holding `values`. */
static tp_status_t *make_input(tp_context_t *c, const drawing_t *d, int i, const double *values,
                               tp_tensor_t **out) {
    return cast_from_doubles(c, d->test->inputs[i].dtype, d->shapes[i], values, d->counts[i],
                             out);
}

static tp_status_t *run_op(tp_context_t *c, const drawing_t *d, tp_tensor_t *const *inputs,
                           tp_tensor_t **outputs) {
    return tp_execute(c, d->test->op, inputs, (size_t)d->test->num_inputs, d->attrs,
                      (size_t)d->test->num_attrs, outputs, (size_t)d->num_outputs);
}

/* Draws the weights, once the outputs' shapes are known, rounded to each output's dtype: they
 * are the upstream gradients the tape is seeded with. */
static void draw_weights(drawing_t *d, tp_tensor_t *const *outputs) {
    rng_t rng = {seed_of(d->test, d->repetition) ^ UINT64_C(0x5bd1e995)};
    for (int o = 0; o < d->num_outputs; o++) {
        d->output_dtypes[o] = tp_tensor_dtype(outputs[o]);
        d->output_counts[o] = tp_tensor_num_elements(outputs[o]);
        if (!is_float(d->output_dtypes[o])) continue;
        d->weights[o] = malloc((size_t)d->output_counts[o] * sizeof(double) + 1);
        assert_non_null(d->weights[o]);
        for (int64_t k = 0; k < d->output_counts[o]; k++) {
            double w = (next_u64(&rng) & 1 ? -1 : 1) * uniform(&rng, 0.5, 1.5);
            d->weights[o][k] = d->output_dtypes[o] == TP_FLOAT32 ? (double)(float)w : w;
        }
    }
}

/* Output o's weights as a tensor of its dtype and shape: its upstream gradient. */
static tp_status_t *weights_tensor(tp_context_t *c, const drawing_t *d, int o,
                                   tp_tensor_t *const *outputs, tp_tensor_t **out) {
    return cast_from_doubles(c, d->output_dtypes[o], tp_tensor_shape(outputs[o]), d->weights[o],
                             d->output_counts[o], out);
}

/* The same sum, computed on the host from the op's outputs for `inputs`, with no tape. */
static tp_status_t *host_objective(tp_context_t *c, const drawing_t *d,
                                   tp_tensor_t *const *inputs, double *out) {
    tp_tensor_t *outputs[MAX_OUTPUTS] = {NULL};
    TP_RETURN_IF_ERROR(run_op(c, d, inputs, outputs));
    double total = 0;
    tp_status_t *error = NULL;
    for (int o = 0; o < d->num_outputs && error == NULL; o++) {
        if (d->weights[o] == NULL) continue;
        int64_t n = d->output_counts[o];
        double *values = malloc((size_t)n * sizeof(double) + 1);
        assert_non_null(values);
        tp_tensor_t *y = NULL;
        error = d->output_dtypes[o] == TP_FLOAT64
                    ? NULL
                    : tp_cast(c, outputs[o], TP_FLOAT64, &y);
        if (error == NULL)
            error = tp_tensor_read(y != NULL ? y : outputs[o], values,
                                   (size_t)n * sizeof(double));
        for (int64_t k = 0; k < n && error == NULL; k++) total += values[k] * d->weights[o][k];
        tp_tensor_release(y);
        free(values);
    }
    for (int o = 0; o < d->num_outputs; o++) tp_tensor_release(outputs[o]);
    *out = total;
    return error;
}

/* ---- Comparing ------------------------------------------------------------------------------- */

typedef struct {
    double excess; /* |tape - numeric| / max(1, |tape|), or INFINITY for a non-finite value */
    int input;
    int64_t element;
    double tape, numeric;
} worst_t;

/* The tape's gradients of the drawing's inputs, in analytic[i] (for float64 inputs): the
 * floating-point outputs are the targets, seeded with their weights, so that the tape computes
 * the gradient of sum over outputs of sum(output * W) with no op of the check's own. "No
 * gradient" (NULL) is zero. */
static tp_status_t *tape_gradients(tp_context_t *c, drawing_t *d, tp_tensor_t *const *inputs,
                                   double **analytic) {
    tp_tensor_t *sources[GRADCHECK_MAX_INPUTS], *grads[GRADCHECK_MAX_INPUTS] = {NULL};
    tp_tensor_t *targets[MAX_OUTPUTS], *upstream[MAX_OUTPUTS] = {NULL};
    int which[GRADCHECK_MAX_INPUTS];
    size_t num_sources = 0, num_targets = 0;
    tp_tape_t *tape = NULL;
    tp_tensor_t *outputs[MAX_OUTPUTS] = {NULL};
    tp_status_t *error = tp_tape_begin_with(c, NULL, &tape);
    for (int i = 0; i < d->test->num_inputs && error == NULL; i++) {
        if (d->test->inputs[i].dtype != TP_FLOAT64) continue;
        which[num_sources] = i;
        sources[num_sources++] = inputs[i];
        error = tp_tape_watch(tape, inputs[i]);
    }
    if (error == NULL) error = run_op(c, d, inputs, outputs);
    if (error == NULL) draw_weights(d, outputs);
    for (int o = 0; o < d->num_outputs && error == NULL; o++) {
        if (d->weights[o] == NULL) continue;
        targets[num_targets] = outputs[o];
        error = weights_tensor(c, d, o, outputs, &upstream[num_targets++]);
    }
    if (error == NULL && num_targets == 0)
        error = tp_status_make(TP_INVALID_ARGUMENT, "the op has no floating-point output");
    if (error == NULL)
        error = tp_tape_gradients(tape, targets, upstream, num_targets, sources, num_sources,
                                  grads);
    tp_tape_destroy(tape);
    for (size_t s = 0; s < num_sources && error == NULL; s++) {
        int i = which[s];
        if (grads[s] == NULL) continue; /* no gradient: zeros, as calloc left them */
        tp_shape_t got = tp_tensor_shape(grads[s]);
        char got_text[128], want_text[128];
        tp_shape_format(&got, got_text, sizeof got_text);
        tp_shape_format(&d->shapes[i], want_text, sizeof want_text);
        if (strcmp(got_text, want_text) != 0 || tp_tensor_dtype(grads[s]) != TP_FLOAT64)
            error = tp_status_make(TP_INTERNAL, "the gradient of input %d is %s %s, not %s "
                                   "float64", i, got_text,
                                   tp_dtype_name(tp_tensor_dtype(grads[s])), want_text);
        else
            error = tp_tensor_read(grads[s], analytic[i], (size_t)d->counts[i] * sizeof(double));
    }
    for (size_t s = 0; s < num_sources; s++) tp_tensor_release(grads[s]);
    for (int o = 0; o < MAX_OUTPUTS; o++) {
        tp_tensor_release(outputs[o]);
        tp_tensor_release(upstream[o]);
    }
    return error;
}

/* Central differences for every element of every float64 input, against analytic[]. */
static tp_status_t *compare(tp_context_t *c, drawing_t *d, tp_tensor_t **inputs,
                            double *const *analytic, worst_t *worst) {
    tp_status_t *error = NULL;
    for (int i = 0; i < d->test->num_inputs && error == NULL; i++) {
        if (d->test->inputs[i].dtype != TP_FLOAT64) continue;
        tp_tensor_t *original = inputs[i];
        for (int64_t k = 0; k < d->counts[i] && error == NULL; k++) {
            double step = d->test->step > 0 ? d->test->step : DEFAULT_STEP;
            double x = d->values[i][k], h = step * fmax(1.0, fabs(x)), f[2] = {0, 0};
            double at[2] = {x + h, x - h};
            for (int side = 0; side < 2 && error == NULL; side++) {
                d->values[i][k] = at[side];
                error = make_input(c, d, i, d->values[i], &inputs[i]);
                if (error == NULL) error = host_objective(c, d, inputs, &f[side]);
                if (inputs[i] != original) tp_tensor_release(inputs[i]);
                inputs[i] = original;
            }
            d->values[i][k] = x;
            double numeric = (f[0] - f[1]) / (at[0] - at[1]), tape = analytic[i][k];
            double excess = fabs(tape - numeric) / fmax(1.0, fabs(tape));
            if (!isfinite(tape) || !isfinite(numeric)) excess = INFINITY;
            if (error == NULL && (excess > worst->excess || worst->input < 0))
                *worst = (worst_t){excess, i, k, tape, numeric};
        }
    }
    return error;
}

/* Checks one drawing; false (after printing why) when it fails. */
static bool check_drawing(tp_context_t *c, drawing_t *d) {
    const gradcheck_case_t *test = d->test;
    tp_tensor_t *inputs[GRADCHECK_MAX_INPUTS] = {NULL};
    double *analytic[GRADCHECK_MAX_INPUTS] = {NULL};
    tp_status_t *error = NULL;
    for (int i = 0; i < test->num_inputs && error == NULL; i++) {
        error = make_input(c, d, i, d->values[i], &inputs[i]);
        analytic[i] = calloc((size_t)d->counts[i] + 1, sizeof(double));
        assert_non_null(analytic[i]);
    }
    if (error == NULL) error = tape_gradients(c, d, inputs, analytic);
    worst_t worst = {0, -1, 0, 0, 0};
    if (error == NULL) error = compare(c, d, inputs, analytic, &worst);
    for (int i = 0; i < test->num_inputs; i++) {
        tp_tensor_release(inputs[i]);
        free(analytic[i]);
    }
    double tolerance = test->tolerance > 0 ? test->tolerance : DEFAULT_TOLERANCE;
    if (error != NULL) {
        print_error("%s: %s: %s\n", d->label, tp_code_name(tp_status_code(error)),
                    tp_status_message(error));
        tp_status_free(error);
        return false;
    }
    if (worst.input >= 0 && !(worst.excess <= tolerance)) {
        print_error("%s: worst at input %d element %lld: tape %.12g, finite differences %.12g "
                    "(difference %.3g relative to max(1, |tape|); tolerance %.3g)\n",
                    d->label, worst.input, (long long)worst.element, worst.tape, worst.numeric,
                    worst.excess, tolerance);
        return false;
    }
    return true;
}

/* ---- The tests ------------------------------------------------------------------------------- */

static bool has_case(const char *op) {
    for (size_t f = 0; f < NUM_FAMILIES; f++)
        for (size_t k = 0; k < families[f]->count; k++)
            if (strcmp(families[f]->cases[k].op, op) == 0) return true;
    return false;
}

static void every_op_with_a_gradient_has_a_case(void **state) {
    (void)state;
    size_t count;
    const tp_gradient_entry_t *entries = tp_gradient_entries(&count);
    assert_true(count > 0);
    int missing = 0;
    for (size_t e = 0; e < count; e++) {
        if (has_case(entries[e].op)) continue;
        print_error("op %s has a gradient function and no gradient check case; add one to a "
                    "tests/gradcheck/cases_*.c\n", entries[e].op);
        missing++;
    }
    if (missing > 0) fail_msg("%d ops with a gradient have no case", missing);
}

static void every_case_names_an_op_with_a_gradient(void **state) {
    (void)state;
    int wrong = 0;
    for (size_t f = 0; f < NUM_FAMILIES; f++) {
        for (size_t k = 0; k < families[f]->count; k++) {
            const gradcheck_case_t *test = &families[f]->cases[k];
            if (test->op != NULL && tp_gradient_find(test->op) != NULL && test->what != NULL)
                continue;
            print_error("family %s, case %zu (%s, %s): %s\n", families[f]->name, k,
                        test->op != NULL ? test->op : "no op",
                        test->what != NULL ? test->what : "no description",
                        test->op == NULL || tp_gradient_find(test->op) == NULL
                            ? "no op of that name has a gradient function"
                            : "says nothing of what it covers");
            wrong++;
        }
    }
    if (wrong > 0) fail_msg("%d cases name no op with a gradient", wrong);
}

/* Every case of one family (the test's initial state), every repetition. */
static void family_matches_finite_differences(void **state) {
    const gradcheck_family_t *family = *state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    tp_context_t *c = NULL;
    assert_ok(tp_context_create(&options, &c));
    int failed = 0, runs = 0;
    for (size_t k = 0; k < family->count; k++) {
        const gradcheck_case_t *test = &family->cases[k];
        if (test->op == NULL || test->what == NULL) continue; /* the test above reports it */
        for (int r = 0; r < REPETITIONS; r++) {
            drawing_t d;
            bool ok = draw(test, r, &d) && check_drawing(c, &d);
            free_drawing(&d);
            runs++;
            if (!ok) failed++;
        }
    }
    uint64_t in_use = tensor_bytes_in_use(c);
    tp_context_destroy(c);
    if (failed > 0)
        fail_msg("family %s: %d of %d drawings differ from finite differences", family->name,
                 failed, runs);
    assert_int_equal(in_use, 0);
}

int main(void) {
    struct CMUnitTest tests[2 + NUM_FAMILIES] = {
        cmocka_unit_test(every_op_with_a_gradient_has_a_case),
        cmocka_unit_test(every_case_names_an_op_with_a_gradient),
    };
    static char names[NUM_FAMILIES][96];
    for (size_t f = 0; f < NUM_FAMILIES; f++) {
        snprintf(names[f], sizeof names[f], "cases_%s_match_finite_differences",
                 families[f]->name);
        tests[2 + f] = (struct CMUnitTest){names[f], family_matches_finite_differences, NULL,
                                           NULL, (void *)families[f]};
    }
    return _cmocka_run_group_tests("gradient_check", tests, 2 + NUM_FAMILIES, NULL, NULL);
}
