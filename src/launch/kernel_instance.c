/* SPDX-License-Identifier: Apache-2.0 */
#include "launch/kernel_instance.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "tensor/tensor.h"

/* A key's bytes: on the stack for the attributes of nearly every op, on the heap for a long
 * list or string (a Const's value). */
typedef struct key_buffer {
    unsigned char *bytes;
    size_t size, capacity;
    bool out_of_memory;
    unsigned char small[256];
} key_buffer_t;

static void append(key_buffer_t *key, const void *bytes, size_t size) {
    if (key->out_of_memory || size == 0) return;
    if (key->size + size > key->capacity) {
        size_t capacity = (key->size + size) * 2;
        unsigned char *grown = malloc(capacity);
        if (grown == NULL) {
            key->out_of_memory = true;
            return;
        }
        memcpy(grown, key->bytes, key->size);
        if (key->bytes != key->small) free(key->bytes);
        key->bytes = grown;
        key->capacity = capacity;
    }
    memcpy(key->bytes + key->size, bytes, size);
    key->size += size;
}

/* Every attribute's value in the op's order, then every input's dtype. Types and list lengths
 * follow from the op, which the kernel fixes, so values alone tell keys apart; a length is
 * written before each variable-length value so that ("ab", "c") and ("a", "bc") differ. A
 * float's bits are its value: -0.0 and 0.0 are different attributes. */
static void make_key(const tp_kernel_context_t *call, key_buffer_t *key) {
    const tp_op_def_t *op = call->op->def;
    for (size_t a = 0; a < op->num_attrs; a++) {
        const tp_attr_t *attr = &call->attrs[a];
        switch (op->attrs[a].type) {
        case TP_ATTR_FLOAT: append(key, &attr->f, sizeof attr->f); break;
        case TP_ATTR_INT_LIST:
        case TP_ATTR_SHAPE:
            append(key, &attr->count, sizeof attr->count);
            append(key, attr->list, (size_t)attr->count * sizeof *attr->list);
            break;
        case TP_ATTR_STRING: {
            size_t length = attr->s == NULL ? 0 : strlen(attr->s);
            append(key, &length, sizeof length);
            append(key, attr->s, length);
            break;
        }
        case TP_ATTR_BYTES:
            append(key, &attr->count, sizeof attr->count);
            append(key, attr->s, (size_t)attr->count);
            break;
        default: append(key, &attr->i, sizeof attr->i); break; /* INT, BOOL, DTYPE */
        }
    }
    for (int32_t i = 0; i < call->num_inputs; i++)
        append(key, &call->inputs[i]->dtype, sizeof call->inputs[i]->dtype);
}

/* FNV-1a over the kernel's address and the bytes. */
static uint64_t hash_key(const tp_kernel_def_t *kernel, const key_buffer_t *key) {
    uint64_t h = 0xcbf29ce484222325u ^ (uint64_t)(uintptr_t)kernel;
    for (size_t i = 0; i < key->size; i++) h = (h ^ key->bytes[i]) * 0x100000001b3u;
    return h;
}

typedef struct {
    tp_kernel_context_t *call;
    const tp_kernel_def_t *kernel;
} making_t;

static tp_status_t *make_instance(void *arg, void **out_instance) {
    making_t *making = arg;
    tp_kernel_context_t *call = making->call;
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    call->making_instance = true;
    *out_instance = making->kernel->create(making->kernel->kernel_state, call, &status);
    call->making_instance = false;
    return tp_launch_failure(&status, call);
}

tp_status_t *tp_kernel_instance_for(tp_kernel_context_t *call, const tp_kernel_def_t *kernel,
                                    tp_kept_instance_t **out) {
    key_buffer_t buffer;
    buffer.bytes = buffer.small;
    buffer.size = 0;
    buffer.capacity = sizeof buffer.small;
    buffer.out_of_memory = false;
    make_key(call, &buffer);
    tp_status_t *error = NULL;
    if (buffer.out_of_memory) {
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "%s on %s: out of host memory",
                               call->op->def->name, call->device->full_name);
    } else {
        tp_instance_key_t key = {kernel, buffer.bytes, buffer.size, hash_key(kernel, &buffer)};
        *out = tp_device_find_instance(call->device, &key);
        if (*out == NULL) {
            making_t making = {call, kernel};
            error = tp_device_keep_instance(call->device, &key, make_instance, &making, out);
        }
    }
    if (buffer.bytes != buffer.small) free(buffer.bytes);
    return error;
}
