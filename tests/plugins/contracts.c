/* SPDX-License-Identifier: Apache-2.0 */
/* A plug-in whose kernels show what the runtime does with them, for the contracts plugin.h
 * states (test_plugin_contracts, test_placement): one synchronous CTR device (priority 100)
 * whose memory is host memory. Each kernel reports what it saw through its outputs, its
 * status or a log line:
 *   Relu (float32)   no create; computes Relu, fails if compute is handed a kernel; its destroy
 *                    logs "Relu destroy(NULL)" or "Relu destroy(instance)"
 *   Neg (float32)    create makes an instance that compute checks; destroy logs "Neg destroy
 *                    (instance)". Registered as a plug-in built against 1.7 would: its
 *                    struct_size ends before flags, and the TP_KERNEL_REUSE_INSTANCE past it
 *                    must not be read
 *   Square (float32) create fails; compute and destroy fail loudly if they are ever called
 *   Add (float32)    fails with UNIMPLEMENTED, naming the shapes of its inputs and output
 *   Exp (float32)    waits up to 5 s for a second Exp to be inside compute, and writes how
 *                    many were inside at once into every element of its output
 *   Scale (float32)  its own op, y = factor * x (attribute factor, a float). Its kernel keeps
 *                    instances (TP_KERNEL_REUSE_INSTANCE); create logs "Scale create(factor=F)"
 *                    and refuses a negative factor, destroy logs "Scale destroy(factor=F)";
 *                    compute fails if it is handed another factor's instance, or if a second
 *                    compute is inside the same instance
 *   Sigmoid (float32) keeps instances that compute concurrently; create logs "Sigmoid create",
 *                    destroy "Sigmoid destroy", and compute waits as Exp's does
 *   Abs (float32)    three kernels, registered in this order: priority -1, failing; priority
 *                    0, computing |x|; priority 0 again, failing. A failure names its kernel. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simple_device.h"

static const tp_host_api_t *host;
static tp_registrar_t *registrar;

typedef struct {
    tp_tensor_view_t x, y;
} unary_views_t;

/* Input 0 and output 0; false (the status set) when the host refused either. */
static bool unary_views(tp_kernel_context_t *context, unary_views_t *views,
                        tp_plugin_status_t *status) {
    views->x = (tp_tensor_view_t){.struct_size = sizeof views->x};
    views->y = (tp_tensor_view_t){.struct_size = sizeof views->y};
    host->kernel_input(context, 0, &views->x, status);
    host->kernel_output(context, 0, &views->y, status);
    return host->status_code(status) == TP_OK;
}

static const float *input_values(const unary_views_t *views) {
    return (const float *)((const char *)views->x.mem + views->x.offset);
}

static float *output_values(const unary_views_t *views) {
    return (float *)((char *)views->y.mem + views->y.offset);
}

/* ---- Relu: no create ------------------------------------------------------------------------- */

static void relu_compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    if (kernel != NULL) {
        host->status_set(status, TP_INTERNAL, "Relu's compute was handed a kernel %p, though "
                         "it has no create", kernel);
        return;
    }
    unary_views_t views;
    if (!unary_views(context, &views, status)) return;
    for (int64_t i = 0; i < views.x.num_elements; i++)
        output_values(&views)[i] = input_values(&views)[i] > 0 ? input_values(&views)[i] : 0;
}

static void relu_destroy(void *kernel) {
    host->log(registrar, TP_LOG_INFO, "Relu destroy(%s)", kernel == NULL ? "NULL" : "instance");
}

/* ---- Neg: an instance per launch ------------------------------------------------------------- */

enum { INSTANCE_MAGIC = 0x4e4547 };

static void *neg_create(void *kernel_state, tp_kernel_context_t *context,
                        tp_plugin_status_t *status) {
    (void)kernel_state;
    (void)context;
    int *instance = malloc(sizeof *instance);
    if (instance == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "Neg's create: out of memory");
        return NULL;
    }
    *instance = INSTANCE_MAGIC;
    return instance;
}

static void neg_compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    if (kernel == NULL || *(int *)kernel != INSTANCE_MAGIC) {
        host->status_set(status, TP_INTERNAL, "Neg's compute was not handed its create's "
                         "instance");
        return;
    }
    unary_views_t views;
    if (!unary_views(context, &views, status)) return;
    for (int64_t i = 0; i < views.x.num_elements; i++)
        output_values(&views)[i] = -input_values(&views)[i];
}

static void neg_destroy(void *kernel) {
    bool ours = kernel != NULL && *(int *)kernel == INSTANCE_MAGIC;
    free(kernel);
    host->log(registrar, TP_LOG_INFO, "Neg destroy(%s)", ours ? "instance" : "something else");
}

/* ---- Square: a create that fails ------------------------------------------------------------- */

static void *square_create(void *kernel_state, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    (void)kernel_state;
    (void)context;
    host->status_set(status, TP_FAILED_PRECONDITION, "Square's create refused this call");
    return NULL;
}

static void square_compute(void *kernel, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    (void)kernel;
    (void)context;
    host->status_set(status, TP_INTERNAL, "Square's compute ran after its create failed");
}

static void square_destroy(void *kernel) {
    (void)kernel;
    host->log(registrar, TP_LOG_ERROR, "Square destroy() ran after its create failed");
}

/* ---- Add: what shapes a kernel is handed ----------------------------------------------------- */

static void format_shape(const tp_tensor_view_t *view, char *text, size_t capacity) {
    size_t used = (size_t)snprintf(text, capacity, "(");
    for (int32_t d = 0; d < view->rank && used < capacity; d++)
        used += (size_t)snprintf(text + used, capacity - used, "%s%lld", d > 0 ? ", " : "",
                                 (long long)view->dims[d]);
    if (used < capacity) snprintf(text + used, capacity - used, ")");
}

static void add_compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t views[3] = {{.struct_size = sizeof views[0]},
                                 {.struct_size = sizeof views[1]},
                                 {.struct_size = sizeof views[2]}};
    host->kernel_input(context, 0, &views[0], status);
    host->kernel_input(context, 1, &views[1], status);
    host->kernel_output(context, 0, &views[2], status);
    if (host->status_code(status) != TP_OK) return;
    char shapes[3][64];
    for (int i = 0; i < 3; i++) format_shape(&views[i], shapes[i], sizeof shapes[i]);
    host->status_set(status, TP_UNIMPLEMENTED, "CTR's Add was handed x %s, y %s, z %s",
                     shapes[0], shapes[1], shapes[2]);
}

/* ---- Exp: how many computes run at once ------------------------------------------------------ */

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    int inside, most_inside; /* now, and most at once since none was */
} meeting_t;

#define MEETING_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}

/* Waits up to 5 s for a second compute to be inside `meeting`, and writes how many were inside
 * at once into every element of the output. */
static void meet(meeting_t *meeting, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    unary_views_t views;
    if (!unary_views(context, &views, status)) return;
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 5;
    pthread_mutex_lock(&meeting->mutex);
    if (++meeting->inside > meeting->most_inside) meeting->most_inside = meeting->inside;
    pthread_cond_broadcast(&meeting->changed);
    while (meeting->most_inside < 2 &&
           pthread_cond_timedwait(&meeting->changed, &meeting->mutex, &limit) != ETIMEDOUT) {
    }
    int seen = meeting->most_inside;
    if (--meeting->inside == 0) meeting->most_inside = 0;
    pthread_mutex_unlock(&meeting->mutex);
    for (int64_t i = 0; i < views.y.num_elements; i++) output_values(&views)[i] = (float)seen;
}

static meeting_t exp_meeting = MEETING_INIT;

static void exp_compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    meet(&exp_meeting, context, status);
}

/* ---- Scale: a kept instance whose computes the host serializes ------------------------------- */

enum { SCALE_MAGIC = 0x5343 };

typedef struct {
    int magic;
    double factor;
    atomic_int computing;
} scale_instance_t;

static void *scale_create(void *kernel_state, tp_kernel_context_t *context,
                          tp_plugin_status_t *status) {
    (void)kernel_state;
    double factor = 0;
    host->kernel_attr_float(context, "factor", &factor, status);
    if (host->status_code(status) != TP_OK) return NULL;
    host->log(registrar, TP_LOG_INFO, "Scale create(factor=%g)", factor);
    unary_views_t views;
    if (!unary_views(context, &views, status)) return NULL;
    if (views.x.mem != NULL || views.y.mem != NULL || views.x.dtype != TP_FLOAT32) {
        host->status_set(status, TP_INTERNAL, "Scale's create was handed memory, or not the "
                         "dtype float32");
        return NULL;
    }
    if (factor < 0) {
        host->status_set(status, TP_INVALID_ARGUMENT, "Scale's create refuses factor %g",
                         factor);
        return NULL;
    }
    scale_instance_t *instance = malloc(sizeof *instance);
    if (instance == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "Scale's create: out of memory");
        return NULL;
    }
    instance->magic = SCALE_MAGIC;
    instance->factor = factor;
    atomic_init(&instance->computing, 0);
    return instance;
}

/* Fails if another compute is inside the same instance: it stays a while to give one the
 * chance. */
static void scale_compute(void *kernel, tp_kernel_context_t *context,
                          tp_plugin_status_t *status) {
    scale_instance_t *instance = kernel;
    double factor = 0;
    host->kernel_attr_float(context, "factor", &factor, status);
    if (host->status_code(status) != TP_OK) return;
    if (instance == NULL || instance->magic != SCALE_MAGIC || instance->factor != factor) {
        host->status_set(status, TP_INTERNAL, "Scale's compute was not handed the instance "
                         "of factor %g", factor);
        return;
    }
    unary_views_t views;
    if (!unary_views(context, &views, status)) return;
    if (atomic_fetch_add(&instance->computing, 1) != 0)
        host->status_set(status, TP_INTERNAL, "two Scale computes at once on one instance");
    nanosleep(&(struct timespec){0, 200 * 1000}, NULL);
    for (int64_t i = 0; i < views.x.num_elements; i++)
        output_values(&views)[i] = (float)factor * input_values(&views)[i];
    atomic_fetch_sub(&instance->computing, 1);
}

static void scale_destroy(void *kernel) {
    scale_instance_t *instance = kernel;
    host->log(registrar, TP_LOG_INFO, "Scale destroy(factor=%g)", instance->factor);
    free(instance);
}

/* ---- Sigmoid: a kept instance that computes concurrently ------------------------------------- */

static meeting_t sigmoid_meeting = MEETING_INIT;

static void *sigmoid_create(void *kernel_state, tp_kernel_context_t *context,
                            tp_plugin_status_t *status) {
    (void)kernel_state;
    (void)context;
    (void)status;
    host->log(registrar, TP_LOG_INFO, "Sigmoid create");
    return &sigmoid_meeting;
}

static void sigmoid_compute(void *kernel, tp_kernel_context_t *context,
                            tp_plugin_status_t *status) {
    meet(kernel, context, status);
}

static void sigmoid_destroy(void *kernel) {
    (void)kernel;
    host->log(registrar, TP_LOG_INFO, "Sigmoid destroy");
}

/* ---- Abs: equal priorities ------------------------------------------------------------------- */

static void abs_first(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    unary_views_t views;
    if (!unary_views(context, &views, status)) return;
    for (int64_t i = 0; i < views.x.num_elements; i++)
        output_values(&views)[i] = fabsf(input_values(&views)[i]);
}

static void abs_second(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    (void)context;
    host->status_set(status, TP_INTERNAL, "the second Abs kernel, of equal priority, ran");
}

static void abs_lower(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    (void)context;
    host->status_set(status, TP_INTERNAL, "the Abs kernel of lower priority ran");
}

/* ---- Registration ---------------------------------------------------------------------------- */

static void init(const tp_host_api_t *host_api, tp_registrar_t *registrar_given,
                 tp_plugin_status_t *status) {
    host = host_api;
    registrar = registrar_given;
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, "CTR", 1, host);
    def.priority = 100;
    def.flags = TP_DEVICE_SYNCHRONOUS;
    host->register_device_type(registrar, &def, status);
    tp_op_arg_def_t x = {sizeof x, "x", TP_DTYPE_INVALID, "T", NULL};
    tp_op_arg_def_t y = {sizeof y, "y", TP_DTYPE_INVALID, "T", NULL};
    const tp_op_attr_def_t scale_attrs[] = {
        {.struct_size = sizeof scale_attrs[0], .name = "T", .type = TP_ATTR_DTYPE},
        {.struct_size = sizeof scale_attrs[0], .name = "factor", .type = TP_ATTR_FLOAT,
         .has_default = 1, .default_float = 1.0}};
    tp_op_def_t scale = {.struct_size = sizeof scale, .name = "Scale", .inputs = &x,
                         .num_inputs = 1, .outputs = &y, .num_outputs = 1, .attrs = scale_attrs,
                         .num_attrs = 2};
    host->register_op(registrar, &scale, status);
    static const tp_dtype_t float32_only[] = {TP_FLOAT32};
    const tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    const tp_kernel_def_t kernels[] = {
        {.op = "Relu", .compute = relu_compute, .destroy = relu_destroy},
        {.op = "Neg", .create = neg_create, .compute = neg_compute, .destroy = neg_destroy,
         .flags = TP_KERNEL_REUSE_INSTANCE},
        {.op = "Square", .create = square_create, .compute = square_compute,
         .destroy = square_destroy},
        {.op = "Add", .compute = add_compute},
        {.op = "Exp", .compute = exp_compute},
        {.op = "Scale", .create = scale_create, .compute = scale_compute,
         .destroy = scale_destroy, .flags = TP_KERNEL_REUSE_INSTANCE},
        {.op = "Sigmoid", .create = sigmoid_create, .compute = sigmoid_compute,
         .destroy = sigmoid_destroy,
         .flags = TP_KERNEL_REUSE_INSTANCE | TP_KERNEL_CONCURRENT_COMPUTE},
        {.op = "Abs", .priority = -1, .compute = abs_lower},
        {.op = "Abs", .compute = abs_first},
        {.op = "Abs", .compute = abs_second},
    };
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        tp_kernel_def_t kernel = kernels[k];
        kernel.struct_size = strcmp(kernel.op, "Neg") == 0 ? offsetof(tp_kernel_def_t, flags)
                                                           : sizeof kernel;
        kernel.device_type = "CTR";
        kernel.constraints = &constraint;
        kernel.num_constraints = 1;
        host->register_kernel(registrar, &kernel, status);
    }
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "contracts", "1.0.0", init};
    return &descriptor;
}
