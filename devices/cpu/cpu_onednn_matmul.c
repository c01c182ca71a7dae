/* SPDX-License-Identifier: Apache-2.0 */
/* float32 batches of matrix products (BatchMatMulV2) through oneDNN's matmul: on a batch of 256
 * 64x64 products it ran 1.8 times faster than a GEMM per product through OpenBLAS
 * (bench_compare, 2 cores). The batch is cut into slices of whole products that
 * cpu_parallel_for runs, oneDNN on one thread per slice, as the convolutions are (cpu_onednn.c
 * says why). A slice makes its primitive each call: oneDNN's own primitive cache hands back
 * one of a shape it has seen in microseconds, beside the milliseconds a batch worth slicing
 * takes. */
#include <dnnl_debug.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_onednn.h"

typedef struct {
    dnnl_engine_t engine;
    const float *x, *y;
    float *z;
    int64_t m, k, n;
    bool adj_x, adj_y;
    bool x_repeats, y_repeats; /* one matrix for every product */
    /* The first failure of any slice, reported by the calling thread. */
    _Atomic dnnl_status_t failure;
    const char *_Atomic failed_step;
} products_t;

/* A [count, rows, cols] operand as oneDNN reads it; stored transposed where `adj`. */
static dnnl_status_t operand_md(dnnl_memory_desc_t *md, int64_t count, int64_t rows,
                                int64_t cols, bool adj) {
    dnnl_dims_t dims = {count, rows, cols};
    dnnl_dims_t strides = {rows * cols, adj ? 1 : cols, adj ? rows : 1};
    return dnnl_memory_desc_init_by_strides(md, 3, dims, dnnl_f32, strides);
}

static void fail(products_t *job, dnnl_status_t status, const char *step) {
    dnnl_status_t none = dnnl_success;
    if (atomic_compare_exchange_strong(&job->failure, &none, status))
        atomic_store(&job->failed_step, step);
}

/* The slice's primitive, with the scratchpad left to the caller, which makes a primitive safe
 * to share between threads (a cached one is); NULL with `step` saying where it failed. */
static dnnl_status_t make_primitive(const products_t *job, const dnnl_memory_desc_t *x_md,
                                    const dnnl_memory_desc_t *y_md,
                                    const dnnl_memory_desc_t *z_md, dnnl_primitive_desc_t *pd,
                                    dnnl_primitive_t *primitive, const char **step) {
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    *step = "a matmul descriptor";
    dnnl_status_t status = dnnl_matmul_desc_init(&desc, x_md, y_md, NULL, z_md);
    if (status == dnnl_success) {
        *step = "primitive attributes";
        status = dnnl_primitive_attr_create(&attr);
    }
    if (status == dnnl_success)
        status = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (status == dnnl_success) {
        *step = "a matmul";
        status = dnnl_primitive_desc_create(pd, &desc, attr, job->engine, NULL);
    }
    if (status == dnnl_success) status = dnnl_primitive_create(primitive, *pd);
    dnnl_primitive_attr_destroy(attr);
    return status;
}

/* Memory object `index` of `memories` for `data` as `md` sees it. oneDNN takes a non-const
 * handle for inputs and outputs alike; inputs are only read. */
static dnnl_status_t wrap(const products_t *job, dnnl_memory_t *memories, int index,
                          const dnnl_memory_desc_t *md, const void *data) {
    return dnnl_memory_create(&memories[index], md, job->engine, (void *)(uintptr_t)data);
}

/* One slice's products on this thread: made, run, and let go. */
static void run_slice(products_t *job, int64_t first, int64_t count) {
    int64_t m = job->m, k = job->k, n = job->n;
    dnnl_memory_desc_t x_md, y_md, z_md;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t primitive = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t memories[4] = {NULL, NULL, NULL, NULL}; /* x, y, z, scratchpad */
    unsigned char *scratch = NULL;
    const char *step = "the operands' descriptors";
    dnnl_status_t status = operand_md(&x_md, job->x_repeats ? 1 : count, m, k, job->adj_x);
    if (status == dnnl_success)
        status = operand_md(&y_md, job->y_repeats ? 1 : count, k, n, job->adj_y);
    if (status == dnnl_success) status = operand_md(&z_md, count, m, n, false);
    if (status == dnnl_success)
        status = make_primitive(job, &x_md, &y_md, &z_md, &pd, &primitive, &step);
    if (status != dnnl_success) goto done;

    step = "scratch space";
    const dnnl_memory_desc_t *scratch_md =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t scratch_bytes = scratch_md != NULL ? dnnl_memory_desc_get_size(scratch_md) : 0;
    if (scratch_bytes > 0) {
        size_t page = CPU_ONEDNN_SCRATCH_ALIGNMENT;
        scratch = aligned_alloc(page, (scratch_bytes + page - 1) / page * page);
        status = scratch == NULL ? dnnl_out_of_memory : wrap(job, memories, 3, scratch_md, scratch);
        if (status != dnnl_success) goto done;
    }
    step = "memory objects";
    status = wrap(job, memories, 0, &x_md, job->x + (job->x_repeats ? 0 : first * m * k));
    if (status == dnnl_success)
        status = wrap(job, memories, 1, &y_md, job->y + (job->y_repeats ? 0 : first * k * n));
    if (status == dnnl_success) status = wrap(job, memories, 2, &z_md, job->z + first * m * n);
    if (status == dnnl_success) {
        step = "a stream";
        status = dnnl_stream_create(&stream, job->engine, dnnl_stream_default_flags);
    }
    if (status == dnnl_success) {
        step = "the execution";
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, memories[0]},
                                   {DNNL_ARG_WEIGHTS, memories[1]},
                                   {DNNL_ARG_DST, memories[2]},
                                   {DNNL_ARG_SCRATCHPAD, memories[3]}};
        status = dnnl_primitive_execute(primitive, stream, memories[3] != NULL ? 4 : 3, args);
        if (status == dnnl_success) status = dnnl_stream_wait(stream);
    }
done:
    if (status != dnnl_success) fail(job, status, step);
    dnnl_stream_destroy(stream);
    for (int i = 0; i < 4; i++) dnnl_memory_destroy(memories[i]);
    free(scratch);
    dnnl_primitive_destroy(primitive);
    dnnl_primitive_desc_destroy(pd);
}

static void run_products(void *arg, int64_t first, int64_t end) {
    /* One OpenMP thread, set before the primitive is made (oneDNN divides the work among the
     * threads it sees then), and the thread's setting put back. */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    run_slice(arg, first, end - first);
    omp_set_num_threads(threads);
}

/* Whether the batch dimensions of `operand` are those of the output (the products walk it
 * matrix by matrix) or hold one matrix (repeated for every product). */
static bool batch_is_whole(const tp_tensor_view_t *operand, const tp_tensor_view_t *out) {
    if (operand->rank != out->rank) return false;
    for (int32_t d = 0; d < out->rank - 2; d++)
        if (operand->dims[d] != out->dims[d]) return false;
    return true;
}

static bool batch_is_one(const tp_tensor_view_t *operand) {
    for (int32_t d = 0; d < operand->rank - 2; d++)
        if (operand->dims[d] != 1) return false;
    return true;
}

bool cpu_onednn_batch_matmul(const cpu_tensor_t *x, const cpu_tensor_t *y, cpu_tensor_t *z,
                             bool adj_x, bool adj_y, tp_plugin_status_t *status) {
    bool x_repeats = batch_is_one(&x->view), y_repeats = batch_is_one(&y->view);
    if (z->view.dtype != TP_FLOAT32 || !(x_repeats || batch_is_whole(&x->view, &z->view)) ||
        !(y_repeats || batch_is_whole(&y->view, &z->view)))
        return false; /* batch dimensions broadcast against each other: a GEMM per product */
    dnnl_engine_t engine = cpu_onednn_engine("BatchMatMulV2", status);
    if (engine == NULL) return true;
    const int64_t *zm = z->view.dims + z->view.rank - 2, *xm = x->view.dims + x->view.rank - 2;
    products_t job = {.engine = engine, .x = x->data, .y = y->data, .z = z->data, .m = zm[0],
                      .k = adj_x ? xm[0] : xm[1], .n = zm[1], .adj_x = adj_x, .adj_y = adj_y,
                      .x_repeats = x_repeats, .y_repeats = y_repeats};
    atomic_init(&job.failure, dnnl_success);
    atomic_init(&job.failed_step, "");
    int64_t products = z->view.num_elements / (job.m * job.n);
    /* A product's cost in cpu_parallel_for's units (about an element-wise operation): its
     * multiply-adds over 16, as a convolution's. */
    int64_t cost = job.m * job.n * job.k / 16;
    cpu_parallel_for(products, cost > 0 ? cost : 1, run_products, &job);
    dnnl_status_t failure = atomic_load(&job.failure);
    if (failure != dnnl_success)
        tp_cpu_host->status_set(status, failure == dnnl_out_of_memory ? TP_RESOURCE_EXHAUSTED
                                                                      : TP_INTERNAL,
                                "BatchMatMulV2: oneDNN failed at %s for %lld products of "
                                "%lldx%lld by %lldx%lld: %s",
                                atomic_load(&job.failed_step), (long long)products,
                                (long long)job.m, (long long)job.k, (long long)job.k,
                                (long long)job.n, dnnl_status2str(failure));
    return true;
}
