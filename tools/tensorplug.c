/* The `tensorplug` command: what a context sees of the installed plug-ins and devices, how it
 * places a traced function on them, and the conformance check of one plug-in. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorplug/tensorplug.h"

#define EXIT_USAGE 2

typedef struct {
    const char *name;
    const char *summary;
    const char *usage;
    int (*run)(int argc, char **argv);
} command_t;

static bool is_help(const char *arg) {
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

static int fail(tp_status_t *status) {
    fprintf(stderr, "tensorplug: %s: %s\n", tp_code_name(tp_status_code(status)),
            tp_status_message(status));
    tp_status_free(status);
    return EXIT_FAILURE;
}

/* A command's option: a flag sets `*flag`; one with `value` takes the next argument. */
typedef struct {
    const char *name;
    bool *flag;
    const char **value;
} option_t;

/* Returns 0, or EXIT_USAGE after naming the first argument that is no option of `command`
 * (an option that wants a value and is last counts as unknown). */
static int parse_options(const char *command, int argc, char **argv, const option_t *options,
                         size_t num_options) {
    for (int i = 0; i < argc; i++) {
        const option_t *found = NULL;
        for (size_t o = 0; o < num_options && found == NULL; o++)
            if (strcmp(argv[i], options[o].name) == 0 &&
                (options[o].value == NULL || i + 1 < argc))
                found = &options[o];
        if (found == NULL) {
            fprintf(stderr, "tensorplug %s: unknown argument '%s' (see --help)\n", command,
                    argv[i]);
            return EXIT_USAGE;
        }
        if (found->value != NULL)
            *found->value = argv[++i];
        else
            *found->flag = true;
    }
    return 0;
}

/* Writes `text` as a JSON string. */
static void print_json_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

static void print_devices_json(const tp_context_t *context, const char *type) {
    size_t count = tp_physical_device_count(context, type);
    printf("[");
    for (size_t i = 0; i < count; i++) {
        const tp_physical_device_t *device;
        tp_status_t *status = tp_physical_device_get(context, type, i, &device);
        if (status != NULL) {
            tp_status_free(status);
            break;
        }
        printf("%s\n  {\"name\": ", i == 0 ? "" : ",");
        print_json_string(stdout, tp_physical_device_name(device));
        printf(", \"device_type\": ");
        print_json_string(stdout, tp_physical_device_type(device));
        printf(", \"ordinal\": %" PRId32 ", \"full_name\": ", tp_physical_device_ordinal(device));
        print_json_string(stdout, tp_physical_device_full_name(device));
        printf(", \"hardware_name\": ");
        print_json_string(stdout, tp_physical_device_hardware_name(device));
        printf(", \"vendor\": ");
        print_json_string(stdout, tp_physical_device_vendor(device));
        printf(", \"driver_version\": ");
        print_json_string(stdout, tp_physical_device_driver_version(device));
        printf(", \"compute_units\": %" PRId32 ", \"memory_bytes\": %" PRIu64 "}",
               tp_physical_device_compute_units(device), tp_physical_device_memory_bytes(device));
    }
    printf("%s]\n", count > 0 ? "\n" : "");
}

static double mebibytes(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* One row per logical device: its allocator's statistics, in MiB so that columns compare. */
static tp_status_t *print_memory(tp_context_t *context, const char *type, bool json) {
    size_t count;
    tp_status_t *status = tp_logical_device_count(context, type, &count);
    if (status != NULL) return status;
    if (json)
        printf("[");
    else
        printf("%-46s %-24s %13s %13s %13s %13s %13s %6s\n", "DEVICE", "PHYSICAL DEVICE",
               "IN USE", "PEAK", "RESERVED", "LIMIT", "LARGEST", "ALLOCS");
    for (size_t i = 0; i < count && status == NULL; i++) {
        tp_logical_device_info_t info = {.struct_size = sizeof info};
        tp_memory_stats_t stats = {.struct_size = sizeof stats};
        status = tp_logical_device_get(context, type, i, &info);
        if (status == NULL) status = tp_context_memory_stats(context, info.name, &stats);
        if (status != NULL) break;
        if (!json) {
            char limit[32] = "unlimited";
            if (stats.bytes_limit != UINT64_MAX)
                snprintf(limit, sizeof limit, "%.1f MiB", mebibytes(stats.bytes_limit));
            printf("%-46s %-24s %9.1f MiB %9.1f MiB %9.1f MiB %13s %9.1f MiB %6" PRIu64 "\n",
                   info.name, info.physical_device, mebibytes(stats.bytes_in_use),
                   mebibytes(stats.peak_bytes_in_use), mebibytes(stats.bytes_reserved), limit,
                   mebibytes(stats.largest_free_block), stats.num_allocations);
            continue;
        }
        printf("%s\n  {\"name\": ", i == 0 ? "" : ",");
        print_json_string(stdout, info.name);
        printf(", \"physical_device\": ");
        print_json_string(stdout, info.physical_device);
        printf(", \"bytes_in_use\": %" PRIu64 ", \"peak_bytes_in_use\": %" PRIu64
               ", \"bytes_reserved\": %" PRIu64 ", \"bytes_limit\": %" PRIu64
               ", \"largest_free_block\": %" PRIu64 ", \"num_allocations\": %" PRIu64 "}",
               stats.bytes_in_use, stats.peak_bytes_in_use, stats.bytes_reserved,
               stats.bytes_limit, stats.largest_free_block, stats.num_allocations);
    }
    if (json) printf("%s]\n", count > 0 ? "\n" : "");
    return status;
}

static int run_devices(int argc, char **argv) {
    bool json = false, memory = false;
    const char *type = NULL;
    const option_t options[] = {{"--json", &json, NULL}, {"--memory", &memory, NULL},
                                {"--type", NULL, &type}};
    if (parse_options("devices", argc, argv, options, sizeof options / sizeof options[0]))
        return EXIT_USAGE;
    tp_context_t *context;
    tp_status_t *status = tp_context_create(NULL, &context);
    if (status != NULL) return fail(status);
    if (memory)
        status = print_memory(context, type, json);
    else if (json)
        print_devices_json(context, type);
    else
        status = tp_list_physical_devices(context, type, stdout);
    tp_context_destroy(context);
    return status != NULL ? fail(status) : EXIT_SUCCESS;
}

/* The command prints each plug-in's refusal itself, so the loader's line about it ("skipped
 * plug-in /path: ..." or "<built-in>: ...") would say it twice; what the loader says of
 * folders and of the search path has no other line and is passed on. */
static void drop_plugin_refusals(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    static const char refusal[] = "skipped plug-in ";
    bool plugin_refusal = strncmp(line, refusal, sizeof refusal - 1) == 0 &&
                          (line[sizeof refusal - 1] == '/' || line[sizeof refusal - 1] == '<');
    if (level >= TP_LOG_WARNING && !plugin_refusal) fprintf(stderr, "tensorplug: %s\n", line);
}

static int run_plugins(int argc, char **argv) {
    if (parse_options("plugins", argc, argv, NULL, 0) != 0) return EXIT_USAGE;
    /* Each plug-in file is loaded in a child process first, so one that crashes or exits in
     * its constructor or init is listed as refused instead of ending the command. */
    setenv("TP_PLUGIN_PROBE", "1", 1);
    tp_log_set_callback(drop_plugin_refusals, NULL);
    tp_context_t *context;
    tp_status_t *status = tp_context_create(NULL, &context);
    if (status != NULL) return fail(status);
    size_t loaded = 0, refused = 0;
    for (size_t i = 0; i < tp_plugin_count(context); i++) {
        tp_plugin_info_t info = {.struct_size = sizeof info};
        status = tp_plugin_get(context, i, &info);
        if (status != NULL) break;
        if (info.loaded) {
            loaded++;
            printf("%s: loaded: %s %s, ABI %" PRIu32 ".%" PRIu32
                   ", device types %s, %zu ops, %zu kernels, graph pass %s\n",
                   info.path, info.name, info.version, info.abi_major, info.abi_minor,
                   info.device_types[0] != '\0' ? info.device_types : "none", info.num_ops,
                   info.num_kernels, info.has_graph_pass ? "yes" : "no");
        } else {
            refused++;
            printf("%s: refused: %s\n", info.path, info.reason);
        }
    }
    tp_context_destroy(context);
    if (status != NULL) return fail(status);
    printf("%zu loaded, %zu refused\n", loaded, refused);
    return EXIT_SUCCESS;
}

static int run_version(int argc, char **argv) {
    if (parse_options("version", argc, argv, NULL, 0) != 0) return EXIT_USAGE;
    uint32_t major, minor;
    tp_abi_version(&major, &minor);
    printf("tensorplug %s (plug-in ABI %" PRIu32 ".%" PRIu32 ")\n", tp_version(), major, minor);
    return EXIT_SUCCESS;
}

/* The demo layer's shape: small enough to read as a picture, large enough to be a layer. */
enum { DEMO_INPUTS = 100, DEMO_UNITS = 10 };

/* The body of the demo: the plug-in page's tf.function (uniform values on the CPU, Relu on
 * the APU) with a dense layer between, so that the picture has more than two boxes. */
static tp_status_t *demo_layer(tp_context_t *context, tp_tensor_t **out) {
    tp_tensor_t *d = NULL, *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    static const float bias[DEMO_UNITS] = {0}; /* the graph is only drawn, never run */
    tp_status_t *error =
        tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(DEMO_INPUTS), /*seed=*/1, &d);
    if (error == NULL) error = tp_reshape(context, d, TP_SHAPE(1, DEMO_INPUTS), &x);
    if (error == NULL)
        error = tp_random_normal(context, TP_FLOAT32, TP_SHAPE(DEMO_INPUTS, DEMO_UNITS),
                                 /*seed=*/2, &w);
    if (error == NULL)
        error = tp_constant(context, TP_FLOAT32, TP_SHAPE(DEMO_UNITS), bias, sizeof bias, &b);
    if (error == NULL) error = tp_matmul(context, x, w, false, false, &y);
    if (error == NULL) error = tp_add(context, y, b, out);
    tp_tensor_t *made[] = {d, x, w, b, y};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) tp_tensor_release(made[i]);
    return error;
}

/* `user_data` is the device Relu is asked for, or NULL to leave it to default placement. */
static tp_status_t *demo_body(tp_context_t *context, tp_tensor_t *const *inputs,
                              size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                              void *user_data) {
    (void)inputs;
    (void)num_inputs;
    (void)num_outputs;
    tp_tensor_t *z = NULL;
    tp_status_t *error = tp_device_push(context, "/CPU:0");
    if (error != NULL) return error;
    error = demo_layer(context, &z);
    tp_status_free(tp_device_pop(context));
    bool scoped = false;
    if (error == NULL && user_data != NULL) {
        error = tp_device_push(context, user_data);
        scoped = error == NULL;
    }
    if (error == NULL) error = tp_relu(context, z, &outputs[0]);
    if (scoped) tp_status_free(tp_device_pop(context));
    tp_tensor_release(z);
    return error;
}

static tp_status_t *write_demo_graph(tp_context_t *context, tp_graph_format_t format,
                                     FILE *out) {
    /* Logical devices, not physical ones: those are what placement chooses among. */
    size_t apus;
    tp_status_t *status = tp_logical_device_count(context, "APU", &apus);
    if (status != NULL) return status;
    tp_function_t *function;
    status = tp_function_create(context, "demo", demo_body, 1, apus > 0 ? "/APU:0" : NULL,
                                &function);
    if (status != NULL) return status;
    status = tp_function_write_graph(function, NULL, 0, format, out);
    tp_function_destroy(function);
    return status;
}

static int run_graph(int argc, char **argv) {
    bool text = false;
    const char *path = NULL;
    const option_t options[] = {{"--text", &text, NULL}, {"--output", NULL, &path}};
    if (parse_options("graph", argc, argv, options, sizeof options / sizeof options[0]))
        return EXIT_USAGE;
    tp_context_t *context;
    tp_status_t *status = tp_context_create(NULL, &context);
    if (status != NULL) return fail(status);
    /* Opened only once the context exists, so that a failing context leaves no empty file. */
    FILE *out = path != NULL ? fopen(path, "w") : stdout;
    if (out == NULL) {
        fprintf(stderr, "tensorplug graph: cannot open '%s': %s\n", path, strerror(errno));
        tp_context_destroy(context);
        return EXIT_FAILURE;
    }
    status = write_demo_graph(context, text ? TP_GRAPH_TEXT : TP_GRAPH_DOT, out);
    tp_context_destroy(context);
    if ((out != stdout ? fclose(out) : fflush(out)) != 0 && status == NULL) {
        fprintf(stderr, "tensorplug graph: writing '%s' failed: %s\n",
                path != NULL ? path : "standard output", strerror(errno));
        return EXIT_FAILURE;
    }
    return status != NULL ? fail(status) : EXIT_SUCCESS;
}

/* A whole number in [minimum, maximum], or false after naming the option. */
static bool parse_number(const char *option, const char *text, long long minimum,
                         long long maximum, long long *out) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < minimum || value > maximum) {
        fprintf(stderr, "tensorplug plugin-check: %s wants a number from %lld to %lld, not '%s'\n",
                option, minimum, maximum, text);
        return false;
    }
    *out = value;
    return true;
}

static int run_plugin_check(int argc, char **argv) {
    if (argc < 1 || argv[0][0] == '-') {
        fprintf(stderr, "tensorplug plugin-check: which plug-in? (see --help)\n");
        return EXIT_USAGE;
    }
    const char *device = NULL, *seed_text = NULL, *timeout_text = NULL;
    const option_t options[] = {{"--device", NULL, &device},
                                {"--seed", NULL, &seed_text},
                                {"--timeout", NULL, &timeout_text}};
    if (parse_options("plugin-check", argc - 1, argv + 1, options, 3) != 0) return EXIT_USAGE;
    tp_plugin_check_options_t check = TP_PLUGIN_CHECK_OPTIONS_INIT;
    check.device_type = device;
    long long number;
    if (seed_text != NULL) {
        if (!parse_number("--seed", seed_text, 0, INT64_MAX, &number)) return EXIT_USAGE;
        check.seed = (uint64_t)number;
    }
    if (timeout_text != NULL) {
        if (!parse_number("--timeout", timeout_text, 1, 3600, &number)) return EXIT_USAGE;
        check.timeout_seconds = (int32_t)number;
    }
    int32_t failed = 0;
    tp_status_t *status = tp_plugin_check(argv[0], &check, stdout, NULL, &failed);
    if (status != NULL) return fail(status);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static const command_t commands[] = {
    {"devices", "list the physical devices, or the logical ones with their memory",
     "usage: tensorplug devices [--memory] [--json] [--type TYPE]\n"
     "\n"
     "Lists the physical devices a context sees, one line each:\n"
     "  PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')\n"
     "\n"
     "  --memory     the logical devices instead, with their memory: bytes in use, peak,\n"
     "               reserved, limit, largest free block and live allocations\n"
     "  --json       one JSON object per device, with hardware name, vendor and memory\n"
     "  --type TYPE  only devices of this type (case-insensitive)\n"
     "\n"
     "TP_VISIBLE_DEVICES and TP_FORCE_ALLOW_GROWTH apply as in any program.\n",
     run_devices},
    {"plugins", "list the plug-in files found and whether each loaded",
     "usage: tensorplug plugins\n"
     "\n"
     "Lists every plug-in found: the built-in ones, then each *.so in the folders of\n"
     "TP_PLUGIN_PATH (':'-separated) and in the installed plug-in folder. A loaded one shows\n"
     "its name, version, ABI version, device types, ops, kernels and graph pass; a refused\n"
     "one shows why. Each file is loaded in a child process first, so a plug-in that\n"
     "crashes, exits or hangs while it loads is listed as refused. Exits 0 whatever was\n"
     "refused.\n",
     run_plugins},
    {"graph", "write the placed graph of a demo traced function, as DOT or text",
     "usage: tensorplug graph [--text] [--output FILE]\n"
     "\n"
     "Traces a demo function on the devices a context sees and writes its placed graph:\n"
     "uniform random values, a dense layer (MatMul, Add) on the CPU, then Relu on APU:0\n"
     "if an APU is present, else where default placement puts it. Graphviz draws the DOT:\n"
     "  tensorplug graph | dot -Tsvg > graph.svg\n"
     "\n"
     "  --text         one line per node (op, inputs, attributes, type, device) instead\n"
     "  --output FILE  write to FILE instead of standard output\n",
     run_graph},
    {"plugin-check", "check one plug-in's devices and kernels against the ABI and the CPU",
     "usage: tensorplug plugin-check PATH.so [--device TYPE] [--seed N] [--timeout SECONDS]\n"
     "\n"
     "Loads the plug-in file PATH.so alone (beside the built-in CPU) and checks it: its\n"
     "descriptor and registrations; allocations of many sizes, an empty tensor, and more\n"
     "memory than the device has; host<->device round trips of random bytes at random sizes\n"
     "and offsets; copies within a device and between two; stream order, events and host\n"
     "waits, with the stream held so that early completion is caught (a device that cannot\n"
     "be held fails them, unless it declares itself synchronous); each kernel against the\n"
     "CPU's kernel of the same op on random inputs of every dtype it claims, up to a million\n"
     "elements with NaN, infinities, signed zeros and denormals, bit for bit where the op is\n"
     "exact, run twice; kernel errors returned as statuses; device memory given back after\n"
     "each kernel's launches; two threads at once. One line per check (pass, FAIL with the\n"
     "reason, or n/a with why), then 'N passed, N failed'. Each check runs in a process of\n"
     "its own, so a crash (even while the plug-in loads) or a hang fails that check alone.\n"
     "\n"
     "  --device TYPE      only the devices and kernels of this device type\n"
     "  --seed N           another seed for the random sizes, offsets and values (default 0)\n"
     "  --timeout SECONDS  a check still running after this fails as hung (default 120)\n"
     "\n"
     "Exits 0 when no check failed and something was checked, 1 otherwise. The plug-in's\n"
     "own settings come from the environment as usual (TP_APU_DEVICES=2 gives the APU's\n"
     "peer copies two devices).\n",
     run_plugin_check},
    {"version", "print the runtime and plug-in ABI versions",
     "usage: tensorplug version\n", run_version},
};

static void print_usage(FILE *out) {
    fprintf(out, "usage: tensorplug <command> [arguments]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'tensorplug <command> --help' describes a command.\n"
                 "Environment: TP_PLUGIN_PATH (plug-in folders), TP_LOG_LEVEL,\n"
                 "TP_VISIBLE_DEVICES, TP_FORCE_ALLOW_GROWTH.\n");
}

/* A command whose output was lost (a full disk, /dev/full, a closed pipe) has failed, whatever
 * it computed: stdout is flushed and checked before the exit status is given. */
static int checked_output(int code) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return code;
    fprintf(stderr, "tensorplug: cannot write the output: %s\n", strerror(errno));
    return code == EXIT_SUCCESS ? EXIT_FAILURE : code;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_USAGE;
    }
    if (is_help(argv[1])) {
        print_usage(stdout);
        return checked_output(EXIT_SUCCESS);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name) != 0) continue;
        for (int a = 2; a < argc; a++) {
            if (is_help(argv[a])) {
                fputs(commands[i].usage, stdout);
                return checked_output(EXIT_SUCCESS);
            }
        }
        return checked_output(commands[i].run(argc - 2, argv + 2));
    }
    fprintf(stderr, "tensorplug: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return EXIT_USAGE;
}
