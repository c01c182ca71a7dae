/* The `tensorplug` command: what a context sees of the installed plug-ins and devices. */
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
        printf(", \"memory_bytes\": %" PRIu64 "}", tp_physical_device_memory_bytes(device));
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
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--memory") == 0) {
            memory = true;
        } else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
            type = argv[++i];
        } else {
            fprintf(stderr, "tensorplug devices: unknown argument '%s' (see --help)\n", argv[i]);
            return EXIT_USAGE;
        }
    }
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

/* The command prints each refusal itself, so the loader's log lines would say it twice. */
static void drop_plugin_warnings(tp_log_level_t level, const char *line, void *user_data) {
    (void)user_data;
    if (level >= TP_LOG_ERROR) fprintf(stderr, "tensorplug: %s\n", line);
}

static int run_plugins(int argc, char **argv) {
    if (argc > 0) {
        fprintf(stderr, "tensorplug plugins: unknown argument '%s' (see --help)\n", argv[0]);
        return EXIT_USAGE;
    }
    tp_log_set_callback(drop_plugin_warnings, NULL);
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
    if (argc > 0) {
        fprintf(stderr, "tensorplug version: unknown argument '%s' (see --help)\n", argv[0]);
        return EXIT_USAGE;
    }
    uint32_t major, minor;
    tp_abi_version(&major, &minor);
    printf("tensorplug %s (plug-in ABI %" PRIu32 ".%" PRIu32 ")\n", tp_version(), major, minor);
    return EXIT_SUCCESS;
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
     "one shows why. Exits 0 whatever was refused.\n",
     run_plugins},
    {"version", "print the runtime and plug-in ABI versions",
     "usage: tensorplug version\n", run_version},
};

static void print_usage(FILE *out) {
    fprintf(out, "usage: tensorplug <command> [arguments]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'tensorplug <command> --help' describes a command.\n"
                 "Environment: TP_PLUGIN_PATH (plug-in folders), TP_LOG_LEVEL,\n"
                 "TP_VISIBLE_DEVICES, TP_FORCE_ALLOW_GROWTH.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_USAGE;
    }
    if (is_help(argv[1])) {
        print_usage(stdout);
        return EXIT_SUCCESS;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name) != 0) continue;
        for (int a = 2; a < argc; a++) {
            if (is_help(argv[a])) {
                fputs(commands[i].usage, stdout);
                return EXIT_SUCCESS;
            }
        }
        return commands[i].run(argc - 2, argv + 2);
    }
    fprintf(stderr, "tensorplug: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return EXIT_USAGE;
}
