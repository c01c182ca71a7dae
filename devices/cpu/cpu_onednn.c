/* SPDX-License-Identifier: Apache-2.0 */
/* float32 convolutions and poolings through oneDNN (libdnnl), the library TensorFlow and
 * PyTorch run on CPUs.
 *
 * Layouts: tensors stay NHWC and filters HWIO, as the ops define them; oneDNN reads and writes
 * them in place. Only the filter is handed to the convolution in the blocked layout oneDNN
 * chooses for the shape (format "any"), through a reorder: handed HWIO itself, oneDNN ran the
 * digits CNN's 32-channel layer about 2 times slower (bench/bench_conv2d.c).
 *
 * Plans: making a primitive descriptor and its primitives costs about 5 us even when oneDNN's
 * own cache holds the compiled kernel, as much as a small convolution takes, so the primitives
 * for each window and op are kept here, made once per shape. A plan is in use by any number of
 * threads at once (oneDNN's primitives are stateless when, as here, the caller hands each
 * execution its own scratchpad); one not in use is dropped when the cache needs its slot.
 *
 * Threads: Debian's oneDNN runs its parallel loops on OpenMP (libgomp), whose team waits for
 * its threads by spinning. On 2 cores shared with other work, oneDNN called directly with its
 * team ran the digits CNN's second layer 3 to 14 times slower than the slices below
 * (bench_conv2d), and ThreadSanitizer cannot see the team's synchronization. So oneDNN runs on
 * one thread per call, and a call is cut into slices of whole images that cpu_parallel_for runs
 * on TP_CPU_THREADS threads, as every CPU kernel is: each slice runs the plan for its own batch
 * size, and a filter gradient adds the slices' partial sums in a fixed order. The price is on
 * an idle machine's small layers, where a thread started per call costs more than OpenMP's
 * waiting team: 34 us against oneDNN's own 17 us for 32 images of 8x8x1 into 32 channels. */
#include <dnnl.h>
#include <dnnl_debug.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_conv.h"
#include "cpu_onednn.h"
#include "cpu_thread_pool.h"

/* MAX_SLICES: cpu_parallel_for runs a call in at most 16 slices. SCRATCH_ALIGNMENT: the scratch
 * space and each part of it start on a page (cpu_onednn.h says why). */
enum {
    CACHE_SLOTS = 64,
    ALIGNMENT = 64,
    SCRATCH_ALIGNMENT = CPU_ONEDNN_SCRATCH_ALIGNMENT,
    MAX_SLICES = 16
};

typedef struct {
    cpu_onednn_op_t op;
    int64_t dims[15];
} plan_key_t;

typedef struct plan {
    plan_key_t key;
    /* Run in this order, each when not NULL: `before` (the filter's reorder into the
     * convolution's layout, or the max pooling forward that makes the workspace its backward
     * reads), `main`, `after` (a filter gradient's reorder back to HWIO). */
    dnnl_primitive_t before, main, after;
    /* The caller's tensors as the primitives see them. */
    dnnl_memory_desc_t a_md, b_md, out_md;
    /* Scratch memory, one block per execution: the filter in oneDNN's layout, the max pooling
     * workspace and forward output, and the primitives' scratchpad (shared: they run one after
     * the other). */
    dnnl_memory_desc_t staged_md, workspace_md, forward_md, scratchpad_md;
    size_t staged_offset, workspace_offset, forward_offset, scratchpad_offset, scratch_bytes;
    bool staged, cached;
    int users;
    uint64_t last_use;
} plan_t;

static dnnl_engine_t engine;
static dnnl_status_t engine_status;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t cache_mutex = PTHREAD_MUTEX_INITIALIZER;
static plan_t *cache[CACHE_SLOTS];
static uint64_t cache_clock;

static void make_engine(void) { engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0); }

dnnl_engine_t cpu_onednn_engine(const char *op_name, tp_plugin_status_t *status) {
    pthread_once(&engine_once, make_engine);
    if (engine_status == dnnl_success) return engine;
    tp_cpu_host->status_set(status, TP_INTERNAL, "%s: oneDNN has no CPU engine: %s", op_name,
                            dnnl_status2str(engine_status));
    return NULL;
}

/* ---- Making plans ---------------------------------------------------------------------------- */

static plan_key_t key_of(cpu_onednn_op_t op, const cpu_window_t *w) {
    plan_key_t key;
    memset(&key, 0, sizeof key); /* compared with memcmp */
    key.op = op;
    const int64_t dims[15] = {w->batch,      w->in_h,       w->in_w,       w->channels,
                              w->window_h,   w->window_w,   w->out_channels, w->stride_h,
                              w->stride_w,   w->dilation_h, w->dilation_w, w->pad_top,
                              w->pad_left,   w->pad_bottom, w->pad_right};
    memcpy(key.dims, dims, sizeof dims);
    return key;
}

static void destroy_plan(plan_t *plan) {
    if (plan == NULL) return;
    dnnl_primitive_destroy(plan->before);
    dnnl_primitive_destroy(plan->main);
    dnnl_primitive_destroy(plan->after);
    free(plan);
}

/* Where a sequence of oneDNN calls stands: the first failure is kept, with what it was doing,
 * and the calls after it are skipped. */
typedef struct {
    dnnl_status_t status;
    const char *step;
} steps_t;

/* A failure found on any thread of a call, reported on the call's status by the thread that
 * made the call: the host's status is not to be set from several threads at once. The first
 * failure is kept. */
typedef struct {
    pthread_mutex_t mutex;
    tp_code_t code;
    char message[512];
} failure_t;

TP_PRINTF_LIKE(3, 4)
static void fail(failure_t *failure, tp_code_t code, const char *format, ...) {
    pthread_mutex_lock(&failure->mutex);
    if (failure->code == TP_OK) {
        failure->code = code;
        va_list args;
        va_start(args, format);
        vsnprintf(failure->message, sizeof failure->message, format, args);
        va_end(args);
    }
    pthread_mutex_unlock(&failure->mutex);
}

static bool step(steps_t *m, dnnl_status_t status, const char *what) {
    if (m->status != dnnl_success) return false;
    m->status = status;
    m->step = what;
    return status == dnnl_success;
}

static void plain_md(steps_t *m, dnnl_memory_desc_t *md, int64_t n, int64_t c, int64_t h,
                     int64_t w, dnnl_format_tag_t tag) {
    dnnl_dims_t dims = {n, c, h, w};
    step(m, dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, tag), "a memory descriptor");
}

/* Every primitive descriptor is made with the scratchpad left to the caller, which is what
 * makes one primitive safe to run on several threads at once. */
static dnnl_primitive_attr_t user_scratchpad(steps_t *m) {
    dnnl_primitive_attr_t attr = NULL;
    if (step(m, dnnl_primitive_attr_create(&attr), "primitive attributes"))
        step(m, dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
             "the scratchpad mode");
    return attr;
}

static void make_primitive(steps_t *m, dnnl_primitive_desc_t pd, dnnl_primitive_t *out,
                           size_t *scratchpad_bytes, dnnl_memory_desc_t *scratchpad_md) {
    if (!step(m, dnnl_primitive_create(out, pd), "a primitive")) return;
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t bytes = md != NULL ? dnnl_memory_desc_get_size(md) : 0;
    if (bytes > *scratchpad_bytes) {
        *scratchpad_bytes = bytes;
        *scratchpad_md = *md;
    }
}

static void make_reorder(steps_t *m, const dnnl_memory_desc_t *from,
                         const dnnl_memory_desc_t *to, dnnl_primitive_t *out,
                         size_t *scratchpad_bytes, dnnl_memory_desc_t *scratchpad_md) {
    dnnl_primitive_attr_t attr = user_scratchpad(m);
    dnnl_primitive_desc_t pd = NULL;
    if (step(m, dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, attr),
             "a filter reorder"))
        make_primitive(m, pd, out, scratchpad_bytes, scratchpad_md);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
}

/* The convolution plans: forward, and the two gradients, each with the forward descriptor as
 * its hint, as oneDNN asks. */
static void make_conv(steps_t *m, plan_t *p, const cpu_window_t *w, size_t *scratchpad_bytes) {
    dnnl_memory_desc_t image, filter, any_filter, output;
    plain_md(m, &image, w->batch, w->channels, w->in_h, w->in_w, dnnl_nhwc);
    plain_md(m, &filter, w->out_channels, w->channels, w->window_h, w->window_w, dnnl_hwio);
    plain_md(m, &any_filter, w->out_channels, w->channels, w->window_h, w->window_w,
             dnnl_format_tag_any);
    plain_md(m, &output, w->batch, w->out_channels, w->out_h, w->out_w, dnnl_nhwc);
    dnnl_dims_t strides = {w->stride_h, w->stride_w};
    dnnl_dims_t dilates = {w->dilation_h - 1, w->dilation_w - 1}; /* oneDNN's 0 is adjacent */
    dnnl_dims_t before = {w->pad_top, w->pad_left}, after = {w->pad_bottom, w->pad_right};
    dnnl_convolution_desc_t forward_desc, desc;
    step(m, dnnl_dilated_convolution_forward_desc_init(
                &forward_desc, dnnl_forward_training, dnnl_convolution_direct, &image,
                &any_filter, NULL, &output, strides, dilates, before, after),
         "a convolution descriptor");
    dnnl_primitive_attr_t attr = user_scratchpad(m);
    dnnl_primitive_desc_t forward = NULL, pd = NULL;
    step(m, dnnl_primitive_desc_create(&forward, &forward_desc, attr, engine, NULL),
         "a convolution");
    dnnl_query_t filter_query = dnnl_query_weights_md;
    switch (p->key.op) {
    case CPU_ONEDNN_CONV:
        p->a_md = image, p->b_md = filter, p->out_md = output;
        pd = forward, forward = NULL;
        break;
    case CPU_ONEDNN_CONV_INPUT:
        p->a_md = filter, p->b_md = output, p->out_md = image;
        step(m, dnnl_dilated_convolution_backward_data_desc_init(
                    &desc, dnnl_convolution_direct, &image, &any_filter, &output, strides,
                    dilates, before, after),
             "a convolution input gradient descriptor");
        step(m, dnnl_primitive_desc_create(&pd, &desc, attr, engine, forward),
             "a convolution input gradient");
        break;
    default: /* CPU_ONEDNN_CONV_FILTER */
        p->a_md = image, p->b_md = output, p->out_md = filter;
        step(m, dnnl_dilated_convolution_backward_weights_desc_init(
                    &desc, dnnl_convolution_direct, &image, &any_filter, NULL, &output,
                    strides, dilates, before, after),
             "a convolution filter gradient descriptor");
        step(m, dnnl_primitive_desc_create(&pd, &desc, attr, engine, forward),
             "a convolution filter gradient");
        filter_query = dnnl_query_diff_weights_md;
        break;
    }
    if (m->status == dnnl_success) {
        make_primitive(m, pd, &p->main, scratchpad_bytes, &p->scratchpad_md);
        p->staged_md = *dnnl_primitive_desc_query_md(pd, filter_query, 0);
        p->staged = !dnnl_memory_desc_equal(&p->staged_md, &filter);
    }
    if (m->status == dnnl_success && p->staged) {
        if (p->key.op == CPU_ONEDNN_CONV_FILTER)
            make_reorder(m, &p->staged_md, &filter, &p->after, scratchpad_bytes,
                         &p->scratchpad_md);
        else
            make_reorder(m, &filter, &p->staged_md, &p->before, scratchpad_bytes,
                         &p->scratchpad_md);
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(forward);
    dnnl_primitive_attr_destroy(attr);
}

/* The pooling plans. TensorFlow's average counts only the values inside the image, oneDNN's
 * avg_exclude_padding; its max ignores the padding, as oneDNN's does. */
static void make_pool(steps_t *m, plan_t *p, const cpu_window_t *w, size_t *scratchpad_bytes) {
    cpu_onednn_op_t op = p->key.op;
    bool max = op == CPU_ONEDNN_MAX_POOL || op == CPU_ONEDNN_MAX_POOL_GRAD;
    bool grad = op == CPU_ONEDNN_MAX_POOL_GRAD || op == CPU_ONEDNN_AVG_POOL_GRAD;
    dnnl_alg_kind_t alg = max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
    dnnl_memory_desc_t image, output;
    plain_md(m, &image, w->batch, w->channels, w->in_h, w->in_w, dnnl_nhwc);
    plain_md(m, &output, w->batch, w->channels, w->out_h, w->out_w, dnnl_nhwc);
    dnnl_dims_t strides = {w->stride_h, w->stride_w}, kernel = {w->window_h, w->window_w};
    dnnl_dims_t dilation = {0, 0};
    dnnl_dims_t before = {w->pad_top, w->pad_left}, after = {w->pad_bottom, w->pad_right};
    dnnl_pooling_v2_desc_t forward_desc, desc;
    step(m, dnnl_pooling_v2_forward_desc_init(&forward_desc,
                                              grad ? dnnl_forward_training
                                                   : dnnl_forward_inference,
                                              alg, &image, &output, strides, kernel, dilation,
                                              before, after),
         "a pooling descriptor");
    dnnl_primitive_attr_t attr = user_scratchpad(m);
    dnnl_primitive_desc_t forward = NULL, pd = NULL;
    step(m, dnnl_primitive_desc_create(&forward, &forward_desc, attr, engine, NULL), "a pooling");
    if (!grad) {
        p->a_md = image, p->out_md = output;
        make_primitive(m, forward, &p->main, scratchpad_bytes, &p->scratchpad_md);
    } else {
        p->a_md = image, p->b_md = output, p->out_md = image;
        step(m, dnnl_pooling_v2_backward_desc_init(&desc, alg, &image, &output, strides, kernel,
                                                   dilation, before, after),
             "a pooling gradient descriptor");
        step(m, dnnl_primitive_desc_create(&pd, &desc, attr, engine, forward),
             "a pooling gradient");
        make_primitive(m, pd, &p->main, scratchpad_bytes, &p->scratchpad_md);
        if (max && m->status == dnnl_success) {
            /* MaxPoolGrad has the input, not the workspace that says where each maximum
             * was: the forward runs again to make it. */
            make_primitive(m, forward, &p->before, scratchpad_bytes, &p->scratchpad_md);
            p->workspace_md = *dnnl_primitive_desc_query_md(forward, dnnl_query_workspace_md, 0);
            p->forward_md = output;
        }
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(forward);
    dnnl_primitive_attr_destroy(attr);
}

static size_t aligned_to(size_t bytes, size_t alignment) {
    return (bytes + alignment - 1) / alignment * alignment;
}

static size_t aligned(size_t bytes) { return aligned_to(bytes, ALIGNMENT); }

static size_t scratch_aligned(size_t bytes) { return aligned_to(bytes, SCRATCH_ALIGNMENT); }

static plan_t *make_plan(const plan_key_t *key, const cpu_window_t *w, const char *op_name,
                         failure_t *failure) {
    plan_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        fail(failure, TP_RESOURCE_EXHAUSTED, "%s: out of host memory", op_name);
        return NULL;
    }
    p->key = *key;
    steps_t m = {dnnl_success, ""};
    size_t scratchpad_bytes = 0;
    if (key->op <= CPU_ONEDNN_CONV_FILTER)
        make_conv(&m, p, w, &scratchpad_bytes);
    else
        make_pool(&m, p, w, &scratchpad_bytes);
    if (m.status != dnnl_success) {
        char text[128];
        cpu_window_describe(w, text, sizeof text);
        fail(failure, TP_INTERNAL, "%s: oneDNN could not make %s for %s: %s", op_name, m.step,
             text, dnnl_status2str(m.status));
        destroy_plan(p);
        return NULL;
    }
    size_t offset = 0;
    p->staged_offset = offset;
    offset += p->staged ? scratch_aligned(dnnl_memory_desc_get_size(&p->staged_md)) : 0;
    if (key->op == CPU_ONEDNN_MAX_POOL_GRAD) {
        p->workspace_offset = offset;
        offset += scratch_aligned(dnnl_memory_desc_get_size(&p->workspace_md));
        p->forward_offset = offset;
        offset += scratch_aligned(dnnl_memory_desc_get_size(&p->forward_md));
    }
    p->scratchpad_offset = offset;
    offset += scratch_aligned(scratchpad_bytes);
    p->scratch_bytes = offset;
    return p;
}

/* ---- The cache ------------------------------------------------------------------------------- */

/* The cached plan for `key`, now in use by one more caller; NULL if none is kept. Called with
 * cache_mutex held. */
static plan_t *use_cached_plan(const plan_key_t *key) {
    for (int i = 0; i < CACHE_SLOTS; i++) {
        if (cache[i] != NULL && memcmp(&cache[i]->key, key, sizeof *key) == 0) {
            cache[i]->users++;
            cache[i]->last_use = ++cache_clock;
            return cache[i];
        }
    }
    return NULL;
}

/* The plan for `key`, in use by the caller until release_plan. */
static plan_t *acquire_plan(const plan_key_t *key, const cpu_window_t *w, const char *op_name,
                            failure_t *failure) {
    pthread_mutex_lock(&cache_mutex);
    plan_t *kept = use_cached_plan(key);
    pthread_mutex_unlock(&cache_mutex);
    if (kept != NULL) return kept;
    /* Made outside the lock: oneDNN compiles kernels for a new shape, which takes milliseconds,
     * and other shapes need not wait for it. */
    plan_t *made = make_plan(key, w, op_name, failure);
    if (made == NULL) return NULL;
    made->users = 1;
    pthread_mutex_lock(&cache_mutex);
    kept = use_cached_plan(key);
    if (kept != NULL) {
        /* Another thread made the same plan meanwhile: use the one kept. */
        pthread_mutex_unlock(&cache_mutex);
        destroy_plan(made);
        return kept;
    }
    int victim = -1;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        if (cache[i] == NULL) {
            if (victim < 0 || cache[victim] != NULL) victim = i;
        } else if (cache[i]->users == 0 &&
                   (victim < 0 ||
                    (cache[victim] != NULL && cache[i]->last_use < cache[victim]->last_use))) {
            victim = i;
        }
    }
    if (victim >= 0) {
        destroy_plan(cache[victim]);
        cache[victim] = made;
        made->cached = true;
        made->last_use = ++cache_clock;
    }
    pthread_mutex_unlock(&cache_mutex);
    return made; /* not kept when every slot is in use: released after this call */
}

static void release_plan(plan_t *plan) {
    pthread_mutex_lock(&cache_mutex);
    bool drop = --plan->users == 0 && !plan->cached;
    pthread_mutex_unlock(&cache_mutex);
    if (drop) destroy_plan(plan);
}

/* ---- Running --------------------------------------------------------------------------------- */

typedef struct {
    dnnl_memory_t memories[6];
    int count;
    steps_t *m;
} memories_t;

static dnnl_memory_t memory(memories_t *list, const dnnl_memory_desc_t *md, const void *data) {
    dnnl_memory_t made = NULL;
    /* oneDNN takes a non-const handle for inputs and outputs alike; inputs are only read. */
    if (step(list->m, dnnl_memory_create(&made, md, engine, (void *)(uintptr_t)data),
             "a memory object"))
        list->memories[list->count++] = made;
    return made;
}

static void execute(steps_t *m, dnnl_primitive_t primitive, dnnl_stream_t stream,
                    dnnl_exec_arg_t *args, int count, dnnl_memory_t scratchpad) {
    if (scratchpad != NULL) args[count++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, scratchpad};
    step(m, dnnl_primitive_execute(primitive, stream, count, args), "an execution");
}

static void run_plan(steps_t *m, const plan_t *p, const float *a, const float *b, float *out,
                     unsigned char *scratch) {
    memories_t list = {.m = m};
    dnnl_stream_t stream = NULL;
    step(m, dnnl_stream_create(&stream, engine, dnnl_stream_default_flags), "a stream");
    dnnl_memory_t scratchpad =
        p->scratch_bytes > p->scratchpad_offset
            ? memory(&list, &p->scratchpad_md, scratch + p->scratchpad_offset)
            : NULL;
    dnnl_memory_t staged =
        p->staged ? memory(&list, &p->staged_md, scratch + p->staged_offset) : NULL;
    dnnl_memory_t ma = a != NULL ? memory(&list, &p->a_md, a) : NULL;
    dnnl_memory_t mb = b != NULL ? memory(&list, &p->b_md, b) : NULL;
    dnnl_memory_t mout = memory(&list, &p->out_md, out);
    if (m->status == dnnl_success) {
        dnnl_exec_arg_t args[5];
        switch (p->key.op) {
        case CPU_ONEDNN_CONV:
            if (staged != NULL)
                execute(m, p->before, stream,
                        (dnnl_exec_arg_t[3]){{DNNL_ARG_FROM, mb}, {DNNL_ARG_TO, staged}}, 2,
                        scratchpad);
            args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ma};
            args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, staged != NULL ? staged : mb};
            args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, mout};
            execute(m, p->main, stream, args, 3, scratchpad);
            break;
        case CPU_ONEDNN_CONV_INPUT:
            if (staged != NULL)
                execute(m, p->before, stream,
                        (dnnl_exec_arg_t[3]){{DNNL_ARG_FROM, ma}, {DNNL_ARG_TO, staged}}, 2,
                        scratchpad);
            args[0] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, staged != NULL ? staged : ma};
            args[1] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, mb};
            args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, mout};
            execute(m, p->main, stream, args, 3, scratchpad);
            break;
        case CPU_ONEDNN_CONV_FILTER:
            args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ma};
            args[1] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, mb};
            args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, staged != NULL ? staged : mout};
            execute(m, p->main, stream, args, 3, scratchpad);
            if (staged != NULL)
                execute(m, p->after, stream,
                        (dnnl_exec_arg_t[3]){{DNNL_ARG_FROM, staged}, {DNNL_ARG_TO, mout}}, 2,
                        scratchpad);
            break;
        case CPU_ONEDNN_MAX_POOL:
        case CPU_ONEDNN_AVG_POOL:
            args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ma};
            args[1] = (dnnl_exec_arg_t){DNNL_ARG_DST, mout};
            execute(m, p->main, stream, args, 2, scratchpad);
            break;
        case CPU_ONEDNN_MAX_POOL_GRAD: {
            dnnl_memory_t workspace =
                memory(&list, &p->workspace_md, scratch + p->workspace_offset);
            dnnl_memory_t forward = memory(&list, &p->forward_md, scratch + p->forward_offset);
            if (m->status != dnnl_success) break;
            args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ma};
            args[1] = (dnnl_exec_arg_t){DNNL_ARG_DST, forward};
            args[2] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, workspace};
            execute(m, p->before, stream, args, 3, scratchpad);
            args[0] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, mb};
            args[1] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, workspace};
            args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, mout};
            execute(m, p->main, stream, args, 3, scratchpad);
            break;
        }
        case CPU_ONEDNN_AVG_POOL_GRAD:
            args[0] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, mb};
            args[1] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, mout};
            execute(m, p->main, stream, args, 2, scratchpad);
            break;
        }
        step(m, dnnl_stream_wait(stream), "the wait for the stream");
    }
    for (int i = 0; i < list.count; i++) dnnl_memory_destroy(list.memories[i]);
    dnnl_stream_destroy(stream);
}

/* One call, cut into slices of whole images that cpu_parallel_for runs on its threads. */
typedef struct {
    cpu_onednn_op_t op;
    const cpu_window_t *w;
    const float *a, *b;
    float *out;
    const char *op_name;
    failure_t failure;
    /* CPU_ONEDNN_CONV_FILTER: the filter gradient of each slice but the first (which writes
     * `out`), by its first image, added to `out` in that order once all are done, so that the
     * sum is the same at every run. */
    struct {
        int64_t first;
        float *sum;
    } partials[MAX_SLICES];
    int num_partials;
} call_t;

/* The slice's images of a tensor that holds one image (or one image's output) after another;
 * NULL stays NULL. */
static const float *images(const float *tensor, int64_t first, int64_t per_image) {
    return tensor != NULL ? tensor + first * per_image : NULL;
}

static void run_slice(void *arg, int64_t first, int64_t end) {
    call_t *call = arg;
    cpu_window_t w = *call->w;
    w.batch = end - first;
    int64_t image = w.in_h * w.in_w * w.channels, output = w.out_h * w.out_w * w.out_channels;
    const float *a = call->a, *b = call->b;
    float *out = call->out;
    switch (call->op) {
    case CPU_ONEDNN_CONV: a = images(a, first, image), out += first * output; break;
    case CPU_ONEDNN_CONV_INPUT: b = images(b, first, output), out += first * image; break;
    case CPU_ONEDNN_CONV_FILTER: a = images(a, first, image), b = images(b, first, output); break;
    case CPU_ONEDNN_MAX_POOL:
    case CPU_ONEDNN_AVG_POOL: a = images(a, first, image), out += first * output; break;
    default: /* the pooling gradients */
        a = images(a, first, image), b = images(b, first, output), out += first * image;
        break;
    }
    float *partial = NULL;
    if (call->op == CPU_ONEDNN_CONV_FILTER && first > 0) {
        size_t bytes = (size_t)(w.window_h * w.window_w * w.channels * w.out_channels) *
                       sizeof(float);
        out = partial = aligned_alloc(ALIGNMENT, aligned(bytes));
        if (partial == NULL) {
            fail(&call->failure, TP_RESOURCE_EXHAUSTED,
                 "%s: no host memory for a partial filter gradient of %zu bytes", call->op_name,
                 bytes);
            return;
        }
    }
    /* One thread per slice: oneDNN's own OpenMP team is left unused (see the top). Set before
     * the plan is made, since oneDNN divides a primitive's work among the threads it sees at
     * creation and opens a team of that many at every run, whatever the setting then. The
     * thread's setting is put back, for a program that uses OpenMP itself. */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    plan_key_t key = key_of(call->op, &w);
    plan_t *plan = acquire_plan(&key, &w, call->op_name, &call->failure);
    unsigned char *scratch = NULL;
    if (plan != NULL && plan->scratch_bytes > 0) {
        scratch = aligned_alloc(SCRATCH_ALIGNMENT, plan->scratch_bytes);
        if (scratch == NULL)
            fail(&call->failure, TP_RESOURCE_EXHAUSTED,
                 "%s: no host memory for oneDNN's %zu bytes of scratch space", call->op_name,
                 plan->scratch_bytes);
    }
    if (plan != NULL && (scratch != NULL || plan->scratch_bytes == 0)) {
        steps_t m = {dnnl_success, ""};
        run_plan(&m, plan, a, b, out, scratch);
        if (m.status != dnnl_success) {
            char text[128];
            cpu_window_describe(&w, text, sizeof text);
            fail(&call->failure, TP_INTERNAL, "%s: oneDNN failed at %s for %s: %s",
                 call->op_name, m.step, text, dnnl_status2str(m.status));
        }
    }
    omp_set_num_threads(threads);
    free(scratch);
    if (plan != NULL) release_plan(plan);
    if (partial == NULL) return;
    pthread_mutex_lock(&call->failure.mutex);
    bool kept = call->num_partials < MAX_SLICES;
    if (kept) {
        call->partials[call->num_partials].first = first;
        call->partials[call->num_partials++].sum = partial;
    }
    pthread_mutex_unlock(&call->failure.mutex);
    if (!kept) {
        free(partial);
        fail(&call->failure, TP_INTERNAL, "%s: more than %d slices of images", call->op_name,
             MAX_SLICES);
    }
}

static int by_first_image(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

bool cpu_onednn_run(cpu_onednn_op_t op, const cpu_window_t *window, const float *a,
                    const float *b, float *out, const char *op_name,
                    tp_plugin_status_t *status) {
    if (cpu_onednn_engine(op_name, status) == NULL) return false;
    cpu_pool_park(); /* oneDNN brings threads of its own */
    call_t call = {.op = op, .w = window, .a = a, .b = b, .out = out, .op_name = op_name};
    pthread_mutex_init(&call.failure.mutex, NULL);
    /* What one image costs, in cpu_parallel_for's units (about an element-wise operation): a
     * convolution's multiply-adds over 16, so that a call of less than a million (2 MFLOP, some
     * 20 us on one core) stays on one thread, where a second would cost more to start than it
     * saves; a pooling's values read. */
    const cpu_window_t *w = window;
    int64_t taps = w->window_h * w->window_w;
    int64_t cost = op <= CPU_ONEDNN_CONV_FILTER
                       ? w->out_h * w->out_w * taps * w->channels * w->out_channels / 16
                       : w->out_h * w->out_w * taps * w->channels;
    cpu_parallel_for(window->batch, cost > 0 ? cost : 1, run_slice, &call);
    /* The filter gradient's partial sums, added in the order of their images. */
    qsort(call.partials, (size_t)call.num_partials, sizeof call.partials[0], by_first_image);
    int64_t filter = w->window_h * w->window_w * w->channels * w->out_channels;
    for (int p = 0; p < call.num_partials; p++) {
        if (call.failure.code == TP_OK)
            for (int64_t i = 0; i < filter; i++) out[i] += call.partials[p].sum[i];
        free(call.partials[p].sum);
    }
    pthread_mutex_destroy(&call.failure.mutex);
    if (call.failure.code != TP_OK) {
        tp_cpu_host->status_set(status, call.failure.code, "%s", call.failure.message);
        return false;
    }
    return true;
}
