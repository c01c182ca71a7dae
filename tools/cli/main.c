/* SPDX-License-Identifier: Apache-2.0 */
/* The `tensorplug` command: what a context sees of the installed plug-ins and devices, how it
 * places a traced function on them, and the conformance check of one plug-in. This file reads
 * the tool's own options and hands the rest of the command line to the command named. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_command_t *const commands[] = {
    &cli_devices_command, &cli_plugins_command,      &cli_graph_command,
    &cli_plugin_check_command, &cli_version_command,
};
enum { NUM_COMMANDS = sizeof commands / sizeof commands[0] };

static void print_usage(FILE *out) {
    fprintf(out, "usage: tensorplug <command> [options] [arguments]\n"
                 "       tensorplug --help | --version\n"
                 "\ncommands:\n");
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        fprintf(out, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\noptions, of the tool and of every command:\n"
                 "  -h, --help   describe the tool, or the command\n"
                 "  --version    print the version line of 'tensorplug version'\n"
                 "\n'tensorplug <command> --help' describes a command; 'man tensorplug' has them\n"
                 "all, and the environment: TP_PLUGIN_PATH (plug-in folders), TP_PLUGINS,\n"
                 "TP_LOG_LEVEL, TP_VISIBLE_DEVICES, TP_FORCE_ALLOW_GROWTH, ...\n");
}

/* A command whose output was lost (a full disk, /dev/full, a closed pipe) has failed, whatever
 * it computed: stdout is flushed and checked before the exit status is given. */
static int checked_output(int code) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return code;
    fprintf(stderr, "tensorplug: cannot write the output: %s\n", strerror(errno));
    return code == EXIT_SUCCESS ? EXIT_FAILURE : code;
}

int main(int argc, char **argv) {
    static const struct option options[] = {
        {"help", no_argument, NULL, CLI_OPTION_HELP},
        {"version", no_argument, NULL, CLI_OPTION_VERSION},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int option;
    /* "+": the options before the command are the tool's; the command's own come after it. */
    while ((option = getopt_long(argc, argv, "+:h", options, NULL)) != -1) {
        if (option == CLI_OPTION_HELP) {
            print_usage(stdout);
            return checked_output(EXIT_SUCCESS);
        }
        if (option == CLI_OPTION_VERSION) {
            cli_print_version(stdout);
            return checked_output(EXIT_SUCCESS);
        }
        const char *arg = argv[optind - 1];
        if (strncmp(arg, "--", 2) == 0)
            return cli_usage_error(NULL, "unknown option '%.*s'", (int)strcspn(arg, "="), arg);
        return cli_usage_error(NULL, "unknown option '-%c'", optopt);
    }
    if (optind >= argc) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[optind];
    for (size_t i = 0; i < NUM_COMMANDS; i++) {
        if (strcmp(name, commands[i]->name) != 0) continue;
        int first = optind;
        optind = 0; /* glibc starts afresh, in the command's argument order, not "+" */
        return checked_output(commands[i]->run(commands[i], argc - first, argv + first));
    }
    fprintf(stderr, "tensorplug: unknown command '%s'\n\n", name);
    print_usage(stderr);
    return CLI_EXIT_USAGE;
}
