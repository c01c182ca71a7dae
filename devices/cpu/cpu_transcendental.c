/* SPDX-License-Identifier: Apache-2.0 */
/* Exp, Log, Tanh, Sigmoid, Sqrt and Rsqrt on float32 and float64 (16-bit floats staged to
 * float32, cpu_staging.c), through cpu_math.h's vector loops: SLEEF's 1.0-ULP functions on
 * the widest vectors the CPU has (AVX-512F; AVX2 with FMA; SSE2), libm off x86-64. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_math.h"

static pthread_once_t choose_once = PTHREAD_ONCE_INIT;
static const cpu_math_t *chosen;

#if defined(__x86_64__)
static bool has_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static bool has_avx2(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

static void choose(void) {
#if defined(__x86_64__)
    __builtin_cpu_init(); /* needed where this runs before the library's constructors */
    chosen = has_avx512() ? &cpu_math_avx512 : has_avx2() ? &cpu_math_avx2 : &cpu_math_sse2;
#else
    chosen = &cpu_math_libm;
#endif
    /* TP_CPU_MATH names a narrower instance, to compare them in one build (bench_math); one
     * this CPU cannot run, or an unknown name, leaves the choice above. */
    const char *forced = getenv("TP_CPU_MATH");
    const cpu_math_t *named = forced != NULL && forced[0] != '\0' ? cpu_math_named(forced) : NULL;
    if (named != NULL) chosen = named;
}

const cpu_math_t *cpu_math(void) {
    pthread_once(&choose_once, choose);
    return chosen;
}

const cpu_math_t *cpu_math_named(const char *name) {
    if (strcmp(name, "libm") == 0) return &cpu_math_libm;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (strcmp(name, "sse2") == 0) return &cpu_math_sse2;
    if (strcmp(name, "avx2") == 0) return has_avx2() ? &cpu_math_avx2 : NULL;
    if (strcmp(name, "avx512") == 0) return has_avx512() ? &cpu_math_avx512 : NULL;
#endif
    return NULL;
}

typedef struct {
    cpu_math_op_t op;
    const cpu_math_t *math;
    tp_dtype_t dtype;
    const void *x;
    void *y;
} math_job_t;

static void math_range(void *arg, int64_t begin, int64_t end) {
    const math_job_t *job = arg;
    if (job->dtype == TP_FLOAT32)
        job->math->map_f32(job->op, (const float *)job->x + begin, (float *)job->y + begin,
                           end - begin);
    else
        job->math->map_f64(job->op, (const double *)job->x + begin, (double *)job->y + begin,
                           end - begin);
}

static void run_math(cpu_math_op_t op, tp_kernel_context_t *context,
                     tp_plugin_status_t *status) {
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    math_job_t job = {op, cpu_math(), x.view.dtype, x.data, y.data};
    /* About a nanosecond an element through SLEEF: threads pay from some 16K elements. */
    cpu_parallel_for(x.view.num_elements, 4, math_range, &job);
}

#define MATH_KERNEL(name, op)                                                                  \
    static void name(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) { \
        (void)kernel;                                                                          \
        run_math(op, context, status);                                                         \
    }
MATH_KERNEL(exp_kernel, CPU_MATH_EXP)
MATH_KERNEL(log_kernel, CPU_MATH_LOG)
MATH_KERNEL(tanh_kernel, CPU_MATH_TANH)
MATH_KERNEL(sigmoid_kernel, CPU_MATH_SIGMOID)
MATH_KERNEL(sqrt_kernel, CPU_MATH_SQRT)
MATH_KERNEL(rsqrt_kernel, CPU_MATH_RSQRT)

void cpu_register_transcendental_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "Sigmoid", "T", CPU_FLOATS, sigmoid_kernel, status);
    cpu_register(registrar, "Tanh", "T", CPU_FLOATS, tanh_kernel, status);
    cpu_register(registrar, "Exp", "T", CPU_FLOATS, exp_kernel, status);
    cpu_register(registrar, "Log", "T", CPU_FLOATS, log_kernel, status);
    cpu_register(registrar, "Sqrt", "T", CPU_FLOATS, sqrt_kernel, status);
    cpu_register(registrar, "Rsqrt", "T", CPU_FLOATS, rsqrt_kernel, status);
}
