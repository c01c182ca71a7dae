/* SPDX-License-Identifier: Apache-2.0 */
/* TensorFlow's op names for tensorplug's ops. A TensorFlow kernel reads its inputs by index and
 * its attributes by name, so an op is listed only where both sides agree on the order of the
 * inputs and on the attributes' names and kinds. Left out on purpose: ops whose TensorFlow form
 * takes as an input tensor what tensorplug takes as an attribute (Sum, Mean, Max, Min,
 * Transpose, Reshape, Fill, Tile, Pad, Slice, StridedSlice, ConcatV2, GatherV2, ArgMax,
 * OneHot, UnsortedSegmentSum, the backprop ops with a sizes input): a kernel for them would
 * read an input that is not there. */
#include <stdlib.h>
#include <string.h>

#include "tfc.h"

static const struct {
    const char *tf, *tp;
} ops[] = {
    /* Sorted by TensorFlow's name, for bsearch. */
    {"Abs", "Abs"},
    {"Add", "Add"},
    {"AddN", "AddN"},
    {"AddV2", "Add"},
    {"AvgPool", "AvgPool"},
    {"BatchMatMulV2", "BatchMatMulV2"},
    {"BiasAdd", "BiasAdd"},
    {"Cast", "Cast"},
    {"Conv2D", "Conv2D"},
    {"Div", "Div"},
    {"Equal", "Equal"},
    {"Exp", "Exp"},
    {"Greater", "Greater"},
    {"GreaterEqual", "GreaterEqual"},
    {"Identity", "Identity"},
    {"Less", "Less"},
    {"LessEqual", "LessEqual"},
    {"Log", "Log"},
    {"LogSoftmax", "LogSoftmax"},
    {"MatMul", "MatMul"},
    {"MaxPool", "MaxPool"},
    {"Mul", "Mul"},
    {"Neg", "Neg"},
    {"NotEqual", "NotEqual"},
    {"OnesLike", "OnesLike"},
    {"Pow", "Pow"},
    {"RealDiv", "Div"},
    {"Relu", "Relu"},
    {"ReluGrad", "ReluGrad"},
    {"Rsqrt", "Rsqrt"},
    {"Select", "Select"},
    {"Sigmoid", "Sigmoid"},
    {"SigmoidGrad", "SigmoidGrad"},
    {"Sign", "Sign"},
    {"Softmax", "Softmax"},
    {"Sqrt", "Sqrt"},
    {"Square", "Square"},
    {"Sub", "Sub"},
    {"Tanh", "Tanh"},
    {"TanhGrad", "TanhGrad"},
    {"ZerosLike", "ZerosLike"},
};

static int compare(const void *key, const void *entry) {
    return strcmp(key, *(const char *const *)entry);
}

const char *tfc_op_to_tp(const char *name) {
    if (name == NULL) return NULL;
    const void *found = bsearch(name, ops, sizeof ops / sizeof ops[0], sizeof ops[0], compare);
    return found == NULL ? NULL : ((const char *const *)found)[1];
}
