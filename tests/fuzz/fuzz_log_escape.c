/*
 * Log messages made of outside values. The input is a message; it goes
 * through log_escape and through log_msg in both formats. Whatever it holds,
 * a log line is exactly one line: it ends in its only newline and has no other
 * control byte (C0, DEL), the text format is well-formed UTF-8 without C1
 * controls or line separators, its escapes read back to the input (when the
 * input has no backslash of its own), a line is bounded, and a JSON line is
 * one JSON object whose message is the input (when it is UTF-8 and not cut),
 * with no control byte, C1 control or line separator either.
 */
#include <brindle/core/arena.h>
#include <brindle/core/json.h>
#include <brindle/sys/log.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/log_escape.h>
#include <brindle/sys/strbuf_file.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_log_escape: %s\n", what);
		abort();
	}
}

/* Written apart from lib/log.c's decoder: RFC 3629's table of well-formed sequences. */
static size_t utf8_len(const uint8_t *s, size_t n)
{
	static const struct {
		uint8_t lo, hi, len, lo2, hi2;
	} t[] = {
		{ 0x00, 0x7f, 1, 0, 0 },       { 0xc2, 0xdf, 2, 0x80, 0xbf },
		{ 0xe0, 0xe0, 3, 0xa0, 0xbf }, { 0xe1, 0xec, 3, 0x80, 0xbf },
		{ 0xed, 0xed, 3, 0x80, 0x9f }, { 0xee, 0xef, 3, 0x80, 0xbf },
		{ 0xf0, 0xf0, 4, 0x90, 0xbf }, { 0xf1, 0xf3, 4, 0x80, 0xbf },
		{ 0xf4, 0xf4, 4, 0x80, 0x8f },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (s[0] < t[i].lo || s[0] > t[i].hi)
			continue;
		if (t[i].len == 1)
			return 1;
		if (n < t[i].len || s[1] < t[i].lo2 || s[1] > t[i].hi2)
			return 0;
		for (size_t k = 2; k < t[i].len; k++)
			if (s[k] < 0x80 || s[k] > 0xbf)
				return 0;
		return t[i].len;
	}
	return 0;
}

/* One line: a single newline, at the end, and no other C0 control or DEL. */
static void check_line(const char *s, size_t n)
{
	check(n > 0 && s[n - 1] == '\n', "line does not end in a newline");
	for (size_t i = 0; i + 1 < n; i++)
		check((uint8_t)s[i] >= 0x20 && s[i] != 0x7f, "control byte inside a line");
}

/* Well-formed UTF-8 without C1 controls, U+2028 or U+2029. */
static void check_text(const char *str, size_t n)
{
	const uint8_t *s = (const uint8_t *)str;
	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(s + i, n - i);
		check(len > 0, "escaped text is not UTF-8");
		check(!(len == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0), "C1 control in escaped text");
		check(!(len == 3 && s[i] == 0xe2 && s[i + 1] == 0x80 &&
			(s[i + 2] == 0xa8 || s[i + 2] == 0xa9)),
		      "line separator in escaped text");
		i += len;
	}
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Undo log_escape, for input without backslashes. */
static void unescape(struct strbuf *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			sb_addc(out, s[i]);
			continue;
		}
		check(i + 1 < n, "dangling backslash");
		char c = s[++i];
		if (c == 'n' || c == 'r' || c == 't') {
			sb_addc(out, c == 'n' ? '\n' : c == 'r' ? '\r' : '\t');
			continue;
		}
		check(c == 'x' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0,
		      "unknown escape");
		sb_addc(out, (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2])));
		i += 2;
	}
}

static int log_fd(void)
{
	static int fd = -1;
	if (fd < 0)
		fd = memfd_create("fuzz_log_escape", MFD_CLOEXEC);
	check(fd >= 0, "memfd_create failed");
	check(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0, "cannot reset the log file");
	return fd;
}

static void read_back(int fd, struct strbuf *out)
{
	check(lseek(fd, 0, SEEK_SET) == 0, "lseek failed");
	check(sb_read_fd(out, fd) == 0, "cannot read the log back");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct strbuf esc = STRBUF_INIT, back = STRBUF_INIT, line = STRBUF_INIT;
	sb_init(&esc);
	sb_init(&back);
	sb_init(&line);

	log_escape(&esc, in, size);
	sb_addc(&esc, '\n');
	check_line(esc.buf, esc.len);
	check_text(esc.buf, esc.len);
	if (!memchr(in, '\\', size)) {
		unescape(&back, esc.buf, esc.len - 1);
		check(back.len == size && memcmp(back.buf, in, size) == 0,
		      "escapes do not read back to the input");
	}

	/* The whole line, as a daemon writes it (a message stops at a NUL byte). */
	size_t msg_len = strnlen(in, size);
	int fd = log_fd();
	log_init("fuzz", LOG_INFO, LOG_TEXT, fd);
	log_msg(LOG_INFO, "%.*s", (int)msg_len, in);
	read_back(fd, &line);
	check_line(line.buf, line.len);
	check_text(line.buf, line.len);
	check(line.len <= 4 * LOG_MSG_MAX + 128, "text line too long");

	fd = log_fd();
	log_init("fuzz", LOG_INFO, LOG_JSON, fd);
	log_msg(LOG_INFO, "%.*s", (int)msg_len, in);
	log_init("fuzz", LOG_INFO, LOG_TEXT, 2);
	sb_reset(&line);
	read_back(fd, &line);
	check_line(line.buf, line.len);
	check_text(line.buf, line.len);
	check(line.len <= 6 * LOG_MSG_MAX + 256, "JSON line too long");
	struct arena *a = arena_new();
	struct jv **docs;
	size_t n;
	check(json_parse_all(a, line.buf, line.len, &docs, &n, NULL) == 0 && n == 1,
	      "JSON line does not parse as one document");
	const char *msg = jv_as_string(jv_get(docs[0], "msg"));
	check(msg != NULL, "JSON line has no msg");
	size_t trimmed = msg_len;
	while (trimmed && (in[trimmed - 1] == '\n' || in[trimmed - 1] == '\r'))
		trimmed--;
	bool utf8 = true;
	for (size_t i = 0; i < trimmed && utf8;) {
		size_t len = utf8_len(data + i, trimmed - i);
		utf8 = len > 0;
		i += len;
	}
	if (utf8 && trimmed <= LOG_MSG_MAX)
		check(strlen(msg) == trimmed && memcmp(msg, in, trimmed) == 0,
		      "JSON message differs from the input");
	arena_free(a);

	sb_free(&esc);
	sb_free(&back);
	sb_free(&line);
	return 0;
}
