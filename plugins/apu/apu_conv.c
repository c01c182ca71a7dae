/* SPDX-License-Identifier: Apache-2.0 */
/* Conv2D on the APU: float32 NHWC images by HWIO filters, computed by a plain direct loop on
 * the stream's queue thread, as a simple accelerator's kernel would, so that a model's
 * convolutions can be placed on the APU. compute reads the window's attributes and places the
 * output by TensorFlow's rules on the host thread, then queues the loop and returns. */
#include <stdio.h>
#include <string.h>

#include "apu_device.h"
#include "apu_stream.h"

/* The queued work: every size as int32, to fit a queued command's 128 bytes. */
typedef struct {
    void *x_mem, *f_mem, *y_mem;
    uint64_t x_offset, f_offset, y_offset;
    int32_t n, h, w, c, kh, kw, o, oh, ow;
    int32_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
    bool injected_failure;
    int64_t launch;
} conv_t;

_Static_assert(sizeof(conv_t) <= 128, "a queued command's payload holds 128 bytes");

static bool run_conv(apu_stream_t *stream, void *payload, char *error, size_t capacity) {
    const conv_t *k = payload;
    int ordinal = (int)stream->device->ordinal;
    if (k->injected_failure) {
        snprintf(error, capacity, "Conv2D on APU:%d: injected failure of kernel launch %lld (%s)",
                 ordinal, (long long)k->launch, apu_fault_variable());
        return false;
    }
    uint64_t x_bytes = (uint64_t)k->n * k->h * k->w * k->c * sizeof(float);
    uint64_t f_bytes = (uint64_t)k->kh * k->kw * k->c * k->o * sizeof(float);
    uint64_t y_bytes = (uint64_t)k->n * k->oh * k->ow * k->o * sizeof(float);
    float *y = (float *)(void *)apu_translate(stream->device, k->y_mem, k->y_offset, y_bytes);
    /* No channels: the inputs are empty (and have no memory), the output all zeros. */
    const float *x = NULL, *f = NULL;
    if (k->c > 0) {
        x = (const float *)(void *)apu_translate(stream->device, k->x_mem, k->x_offset, x_bytes);
        f = (const float *)(void *)apu_translate(stream->device, k->f_mem, k->f_offset, f_bytes);
    }
    if (y == NULL || (k->c > 0 && (x == NULL || f == NULL))) {
        snprintf(error, capacity, "Conv2D on APU:%d: a tensor lies outside device memory",
                 ordinal);
        return false;
    }
    for (int32_t n = 0; n < k->n; n++)
        for (int32_t oh = 0; oh < k->oh; oh++)
            for (int32_t ow = 0; ow < k->ow; ow++) {
                float *out = y + (((int64_t)n * k->oh + oh) * k->ow + ow) * k->o;
                memset(out, 0, (size_t)k->o * sizeof(float));
                for (int32_t kh = 0; kh < k->kh; kh++) {
                    int64_t ih = (int64_t)oh * k->stride_h - k->pad_top + (int64_t)kh * k->dilation_h;
                    if (ih < 0 || ih >= k->h) continue;
                    for (int32_t kw = 0; kw < k->kw; kw++) {
                        int64_t iw =
                            (int64_t)ow * k->stride_w - k->pad_left + (int64_t)kw * k->dilation_w;
                        if (iw < 0 || iw >= k->w) continue;
                        const float *tap = x + (((int64_t)n * k->h + ih) * k->w + iw) * k->c;
                        const float *weights = f + ((int64_t)kh * k->kw + kw) * k->c * k->o;
                        /* Over the output channels innermost: the filter's rows are contiguous
                         * there. */
                        for (int32_t c = 0; c < k->c; c++)
                            for (int32_t o = 0; o < k->o; o++)
                                out[o] += tap[c] * weights[(int64_t)c * k->o + o];
                    }
                }
            }
    return true;
}

/* One spatial dimension by TensorFlow's rules: SAME gives ceil(size / stride) and pads the
 * difference, the odd one after; VALID keeps the windows inside. */
static void place(int64_t size, int64_t window, int64_t stride, int64_t dilation, bool same,
                  int64_t *out, int64_t *before) {
    int64_t span = (window - 1) * dilation + 1;
    if (!same) {
        *out = size >= span ? (size - span) / stride + 1 : 0;
        *before = 0;
        return;
    }
    *out = (size + stride - 1) / stride;
    int64_t needed = (*out - 1) * stride + span - size;
    *before = needed > 0 ? needed / 2 : 0;
}

/* The attribute's height and width entries; an empty list (dilations' default) is ones. */
static bool pair(tp_kernel_context_t *context, const char *name, int64_t *height,
                 int64_t *width, tp_plugin_status_t *status) {
    const int64_t *values = NULL;
    int32_t count = 0;
    apu_host->kernel_attr_int_list(context, name, &values, &count, status);
    if (apu_host->status_code(status) != TP_OK) return false;
    if (count == 0) {
        *height = *width = 1;
        return true;
    }
    if (count != 4 || values[1] < 1 || values[2] < 1) {
        apu_host->status_set(status, TP_INVALID_ARGUMENT,
                             "Conv2D on APU: %s must be 4 values of at least 1", name);
        return false;
    }
    *height = values[1];
    *width = values[2];
    return true;
}

static void conv_compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    tp_tensor_view_t x = {.struct_size = sizeof x}, f = {.struct_size = sizeof f},
                     y = {.struct_size = sizeof y};
    apu_host->kernel_input(context, 0, &x, status);
    apu_host->kernel_input(context, 1, &f, status);
    apu_host->kernel_output(context, 0, &y, status);
    const char *padding = NULL;
    apu_host->kernel_attr_string(context, "padding", &padding, status);
    int64_t sh, sw, dh, dw;
    if (apu_host->status_code(status) != TP_OK || !pair(context, "strides", &sh, &sw, status) ||
        !pair(context, "dilations", &dh, &dw, status))
        return;
    if (x.rank != 4 || f.rank != 4 || y.rank != 4) {
        apu_host->status_set(status, TP_INVALID_ARGUMENT,
                             "Conv2D on APU: the input, filter and output must be 4-dimensional");
        return;
    }
    if (y.num_elements == 0) return;
    int64_t oh, ow, pad_top, pad_left;
    bool same = strcmp(padding, "SAME") == 0;
    place(x.dims[1], f.dims[0], sh, dh, same, &oh, &pad_top);
    place(x.dims[2], f.dims[1], sw, dw, same, &ow, &pad_left);
    if (y.dims[0] != x.dims[0] || y.dims[1] != oh || y.dims[2] != ow || y.dims[3] != f.dims[3] ||
        x.dims[3] != f.dims[2]) {
        apu_host->status_set(status, TP_INVALID_ARGUMENT,
                             "Conv2D on APU: the output [%lld,%lld,%lld,%lld] is not what the "
                             "input and filter give",
                             (long long)y.dims[0], (long long)y.dims[1], (long long)y.dims[2],
                             (long long)y.dims[3]);
        return;
    }
    const int64_t sizes[] = {x.dims[0], x.dims[1], x.dims[2], x.dims[3], f.dims[0], f.dims[1],
                             f.dims[3], oh, ow, sh, sw, dh, dw, pad_top, pad_left};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i] > INT32_MAX) {
            apu_host->status_set(status, TP_UNIMPLEMENTED,
                                 "Conv2D on APU: a size or stride of %lld is beyond the APU's "
                                 "32-bit indices",
                                 (long long)sizes[i]);
            return;
        }
    }
    conv_t k = {x.mem, f.mem, y.mem, x.offset, f.offset, y.offset,
                (int32_t)x.dims[0], (int32_t)x.dims[1], (int32_t)x.dims[2], (int32_t)x.dims[3],
                (int32_t)f.dims[0], (int32_t)f.dims[1], (int32_t)f.dims[3], (int32_t)oh,
                (int32_t)ow, (int32_t)sh, (int32_t)sw, (int32_t)dh, (int32_t)dw,
                (int32_t)pad_top, (int32_t)pad_left, false, 0};
    k.launch = apu_next_launch(&k.injected_failure);
    apu_stream_enqueue(apu_host->kernel_stream(context), run_conv, &k, sizeof k, status);
}

void apu_register_conv(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    if (apu_host->status_code(status) != TP_OK) return;
    static const tp_dtype_t float32_only[] = {TP_FLOAT32};
    const tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    const tp_kernel_def_t conv = {.struct_size = sizeof conv,
                                  .op = "Conv2D",
                                  .device_type = "APU",
                                  .constraints = &constraint,
                                  .num_constraints = 1,
                                  .compute = conv_compute};
    apu_host->register_kernel(registrar, &conv, status);
}
