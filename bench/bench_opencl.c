/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL plug-in on GPU:0, each figure beside a baseline measured in the same run on the
 * same OpenCL device, called directly with the plain OpenCL API and CLBlast:
 * - dispatch: a chain of small Neg ops against bare clEnqueueNDRangeKernel calls of the same
 *   kernel on one in-order queue;
 * - host<->device bandwidth: a tensor made on the host and moved to GPU:0 by an Identity
 *   there, then read back, against clEnqueueWriteBuffer and clEnqueueReadBuffer;
 * - SGEMM: tp_matmul against CLBlastSgemm;
 * - a chain of 8 element-wise ops, eager, traced without the plug-in's fusion pass, and traced
 *   with it: one OpenCLFusedElementwise kernel.
 * Runs on whatever device the plug-in offers as GPU:0 (TP_OPENCL_DEVICE_TYPES=cpu: PoCL's). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

#define GPU "/device:GPU:0"

static double min_of(double a, double b) { return a < b ? a : b; }

static void cl_check(cl_int error, const char *call) {
    if (error == CL_SUCCESS) return;
    fprintf(stderr, "bench_opencl: %s failed: OpenCL error %d\n", call, (int)error);
    exit(1);
}

static void *checked_malloc(size_t size) {
    void *p = malloc(size);
    if (p == NULL) {
        fprintf(stderr, "bench_opencl: out of host memory for %zu bytes\n", size);
        exit(1);
    }
    return p;
}

static float *filled_floats(size_t count) {
    float *values = checked_malloc(count * sizeof *values);
    for (size_t i = 0; i < count; i++) values[i] = (float)(i % 7) * 0.25f - 0.5f;
    return values;
}

/* The op ran where the benchmark asked: a figure for an op that fell back to the CPU would be
 * the CPU's. */
static bool on_gpu(const tp_tensor_t *t) {
    size_t length = strlen(tp_tensor_device(t)), suffix = strlen(GPU);
    return length >= suffix && strcmp(tp_tensor_device(t) + length - suffix, GPU) == 0;
}

/* A host array as a tensor on GPU:0: made on the host, then copied by an Identity there. */
static tp_tensor_t *on_device(tp_context_t *context, const float *values, tp_shape_t shape,
                              size_t count) {
    tp_tensor_t *host, *device;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, shape, values, count * sizeof *values, &host));
    TP_CHECK(tp_identity(context, host, &device));
    tp_tensor_release(host);
    TP_CHECK(tp_tensor_wait(device));
    if (!on_gpu(device)) {
        fprintf(stderr, "bench_opencl: Identity ran on %s, not on GPU:0\n",
                tp_tensor_device(device));
        exit(1);
    }
    return device;
}

/* ---- The same device, opened directly ------------------------------------------------------- */

typedef struct direct {
    cl_device_id device;
    cl_context context;
    cl_command_queue queue; /* in order, as the plug-in's streams are */
} direct_t;

static int by_platform_name(const void *a, const void *b) {
    char name_a[256] = "", name_b[256] = "";
    clGetPlatformInfo(*(const cl_platform_id *)a, CL_PLATFORM_NAME, sizeof name_a - 1, name_a,
                      NULL);
    clGetPlatformInfo(*(const cl_platform_id *)b, CL_PLATFORM_NAME, sizeof name_b - 1, name_b,
                      NULL);
    return strcmp(name_a, name_b);
}

/* GPU:0's OpenCL device: the first with its name and vendor, platforms sorted by name as the
 * plug-in sorts them when it numbers its devices. */
static cl_device_id find_device(const char *name, const char *vendor) {
    cl_uint num_platforms = 0;
    cl_check(clGetPlatformIDs(0, NULL, &num_platforms), "clGetPlatformIDs");
    cl_platform_id *platforms = checked_malloc(num_platforms * sizeof *platforms);
    cl_check(clGetPlatformIDs(num_platforms, platforms, NULL), "clGetPlatformIDs");
    qsort(platforms, num_platforms, sizeof *platforms, by_platform_name);
    cl_device_id found = NULL;
    for (cl_uint p = 0; p < num_platforms && found == NULL; p++) {
        cl_device_id ids[64];
        cl_uint count = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 64, ids, &count) != CL_SUCCESS)
            continue;
        for (cl_uint i = 0; i < count && i < 64 && found == NULL; i++) {
            char device_name[256] = "", device_vendor[256] = "";
            clGetDeviceInfo(ids[i], CL_DEVICE_NAME, sizeof device_name - 1, device_name, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_VENDOR, sizeof device_vendor - 1, device_vendor,
                            NULL);
            if (strcmp(device_name, name) == 0 && strcmp(device_vendor, vendor) == 0)
                found = ids[i];
        }
    }
    free(platforms);
    if (found == NULL) {
        fprintf(stderr, "bench_opencl: no OpenCL device named '%s' by '%s', which the plug-in "
                        "offers as GPU:0\n", name, vendor);
        exit(1);
    }
    return found;
}

static direct_t open_direct(const char *name, const char *vendor) {
    direct_t direct = {.device = find_device(name, vendor)};
    cl_int error;
    direct.context = clCreateContext(NULL, 1, &direct.device, NULL, NULL, &error);
    cl_check(error, "clCreateContext");
    direct.queue = clCreateCommandQueue(direct.context, direct.device, 0, &error);
    cl_check(error, "clCreateCommandQueue");
    return direct;
}

static void close_direct(direct_t *direct) {
    clReleaseCommandQueue(direct->queue);
    clReleaseContext(direct->context);
}

static cl_mem buffer(const direct_t *direct, size_t size) {
    cl_int error;
    cl_mem mem = clCreateBuffer(direct->context, CL_MEM_READ_WRITE, size, NULL, &error);
    cl_check(error, "clCreateBuffer");
    return mem;
}

/* ---- 1. Dispatch cost per op ---------------------------------------------------------------- */

enum { CHAIN_OPS = 10000, CHAIN_ELEMENTS = 256, DISPATCH_REPEATS = 5 };

/* The plug-in's Neg for float32 (kernels/elementwise.cl), arguments and all. */
static const char *const neg_source =
    "__kernel void neg_float32(__global const char *x_base, ulong x_offset,\n"
    "                          __global char *y_base, ulong y_offset, ulong n) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    float x = ((__global const float *)(x_base + x_offset))[i];\n"
    "    ((__global float *)(y_base + y_offset))[i] = -x;\n"
    "}\n";

/* Seconds for CHAIN_OPS kernels, each reading the last one's output: two kernel objects whose
 * arguments are set once, x -> y and y -> x, so that the loop is clEnqueueNDRangeKernel alone. */
static double direct_chain_seconds(const direct_t *direct, cl_kernel forth, cl_kernel back) {
    size_t global = CHAIN_ELEMENTS;
    double start = now_seconds();
    for (int i = 0; i < CHAIN_OPS; i++)
        cl_check(clEnqueueNDRangeKernel(direct->queue, i % 2 == 0 ? forth : back, 1, NULL,
                                        &global, NULL, 0, NULL, NULL),
                 "clEnqueueNDRangeKernel");
    cl_check(clFinish(direct->queue), "clFinish");
    return now_seconds() - start;
}

static double eager_chain_seconds(tp_context_t *context, tp_tensor_t *x) {
    tp_tensor_t *value = tp_tensor_retain(x);
    double start = now_seconds();
    for (int i = 0; i < CHAIN_OPS; i++) {
        tp_tensor_t *next;
        TP_CHECK(tp_neg(context, value, &next));
        tp_tensor_release(value);
        value = next;
    }
    TP_CHECK(tp_tensor_wait(value));
    double seconds = now_seconds() - start;
    /* An even number of negations gives x back. */
    float got[CHAIN_ELEMENTS], want[CHAIN_ELEMENTS];
    TP_CHECK(tp_tensor_read(value, got, sizeof got));
    TP_CHECK(tp_tensor_read(x, want, sizeof want));
    if (!on_gpu(value) || memcmp(got, want, sizeof got) != 0) {
        fprintf(stderr, "bench_opencl: the Neg chain ran on %s and gave %g for %g\n",
                tp_tensor_device(value), got[1], want[1]);
        exit(1);
    }
    tp_tensor_release(value);
    return seconds;
}

static void bench_dispatch(tp_context_t *context, const direct_t *direct) {
    cl_int error;
    const char *source = neg_source;
    cl_program program = clCreateProgramWithSource(direct->context, 1, &source, NULL, &error);
    cl_check(error, "clCreateProgramWithSource");
    cl_check(clBuildProgram(program, 1, &direct->device, "-cl-std=CL1.2", NULL, NULL),
             "clBuildProgram");
    cl_kernel forth = clCreateKernel(program, "neg_float32", &error);
    cl_check(error, "clCreateKernel");
    cl_kernel back = clCreateKernel(program, "neg_float32", &error);
    cl_check(error, "clCreateKernel");
    cl_mem x = buffer(direct, CHAIN_ELEMENTS * sizeof(float));
    cl_mem y = buffer(direct, CHAIN_ELEMENTS * sizeof(float));
    cl_ulong zero = 0, n = CHAIN_ELEMENTS;
    cl_check(clSetKernelArg(forth, 0, sizeof x, &x), "clSetKernelArg");
    cl_check(clSetKernelArg(forth, 1, sizeof zero, &zero), "clSetKernelArg");
    cl_check(clSetKernelArg(forth, 2, sizeof y, &y), "clSetKernelArg");
    cl_check(clSetKernelArg(forth, 3, sizeof zero, &zero), "clSetKernelArg");
    cl_check(clSetKernelArg(forth, 4, sizeof n, &n), "clSetKernelArg");
    cl_check(clSetKernelArg(back, 0, sizeof y, &y), "clSetKernelArg");
    cl_check(clSetKernelArg(back, 1, sizeof zero, &zero), "clSetKernelArg");
    cl_check(clSetKernelArg(back, 2, sizeof x, &x), "clSetKernelArg");
    cl_check(clSetKernelArg(back, 3, sizeof zero, &zero), "clSetKernelArg");
    cl_check(clSetKernelArg(back, 4, sizeof n, &n), "clSetKernelArg");

    float *values = filled_floats(CHAIN_ELEMENTS);
    tp_tensor_t *t = on_device(context, values, TP_SHAPE(CHAIN_ELEMENTS), CHAIN_ELEMENTS);
    cl_check(clEnqueueWriteBuffer(direct->queue, x, CL_TRUE, 0, CHAIN_ELEMENTS * sizeof(float),
                                  values, 0, NULL, NULL),
             "clEnqueueWriteBuffer");
    free(values);
    /* Not timed: builds the programs, grows the allocator, warms the queues. */
    (void)direct_chain_seconds(direct, forth, back);
    (void)eager_chain_seconds(context, t);

    double bare = 1e30, eager = 1e30;
    for (int r = 0; r < DISPATCH_REPEATS; r++) {
        bare = min_of(bare, direct_chain_seconds(direct, forth, back));
        eager = min_of(eager, eager_chain_seconds(context, t));
    }
    double bare_us = bare * 1e6 / CHAIN_OPS, eager_us = eager * 1e6 / CHAIN_OPS;
    printf("1. dispatch: a chain of %d Neg ops on %d float32 (best of %d)\n", CHAIN_OPS,
           CHAIN_ELEMENTS, DISPATCH_REPEATS);
    printf("  %-52s %9.2f us/op\n", "baseline: bare clEnqueueNDRangeKernel, one clFinish",
           bare_us);
    printf("  %-52s %9.2f us/op\n", "tp_neg on GPU:0, eager", eager_us);
    printf("  %-52s %9.2f us/op   (goal: under 1 us)\n", "added by tensorplug",
           eager_us - bare_us);

    tp_tensor_release(t);
    clReleaseMemObject(x);
    clReleaseMemObject(y);
    clReleaseKernel(forth);
    clReleaseKernel(back);
    clReleaseProgram(program);
}

/* ---- 2. Host <-> device bandwidth ------------------------------------------------------------ */

enum { BANDWIDTH_ELEMENTS = 16 << 20, BANDWIDTH_REPEATS = 5 }; /* 64 MiB of float32 */

static double gb_per_second(double seconds) {
    return (double)BANDWIDTH_ELEMENTS * sizeof(float) / seconds * 1e-9;
}

static void bench_bandwidth(tp_context_t *context, const direct_t *direct) {
    const size_t bytes = BANDWIDTH_ELEMENTS * sizeof(float);
    float *values = filled_floats(BANDWIDTH_ELEMENTS);
    float *back = checked_malloc(bytes);
    memset(back, 0, bytes); /* its pages are mapped before any read is timed */
    cl_mem mem = buffer(direct, bytes);
    const tp_shape_t shape = TP_SHAPE(BANDWIDTH_ELEMENTS);

    /* The first of each is not timed: it grows the allocators and maps the buffer. */
    double write = 1e30, read = 1e30, create = 1e30, stage = 1e30, device_copy = 1e30;
    double create_and_stage = 1e30, tp_read = 1e30;
    for (int r = 0; r <= BANDWIDTH_REPEATS; r++) {
        double start = now_seconds();
        cl_check(clEnqueueWriteBuffer(direct->queue, mem, CL_TRUE, 0, bytes, values, 0, NULL,
                                      NULL),
                 "clEnqueueWriteBuffer");
        double direct_write = now_seconds() - start;
        start = now_seconds();
        cl_check(clEnqueueReadBuffer(direct->queue, mem, CL_TRUE, 0, bytes, back, 0, NULL,
                                     NULL),
                 "clEnqueueReadBuffer");
        double direct_read = now_seconds() - start;

        tp_tensor_t *host, *device, *copy;
        start = now_seconds();
        TP_CHECK(tp_tensor_create(context, TP_FLOAT32, shape, values, bytes, &host));
        double created = now_seconds();
        TP_CHECK(tp_identity(context, host, &device));
        TP_CHECK(tp_tensor_wait(device));
        double staged = now_seconds();
        /* The Identity's own copy, from GPU:0 to GPU:0, to take out of the one above. */
        TP_CHECK(tp_identity(context, device, &copy));
        TP_CHECK(tp_tensor_wait(copy));
        double copied = now_seconds();
        TP_CHECK(tp_tensor_read(copy, back, bytes));
        double read_back = now_seconds() - copied;
        if (!on_gpu(device) || !on_gpu(copy) || memcmp(back, values, bytes) != 0) {
            fprintf(stderr, "bench_opencl: the Identity on %s did not give its input back\n",
                    tp_tensor_device(copy));
            exit(1);
        }
        tp_tensor_release(host);
        tp_tensor_release(device);
        tp_tensor_release(copy);
        if (r == 0) continue;
        write = min_of(write, direct_write);
        read = min_of(read, direct_read);
        create = min_of(create, created - start);
        stage = min_of(stage, staged - created);
        create_and_stage = min_of(create_and_stage, staged - start);
        device_copy = min_of(device_copy, copied - staged);
        tp_read = min_of(tp_read, read_back);
    }
    double to_device = create_and_stage - device_copy, tensor_to_device = stage - device_copy;
    printf("2. host<->device bandwidth, %zu MiB of float32 (best of %d)\n", bytes >> 20,
           BANDWIDTH_REPEATS);
    printf("  %-52s %9.2f GB/s\n", "baseline: clEnqueueWriteBuffer", gb_per_second(write));
    printf("  %-52s %9.2f GB/s   (%.0f%%; goal: at least 90%%)\n",
           "tp_tensor_create + Identity on GPU:0, less its copy", gb_per_second(to_device),
           100.0 * write / to_device);
    printf("  %-52s %9.2f GB/s   (%.0f%%)\n", "  host tensor -> GPU:0 alone (the Identity's input)",
           gb_per_second(tensor_to_device), 100.0 * write / tensor_to_device);
    printf("  %-52s %9.2f GB/s\n", "  tp_tensor_create alone (into a host tensor)",
           gb_per_second(create));
    printf("  %-52s %9.2f ms\n", "  the Identity's own GPU:0 copy, subtracted",
           device_copy * 1e3);
    printf("  %-52s %9.2f GB/s\n", "baseline: clEnqueueReadBuffer", gb_per_second(read));
    printf("  %-52s %9.2f GB/s   (%.0f%%; goal: at least 90%%)\n", "tp_tensor_read from GPU:0",
           gb_per_second(tp_read), 100.0 * read / tp_read);
    clReleaseMemObject(mem);
    free(values);
    free(back);
}

/* ---- 3. SGEMM ------------------------------------------------------------------------------- */

/* The runs of one size stop after this many seconds in all, once each way has run twice:
 * PoCL's 2048 takes a second a run, a GPU's a few milliseconds. */
#define SGEMM_SECONDS 4.0
enum { SGEMM_MIN_RUNS = 2, SGEMM_MAX_RUNS = 10 };

static double gflops(double seconds, int n) { return 2.0 * n * (double)n * n / seconds * 1e-9; }

static double clblast_seconds(const direct_t *direct, int n, cl_mem a, cl_mem b, cl_mem c) {
    cl_command_queue queue = direct->queue;
    double start = now_seconds();
    CLBlastStatusCode code =
        CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)n,
                     (size_t)n, (size_t)n, 1.0f, a, 0, (size_t)n, b, 0, (size_t)n, 0.0f, c, 0,
                     (size_t)n, &queue, NULL);
    if (code != CLBlastSuccess) {
        fprintf(stderr, "bench_opencl: CLBlastSgemm of %d x %d failed: %d\n", n, n, (int)code);
        exit(1);
    }
    cl_check(clFinish(queue), "clFinish");
    return now_seconds() - start;
}

/* Seconds for a product on GPU:0, its result in *out; 0 and no result, with a line saying
 * why, when the MatMul did not run there. */
static double matmul_seconds(tp_context_t *context, tp_tensor_t *a, tp_tensor_t *b,
                             tp_tensor_t **out) {
    *out = NULL;
    double start = now_seconds();
    tp_tensor_t *c;
    tp_status_t *error = tp_matmul(context, a, b, false, false, &c);
    if (error == NULL) error = tp_tensor_wait(c);
    double seconds = now_seconds() - start;
    if (error != NULL) {
        printf("  tp_matmul on GPU:0 failed: %s\n", tp_status_message(error));
        tp_status_free(error);
        return 0;
    }
    if (!on_gpu(c)) {
        printf("  tp_matmul ran on %s, not on GPU:0: no figure for it\n", tp_tensor_device(c));
        tp_tensor_release(c);
        return 0;
    }
    *out = c;
    return seconds;
}

static bool more_runs(int runs, double spent) {
    return runs < SGEMM_MIN_RUNS || (runs < SGEMM_MAX_RUNS && spent < SGEMM_SECONDS);
}

static void bench_sgemm(tp_context_t *context, const direct_t *direct, int n) {
    size_t count = (size_t)n * (size_t)n, bytes = count * sizeof(float);
    float *values = filled_floats(count);
    tp_tensor_t *a = on_device(context, values, TP_SHAPE(n, n), count);
    tp_tensor_t *b = on_device(context, values, TP_SHAPE(n, n), count);
    cl_mem a_mem = buffer(direct, bytes), b_mem = buffer(direct, bytes);
    cl_mem c_mem = buffer(direct, bytes);
    cl_check(clEnqueueWriteBuffer(direct->queue, a_mem, CL_TRUE, 0, bytes, values, 0, NULL, NULL),
             "clEnqueueWriteBuffer");
    cl_check(clEnqueueWriteBuffer(direct->queue, b_mem, CL_TRUE, 0, bytes, values, 0, NULL, NULL),
             "clEnqueueWriteBuffer");

    /* The first of each is not timed: CLBlast compiles its kernels for a context then. The
     * runs alternate, so that a change in the machine's load falls on both alike. */
    (void)clblast_seconds(direct, n, a_mem, b_mem, c_mem);
    tp_tensor_t *c = NULL;
    bool placed = matmul_seconds(context, a, b, &c) > 0;
    double direct_best = 1e30, tp_best = 1e30, spent = 0;
    int runs = 0;
    for (; more_runs(runs, spent); runs++) {
        double t = clblast_seconds(direct, n, a_mem, b_mem, c_mem);
        direct_best = min_of(direct_best, t);
        spent += t;
        if (!placed) continue;
        tp_tensor_release(c);
        t = matmul_seconds(context, a, b, &c);
        placed = c != NULL;
        if (placed) tp_best = min_of(tp_best, t);
        spent += t;
    }
    printf("  n=%-5d %-42s %9.1f GFLOP/s   (best of %d)\n", n, "baseline: CLBlastSgemm",
           gflops(direct_best, n), runs);
    if (c != NULL) {
        /* Both are CLBlast's kernel on one device: the products agree to rounding. */
        float *got = checked_malloc(bytes), *want = checked_malloc(bytes);
        TP_CHECK(tp_tensor_read(c, got, bytes));
        cl_check(clEnqueueReadBuffer(direct->queue, c_mem, CL_TRUE, 0, bytes, want, 0, NULL, NULL),
                 "clEnqueueReadBuffer");
        for (size_t i = 0; i < count; i++) {
            if (fabsf(got[i] - want[i]) > 1e-4f * (1.0f + fabsf(want[i]))) {
                fprintf(stderr, "bench_opencl: tp_matmul gives %g at %zu, CLBlastSgemm %g\n",
                        got[i], i, want[i]);
                exit(1);
            }
        }
        free(got);
        free(want);
        tp_tensor_release(c);
        printf("  n=%-5d %-42s %9.1f GFLOP/s   (best of %d; %.0f%%; goal: at least 95%%)\n", n,
               "tp_matmul on GPU:0", gflops(tp_best, n), runs, 100.0 * direct_best / tp_best);
    }
    clReleaseMemObject(a_mem);
    clReleaseMemObject(b_mem);
    clReleaseMemObject(c_mem);
    tp_tensor_release(a);
    tp_tensor_release(b);
    free(values);
}

/* ---- 4. A chain of 8 element-wise ops -------------------------------------------------------- */

enum { ELEMENTWISE_ELEMENTS = 1 << 20, ELEMENTWISE_OPS = 8, ELEMENTWISE_REPEATS = 10 };

/* The chain measured: 8 ops, every intermediate a tensor of its own when unfused. The cheap
 * one, relu(square(x * (|-x| + x)) - x) negated twice, is what fusion is for: memory-bound
 * ops. The transcendental one, sigmoid(tanh(square(relu(x * (|-x| + x))))), is bound by its
 * two functions' arithmetic, which fusing does not change. */
typedef enum chain_kind { CHEAP_CHAIN, TRANSCENDENTAL_CHAIN } chain_kind_t;

static tp_status_t *elementwise_chain(tp_context_t *context, chain_kind_t kind, tp_tensor_t *x,
                                      tp_tensor_t **out) {
    tp_tensor_t *v[ELEMENTWISE_OPS] = {NULL};
    tp_status_t *error = tp_neg(context, x, &v[0]);
    if (error == NULL) error = tp_abs(context, v[0], &v[1]);
    if (error == NULL) error = tp_add(context, v[1], x, &v[2]);
    if (error == NULL) error = tp_mul(context, v[2], x, &v[3]);
    if (kind == CHEAP_CHAIN) {
        if (error == NULL) error = tp_square(context, v[3], &v[4]);
        if (error == NULL) error = tp_sub(context, v[4], x, &v[5]);
        if (error == NULL) error = tp_relu(context, v[5], &v[6]);
        if (error == NULL) error = tp_neg(context, v[6], &v[7]);
    } else {
        if (error == NULL) error = tp_relu(context, v[3], &v[4]);
        if (error == NULL) error = tp_square(context, v[4], &v[5]);
        if (error == NULL) error = tp_tanh(context, v[5], &v[6]);
        if (error == NULL) error = tp_sigmoid(context, v[6], &v[7]);
    }
    for (int i = 0; i < ELEMENTWISE_OPS - 1; i++) tp_tensor_release(v[i]);
    if (error == NULL) *out = v[ELEMENTWISE_OPS - 1];
    return error;
}

static tp_status_t *elementwise_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                     size_t num_inputs, tp_tensor_t **outputs,
                                     size_t num_outputs, void *user_data) {
    (void)num_inputs;
    (void)num_outputs;
    tp_status_t *error = tp_device_push(context, GPU);
    if (error != NULL) return error;
    error = elementwise_chain(context, *(const chain_kind_t *)user_data, inputs[0], &outputs[0]);
    tp_status_t *popped = tp_device_pop(context);
    if (error == NULL) return popped;
    tp_status_free(popped);
    return error;
}

static double eager_elementwise_seconds(tp_context_t *context, chain_kind_t kind, tp_tensor_t *x,
                                        tp_tensor_t **out) {
    double start = now_seconds();
    TP_CHECK(elementwise_chain(context, kind, x, out));
    TP_CHECK(tp_tensor_wait(*out));
    return now_seconds() - start;
}

static double traced_elementwise_seconds(tp_function_t *function, tp_tensor_t *x,
                                         tp_tensor_t **out) {
    double start = now_seconds();
    TP_CHECK(tp_function_call(function, &x, 1, out, 1));
    TP_CHECK(tp_tensor_wait(*out));
    return now_seconds() - start;
}

/* The chain as a function traced with the plug-in's graph passes on or off; exits when the
 * fusion pass did not fuse the chain it is measured on. */
static tp_function_t *traced_chain(tp_context_t *context, const chain_kind_t *kind,
                                   tp_tensor_t *x, bool fused) {
    uint32_t passes = tp_context_graph_passes(context);
    TP_CHECK(tp_context_set_graph_passes(context, TP_PASS_PLUGINS, fused));
    tp_function_t *function;
    TP_CHECK(tp_function_create(context, fused ? "fused_chain" : "unfused_chain",
                                elementwise_body, 1, (void *)kind, &function));
    char *text = NULL;
    size_t size = 0;
    FILE *graph = open_memstream(&text, &size);
    if (graph == NULL) exit(1);
    TP_CHECK(tp_function_write_graph(function, &x, 1, TP_GRAPH_TEXT, graph));
    fclose(graph);
    if ((strstr(text, "OpenCLFusedElementwise(") != NULL) != fused) {
        fprintf(stderr, "bench_opencl: the chain traced with fusion %s:\n%s",
                fused ? "on was not fused" : "off was fused", text);
        exit(1);
    }
    free(text);
    TP_CHECK(tp_context_set_graph_passes(context, TP_PASS_PLUGINS,
                                         (passes & TP_PASS_PLUGINS) != 0));
    return function;
}

static void bench_elementwise(tp_context_t *context, chain_kind_t kind) {
    const size_t bytes = ELEMENTWISE_ELEMENTS * sizeof(float);
    float *values = filled_floats(ELEMENTWISE_ELEMENTS);
    tp_tensor_t *x = on_device(context, values, TP_SHAPE(ELEMENTWISE_ELEMENTS),
                               ELEMENTWISE_ELEMENTS);
    tp_function_t *unfused = traced_chain(context, &kind, x, false);
    tp_function_t *fused = traced_chain(context, &kind, x, true);
    /* Not timed: builds the programs. All three agree bit for bit: the fused kernel calls the
     * element functions the unfused kernels call. */
    tp_tensor_t *y[3];
    (void)eager_elementwise_seconds(context, kind, x, &y[0]);
    (void)traced_elementwise_seconds(unfused, x, &y[1]);
    (void)traced_elementwise_seconds(fused, x, &y[2]);
    float *expected = checked_malloc(bytes), *got = checked_malloc(bytes);
    TP_CHECK(tp_tensor_read(y[0], expected, bytes));
    for (int k = 0; k < 3; k++) {
        TP_CHECK(tp_tensor_read(y[k], got, bytes));
        if (!on_gpu(y[k]) || memcmp(expected, got, bytes) != 0) {
            fprintf(stderr, "bench_opencl: the chain run %s on %s differs from eager\n",
                    k == 1 ? "unfused" : "fused", tp_tensor_device(y[k]));
            exit(1);
        }
        tp_tensor_release(y[k]);
    }
    free(expected);
    free(got);

    double eager = 1e30, traced = 1e30, traced_fused = 1e30;
    for (int r = 0; r < ELEMENTWISE_REPEATS; r++) {
        tp_tensor_t *out;
        eager = min_of(eager, eager_elementwise_seconds(context, kind, x, &out));
        tp_tensor_release(out);
        traced = min_of(traced, traced_elementwise_seconds(unfused, x, &out));
        tp_tensor_release(out);
        traced_fused = min_of(traced_fused, traced_elementwise_seconds(fused, x, &out));
        tp_tensor_release(out);
    }
    printf("  %s, %s\n", kind == CHEAP_CHAIN ? "8 cheap ops" : "6 cheap ops, Tanh and Sigmoid",
           kind == CHEAP_CHAIN ? "bound by memory" : "bound by the two functions' arithmetic");
    printf("    %-50s %9.3f ns/element\n", "baseline: eager, unfused",
           eager * 1e9 / ELEMENTWISE_ELEMENTS);
    printf("    %-50s %9.3f ns/element   (%.2fx eager)\n", "traced function, unfused",
           traced * 1e9 / ELEMENTWISE_ELEMENTS, traced / eager);
    printf("    %-50s %9.3f ns/element   (%.2fx faster than unfused%s)\n",
           "traced function, fused into one kernel", traced_fused * 1e9 / ELEMENTWISE_ELEMENTS,
           traced / traced_fused, kind == CHEAP_CHAIN ? "; goal: at least 3x" : "");
    tp_function_destroy(unfused);
    tp_function_destroy(fused);
    tp_tensor_release(x);
    free(values);
}

/* ---- Main ------------------------------------------------------------------------------------ */

/* One line saying why there is no GPU:0, and the process ends well: a machine without an
 * OpenCL device has nothing to measure. */
static bool explain_missing_gpu(tp_context_t *context) {
    if (tp_physical_device_count(context, "GPU") > 0) return false;
    for (size_t i = 0; i < tp_plugin_count(context); i++) {
        tp_plugin_info_t info = {.struct_size = sizeof info};
        if (tp_plugin_get(context, i, &info) == NULL && !info.loaded &&
            strstr(info.path, "opencl") != NULL) {
            printf("bench_opencl: skipped: the OpenCL plug-in %s was refused: %s\n", info.path,
                   info.reason);
            return true;
        }
    }
    printf("bench_opencl: skipped: no GPU device from the OpenCL plug-in %s (no OpenCL GPU or "
           "accelerator; TP_OPENCL_DEVICE_TYPES=cpu offers a CPU device such as PoCL's)\n",
           TP_BENCH_OPENCL_PLUGIN);
    return true;
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_BENCH_OPENCL_PLUGIN;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));
    if (explain_missing_gpu(context)) {
        tp_context_destroy(context);
        return 0;
    }
    const tp_physical_device_t *gpu;
    TP_CHECK(tp_physical_device_get(context, "GPU", 0, &gpu));
    printf("GPU:0: %s (%s; %s), through the OpenCL plug-in\n",
           tp_physical_device_hardware_name(gpu), tp_physical_device_vendor(gpu),
           tp_physical_device_driver_version(gpu));
    direct_t direct = open_direct(tp_physical_device_hardware_name(gpu),
                                  tp_physical_device_vendor(gpu));
    TP_CHECK(tp_device_push(context, GPU));

    bench_dispatch(context, &direct);
    bench_bandwidth(context, &direct);
    printf("3. SGEMM, float32 n x n times n x n\n");
    bench_sgemm(context, &direct, 1024);
    bench_sgemm(context, &direct, 2048);
    printf("4. a chain of %d element-wise ops on %d float32 on GPU:0 (best of %d)\n",
           ELEMENTWISE_OPS, ELEMENTWISE_ELEMENTS, ELEMENTWISE_REPEATS);
    bench_elementwise(context, CHEAP_CHAIN);
    bench_elementwise(context, TRANSCENDENTAL_CHAIN);

    TP_CHECK(tp_device_pop(context));
    close_direct(&direct);
    tp_context_destroy(context);
    return 0;
}
