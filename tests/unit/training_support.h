/* SPDX-License-Identifier: Apache-2.0 */
/* What the tests of models and their training share. */
#ifndef TP_TESTS_TRAINING_SUPPORT_H
#define TP_TESTS_TRAINING_SUPPORT_H

#include "tensorplug/training.h"
#include "test_support.h"

/* Every weight of the model, layer by layer (kernel, then bias), into `out`, which has room for
 * `capacity` floats; returns how many there were. */
static inline size_t read_weights(tp_model_t *model, float *out, size_t capacity) {
    size_t at = 0;
    for (size_t layer = 0; layer < tp_model_num_layers(model); layer++) {
        tp_tensor_t *parts[2];
        assert_ok(tp_model_get_weights(model, layer, &parts[0], &parts[1]));
        for (int p = 0; p < 2; p++) {
            size_t count = tp_tensor_byte_size(parts[p]) / sizeof(float);
            assert_true(at + count <= capacity);
            assert_ok(tp_tensor_read(parts[p], out + at, count * sizeof(float)));
            at += count;
            tp_tensor_release(parts[p]);
        }
    }
    return at;
}

#endif
