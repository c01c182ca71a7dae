/* SPDX-License-Identifier: Apache-2.0 */
/* Multi-worker collectives and training steps, run under mpirun:
 *
 *   mpirun -np 2 build/bin/bench_multi_worker            all-reduce bandwidth, 4 KiB to 64 MiB
 *   mpirun -np 1 build/bin/bench_multi_worker --step     a data-parallel step, 1 worker
 *   mpirun -np 2 build/bin/bench_multi_worker --step     ... and 2 workers (same global batch)
 *
 * The bandwidth table puts three all-reduces of the same float32 buffers side by side in one
 * run: MPI_Allreduce called directly (in place), the workers' collective tensorplug uses
 * (tp_worker_all_reduce: notes, then a ring per chunk, in place), and
 * tp_mirrored_strategy_all_reduce on a tensor (that collective, reading the tensor where it
 * lies and summing into the result's memory, plus the strategy's hand-over between replica
 * threads). Bandwidth is the buffer's bytes over the median time of a call.
 * Worker 0 prints. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "distribute/worker_comm.h"
#include "tensorplug/training.h"

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *times, int count) {
    qsort(times, (size_t)count, sizeof *times, compare_doubles);
    return times[count / 2];
}

/* One local replica: its values are in the buffer already, as the strategy reads them there,
 * so there is nothing to add. */
static void values_in_place(size_t begin, size_t end, void *into, void *arg) {
    (void)begin, (void)end, (void)into, (void)arg;
}

/* Repetitions for a buffer: about 0.3 s of MPI_Allreduce at a few GB/s, at least 5. */
static int repetitions(size_t bytes) {
    size_t r = ((size_t)1 << 30) / (bytes * 4 + 1);
    return r < 5 ? 5 : r > 200 ? 200 : (int)r;
}

static int bandwidth(void) {
    tp_worker_comm_t *workers;
    TP_CHECK(tp_worker_comm_get(&workers));
    const int rank = tp_worker_comm_rank(workers), size = tp_worker_comm_size(workers);
    tp_context_t *context = bench_cpu_context();
    const char *device = "/cpu:0";
    tp_mirrored_strategy_t *strategy;
    TP_CHECK(tp_multi_worker_mirrored_strategy_create(context, &device, 1, NULL, &strategy));
    if (rank == 0) {
        printf("all-reduce of float32 over %d workers (%s), median of repetitions\n", size,
               tp_worker_comm_description(workers));
        printf("%10s %6s %14s %14s %8s %14s %8s\n", "bytes", "reps", "MPI_Allreduce",
               "tp collective", "ratio", "tp tensor", "ratio");
    }
    for (size_t bytes = 4096; bytes <= (size_t)64 << 20; bytes *= 4) {
        const size_t count = bytes / sizeof(float);
        const size_t chunk = ((size_t)4 << 20) / sizeof(float);
        float *data = malloc(bytes), *recv = malloc(bytes);
        if (data == NULL || recv == NULL) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < count; i++) data[i] = (float)((i + (size_t)rank) % 7);
        const int reps = repetitions(bytes);
        double *mpi = malloc((size_t)reps * sizeof(double));
        double *ours = malloc((size_t)reps * sizeof(double));
        double *tensor = malloc((size_t)reps * sizeof(double));
        tp_tensor_t *in;
        TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE((int64_t)count), data, bytes,
                                  &in));
        for (int r = -1; r < reps; r++) { /* r = -1 warms up */
            memcpy(recv, data, bytes);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now_seconds();
            MPI_Allreduce(MPI_IN_PLACE, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t1 = now_seconds();
            MPI_Barrier(MPI_COMM_WORLD);
            tp_worker_all_reduce_args_t args = {.count = count, .dtype = TP_COMM_FLOAT32,
                                                .chunk_elements = chunk, .timeout_s = 60,
                                                .fill = values_in_place, .fill_arg = NULL,
                                                .buffer = recv};
            bool abandoned;
            memcpy(recv, data, bytes);
            double t2 = now_seconds();
            TP_CHECK(tp_worker_all_reduce(workers, &args, &abandoned));
            double t3 = now_seconds();
            MPI_Barrier(MPI_COMM_WORLD);
            tp_tensor_t *out;
            double t4 = now_seconds();
            TP_CHECK(tp_mirrored_strategy_all_reduce(strategy, TP_REDUCE_SUM, &in, &out));
            TP_CHECK(tp_tensor_wait(out));
            double t5 = now_seconds();
            tp_tensor_release(out);
            if (r >= 0) {
                mpi[r] = t1 - t0;
                ours[r] = t3 - t2;
                tensor[r] = t5 - t4;
            }
        }
        double m = median(mpi, reps), o = median(ours, reps), t = median(tensor, reps);
        if (rank == 0)
            printf("%10zu %6d %9.3f GB/s %9.3f GB/s %7.0f%% %9.3f GB/s %7.0f%%\n", bytes, reps,
                   (double)bytes / m * 1e-9, (double)bytes / o * 1e-9, 100.0 * m / o,
                   (double)bytes / t * 1e-9, 100.0 * m / t);
        fflush(stdout);
        tp_tensor_release(in);
        free(mpi);
        free(ours);
        free(tensor);
        free(data);
        free(recv);
    }
    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
    return 0;
}

/* ---- A training step ------------------------------------------------------------------------ */

enum { FEATURES = 512, UNITS = 512, GLOBAL_BATCH = 512, STEPS = 30 };

typedef struct step {
    tp_tensor_t *x;      /* the global batch, [GLOBAL_BATCH, FEATURES] */
    tp_variable_t *w;    /* [FEATURES, UNITS] */
} step_t;

/* One replica's part of a step: its shard of the batch through a dense layer with tanh, the
 * gradient of the mean square of the output, all-reduced over every worker. */
static tp_status_t *replica_step(tp_replica_context_t *replica, void *arg) {
    step_t *step = arg;
    tp_context_t *c = tp_replica_context(replica);
    int64_t begin, end;
    tp_replica_batch_shard(replica, GLOBAL_BATCH, &begin, &end);
    tp_tensor_t *x = NULL, *y = NULL, *a = NULL, *sq = NULL, *loss = NULL, *grad = NULL,
                *sum = NULL;
    tp_tape_t *tape = NULL;
    const int64_t begins[2] = {begin, 0}, sizes[2] = {end - begin, FEATURES};
    tp_status_t *error = tp_slice(c, step->x, begins, sizes, 2, &x);
    if (error == NULL) error = tp_tape_begin_with(c, NULL, &tape);
    tp_tensor_t *w = NULL;
    if (error == NULL) error = tp_variable_read(step->w, &w);
    if (error == NULL) error = tp_matmul(c, x, w, false, false, &y);
    if (error == NULL) error = tp_tanh(c, y, &a);
    if (error == NULL) error = tp_square(c, a, &sq);
    if (error == NULL) error = tp_mean(c, sq, NULL, 0, false, &loss);
    if (error == NULL) error = tp_tape_stop(tape);
    if (error == NULL) error = tp_tape_gradient_variables(tape, loss, &step->w, 1, &grad);
    if (error == NULL) error = tp_replica_all_reduce(replica, TP_REDUCE_MEAN, &grad, 1, &sum);
    if (error == NULL && tp_replica_index(replica) == 0)
        error = tp_variable_assign_sub(step->w, sum);
    tp_tape_destroy(tape);
    tp_tensor_release(w);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_tensor_release(a);
    tp_tensor_release(sq);
    tp_tensor_release(loss);
    tp_tensor_release(grad);
    tp_tensor_release(sum);
    return error;
}

static int training_step(void) {
    tp_context_t *context = bench_cpu_context();
    const char *device = "/cpu:0";
    tp_mirrored_strategy_t *strategy;
    TP_CHECK(tp_multi_worker_mirrored_strategy_create(context, &device, 1, NULL, &strategy));
    step_t step = {NULL, NULL};
    tp_tensor_t *w0;
    TP_CHECK(tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(GLOBAL_BATCH, FEATURES), 1,
                               &step.x));
    TP_CHECK(tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(FEATURES, UNITS), 2, &w0));
    TP_CHECK(tp_variable_create(context, "w", w0, NULL, &step.w));
    TP_CHECK(tp_mirrored_strategy_broadcast_variables(strategy, &step.w, 1));
    TP_CHECK(tp_mirrored_strategy_run(strategy, replica_step, &step)); /* warm-up */
    double t0 = now_seconds();
    for (int s = 0; s < STEPS; s++)
        TP_CHECK(tp_mirrored_strategy_run(strategy, replica_step, &step));
    TP_CHECK(tp_context_synchronize(context));
    double per_step = (now_seconds() - t0) / STEPS;
    if (tp_mirrored_strategy_worker_index(strategy) == 0)
        printf("training step (dense %dx%d, tanh, global batch %d): %zu worker(s), %.2f ms/step, "
               "%.0f samples/s\n",
               FEATURES, UNITS, GLOBAL_BATCH, tp_mirrored_strategy_num_workers(strategy),
               per_step * 1e3, GLOBAL_BATCH / per_step);
    tp_tensor_release(w0);
    tp_variable_destroy(step.w);
    tp_tensor_release(step.x);
    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
    return 0;
}

int main(int argc, char **argv) {
    /* Statically linked, the core cannot find the library beside itself: name the build's. */
    setenv("TP_MPI_LIBRARY", TP_BENCH_MPI_LIBRARY, 0);
    if (argc > 1 && strcmp(argv[1], "--step") == 0) return training_step();
    return bandwidth();
}
