/* The document layer: JSON and YAML into jv trees and back out. */
#include "harness.h"

#include <brindle/core/json.h>
#include <brindle/core/yaml.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static struct jv *yaml1(struct arena *a, const char *text)
{
	struct jv **docs;
	size_t n;
	struct strbuf err = STRBUF_INIT;
	int r = yaml_parse_all(a, text, strlen(text), &docs, &n, &err);
	if (r < 0)
		fail_msg("yaml: %s", sb_str(&err));
	sb_free(&err);
	assert_int_equal(n, 1);
	return docs[0];
}

static char *to_json(const struct jv *v)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	json_write(&sb, v, false);
	return sb_detach(&sb);
}

static void test_yaml_scalars(void **state)
{
	struct arena *a = arena_new();
	struct jv *v = yaml1(a, "a: 80\nb: \"80\"\nc: true\nd: ~\ne: 1.10\nf: web\ng: 0x10\n"
				"h: yes\ni: -7\nj: 007\n");
	char *j = to_json(v);
	assert_string_equal(j, "{\"a\":80,\"b\":\"80\",\"c\":true,\"d\":null,\"e\":1.10,"
			       "\"f\":\"web\",\"g\":16,\"h\":\"yes\",\"i\":-7,\"j\":7}");
	free(j);
	/* Plain scalars keep their spelling for string targets. */
	assert_string_equal(jv_as_string(jv_get(v, "e")), "1.10");
	assert_string_equal(jv_as_string(jv_get(v, "a")), "80");
	assert_string_equal(jv_as_string(jv_get(v, "j")), "007");
	assert_null(jv_as_string(jv_get(v, "d")));
	/* Quoted stays a string only. */
	int64_t i;
	assert_false(jv_as_int64(jv_get(v, "b"), &i));
	assert_true(jv_as_int64(jv_get(v, "a"), &i));
	assert_int_equal(i, 80);
	bool b;
	assert_true(jv_as_bool(jv_get(v, "h"), &b));
	assert_true(b);
	arena_free(a);
}

static void test_yaml_multi_doc(void **state)
{
	struct arena *a = arena_new();
	const char *text = "---\nkind: A\n---\n---\nkind: B\n...\n";
	struct jv **docs;
	size_t n;
	assert_int_equal(yaml_parse_all(a, text, strlen(text), &docs, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_non_null(docs[0]);
	assert_null(docs[1]);
	assert_string_equal(jv_as_string(jv_get(docs[2], "kind")), "B");
	arena_free(a);
}

static void test_yaml_anchor_alias(void **state)
{
	struct arena *a = arena_new();
	struct jv *v = yaml1(a, "x: &l {app: web}\ny: *l\n");
	char *j = to_json(v);
	assert_string_equal(j, "{\"x\":{\"app\":\"web\"},\"y\":{\"app\":\"web\"}}");
	free(j);
	arena_free(a);
}

static void test_yaml_errors(void **state)
{
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	struct jv **docs;
	size_t n;
	const char *dup = "a: 1\nb: 2\na: 3\n";
	assert_int_equal(yaml_parse_all(a, dup, strlen(dup), &docs, &n, &err), -EINVAL);
	assert_string_equal(sb_str(&err), "document 1: line 3: duplicate key \"a\"");
	const char *bad = "kind: A\n---\nkind: [unclosed\n";
	assert_int_equal(yaml_parse_all(a, bad, strlen(bad), &docs, &n, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "document 2: line"));
	const char *alias = "a: *nope\n";
	assert_int_equal(yaml_parse_all(a, alias, strlen(alias), &docs, &n, &err), -EINVAL);
	sb_free(&err);
	arena_free(a);
}

static void test_json_roundtrip(void **state)
{
	struct arena *a = arena_new();
	const char *text = "{\"b\":[1,2.5,\"x\",null,true,{}],\"a\":{\"k\":\"v\\\"q\"},"
			   "\"r\":\"9223372036854775807\",\"big\":123456789012345678}";
	struct jv *v;
	assert_int_equal(json_parse(a, text, strlen(text), &v, NULL), 0);
	char *j = to_json(v);
	assert_string_equal(j, text);
	free(j);
	int64_t big;
	assert_true(jv_as_int64(jv_get(v, "big"), &big));
	assert_true(big == 123456789012345678LL);
	arena_free(a);
}

static void test_json_error_line(void **state)
{
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	const char *text = "{\n\"a\": 1,\n\"b\": }\n";
	struct jv *v;
	assert_int_equal(json_parse(a, text, strlen(text), &v, &err), -EINVAL);
	assert_true(str_has_prefix(sb_str(&err), "line 3: "));
	sb_free(&err);
	arena_free(a);
}

/* \u0000 would cut the string where C reads it: a different value than written (issue 16). */
static void test_json_nul_refused(void **state)
{
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	struct jv *v;
	const char *value = "{\"metadata\": {\"name\": \"web\\u0000-admin\"}}";
	assert_int_equal(json_parse(a, value, strlen(value), &v, &err), -EINVAL);
	assert_string_equal(sb_str(&err), "line 1: a string holds a NUL character (\\u0000)");
	const char *key = "{\"na\\u0000me\": 1}";
	assert_int_equal(json_parse(a, key, strlen(key), &v, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "NUL character"));
	/* other escapes still decode */
	const char *ok = "{\"a\": \"x\\u0041\\n\"}";
	assert_int_equal(json_parse(a, ok, strlen(ok), &v, &err), 0);
	assert_string_equal(jv_as_string(jv_get(v, "a")), "xA\n");
	sb_free(&err);
	arena_free(a);
	(void)state;
}

struct collected {
	int n;
	char last[128];
};

static int on_value(void *ctx, struct jv *v, struct arena *a)
{
	struct collected *c = ctx;
	c->n++;
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	json_write(&sb, v, false);
	snprintf(c->last, sizeof(c->last), "%s", sb_str(&sb));
	sb_free(&sb);
	return 0;
}

static void test_json_stream_split(void **state)
{
	/* Values split at every possible byte boundary arrive whole. */
	const char *text = "{\"result\":{\"events\":[{\"kv\":{\"key\":\"a\"}}]}}\n{\"result\":{}}";
	size_t len = strlen(text);
	for (size_t cut = 1; cut < len; cut++) {
		struct collected c = { 0 };
		struct json_stream *js = json_stream_new(on_value, &c);
		assert_int_equal(json_stream_feed(js, text, cut, NULL), 0);
		assert_int_equal(json_stream_feed(js, text + cut, len - cut, NULL), 0);
		assert_int_equal(c.n, 2);
		assert_string_equal(c.last, "{\"result\":{}}");
		json_stream_free(js);
	}
}

static void test_yaml_write(void **state)
{
	struct arena *a = arena_new();
	struct jv *v = yaml1(a, "metadata: {name: x, labels: {v: \"1\", on: \"yes\"}}\n"
				"spec: {ports: [80, \"http\"], empty: {}, s: \"\"}\n");
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	yaml_write(&sb, v);
	assert_string_equal(sb_str(&sb), "metadata:\n"
					 "  name: x\n"
					 "  labels:\n"
					 "    v: \"1\"\n"
					 "    \"on\": \"yes\"\n"
					 "spec:\n"
					 "  ports:\n"
					 "  - 80\n"
					 "  - http\n"
					 "  empty: {}\n"
					 "  s: \"\"\n");
	/* And it reads back to the same tree. */
	struct jv *back = yaml1(a, sb_str(&sb));
	assert_true(jv_equal(v, back));
	sb_free(&sb);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_scalars),	  cmocka_unit_test(test_yaml_multi_doc),
		cmocka_unit_test(test_yaml_anchor_alias), cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_json_roundtrip),	  cmocka_unit_test(test_json_error_line),
		cmocka_unit_test(test_json_nul_refused),  cmocka_unit_test(test_json_stream_split),
		cmocka_unit_test(test_yaml_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
