/* SPDX-License-Identifier: Apache-2.0 */
/* Plug-ins that misbehave while they load, one build per MISBEHAVIOUR: the loader must report
 * each (in a probe, or as a refusal) and go on, never crash or hang with it. */
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "tensorplug/tensorplug.h"

#define CRASH_IN_CONSTRUCTOR 1
#define CRASH_IN_INIT 2
#define EXIT_IN_INIT 3
#define HANG_IN_INIT 4
#define REENTER 5        /* the test hands it tp_context_create */
#define REENTER_LINKED 6 /* linked against libtensorplug, against the rules */

#if MISBEHAVIOUR == CRASH_IN_CONSTRUCTOR || MISBEHAVIOUR == CRASH_IN_INIT
/* A write through a null pointer, which the compiler may neither drop nor turn into a trap. */
static void crash(void) {
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
}
#endif

#if MISBEHAVIOUR == CRASH_IN_CONSTRUCTOR
__attribute__((constructor)) static void crash_on_load(void) { crash(); }
#endif

#if MISBEHAVIOUR == REENTER
typedef tp_status_t *(*create_fn)(const tp_context_options_t *, tp_context_t **);
static create_fn context_create;
static void (*context_destroy)(tp_context_t *);
static const char *(*status_message)(const tp_status_t *);
static void (*status_free)(tp_status_t *);

/* Called by the test, which opens this file itself first: the plug-in links nothing of the core
 * and can reach the API only so. */
TP_EXPORT void misbehaving_set_api(create_fn create, void (*destroy)(tp_context_t *),
                                   const char *(*message)(const tp_status_t *),
                                   void (*free_status)(tp_status_t *));
TP_EXPORT void misbehaving_set_api(create_fn create, void (*destroy)(tp_context_t *),
                                   const char *(*message)(const tp_status_t *),
                                   void (*free_status)(tp_status_t *)) {
    context_create = create;
    context_destroy = destroy;
    status_message = message;
    status_free = free_status;
}
#elif MISBEHAVIOUR == REENTER_LINKED
#define context_create tp_context_create
#define context_destroy tp_context_destroy
#define status_message tp_status_message
#define status_free tp_status_free
#endif

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    (void)registrar;
#if MISBEHAVIOUR == CRASH_IN_INIT
    (void)host;
    (void)status;
    crash();
#elif MISBEHAVIOUR == EXIT_IN_INIT
    (void)host;
    (void)status;
    exit(3);
#elif MISBEHAVIOUR == HANG_IN_INIT
    (void)host;
    (void)status;
    for (;;) pause();
#elif MISBEHAVIOUR == REENTER || MISBEHAVIOUR == REENTER_LINKED
#if MISBEHAVIOUR == REENTER
    if (context_create == NULL) {
        host->status_set(status, TP_FAILED_PRECONDITION, "the test did not hand over the API");
        return;
    }
#endif
    tp_context_t *context = NULL;
    tp_status_t *error = context_create(NULL, &context);
    if (error != NULL) {
        host->status_set(status, TP_FAILED_PRECONDITION, "%s", status_message(error));
        status_free(error);
        return;
    }
    context_destroy(context);
#else
    (void)host;
    (void)status;
#endif
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof descriptor, TP_ABI_MAJOR, TP_ABI_MINOR, "misbehaving", "1.0.0", init};
    return &descriptor;
}
