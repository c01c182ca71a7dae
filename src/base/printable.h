/* SPDX-License-Identifier: Apache-2.0 */
/* Text made safe to show on a terminal or write to a log file. Plug-ins, file names and
 * environment variables put bytes in messages that nobody checked: a newline forges a second
 * log line, ESC sequences recolour, retitle or clear a terminal, and bidirectional controls
 * make a line read differently from what it holds. */
#ifndef TP_BASE_PRINTABLE_H
#define TP_BASE_PRINTABLE_H

#include <stddef.h>

/* The most bytes one input byte becomes ("\xHH"). */
#define TP_PRINTABLE_EXPANSION 4

/* Copies `text` to `out` (`capacity` bytes, NUL-terminated when capacity > 0), writing each
 * byte that could be misread as "\xHH" (upper-case hex, as device names are quoted): C0
 * controls (newline, tab, ESC, ...), DEL, bytes that are not well-formed UTF-8, and the
 * characters that move or end lines (C1 controls, U+2028, U+2029, the bidirectional
 * embeddings, overrides and isolates). Printable ASCII and other well-formed UTF-8 are kept, so
 * a folder named in any language reads as itself. Stops before an escape or character that
 * would not fit whole. Returns the length written. */
size_t tp_printable_copy(char *out, size_t capacity, const char *text);

#endif
