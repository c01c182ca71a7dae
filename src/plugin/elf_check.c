/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/elf_check.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tensorplug/plugin.h"

/* This process's ELF flavour: its class, byte order and architecture. */
#if UINTPTR_MAX > UINT32_MAX
#define HOST_CLASS ELFCLASS64
#define HOST_BITS 64
typedef Elf64_Ehdr elf_header_t;
typedef Elf64_Phdr program_header_t;
#else
#define HOST_CLASS ELFCLASS32
#define HOST_BITS 32
typedef Elf32_Ehdr elf_header_t;
typedef Elf32_Phdr program_header_t;
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

/* The architectures Debian builds for. On another, the machine check is left to dlopen, which
 * refuses a foreign object with an error rather than a crash. */
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__arm__)
#define HOST_MACHINE EM_ARM
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#elif defined(__powerpc__)
#define HOST_MACHINE EM_PPC
#elif defined(__s390x__)
#define HOST_MACHINE EM_S390
#elif defined(__loongarch__)
#define HOST_MACHINE 258 /* EM_LOONGARCH, absent from older <elf.h> */
#elif defined(__mips__)
#define HOST_MACHINE EM_MIPS
#else
#define HOST_MACHINE EM_NONE
#endif

static const char *machine_name(unsigned machine) {
    switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "i386";
    case EM_AARCH64: return "AArch64";
    case EM_ARM: return "ARM";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "PowerPC64";
    case EM_PPC: return "PowerPC";
    case EM_S390: return "S/390";
    case 258: return "LoongArch";
    case EM_MIPS: return "MIPS";
    default: return NULL;
    }
}

static void describe_machine(unsigned machine, char *buffer, size_t capacity) {
    const char *name = machine_name(machine);
    if (name != NULL)
        snprintf(buffer, capacity, "%s", name);
    else
        snprintf(buffer, capacity, "ELF machine %u", machine);
}

static const char *file_type_name(unsigned type) {
    switch (type) {
    case ET_EXEC: return "an executable";
    case ET_REL: return "a relocatable object (.o)";
    case ET_CORE: return "a core dump";
    default: return "of an unknown ELF type";
    }
}

static bool refuse(char *reason, size_t capacity, const char *format, ...)
    TP_PRINTF_LIKE(3, 4);

static bool refuse(char *reason, size_t capacity, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(reason, capacity, format, args);
    va_end(args);
    return false;
}

static bool check_header(const elf_header_t *header, uint64_t file_size, char *reason,
                         size_t capacity) {
    if (header->e_type != ET_DYN)
        return refuse(reason, capacity, "it is %s, not a shared object",
                      file_type_name(header->e_type));
    if (HOST_MACHINE != EM_NONE && header->e_machine != HOST_MACHINE) {
        char theirs[48], ours[48];
        describe_machine(header->e_machine, theirs, sizeof theirs);
        describe_machine(HOST_MACHINE, ours, sizeof ours);
        return refuse(reason, capacity, "it is built for %s; this process runs on %s", theirs,
                      ours);
    }
    if (header->e_phentsize != sizeof(program_header_t))
        return refuse(reason, capacity, "its program headers are %u bytes each, not the %zu of "
                      "%d-bit ELF", (unsigned)header->e_phentsize, sizeof(program_header_t),
                      HOST_BITS);
    /* PN_XNUM would move the count into a section header; no shared object needs that many. */
    if (header->e_phnum == 0 || header->e_phnum == PN_XNUM)
        return refuse(reason, capacity, "it has %s program headers",
                      header->e_phnum == 0 ? "no" : "too many");
    uint64_t table_size = (uint64_t)header->e_phnum * sizeof(program_header_t);
    if (header->e_phoff > file_size || table_size > file_size - header->e_phoff)
        return refuse(reason, capacity, "its program headers end past the end of the file (%llu "
                      "bytes): it is truncated or corrupt", (unsigned long long)file_size);
    return true;
}

bool tp_elf_check(tp_elf_read_fn read, void *source, uint64_t file_size, char *reason,
                  size_t capacity) {
    unsigned char ident[EI_NIDENT];
    if (file_size == 0) return refuse(reason, capacity, "it is empty");
    if (file_size < sizeof ident || !read(source, 0, ident, sizeof ident) ||
        memcmp(ident, ELFMAG, SELFMAG) != 0)
        return refuse(reason, capacity, "it is not an ELF file");
    if (ident[EI_CLASS] != HOST_CLASS) {
        if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64)
            return refuse(reason, capacity, "its ELF class %u is unknown", ident[EI_CLASS]);
        return refuse(reason, capacity, "it is a %d-bit ELF file; this process is %d-bit",
                      ident[EI_CLASS] == ELFCLASS32 ? 32 : 64, HOST_BITS);
    }
    if (ident[EI_DATA] != HOST_DATA)
        return refuse(reason, capacity, "it is %s ELF; this machine is %s",
                      ident[EI_DATA] == ELFDATA2MSB   ? "big-endian"
                      : ident[EI_DATA] == ELFDATA2LSB ? "little-endian"
                                                      : "of unknown byte order",
                      HOST_DATA == ELFDATA2LSB ? "little-endian" : "big-endian");
    if (ident[EI_VERSION] != EV_CURRENT)
        return refuse(reason, capacity, "its ELF version %u is unknown", ident[EI_VERSION]);
    elf_header_t header;
    if (file_size < sizeof header || !read(source, 0, &header, sizeof header))
        return refuse(reason, capacity, "it is %llu bytes, too short for its ELF header",
                      (unsigned long long)file_size);
    if (!check_header(&header, file_size, reason, capacity)) return false;
    for (unsigned i = 0; i < header.e_phnum; i++) {
        program_header_t segment;
        if (!read(source, header.e_phoff + (uint64_t)i * sizeof segment, &segment, sizeof segment))
            return refuse(reason, capacity, "its program header %u cannot be read", i);
        if (segment.p_type != PT_LOAD) continue;
        if (segment.p_offset > file_size || segment.p_filesz > file_size - segment.p_offset)
            return refuse(reason, capacity, "its loadable segment %u needs bytes up to %llu but "
                          "the file has %llu: it is truncated", i,
                          (unsigned long long)segment.p_offset +
                              (unsigned long long)segment.p_filesz,
                          (unsigned long long)file_size);
    }
    return true;
}

typedef struct {
    const unsigned char *bytes;
    size_t size;
} buffer_source_t;

static bool read_buffer(void *source, uint64_t offset, void *buffer, size_t size) {
    const buffer_source_t *from = source;
    if (offset > from->size || size > from->size - offset) return false;
    memcpy(buffer, from->bytes + offset, size);
    return true;
}

bool tp_elf_check_buffer(const void *bytes, size_t size, char *reason, size_t capacity) {
    buffer_source_t source = {bytes, size};
    return tp_elf_check(read_buffer, &source, size, reason, capacity);
}

static bool read_fd(void *source, uint64_t offset, void *buffer, size_t size) {
    int fd = *(const int *)source;
    unsigned char *to = buffer;
    while (size > 0) {
        off_t position = (off_t)offset;
        if (position < 0 || (uint64_t)position != offset) return false;
        ssize_t got = pread(fd, to, size, position);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        to += got;
        offset += (uint64_t)got;
        size -= (size_t)got;
    }
    return true;
}

bool tp_elf_check_fd(int fd, uint64_t file_size, char *reason, size_t capacity) {
    return tp_elf_check(read_fd, &fd, file_size, reason, capacity);
}
