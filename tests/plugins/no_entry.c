/* SPDX-License-Identifier: Apache-2.0 */
/* (a) A shared object that is not a plug-in: it exports no entry point. */
#include "tensorplug/plugin.h"

TP_EXPORT int tp_test_not_a_plugin(void);
TP_EXPORT int tp_test_not_a_plugin(void) { return 42; }
