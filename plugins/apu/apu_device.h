/* SPDX-License-Identifier: Apache-2.0 */
/* The Awesome Processing Unit: a simulated accelerator with its own memory and its own queue
 * thread, so that the runtime meets a device that is truly asynchronous. */
#ifndef TP_APU_DEVICE_H
#define TP_APU_DEVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tensorplug/plugin.h"

extern const tp_host_api_t *apu_host;

/* Settings read from the environment once, at init. */
typedef struct {
    int32_t devices;             /* TP_APU_DEVICES, default 1 */
    uint64_t memory_bytes;       /* TP_APU_MEMORY, default 1 GiB */
    int64_t fail_allocation;     /* TP_APU_FAIL_ALLOCATION=N: the Nth allocation fails (0: never) */
    int64_t fail_kernel;         /* TP_APU_FAIL_KERNEL=N: the Nth kernel launch fails */
    uint64_t latency_us;         /* TP_APU_LATENCY_US: added to every queued command */
    int64_t fail_kernel_every;   /* TP_APU_FAIL_KERNEL_EVERY=N: every Nth kernel launch fails */
} apu_config_t;

extern apu_config_t apu_config;

/* Counts a kernel launch, over all devices; *out_injected_failure says whether
 * TP_APU_FAIL_KERNEL or TP_APU_FAIL_KERNEL_EVERY picks this one to fail. Thread-safe. */
int64_t apu_next_launch(bool *out_injected_failure);
/* The variable that injects kernel failures, for their messages. */
const char *apu_fault_variable(void);

/* Registers Conv2D's float32 kernel (apu_conv.c). */
void apu_register_conv(tp_registrar_t *registrar, tp_plugin_status_t *status);
/* Registers the kernels for the dtypes of ABI 1.7 (apu_dtypes.c). */
void apu_register_dtype_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status);

/* Registers the APU's graph pass (apu_graph_pass.c) where the runtime can run it. */
void apu_register_graph_pass(tp_registrar_t *registrar, tp_plugin_status_t *status);

/* Reads the environment; a malformed value is logged as a warning naming the variable and the
 * value, and its default is used. */
void apu_read_config(tp_registrar_t *registrar);

/* One APU: an arena of memory that the host sees only through handles. */
typedef struct apu_device {
    int32_t ordinal;
    unsigned char *arena; /* host memory standing in for device memory */
    uint64_t arena_bytes;
    pthread_mutex_t memory_mutex;
    struct apu_block *blocks; /* sorted by offset; free and used */
    uint64_t bytes_in_use;
} apu_device_t;

/* Device addresses start here: far from any host mapping, so a host that dereferences one
 * crashes instead of quietly reading host memory. */
#define APU_ADDRESS_BASE UINT64_C(0x5A5A00000000)

/* The host pointer behind device memory handle `mem` at `offset`, or NULL if the range does
 * not lie inside one allocation of the device. */
unsigned char *apu_translate(apu_device_t *device, const void *mem, uint64_t offset,
                             uint64_t size);

/* The arena (apu_memory.c). */
bool apu_memory_init(apu_device_t *device, tp_plugin_status_t *status);
void apu_memory_release(apu_device_t *device);
void apu_allocate(void *handle, uint64_t size, void **out_mem, tp_plugin_status_t *status);
void apu_deallocate(void *handle, void *mem);
void apu_memory_usage(void *handle, uint64_t *free_bytes, uint64_t *total_bytes);

#endif
