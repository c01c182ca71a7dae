/* SPDX-License-Identifier: Apache-2.0 */
/* Program binaries kept on disk between processes, so that a device compiles each program once
 * per driver rather than once per process: under $TP_OPENCL_CACHE_DIR if set ("none": no
 * cache), else $XDG_CACHE_HOME/tensorplug/opencl, else ~/.cache/tensorplug/opencl. An entry is
 * named by a hash of everything that decides the binary (device, driver, build options,
 * source) and carries a checksum of itself: an entry that does not check out is rebuilt, never
 * trusted. Entries are written to a temporary file and renamed, so a reader sees a whole entry
 * or none, however many processes build at once. */
#ifndef TENSORPLUG_OPENCL_CACHE_H
#define TENSORPLUG_OPENCL_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The entry's key: a hash of `parts`, `count` NUL-terminated strings. */
uint64_t opencl_cache_key(const char *const *parts, size_t count);

/* The binary stored under `key`, malloc'ed, or NULL when there is none or it is damaged. */
unsigned char *opencl_cache_load(uint64_t key, size_t *out_size);

/* Stores `size` bytes under `key`; false when the cache cannot be written, which costs only a
 * rebuild next time. */
int opencl_cache_store(uint64_t key, const unsigned char *binary, size_t size);

#endif
