/*
 * Logging: levels, the text and JSON-lines formats, rate limiting, and that an
 * outside value in a message cannot forge lines, drive a terminal or make a
 * giant line.
 */
#include "harness.h"

#include <brindle/core/json.h>
#include <brindle/sys/log.h>
#include <brindle/core/log_escape.h>
#include <brindle/sys/strbuf_file.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A file, not a pipe: a single line can be larger than a pipe's buffer. */
static char *capture(enum log_format fmt, enum log_level level, void (*emit)(void))
{
	int fd = memfd_create("log", MFD_CLOEXEC);
	assert_true(fd >= 0);
	log_init("unit", level, fmt, fd);
	emit();
	log_init("unit", LOG_INFO, LOG_TEXT, 2);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	assert_int_equal(sb_read_fd(&sb, fd), 0);
	close(fd);
	return sb_detach(&sb);
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

/* No byte of @s is a control character but its last, a newline. */
static void assert_one_clean_line(const char *s)
{
	size_t n = strlen(s);
	assert_true(n > 0 && s[n - 1] == '\n');
	for (size_t i = 0; i + 1 < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			fail_msg("control byte 0x%02x at %zu in: %s", (unsigned char)s[i], i, s);
}

static void emit_three(void)
{
	log_debug("hidden %d", 1);
	log_info("route %s added", "10.0.0.1/32");
	log_error("apply failed: \"%s\"", "EPERM");
}

static void test_text(void **state)
{
	char *out = capture(LOG_TEXT, LOG_INFO, emit_three);
	assert_null(strstr(out, "hidden"));
	assert_non_null(strstr(out, " [INFO] unit: route 10.0.0.1/32 added\n"));
	assert_non_null(strstr(out, " [ERROR] unit: apply failed: \"EPERM\"\n"));
	free(out);
}

static void test_json_lines(void **state)
{
	char *out = capture(LOG_JSON, LOG_DEBUG, emit_three);
	struct arena *a = arena_new();
	struct jv **docs;
	size_t n;
	assert_int_equal(json_parse_all(a, out, strlen(out), &docs, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(jv_as_string(jv_get(docs[0], "level")), "debug");
	assert_string_equal(jv_as_string(jv_get(docs[2], "msg")), "apply failed: \"EPERM\"");
	assert_string_equal(jv_as_string(jv_get(docs[2], "component")), "unit");
	assert_non_null(jv_as_string(jv_get(docs[1], "time")));
	arena_free(a);
	free(out);
}

static void test_levels(void **state)
{
	assert_int_equal(log_parse_level("Warning"), LOG_WARNING);
	assert_int_equal(log_parse_level("warn"), LOG_WARNING);
	assert_int_equal(log_parse_level("DEBUG"), LOG_DEBUG);
	assert_int_equal(log_parse_level("none"), LOG_NONE);
	assert_int_equal(log_parse_level("loud"), -1);
	uint64_t before = log_error_count();
	char *out = capture(LOG_TEXT, LOG_NONE, emit_three);
	assert_string_equal(out, "");
	assert_int_equal(log_error_count(), before + 1); /* counted even when not shown */
	free(out);
}

static void test_ratelimit(void **state)
{
	struct ratelimit rl = RATELIMIT_INIT(1000, 3);
	int ok = 0;
	for (int i = 0; i < 10; i++)
		ok += ratelimit_ok(&rl);
	assert_int_equal(ok, 3);
	assert_int_equal(rl.suppressed, 7);
}

#define FORGED "\n2026-01-01 00:00:00.000 [ERROR] felix: forged"

static void emit_forged(void)
{
	log_info("pod %s added", "web-1" FORGED);
	log_warn("cannot read %s: %s", "/etc/brindle/pass\r\nword", "No such file or directory");
}

static void test_forged_line(void **state)
{
	char *out = capture(LOG_TEXT, LOG_INFO, emit_forged);
	assert_int_equal(count_char(out, '\n'), 2);
	char *second = strchr(out, '\n') + 1;
	*strchr(out, '\n') = '\0';
	assert_true(str_has_suffix(
		out,
		" [INFO] unit: pod web-1\\n2026-01-01 00:00:00.000 [ERROR] felix: forged added"));
	assert_true(str_has_suffix(second,
				   " [WARNING] unit: cannot read /etc/brindle/pass\\r\\nword: "
				   "No such file or directory\n"));
	free(out);
}

static char *escaped(const char *s, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	log_escape(&sb, s, n);
	return sb_detach(&sb);
}

#define assert_escape(in, want)                           \
	do {                                              \
		char *got_ = escaped(in, sizeof(in) - 1); \
		assert_string_equal(got_, want);          \
		free(got_);                               \
	} while (0)

static void test_escape(void **state)
{
	assert_escape("plain text, \"quoted\" and C:\\path", "plain text, \"quoted\" and C:\\path");
	assert_escape("a\tb\rc\nd", "a\\tb\\rc\\nd");
	/* Terminal escapes: ESC, BEL, backspace, DEL, and CSI as a C1 control (U+009B). */
	assert_escape("\x1b[2J\x1b]0;owned\x07x\b\x7f", "\\x1b[2J\\x1b]0;owned\\x07x\\x08\\x7f");
	assert_escape("\xc2\x9b"
		      "31m",
		      "\\xc2\\x9b31m");
	assert_escape("\x00\x01\x1f", "\\x00\\x01\\x1f");
	/* Unicode line and paragraph separators; what is not UTF-8 (a stray byte, an
	 * overlong NUL, a surrogate, a cut sequence). */
	assert_escape("a\xe2\x80\xa8"
		      "b\xe2\x80\xa9",
		      "a\\xe2\\x80\\xa8b\\xe2\\x80\\xa9");
	assert_escape("\xff\xc0\x80\xed\xa0\x80\xe2\x82",
		      "\\xff\\xc0\\x80\\xed\\xa0\\x80\\xe2\\x82");
	/* Well-formed text passes through. */
	assert_escape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9d \xc2\xa0",
		      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9d \xc2\xa0");
}

static void emit_controls(void)
{
	log_error("name %s", "\x1b[31mred\x1b[0m\x1b[1A\x1b[2K\xc2\x9b"
			     "1A\x7f\xff");
	log_info("trailing newlines are dropped\n\n");
}

static void test_controls(void **state)
{
	char *out = capture(LOG_TEXT, LOG_INFO, emit_controls);
	assert_non_null(strstr(out, " [ERROR] unit: name \\x1b[31mred\\x1b[0m\\x1b[1A\\x1b[2K"
				    "\\xc2\\x9b1A\\x7f\\xff\n"));
	assert_non_null(strstr(out, " [INFO] unit: trailing newlines are dropped\n"));
	char *second = strchr(out, '\n') + 1;
	*strchr(out, '\n') = '\0';
	assert_one_clean_line(second);
	free(out);
}

static char *big;

static void emit_big(void)
{
	log_warn("value %s", big);
}

static void test_cut(void **state)
{
	/* 100000 bytes of value: cut at 16 KiB of message, the rest counted. */
	big = xmalloc(100001);
	memset(big, 'q', 100000);
	big[100000] = '\0';
	char *out = capture(LOG_TEXT, LOG_INFO, emit_big);
	assert_one_clean_line(out);
	assert_true(str_has_suffix(out, " [log message cut: 83622 more bytes]\n"));
	assert_int_equal(count_char(out, 'q'), LOG_MSG_MAX - strlen("value "));
	free(out);

	/* The cut does not split a UTF-8 sequence: "é" straddling the limit goes whole. */
	size_t at = LOG_MSG_MAX - strlen("value ") - 1;
	memcpy(big + at, "\xc3\xa9", 2);
	out = capture(LOG_TEXT, LOG_INFO, emit_big);
	assert_null(strstr(out, "\\x"));
	assert_true(str_has_suffix(out, "qqq [log message cut: 83623 more bytes]\n"));
	free(out);

	/* Control bytes grow by escaping, but only 16 KiB of them are taken. */
	memset(big, '\x1b', 100000);
	out = capture(LOG_TEXT, LOG_INFO, emit_big);
	assert_one_clean_line(out);
	assert_true(strlen(out) < 4 * LOG_MSG_MAX + 200);
	assert_true(str_has_suffix(out, "\\x1b [log message cut: 83622 more bytes]\n"));
	free(out);

	/* The JSON format is cut the same way. */
	memset(big, 'q', 100000);
	out = capture(LOG_JSON, LOG_INFO, emit_big);
	assert_int_equal(count_char(out, '\n'), 1);
	struct arena *a = arena_new();
	struct jv **docs;
	size_t n;
	assert_int_equal(json_parse_all(a, out, strlen(out), &docs, &n, NULL), 0);
	assert_int_equal(n, 1);
	const char *msg = jv_as_string(jv_get(docs[0], "msg"));
	assert_int_equal(strlen(msg), LOG_MSG_MAX + strlen(" [log message cut: 83622 more bytes]"));
	assert_true(str_has_suffix(msg, "qqq [log message cut: 83622 more bytes]"));
	arena_free(a);
	free(out);
	free(big);
}

static void emit_json_hostile(void)
{
	log_error("pod %s", "web-1" FORGED "\x1b[2J\r\t\xff\xc0\x7f\xc2\x9b"
			    " end\n");
}

static void test_json_hostile(void **state)
{
	char *out = capture(LOG_JSON, LOG_INFO, emit_json_hostile);
	assert_int_equal(count_char(out, '\n'), 1);
	assert_one_clean_line(out);
	assert_null(strstr(out, "\xc2\x9b")); /* C1 controls are escaped too */
	assert_non_null(strstr(out, "\\u001b[2J\\r\\t\\ufffd\\ufffd\\u007f\\u009b end\"}\n"));
	struct arena *a = arena_new();
	struct jv **docs;
	size_t n;
	assert_int_equal(json_parse_all(a, out, strlen(out), &docs, &n, NULL), 0);
	assert_int_equal(n, 1);
	/* Exact, except bytes that are not UTF-8, which become U+FFFD. */
	assert_string_equal(jv_as_string(jv_get(docs[0], "msg")),
			    "pod web-1" FORGED "\x1b[2J\r\t\xef\xbf\xbd\xef\xbf\xbd\x7f\xc2\x9b"
			    " end");
	arena_free(a);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),	     cmocka_unit_test(test_json_lines),
		cmocka_unit_test(test_levels),	     cmocka_unit_test(test_ratelimit),
		cmocka_unit_test(test_forged_line),  cmocka_unit_test(test_escape),
		cmocka_unit_test(test_controls),     cmocka_unit_test(test_cut),
		cmocka_unit_test(test_json_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
