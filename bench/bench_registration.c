/* SPDX-License-Identifier: Apache-2.0 */
/* The cost of registering a plug-in's ops and kernels, per kernel, at 1,000, 10,000 and 100,000
 * kernels: flat when registration is linear (it was quadratic: 40,000 took 11.8 s, and a kernel
 * cost 60 us at 10,000 and 1.8 ms at 100,000). Measured as a context's creation with a plug-in
 * that registers that many (tests/plugins/many_ops.c) less its creation with one that registers
 * none, beside a baseline measured in the same run: copying each definition and its names
 * alone, the least any registration does. What is left of a rise at 100,000 is the working set
 * (some 220 bytes a kernel, kept for the life of the process) leaving the caches. Each plug-in
 * file loads once per process, so each measurement loads a copy of its own. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

/* Each figure is the least of ROUNDS runs: the machine's other work only ever adds. */
enum { ROUNDS = 5 };

static char folder[] = "/tmp/tp_bench_registration_XXXXXX";
static int copies;

/* A fresh copy of the plug-in, so that the next context loads (and registers) it anew. */
static void fresh_copy(char path[PATH_MAX]) {
    snprintf(path, PATH_MAX, "%s/many_ops_%d.so", folder, copies++);
    FILE *in = fopen(TP_BENCH_MANY_OPS_PLUGIN, "rb");
    FILE *out = fopen(path, "wb");
    if (in == NULL || out == NULL) {
        fprintf(stderr, "bench_registration: cannot copy %s to %s\n", TP_BENCH_MANY_OPS_PLUGIN,
                path);
        exit(1);
    }
    char buffer[1 << 16];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, in)) > 0) fwrite(buffer, 1, got, out);
    fclose(in);
    if (fclose(out) != 0) exit(1);
}

/* Seconds to create (and destroy) a context whose plug-in registers `ops` ops with
 * `kernels_per_op` kernels each. */
static double load_seconds(size_t ops, size_t kernels_per_op) {
    char path[PATH_MAX], text[32];
    fresh_copy(path);
    snprintf(text, sizeof text, "%zu", ops);
    setenv("TP_MANY_OPS", text, 1);
    snprintf(text, sizeof text, "%zu", kernels_per_op);
    setenv("TP_MANY_KERNELS_PER_OP", text, 1);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = path;
    options.skip_installed_plugins = true;
    double start = now_seconds();
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));
    double elapsed = now_seconds() - start;
    tp_plugin_info_t info = {.struct_size = sizeof info};
    TP_CHECK(tp_plugin_get(context, 1, &info));
    if (!info.loaded || info.num_kernels != ops * kernels_per_op) {
        fprintf(stderr, "bench_registration: the plug-in did not load: %s\n", info.reason);
        exit(1);
    }
    tp_context_destroy(context);
    unlink(path);
    return elapsed;
}

/* The baseline: each kernel's definition, its names and its constraint copied into memory of
 * the host's, as registration must at least do. */
static double copy_seconds(size_t ops, size_t kernels_per_op) {
    static const tp_dtype_t float32_only[] = {TP_FLOAT32};
    static const tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    size_t count = ops * kernels_per_op;
    tp_kernel_def_t *defs = malloc(count * sizeof *defs);
    tp_type_constraint_t *constraints = malloc(count * sizeof *constraints);
    char *names = malloc(count * 32);
    if (defs == NULL || constraints == NULL || names == NULL) exit(1);
    double start = now_seconds();
    for (size_t o = 0, k = 0; o < ops; o++) {
        char name[32];
        snprintf(name, sizeof name, "Op%zu", o);
        for (size_t i = 0; i < kernels_per_op; i++, k++) {
            tp_kernel_def_t def = {.struct_size = sizeof def, .op = name, .device_type = "CPU",
                                   .constraints = &constraint, .num_constraints = 1};
            memcpy(&defs[k], &def, sizeof def);
            defs[k].op = strcpy(names + 32 * k, name);
            constraints[k] = constraint;
            defs[k].constraints = &constraints[k];
        }
    }
    double elapsed = now_seconds() - start;
    /* Read back, so that the copies cannot be optimised away. */
    volatile size_t sink = 0;
    for (size_t k = 0; k < count; k++) sink += strlen(defs[k].op) + defs[k].constraints->num_dtypes;
    (void)sink;
    free(defs);
    free(constraints);
    free(names);
    return elapsed;
}

static double least(const double samples[ROUNDS]) {
    double smallest = samples[0];
    for (int r = 1; r < ROUNDS; r++)
        if (samples[r] < smallest) smallest = samples[r];
    return smallest;
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    if (mkdtemp(folder) == NULL) {
        perror("bench_registration: mkdtemp");
        return 1;
    }
    double samples[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) samples[r] = load_seconds(0, 1);
    double empty = least(samples);
    printf("Registration per kernel: a context's creation with a plug-in of that many kernels,\n"
           "less with an empty one (%.0f us); beside copying each definition and its names.\n\n",
           empty * 1e6);
    printf("%-24s %9s %16s %14s %8s\n", "plug-in", "kernels", "register ns/kern",
           "copy ns/kern", "ratio");
    const struct {
        const char *shape;
        bool one_op;
    } shapes[] = {{"an op per kernel", false}, {"one op, many kernels", true}};
    const size_t sizes[] = {1000, 10000, 100000};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        double first = 0, last = 0;
        for (size_t n = 0; n < sizeof sizes / sizeof sizes[0]; n++) {
            size_t ops = shapes[s].one_op ? 1 : sizes[n];
            size_t per_op = shapes[s].one_op ? sizes[n] : 1;
            for (int r = 0; r < ROUNDS; r++) samples[r] = load_seconds(ops, per_op) - empty;
            double registering = least(samples) / (double)sizes[n] * 1e9;
            for (int r = 0; r < ROUNDS; r++) samples[r] = copy_seconds(ops, per_op);
            double copying = least(samples) / (double)sizes[n] * 1e9;
            printf("%-24s %9zu %16.1f %14.1f %7.1fx\n", shapes[s].shape, sizes[n], registering,
                   copying, registering / copying);
            if (n == 0) first = registering;
            last = registering;
        }
        printf("%-24s per kernel at 100,000 / at 1,000: %.2fx\n", "", last / first);
    }
    rmdir(folder);
    return 0;
}
