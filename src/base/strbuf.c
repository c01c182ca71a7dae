/* SPDX-License-Identifier: Apache-2.0 */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(tp_strbuf_t *buffer, size_t extra) {
    if (buffer->failed) return false;
    size_t needed = buffer->length + extra + 1;
    if (needed <= buffer->capacity) return true;
    size_t capacity = buffer->capacity < 64 ? 64 : buffer->capacity;
    while (capacity < needed) capacity *= 2;
    char *data = realloc(buffer->data, capacity);
    if (data == NULL) {
        buffer->failed = true;
        return false;
    }
    buffer->data = data;
    buffer->capacity = capacity;
    return true;
}

void tp_strbuf_append(tp_strbuf_t *buffer, const char *text, size_t length) {
    if (!reserve(buffer, length)) return;
    memcpy(buffer->data + buffer->length, text, length);
    buffer->length += length;
    buffer->data[buffer->length] = '\0';
}

void tp_strbuf_puts(tp_strbuf_t *buffer, const char *text) {
    tp_strbuf_append(buffer, text, strlen(text));
}

void tp_strbuf_printf(tp_strbuf_t *buffer, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int length = vsnprintf(NULL, 0, format, args);
    va_end(args);
    if (length < 0) {
        buffer->failed = true;
        return;
    }
    if (!reserve(buffer, (size_t)length)) return;
    va_start(args, format);
    vsnprintf(buffer->data + buffer->length, (size_t)length + 1, format, args);
    va_end(args);
    buffer->length += (size_t)length;
}

void tp_strbuf_repeat(tp_strbuf_t *buffer, char c, size_t count) {
    if (!reserve(buffer, count)) return;
    memset(buffer->data + buffer->length, c, count);
    buffer->length += count;
    buffer->data[buffer->length] = '\0';
}

bool tp_strbuf_failed(const tp_strbuf_t *buffer) { return buffer->failed; }

void tp_strbuf_clear(tp_strbuf_t *buffer) {
    buffer->length = 0;
    if (buffer->data != NULL) buffer->data[0] = '\0';
}

const char *tp_strbuf_text(const tp_strbuf_t *buffer) {
    return buffer->data == NULL ? "" : buffer->data;
}

char *tp_strbuf_take(tp_strbuf_t *buffer) {
    char *text = NULL;
    if (!buffer->failed) {
        text = buffer->data != NULL ? buffer->data : calloc(1, 1);
        buffer->data = NULL;
    }
    tp_strbuf_free(buffer);
    return text;
}

void tp_strbuf_free(tp_strbuf_t *buffer) {
    free(buffer->data);
    *buffer = (tp_strbuf_t)TP_STRBUF_INIT;
}
