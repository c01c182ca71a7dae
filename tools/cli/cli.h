/* SPDX-License-Identifier: Apache-2.0 */
/* What the `tensorplug` command's files share: the command table's entry, option parsing with
 * the options every command takes, how a command fails, and JSON strings. */
#ifndef TP_CLI_H
#define TP_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "tensorplug/tensorplug.h"

/* Exit statuses: EXIT_SUCCESS, EXIT_FAILURE (the command ran and failed), and this one for a
 * command line that was wrong (unknown command or option, missing or unexpected argument). */
#define CLI_EXIT_USAGE 2

typedef struct cli_command {
    const char *name;
    const char *summary; /* one line, for `tensorplug --help` */
    const char *usage;   /* what `tensorplug <name> --help` prints */
    /* argv[0] is the command's name; options are parsed with cli_next_option. */
    int (*run)(const struct cli_command *command, int argc, char **argv);
} cli_command_t;

extern const cli_command_t cli_devices_command;
extern const cli_command_t cli_plugins_command;
extern const cli_command_t cli_graph_command;
extern const cli_command_t cli_plugin_check_command;
extern const cli_command_t cli_version_command;

/* getopt_long values of the options every command and the tool itself take. */
enum { CLI_OPTION_HELP = 'h', CLI_OPTION_VERSION = 0x100, CLI_FIRST_OWN_OPTION = 0x200 };

/* Ends a command's `struct option` array: --help (-h), --version and the terminator. */
#define CLI_STANDARD_OPTIONS                                                                   \
    {"help", no_argument, NULL, CLI_OPTION_HELP},                                              \
        {"version", no_argument, NULL, CLI_OPTION_VERSION}, {NULL, 0, NULL, 0}

/* What cli_next_option returns besides an option's value. */
enum {
    CLI_OPTIONS_END = -1,  /* no option left: argv[optind..] are the operands */
    CLI_OPTIONS_EXIT = -2, /* the command ends now with *exit_code */
};

/* The next of `options` in argv (getopt_long, operands moved after the options), with --help
 * and --version answered (exit 0) and mistakes named on standard error as
 * "tensorplug <command>: unknown option '--bogus' (see tensorplug <command> --help)" (exit 2).
 * The caller sets optind = 0 before the first call. */
int cli_next_option(const cli_command_t *command, int argc, char **argv,
                    const struct option *options, int *exit_code);

/* CLI_EXIT_USAGE after naming argv[optind] when it exists (a command that takes no operand
 * was given one), else 0. */
int cli_no_operands(const cli_command_t *command, int argc, char **argv);

/* Names a mistake in the command line on standard error, with the pointer to --help; returns
 * CLI_EXIT_USAGE. `command` NULL: the tool's own command line. */
int cli_usage_error(const cli_command_t *command, const char *format, ...) TP_PRINTF_LIKE(2, 3);

/* Prints "tensorplug: CODE: message" on standard error, frees `status`; returns EXIT_FAILURE. */
int cli_fail(tp_status_t *status);

/* Prints "tensorplug 0.1.0 (plug-in ABI 1.8)": `tensorplug version` and every --version. */
void cli_print_version(FILE *out);

/* Writes `text` as a JSON string: quoted, with '"', '\\', control characters and the
 * characters that move or end lines escaped, so that the output is safe on a terminal too, and
 * each byte that is not part of well-formed UTF-8 as U+FFFD. */
void cli_json_string(FILE *out, const char *text);

#endif
