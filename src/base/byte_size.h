/* SPDX-License-Identifier: Apache-2.0 */
/* Byte counts as people read them in messages: "512 bytes", "1.5 KiB", "256.0 MiB". */
#ifndef TP_BASE_BYTE_SIZE_H
#define TP_BASE_BYTE_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* Writes at most `capacity` bytes, always terminated; returns `text`. */
const char *tp_byte_size_format(uint64_t bytes, char *text, size_t capacity);

#endif
