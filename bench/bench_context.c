/* SPDX-License-Identifier: Apache-2.0 */
/* Time to create and destroy a context, without plug-ins and with the tree's plug-ins, beside
 * a malloc/free baseline measured in the same run. The first context of a process also loads
 * the plug-in files; that cost is shown on its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

enum { ROUNDS = 2000 };

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double samples[ROUNDS];

static void report(const char *what, double baseline_median) {
    qsort(samples, ROUNDS, sizeof samples[0], compare_doubles);
    double median = samples[ROUNDS / 2], p99 = samples[ROUNDS * 99 / 100];
    printf("%-40s median %9.2f us   p99 %9.2f us", what, median * 1e6, p99 * 1e6);
    if (baseline_median > 0) printf("   (%.0fx baseline)", median / baseline_median);
    printf("\n");
}

static double create_destroy(const tp_context_options_t *options) {
    double start = now_seconds();
    tp_context_t *context;
    tp_status_t *status = tp_context_create(options, &context);
    if (status != NULL) {
        fprintf(stderr, "bench_context: %s\n", tp_status_message(status));
        exit(1);
    }
    tp_context_destroy(context);
    return now_seconds() - start;
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR); /* the test plug-ins' refusals are expected */

    volatile unsigned char sink = 0;
    for (int i = 0; i < ROUNDS; i++) {
        double start = now_seconds();
        unsigned char *block = malloc(4096);
        if (block == NULL) return 1;
        memset(block, i, 4096);
        sink ^= block[i % 4096];
        free(block);
        samples[i] = now_seconds() - start;
    }
    report("baseline: malloc+memset+free 4 KiB", 0);
    double baseline = samples[ROUNDS / 2];

    tp_context_options_t none = TP_CONTEXT_OPTIONS_INIT;
    none.no_plugins = true;
    for (int i = 0; i < ROUNDS; i++) samples[i] = create_destroy(&none);
    report("context, no plug-ins", baseline);

    tp_context_options_t with = TP_CONTEXT_OPTIONS_INIT;
    with.plugin_path = TP_BENCH_PLUGIN_PATH;
    with.skip_installed_plugins = true;
    double first = create_destroy(&with);
    printf("%-40s %9.2f us (once per process: opens and initialises each file)\n",
           "first context, tree's plug-ins", first * 1e6);
    for (int i = 0; i < ROUNDS; i++) samples[i] = create_destroy(&with);
    report("context, tree's plug-ins", baseline);
    tp_context_t *context;
    if (tp_context_create(&with, &context) == NULL) {
        printf("plug-ins found: %zu, devices: %zu\n", tp_plugin_count(context),
               tp_physical_device_count(context, NULL));
        tp_context_destroy(context);
    }
    (void)sink;
    return 0;
}
