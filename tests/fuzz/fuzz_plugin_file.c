/* SPDX-License-Identifier: Apache-2.0 */
/* What the loader reads from a plug-in before trusting it. The first byte picks one of two:
 *   - below 0x80: the rest is a plug-in file. Its ELF checks run on it in memory and again
 *     through a memfd, as the loader reads an open file; both must give the same verdict and
 *     the same reason, one printable line, and accept nothing shorter than its headers.
 *   - otherwise: the rest builds a descriptor (struct_size, ABI version, name, version) whose
 *     init registers a kernel and an op through arrays of any claimed stride and length. The
 *     arrays live in a block large enough for two elements of the largest stride the host
 *     accepts, so a check that reads before it bounds what it reads shows up as a crash or a
 *     sanitizer report; a refused plug-in keeps nothing and says why in one line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "fuzz_support.h"

#include <sys/mman.h>
#include <unistd.h>

#include "plugin/abi_sizes.h"
#include "plugin/elf_check.h"
#include "plugin/plugin_record.h"

/* ---- Files ---------------------------------------------------------------------------------- */

static void check_reason(const char *reason) {
    if (reason[0] == '\0') fuzz_fail("file refused", "with no reason");
    if (!fuzz_printable(reason)) fuzz_fail("reason is not one printable line", reason);
}

static void fuzz_file(const uint8_t *data, size_t size) {
    char in_memory[256] = "", through_fd[256] = "";
    bool accepted = tp_elf_check_buffer(data, size, in_memory, sizeof in_memory);
    fuzz_say("file", accepted ? "accepted" : in_memory);
    if (accepted && size < 64) fuzz_fail("file accepted", "shorter than an ELF header");
    if (!accepted) check_reason(in_memory);
    static int fd = -1;
    if (fd < 0) fd = memfd_create("fuzz_plugin_file", MFD_CLOEXEC);
    if (fd < 0) fuzz_fail("memfd_create", "failed");
    if (ftruncate(fd, 0) != 0 || (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size))
        fuzz_fail("memfd", "cannot be written");
    bool accepted_fd = tp_elf_check_fd(fd, size, through_fd, sizeof through_fd);
    if (accepted_fd != accepted || (!accepted && strcmp(in_memory, through_fd) != 0))
        fuzz_fail("the file read from memory and through a descriptor differ", through_fd);
}

/* ---- Descriptors ---------------------------------------------------------------------------- */

/* Two elements of the largest stride accepted, and room for the host's struct past the second. */
enum { ARRAY_BLOCK = 2 * TP_MAX_PLUGIN_STRUCT_SIZE + 4096 };
static _Alignas(max_align_t) unsigned char array_block[ARRAY_BLOCK];

typedef struct {
    size_t stride;
    size_t count;
    size_t kernel_size;
    size_t op_size;
    bool ops_too;
} registration_t;

static registration_t registration;
static const tp_dtype_t float32_only[] = {TP_FLOAT32};

/* A size as a plug-in might claim one: mostly right, often on a boundary, sometimes anything. */
static size_t claimed_size(fuzz_input_t *in, size_t right) {
    static const size_t boundaries[] = {0, 1, 8, 63, TP_MAX_PLUGIN_STRUCT_SIZE,
                                        TP_MAX_PLUGIN_STRUCT_SIZE + 1, SIZE_MAX, SIZE_MAX / 2,
                                        (size_t)1 << 40};
    uint8_t b = fuzz_byte(in);
    if (b < 0x80) return right;
    if (b < 0xc0) return right + b % 64 - 32;
    if (b < 0xf0) return boundaries[b % (sizeof boundaries / sizeof boundaries[0])];
    return (size_t)fuzz_u64(in);
}

/* A length: what fits in the block, or far more than the host accepts. */
static size_t claimed_count(fuzz_input_t *in) {
    static const size_t too_many[] = {TP_MAX_PLUGIN_ARRAY_LENGTH + 1, SIZE_MAX, (size_t)1 << 62};
    uint8_t b = fuzz_byte(in);
    return b < 0xc0 ? b % 3 : too_many[b % 3];
}

/* Writes `count` (at most 2) elements of `element_size` bytes at `stride` into the block; their
 * other fields come from `element`, only struct_size from the claim. */
static const void *fill_array(const void *element, size_t element_size, size_t stride,
                              size_t count) {
    memset(array_block, 0, sizeof array_block);
    size_t step = stride <= TP_MAX_PLUGIN_STRUCT_SIZE ? stride : 0;
    for (size_t i = 0; i < count && i < 2; i++) {
        memcpy(array_block + i * step, element, element_size);
        memcpy(array_block + i * step, &stride, sizeof stride);
    }
    return array_block;
}

static void compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    (void)context;
    (void)status;
}

static void register_things(const tp_host_api_t *host, tp_registrar_t *registrar,
                            tp_plugin_status_t *status) {
    if (registration.ops_too) {
        tp_op_attr_def_t attr = {.struct_size = sizeof attr, .name = "T", .type = TP_ATTR_DTYPE};
        static tp_op_arg_def_t arg = {sizeof arg, "x", TP_DTYPE_INVALID, "T", NULL};
        tp_op_def_t op = {.struct_size = registration.op_size, .name = "FuzzOp", .inputs = &arg,
                          .num_inputs = 1, .outputs = &arg, .num_outputs = 1,
                          .attrs = fill_array(&attr, sizeof attr, registration.stride,
                                              registration.count),
                          .num_attrs = registration.count};
        host->register_op(registrar, &op, status);
        return;
    }
    tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    tp_kernel_def_t kernel = {.struct_size = registration.kernel_size, .op = "Relu",
                              .device_type = "CPU",
                              .constraints = fill_array(&constraint, sizeof constraint,
                                                        registration.stride, registration.count),
                              .num_constraints = registration.count, .compute = compute};
    host->register_kernel(registrar, &kernel, status);
}

static void fuzz_descriptor(fuzz_input_t *in) {
    tp_plugin_descriptor_t descriptor = {0};
    descriptor.struct_size = claimed_size(in, sizeof descriptor);
    descriptor.abi_major = fuzz_byte(in) < 0xe0 ? TP_ABI_MAJOR : (uint32_t)fuzz_u64(in);
    descriptor.abi_minor = fuzz_byte(in) < 0xe0 ? TP_ABI_MINOR : (uint32_t)fuzz_u64(in);
    descriptor.init = fuzz_byte(in) < 0xf0 ? register_things : NULL;
    registration.ops_too = fuzz_bool(in);
    registration.kernel_size = claimed_size(in, sizeof(tp_kernel_def_t));
    registration.op_size = claimed_size(in, sizeof(tp_op_def_t));
    registration.stride = claimed_size(in, registration.ops_too ? sizeof(tp_op_attr_def_t)
                                                                : sizeof(tp_type_constraint_t));
    registration.count = claimed_count(in);
    char name[32] = "fuzz", version[32] = "0.1.0";
    if (fuzz_byte(in) >= 0xc0) {
        size_t length = fuzz_below(in, sizeof name);
        for (size_t i = 0; i < length; i++) name[i] = (char)fuzz_byte(in);
        name[length] = '\0';
    }
    descriptor.name = name;
    descriptor.version = fuzz_byte(in) >= 0xf0 ? NULL : version;

    tp_plugin_record_t record = {.arena = TP_ARENA_INIT, .path = "fuzz"};
    tp_plugin_record_init_from_descriptor(&record, &descriptor);
    fuzz_say("descriptor", record.refusal != NULL ? record.refusal : "accepted");
    size_t registered = record.num_ops + record.num_kernels + record.num_device_types;
    if (record.refusal != NULL) {
        if (registered != 0) fuzz_fail("refused plug-in", "kept a registration");
        if (!fuzz_printable(record.refusal) && fuzz_printable(name))
            fuzz_fail("refusal is not one printable line", record.refusal);
    } else {
        if (registered != 1) fuzz_fail("accepted plug-in", "does not hold its registration");
        if (descriptor.struct_size > TP_MAX_PLUGIN_STRUCT_SIZE ||
            (registration.count > 0 && registration.stride > TP_MAX_PLUGIN_STRUCT_SIZE) ||
            registration.count > TP_MAX_PLUGIN_ARRAY_LENGTH)
            fuzz_fail("accepted plug-in", "claims a size or length past the caps");
    }
    free(record.ops);
    free(record.device_types);
    free(record.kernels);
    tp_arena_free(&record.arena);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_quiet_log();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_input_t in = {data, size};
    if (fuzz_byte(&in) < 0x80)
        fuzz_file(in.data, in.size);
    else
        fuzz_descriptor(&in);
    return 0;
}
