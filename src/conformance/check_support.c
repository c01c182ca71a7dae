/* SPDX-License-Identifier: Apache-2.0 */
/* What the checks share: a seeded generator, the plug-in's devices, its device functions with
 * their statuses made into the runtime's, and the gate that holds a stream. */
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/status.h"
#include "conformance/check.h"

uint64_t tp_check_random(tp_check_t *check, uint64_t bound) {
    /* splitmix64: small, and every seed gives a full-period sequence. */
    uint64_t z = (check->random_state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return (z ^ (z >> 31)) % bound;
}

void tp_check_random_bytes(tp_check_t *check, void *buffer, size_t size) {
    unsigned char *bytes = buffer;
    for (size_t i = 0; i < size; i++) bytes[i] = (unsigned char)tp_check_random(check, 256);
}

bool tp_check_devices(tp_check_t *check, const char *type, tp_status_t **out) {
    *out = NULL;
    const tp_plugin_record_t *record = check->plugin->record;
    check->def = NULL;
    for (size_t t = 0; t < record->num_device_types; t++)
        if (strcasecmp(record->device_types[t].type, type) == 0)
            check->def = &record->device_types[t];
    if (check->def == NULL) {
        *out = tp_check_failure("the plug-in registered no device type %s", type);
        return false;
    }
    const tp_device_registry_t *registry = &check->context->registry;
    check->num_devices = 0;
    for (size_t d = 0; d < registry->num_physical_devices && check->num_devices < 2; d++)
        if (registry->physical_devices[d]->def == check->def)
            check->devices[check->num_devices++] = registry->physical_devices[d];
    if (check->num_devices == 0) {
        tp_check_not_applicable(check, "no %s device is present", check->def->type);
        return false;
    }
    char name[64];
    snprintf(name, sizeof name, "%s:0", check->def->type);
    *out = tp_context_find_device(check->context, name, &check->logical);
    return *out == NULL;
}

static tp_status_t *plugin_error(tp_check_t *check, const tp_plugin_status_t *status,
                                 const char *function, int32_t device) {
    return tp_plugin_status_check(status, "%s of %s:%d", function, check->def->type,
                                  (int)device);
}

tp_status_t *tp_check_allocate(tp_check_t *check, int32_t device, uint64_t size, void **out) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    void *mem = NULL;
    check->def->allocate(check->devices[device]->handle, size, &mem, &status);
    TP_RETURN_IF_ERROR(plugin_error(check, &status, "allocate", device));
    if (mem == NULL)
        return tp_check_failure("allocate of %s:%d gave a NULL handle for %llu bytes and no error",
                                check->def->type, (int)device, (unsigned long long)size);
    *out = mem;
    return NULL;
}

tp_status_t *tp_check_stream_create(tp_check_t *check, int32_t device, void **out) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    check->def->stream_create(check->devices[device]->handle, out, &status);
    return plugin_error(check, &status, "stream_create", device);
}

tp_status_t *tp_check_synchronize(tp_check_t *check, int32_t device, void *stream) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    check->def->stream_synchronize(check->devices[device]->handle, stream, &status);
    return plugin_error(check, &status, "stream_synchronize", device);
}

tp_status_t *tp_check_to_device(tp_check_t *check, int32_t device, void *stream, void *mem,
                                uint64_t offset, const void *source, uint64_t size) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    check->def->memcpy_host_to_device(check->devices[device]->handle, stream, mem, offset, source,
                                      size, &status);
    return plugin_error(check, &status, "memcpy_host_to_device", device);
}

tp_status_t *tp_check_to_host(tp_check_t *check, int32_t device, void *stream, void *target,
                              const void *mem, uint64_t offset, uint64_t size) {
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    check->def->memcpy_device_to_host(check->devices[device]->handle, stream, target, mem, offset,
                                      size, &status);
    return plugin_error(check, &status, "memcpy_device_to_host", device);
}

/* ---- The gate ------------------------------------------------------------------------------- */

/* Long enough for any honest device, short enough that a check never waits on a gate forever. */
enum { GATE_ENTER_SECONDS = 5, GATE_HOLD_SECONDS = 30 };

static struct timespec seconds_from_now(int seconds) {
    struct timespec when;
    clock_gettime(CLOCK_REALTIME, &when);
    when.tv_sec += seconds;
    return when;
}

static void hold_stream(void *arg) {
    tp_check_gate_t *gate = arg;
    pthread_mutex_lock(&gate->mutex);
    gate->entered = true;
    pthread_cond_broadcast(&gate->changed);
    /* Called back on the checker's own thread, blocking would wait for itself: the device is
     * synchronous, and its gate is as good as open. */
    if (pthread_equal(pthread_self(), gate->checker)) {
        gate->open = true;
        gate->on_caller_thread = true;
    } else {
        struct timespec limit = seconds_from_now(GATE_HOLD_SECONDS);
        while (!gate->open)
            if (pthread_cond_timedwait(&gate->changed, &gate->mutex, &limit) != 0) break;
    }
    pthread_mutex_unlock(&gate->mutex);
}

tp_status_t *tp_check_gate_close(tp_check_t *check, int32_t device, void *stream,
                                 tp_check_gate_t *gate) {
    pthread_mutex_init(&gate->mutex, NULL);
    pthread_cond_init(&gate->changed, NULL);
    gate->checker = pthread_self();
    gate->entered = gate->open = gate->held = gate->on_caller_thread = false;
    if (check->def->host_callback == NULL) return NULL;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    check->def->host_callback(check->devices[device]->handle, stream, hold_stream, gate, &status);
    TP_RETURN_IF_ERROR(plugin_error(check, &status, "host_callback", device));
    pthread_mutex_lock(&gate->mutex);
    struct timespec limit = seconds_from_now(GATE_ENTER_SECONDS);
    while (!gate->entered)
        if (pthread_cond_timedwait(&gate->changed, &gate->mutex, &limit) != 0) break;
    gate->held = gate->entered && !gate->open;
    pthread_mutex_unlock(&gate->mutex);
    return NULL;
}

void tp_check_gate_open(tp_check_gate_t *gate) {
    pthread_mutex_lock(&gate->mutex);
    gate->open = true;
    pthread_cond_broadcast(&gate->changed);
    pthread_mutex_unlock(&gate->mutex);
}

void tp_check_gate_destroy(tp_check_gate_t *gate) {
    pthread_mutex_destroy(&gate->mutex);
    pthread_cond_destroy(&gate->changed);
}

bool tp_check_synchronous(const tp_check_t *check) {
    return (check->def->flags & TP_DEVICE_SYNCHRONOUS) != 0;
}

const char *tp_check_gate_problem(const tp_check_t *check, const tp_check_gate_t *gate,
                                  char *buffer, size_t capacity) {
    const char *type = check->def->type;
    if (check->def->host_callback == NULL)
        snprintf(buffer, capacity, "%s has no host_callback", type);
    else if (gate->on_caller_thread)
        snprintf(buffer, capacity, "%s's host_callback calls back on the caller's thread", type);
    else if (!gate->entered)
        snprintf(buffer, capacity, "%s's host_callback had not called back %d s later", type,
                 GATE_ENTER_SECONDS);
    else
        snprintf(buffer, capacity, "%s's host_callback could not hold the stream", type);
    return buffer;
}
