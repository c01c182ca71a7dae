/* SPDX-License-Identifier: Apache-2.0 */
/* How a command that ran ends: a status it could not do without, and the version line. */
#include <inttypes.h>
#include <stdlib.h>

#include "cli.h"

int cli_fail(tp_status_t *status) {
    fprintf(stderr, "tensorplug: %s: %s\n", tp_code_name(tp_status_code(status)),
            tp_status_message(status));
    tp_status_free(status);
    return EXIT_FAILURE;
}

void cli_print_version(FILE *out) {
    uint32_t major, minor;
    tp_abi_version(&major, &minor);
    fprintf(out, "tensorplug %s (plug-in ABI %" PRIu32 ".%" PRIu32 ")\n", tp_version(), major,
            minor);
}
