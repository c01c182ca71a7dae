/* SPDX-License-Identifier: Apache-2.0 */
/* `tensorplug version`: the runtime's version and the plug-in ABI it speaks. */
#include <stdlib.h>

#include "cli.h"

static int run_version(const cli_command_t *command, int argc, char **argv) {
    static const struct option options[] = {CLI_STANDARD_OPTIONS};
    int option, exit_code;
    /* Only --help and --version, which cli_next_option answers itself. */
    while ((option = cli_next_option(command, argc, argv, options, &exit_code)) >= 0) continue;
    if (option == CLI_OPTIONS_EXIT) return exit_code;
    if (cli_no_operands(command, argc, argv) != 0) return CLI_EXIT_USAGE;
    cli_print_version(stdout);
    return EXIT_SUCCESS;
}

const cli_command_t cli_version_command = {
    "version", "print the runtime and plug-in ABI versions",
    "usage: tensorplug version\n"
    "\n"
    "Prints the runtime's version and the plug-in ABI version it speaks:\n"
    "  tensorplug VERSION (plug-in ABI MAJOR.MINOR)\n"
    "A plug-in loads when it was built for the same ABI major version and a minor\n"
    "version no newer. --version after the tool or any command prints the same line.\n",
    run_version,
};
