/* SPDX-License-Identifier: Apache-2.0 */
/* The process's log: one line per call, to standard error or the application's callback. */
#ifndef TP_BASE_LOG_H
#define TP_BASE_LOG_H

#include <stdarg.h>

#include "tensorplug/tensorplug.h"

void tp_log_message(tp_log_level_t level, const char *format, ...) TP_PRINTF_LIKE(2, 3);
void tp_log_message_va(tp_log_level_t level, const char *format, va_list args) TP_PRINTF_LIKE(2, 0);

#endif
