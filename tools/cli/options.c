/* SPDX-License-Identifier: Apache-2.0 */
/* A command's options through getopt_long, with what every command shares: --help and
 * --version answered, and each mistake named in the command's own words instead of
 * getopt's. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const cli_command_t *command, const char *format, ...) {
    fprintf(stderr, "tensorplug%s%s: ", command != NULL ? " " : "",
            command != NULL ? command->name : "");
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fprintf(stderr, " (see tensorplug%s%s --help)\n", command != NULL ? " " : "",
            command != NULL ? command->name : "");
    return CLI_EXIT_USAGE;
}

/* The long option an argument such as "--type=GPU" names, if `options` has it. */
static const struct option *long_option_named(const struct option *options, const char *arg) {
    if (strncmp(arg, "--", 2) != 0) return NULL;
    size_t length = strcspn(arg + 2, "=");
    for (const struct option *o = options; o->name != NULL; o++)
        if (strlen(o->name) == length && strncmp(o->name, arg + 2, length) == 0) return o;
    return NULL;
}

/* What getopt_long refused, in words: argv[optind - 1] is the argument it was reading, except
 * for a short option inside a group ("-hx"), which only optopt names. */
static int name_mistake(const cli_command_t *command, char **argv, const struct option *options,
                        bool missing_value) {
    const char *arg = argv[optind - 1];
    bool is_long = strncmp(arg, "--", 2) == 0;
    if (!is_long) {
        if (missing_value) return cli_usage_error(command, "option '-%c' needs a value", optopt);
        return cli_usage_error(command, "unknown option '-%c'", optopt);
    }
    size_t length = strcspn(arg, "=");
    if (missing_value)
        return cli_usage_error(command, "option '%.*s' needs a value", (int)length, arg);
    const struct option *named = long_option_named(options, arg);
    if (named != NULL && named->has_arg == no_argument && arg[length] == '=')
        return cli_usage_error(command, "option '--%s' takes no value", named->name);
    return cli_usage_error(command, "unknown option '%.*s'", (int)length, arg);
}

int cli_next_option(const cli_command_t *command, int argc, char **argv,
                    const struct option *options, int *exit_code) {
    opterr = 0; /* getopt's own messages name neither the command nor --help */
    int index = -1;
    int value = getopt_long(argc, argv, ":h", options, &index);
    /* "--type=" is no type: an empty value is as missing as no value. */
    if (index >= 0 && options[index].has_arg == required_argument && optarg != NULL &&
        optarg[0] == '\0') {
        *exit_code = cli_usage_error(command, "option '--%s' needs a value", options[index].name);
        return CLI_OPTIONS_EXIT;
    }
    switch (value) {
    case -1:
        return CLI_OPTIONS_END;
    case CLI_OPTION_HELP:
        fputs(command->usage, stdout);
        *exit_code = EXIT_SUCCESS;
        return CLI_OPTIONS_EXIT;
    case CLI_OPTION_VERSION:
        cli_print_version(stdout);
        *exit_code = EXIT_SUCCESS;
        return CLI_OPTIONS_EXIT;
    case ':':
    case '?':
        *exit_code = name_mistake(command, argv, options, value == ':');
        return CLI_OPTIONS_EXIT;
    default:
        return value;
    }
}

int cli_no_operands(const cli_command_t *command, int argc, char **argv) {
    if (optind >= argc) return 0;
    return cli_usage_error(command, "unexpected argument '%s'", argv[optind]);
}
