/* Escaping outside text for a log line (log_escape.h): pure. */
#include <brindle/core/log_escape.h>

#include <stdint.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at @s (@n bytes left) and its code point, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/*
 * @s escaped for the inside of a JSON string. Beyond what JSON requires: DEL, C1 controls, U+2028
 * and U+2029 are \u escapes too, and bytes that are not UTF-8 become U+FFFD.
 */
static void add_hex(struct strbuf *out, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		char e[4] = { '\\', 'x', hex[s[i] >> 4], hex[s[i] & 15] };
		sb_add(out, e, sizeof(e));
	}
}

void log_escape(struct strbuf *out, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < n) {
		size_t run = i;
		while (run < n && s[run] >= 0x20 && s[run] < 0x7f)
			run++;
		sb_add(out, s + i, run - i);
		if ((i = run) == n)
			break;
		uint32_t cp;
		size_t len = utf8_seq(s + i, n - i, &cp);
		if (s[i] == '\n') {
			sb_adds(out, "\\n");
		} else if (s[i] == '\r') {
			sb_adds(out, "\\r");
		} else if (s[i] == '\t') {
			sb_adds(out, "\\t");
		} else if (len <= 1 || cp <= 0x9f || cp == 0x2028 || cp == 0x2029) {
			add_hex(out, s + i, len ? len : 1);
		} else {
			sb_add(out, s + i, len);
		}
		i += len ? len : 1;
	}
}

void log_escape_json(struct strbuf *out, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		size_t run = i;
		while (run < n && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' &&
		       s[run] != '\\')
			run++;
		sb_add(out, s + i, run - i);
		if ((i = run) == n)
			break;
		uint32_t cp;
		size_t len = utf8_seq(s + i, n - i, &cp);
		if (len == 0)
			sb_adds(out, "\\ufffd");
		else if (cp == '"' || cp == '\\')
			sb_addf(out, "\\%c", (char)cp);
		else if (cp == '\n')
			sb_adds(out, "\\n");
		else if (cp == '\r')
			sb_adds(out, "\\r");
		else if (cp == '\t')
			sb_adds(out, "\\t");
		else if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029)
			sb_addf(out, "\\u%04x", (unsigned)cp);
		else
			sb_add(out, s + i, len);
		i += len ? len : 1;
	}
}
