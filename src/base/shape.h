/* SPDX-License-Identifier: Apache-2.0 */
/* Shape helpers the core shares beyond the public ones in tensorplug.h. */
#ifndef TP_BASE_SHAPE_H
#define TP_BASE_SHAPE_H

#include <stdbool.h>

#include "tensorplug/tensorplug.h"

/* Same rank and dimensions. */
bool tp_shape_equal(const tp_shape_t *a, const tp_shape_t *b);

#endif
