/* SPDX-License-Identifier: Apache-2.0 */
/* What MY_DEVICE's files share: device memory (my_device.c), streams (my_queue.c) and the
 * kernels (my_kernels.c). */
#ifndef TP_TESTS_TFCOMPAT_MY_DEVICE_H
#define TP_TESTS_TFCOMPAT_MY_DEVICE_H

#include <stdint.h>

#include "tensorflow/c/experimental/stream_executor/stream_executor.h"

/* The failing variant is a device of its own, so that plugin-check runs on the other. */
#ifdef MY_DEVICE_FAILING
#define DEVICE_TYPE "FAILING_DEVICE"
#else
#define DEVICE_TYPE "MY_DEVICE"
#endif

/* The host address of `size` bytes at device address `address`; NULL unless they lie inside
 * one live allocation of the device. */
char *my_device_host_address(const void *address, uint64_t size);

typedef void (*my_task_fn)(void *arg);

/* A stream and its thread; NULL when either cannot be made. */
SP_Stream my_stream_create(void);
/* Runs what is queued, then ends the thread. */
void my_stream_destroy(SP_Stream stream);
int my_stream_is_mine(SP_Stream stream);
/* Queues fn(arg), which frees arg if it must; 0 when out of memory. */
int my_stream_enqueue(SP_Stream stream, my_task_fn fn, void *arg);
/* Returns once everything queued so far has run. */
void my_stream_wait(SP_Stream stream);
/* The streams alive, for waiting on all of them; add returns 0 when out of memory. */
int my_streams_add(SP_Stream stream);
void my_streams_remove(SP_Stream stream);
void my_streams_wait_all(void);

/* A tensor's data as the host address it has in the device's memory; NULL, with the kernel
 * failed, if it is not there. */
struct TF_OpKernelContext;
struct TF_Tensor;
void *my_device_data(struct TF_OpKernelContext *ctx, const struct TF_Tensor *tensor);
/* Queues fn(work) (work malloc'd, freed by fn) on the kernel's stream, or fails the kernel. */
void my_device_queue(struct TF_OpKernelContext *ctx, my_task_fn fn, void *work);
/* Registers MaxPool (my_pool.c). */
void my_device_register_pool(void);

#endif
