/* SPDX-License-Identifier: Apache-2.0 */
/* `tensorplug plugin-check`: the conformance check of one plug-in file, as lines or JSON. */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

/* A whole number in [minimum, maximum], or false after naming the option. */
static bool parse_number(const cli_command_t *command, const char *option, const char *text,
                         long long minimum, long long maximum, long long *out) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < minimum || value > maximum) {
        cli_usage_error(command, "%s wants a number from %lld to %lld, not '%s'", option,
                        minimum, maximum, text);
        return false;
    }
    *out = value;
    return true;
}

/* The JSON report, written as the verdicts come so that a long run shows its progress. */
typedef struct json_report {
    const char *path;
    int32_t verdicts, not_applicable;
} json_report_t;

static void start_report(json_report_t *report) {
    printf("{\"plugin\": ");
    cli_json_string(stdout, report->path);
    printf(", \"checks\": [");
}

static void print_verdict_json(const tp_plugin_check_verdict_t *verdict, void *user_data) {
    static const char *const results[] = {
        [TP_PLUGIN_CHECK_PASSED] = "passed",
        [TP_PLUGIN_CHECK_FAILED] = "failed",
        [TP_PLUGIN_CHECK_NOT_APPLICABLE] = "not_applicable",
    };
    json_report_t *report = user_data;
    if (report->verdicts == 0) start_report(report);
    printf("%s\n  {\"name\": ", report->verdicts == 0 ? "" : ",");
    cli_json_string(stdout, verdict->name);
    printf(", \"result\": \"%s\", \"message\": ", results[verdict->outcome]);
    cli_json_string(stdout, verdict->message);
    printf("}");
    fflush(stdout);
    report->verdicts++;
    if (verdict->outcome == TP_PLUGIN_CHECK_NOT_APPLICABLE) report->not_applicable++;
}

enum { OPTION_DEVICE = CLI_FIRST_OWN_OPTION, OPTION_SEED, OPTION_TIMEOUT, OPTION_JSON };

static int run_plugin_check(const cli_command_t *command, int argc, char **argv) {
    static const struct option options[] = {
        {"device", required_argument, NULL, OPTION_DEVICE},
        {"seed", required_argument, NULL, OPTION_SEED},
        {"timeout", required_argument, NULL, OPTION_TIMEOUT},
        {"json", no_argument, NULL, OPTION_JSON},
        CLI_STANDARD_OPTIONS};
    tp_plugin_check_options_t check = TP_PLUGIN_CHECK_OPTIONS_INIT;
    bool json = false;
    long long number;
    int option, exit_code;
    while ((option = cli_next_option(command, argc, argv, options, &exit_code)) >= 0) {
        if (option == OPTION_DEVICE) check.device_type = optarg;
        if (option == OPTION_JSON) json = true;
        if (option == OPTION_SEED) {
            if (!parse_number(command, "--seed", optarg, 0, INT64_MAX, &number))
                return CLI_EXIT_USAGE;
            check.seed = (uint64_t)number;
        }
        if (option == OPTION_TIMEOUT) {
            if (!parse_number(command, "--timeout", optarg, 1, 3600, &number))
                return CLI_EXIT_USAGE;
            check.timeout_seconds = (int32_t)number;
        }
    }
    if (option == CLI_OPTIONS_EXIT) return exit_code;
    if (optind >= argc) return cli_usage_error(command, "which plug-in?");
    const char *path = argv[optind++];
    if (cli_no_operands(command, argc, argv) != 0) return CLI_EXIT_USAGE;
    json_report_t report = {path, 0, 0};
    if (json) {
        check.on_verdict = print_verdict_json;
        check.user_data = &report;
    }
    int32_t passed = 0, failed = 0;
    tp_status_t *status = tp_plugin_check(path, &check, json ? NULL : stdout, &passed, &failed);
    if (status != NULL) {
        if (report.verdicts > 0) printf("\n]}\n"); /* what was checked stays readable */
        return cli_fail(status);
    }
    if (json) {
        if (report.verdicts == 0) start_report(&report);
        printf("\n], \"passed\": %d, \"failed\": %d, \"not_applicable\": %d}\n", (int)passed,
               (int)failed, (int)report.not_applicable);
    }
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

const cli_command_t cli_plugin_check_command = {
    "plugin-check", "check one plug-in's devices and kernels against the ABI and the CPU",
    "usage: tensorplug plugin-check PATH.so [--device TYPE] [--seed N] [--timeout SECONDS]\n"
    "                               [--json]\n"
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
    "  --json             a JSON object instead: \"plugin\" (PATH.so), \"checks\" (one object\n"
    "                     per check: name, result \"passed\", \"failed\" or \"not_applicable\",\n"
    "                     and message), then the counts \"passed\", \"failed\" and\n"
    "                     \"not_applicable\"\n"
    "\n"
    "Exits 0 when no check failed and something was checked, 1 otherwise. The plug-in's\n"
    "own settings come from the environment as usual (TP_APU_DEVICES=2 gives the APU's\n"
    "peer copies two devices).\n",
    run_plugin_check,
};
