/* SPDX-License-Identifier: Apache-2.0 */
/* A sequential model of Dense layers whose variables are mirrored on each replica's device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "context/context.h"
#include "model/model.h"
#include "tensor/tensor.h"

tp_status_t *tp_model_create(tp_context_t *context, int64_t input_features,
                             tp_mirrored_strategy_t *strategy, tp_model_t **out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out);
    if (input_features <= 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_model_create: input_features is %lld; it must be positive",
                              (long long)input_features);
    tp_model_t *model = calloc(1, sizeof *model);
    if (model == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "tp_model_create: out of host memory");
    if (strategy == NULL) {
        const char *cpu = "/device:CPU:0";
        tp_status_t *error = tp_mirrored_strategy_create(context, &cpu, 1, &model->strategy);
        if (error != NULL) {
            free(model);
            return tp_status_annotate(error, "tp_model_create");
        }
        model->owns_strategy = true;
    } else {
        model->strategy = strategy;
    }
    model->context = context;
    tp_context_retain(context);
    model->input_features = input_features;
    model->num_replicas = tp_mirrored_strategy_num_replicas(model->strategy);
    *out = model;
    return NULL;
}

static void free_layer(tp_dense_layer_t *layer, size_t replicas) {
    for (size_t r = 0; r < replicas; r++) {
        if (layer->kernel != NULL) tp_variable_destroy(layer->kernel[r]);
        if (layer->bias != NULL) tp_variable_destroy(layer->bias[r]);
    }
    free(layer->kernel);
    free(layer->bias);
}

void tp_model_destroy(tp_model_t *model) {
    if (model == NULL) return;
    for (size_t l = 0; l < model->num_layers; l++)
        free_layer(&model->layers[l], model->num_replicas);
    free(model->layers);
    if (model->owns_strategy) tp_mirrored_strategy_destroy(model->strategy);
    tp_context_release(model->context);
    free(model);
}

size_t tp_model_num_layers(const tp_model_t *model) {
    return model != NULL ? model->num_layers : 0;
}

/* The kernel's first values, made on the host: the same on every replica. */
static tp_status_t *initial_kernel(tp_context_t *context, int64_t inputs, int64_t units,
                                   tp_initializer_t initializer, int64_t seed,
                                   tp_tensor_t **out) {
    size_t count = (size_t)(inputs * units);
    float *values = malloc(count * sizeof *values);
    if (values == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_status_t *error = NULL;
    if (initializer == TP_INITIALIZER_ZEROS || initializer == TP_INITIALIZER_ONES) {
        for (size_t i = 0; i < count; i++)
            values[i] = initializer == TP_INITIALIZER_ONES ? 1.0f : 0.0f;
    } else {
        bool uniform = initializer == TP_INITIALIZER_GLOROT_UNIFORM;
        tp_tensor_t *random;
        /* On CPU:0 whatever scope the caller is in: the host reads the values next. */
        error = tp_device_push(context, "/device:CPU:0");
        if (error == NULL) {
            error = uniform ? tp_random_uniform(context, TP_FLOAT32, TP_SHAPE(inputs, units),
                                                seed, &random)
                            : tp_random_normal(context, TP_FLOAT32, TP_SHAPE(inputs, units),
                                               seed, &random);
            tp_status_free(tp_device_pop(context));
        }
        if (error == NULL) {
            error = tp_tensor_read(random, values, count * sizeof *values);
            tp_tensor_release(random);
        }
        float limit = sqrtf(6.0f / (float)(inputs + units));
        for (size_t i = 0; i < count && error == NULL; i++)
            values[i] = uniform ? (2.0f * values[i] - 1.0f) * limit : 0.05f * values[i];
    }
    if (error == NULL)
        error = tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(inputs, units), values,
                                 count * sizeof *values, out);
    free(values);
    return error;
}

/* Makes the layer's variables on every replica's device. */
static tp_status_t *make_variables(tp_model_t *model, tp_dense_layer_t *layer, size_t index,
                                   tp_tensor_t *kernel, tp_tensor_t *bias) {
    char kernel_name[64], bias_name[64];
    snprintf(kernel_name, sizeof kernel_name, "dense_%zu/kernel", index);
    snprintf(bias_name, sizeof bias_name, "dense_%zu/bias", index);
    for (size_t r = 0; r < model->num_replicas; r++) {
        const char *device = tp_mirrored_strategy_device(model->strategy, r);
        TP_RETURN_IF_ERROR(
            tp_variable_create(model->context, kernel_name, kernel, device, &layer->kernel[r]));
        TP_RETURN_IF_ERROR(
            tp_variable_create(model->context, bias_name, bias, device, &layer->bias[r]));
    }
    return NULL;
}

tp_status_t *tp_model_add_dense(tp_model_t *model, int64_t units, tp_activation_t activation,
                                tp_initializer_t initializer, int64_t seed) {
    TP_REQUIRE_ARG(model);
    if (units <= 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_model_add_dense: units is %lld; it must be positive",
                              (long long)units);
    if ((unsigned)activation > TP_ACTIVATION_TANH)
        return tp_status_make(TP_INVALID_ARGUMENT, "tp_model_add_dense: unknown activation %d",
                              (int)activation);
    if ((unsigned)initializer > TP_INITIALIZER_RANDOM_NORMAL)
        return tp_status_make(TP_INVALID_ARGUMENT, "tp_model_add_dense: unknown initializer %d",
                              (int)initializer);
    int64_t inputs = model->num_layers == 0 ? model->input_features
                                            : model->layers[model->num_layers - 1].units;
    tp_dense_layer_t *layers =
        realloc(model->layers, (model->num_layers + 1) * sizeof *model->layers);
    if (layers == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "tp_model_add_dense: out of host memory");
    model->layers = layers;
    tp_dense_layer_t layer = {inputs, units, activation,
                              calloc(model->num_replicas, sizeof(tp_variable_t *)),
                              calloc(model->num_replicas, sizeof(tp_variable_t *))};
    tp_status_t *error = layer.kernel == NULL || layer.bias == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : NULL;
    tp_tensor_t *kernel = NULL, *bias = NULL;
    float *zeros = calloc((size_t)units, sizeof *zeros);
    if (error == NULL && zeros == NULL)
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    if (error == NULL)
        error = initial_kernel(model->context, inputs, units, initializer, seed, &kernel);
    if (error == NULL)
        error = tp_tensor_create(model->context, TP_FLOAT32, TP_SHAPE(units), zeros,
                                 (size_t)units * sizeof *zeros, &bias);
    if (error == NULL) error = make_variables(model, &layer, model->num_layers, kernel, bias);
    tp_tensor_release(kernel);
    tp_tensor_release(bias);
    free(zeros);
    if (error != NULL) {
        free_layer(&layer, model->num_replicas);
        return tp_status_annotate(error, "tp_model_add_dense");
    }
    model->layers[model->num_layers++] = layer;
    return NULL;
}

void tp_model_replica_variables(const tp_model_t *model, size_t replica, tp_variable_t **out) {
    for (size_t l = 0; l < model->num_layers; l++) {
        out[2 * l] = model->layers[l].kernel[replica];
        out[2 * l + 1] = model->layers[l].bias[replica];
    }
}

static tp_status_t *activate(tp_context_t *context, tp_activation_t activation, tp_tensor_t *x,
                             tp_tensor_t **out) {
    switch (activation) {
    case TP_ACTIVATION_RELU: return tp_relu(context, x, out);
    case TP_ACTIVATION_SIGMOID: return tp_sigmoid(context, x, out);
    case TP_ACTIVATION_TANH: return tp_tanh(context, x, out);
    default: *out = tp_tensor_retain(x); return NULL;
    }
}

/* One layer: activation(x @ kernel + bias). */
static tp_status_t *dense_forward(tp_context_t *context, const tp_dense_layer_t *layer,
                                  size_t replica, tp_tensor_t *x, tp_tensor_t **out) {
    tp_tensor_t *kernel = NULL, *bias = NULL, *product = NULL, *biased = NULL;
    tp_status_t *error = tp_variable_read(layer->kernel[replica], &kernel);
    if (error == NULL) error = tp_variable_read(layer->bias[replica], &bias);
    if (error == NULL) error = tp_matmul(context, x, kernel, false, false, &product);
    if (error == NULL) error = tp_bias_add(context, product, bias, &biased);
    if (error == NULL) error = activate(context, layer->activation, biased, out);
    tp_tensor_release(kernel);
    tp_tensor_release(bias);
    tp_tensor_release(product);
    tp_tensor_release(biased);
    return error;
}

tp_status_t *tp_model_forward(tp_model_t *model, size_t replica, tp_tensor_t *x,
                              tp_tensor_t **out) {
    if (model->num_layers == 0)
        return tp_status_make(TP_FAILED_PRECONDITION, "the model has no layer yet");
    if (x->dtype != TP_FLOAT32 || x->shape.rank != 2 ||
        x->shape.dims[1] != model->input_features) {
        char shape[128];
        tp_shape_format(&x->shape, shape, sizeof shape);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "the model takes float32 rows of %lld values, not %s %s",
                              (long long)model->input_features, tp_dtype_name(x->dtype), shape);
    }
    tp_tensor_t *current = tp_tensor_retain(x);
    for (size_t l = 0; l < model->num_layers; l++) {
        tp_tensor_t *next;
        tp_status_t *error =
            dense_forward(model->context, &model->layers[l], replica, current, &next);
        tp_tensor_release(current);
        if (error != NULL) return tp_status_annotate(error, "dense_%zu", l);
        current = next;
    }
    *out = current;
    return NULL;
}

tp_status_t *tp_model_predict(tp_model_t *model, tp_tensor_t *x, tp_tensor_t **out) {
    TP_REQUIRE_ARG(model);
    TP_REQUIRE_ARG(x);
    TP_REQUIRE_ARG(out);
    TP_RETURN_IF_ERROR(
        tp_device_push(model->context, tp_mirrored_strategy_device(model->strategy, 0)));
    tp_status_t *error = tp_model_forward(model, 0, x, out);
    tp_status_free(tp_device_pop(model->context));
    return tp_status_annotate(error, "tp_model_predict");
}

tp_status_t *tp_model_get_weights(tp_model_t *model, size_t layer, tp_tensor_t **out_kernel,
                                  tp_tensor_t **out_bias) {
    TP_REQUIRE_ARG(model);
    TP_REQUIRE_ARG(out_kernel);
    TP_REQUIRE_ARG(out_bias);
    if (layer >= model->num_layers)
        return tp_status_make(TP_OUT_OF_RANGE,
                              "tp_model_get_weights: layer %zu of a model of %zu layers", layer,
                              model->num_layers);
    tp_variable_t *kernel = model->layers[layer].kernel[0], *bias = model->layers[layer].bias[0];
    tp_tensor_t *k, *b;
    TP_RETURN_IF_ERROR(tp_variable_read(kernel, &k));
    tp_status_t *error = tp_variable_read(bias, &b);
    if (error != NULL) {
        tp_tensor_release(k);
        return error;
    }
    *out_kernel = k;
    *out_bias = b;
    return NULL;
}
