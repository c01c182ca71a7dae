/* SPDX-License-Identifier: Apache-2.0 */
/* One native descriptor per TensorFlow plug-in. Its init does what TensorFlow does when it
 * loads a PluggableDevice library: SE_InitPlugin (checked), the device type, TF_InitKernel;
 * TF_InitGraph and TF_InitProfiler are reported as not supported yet and skipped. A failure
 * becomes the init's status, which the loader turns into the plug-in's one-line refusal. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/tfcompat_entry.h"
#include "tfc.h"

tfc_plugin_t *tfc_loading_plugin;
const tp_host_api_t *tfc_host;

/* A native init takes no argument to say which plug-in it is for, so each TensorFlow plug-in
 * gets its own slot and an init function of its own. */
enum { MAX_PLUGINS = 16 };
static tfc_plugin_t plugins[MAX_PLUGINS];
static tp_plugin_descriptor_t descriptors[MAX_PLUGINS];
static char names[MAX_PLUGINS][64];
static int num_plugins;

static void *symbol(void *library, const char *name) {
    dlerror();
    return dlsym(library, name);
}

static void log_unsupported(tfc_plugin_t *plugin, const char *entry, const char *what) {
    if (symbol(plugin->library, entry) != NULL)
        tfc_host->log(plugin->registrar, TP_LOG_WARNING,
                      "%s: %s of TensorFlow plug-ins are not supported yet; its devices and "
                      "kernels load without them", entry, what);
}

static void run_init(tfc_plugin_t *plugin, const tp_host_api_t *host, tp_registrar_t *registrar,
                     tp_plugin_status_t *status) {
    tfc_host = host;
    plugin->host = host;
    plugin->registrar = registrar;
    plugin->host_status = status;
    void (*se_init)(SE_PlatformRegistrationParams *, TF_Status *);
    void *address = symbol(plugin->library, "SE_InitPlugin");
    memcpy(&se_init, &address, sizeof se_init);

    TF_Status tf_status = {0};
    tfc_loading_plugin = plugin;
    tfc_platform_init(plugin, se_init, &tf_status);
    if (TF_GetCode(&tf_status) != TF_OK) {
        tfc_loading_plugin = NULL;
        host->status_set(status, (tp_code_t)TF_GetCode(&tf_status), "%s", TF_Message(&tf_status));
        tfc_status_reset(&tf_status);
        return;
    }
    tfc_device_type_fill(plugin);
    host->register_device_type(registrar, &plugin->device_type, status);
    if (host->status_code(status) == TP_OK) {
        void (*init_kernel)(void);
        address = symbol(plugin->library, "TF_InitKernel");
        memcpy(&init_kernel, &address, sizeof init_kernel);
        if (init_kernel != NULL) init_kernel();
        log_unsupported(plugin, "TF_InitGraph", "graph optimizers");
        log_unsupported(plugin, "TF_InitProfiler", "profilers");
    }
    tfc_loading_plugin = NULL;
    /* The host refuses the whole plug-in now; TensorFlow's side is undone in reverse. */
    if (host->status_code(status) != TP_OK) tfc_platform_teardown(plugin);
}

#define INIT(n)                                                                            \
    static void init_##n(const tp_host_api_t *host, tp_registrar_t *registrar,             \
                         tp_plugin_status_t *status) {                                     \
        run_init(&plugins[n], host, registrar, status);                                    \
    }
INIT(0) INIT(1) INIT(2) INIT(3) INIT(4) INIT(5) INIT(6) INIT(7)
INIT(8) INIT(9) INIT(10) INIT(11) INIT(12) INIT(13) INIT(14) INIT(15)
static const tp_plugin_init_fn inits[MAX_PLUGINS] = {
    init_0, init_1, init_2,  init_3,  init_4,  init_5,  init_6,  init_7,
    init_8, init_9, init_10, init_11, init_12, init_13, init_14, init_15};

/* The plug-in's name for tensorplug: its file name without "lib" and ".so". */
static void name_from_path(const char *path, char *name, size_t capacity) {
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    if (strncmp(base, "lib", 3) == 0 && base[3] != '\0') base += 3;
    size_t length = strlen(base);
    if (length > 3 && strcmp(base + length - 3, ".so") == 0) length -= 3;
    if (length >= capacity) length = capacity - 1;
    for (size_t i = 0; i < length; i++)
        name[i] = base[i] > 0x20 && base[i] < 0x7f ? base[i] : '_';
    name[length] = '\0';
    if (length == 0) snprintf(name, capacity, "tensorflow-plugin");
}

TP_EXPORT const tp_plugin_descriptor_t *tp_tfcompat_entry(void *library, const char *path,
                                                          char *reason, size_t capacity);

const tp_plugin_descriptor_t *tp_tfcompat_entry(void *library, const char *path, char *reason,
                                                size_t capacity) {
    if (symbol(library, "SE_InitPlugin") == NULL) {
        snprintf(reason, capacity, "it exports no SE_InitPlugin");
        return NULL;
    }
    /* The loader calls this under its lock, one plug-in at a time. */
    if (num_plugins == MAX_PLUGINS) {
        snprintf(reason, capacity, "it is a TensorFlow plug-in beyond the %d one process can run",
                 MAX_PLUGINS);
        return NULL;
    }
    int slot = num_plugins++;
    tfc_plugin_t *plugin = &plugins[slot];
    plugin->path = path;
    plugin->library = library;
    name_from_path(path, names[slot], sizeof names[slot]);
    descriptors[slot] = (tp_plugin_descriptor_t){.struct_size = sizeof descriptors[slot],
                                                 .abi_major = TP_ABI_MAJOR,
                                                 .abi_minor = TP_ABI_MINOR,
                                                 .name = names[slot],
                                                 .version = "tensorflow-se-0.0.1",
                                                 .init = inits[slot]};
    return &descriptors[slot];
}
