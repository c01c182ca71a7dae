/* SPDX-License-Identifier: Apache-2.0 */
/* `tensorplug devices`: the physical devices a context sees, or its logical devices with their
 * memory, as lines or as JSON. */
#include <inttypes.h>
#include <stdlib.h>

#include "cli.h"

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
        cli_json_string(stdout, tp_physical_device_name(device));
        printf(", \"device_type\": ");
        cli_json_string(stdout, tp_physical_device_type(device));
        printf(", \"ordinal\": %" PRId32 ", \"full_name\": ", tp_physical_device_ordinal(device));
        cli_json_string(stdout, tp_physical_device_full_name(device));
        printf(", \"hardware_name\": ");
        cli_json_string(stdout, tp_physical_device_hardware_name(device));
        printf(", \"vendor\": ");
        cli_json_string(stdout, tp_physical_device_vendor(device));
        printf(", \"driver_version\": ");
        cli_json_string(stdout, tp_physical_device_driver_version(device));
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
        cli_json_string(stdout, info.name);
        printf(", \"physical_device\": ");
        cli_json_string(stdout, info.physical_device);
        printf(", \"bytes_in_use\": %" PRIu64 ", \"peak_bytes_in_use\": %" PRIu64
               ", \"bytes_reserved\": %" PRIu64 ", \"bytes_limit\": %" PRIu64
               ", \"largest_free_block\": %" PRIu64 ", \"num_allocations\": %" PRIu64 "}",
               stats.bytes_in_use, stats.peak_bytes_in_use, stats.bytes_reserved,
               stats.bytes_limit, stats.largest_free_block, stats.num_allocations);
    }
    if (json) printf("%s]\n", count > 0 ? "\n" : "");
    return status;
}

enum { OPTION_JSON = CLI_FIRST_OWN_OPTION, OPTION_MEMORY, OPTION_TYPE };

static int run_devices(const cli_command_t *command, int argc, char **argv) {
    static const struct option options[] = {{"json", no_argument, NULL, OPTION_JSON},
                                            {"memory", no_argument, NULL, OPTION_MEMORY},
                                            {"type", required_argument, NULL, OPTION_TYPE},
                                            CLI_STANDARD_OPTIONS};
    bool json = false, memory = false;
    const char *type = NULL;
    int option, exit_code;
    while ((option = cli_next_option(command, argc, argv, options, &exit_code)) >= 0) {
        if (option == OPTION_JSON) json = true;
        if (option == OPTION_MEMORY) memory = true;
        if (option == OPTION_TYPE) type = optarg;
    }
    if (option == CLI_OPTIONS_EXIT) return exit_code;
    if (cli_no_operands(command, argc, argv) != 0) return CLI_EXIT_USAGE;
    tp_context_t *context;
    tp_status_t *status = tp_context_create(NULL, &context);
    if (status != NULL) return cli_fail(status);
    if (memory)
        status = print_memory(context, type, json);
    else if (json)
        print_devices_json(context, type);
    else
        status = tp_list_physical_devices(context, type, stdout);
    tp_context_destroy(context);
    return status != NULL ? cli_fail(status) : EXIT_SUCCESS;
}

const cli_command_t cli_devices_command = {
    "devices", "list the physical devices, or the logical ones with their memory",
    "usage: tensorplug devices [--memory] [--json] [--type TYPE]\n"
    "\n"
    "Lists the physical devices a context sees, one line each:\n"
    "  PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')\n"
    "\n"
    "  --memory     the logical devices instead, with their memory: bytes in use, peak,\n"
    "               reserved, limit, largest free block and live allocations\n"
    "  --json       a JSON array, one object per device: name, device_type, ordinal,\n"
    "               full_name, hardware_name, vendor, driver_version, compute_units and\n"
    "               memory_bytes (with --memory: name, physical_device and the statistics)\n"
    "  --type TYPE  only devices of this type (case-insensitive); --type=TYPE too\n"
    "\n"
    "TP_VISIBLE_DEVICES and TP_FORCE_ALLOW_GROWTH apply as in any program.\n",
    run_devices,
};
