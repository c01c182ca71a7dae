/* SPDX-License-Identifier: Apache-2.0 */
/* A growable, always NUL-terminated string. Running out of memory is sticky: later appends
 * do nothing and tp_strbuf_failed says so, so callers check once at the end. */
#ifndef TP_BASE_STRBUF_H
#define TP_BASE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "tensorplug/plugin.h" /* TP_PRINTF_LIKE */

typedef struct tp_strbuf {
    char *data;
    size_t length;
    size_t capacity;
    bool failed;
} tp_strbuf_t;

#define TP_STRBUF_INIT {NULL, 0, 0, false}

void tp_strbuf_append(tp_strbuf_t *buffer, const char *text, size_t length);
void tp_strbuf_puts(tp_strbuf_t *buffer, const char *text);
void tp_strbuf_printf(tp_strbuf_t *buffer, const char *format, ...) TP_PRINTF_LIKE(2, 3);
void tp_strbuf_repeat(tp_strbuf_t *buffer, char c, size_t count);
bool tp_strbuf_failed(const tp_strbuf_t *buffer);
/* Empties the text, keeping the memory (and a failure). */
void tp_strbuf_clear(tp_strbuf_t *buffer);
/* The text ("" when empty), still owned by the buffer. */
const char *tp_strbuf_text(const tp_strbuf_t *buffer);
/* Hands the text to the caller (free it with free); NULL if an append failed. Empties it. */
char *tp_strbuf_take(tp_strbuf_t *buffer);
void tp_strbuf_free(tp_strbuf_t *buffer);

#endif
