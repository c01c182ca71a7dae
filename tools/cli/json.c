/* SPDX-License-Identifier: Apache-2.0 */
/* JSON strings from text nobody checked: plug-ins' names and messages, file names. JSON wants
 * well-formed UTF-8 and escaped control characters; escaping also the characters that move or
 * end lines (C1 controls, U+2028, U+2029, the bidirectional controls) keeps a terminal that
 * shows the output from being steered by it, as the runtime's log lines are not. */
#include <stdbool.h>
#include <stdint.h>

#include "cli.h"

/* The code point of the well-formed UTF-8 sequence at `text`, and its length in *out_length;
 * false for a byte that starts no such sequence (stray continuation, overlong form, surrogate,
 * beyond U+10FFFF, cut short). */
static bool decode_utf8(const unsigned char *text, uint32_t *out_code, int *out_length) {
    unsigned char lead = text[0];
    int length;
    uint32_t code, minimum;
    if (lead < 0x80) {
        *out_code = lead;
        *out_length = 1;
        return true;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2, code = lead & 0x1Fu, minimum = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3, code = lead & 0x0Fu, minimum = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4, code = lead & 0x07u, minimum = 0x10000;
    } else {
        return false;
    }
    for (int i = 1; i < length; i++) {
        if ((text[i] & 0xC0) != 0x80) return false; /* the NUL at the end stops here too */
        code = (code << 6) | (text[i] & 0x3Fu);
    }
    if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    *out_code = code;
    *out_length = length;
    return true;
}

/* Characters written as \uXXXX although JSON would take them as they are. */
static bool must_escape(uint32_t code) {
    return code < 0x20 || (code >= 0x7F && code <= 0x9F) || code == 0x2028 || code == 0x2029 ||
           code == 0x200E || code == 0x200F || (code >= 0x202A && code <= 0x202E) ||
           (code >= 0x2066 && code <= 0x2069);
}

void cli_json_string(FILE *out, const char *text) {
    fputc('"', out);
    const unsigned char *c = (const unsigned char *)text;
    while (*c != '\0') {
        uint32_t code;
        int length;
        if (!decode_utf8(c, &code, &length)) {
            fputs("\\ufffd", out);
            c++;
            continue;
        }
        switch (code) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (must_escape(code))
                fprintf(out, "\\u%04x", (unsigned)code);
            else
                fwrite(c, 1, (size_t)length, out);
        }
        c += length;
    }
    fputc('"', out);
}
