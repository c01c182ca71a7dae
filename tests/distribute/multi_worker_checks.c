/* SPDX-License-Identifier: Apache-2.0 */
/* Checks of the multi-worker strategy, run by every worker of `mpirun -np N` (N >= 1; also
 * alone, as a job of one). Each check prints "PASS name" or "FAIL name: why" on worker K's
 * lines ("[worker K] ..."); the exit status is 1 when one failed.
 *
 *   multi_worker_checks names       device names and placement, and whether MPI is mapped
 *   multi_worker_checks collectives all-reduce (sum and mean, float32 and float64, in chunks,
 *                                   two local replicas), broadcast of variables, refusals
 *   multi_worker_checks deadline    the last worker skips an all-reduce: every other worker
 *                                   must get DEADLINE_EXCEEDED naming it, within about 1 s */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tensorplug/training.h>

static int failures;
static size_t worker;

/* A pass shows `why` too, when there is one: the message a user would read. */
static void report(const char *name, bool ok, const char *why) {
    bool show = why[0] != '\0';
    printf("[worker %zu] %s %s%s%s\n", worker, ok ? "PASS" : "FAIL", name, show ? ": " : "",
           show ? why : "");
    fflush(stdout);
    failures += ok ? 0 : 1;
}

/* Reports and frees `status`: a pass when it is NULL. */
static bool expect_ok(const char *name, tp_status_t *status) {
    report(name, status == NULL, status != NULL ? tp_status_message(status) : "");
    tp_status_free(status);
    return status == NULL;
}

/* A pass when `status` has `code` and its message holds `text`. */
static void expect_error(const char *name, tp_status_t *status, tp_code_t code,
                         const char *text) {
    char why[1024];
    bool ok = status != NULL && tp_status_code(status) == code &&
              strstr(tp_status_message(status), text) != NULL;
    snprintf(why, sizeof why, "wanted %s containing '%s', got %s: %s", tp_code_name(code), text,
             status != NULL ? tp_code_name(tp_status_code(status)) : "success",
             status != NULL ? tp_status_message(status) : "");
    report(name, ok, ok ? tp_status_message(status) : why);
    tp_status_free(status);
}

static bool mapped(const char *library) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, maps) != NULL) found = strstr(line, library);
    fclose(maps);
    return found;
}

/* ---- names ----------------------------------------------------------------------------------- */

static int check_names(void) {
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    worker = rank != NULL ? (size_t)atoi(rank) : 0;
    char expected[128];
    if (rank != NULL)
        snprintf(expected, sizeof expected, "/job:worker/replica:0/task:%zu/device:CPU:0",
                 worker);
    else
        snprintf(expected, sizeof expected, "/job:localhost/replica:0/task:0/device:CPU:0");
    tp_context_t *context;
    if (!expect_ok("context", tp_context_create(NULL, &context))) return 1;
    char listing[4096] = "";
    FILE *out = fmemopen(listing, sizeof listing - 1, "w");
    tp_status_t *status = tp_list_logical_devices(context, "CPU", out);
    fclose(out);
    char wanted[256];
    snprintf(wanted, sizeof wanted, "LogicalDevice(name='%s', device_type='CPU')", expected);
    bool listed = status == NULL && strstr(listing, wanted);
    report("listing names this worker's CPU", listed, listed ? "" : listing);
    tp_status_free(status);
    /* The placement log of one op, through a scope naming the worker's own task. */
    char scope[128];
    snprintf(scope, sizeof scope, "/task:%zu/device:CPU:0", worker);
    tp_tensor_t *x = NULL, *y = NULL;
    const float value = 2.0f;
    status = tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &value, sizeof value, &x);
    if (status == NULL) status = tp_device_push(context, scope);
    if (status == NULL) {
        fflush(stdout);
        tp_context_set_log_device_placement(context, true);
        status = tp_relu(context, x, &y);
        tp_context_set_log_device_placement(context, false);
        tp_status_free(tp_device_pop(context));
    }
    expect_ok("an op placed by the worker's own task name", status);
    /* Another worker's device is not this process's: an op placed there fails, naming it. */
    if (rank != NULL) {
        snprintf(scope, sizeof scope, "/job:worker/task:%zu/device:CPU:0", worker + 1);
        char named[128];
        snprintf(named, sizeof named, "/job:worker/replica:0/task:%zu/device:CPU:0 unknown",
                 worker + 1);
        tp_tensor_t *z = NULL;
        status = tp_device_push(context, scope);
        if (status == NULL) {
            status = tp_relu(context, x, &z);
            tp_status_free(tp_device_pop(context));
        }
        expect_error("another worker's device is refused", status, TP_NOT_FOUND, named);
        tp_tensor_release(z);
    }
    tp_tensor_release(x);
    tp_tensor_release(y);
    bool loaded = mapped("libmpi") || mapped("libtensorplug_mpi");
    report("MPI is not loaded by a program that never asks for it", !loaded,
           loaded ? "libmpi is mapped" : "");
    /* A library that cannot be loaded is an error naming it, and the program goes on. */
    setenv("TP_MPI_LIBRARY", "/nonexistent/libtensorplug_mpi.so", 1);
    const char *cpu = "/cpu:0";
    tp_mirrored_strategy_t *strategy = NULL;
    expect_error("a missing MPI library is UNAVAILABLE, named",
                 tp_multi_worker_mirrored_strategy_create(context, &cpu, 1, NULL, &strategy),
                 TP_UNAVAILABLE, "'/nonexistent/libtensorplug_mpi.so'");
    const char *twice[2] = {"/cpu:0", "/CPU:0"};
    expect_error("a device named twice is refused",
                 tp_multi_worker_mirrored_strategy_create(context, twice, 2, NULL, &strategy),
                 TP_INVALID_ARGUMENT, "named twice");
    int64_t begin = -1, end = -1;
    tp_replica_batch_shard(NULL, 32, &begin, &end);
    report("a NULL replica's shard is empty", begin == 0 && end == 0, "");
    tp_context_destroy(context);
    return failures != 0;
}

/* ---- collectives ----------------------------------------------------------------------------- */

enum { COUNT = 1001 }; /* not a multiple of any worker count: the last chunk is padded */

/* Replica r of worker w offers element i = (w * 2 + r + 1) * (i + 1) + 1/4 of a float32 or
 * float64 tensor: sums of small multiples of 1/4 are exact, so the expected values are too. */
static double offered(size_t w, size_t r, size_t i) {
    return (double)(w * 2 + r + 1) * (double)(i + 1) + 0.25;
}

static void check_all_reduce(tp_context_t *context, tp_mirrored_strategy_t *strategy,
                             tp_dtype_t dtype, tp_reduce_op_t op, const char *name) {
    const size_t workers = tp_mirrored_strategy_num_workers(strategy);
    tp_tensor_t *in[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
    static double values64[COUNT];
    static float values32[COUNT];
    tp_status_t *status = NULL;
    for (size_t r = 0; r < 2 && status == NULL; r++) {
        for (size_t i = 0; i < COUNT; i++) {
            values64[i] = offered(worker, r, i);
            values32[i] = (float)values64[i];
        }
        status = dtype == TP_FLOAT64
                     ? tp_tensor_create(context, dtype, TP_SHAPE(7, 143), values64,
                                        sizeof values64, &in[r])
                     : tp_tensor_create(context, dtype, TP_SHAPE(7, 143), values32,
                                        sizeof values32, &in[r]);
    }
    if (status == NULL) status = tp_mirrored_strategy_all_reduce(strategy, op, in, out);
    char why[256] = "";
    for (size_t r = 0; r < 2 && status == NULL && why[0] == '\0'; r++) {
        status = dtype == TP_FLOAT64 ? tp_tensor_read(out[r], values64, sizeof values64)
                                     : tp_tensor_read(out[r], values32, sizeof values32);
        for (size_t i = 0; i < COUNT && status == NULL && why[0] == '\0'; i++) {
            double want = 0.0;
            for (size_t w = 0; w < workers; w++)
                for (size_t k = 0; k < 2; k++) want += offered(w, k, i);
            if (op == TP_REDUCE_MEAN) want /= (double)(2 * workers);
            double got = dtype == TP_FLOAT64 ? values64[i] : (double)values32[i];
            double tolerance = op == TP_REDUCE_MEAN ? 1e-6 * fabs(want) : 0.0;
            if (fabs(got - want) > tolerance)
                snprintf(why, sizeof why, "replica %zu element %zu is %.9g, not %.9g", r, i, got,
                         want);
        }
    }
    if (status != NULL) snprintf(why, sizeof why, "%s", tp_status_message(status));
    report(name, status == NULL && why[0] == '\0', why);
    tp_status_free(status);
    for (size_t r = 0; r < 2; r++) {
        tp_tensor_release(in[r]);
        tp_tensor_release(out[r]);
    }
}

enum { MIXED_TENSORS = 3 };

typedef struct mixed {
    tp_tensor_t *in[2][MIXED_TENSORS], *out[2][MIXED_TENSORS];
} mixed_t;

static tp_status_t *all_reduce_mixed(tp_replica_context_t *replica, void *arg) {
    mixed_t *mixed = arg;
    size_t r = tp_replica_index(replica);
    return tp_replica_all_reduce(replica, TP_REDUCE_SUM, mixed->in[r], MIXED_TENSORS,
                                 mixed->out[r]);
}

/* Three float32 tensors in one all-reduce: two small ones, which travel together, and one of
 * 70001 elements (over 256 KiB), which is summed in a collective of its own straight into its
 * result, in several 64 KiB chunks; with one local device its values are read where they lie.
 * Element i of tensor t of replica r offers offered(w, r, i + t). */
static void check_mixed_sizes(tp_context_t *context, const char *const *devices, size_t replicas,
                              const char *name) {
    enum { TENSORS = MIXED_TENSORS, LARGE = 70001 };
    const int64_t lengths[TENSORS] = {15, LARGE, 14};
    tp_multi_worker_options_t options = TP_MULTI_WORKER_OPTIONS_INIT;
    options.chunk_bytes = 64 << 10;
    options.collective_timeout_seconds = 60;
    tp_mirrored_strategy_t *strategy = NULL;
    tp_status_t *status = tp_multi_worker_mirrored_strategy_create(context, devices, replicas,
                                                                   &options, &strategy);
    const size_t workers = tp_mirrored_strategy_num_workers(strategy);
    static float values[LARGE];
    mixed_t mixed = {{{NULL}}, {{NULL}}};
    for (size_t r = 0; r < replicas && status == NULL; r++)
        for (size_t t = 0; t < TENSORS && status == NULL; t++) {
            for (int64_t i = 0; i < lengths[t]; i++)
                values[i] = (float)offered(worker, r, (size_t)i + t);
            status = tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(lengths[t]), values,
                                      (size_t)lengths[t] * sizeof(float), &mixed.in[r][t]);
        }
    if (status == NULL) status = tp_mirrored_strategy_run(strategy, all_reduce_mixed, &mixed);
    char why[256] = "";
    for (size_t r = 0; r < replicas && status == NULL && why[0] == '\0'; r++)
        for (size_t t = 0; t < TENSORS && status == NULL && why[0] == '\0'; t++) {
            status = tp_tensor_read(mixed.out[r][t], values, (size_t)lengths[t] * sizeof(float));
            for (int64_t i = 0; i < lengths[t] && status == NULL && why[0] == '\0'; i++) {
                double want = 0.0; /* exact: sums of multiples of 1/4 below 2^22 */
                for (size_t w = 0; w < workers; w++)
                    for (size_t k = 0; k < replicas; k++) want += offered(w, k, (size_t)i + t);
                if ((double)values[i] != want)
                    snprintf(why, sizeof why, "replica %zu tensor %zu element %lld is %.9g, not "
                             "%.9g", r, t, (long long)i, (double)values[i], want);
            }
        }
    if (status != NULL) snprintf(why, sizeof why, "%s", tp_status_message(status));
    report(name, status == NULL && why[0] == '\0', why);
    tp_status_free(status);
    for (size_t r = 0; r < 2; r++)
        for (size_t t = 0; t < TENSORS; t++) {
            tp_tensor_release(mixed.in[r][t]);
            tp_tensor_release(mixed.out[r][t]);
        }
    tp_mirrored_strategy_destroy(strategy);
}

static void check_broadcast(tp_context_t *context, tp_mirrored_strategy_t *strategy) {
    double mine[3] = {(double)worker, 10.0 + (double)worker, -1.0};
    tp_tensor_t *initial = NULL, *read = NULL;
    tp_variable_t *variable = NULL;
    tp_status_t *status = tp_tensor_create(context, TP_FLOAT64, TP_SHAPE(3), mine, sizeof mine,
                                           &initial);
    if (status == NULL) status = tp_variable_create(context, "v", initial, NULL, &variable);
    if (status == NULL)
        status = tp_mirrored_strategy_broadcast_variables(strategy, &variable, 1);
    if (status == NULL) status = tp_variable_read(variable, &read);
    if (status == NULL) status = tp_tensor_read(read, mine, sizeof mine);
    bool ok = status == NULL && mine[0] == 0.0 && mine[1] == 10.0 && mine[2] == -1.0;
    report("broadcast of variables gives worker 0's values", ok,
           status != NULL ? tp_status_message(status) : ok ? "" : "values differ from worker 0's");
    tp_status_free(status);
    tp_tensor_release(initial);
    tp_tensor_release(read);
    tp_variable_destroy(variable);

    /* A variable of another shape on the last worker: every worker refuses, naming a worker. */
    const size_t workers = tp_mirrored_strategy_num_workers(strategy);
    if (workers > 1) {
        double zeros[4] = {0};
        int64_t length = worker + 1 == workers ? 4 : 3;
        status = tp_tensor_create(context, TP_FLOAT64, TP_SHAPE(length), zeros,
                                  (size_t)length * sizeof(double), &initial);
        if (status == NULL) status = tp_variable_create(context, "w", initial, NULL, &variable);
        if (status == NULL)
            expect_error("variables of different shapes are refused",
                         tp_mirrored_strategy_broadcast_variables(strategy, &variable, 1),
                         TP_INVALID_ARGUMENT, "dtypes and shapes: worker");
        else
            expect_ok("a variable to broadcast", status);
        tp_tensor_release(initial);
        tp_variable_destroy(variable);
    }
}

static int check_collectives(size_t chunk_bytes) {
    tp_context_t *context;
    if (!expect_ok("context", tp_context_create(NULL, &context))) return 1;
    const uint64_t limits[2] = {64u << 20, 64u << 20};
    tp_status_t *status = tp_context_set_logical_devices(context, "CPU:0", limits, 2);
    const char *devices[2] = {"/cpu:0", "/cpu:1"};
    tp_multi_worker_options_t options = TP_MULTI_WORKER_OPTIONS_INIT;
    options.chunk_bytes = chunk_bytes;
    options.collective_timeout_seconds = 60;
    tp_mirrored_strategy_t *strategy = NULL;
    if (status == NULL)
        status = tp_multi_worker_mirrored_strategy_create(context, devices, 2, &options,
                                                          &strategy);
    if (!expect_ok("multi-worker strategy over two local devices", status)) return 1;
    worker = tp_mirrored_strategy_worker_index(strategy);
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    bool counted = (rank != NULL ? (size_t)atoi(rank) : 0) == worker &&
                   tp_mirrored_strategy_num_global_replicas(strategy) ==
                       2 * tp_mirrored_strategy_num_workers(strategy);
    report("the strategy's worker index is mpirun's rank", counted,
           counted ? "" : "index or replica count differs");
    bool loaded = mapped("libtensorplug_mpi");
    report("libtensorplug_mpi.so is loaded once asked for", loaded, loaded ? "" : "not mapped");
    check_all_reduce(context, strategy, TP_FLOAT32, TP_REDUCE_SUM, "all-reduce float32 sum");
    check_all_reduce(context, strategy, TP_FLOAT64, TP_REDUCE_SUM, "all-reduce float64 sum");
    check_all_reduce(context, strategy, TP_FLOAT32, TP_REDUCE_MEAN, "all-reduce float32 mean");
    check_mixed_sizes(context, devices, 2, "all-reduce of small and large tensors, two devices");
    check_mixed_sizes(context, devices, 1, "all-reduce of small and large tensors, one device");
    check_broadcast(context, strategy);

    /* Integers do not cross workers; every worker refuses alike, so none waits. */
    int32_t ints[2] = {1, 2};
    tp_tensor_t *in[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
    status = tp_tensor_create(context, TP_INT32, TP_SHAPE(2), ints, sizeof ints, &in[0]);
    if (status == NULL) in[1] = tp_tensor_retain(in[0]);
    if (status == NULL)
        expect_error("an int32 all-reduce is refused",
                     tp_mirrored_strategy_all_reduce(strategy, TP_REDUCE_SUM, in, out),
                     TP_INVALID_ARGUMENT, "float32 and float64");
    else
        expect_ok("an int32 tensor", status);
    tp_tensor_release(in[0]);
    tp_tensor_release(in[1]);

    tp_multi_worker_options_t bad = TP_MULTI_WORKER_OPTIONS_INIT;
    bad.collective_timeout_seconds = -1;
    tp_mirrored_strategy_t *refused = NULL;
    expect_error("a negative timeout is refused",
                 tp_multi_worker_mirrored_strategy_create(context, devices, 2, &bad, &refused),
                 TP_INVALID_ARGUMENT, "timeout");

    int64_t begin, end, covered = 0;
    bool contiguous = true;
    for (size_t s = 0; s < 7; s++) {
        tp_shard_range(100, 7, s, &begin, &end);
        contiguous = contiguous && begin == covered && end - begin >= 14 && end - begin <= 15;
        covered = end;
    }
    bool even = contiguous && covered == 100;
    report("shards cover the items in order, evenly", even, even ? "" : "uneven");

    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
    return failures != 0;
}

/* ---- deadline -------------------------------------------------------------------------------- */

static tp_status_t *all_reduce_once(tp_context_t *context, tp_mirrored_strategy_t *strategy) {
    const float one = 1.0f;
    tp_tensor_t *in = NULL, *out = NULL;
    tp_status_t *status = tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(1), &one, sizeof one,
                                           &in);
    if (status == NULL)
        status = tp_mirrored_strategy_all_reduce(strategy, TP_REDUCE_SUM, &in, &out);
    tp_tensor_release(in);
    tp_tensor_release(out);
    return status;
}

static int check_deadline(void) {
    tp_context_t *context;
    if (!expect_ok("context", tp_context_create(NULL, &context))) return 1;
    const char *devices[1] = {"/cpu:0"};
    tp_multi_worker_options_t options = TP_MULTI_WORKER_OPTIONS_INIT;
    options.collective_timeout_seconds = 1.0;
    tp_mirrored_strategy_t *strategy = NULL;
    if (!expect_ok("multi-worker strategy",
                   tp_multi_worker_mirrored_strategy_create(context, devices, 1, &options,
                                                            &strategy)))
        return 1;
    worker = tp_mirrored_strategy_worker_index(strategy);
    const size_t workers = tp_mirrored_strategy_num_workers(strategy);
    expect_ok("an all-reduce every worker joins", all_reduce_once(context, strategy));
    if (worker + 1 == workers && workers > 1) {
        /* The straggler: it never joins, and outlives the others' deadline. */
        sleep(5);
        printf("[worker %zu] skipped the all-reduce and slept 5 s\n", worker);
        tp_mirrored_strategy_destroy(strategy);
        tp_context_destroy(context);
        return failures != 0;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char missing[64];
    snprintf(missing, sizeof missing, "worker %zu of %zu did not join", workers - 1, workers);
    if (workers > 1) {
        expect_error("an all-reduce a worker skips ends at the deadline, naming it",
                     all_reduce_once(context, strategy), TP_DEADLINE_EXCEEDED, missing);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double waited =
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        char took[64];
        snprintf(took, sizeof took, "waited %.2f s for a 1 s timeout", waited);
        report("the deadline is the configured one", waited >= 0.9 && waited < 3.0, took);
        expect_error("a collective after a missed deadline is refused",
                     all_reduce_once(context, strategy), TP_FAILED_PRECONDITION,
                     "restart the job");
    }
    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
    printf("[worker %zu] %s\n", worker, failures == 0 ? "ALL PASSED" : "FAILED");
    fflush(stdout);
    return failures != 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "names") == 0) return check_names();
    if (strcmp(mode, "collectives") == 0) {
        /* Small chunks: 1001 elements cross in several, the last one padded. */
        int status = check_collectives(256);
        printf("[worker %zu] %s\n", worker, failures == 0 ? "ALL PASSED" : "FAILED");
        return status;
    }
    if (strcmp(mode, "deadline") == 0) return check_deadline();
    fprintf(stderr, "usage: %s names|collectives|deadline\n", argv[0]);
    return 2;
}
