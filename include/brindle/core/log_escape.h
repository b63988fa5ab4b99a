/* How the text log format escapes what it writes (lib/core/log_escape.c); see <brindle/sys/log.h>.
 */
#ifndef BRINDLE_CORE_LOG_ESCAPE_H
#define BRINDLE_CORE_LOG_ESCAPE_H

#include <stddef.h>
#include <brindle/core/strbuf.h>

/* Append @n bytes of @s to @out escaped as the text format writes messages. */
void log_escape(struct strbuf *out, const char *s, size_t n);
/*
 * Append @n bytes of @s escaped for the inside of a JSON string. Beyond what
 * JSON requires: DEL, C1 controls, U+2028 and U+2029 are \u escapes too, and
 * bytes that are not UTF-8 become U+FFFD.
 */
void log_escape_json(struct strbuf *out, const char *s, size_t n);

#endif
