/* SPDX-License-Identifier: Apache-2.0 */
/* Stress: 8 threads share one context, each running its own seeded sequence of mixed eager ops
 * (Relu, Add, Mul, MatMul, Sum, Reshape, copies between devices, reads) under random device
 * scopes (none, CPU:0, APU:0, APU:1; soft placement sends ops without an APU kernel to the CPU)
 * on a small rolling set of live tensors, interleaved with tensors that take a large part of an
 * APU's memory and with one larger than APU:0's whole limit. Every value read is checked
 * against the same arithmetic done on the host, and each thread folds the bits it read into a
 * checksum; the 8-thread run must give each thread the checksum of a single-threaded run of the
 * same sequences, bit for bit. Running out of APU memory is a status naming the op and the
 * device; the step is then retried until memory is free again. At the end no tensor memory is
 * in use on any device, raw device memory is exactly what the allocators hold, and all of it
 * goes back when the context closes.
 *
 * Run with TP_APU_DEVICES=2 and TP_APU_MEMORY=64M: APU:0 reserves its 48 MiB up front, APU:1
 * grows on demand up to 64 MiB. The program's argument is the number of ops per thread (10000
 * when absent). */
#include "../unit/test_support.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../unit/device_support.h"
#include "../unit/graph_support.h"

enum {
    THREADS = 8,
    SLOTS = 6,        /* live tensors per thread */
    N = 16,           /* each is an N x N matrix */
    BIG = 3 << 20,    /* floats, 12 MiB: a Relu of it onto an APU needs two such blocks */
    BIG_EVERY = 2000, /* ops between two of those */
    HUGE_EVERY = 2500 /* ops between two Relus onto APU:0 of a tensor larger than its limit */
};

/* 52 MiB of floats: more than APU:0's 48 MiB. */
#define HUGE_ELEMENTS (13 << 20)
#define APU_PREFIX "/job:localhost/replica:0/task:0/device:APU:"

static int ops_per_thread = 10000;

static const char *const scopes[4] = {NULL, "/device:CPU:0", "/device:APU:0", "/device:APU:1"};
static const char *const targets[3] = {"/device:CPU:0", "/device:APU:0", "/device:APU:1"};

typedef enum {
    RELU,
    ADD_HALF,      /* (a + b) * 0.5, so that values stay within [-1, 1] */
    MUL,
    MATMUL_SCALED, /* (a @ b) / N, likewise */
    SUM_READ,      /* the sum of every element, read back */
    RESHAPE_RELU,  /* reshaped to (N * N / 4, 4), Relu, reshaped back */
    COPY,          /* Identity onto the CPU, or Relu onto an APU: the value changes device */
    PEER,          /* Relu on one APU, then on the other: the APUs' own copy between them */
    READ,
    NUM_DRAWN,     /* the kinds above are drawn at random; those below come at fixed steps */
    NEAR_LIMIT,    /* Relu of this thread's big tensor onto an APU, read back */
    OVER_LIMIT     /* Relu of the huge tensor onto APU:0, which must fail */
} kind_t;

/* One step, drawn before it runs so that a retry repeats it exactly. */
typedef struct {
    kind_t kind;
    int scope, target, a, b, dst;
} step_t;

typedef struct {
    tp_context_t *context;
    int index;
    tp_tensor_t *huge; /* shared by the threads, only read */
    /* What the thread found. */
    uint64_t checksum;
    uint64_t reads;
    uint64_t oom_retries;
    int over_limit_refusals;
    char failure[1024]; /* empty unless something was wrong */
    /* Its state. */
    uint64_t rng;
    tp_tensor_t *slots[SLOTS];
    float shadow[SLOTS][N * N]; /* the host's copy of each slot's values */
    tp_tensor_t *half, *inverse_n, *big;
    float *big_values, *big_out;
} worker_t;

static uint64_t next_random(worker_t *w) {
    uint64_t z = (w->rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static int pick(worker_t *w, int count) { return (int)(next_random(w) % (uint64_t)count); }

static float random_value(worker_t *w) { return (float)pick(w, 2001) / 1000.0f - 1.0f; }

static void fold(worker_t *w, const float *values, size_t count) {
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &values[i], sizeof bits);
        w->checksum = (w->checksum ^ bits) * 0x100000001B3u;
    }
}

/* Keeps the first failure of the thread; takes `status`. */
static void fail_with(worker_t *w, const char *what, tp_status_t *status) {
    if (w->failure[0] == '\0')
        snprintf(w->failure, sizeof w->failure, "thread %d: %s%s%s", w->index, what,
                 status != NULL ? ": " : "", tp_status_message(status));
    tp_status_free(status);
}

static tp_status_t *enter(tp_context_t *context, const char *scope) {
    return scope != NULL ? tp_device_push(context, scope) : NULL;
}

static void leave(tp_context_t *context, const char *scope) {
    if (scope != NULL) tp_status_free(tp_device_pop(context));
}

/* ---- The host's arithmetic ------------------------------------------------------------------- */

static float relu_of(float v) { return v < 0 ? 0.0f : v; }

static void shadow_step(const worker_t *w, const step_t *s, float *out) {
    const float *a = w->shadow[s->a], *b = w->shadow[s->b];
    for (int i = 0; i < N * N; i++) {
        if (s->kind == ADD_HALF) {
            out[i] = (a[i] + b[i]) * 0.5f;
        } else if (s->kind == MUL) {
            out[i] = a[i] * b[i];
        } else if (s->kind == MATMUL_SCALED) {
            double sum = 0;
            for (int k = 0; k < N; k++) sum += (double)a[i / N * N + k] * b[k * N + i % N];
            out[i] = (float)sum / (float)N;
        } else if (s->kind == COPY && s->target == 0) {
            out[i] = a[i];
        } else { /* RELU, RESHAPE_RELU, PEER and COPY onto an APU */
            out[i] = relu_of(a[i]);
        }
    }
}

/* The device's values against the host's: BLAS sums in another order than the host, so not
 * bit for bit. The host then takes the device's, so that differences do not build up. */
static bool close_to_shadow(const float *got, float *shadow) {
    bool close = true;
    for (int i = 0; i < N * N; i++) {
        float difference = got[i] - shadow[i];
        close = close && difference < 1e-4f && difference > -1e-4f;
    }
    memcpy(shadow, got, N * N * sizeof *got);
    return close;
}

/* ---- Steps ----------------------------------------------------------------------------------- */

static tp_status_t *read_slot(worker_t *w, int slot) {
    float got[N * N];
    tp_status_t *error = tp_tensor_read(w->slots[slot], got, sizeof got);
    if (error != NULL) return error;
    w->reads++;
    fold(w, got, N * N);
    if (!close_to_shadow(got, w->shadow[slot])) fail_with(w, "a read differs from the host", NULL);
    return NULL;
}

static tp_status_t *sum_and_read(worker_t *w, int slot) {
    tp_tensor_t *sum;
    tp_status_t *error = tp_sum(w->context, w->slots[slot], NULL, 0, false, &sum);
    if (error != NULL) return error;
    float got;
    error = tp_tensor_read(sum, &got, sizeof got);
    tp_tensor_release(sum);
    if (error != NULL) return error;
    double expected = 0;
    for (int i = 0; i < N * N; i++) expected += w->shadow[slot][i];
    if (got - expected > 1e-3 || got - expected < -1e-3)
        fail_with(w, "a sum differs from the host", NULL);
    w->reads++;
    fold(w, &got, 1);
    return NULL;
}

static tp_status_t *reshape_relu(tp_context_t *context, tp_tensor_t *x, tp_tensor_t **out) {
    tp_tensor_t *flat = NULL, *relu = NULL;
    tp_status_t *error = tp_reshape(context, x, TP_SHAPE(N * N / 4, 4), &flat);
    if (error == NULL) error = tp_relu(context, flat, &relu);
    if (error == NULL) error = tp_reshape(context, relu, TP_SHAPE(N, N), out);
    tp_tensor_release(flat);
    tp_tensor_release(relu);
    return error;
}

/* `product` (taken) times `factor`. */
static tp_status_t *scaled(tp_context_t *context, tp_tensor_t *product, tp_tensor_t *factor,
                           tp_tensor_t **out) {
    tp_status_t *error = tp_mul(context, product, factor, out);
    tp_tensor_release(product);
    return error;
}

/* The step's ops, inside its scope: a new value for slot `dst` in *out, or none. */
static tp_status_t *run_ops(worker_t *w, const step_t *s, tp_tensor_t **out) {
    tp_context_t *context = w->context;
    tp_tensor_t *a = w->slots[s->a], *b = w->slots[s->b], *t = NULL;
    tp_status_t *error = NULL;
    switch (s->kind) {
    case RELU: return tp_relu(context, a, out);
    case ADD_HALF:
        error = tp_add(context, a, b, &t);
        return error != NULL ? error : scaled(context, t, w->half, out);
    case MUL: return tp_mul(context, a, b, out);
    case MATMUL_SCALED:
        error = tp_matmul(context, a, b, false, false, &t);
        return error != NULL ? error : scaled(context, t, w->inverse_n, out);
    case SUM_READ: return sum_and_read(w, s->a);
    case RESHAPE_RELU: return reshape_relu(context, a, out);
    case COPY:
        return scoped(context, targets[s->target], s->target == 0 ? tp_identity : tp_relu, a,
                      out);
    case PEER:
        error = scoped(context, targets[1 + s->target % 2], tp_relu, a, &t);
        if (error == NULL) error = scoped(context, targets[2 - s->target % 2], tp_relu, t, out);
        tp_tensor_release(t);
        return error;
    default: return read_slot(w, s->a);
    }
}

static tp_status_t *run_step(worker_t *w, const step_t *s) {
    tp_tensor_t *out = NULL;
    tp_status_t *error = enter(w->context, scopes[s->scope]);
    if (error != NULL) return error;
    error = run_ops(w, s, &out);
    leave(w->context, scopes[s->scope]);
    if (error != NULL || out == NULL) return error;
    float values[N * N];
    shadow_step(w, s, values);
    memcpy(w->shadow[s->dst], values, sizeof values);
    tp_tensor_release(w->slots[s->dst]);
    w->slots[s->dst] = out;
    return NULL;
}

/* Relu of the thread's big tensor onto an APU, read back and checked element by element. */
static tp_status_t *near_limit(worker_t *w, int apu) {
    tp_tensor_t *y;
    tp_status_t *error = scoped(w->context, targets[1 + apu], tp_relu, w->big, &y);
    if (error != NULL) return error;
    error = tp_tensor_read(y, w->big_out, BIG * sizeof(float));
    tp_tensor_release(y);
    if (error != NULL) return error;
    for (int i = 0; i < BIG; i++)
        if (w->big_out[i] != relu_of(w->big_values[i])) {
            fail_with(w, "a big tensor's Relu differs from the host", NULL);
            break;
        }
    w->reads++;
    fold(w, w->big_out, 64);
    return NULL;
}

/* The huge tensor cannot go to APU:0 whatever else is there: a status naming the op, the
 * shape, the device and its allocator. */
static void over_limit(worker_t *w) {
    tp_tensor_t *y = NULL;
    tp_status_t *error = scoped(w->context, targets[1], tp_relu, w->huge, &y);
    const char *expected = "Relu: input 0: OOM when allocating tensor with shape [13631488] and "
                           "type float32 on " APU_PREFIX "0 by allocator APU_0_bfc\ncannot "
                           "allocate 54525952 bytes (no free block is large enough)";
    if (error == NULL) {
        tp_tensor_release(y);
        fail_with(w, "a tensor larger than APU:0's limit went there", NULL);
    } else if (tp_status_code(error) != TP_RESOURCE_EXHAUSTED ||
               strncmp(tp_status_message(error), expected, strlen(expected)) != 0) {
        fail_with(w, "a tensor larger than APU:0's limit failed otherwise", error);
    } else {
        w->over_limit_refusals++;
        tp_status_free(error);
    }
}

/* Out of memory on an APU while other threads hold it: the status names the op and the
 * device. */
static bool apu_out_of_memory(const tp_status_t *status) {
    const char *message = tp_status_message(status);
    return tp_status_code(status) == TP_RESOURCE_EXHAUSTED &&
           strncmp(message, "Relu: ", 6) == 0 &&
           strstr(message, "OOM when allocating tensor with shape ") != NULL &&
           strstr(message, " on " APU_PREFIX) != NULL;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Threads that ran out of memory retry one at a time. Retrying each on its own, every one of
 * them could hold the copy of its input that the others' outputs need, and none would ever get
 * both (under ThreadSanitizer's timing they did, for a minute). */
static pthread_mutex_t retry_lane = PTHREAD_MUTEX_INITIALIZER;

/* Runs a step, again while an APU is out of memory, for at most a minute in the lane. */
static bool attempt(worker_t *w, const step_t *s) {
    double start = 0;
    bool in_lane = false, done = false;
    for (;;) {
        tp_status_t *error = s->kind == NEAR_LIMIT ? near_limit(w, s->target) : run_step(w, s);
        if (error == NULL) {
            done = w->failure[0] == '\0';
            break;
        }
        if (!apu_out_of_memory(error) || (in_lane && seconds_now() - start > 60)) {
            fail_with(w, "a step failed", error);
            break;
        }
        tp_status_free(error);
        w->oom_retries++;
        if (!in_lane) {
            pthread_mutex_lock(&retry_lane);
            in_lane = true;
            start = seconds_now();
        }
        struct timespec pause = {0, 200 * 1000};
        nanosleep(&pause, NULL);
    }
    if (in_lane) pthread_mutex_unlock(&retry_lane);
    return done;
}

static step_t next_step(worker_t *w, int i) {
    if (i % BIG_EVERY == BIG_EVERY - 1)
        return (step_t){.kind = NEAR_LIMIT, .target = (i / BIG_EVERY + w->index) % 2};
    if (i % HUGE_EVERY == HUGE_EVERY / 2) return (step_t){.kind = OVER_LIMIT};
    step_t s;
    s.kind = (kind_t)pick(w, NUM_DRAWN);
    s.scope = pick(w, 4);
    s.target = pick(w, 3);
    s.a = pick(w, SLOTS);
    s.b = pick(w, SLOTS);
    s.dst = pick(w, SLOTS);
    return s;
}

static tp_status_t *scalar(tp_context_t *context, float value, tp_tensor_t **out) {
    return tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &value, sizeof value, out);
}

/* The thread's constants, slots and big tensor; false, with the failure kept, if one fails. */
static bool start(worker_t *w) {
    w->rng = 0x5EEDu * (uint64_t)(w->index + 1);
    w->big_values = malloc(BIG * sizeof(float));
    w->big_out = malloc(BIG * sizeof(float));
    if (w->big_values == NULL || w->big_out == NULL) {
        fail_with(w, "out of host memory", NULL);
        return false;
    }
    tp_status_t *error = scalar(w->context, 0.5f, &w->half);
    if (error == NULL) error = scalar(w->context, 1.0f / N, &w->inverse_n);
    for (int slot = 0; slot < SLOTS && error == NULL; slot++) {
        for (int i = 0; i < N * N; i++) w->shadow[slot][i] = random_value(w);
        error = tp_tensor_create(w->context, TP_FLOAT32, TP_SHAPE(N, N), w->shadow[slot],
                                 sizeof w->shadow[slot], &w->slots[slot]);
    }
    /* Drawing millions of values would cost more than the ops: a cheap pattern of both signs
     * serves as well, since only the element-wise Relu of it is checked. */
    for (int i = 0; i < BIG; i++) w->big_values[i] = (float)(i % 1021 - 510 + w->index) / 512.0f;
    if (error == NULL)
        error = tp_tensor_create(w->context, TP_FLOAT32, TP_SHAPE(BIG), w->big_values,
                                 BIG * sizeof(float), &w->big);
    if (error != NULL) fail_with(w, "starting", error);
    return error == NULL;
}

static void *work(void *arg) {
    worker_t *w = arg;
    start(w);
    for (int i = 0; i < ops_per_thread && w->failure[0] == '\0'; i++) {
        step_t s = next_step(w, i);
        if (s.kind == OVER_LIMIT)
            over_limit(w);
        else
            attempt(w, &s);
    }
    /* Whatever each slot holds at the end counts too. */
    for (int slot = 0; slot < SLOTS && w->failure[0] == '\0'; slot++) {
        tp_status_t *error = read_slot(w, slot);
        if (error != NULL) fail_with(w, "the last reads", error);
    }
    for (int slot = 0; slot < SLOTS; slot++) tp_tensor_release(w->slots[slot]);
    tp_tensor_release(w->half);
    tp_tensor_release(w->inverse_n);
    tp_tensor_release(w->big);
    free(w->big_values);
    free(w->big_out);
    return NULL;
}

/* ---- The test -------------------------------------------------------------------------------- */

static int setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    options.soft_device_placement = true;
    tp_log_set_level(TP_LOG_ERROR); /* fallbacks of ops without APU kernels are expected */
    if (create_context_state(state, &options) != 0) return -1;
    tp_status_t *error = tp_context_set_memory_growth(*state, "APU:1", true);
    if (error == NULL) return 0;
    print_error("%s\n", tp_status_message(error));
    tp_status_free(error);
    return -1;
}

static int warnings;

static void count_warning(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    print_error("%s\n", line);
    if (level >= TP_LOG_WARNING) warnings++;
}

/* Closing the context returns every allocator's regions to their devices; a region or a chunk
 * still live would be a warning. */
static int teardown(void **state) {
    tp_log_set_callback(count_warning, NULL);
    tp_log_set_level(TP_LOG_WARNING);
    tp_context_destroy(*state);
    tp_log_set_callback(NULL, NULL);
    tp_log_set_level(TP_LOG_ERROR);
    return warnings == 0 ? 0 : -1;
}

/* Raw memory taken from each physical device is exactly its allocators' regions: nothing else
 * (a copy's staging, a failed step's block) holds any. */
static void assert_raw_memory_is_the_allocators(tp_context_t *context) {
    tp_device_registry_t *registry = &context->registry;
    for (size_t p = 0; p < registry->num_physical_devices; p++) {
        tp_physical_device_t *physical = registry->physical_devices[p];
        uint64_t reserved = 0;
        for (size_t d = 0; d < registry->num_devices; d++) {
            if (registry->devices[d]->physical != physical) continue;
            tp_bfc_stats_t stats;
            tp_device_memory_stats(registry->devices[d], &stats);
            reserved += stats.bytes_reserved;
        }
        assert_int_equal(atomic_load(&physical->bytes_in_use), reserved);
        if (strcmp(tp_physical_device_type(physical), "APU") != 0) continue;
        uint64_t free_bytes, total;
        tp_physical_device_memory_usage(physical, &free_bytes, &total);
        assert_int_equal(total - free_bytes, reserved);
    }
}

static worker_t alone[THREADS], together[THREADS];

static void eight_threads_give_what_one_gives(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *value, *huge;
    assert_ok(scalar(context, -1.0f, &value));
    assert_ok(tp_fill(context, TP_SHAPE(HUGE_ELEMENTS), value, &huge));
    tp_tensor_release(value);
    for (int t = 0; t < THREADS; t++) {
        alone[t] = (worker_t){.context = context, .index = t, .huge = huge};
        work(&alone[t]);
        if (alone[t].failure[0] != '\0') fail_msg("%s", alone[t].failure);
    }
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        together[t] = (worker_t){.context = context, .index = t, .huge = huge};
        assert_int_equal(pthread_create(&threads[t], NULL, work, &together[t]), 0);
    }
    uint64_t retries = 0;
    for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_join(threads[t], NULL), 0);
    for (int t = 0; t < THREADS; t++) {
        if (together[t].failure[0] != '\0') fail_msg("%s", together[t].failure);
        assert_int_equal(together[t].checksum, alone[t].checksum);
        assert_int_equal(together[t].reads, alone[t].reads);
        int refusals = (ops_per_thread + HUGE_EVERY / 2 - 1) / HUGE_EVERY;
        assert_int_equal(alone[t].over_limit_refusals, refusals);
        assert_int_equal(together[t].over_limit_refusals, refusals);
        retries += together[t].oom_retries;
    }
    print_message("%d threads x %d ops: %llu retries after running out of APU memory\n",
                  THREADS, ops_per_thread, (unsigned long long)retries);
    tp_tensor_release(huge);
    assert_int_equal(tensor_bytes_in_use(context), 0);
    assert_raw_memory_is_the_allocators(context);
}

int main(int argc, char **argv) {
    if (argc == 2) ops_per_thread = atoi(argv[1]);
    if (ops_per_thread <= 0) {
        fprintf(stderr, "usage: test_apu_stress [ops per thread]\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(eight_threads_give_what_one_gives, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
