/* SPDX-License-Identifier: Apache-2.0 */
/* A TensorFlow kernel run as a native one, and the functions it calls while it computes. The
 * host has allocated every output, with the shape it infers, before compute: TF_AllocateOutput
 * hands that output out when the kernel asks for the same shape. Inputs and outputs are views
 * (deleting them frees no device memory); temporaries are freed once the stream has passed
 * the kernel's work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc.h"

typedef struct tfc_instance {
    const tfc_kernel_t *kernel;
    void *tf_kernel;
} tfc_instance_t;

typedef struct tfc_temp {
    struct tfc_temp *next;
    tfc_device_t *device;
    tfc_memory_t memory; /* device memory; base.opaque NULL for host memory */
    void *host;
} tfc_temp_t;

static atomic_llong step_ids;

bool tfc_host_ok(tp_plugin_status_t *host_status, TF_Status *status, const char *function,
                 const char *what) {
    tp_code_t code = tfc_host->status_code(host_status);
    if (code == TP_OK) return true;
    tfc_host->status_set(host_status, TP_OK, "%s", "");
    tfc_status_printf(status, (TF_Code)code, "%s: tensorplug refused %s", function, what);
    return false;
}

void *tfc_kernel_create(void *kernel_state, tp_kernel_context_t *context,
                        tp_plugin_status_t *status) {
    const tfc_kernel_t *kernel = kernel_state;
    TF_OpKernelConstruction construction = {context, status, kernel, {0}};
    void *tf_kernel = kernel->create != NULL ? kernel->create(&construction) : NULL;
    if (construction.failure.code != TF_OK) {
        /* The kernel is never used; what its create made is freed now. */
        if (tf_kernel != NULL && kernel->destroy != NULL) kernel->destroy(tf_kernel);
        tfc_status_to_host(&construction.failure, status, kernel->name);
        return NULL;
    }
    tfc_instance_t *instance = malloc(sizeof *instance);
    if (instance == NULL) {
        if (tf_kernel != NULL && kernel->destroy != NULL) kernel->destroy(tf_kernel);
        tfc_host->status_set(status, TP_RESOURCE_EXHAUSTED, "%s: out of host memory",
                             kernel->name);
        return NULL;
    }
    instance->kernel = kernel;
    instance->tf_kernel = tf_kernel;
    return instance;
}

void tfc_kernel_destroy(void *opaque) {
    tfc_instance_t *instance = opaque;
    if (instance == NULL) return;
    if (instance->tf_kernel != NULL && instance->kernel->destroy != NULL)
        instance->kernel->destroy(instance->tf_kernel);
    free(instance);
}

static void free_temps(void *opaque) {
    tfc_temp_t *temp = opaque;
    while (temp != NULL) {
        tfc_temp_t *next = temp->next;
        if (temp->memory.base.opaque != NULL)
            temp->device->plugin->stream_executor.deallocate(&temp->device->device,
                                                             &temp->memory.base);
        free(temp->host);
        free(temp);
        temp = next;
    }
}

void tfc_kernel_compute(void *opaque, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    tfc_instance_t *instance = opaque;
    TF_OpKernelContext ctx = {.context = context,
                              .host_status = status,
                              .kernel = instance->kernel,
                              .device = tfc_host->kernel_device(context),
                              .stream = tfc_host->kernel_stream(context)};
    instance->kernel->compute(instance->tf_kernel, &ctx);
    if (ctx.temps != NULL)
        tfc_after_stream(ctx.device, ctx.stream->stream, free_temps, ctx.temps, status);
    if (ctx.failure.code != TF_OK) tfc_status_to_host(&ctx.failure, status, instance->kernel->name);
}

/* ---- What a computing kernel calls ---------------------------------------------------- */

SP_Stream TF_GetStream(TF_OpKernelContext *ctx, TF_Status *status) {
    TF_SetStatus(status, TF_OK, "");
    return ctx->stream->stream;
}

int TF_NumInputs(TF_OpKernelContext *ctx) { return tfc_host->kernel_num_inputs(ctx->context); }

int TF_NumOutputs(TF_OpKernelContext *ctx) { return tfc_host->kernel_num_outputs(ctx->context); }

/* The host's view of a tensor of this kernel, as a TF_Tensor that owns nothing. */
static TF_Tensor *view_tensor(const tp_tensor_view_t *view, TF_Status *status,
                              const char *function) {
    /* An empty tensor has no memory; nothing reads or copies its no bytes. */
    const tfc_memory_t *memory = view->mem;
    void *data = memory == NULL ? NULL : (char *)memory->base.opaque + view->offset;
    TF_Tensor *tensor = tfc_tensor_view(tfc_dtype_from_tp(view->dtype), view->dims, view->rank,
                                        data, (size_t)view->byte_size,
                                        memory == NULL ? NULL : &memory->base);
    if (tensor == NULL) {
        tfc_status_printf(status, TF_RESOURCE_EXHAUSTED, "%s: out of host memory", function);
        return NULL;
    }
    TF_SetStatus(status, TF_OK, "");
    return tensor;
}

static bool get_view(TF_OpKernelContext *ctx, bool output, int index, tp_tensor_view_t *view,
                     TF_Status *status, const char *function) {
    int count = output ? TF_NumOutputs(ctx) : TF_NumInputs(ctx);
    if (index < 0 || index >= count) {
        tfc_status_printf(status, TF_OUT_OF_RANGE, "%s: %s %d of %s, which has %d", function,
                          output ? "output" : "input", index, ctx->kernel->tf_op, count);
        return false;
    }
    *view = (tp_tensor_view_t){.struct_size = sizeof *view};
    if (output)
        tfc_host->kernel_output(ctx->context, index, view, ctx->host_status);
    else
        tfc_host->kernel_input(ctx->context, index, view, ctx->host_status);
    return tfc_host_ok(ctx->host_status, status, function, output ? "the output" : "the input");
}

void TF_GetInput(TF_OpKernelContext *ctx, int i, TF_Tensor **tensor, TF_Status *status) {
    tp_tensor_view_t view;
    if (!get_view(ctx, false, i, &view, status, "TF_GetInput")) return;
    TF_Tensor *input = view_tensor(&view, status, "TF_GetInput");
    if (input != NULL) *tensor = input;
}

static void format_dims(char *text, size_t capacity, const int64_t *dims, int count) {
    size_t used = (size_t)snprintf(text, capacity, "[");
    for (int i = 0; i < count && used < capacity; i++)
        used += (size_t)snprintf(text + used, capacity - used, "%s%lld", i > 0 ? "," : "",
                                 (long long)dims[i]);
    if (used < capacity) snprintf(text + used, capacity - used, "]");
}

TF_Tensor *TF_AllocateOutput(TF_OpKernelContext *context, int index, TF_DataType dtype,
                             const int64_t *dims, int num_dims, size_t len, TF_Status *status) {
    /* TensorFlow itself ignores dtype and len here: the op's output dtype and dims decide. */
    (void)dtype;
    (void)len;
    tp_tensor_view_t view;
    if (!get_view(context, true, index, &view, status, "TF_AllocateOutput")) return NULL;
    bool same = num_dims == view.rank && (num_dims == 0 || dims != NULL);
    for (int d = 0; same && d < num_dims; d++) same = dims[d] == view.dims[d];
    if (!same) {
        char inferred[160], asked[160];
        format_dims(inferred, sizeof inferred, view.dims, view.rank);
        format_dims(asked, sizeof asked, dims, num_dims < 0 || dims == NULL ? 0 : num_dims);
        tfc_status_printf(status, TF_INVALID_ARGUMENT,
                          "TF_AllocateOutput: output %d of %s has shape %s as tensorplug infers "
                          "it, but the kernel asked for %s",
                          index, context->kernel->tf_op, inferred, asked);
        return NULL;
    }
    return view_tensor(&view, status, "TF_AllocateOutput");
}

TF_Tensor *TF_ForwardInputOrAllocateOutput(TF_OpKernelContext *context,
                                           const int *candidate_input_indices,
                                           int num_candidate_input_indices, int output_index,
                                           const int64_t *output_dims, int output_num_dims,
                                           int *forwarded_input, TF_Status *status) {
    /* tensorplug allocated the output already; forwarding would only save that allocation. */
    (void)candidate_input_indices;
    (void)num_candidate_input_indices;
    if (forwarded_input != NULL) *forwarded_input = -1;
    return TF_AllocateOutput(context, output_index, (TF_DataType)0, output_dims, output_num_dims,
                             0, status);
}

void TF_SetOutput(TF_OpKernelContext *ctx, int i, const TF_Tensor *tensor, TF_Status *status) {
    tp_tensor_view_t view;
    if (tensor == NULL) {
        tfc_status_printf(status, TF_INVALID_ARGUMENT, "TF_SetOutput: NULL tensor");
        return;
    }
    if (!get_view(ctx, true, i, &view, status, "TF_SetOutput")) return;
    const tfc_memory_t *memory = view.mem;
    void *output = memory == NULL ? NULL : (char *)memory->base.opaque + view.offset;
    if (TF_TensorData(tensor) == output) return;
    if (TF_TensorByteSize(tensor) != view.byte_size) {
        tfc_status_printf(status, TF_INVALID_ARGUMENT,
                          "TF_SetOutput: output %d of %s holds %llu bytes, the tensor %zu", i,
                          ctx->kernel->tf_op, (unsigned long long)view.byte_size,
                          TF_TensorByteSize(tensor));
        return;
    }
    if (view.byte_size == 0) return;
    /* tensorplug has no aliasing of outputs: the values are copied into the output. */
    const SP_StreamExecutor *se = &ctx->device->plugin->stream_executor;
    SP_DeviceMemoryBase dst = tfc_memory_at(memory, view.offset);
    SP_DeviceMemoryBase src = {SP_DEVICE_MEMORY_BASE_STRUCT_SIZE, NULL, TF_TensorData(tensor),
                               TF_TensorByteSize(tensor), tensor->payload};
    if (!tensor->on_device) {
        /* The caller may delete a host tensor as soon as this returns. */
        se->sync_memcpy_htod(&ctx->device->device, &dst, TF_TensorData(tensor), view.byte_size,
                             status);
    } else if (se->memcpy_dtod != NULL) {
        se->memcpy_dtod(&ctx->device->device, ctx->stream->stream, &dst, &src, view.byte_size,
                        status);
    } else {
        tfc_status_printf(status, TF_UNIMPLEMENTED,
                          "TF_SetOutput: another device buffer as output %d needs "
                          "SP_StreamExecutor.memcpy_dtod, which this plug-in does not set", i);
    }
}

TF_Tensor *TF_AllocateTemp(TF_OpKernelContext *context, TF_DataType dtype, const int64_t *dims,
                           int num_dims, TF_AllocatorAttributes *alloc_attrs, TF_Status *status) {
    size_t element = TF_DataTypeSize(dtype);
    uint64_t count = 1;
    bool valid = element != 0 && num_dims >= 0 && (num_dims == 0 || dims != NULL);
    for (int d = 0; valid && d < num_dims; d++) {
        valid = dims[d] >= 0 && (dims[d] == 0 || count <= UINT64_MAX / (uint64_t)dims[d]);
        if (valid) count *= (uint64_t)dims[d];
    }
    if (!valid || count > SIZE_MAX / element) {
        tfc_status_printf(status, TF_INVALID_ARGUMENT,
                          "TF_AllocateTemp: dtype %d with these %d dims is no tensor", (int)dtype,
                          num_dims);
        return NULL;
    }
    size_t bytes = (size_t)count * element;
    bool on_host = alloc_attrs != NULL &&
                   alloc_attrs->struct_size >= TF_OFFSET_OF_END(TF_AllocatorAttributes, on_host) &&
                   alloc_attrs->on_host;
    tfc_temp_t *temp = calloc(1, sizeof *temp);
    if (temp == NULL) {
        tfc_status_printf(status, TF_RESOURCE_EXHAUSTED, "TF_AllocateTemp: out of host memory");
        return NULL;
    }
    temp->device = context->device;
    void *data = NULL;
    if (on_host) {
        data = temp->host = malloc(bytes == 0 ? 1 : bytes);
    } else {
        temp->memory.base.struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
        context->device->plugin->stream_executor.allocate(&context->device->device,
                                                          bytes == 0 ? 1 : bytes, 0,
                                                          &temp->memory.base);
        data = temp->memory.base.opaque;
    }
    TF_Tensor *tensor = data == NULL ? NULL
                                     : tfc_tensor_view(dtype, dims, num_dims, data, bytes,
                                                       on_host ? NULL : &temp->memory.base);
    if (tensor == NULL) {
        free_temps(temp);
        tfc_status_printf(status, TF_RESOURCE_EXHAUSTED,
                          "TF_AllocateTemp: no memory for %zu bytes on %s", bytes,
                          on_host ? "the host" : context->device->plugin->type);
        return NULL;
    }
    temp->next = context->temps;
    context->temps = temp;
    TF_SetStatus(status, TF_OK, "");
    return tensor;
}

void TF_OpKernelContext_Failure(TF_OpKernelContext *ctx, TF_Status *status) {
    /* The first failure is the one the outputs carry. */
    if (ctx->failure.code == TF_OK && TF_GetCode(status) != TF_OK)
        TF_SetStatus(&ctx->failure, TF_GetCode(status), TF_Message(status));
}

TF_DataType TF_ExpectedOutputDataType(TF_OpKernelContext *ctx, int i) {
    tp_tensor_view_t view;
    TF_Status status = {0};
    bool ok = get_view(ctx, true, i, &view, &status, "TF_ExpectedOutputDataType");
    tfc_status_reset(&status);
    return ok ? tfc_dtype_from_tp(view.dtype) : (TF_DataType)0;
}

int64_t TF_StepId(TF_OpKernelContext *ctx) {
    (void)ctx;
    /* Each run of a kernel is a step of its own in eager execution. */
    return atomic_fetch_add(&step_ids, 1) + 1;
}

TF_StringView TF_GetOpKernelName(TF_OpKernelContext *ctx) {
    TF_StringView name = {ctx->kernel->tf_op, strlen(ctx->kernel->tf_op)};
    return name;
}

TF_StringView TF_GetOpKernelRequestedInput(TF_OpKernelContext *ctx, size_t index) {
    /* tensorplug's nodes have no input names to give; an empty view says so. */
    (void)ctx;
    (void)index;
    TF_StringView none = {"", 0};
    return none;
}

void TF_InputRange(TF_OpKernelContext *ctx, const char *name, TF_InputRange_Args *args) {
    (void)ctx;
    (void)name;
    if (args == NULL) return;
    args->start = args->stop = -1;
    tfc_unimplemented(args->status, "TF_InputRange",
                      "the host API gives no input argument names");
}
