/* SPDX-License-Identifier: Apache-2.0 */
/* What strategy.c shares with keras.c: the MirroredStrategy object, whose replicas a Keras
 * model built in its scope trains on. */
#ifndef TENSORPLUG_PYTHON_STRATEGY_H
#define TENSORPLUG_PYTHON_STRATEGY_H

#include "tpy.h"

typedef struct tpy_strategy_object {
    PyObject_HEAD
    tp_mirrored_strategy_t *strategy;
} tpy_strategy_object;
extern PyTypeObject tpy_strategy_type;

/* The strategy of a _tensorplug.MirroredStrategy (borrowed); NULL with TypeError for anything
 * else. */
tp_mirrored_strategy_t *tpy_strategy_handle(PyObject *object);

#endif /* TENSORPLUG_PYTHON_STRATEGY_H */
