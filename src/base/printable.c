/* SPDX-License-Identifier: Apache-2.0 */
#include "base/printable.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t tp_utf8_multibyte(const unsigned char *s, uint32_t *out_code_point) {
    unsigned char lead = s[0];
    size_t length;
    uint32_t code_point;
    unsigned char low = 0x80, high = 0xBF; /* the range of the second byte */
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
        code_point = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        code_point = lead & 0x0F;
        if (lead == 0xE0) low = 0xA0;
        if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        code_point = lead & 0x07;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;
    } else {
        return 0;
    }
    /* A NUL ends the text and fails the range test, so nothing past it is read. */
    for (size_t i = 1; i < length; i++) {
        unsigned char c = s[i];
        if (c < (i == 1 ? low : 0x80) || c > (i == 1 ? high : 0xBF)) return 0;
        code_point = (code_point << 6) | (c & 0x3F);
    }
    *out_code_point = code_point;
    return length;
}

/* Characters that end a line or reorder what a reader sees, although well formed. */
static bool moves_text(uint32_t code_point) {
    return (code_point >= 0x80 && code_point <= 0x9F) ||     /* C1 controls, CSI among them */
           code_point == 0x2028 || code_point == 0x2029 ||    /* line and paragraph separators */
           (code_point >= 0x202A && code_point <= 0x202E) ||  /* bidirectional embeddings */
           (code_point >= 0x2066 && code_point <= 0x2069);    /* bidirectional isolates */
}

size_t tp_printable_copy(char *out, size_t capacity, const char *text) {
    static const char hex[] = "0123456789ABCDEF";
    if (capacity == 0) return 0;
    const unsigned char *s = (const unsigned char *)text;
    size_t used = 0;
    while (*s != '\0') {
        size_t length = 1;
        bool escape;
        if (*s < 0x80) {
            escape = *s < 0x20 || *s == 0x7F;
        } else {
            uint32_t code_point = 0;
            size_t sequence = tp_utf8_multibyte(s, &code_point);
            escape = sequence == 0 || moves_text(code_point);
            if (sequence > 0) length = sequence;
        }
        size_t needed = escape ? length * TP_PRINTABLE_EXPANSION : length;
        if (used + needed >= capacity) break;
        for (size_t i = 0; i < length; i++) {
            if (escape) {
                out[used++] = '\\';
                out[used++] = 'x';
                out[used++] = hex[s[i] >> 4];
                out[used++] = hex[s[i] & 0xF];
            } else {
                out[used++] = (char)s[i];
            }
        }
        s += length;
    }
    out[used] = '\0';
    return used;
}

void tp_printable_ascii_quote(char *out, size_t capacity, const char *text, size_t length,
                              size_t most, char quote) {
    static const char hex[] = "0123456789ABCDEF";
    size_t used = 0;
    for (size_t i = 0; i < length && i < most && used + 5 < capacity; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && (quote == 0 || c != (unsigned char)quote)) {
            out[used++] = (char)c;
        } else {
            out[used++] = '\\';
            out[used++] = 'x';
            out[used++] = hex[c >> 4];
            out[used++] = hex[c & 15];
        }
    }
    if (length > most && used + 4 <= capacity) {
        memcpy(out + used, "...", 3);
        used += 3;
    }
    out[used] = '\0';
}
