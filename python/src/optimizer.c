/* SPDX-License-Identifier: Apache-2.0 */
#include "tpy.h"
int tpy_init_optimizer(PyObject *module) { (void)module; return 0; }
