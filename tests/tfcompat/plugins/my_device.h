/* SPDX-License-Identifier: Apache-2.0 */
/* What MY_DEVICE's kernels share with its stream executor (my_device.c). */
#ifndef TP_TESTS_TFCOMPAT_MY_DEVICE_H
#define TP_TESTS_TFCOMPAT_MY_DEVICE_H

#include <stdint.h>

#include "tensorflow/c/experimental/stream_executor/stream_executor.h"

#define DEVICE_TYPE "MY_DEVICE"

/* The host address of `size` bytes at device address `address`; NULL unless they lie inside
 * one live allocation of the device. */
char *my_device_host_address(const void *address, uint64_t size);

/* Whether `stream` is one this plug-in created. */
int my_device_is_stream(SP_Stream stream);

#endif
