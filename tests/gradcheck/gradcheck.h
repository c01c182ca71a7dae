/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gradient check's cases. test_gradient_check walks every op that has a gradient function
 * (tp_gradient_entries) and compares, for each of its cases, the tape's gradient with central
 * finite differences in float64; an op with a gradient and no case fails the walk, so a new op
 * cannot skip it. Each family of ops lists its cases in a cases_*.c of this folder.
 */
#ifndef TP_TESTS_GRADCHECK_H
#define TP_TESTS_GRADCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "tensorplug/tensorplug.h"

/* How an input's values are drawn (from a fixed seed). */
typedef enum gradcheck_values {
    GRADCHECK_ANY = 0,        /* uniform in [-2, 2] */
    GRADCHECK_POSITIVE,       /* uniform in [0.5, 2]: Log, Sqrt, Rsqrt */
    GRADCHECK_AWAY_FROM_ZERO, /* |x| uniform in [0.5, 2], either sign: Abs, Relu, divisors */
    GRADCHECK_DISTINCT,       /* every value at least 0.1 from every other: Max, MaxPool */
    GRADCHECK_INDEX,          /* integers in [0, limit): indices, labels */
    GRADCHECK_BOOL,           /* true or false: a condition */
    GRADCHECK_PROBABILITIES   /* non-negative, each row along the last axis summing to one */
} gradcheck_values_t;

/* Dimensions may name a size drawn once per repetition of a case, in [0, 4] (size 0 included),
 * the same for every dimension that names it: so a case states how its inputs' shapes relate
 * (and broadcast) while the sizes themselves vary. */
#define GRADCHECK_SIZE_A (-1)
#define GRADCHECK_SIZE_B (-2)
#define GRADCHECK_SIZE_C (-3)
#define GRADCHECK_SIZE_D (-4)

enum { GRADCHECK_MAX_INPUTS = 8, GRADCHECK_MAX_ATTRS = 8 };

typedef struct gradcheck_input {
    /* float64 inputs are differentiated; inputs of other dtypes are held fixed. */
    tp_dtype_t dtype;
    int32_t rank;
    int64_t dims[TP_MAX_RANK]; /* sizes, or GRADCHECK_SIZE_* */
    gradcheck_values_t values;
    int64_t limit; /* GRADCHECK_INDEX: a number, or a GRADCHECK_SIZE_* (labels of SIZE_B classes) */
} gradcheck_input_t;

typedef struct gradcheck_case {
    const char *op;
    const char *what; /* what the case covers: "a row vector broadcast over a matrix" */
    gradcheck_input_t inputs[GRADCHECK_MAX_INPUTS];
    int num_inputs;
    tp_attr_t attrs[GRADCHECK_MAX_ATTRS];
    int num_attrs;
    int num_outputs; /* 0: one */
    double tolerance; /* largest difference allowed, relative to max(1, |gradient|); 0: 1e-6 */
    /* The finite-difference step, relative to max(1, |x|); 0: 1e-6. Larger where the op's
     * output is rounded coarsely (a float32 result) and the op is smooth enough. */
    double step;
    /* true: in the case's TP_ATTR_SHAPE and TP_ATTR_INT_LIST attributes, GRADCHECK_SIZE_* entries
     * are replaced by the sizes drawn (so -1 means GRADCHECK_SIZE_A there, not "inferred"):
     * Fill's and Reshape's shapes follow the inputs'. */
    bool sized_attrs;
} gradcheck_case_t;

typedef struct gradcheck_family {
    const char *name;
    const gradcheck_case_t *cases;
    size_t count;
} gradcheck_family_t;

/* Each cases_*.c defines one family; test_gradient_check.c lists them all. */
extern const gradcheck_family_t gradcheck_cases_basic;
extern const gradcheck_family_t gradcheck_cases_nn;
extern const gradcheck_family_t gradcheck_cases_array;
extern const gradcheck_family_t gradcheck_cases_conv;

#endif
