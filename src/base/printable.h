/* SPDX-License-Identifier: Apache-2.0 */
/* Text made safe to show on a terminal or write to a log file. Plug-ins, file names and
 * environment variables put bytes in messages that nobody checked: a newline forges a second
 * log line, ESC sequences recolour, retitle or clear a terminal, and bidirectional controls
 * make a line read differently from what it holds. */
#ifndef TP_BASE_PRINTABLE_H
#define TP_BASE_PRINTABLE_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes one input byte becomes ("\xHH"). */
#define TP_PRINTABLE_EXPANSION 4

/* The length of the well-formed multi-byte UTF-8 sequence at `s` (Unicode's table 3-7: no
 * overlong forms, no surrogates, nothing above U+10FFFF), storing its code point; 0 when it is
 * not one, an ASCII byte included. Reads no further than a NUL. */
size_t tp_utf8_multibyte(const unsigned char *s, uint32_t *out_code_point);

/* Copies `text` to `out` (`capacity` bytes, NUL-terminated when capacity > 0), writing each
 * byte that could be misread as "\xHH" (upper-case hex, as device names are quoted): C0
 * controls (newline, tab, ESC, ...), DEL, bytes that are not well-formed UTF-8, and the
 * characters that move or end lines (C1 controls, U+2028, U+2029, the bidirectional
 * embeddings, overrides and isolates). Printable ASCII and other well-formed UTF-8 are kept, so
 * a folder named in any language reads as itself. Stops before an escape or character that
 * would not fit whole. Returns the length written. */
size_t tp_printable_copy(char *out, size_t capacity, const char *text);

/* Up to `most` bytes of `text` (`length` bytes, which may hold any byte, NUL included) quoted
 * for a message into `out` (capacity > 0): printable ASCII as itself; every other byte, a
 * backslash and `quote` (0: none) as "\xHH" (upper-case hex); then "..." when cut short.
 * Stops before an escape that would not fit; always NUL-terminates. */
void tp_printable_ascii_quote(char *out, size_t capacity, const char *text, size_t length,
                              size_t most, char quote);

#endif
