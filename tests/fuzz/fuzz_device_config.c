/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration an application (or TP_VISIBLE_DEVICES) gives a context's physical devices
 * before they are used: visible-device lists, memory growth, fractions, limits, logical-device
 * splits, device scopes and lookups, each naming its devices by text. The input is a script,
 * one command a line, run on a fresh context with the CPU and two APUs:
 *   v LIST          tp_context_set_visible_devices        ("APU:1, CPU")
 *   G NAME / g NAME memory growth on / off                ("-" names every device)
 *   f NAME FRACTION tp_context_set_memory_fraction
 *   l NAME BYTES    tp_context_set_memory_limit
 *   s NAME BYTES... tp_context_set_logical_devices        (up to 8 limits)
 *   p NAME / o      tp_device_push / tp_device_pop
 *   d NAME          tp_physical_device_find
 *   n TYPE INDEX    tp_physical_device_count and tp_physical_device_get ("-": any type)
 * After each script the context must still be consistent: CPU:0 visible, each device's limits
 * within its memory. */
#include "fuzz_support.h"

#include "context/context.h"
#include "device/physical_device.h"

enum { MAX_SPLIT = 8 };

static const tp_context_options_t *options(void) {
    static tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN;
    options.skip_installed_plugins = true;
    return &options;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* Read once, when the first context loads the APU plug-in. */
    setenv("TP_APU_DEVICES", "2", 1);
    setenv("TP_APU_MEMORY", "1M", 1);
    fuzz_quiet_log();
    return 0;
}

/* Splits "NAME REST" at the first space; "-" as the name is NULL, for "every device". */
static const char *split_name(char *argument, char **rest) {
    char *space = strchr(argument, ' ');
    *rest = space != NULL ? space + 1 : argument + strlen(argument);
    if (space != NULL) *space = '\0';
    return strcmp(argument, "-") == 0 ? NULL : argument;
}

static tp_status_t *split(tp_context_t *context, const char *name, char *numbers) {
    uint64_t limits[MAX_SPLIT];
    size_t count = 0;
    for (char *cursor = numbers; *cursor != '\0' && count < MAX_SPLIT;) {
        char *end;
        limits[count++] = strtoull(cursor, &end, 0);
        cursor = end == cursor ? cursor + 1 : end;
    }
    return tp_context_set_logical_devices(context, name, count > 0 ? limits : NULL, count);
}

static tp_status_t *lookup(tp_context_t *context, const char *type, const char *index_text) {
    size_t count = tp_physical_device_count(context, type);
    const tp_physical_device_t *device;
    tp_status_t *status = tp_physical_device_get(context, type, strtoull(index_text, NULL, 0),
                                                 &device);
    if (status == NULL && count == 0) fuzz_fail("a device of a type with none", type);
    return status;
}

static void run_command(tp_context_t *context, char *line, int *pushed) {
    char command = line[0];
    char *argument = line[0] != '\0' && line[1] == ' ' ? line + 2 : line + (line[0] != '\0');
    /* Commands of a name and numbers split the argument; the others take it whole. */
    char *rest = argument;
    bool named = command != '\0' && strchr("Ggflsn", command) != NULL;
    const char *name = named ? split_name(argument, &rest) : argument;
    tp_status_t *status = NULL;
    switch (command) {
    case 'v': status = tp_context_set_visible_devices(context, argument); break;
    case 'G': status = tp_context_set_memory_growth(context, name, true); break;
    case 'g': status = tp_context_set_memory_growth(context, name, false); break;
    case 'f':
        status = tp_context_set_memory_fraction(context, name, strtod(rest, NULL));
        break;
    case 'l':
        status = tp_context_set_memory_limit(context, name, strtoull(rest, NULL, 0));
        break;
    case 's': status = split(context, name, rest); break;
    case 'p':
        status = tp_device_push(context, argument);
        if (status == NULL) (*pushed)++;
        break;
    case 'o':
        status = tp_device_pop(context);
        if (status == NULL) (*pushed)--;
        break;
    case 'd': {
        const tp_physical_device_t *device;
        status = tp_physical_device_find(context, argument, &device);
        break;
    }
    case 'n': status = lookup(context, name, rest); break;
    default: return;
    }
    if (fuzz_check_quoting(status, argument)) fuzz_say(line, "done");
}

/* What every successful sequence of calls leaves behind. */
static void check_context(const tp_context_t *context) {
    const tp_device_registry_t *registry = &context->registry;
    for (size_t i = 0; i < registry->num_physical_devices; i++) {
        const tp_physical_device_t *device = registry->physical_devices[i];
        if (device == registry->host_physical && !device->visible)
            fuzz_fail("CPU:0 was hidden", device->name);
        const tp_memory_config_t *memory = &device->memory;
        uint64_t total = device->memory_bytes, sum = 0;
        if (total > 0 && memory->limit > total) fuzz_fail("limit beyond memory", device->name);
        for (size_t l = 0; l < memory->num_logical; l++) sum += memory->logical_limits[l];
        if (total > 0 && sum > total) fuzz_fail("split beyond memory", device->name);
        if (!(memory->fraction >= 0.0 && memory->fraction <= 1.0))
            fuzz_fail("fraction outside [0, 1]", device->name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input_t in = {data, size};
    char *script = fuzz_rest_as_text(&in);
    tp_context_t *context;
    if (!fuzz_check_status(tp_context_create(options(), &context))) abort();
    int pushed = 0;
    char *next;
    for (char *line = script; line != NULL; line = next) {
        next = strchr(line, '\n');
        if (next != NULL) *next++ = '\0';
        run_command(context, line, &pushed);
    }
    check_context(context);
    /* Scopes are per thread, not per context: leave none to the next input. */
    while (pushed-- > 0) fuzz_check_status(tp_device_pop(context));
    tp_context_destroy(context);
    free(script);
    return 0;
}
