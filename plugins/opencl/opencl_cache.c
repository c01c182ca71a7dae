/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk cache of program binaries (see opencl_cache.h). An entry is a header (magic,
 * binary size, FNV-1a hash of the binary) followed by the binary. */
#define _GNU_SOURCE /* secure_getenv */
#include "opencl_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[8] = {'T', 'P', 'C', 'L', 'B', 'I', 'N', '1'};

typedef struct entry_header {
    char magic[8];
    uint64_t size;
    uint64_t hash;
} entry_header_t;

/* The largest binary the cache keeps; a bigger one is rebuilt each time. */
#define LARGEST_BINARY (UINT64_C(256) << 20)

static uint64_t fnv1a(uint64_t hash, const void *bytes, size_t size) {
    const unsigned char *at = bytes;
    for (size_t i = 0; i < size; i++) hash = (hash ^ at[i]) * UINT64_C(0x100000001b3);
    return hash;
}

uint64_t opencl_cache_key(const char *const *parts, size_t count) {
    uint64_t hash = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < count; i++) /* each part with its NUL, so parts cannot run together */
        hash = fnv1a(hash, parts[i], strlen(parts[i]) + 1);
    return hash;
}

/* The cache folder, made if missing; false when there is none to use. */
static int cache_folder(char *out, size_t capacity) {
    const char *own = secure_getenv("TP_OPENCL_CACHE_DIR");
    const char *xdg = secure_getenv("XDG_CACHE_HOME");
    const char *home = secure_getenv("HOME");
    int written;
    if (own != NULL && own[0] != '\0') {
        if (strcmp(own, "none") == 0 || own[0] != '/') return 0;
        written = snprintf(out, capacity, "%s", own);
    } else if (xdg != NULL && xdg[0] == '/') {
        written = snprintf(out, capacity, "%s/tensorplug/opencl", xdg);
    } else if (home != NULL && home[0] == '/') {
        written = snprintf(out, capacity, "%s/.cache/tensorplug/opencl", home);
    } else {
        return 0;
    }
    if (written < 0 || (size_t)written >= capacity) return 0;
    /* Each missing folder on the way, private to the user as a cache should be. */
    for (char *slash = strchr(out + 1, '/');; slash = strchr(slash + 1, '/')) {
        if (slash != NULL) *slash = '\0';
        if (mkdir(out, 0700) != 0 && errno != EEXIST) return 0;
        if (slash == NULL) break;
        *slash = '/';
    }
    return 1;
}

static int entry_path(uint64_t key, char *out, size_t capacity) {
    char folder[4096];
    if (!cache_folder(folder, sizeof folder)) return 0;
    int written = snprintf(out, capacity, "%s/%016llx.bin", folder, (unsigned long long)key);
    return written > 0 && (size_t)written < capacity;
}

unsigned char *opencl_cache_load(uint64_t key, size_t *out_size) {
    char path[4200];
    if (!entry_path(key, path, sizeof path)) return NULL;
    FILE *file = fopen(path, "rb");
    if (file == NULL) return NULL;
    entry_header_t header;
    unsigned char *binary = NULL;
    if (fread(&header, sizeof header, 1, file) == 1 &&
        memcmp(header.magic, magic, sizeof magic) == 0 && header.size > 0 &&
        header.size <= LARGEST_BINARY)
        binary = malloc((size_t)header.size);
    int whole = binary != NULL && fread(binary, 1, (size_t)header.size, file) == header.size &&
                fgetc(file) == EOF;
    fclose(file);
    if (!whole || fnv1a(UINT64_C(0xcbf29ce484222325), binary, (size_t)header.size) !=
                      header.hash) {
        free(binary);
        return NULL;
    }
    *out_size = (size_t)header.size;
    return binary;
}

int opencl_cache_store(uint64_t key, const unsigned char *binary, size_t size) {
    char path[4200], temporary[4300];
    if (size == 0 || size > LARGEST_BINARY || !entry_path(key, path, sizeof path)) return 0;
    snprintf(temporary, sizeof temporary, "%s.XXXXXX", path);
    int fd = mkstemp(temporary);
    if (fd < 0) return 0;
    entry_header_t header = {.size = size,
                             .hash = fnv1a(UINT64_C(0xcbf29ce484222325), binary, size)};
    memcpy(header.magic, magic, sizeof magic);
    FILE *file = fdopen(fd, "wb");
    int written = file != NULL && fwrite(&header, sizeof header, 1, file) == 1 &&
                  fwrite(binary, 1, size, file) == size && fflush(file) == 0 &&
                  fsync(fd) == 0;
    if (file != NULL)
        written &= fclose(file) == 0;
    else
        close(fd);
    if (written && rename(temporary, path) == 0) return 1;
    unlink(temporary);
    return 0;
}
