/* SPDX-License-Identifier: Apache-2.0 */
/* `tensorplug plugins`: every plug-in a context found, loaded or refused and why, as lines or
 * as JSON. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

static void print_plugin_line(const tp_plugin_info_t *info) {
    if (info->loaded)
        printf("%s: loaded: %s %s, ABI %" PRIu32 ".%" PRIu32
               ", device types %s, %zu ops, %zu kernels, graph pass %s\n",
               info->path, info->name, info->version, info->abi_major, info->abi_minor,
               info->device_types[0] != '\0' ? info->device_types : "none", info->num_ops,
               info->num_kernels, info->has_graph_pass ? "yes" : "no");
    else
        printf("%s: refused: %s\n", info->path, info->reason);
}

/* "APU,XPU" as ["APU", "XPU"] (a type name has at most 31 characters). */
static void print_type_list_json(const char *types) {
    printf("[");
    for (const char *type = types; *type != '\0';) {
        size_t length = strcspn(type, ",");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)length, type);
        printf("%s", type == types ? "" : ", ");
        cli_json_string(stdout, name);
        type += length;
        if (*type == ',') type++;
    }
    printf("]");
}

static void print_plugin_json(const tp_plugin_info_t *info, bool first) {
    printf("%s\n  {\"path\": ", first ? "" : ",");
    cli_json_string(stdout, info->path);
    printf(", \"loaded\": %s, \"reason\": ", info->loaded ? "true" : "false");
    cli_json_string(stdout, info->reason);
    printf(", \"name\": ");
    cli_json_string(stdout, info->name);
    printf(", \"version\": ");
    cli_json_string(stdout, info->version);
    printf(", \"abi_major\": %" PRIu32 ", \"abi_minor\": %" PRIu32 ", \"device_types\": ",
           info->abi_major, info->abi_minor);
    print_type_list_json(info->device_types);
    printf(", \"num_ops\": %zu, \"num_kernels\": %zu, \"has_graph_pass\": %s}", info->num_ops,
           info->num_kernels, info->has_graph_pass ? "true" : "false");
}

enum { OPTION_JSON = CLI_FIRST_OWN_OPTION };

static int run_plugins(const cli_command_t *command, int argc, char **argv) {
    static const struct option options[] = {{"json", no_argument, NULL, OPTION_JSON},
                                            CLI_STANDARD_OPTIONS};
    bool json = false;
    int option, exit_code;
    while ((option = cli_next_option(command, argc, argv, options, &exit_code)) >= 0)
        if (option == OPTION_JSON) json = true;
    if (option == CLI_OPTIONS_EXIT) return exit_code;
    if (cli_no_operands(command, argc, argv) != 0) return CLI_EXIT_USAGE;
    /* Each plug-in file is loaded in a child process first, so one that crashes or exits in
     * its constructor or init is listed as refused instead of ending the command. */
    setenv("TP_PLUGIN_PROBE", "1", 1);
    tp_log_set_callback(drop_plugin_refusals, NULL);
    tp_context_t *context;
    tp_status_t *status = tp_context_create(NULL, &context);
    if (status != NULL) return cli_fail(status);
    size_t loaded = 0, refused = 0;
    if (json) printf("{\"plugins\": [");
    for (size_t i = 0; i < tp_plugin_count(context); i++) {
        tp_plugin_info_t info = {.struct_size = sizeof info};
        status = tp_plugin_get(context, i, &info);
        if (status != NULL) break;
        if (json)
            print_plugin_json(&info, i == 0);
        else
            print_plugin_line(&info);
        if (info.loaded)
            loaded++;
        else
            refused++;
    }
    tp_context_destroy(context);
    if (status != NULL) return cli_fail(status);
    if (json)
        printf("\n], \"loaded\": %zu, \"refused\": %zu}\n", loaded, refused);
    else
        printf("%zu loaded, %zu refused\n", loaded, refused);
    return EXIT_SUCCESS;
}

const cli_command_t cli_plugins_command = {
    "plugins", "list the plug-in files found and whether each loaded",
    "usage: tensorplug plugins [--json]\n"
    "\n"
    "Lists every plug-in found: the built-in ones, then each *.so in the folders of\n"
    "TP_PLUGIN_PATH (':'-separated) and in the installed plug-in folder. A loaded one shows\n"
    "its name, version, ABI version, device types, ops, kernels and graph pass; a refused\n"
    "one shows why. Each file is loaded in a child process first, so a plug-in that\n"
    "crashes, exits or hangs while it loads is listed as refused. Exits 0 whatever was\n"
    "refused.\n"
    "\n"
    "  --json  a JSON object: \"plugins\", one object per plug-in (path, loaded, reason,\n"
    "          name, version, abi_major, abi_minor, device_types, num_ops, num_kernels,\n"
    "          has_graph_pass), then the counts \"loaded\" and \"refused\"\n",
    run_plugins,
};
