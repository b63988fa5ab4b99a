/* Logging: levels, the text and JSON-lines formats, rate limiting. */
#include "harness.h"

#include <brindle/json.h>
#include <brindle/log.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *capture(enum log_format fmt, enum log_level level, void (*emit)(void))
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	log_init("unit", level, fmt, p[1]);
	emit();
	close(p[1]);
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	assert_int_equal(sb_read_fd(&sb, p[0]), 0);
	close(p[0]);
	log_init("unit", LOG_INFO, LOG_TEXT, 2);
	return sb_detach(&sb);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_json_lines),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_ratelimit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
