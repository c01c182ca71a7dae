/* The benchmarks' clock. */
#ifndef TP_BENCH_BENCH_CLOCK_H
#define TP_BENCH_BENCH_CLOCK_H

#include <time.h>

static inline double now_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

#endif
