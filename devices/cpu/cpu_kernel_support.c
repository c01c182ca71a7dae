/* SPDX-License-Identifier: Apache-2.0 */
/* secure_getenv is a GNU extension. */
#define _GNU_SOURCE
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu_kernels.h"
#include "cpu_thread_pool.h"

const tp_host_api_t *tp_cpu_host;

const tp_dtype_t cpu_float_dtypes[] = {CPU_FLOAT_DTYPES};
const tp_dtype_t cpu_number_dtypes[] = {CPU_NUMBER_DTYPES};
const tp_dtype_t cpu_all_dtypes[] = {CPU_ALL_DTYPES};
const size_t cpu_num_float_dtypes = sizeof cpu_float_dtypes / sizeof *cpu_float_dtypes;
const size_t cpu_num_number_dtypes = sizeof cpu_number_dtypes / sizeof *cpu_number_dtypes;
const size_t cpu_num_all_dtypes = sizeof cpu_all_dtypes / sizeof *cpu_all_dtypes;

bool cpu_failed(const tp_plugin_status_t *status) {
    return tp_cpu_host->status_code(status) != TP_OK;
}

static bool fill(bool input, tp_kernel_context_t *context, int32_t index, cpu_tensor_t *out,
                 tp_plugin_status_t *status) {
    out->view.struct_size = sizeof out->view;
    if (input)
        tp_cpu_host->kernel_input(context, index, &out->view, status);
    else
        tp_cpu_host->kernel_output(context, index, &out->view, status);
    if (cpu_failed(status)) return false;
    out->data = out->view.mem == NULL ? NULL : (char *)out->view.mem + out->view.offset;
    /* The dtype here, not only in cpu_stage: a float32 tensor is then not a call. */
    return !cpu_is_half(out->view.dtype) || cpu_stage(input, index, context, out, status);
}

bool cpu_input(tp_kernel_context_t *context, int32_t index, cpu_tensor_t *out,
               tp_plugin_status_t *status) {
    return fill(true, context, index, out, status);
}

bool cpu_output(tp_kernel_context_t *context, int32_t index, cpu_tensor_t *out,
                tp_plugin_status_t *status) {
    return fill(false, context, index, out, status);
}

/* Below this much work (items times cost) waking the workers costs more than it saves; a
 * slice is at least a quarter of it, so that claiming slices stays cheap beside the work. */
enum { PARALLEL_THRESHOLD = 1 << 16, MIN_SLICE_WORK = PARALLEL_THRESHOLD / 4, MAX_THREADS = 16 };

static int thread_count;
static pthread_once_t thread_count_once = PTHREAD_ONCE_INIT;

/* Read once: sysconf reads /sys on every call, which costs more than a small kernel.
 * TP_CPU_THREADS caps the threads of one kernel, OpenBLAS's included: with several logical
 * CPU devices each running its own replica, one thread per device is the fair share. Read with
 * secure_getenv, as the runtime reads its own variables, and never ignored silently. */
/* The registrar of the init that counts the threads, so that a warning names the CPU. */
static tp_registrar_t *counting_registrar;

static void count_threads(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int every_core = cores < 1 ? 1 : cores > MAX_THREADS ? MAX_THREADS : (int)cores;
    const char *requested = secure_getenv("TP_CPU_THREADS");
    if (requested != NULL && requested[0] != '\0') {
        char *end;
        long value = strtol(requested, &end, 10);
        if (end != requested && *end == '\0' && value >= 1) {
            cores = value;
            openblas_set_num_threads(value > MAX_THREADS ? MAX_THREADS : (int)value);
        } else {
            if (tp_cpu_host != NULL)
                tp_cpu_host->log(counting_registrar, TP_LOG_WARNING,
                                 "TP_CPU_THREADS='%s' is not a whole number above 0; using "
                                 "the default, every core (%d)",
                                 requested, every_core);
        }
    }
    thread_count = cores < 1 ? 1 : cores > MAX_THREADS ? MAX_THREADS : (int)cores;
}

void cpu_configure_threads(tp_registrar_t *registrar) {
    counting_registrar = registrar; /* init runs once per process, before any kernel */
    pthread_once(&thread_count_once, count_threads);
}

void cpu_parallel_for(int64_t count, int64_t cost_per_item, cpu_range_fn fn, void *arg) {
    if (count <= 0) return;
    int64_t work = cost_per_item < 1 ? count : count * cost_per_item;
    /* Small work runs here whatever the thread count, which is then not needed. */
    if (work < PARALLEL_THRESHOLD) {
        fn(arg, 0, count);
        return;
    }
    pthread_once(&thread_count_once, count_threads);
    int threads = thread_count;
    if (threads == 1 || count < threads) {
        fn(arg, 0, count);
        return;
    }
    /* A few slices per thread, claimed as each finishes: a thread the machine delays (the
     * cores are shared) leaves its later slices to the others instead of holding all back. */
    int64_t slices = work / MIN_SLICE_WORK;
    if (slices > 4 * threads) slices = 4 * threads;
    if (slices < threads) slices = threads;
    cpu_shared_pool_run(threads, count, (int)slices, fn, arg);
}

void cpu_register_kernel(tp_registrar_t *registrar, const char *op, const char *attr,
                         const tp_dtype_t *dtypes, size_t num_dtypes, void *kernel_state,
                         void *(*create)(void *, tp_kernel_context_t *, tp_plugin_status_t *),
                         void (*compute)(void *, tp_kernel_context_t *, tp_plugin_status_t *),
                         tp_plugin_status_t *status) {
    if (cpu_failed(status)) return;
    tp_type_constraint_t constraint = {sizeof constraint, attr, dtypes, num_dtypes};
    tp_kernel_def_t kernel = {.struct_size = sizeof kernel,
                              .op = op,
                              .device_type = "CPU",
                              .constraints = attr != NULL ? &constraint : NULL,
                              .num_constraints = attr != NULL ? 1 : 0,
                              .kernel_state = kernel_state,
                              .create = create,
                              .compute = compute};
    tp_cpu_host->register_kernel(registrar, &kernel, status);
}

void cpu_register_native(tp_registrar_t *registrar, const char *op, const char *attr,
                         const tp_dtype_t *dtypes, size_t num_dtypes,
                         void (*compute)(void *, tp_kernel_context_t *, tp_plugin_status_t *),
                         tp_plugin_status_t *status) {
    cpu_register_kernel(registrar, op, attr, dtypes, num_dtypes, NULL, NULL, compute, status);
}
