/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL C programs built into the plug-in: each kernels/NAME.cl file becomes one entry of
 * opencl_programs at build time (embed_source.cmake and opencl_programs.c.in), so that the .cl
 * file stays the one source and a new program needs no other change. */
#ifndef TENSORPLUG_OPENCL_SOURCES_H
#define TENSORPLUG_OPENCL_SOURCES_H

#include <stddef.h>

typedef struct opencl_program_source {
    const char *name;   /* "elementwise", for kernels/elementwise.cl */
    const char *source; /* its text, NUL-terminated */
} opencl_program_source_t;

extern const opencl_program_source_t opencl_programs[];
extern const size_t opencl_num_programs;

/* The programs' maximum number, which the device's table of built programs has room for. */
#define OPENCL_MAX_PROGRAMS 16

#endif
