/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in ops: their inputs, outputs, attributes and shape functions, in the same
 * tp_op_def_t form a plug-in registers its ops with, gathered from the families of ops_*.c into
 * one index sorted by name. The kernels are the devices' business. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "op/op_defs.h"

static const tp_op_family_t *const families[] = {
    &tp_ops_basic,
    &tp_ops_nn,
    &tp_ops_array,
    &tp_ops_conv,
};

/* Room for every family's ops; tests/unit/test_builtin_ops.c checks that they fit. */
enum { MAX_BUILTIN_OPS = 512 };

static tp_op_t ops[MAX_BUILTIN_OPS];
static size_t num_ops;

static int compare_ops(const void *a, const void *b) {
    return strcmp(((const tp_op_t *)a)->def->name, ((const tp_op_t *)b)->def->name);
}

static void build_ops(void) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (size_t i = 0; i < families[f]->count && num_ops < MAX_BUILTIN_OPS; i++)
            ops[num_ops++] = (tp_op_t){&families[f]->entries[i].def,
                                       families[f]->entries[i].infer, NULL};
    qsort(ops, num_ops, sizeof ops[0], compare_ops);
}

static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

const tp_op_t *tp_builtin_ops(size_t *out_count) {
    pthread_once(&ops_once, build_ops);
    *out_count = num_ops;
    return ops;
}

size_t tp_builtin_ops_declared(void) {
    size_t total = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) total += families[f]->count;
    return total;
}

static int compare_name(const void *key, const void *element) {
    return strcmp((const char *)key, ((const tp_op_t *)element)->def->name);
}

/* The ops found last, by the address of the name asked for: an eager caller names its op with
 * the same string literal at every call (tp_relu's "Relu"), and the binary search over the
 * index, a string comparison per step, was a tenth of a small op's dispatch. A hit is checked
 * by name, so that a caller's buffer reused for another name finds its own op. Release and
 * acquire: a thread that meets an entry before it ran pthread_once sees the index built. */
enum { RECENT_SLOTS = 64 };
static _Atomic(const tp_op_t *) recent[RECENT_SLOTS];

const tp_op_t *tp_builtin_op_find(const char *name) {
    size_t slot = (size_t)(((uintptr_t)name >> 2) % RECENT_SLOTS);
    const tp_op_t *hit = atomic_load_explicit(&recent[slot], memory_order_acquire);
    /* The same pointer first: the typed functions (tp_add) name their op with the literal the
     * op's definition uses, which the linker merges, so that most calls skip strcmp. */
    if (hit != NULL && (hit->def->name == name || strcmp(hit->def->name, name) == 0)) return hit;
    size_t count;
    const tp_op_t *all = tp_builtin_ops(&count);
    const tp_op_t *found = bsearch(name, all, count, sizeof *all, compare_name);
    if (found != NULL) atomic_store_explicit(&recent[slot], found, memory_order_release);
    return found;
}
