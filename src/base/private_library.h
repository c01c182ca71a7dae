/* SPDX-License-Identifier: Apache-2.0 */
/* Where the core finds the libraries of tensorplug's own that it loads only when a program
 * needs them (the TensorFlow adapter, the MPI communication library): the private folder
 * <libdir>/tensorplug/, where the packages install them, so that no unversioned library lies
 * in the linker's public folder. */
#ifndef TP_BASE_PRIVATE_LIBRARY_H
#define TP_BASE_PRIVATE_LIBRARY_H

#include <limits.h>
#include <stddef.h>

enum { TP_PRIVATE_LIBRARY_CANDIDATES = 3, TP_PRIVATE_LIBRARY_PATH_CAPACITY = PATH_MAX + 128 };

/* The paths where library `name` may be, in order: the private folder beside the core's
 * library, where it is installed (<libdir>/tensorplug/), then that folder itself, where the
 * build tree has it (for a program with the core built in: the library folder beside its bin);
 * the installed private folder. Returns how many it wrote, at most
 * TP_PRIVATE_LIBRARY_CANDIDATES. */
int tp_private_library_candidates(const char *name,
                                  char (*paths)[TP_PRIVATE_LIBRARY_PATH_CAPACITY]);

/* Opens the first of `paths[0..count)` that loads (RTLD_NOW | RTLD_GLOBAL: the names of what
 * it links serve the libraries it loads in turn) and sets *out_path to it. NULL when none
 * does, with `error` and *out_path saying why and where: a file that is there and fails, else
 * the first path. */
void *tp_private_library_open(char (*paths)[TP_PRIVATE_LIBRARY_PATH_CAPACITY], int count,
                              const char **out_path, char *error, size_t capacity);

#endif
