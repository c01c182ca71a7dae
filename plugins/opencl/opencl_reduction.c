/* SPDX-License-Identifier: Apache-2.0 */
/* The reductions on the GPU, from kernels/reduction.cl: Sum, Mean, Max, Min and Prod over any
 * set of axes, and Softmax over the last dimension. compute only queues work; it never waits
 * for the device.
 *
 * A reduction is planned as n_out outputs of n_red elements each, the kept and the reduced
 * dimensions each merged where neighbours, so that contiguous axes become one strided
 * dimension and only scattered axes need the kernels' general index walk. Work-groups of a
 * power-of-two size from the device reduce by a tree in local memory; when few outputs would
 * leave the device idle, each output's extent is split between groups and a second launch
 * reduces their partial results. */
#include <stdio.h>
#include <string.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* Larger groups add tree levels without adding bandwidth; 256 also keeps the tree's local
 * memory at 2 KiB and stays within every device's per-kernel limit for kernels this small. */
#define MAX_GROUP 256
/* A lane reads at least this many elements before an extent is split between groups. */
#define MIN_PER_LANE 32
/* The most groups one output's extent is split between. */
#define MAX_SPLITS 1024

/* Kernel ids by dtype, -1 where there is none: reduce_sum_T (Sum, and Mean with its division),
 * reduce_max_T, reduce_min_T, reduce_prod_T, and Softmax's softmax_T, softmax_sum_T and
 * softmax_scale_T. */
static int32_t sum_ids[OPENCL_NUM_DTYPES], max_ids[OPENCL_NUM_DTYPES], min_ids[OPENCL_NUM_DTYPES],
    prod_ids[OPENCL_NUM_DTYPES], softmax_ids[OPENCL_NUM_DTYPES],
    softmax_sum_ids[OPENCL_NUM_DTYPES], softmax_scale_ids[OPENCL_NUM_DTYPES];

typedef struct reduction_op {
    const char *op;
    const int32_t *ids; /* the op's first kernel, by dtype */
    bool mean;
} reduction_op_t;

static reduction_op_t ops[] = {
    {"Sum", sum_ids, false},
    {"Mean", sum_ids, true},
    {"Max", max_ids, false},
    {"Softmax", softmax_ids, false},
    {"Min", min_ids, false},
    {"Prod", prod_ids, false},
};

/* ---- Planning -------------------------------------------------------------------------------- */

/* A reduction as n_out outputs of n_red elements: output o starts at the offset its index has
 * in a row-major walk over the kept dims with their input strides, and its k-th element lies
 * that of k over the reduced dims further. Dimensions of size 1 are dropped and neighbours of
 * one kind merged, so contiguous axes give one reduced dimension. */
typedef struct reduction_plan {
    cl_ulong n_out, n_red;
    cl_int out_rank, red_rank;
    cl_long8 out_dims, out_strides, red_dims, red_strides;
} reduction_plan_t;

static reduction_plan_t plan_reduction(const tp_tensor_view_t *x, const bool *reduced) {
    reduction_plan_t plan = {.n_out = 1, .n_red = 1};
    int64_t strides[TP_MAX_RANK], stride = 1;
    for (int32_t d = x->rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= x->dims[d];
    }
    int previous = -1; /* the kind of the last dimension taken: 0 kept, 1 reduced */
    for (int32_t d = 0; d < x->rank; d++) {
        if (x->dims[d] == 1) continue;
        int kind = reduced[d] ? 1 : 0;
        cl_int *rank = kind ? &plan.red_rank : &plan.out_rank;
        cl_long *dims = kind ? plan.red_dims.s : plan.out_dims.s;
        cl_long *steps = kind ? plan.red_strides.s : plan.out_strides.s;
        if (kind)
            plan.n_red *= (cl_ulong)x->dims[d];
        else
            plan.n_out *= (cl_ulong)x->dims[d];
        if (kind == previous) {
            dims[*rank - 1] *= x->dims[d];
            steps[*rank - 1] = strides[d];
        } else {
            dims[*rank] = x->dims[d];
            steps[*rank] = strides[d];
            (*rank)++;
        }
        previous = kind;
    }
    return plan;
}

/* The plan that reduces partial results laid out [n_out, splits]. */
static reduction_plan_t plan_partials(cl_ulong n_out, cl_ulong splits) {
    reduction_plan_t plan = {.n_out = n_out, .n_red = splits, .out_rank = 1, .red_rank = 1};
    plan.out_dims.s[0] = (cl_long)n_out;
    plan.out_strides.s[0] = (cl_long)splits;
    plan.red_dims.s[0] = (cl_long)splits;
    plan.red_strides.s[0] = 1;
    return plan;
}

/* How a plan runs: groups of `group` work-items, each taking tile_x consecutive outputs with
 * group / tile_x lanes per output, and each output's extent split between `splits` groups. */
typedef struct launch_shape {
    size_t group, groups;
    cl_uint tile_x;
    cl_ulong splits;
} launch_shape_t;

/* The largest power-of-two group the device runs, at most MAX_GROUP. */
static size_t largest_group(const opencl_device_t *device) {
    size_t most = 1, items[32] = {0};
    if (clGetDeviceInfo(device->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof most, &most, NULL) !=
        CL_SUCCESS)
        most = 1;
    if (clGetDeviceInfo(device->id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL) ==
            CL_SUCCESS &&
        items[0] > 0 && items[0] < most)
        most = items[0];
    size_t group = 1;
    while (group * 2 <= most && group * 2 <= MAX_GROUP) group *= 2;
    return group;
}

static cl_ulong power_of_two_above(cl_ulong n) {
    cl_ulong p = 1;
    while (p < n) p *= 2;
    return p;
}

static cl_ulong ceil_div(cl_ulong a, cl_ulong b) { return (a + b - 1) / b; }

static launch_shape_t shape_launch(const opencl_device_t *device, const reduction_plan_t *plan,
                                   bool may_split) {
    cl_ulong largest = largest_group(device), tile_x = 1;
    /* Outputs that are neighbours in memory share a group, so that its reads coalesce. */
    if (plan->out_rank > 0 && plan->out_strides.s[plan->out_rank - 1] == 1) {
        tile_x = power_of_two_above((cl_ulong)plan->out_dims.s[plan->out_rank - 1]);
        if (tile_x > 32) tile_x = 32;
        if (tile_x > largest) tile_x = largest;
    }
    /* Lanes beyond the reduced extent would idle: give the group more outputs instead, and
     * shrink it when there are not enough of either. */
    cl_ulong outputs = power_of_two_above(plan->n_out), extent = power_of_two_above(plan->n_red);
    while (tile_x < largest && largest / tile_x > extent && tile_x < outputs) tile_x *= 2;
    cl_ulong lanes = largest / tile_x;
    while (lanes > 1 && lanes / 2 >= plan->n_red) lanes /= 2;
    while (tile_x > 1 && tile_x / 2 >= plan->n_out) tile_x /= 2;
    cl_ulong tiles = ceil_div(plan->n_out, tile_x), splits = 1;
    /* Too few groups to fill the device, each with a long extent: split the extents. The
     * partial results stay few, fewer than twice `wanted` groups' worth. */
    cl_ulong wanted = 4 * (device->compute_units > 0 ? device->compute_units : 1);
    cl_ulong least = lanes * MIN_PER_LANE;
    if (may_split && tiles < wanted && plan->n_red > least) {
        splits = ceil_div(wanted, tiles);
        if (splits > ceil_div(plan->n_red, least)) splits = ceil_div(plan->n_red, least);
        if (splits > MAX_SPLITS) splits = MAX_SPLITS;
    }
    return (launch_shape_t){.group = (size_t)(tile_x * lanes),
                            .groups = (size_t)(tiles * splits),
                            .tile_x = (cl_uint)tile_x,
                            .splits = splits};
}

/* ---- Launching ------------------------------------------------------------------------------- */

/* A buffer for intermediate results; OpenCL keeps it while the commands queued with it run,
 * so the caller releases it right after queueing them. */
static cl_mem scratch_buffer(opencl_device_t *device, const char *what, size_t bytes,
                             tp_plugin_status_t *status) {
    cl_int error = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(device->context, CL_MEM_READ_WRITE, bytes, NULL, &error);
    if (mem == NULL || error != CL_SUCCESS) {
        opencl_fail(status, device, what, "clCreateBuffer", error);
        return NULL;
    }
    return mem;
}

/* Where a launch reads or writes: a buffer and a byte offset into it. */
typedef struct place {
    cl_mem mem; /* NULL for an empty tensor, which no kernel reads */
    cl_ulong offset;
} place_t;

/* Queues one pass of a reduce kernel over `plan` shaped as `shape`; the accumulator has
 * `accumulator_size` bytes; `extra` arguments follow the common ones. */
static bool launch_pass(tp_kernel_context_t *context, const char *what, int32_t id, place_t x,
                        place_t y, const reduction_plan_t *plan, const launch_shape_t *shape,
                        size_t accumulator_size, cl_int divide, cl_long count,
                        const opencl_arg_t *extra, size_t num_extra,
                        tp_plugin_status_t *status) {
    opencl_arg_t args[20] = {
        OPENCL_ARG(x.mem),          OPENCL_ARG(x.offset),
        OPENCL_ARG(y.mem),          OPENCL_ARG(y.offset),
        OPENCL_ARG(plan->n_out),    OPENCL_ARG(plan->n_red),
        OPENCL_ARG(shape->splits),  OPENCL_ARG(shape->tile_x),
        OPENCL_ARG(plan->out_rank), OPENCL_ARG(plan->out_dims),
        OPENCL_ARG(plan->out_strides), OPENCL_ARG(plan->red_rank),
        OPENCL_ARG(plan->red_dims), OPENCL_ARG(plan->red_strides),
        OPENCL_ARG(divide),         OPENCL_ARG(count),
        OPENCL_LOCAL(shape->group * accumulator_size),
    };
    size_t num_args = 17;
    for (size_t i = 0; i < num_extra && num_args < COUNT(args); i++) args[num_args++] = extra[i];
    return opencl_launch(context, what, id, args, num_args, shape->groups * shape->group,
                         shape->group, status);
}

/* Reduces `plan` from x into y with kernel `first` (given `extra`), through partial results
 * that kernel `second` reduces when the shape splits the extents. Mean divides by `count` in
 * the last pass only. */
static void reduce_into(tp_kernel_context_t *context, const char *what, int32_t first,
                        int32_t second, place_t x, place_t y, const reduction_plan_t *plan,
                        const launch_shape_t *shape, size_t accumulator_size, cl_int divide,
                        cl_long count, const opencl_arg_t *extra, size_t num_extra,
                        tp_plugin_status_t *status) {
    if (shape->splits == 1) {
        launch_pass(context, what, first, x, y, plan, shape, accumulator_size, divide, count,
                    extra, num_extra, status);
        return;
    }
    opencl_device_t *device = opencl_host->kernel_device(context);
    place_t partials = {
        scratch_buffer(device, what, plan->n_out * shape->splits * accumulator_size, status), 0};
    if (partials.mem == NULL) return;
    if (launch_pass(context, what, first, x, partials, plan, shape, accumulator_size, 0, count,
                    extra, num_extra, status)) {
        reduction_plan_t rest = plan_partials(plan->n_out, shape->splits);
        launch_shape_t rest_shape = shape_launch(device, &rest, false);
        launch_pass(context, what, second, partials, y, &rest, &rest_shape, accumulator_size,
                    divide, count, NULL, 0, status);
    }
    clReleaseMemObject(partials.mem);
}

/* ---- Sum, Mean, Max -------------------------------------------------------------------------- */

static void reduce(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const reduction_op_t *op = kernel;
    tp_tensor_view_t x, y;
    if (!opencl_input(context, 0, &x, status) || !opencl_output(context, 0, &y, status)) return;
    const int64_t *axes = NULL;
    int32_t num_axes = 0;
    opencl_host->kernel_attr_int_list(context, "axis", &axes, &num_axes, status);
    if (opencl_failed(status)) return;
    int32_t id = opencl_kernel_for(op->op, op->ids, y.dtype, context, status);
    if (id < 0 || y.num_elements == 0) return;
    opencl_device_t *device = opencl_host->kernel_device(context);
    /* No axes reduce them all, as on the CPU. */
    bool reduced[TP_MAX_RANK] = {false};
    for (int32_t d = 0; d < x.rank; d++) reduced[d] = num_axes == 0;
    for (int32_t i = 0; i < num_axes; i++) {
        int64_t axis = axes[i] < 0 ? axes[i] + x.rank : axes[i];
        if (axis < 0 || axis >= x.rank) {
            opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                    "%s on GPU:%d (%s): axis %lld is out of range for a tensor "
                                    "of rank %d",
                                    op->op, (int)device->ordinal, device->name,
                                    (long long)axes[i], (int)x.rank);
            return;
        }
        reduced[axis] = true;
    }
    reduction_plan_t plan = plan_reduction(&x, reduced);
    launch_shape_t shape = shape_launch(device, &plan, true);
    place_t from = {(cl_mem)x.mem, x.offset}, to = {(cl_mem)y.mem, y.offset};
    reduce_into(context, op->op, id, id, from, to, &plan, &shape, opencl_dtype_size(y.dtype),
                op->mean, (cl_long)plan.n_red, NULL, 0, status);
}

/* ---- Softmax --------------------------------------------------------------------------------- */

/* Rows that fit a group's extent run as one kernel; rows long enough to split take the rows'
 * maxima, then their sums of exp(x - max), each by a split reduction, then the outputs. */
static void softmax(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const reduction_op_t *op = kernel;
    tp_tensor_view_t x, y;
    if (!opencl_input(context, 0, &x, status) || !opencl_output(context, 0, &y, status)) return;
    int32_t id = opencl_kernel_for(op->op, op->ids, y.dtype, context, status);
    if (id < 0 || y.num_elements == 0) return;
    opencl_device_t *device = opencl_host->kernel_device(context);
    if (x.rank < 1) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "%s on GPU:%d (%s): logits must have rank >= 1", op->op,
                                (int)device->ordinal, device->name);
        return;
    }
    cl_ulong width = (cl_ulong)x.dims[x.rank - 1], rows = (cl_ulong)x.num_elements / width;
    reduction_plan_t plan = plan_partials(rows, width);
    launch_shape_t shape = shape_launch(device, &plan, true);
    /* The kernels compute float32 in double where the device has doubles. */
    tp_dtype_t math = device->has_fp64 ? TP_FLOAT64 : TP_FLOAT32;
    size_t size = opencl_dtype_size(y.dtype), math_size = opencl_dtype_size(math);
    place_t from = {(cl_mem)x.mem, x.offset}, to = {(cl_mem)y.mem, y.offset};
    if (shape.splits == 1) {
        const opencl_arg_t args[] = {OPENCL_ARG(from.mem), OPENCL_ARG(from.offset),
                                     OPENCL_ARG(to.mem),   OPENCL_ARG(to.offset),
                                     OPENCL_ARG(rows),     OPENCL_ARG(width),
                                     OPENCL_ARG(shape.tile_x),
                                     OPENCL_LOCAL(shape.group * math_size)};
        opencl_launch(context, op->op, id, args, COUNT(args), shape.groups * shape.group,
                      shape.group, status);
        return;
    }
    /* The rows' maxima, then their sums, in one buffer; the sums start 8-byte aligned. */
    size_t sums_at = (rows * size + 7) / 8 * 8;
    cl_mem rows_mem = scratch_buffer(device, op->op, sums_at + rows * math_size, status);
    if (rows_mem == NULL) return;
    place_t maxima = {rows_mem, 0}, sums = {rows_mem, sums_at};
    reduce_into(context, op->op, max_ids[y.dtype], max_ids[y.dtype], from, maxima, &plan,
                &shape, size, 0, 0, NULL, 0, status);
    const opencl_arg_t shift[] = {OPENCL_ARG(maxima.mem), OPENCL_ARG(maxima.offset)};
    if (!opencl_failed(status))
        reduce_into(context, op->op, softmax_sum_ids[y.dtype], sum_ids[math], from, sums, &plan,
                    &shape, math_size, 0, 0, shift, COUNT(shift), status);
    cl_ulong n = (cl_ulong)y.num_elements;
    const opencl_arg_t args[] = {OPENCL_ARG(from.mem),   OPENCL_ARG(from.offset),
                                 OPENCL_ARG(maxima.mem), OPENCL_ARG(maxima.offset),
                                 OPENCL_ARG(sums.mem),   OPENCL_ARG(sums.offset),
                                 OPENCL_ARG(to.mem),     OPENCL_ARG(to.offset),
                                 OPENCL_ARG(n),          OPENCL_ARG(width)};
    if (!opencl_failed(status))
        opencl_launch(context, op->op, softmax_scale_ids[y.dtype], args, COUNT(args), (size_t)n,
                      0, status);
    clReleaseMemObject(rows_mem);
}

/* ---- Registration ---------------------------------------------------------------------------- */

/* The id of reduction.cl's kernel <family>_<dtype> into ids[dtype]. */
static void take_id(int32_t *ids, const char *family, tp_dtype_t dtype,
                    tp_plugin_status_t *status) {
    if (opencl_failed(status)) return;
    char name[64];
    snprintf(name, sizeof name, "%s_%s", family, opencl_dtype_suffix(dtype));
    ids[dtype] = opencl_kernel_id("reduction", name, status);
}

void opencl_register_reduction_kernels(tp_registrar_t *registrar, bool fp64,
                                       tp_plugin_status_t *status) {
    for (int d = 0; d < OPENCL_NUM_DTYPES; d++)
        sum_ids[d] = max_ids[d] = min_ids[d] = prod_ids[d] = softmax_ids[d] =
            softmax_sum_ids[d] = softmax_scale_ids[d] = -1;
    /* float64 kernels only where some device has cl_khr_fp64. */
    tp_dtype_t numbers[4], floats[2];
    size_t num_numbers = 0, num_floats = 0;
    numbers[num_numbers++] = floats[num_floats++] = TP_FLOAT32;
    if (fp64) numbers[num_numbers++] = floats[num_floats++] = TP_FLOAT64;
    numbers[num_numbers++] = TP_INT32;
    numbers[num_numbers++] = TP_INT64;
    for (size_t i = 0; i < num_numbers; i++) {
        take_id(sum_ids, "reduce_sum", numbers[i], status);
        take_id(max_ids, "reduce_max", numbers[i], status);
        take_id(min_ids, "reduce_min", numbers[i], status);
        take_id(prod_ids, "reduce_prod", numbers[i], status);
    }
    for (size_t i = 0; i < num_floats; i++) {
        take_id(softmax_ids, "softmax", floats[i], status);
        take_id(softmax_sum_ids, "softmax_sum", floats[i], status);
        take_id(softmax_scale_ids, "softmax_scale", floats[i], status);
    }
    for (size_t i = 0; i < 3; i++)
        opencl_register(registrar, ops[i].op, "T", numbers, num_numbers, &ops[i], reduce, status);
    opencl_register(registrar, ops[3].op, "T", floats, num_floats, &ops[3], softmax, status);
    for (size_t i = 4; i < COUNT(ops); i++)
        opencl_register(registrar, ops[i].op, "T", numbers, num_numbers, &ops[i], reduce, status);
}
