/* SPDX-License-Identifier: Apache-2.0 */
/* The shape inference of every built-in op: a call of any op, with inputs of any dtype and
 * shape and attributes of any value, is resolved and its output shapes inferred, as eager
 * execution and tracing do before anything is allocated. Whatever the call, that fails with a
 * readable error or gives valid shapes, and the shapes keep each op's promise: elementwise ops
 * keep the input's shape, broadcasting gives a shape both inputs stretch to, Reshape and
 * Transpose keep the element count, reductions only drop or shrink dimensions. */
#include "fuzz_ops.h"

#include "base/shape.h"
#include "op/shape_functions.h"

static const tp_shape_t *input_shape(const tp_kernel_context_t *call, int32_t index) {
    return &call->inputs[index]->shape;
}

static int64_t product(const tp_shape_t *shape) {
    int64_t count;
    tp_status_t *status = tp_shape_num_elements(shape, &count);
    if (status != NULL) {
        tp_status_free(status);
        return -1; /* too many to count: only compared when the input's count fits */
    }
    return count;
}

static void fail_op(const tp_kernel_context_t *call, const char *what) {
    fuzz_fail(call->op->def->name, what);
}

/* Each output dimension is what both inputs' aligned dimensions (1 where absent) stretch to. */
static void check_broadcast(const tp_kernel_context_t *call, const tp_shape_t *out) {
    const tp_shape_t *x = input_shape(call, 0), *y = input_shape(call, 1);
    if (out->rank != (x->rank > y->rank ? x->rank : y->rank)) fail_op(call, "broadcast rank");
    for (int32_t d = 0; d < out->rank; d++) {
        int32_t dx = d - (out->rank - x->rank), dy = d - (out->rank - y->rank);
        int64_t a = dx >= 0 ? x->dims[dx] : 1, b = dy >= 0 ? y->dims[dy] : 1;
        if ((a != out->dims[d] && a != 1) || (b != out->dims[d] && b != 1))
            fail_op(call, "broadcast dimension");
    }
}

static bool same_dims_in_some_order(const tp_shape_t *a, const tp_shape_t *b) {
    if (a->rank != b->rank) return false;
    bool used[TP_MAX_RANK] = {false};
    for (int32_t i = 0; i < a->rank; i++) {
        int32_t j = 0;
        while (j < b->rank && (used[j] || b->dims[j] != a->dims[i])) j++;
        if (j == b->rank) return false;
        used[j] = true;
    }
    return true;
}

static void check_op_promise(const tp_kernel_context_t *call) {
    const char *name = call->op->def->name;
    const tp_shape_t *out = &call->output_shapes[0];
    tp_shape_fn_t infer = call->op->infer;
    if (infer == tp_shape_same_as_input || infer == tp_shape_all_inputs_equal ||
        infer == tp_shape_bias_add || infer == tp_shape_softmax) {
        for (int32_t i = 0; i < call->num_inputs; i++)
            if (infer == tp_shape_all_inputs_equal && !tp_shape_equal(input_shape(call, i), out))
                fail_op(call, "inputs of different shapes accepted");
        if (!tp_shape_equal(out, input_shape(call, 0))) fail_op(call, "shape not kept");
    } else if (infer == tp_shape_broadcast) {
        check_broadcast(call, out);
    } else if (infer == tp_shape_reshape) {
        if (product(out) != call->inputs[0]->num_elements) fail_op(call, "element count changed");
    } else if (infer == tp_shape_transpose) {
        if (!same_dims_in_some_order(out, input_shape(call, 0))) fail_op(call, "dims changed");
    } else if (infer == tp_shape_reduce) {
        const tp_shape_t *x = input_shape(call, 0);
        int64_t elements = call->inputs[0]->num_elements;
        if (out->rank > x->rank) fail_op(call, "reduction added dimensions");
        if (product(out) > elements && elements > 0)
            fail_op(call, "reduction grew");
    } else if (strcmp(name, "MatMul") == 0) {
        if (out->rank != 2) fail_op(call, "product is not a matrix");
    } else if (infer == tp_shape_batch_matmul) {
        int32_t x = input_shape(call, 0)->rank, y = input_shape(call, 1)->rank;
        if (out->rank != (x > y ? x : y)) fail_op(call, "batched product's rank");
    }
}

static void check_outputs(const tp_kernel_context_t *call) {
    for (int32_t o = 0; o < call->num_outputs; o++) {
        const tp_shape_t *shape = &call->output_shapes[o];
        if (!call->output_shape_set[o]) fail_op(call, "output shape not set");
        if (shape->rank < 0 || shape->rank > TP_MAX_RANK) fail_op(call, "output rank");
        for (int32_t d = 0; d < shape->rank; d++)
            if (shape->dims[d] < 0) fail_op(call, "negative output dimension");
        if (tp_dtype_size(call->output_dtypes[o]) == 0) fail_op(call, "output dtype");
    }
    check_op_promise(call);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input_t in = {data, size};
    size_t count;
    const tp_op_t *ops = tp_builtin_ops(&count);
    const tp_op_t *op = &ops[fuzz_below(&in, count)];
    fuzz_call_t call_data = {0};
    if (!fuzz_make_inputs(&in, op->def, &call_data)) return 0;
    fuzz_make_attrs(&in, op->def, &call_data);
    size_t outputs = op->def->num_outputs;
    if (fuzz_byte(&in) >= 0xf8) outputs = fuzz_below(&in, TP_MAX_OP_OUTPUTS + 2);

    tp_kernel_context_t call;
    tp_status_t *status = tp_kernel_context_resolve(&call, op, call_data.inputs,
                                                    call_data.num_inputs, call_data.attrs,
                                                    call_data.num_attrs, outputs);
    char quoted[1024];
    fuzz_call_strings(&call_data, quoted, sizeof quoted);
    if (fuzz_check_status(status)) {
        status = tp_kernel_context_infer_shapes(&call);
        if (status != NULL && tp_status_code(status) == TP_INTERNAL)
            fail_op(&call, tp_status_message(status));
        if (fuzz_check_quoting(status, quoted)) {
            char shape[256];
            tp_shape_format(&call.output_shapes[0], shape, sizeof shape);
            fuzz_say(op->def->name, shape);
            check_outputs(&call);
        }
    }
    fuzz_free_call(&call_data);
    return 0;
}
