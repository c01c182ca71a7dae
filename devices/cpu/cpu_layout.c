/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels that move elements without computing: Identity and Reshape (a plain copy: the
 * shapes differ, the row-major bytes do not) and Transpose. */
#include <stdint.h>
#include <string.h>

#include "cpu_kernels.h"

void cpu_copy_kernel(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    if (x.view.byte_size > 0) memcpy(y.data, x.data, x.view.byte_size);
}

/* Transpose as a walk over the output: dims[d] output dimensions, each stepping
 * in_strides[d] input elements. Dimensions of 1 are dropped and output neighbours that are
 * neighbours in the input too are merged, so that [N,H,W,C] -> [N,C,H,W] is one batched
 * transpose of (H*W) x C matrices. */
typedef struct {
    int32_t rank;
    int64_t dims[TP_MAX_RANK], in_strides[TP_MAX_RANK], out_strides[TP_MAX_RANK];
    int32_t unit;      /* the output dimension that steps one input element */
    int64_t tile_rows; /* tiles along `unit` and along the last dimension */
    int64_t tile_cols;
    int64_t tiles;     /* tile_rows * tile_cols per combination of the other dimensions */
    size_t size;       /* bytes per element */
    const char *in;
    char *out;
} transpose_walk_t;

/* Tiles of TILE x TILE elements. The strided side of a tile touches TILE cache lines, which a
 * power-of-two stride (a 4096-wide matrix) maps to the same cache sets: 32 x 32 tiles thrashed
 * there (0.77x of bench_compare's 32 x 32 blocked loop on 4096 x 4096), 16 x 16 keep their
 * lines (1.16x; 64: 0.94x). */
enum { TILE = 16 };

static void merge_walk(transpose_walk_t *w, int32_t rank, const int64_t *out_dims,
                       const int64_t *in_strides) {
    w->rank = 0;
    for (int32_t d = 0; d < rank; d++) {
        if (out_dims[d] == 1) continue;
        int32_t last = w->rank - 1;
        if (last >= 0 && w->in_strides[last] == in_strides[d] * out_dims[d]) {
            w->dims[last] *= out_dims[d];
            w->in_strides[last] = in_strides[d];
            continue;
        }
        w->dims[w->rank] = out_dims[d];
        w->in_strides[w->rank++] = in_strides[d];
    }
    int64_t stride = 1;
    for (int32_t d = w->rank - 1; d >= 0; d--) {
        w->out_strides[d] = stride;
        stride *= w->dims[d];
    }
}

/* The input and output offsets of combination `index` of every dimension but `skip_a` and
 * `skip_b` (the tiled ones, or the last twice for row copies). */
static void offsets_of(const transpose_walk_t *w, int64_t index, int32_t skip_a, int32_t skip_b,
                       int64_t *in, int64_t *out) {
    *in = 0, *out = 0;
    for (int32_t d = w->rank - 1; d >= 0; d--) {
        if (d == skip_a || d == skip_b) continue;
        int64_t i = index % w->dims[d];
        index /= w->dims[d];
        *in += i * w->in_strides[d];
        *out += i * w->out_strides[d];
    }
}

/* Rows [begin, end) of a walk whose last dimension is contiguous in the input too. */
static void copy_rows(void *arg, int64_t begin, int64_t end) {
    const transpose_walk_t *w = arg;
    int32_t last = w->rank - 1;
    size_t bytes = (size_t)w->dims[last] * w->size;
    for (int64_t r = begin; r < end; r++) {
        int64_t in, out;
        offsets_of(w, r, last, last, &in, &out);
        memcpy(w->out + (size_t)out * w->size, w->in + (size_t)in * w->size, bytes);
    }
}

/* One tile: rows along the unit dimension (read contiguously), columns along the output's last
 * dimension (written contiguously). */
#define DEFINE_TILE(T)                                                                             \
    static void tile_##T(const T *in, T *out, int64_t rows, int64_t cols, int64_t in_col,          \
                         int64_t out_row) {                                                        \
        for (int64_t r = 0; r < rows; r++)                                                         \
            for (int64_t c = 0; c < cols; c++) out[r * out_row + c] = in[r + c * in_col];          \
    }
DEFINE_TILE(uint8_t)
DEFINE_TILE(uint16_t)
DEFINE_TILE(uint32_t)
DEFINE_TILE(uint64_t)

/* Tiles [begin, end): tile t is tile t % tiles of combination t / tiles of the others. */
static void copy_tiles(void *arg, int64_t begin, int64_t end) {
    const transpose_walk_t *w = arg;
    int32_t last = w->rank - 1, unit = w->unit;
    for (int64_t t = begin; t < end; t++) {
        int64_t in, out;
        offsets_of(w, t / w->tiles, unit, last, &in, &out);
        int64_t r0 = t % w->tiles / w->tile_cols * TILE, c0 = t % w->tiles % w->tile_cols * TILE;
        int64_t rows = w->dims[unit] - r0 < TILE ? w->dims[unit] - r0 : TILE;
        int64_t cols = w->dims[last] - c0 < TILE ? w->dims[last] - c0 : TILE;
        in += r0 * w->in_strides[unit] + c0 * w->in_strides[last];
        out += r0 * w->out_strides[unit] + c0;
        int64_t in_col = w->in_strides[last], out_row = w->out_strides[unit];
        switch (w->size) {
        case 1: tile_uint8_t((const uint8_t *)w->in + in, (uint8_t *)w->out + out, rows, cols,
                             in_col, out_row); break;
        case 2: tile_uint16_t((const uint16_t *)w->in + in, (uint16_t *)w->out + out, rows,
                              cols, in_col, out_row); break;
        case 4: tile_uint32_t((const uint32_t *)w->in + in, (uint32_t *)w->out + out, rows,
                              cols, in_col, out_row); break;
        default: tile_uint64_t((const uint64_t *)w->in + in, (uint64_t *)w->out + out, rows,
                               cols, in_col, out_row); break;
        }
    }
}

static void transpose(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    const int64_t *perm = NULL;
    int32_t count = 0;
    tp_cpu_host->kernel_attr_int_list(context, "perm", &perm, &count, status);
    if (cpu_failed(status)) return;
    if (y.view.num_elements == 0) return;
    int32_t rank = x.view.rank;
    int64_t x_strides[TP_MAX_RANK];
    cpu_row_major_strides(rank, x.view.dims, x_strides);
    /* Output dimension d walks input dimension perm[d] (reversed when perm is empty). */
    int64_t walk[TP_MAX_RANK];
    for (int32_t d = 0; d < rank; d++)
        walk[d] = x_strides[count == 0 ? rank - 1 - d : perm[d]];
    transpose_walk_t w = {.size = cpu_element_size(&x.view), .in = x.data, .out = y.data};
    merge_walk(&w, rank, y.view.dims, walk);
    if (w.rank == 0) { /* one element */
        memcpy(y.data, x.data, w.size);
        return;
    }
    int32_t last = w.rank - 1;
    if (w.in_strides[last] == 1) { /* rows that stay rows */
        cpu_parallel_for(y.view.num_elements / w.dims[last], w.dims[last], copy_rows, &w);
        return;
    }
    /* The dimension that steps one input element exists: the input's last one, kept by the
     * merge since its size is not 1 (dimensions of 1 were dropped and strides merged). */
    w.unit = 0;
    for (int32_t d = 1; d < w.rank; d++)
        if (w.in_strides[d] < w.in_strides[w.unit]) w.unit = d;
    w.tile_rows = (w.dims[w.unit] + TILE - 1) / TILE;
    w.tile_cols = (w.dims[last] + TILE - 1) / TILE;
    w.tiles = w.tile_rows * w.tile_cols;
    int64_t others = y.view.num_elements / (w.dims[w.unit] * w.dims[last]);
    cpu_parallel_for(others * w.tiles, TILE * TILE, copy_tiles, &w);
}

void cpu_register_layout_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register_native(registrar, "Reshape", "T", CPU_ALL, cpu_copy_kernel, status);
    cpu_register_native(registrar, "Transpose", "T", CPU_ALL, transpose, status);
}
