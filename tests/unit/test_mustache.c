/* The Mustache engine: the official spec's core modules, then our additions. */
#include "harness.h"

#include <brindle/core/json.h>
#include <brindle/core/mustache.h>
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Partials by name, compiled up front: what a caller of the engine keeps. */
struct partial_table {
	size_t n;
	const char *names[8];
	struct mustache *templates[8];
};

static const struct mustache *table_lookup(void *ctx, const char *name)
{
	const struct partial_table *pt = ctx;
	for (size_t i = 0; i < pt->n; i++)
		if (streq(pt->names[i], name))
			return pt->templates[i];
	return NULL;
}

static int table_add(struct partial_table *pt, const char *name, const char *text,
		     struct strbuf *err)
{
	assert_true(pt->n < ARRAY_SIZE(pt->names));
	int r = mustache_compile(text, &pt->templates[pt->n], err);
	if (r == 0)
		pt->names[pt->n++] = name;
	return r;
}

static void table_free(struct partial_table *pt)
{
	for (size_t i = 0; i < pt->n; i++)
		mustache_free(pt->templates[i]);
	pt->n = 0;
}

/* The official spec */

static const char *const spec_files[] = {
	"comments", "delimiters", "interpolation", "inverted", "partials", "sections",
};

/* The spec's test data, kept in the tree (tests/data/mustache-spec, MIT). */
static void spec_path(char *buf, size_t size, const char *file)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "tests/data/mustache-spec/%s.json", file);
	snprintf(buf, size, "%s", test_source_path(rel));
}

/* One case; prints what went wrong and returns false when it fails. */
static bool run_spec_case(const char *file, const struct jv *tc)
{
	const char *name = jv_as_string(jv_get(tc, "name"));
	const char *template = jv_as_string(jv_get(tc, "template"));
	const char *expected = jv_as_string(jv_get(tc, "expected"));
	const struct jv *partials = jv_get(tc, "partials");
	struct partial_table pt = { 0 };
	struct mustache_partials lookup = { table_lookup, &pt };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct mustache *t = NULL;
	bool pass = false;
	assert_non_null(name);
	assert_non_null(template);
	assert_non_null(expected);
	sb_init(&out);
	sb_init(&err);
	for (size_t i = 0; partials && i < partials->obj.n; i++) {
		const struct jv_member *m = &partials->obj.members[i];
		if (table_add(&pt, m->key, jv_as_string(m->value), &err) < 0)
			goto done;
	}
	if (mustache_compile(template, &t, &err) < 0)
		goto done;
	if (mustache_render(t, jv_get(tc, "data"), &lookup, NULL, &out, &err) < 0)
		goto done;
	pass = streq(sb_str(&out), expected);
done:
	if (!pass)
		fprintf(stderr,
			"FAIL %s: %s\n--- template\n%s\n--- expected\n%s\n--- actual\n%s\n"
			"--- error\n%s\n",
			file, name, template, expected, sb_str(&out), sb_str(&err));
	mustache_free(t);
	table_free(&pt);
	sb_free(&out);
	sb_free(&err);
	return pass;
}

static void test_spec(void **state)
{
	size_t total = 0, failed = 0;
	for (size_t f = 0; f < ARRAY_SIZE(spec_files); f++) {
		char path[4096];
		struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
		struct arena *a = arena_new();
		struct jv *doc;
		spec_path(path, sizeof(path), spec_files[f]);
		if (sb_read_file(&text, path) < 0)
			fail_msg("cannot read %s", path);
		if (json_parse(a, text.buf, text.len, &doc, &err) < 0)
			fail_msg("%s: %s", path, sb_str(&err));
		const struct jv *tests = jv_get(doc, "tests");
		assert_non_null(tests);
		assert_int_equal(tests->type, JV_ARRAY);
		for (size_t i = 0; i < tests->arr.n; i++) {
			total++;
			failed += !run_spec_case(spec_files[f], tests->arr.items[i]);
		}
		sb_free(&text);
		sb_free(&err);
		arena_free(a);
	}
	assert_int_equal(total, 136);
	assert_int_equal(failed, 0);
}

/* Our additions */

/*
 * Compiles @template and @partials ("name", "text", ..., NULL), renders
 * against the JSON @data; returns the engine's result, output in @out and the
 * message in @err.
 */
static int render(const char *template, const char *data, const char *const *partials,
		  const struct mustache_opts *opts, struct strbuf *out, struct strbuf *err)
{
	struct arena *a = arena_new();
	struct partial_table pt = { 0 };
	struct mustache_partials lookup = { table_lookup, &pt };
	struct mustache *t;
	struct jv *v = NULL;
	if (data && json_parse(a, data, strlen(data), &v, err) < 0)
		fail_msg("bad test data: %s", sb_str(err));
	for (size_t i = 0; partials && partials[i]; i += 2)
		if (table_add(&pt, partials[i], partials[i + 1], err) < 0)
			fail_msg("partial %s: %s", partials[i], sb_str(err));
	int r = mustache_compile(template, &t, err);
	if (r < 0)
		fail_msg("compile: %s", sb_str(err));
	r = mustache_render(t, v, &lookup, opts, out, err);
	mustache_free(t);
	table_free(&pt);
	arena_free(a);
	return r;
}

/* Renders and expects success with output @expected. */
static void expect(const char *template, const char *data, const char *const *partials,
		   unsigned flags, const char *expected)
{
	struct mustache_opts opts = { .flags = flags };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&out);
	if (render(template, data, partials, &opts, &out, &err) < 0)
		fail_msg("render %s: %s", template, sb_str(&err));
	assert_string_equal(sb_str(&out), expected);
	sb_free(&out);
	sb_free(&err);
}

/* Renders and expects @code with message @message; the output stays as it was. */
static void expect_error(const char *template, const char *data, const char *const *partials,
			 const struct mustache_opts *opts, int code, const char *message)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&out);
	sb_adds(&out, "kept");
	assert_int_equal(render(template, data, partials, opts, &out, &err), code);
	assert_string_equal(sb_str(&err), message);
	assert_string_equal(sb_str(&out), "kept");
	sb_free(&out);
	sb_free(&err);
}

static void test_compile_errors(void **state)
{
	static const struct {
		const char *template, *message;
	} cases[] = {
		{ "a\n{{#peers}}\nx\n", "line 2: section \"peers\" is not closed" },
		{ "{{#a}}{{^b}}\n{{/b}}\n", "line 1: section \"a\" is not closed" },
		{ "{{#y}}\n{{!\n\n}}\n{{/x}}\n", "line 5: closing tag \"x\" does not match open "
						 "section \"y\"" },
		{ "{{/x}}", "line 1: closing tag \"x\" has no open section" },
		{ "a\n\n{{name", "line 3: \"{{\" has no matching \"}}\"" },
		{ "{{{name}}", "line 1: \"{{{\" has no matching \"}}}\"" },
		{ "{{! never closed\n", "line 1: \"{{\" has no matching \"}}\"" },
		{ "{{=<% %>=}}\n<%name}}", "line 2: \"<%\" has no matching \"%>\"" },
		{ "x\n{{=<% =}}", "line 2: bad delimiter change \"{{=<% =}}\": want two delimiters "
				  "without blanks or \"=\"" },
		{ "{{=<% %>}}", "line 1: bad delimiter change \"{{=<% %>}}\": want two delimiters "
				"without blanks or \"=\"" },
		{ "{{=a= b=}}", "line 1: bad delimiter change \"{{=a= b=}}\": want two delimiters "
				"without blanks or \"=\"" },
		{ "{{=a b c=}}",
		  "line 1: bad delimiter change \"{{=a b c=}}\": want two delimiters "
		  "without blanks or \"=\"" },
		{ "{{}}", "line 1: bad tag name \"\"" },
		{ "{{ a b }}", "line 1: bad tag name \"a b\"" },
		{ "\n{{#a..b}}{{/a..b}}", "line 2: bad tag name \"a..b\"" },
		{ "{{a.}}", "line 1: bad tag name \"a.\"" },
		{ "{{.a}}", "line 1: bad tag name \".a\"" },
		{ "{{> }}", "line 1: bad tag name \"\"" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct strbuf err = STRBUF_INIT;
		struct mustache *t = NULL;
		assert_int_equal(mustache_compile(cases[i].template, &t, &err), -EINVAL);
		assert_null(t);
		assert_string_equal(sb_str(&err), cases[i].message);
		sb_free(&err);
	}
	/* Without an error buffer too. */
	struct mustache *t = NULL;
	assert_int_equal(mustache_compile("{{#a}}", &t, NULL), -EINVAL);
	assert_null(t);
}

static void test_compile_nesting_limit(void **state)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	struct mustache *t;
	sb_init(&text);
	for (int i = 0; i < MUSTACHE_MAX_DEPTH; i++)
		sb_adds(&text, "{{#a}}");
	for (int i = 0; i < MUSTACHE_MAX_DEPTH; i++)
		sb_adds(&text, "{{/a}}");
	assert_int_equal(mustache_compile(text.buf, &t, &err), 0);
	mustache_free(t);
	sb_reset(&text);
	for (int i = 0; i <= MUSTACHE_MAX_DEPTH; i++)
		sb_adds(&text, "{{#a}}\n");
	assert_int_equal(mustache_compile(text.buf, &t, &err), -EINVAL);
	assert_string_equal(sb_str(&err), "line 101: sections nested deeper than 100 levels");
	sb_free(&text);
	sb_free(&err);
}

static void test_strict(void **state)
{
	const struct mustache_opts strict = { .flags = MUSTACHE_STRICT };
	const char *data = "{\"node\":{\"name\":\"n1\"},\"peers\":[],\"none\":null,"
			   "\"o\":{},\"f\":false}";
	expect_error("\n\n\n\n\n\nAS {{node.asNumber}};\n", data, NULL, &strict, -ENOENT,
		     "line 7: \"node.asNumber\" is not defined");
	expect_error("{{#routes}}x{{/routes}}", data, NULL, &strict, -ENOENT,
		     "line 1: \"routes\" is not defined");
	expect_error("{{^routes}}x{{/routes}}", data, NULL, &strict, -ENOENT,
		     "line 1: \"routes\" is not defined");
	expect_error("{{#node}}{{peers.x}}{{/node}}", data, NULL, &strict, -ENOENT,
		     "line 1: \"peers.x\" is not defined");
	expect_error("{{none}}", data, NULL, &strict, -EINVAL,
		     "line 1: \"none\" is null, not a printable value");
	expect_error("{{{peers}}}", data, NULL, &strict, -EINVAL,
		     "line 1: \"peers\" is a list, not a printable value");
	expect_error("{{&o}}", data, NULL, &strict, -EINVAL,
		     "line 1: \"o\" is an object, not a printable value");
	expect_error("{{>peer}}", data, NULL, &strict, -ENOENT,
		     "line 1: partial \"peer\" is not defined");
	const char *const partials[] = { "peer", "protocol bgp {{node.name}} {\n{{asn}}\n}\n",
					 NULL };
	expect_error("x\n{{#node}}\n  {{>peer}}\n{{/node}}\n", data, partials, &strict, -ENOENT,
		     "partial \"peer\": line 2: \"asn\" is not defined");
	expect_error("{{.}}", NULL, NULL, &strict, -ENOENT, "line 1: \".\" is not defined");

	/* Present but falsy is fine, and names still resolve up the context stack. */
	expect("{{#none}}x{{/none}}{{^f}}{{node.name}}{{/f}}{{#peers}}y{{/peers}}{{#o}}{{f}}{{/o}}",
	       data, NULL, MUSTACHE_STRICT, "n1false");
	/* Without strict, the same templates render empty. */
	expect("[{{node.asNumber}}{{#routes}}x{{/routes}}{{none}}{{{peers}}}{{&o}}{{>peer}}]", data,
	       NULL, 0, "[]");
	expect("{{.}}", NULL, NULL, 0, "");
}

static void test_no_escape(void **state)
{
	const char *data = "{\"s\":\"a<b & \\\"c\\\">'\",\"l\":[\"<\"]}";
	expect("{{s}}|{{#l}}{{.}}{{/l}}", data, NULL, 0, "a&lt;b &amp; &quot;c&quot;&gt;'|&lt;");
	expect("{{s}}|{{#l}}{{.}}{{/l}}", data, NULL, MUSTACHE_NO_ESCAPE, "a<b & \"c\">'|<");
	expect("{{{s}}}{{&s}}", data, NULL, 0, "a<b & \"c\">'a<b & \"c\">'");
	const char *const partials[] = { "p", "{{s}}", NULL };
	expect("{{>p}}", data, partials, MUSTACHE_NO_ESCAPE | MUSTACHE_STRICT, "a<b & \"c\">'");
}

static void test_values(void **state)
{
	/* Numbers print as written; what counts as falsy. */
	const char *data = "{\"n\":[1.10,1e3,-0,12345678901234567890],\"t\":true,\"f\":false,"
			   "\"zero\":0,\"empty\":\"\",\"obj\":{},\"list\":[],\"null\":null}";
	expect("{{#n}}{{.}} {{/n}}{{t}} {{f}}", data, NULL, 0,
	       "1.10 1e3 -0 12345678901234567890 true false");
	expect("{{#t}}t{{/t}}{{#f}}f{{/f}}{{#zero}}0{{/zero}}{{#empty}}e{{/empty}}"
	       "{{#obj}}o{{/obj}}{{#list}}l{{/list}}{{#null}}n{{/null}}{{#miss}}m{{/miss}}",
	       data, NULL, 0, "t0eo");
	expect("{{^t}}t{{/t}}{{^f}}f{{/f}}{{^zero}}0{{/zero}}{{^empty}}e{{/empty}}"
	       "{{^obj}}o{{/obj}}{{^list}}l{{/list}}{{^null}}n{{/null}}{{^miss}}m{{/miss}}",
	       data, NULL, 0, "flnm");
	/* A key with a dot in it cannot be reached; "a.b" always walks. */
	expect("{{a.b}}|{{#a}}{{b}}{{/a}}", "{\"a.b\":1,\"a\":{\"b\":2}}", NULL, 0, "2|2");
}

static void test_partial_indentation(void **state)
{
	/* Standalone partials nest their indentation; list items each get it. */
	const char *const partials[] = {
		"peers",  "{{#peers}}\nprotocol bgp {{name}} {\n  {{>body}}\n}\n{{/peers}}\n",
		"body",	  "neighbor {{ip}} as {{as}};\n{{#passive}}\npassive on;\n{{/passive}}\n",
		"inline", "a\nb",
		NULL,
	};
	const char *data = "{\"peers\":[{\"name\":\"n1\",\"ip\":\"10.0.0.1\",\"as\":64512,"
			   "\"passive\":true},{\"name\":\"n2\",\"ip\":\"10.0.0.2\",\"as\":64513,"
			   "\"passive\":false}]}";
	expect("router id 1.2.3.4;\n\t{{>peers}}\nend\n", data, partials,
	       MUSTACHE_STRICT | MUSTACHE_NO_ESCAPE,
	       "router id 1.2.3.4;\n"
	       "\tprotocol bgp n1 {\n"
	       "\t  neighbor 10.0.0.1 as 64512;\n"
	       "\t  passive on;\n"
	       "\t}\n"
	       "\tprotocol bgp n2 {\n"
	       "\t  neighbor 10.0.0.2 as 64513;\n"
	       "\t}\n"
	       "end\n");
	/* A partial tag that is not alone on its line indents nothing, even inside one that is. */
	const char *const nested[] = { "outer", "1\n{{x}} {{>inline}}\n2", "inline", "a\nb", NULL };
	expect("  {{>outer}}\n", "{\"x\":\"X\"}", nested, 0, "  1\n  X a\nb\n  2");
}

static void test_render_many(void **state)
{
	/* Compiled once, rendered against several contexts; output is appended. */
	struct mustache *t, *p;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct partial_table pt = { 0 };
	struct mustache_partials lookup = { table_lookup, &pt };
	struct arena *a = arena_new();
	static const char *const datas[] = {
		"{\"name\":\"a\",\"ips\":[\"10.0.0.1\",\"10.0.0.2\"]}",
		"{\"name\":\"b\",\"ips\":[]}",
		"{\"name\":\"c\",\"ips\":[\"fd00::1\"]}",
	};
	assert_int_equal(mustache_compile("{{name}}:{{#ips}} {{>ip}}{{/ips}}{{^ips}} none{{/ips}};",
					  &t, &err),
			 0);
	assert_int_equal(table_add(&pt, "ip", "<{{.}}>", &err), 0);
	p = pt.templates[0];
	sb_init(&out);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < ARRAY_SIZE(datas); i++) {
			struct jv *v;
			assert_int_equal(json_parse(a, datas[i], strlen(datas[i]), &v, &err), 0);
			assert_int_equal(mustache_render(t, v, &lookup, NULL, &out, &err), 0);
		}
	}
	assert_string_equal(sb_str(&out), "a: <10.0.0.1> <10.0.0.2>;b: none;c: <fd00::1>;"
					  "a: <10.0.0.1> <10.0.0.2>;b: none;c: <fd00::1>;");
	/* The partial is an ordinary template too. */
	sb_reset(&out);
	struct jv *s = jv_string(a, "x&y");
	assert_int_equal(mustache_render(p, s, NULL, NULL, &out, &err), 0);
	assert_string_equal(sb_str(&out), "<x&amp;y>");
	mustache_free(t);
	table_free(&pt);
	arena_free(a);
	sb_free(&out);
	sb_free(&err);
}

static void test_depth_limit(void **state)
{
	/* A partial that includes itself unconditionally. */
	const char *const loop[] = { "loop", "x{{>loop}}", NULL };
	expect_error("{{>loop}}", NULL, loop, NULL, -ELOOP,
		     "partial \"loop\": line 1: nested deeper than 100 sections and partials");

	/*
	 * Data-driven recursion: d nested objects take d partials and d - 1
	 * sections, 2d - 1 levels; 50 fit, 51 do not.
	 */
	const char *const node[] = { "node", "<{{#n}}{{>node}}{{/n}}>", NULL };
	for (int d = 50; d <= 51; d++) {
		struct strbuf data = STRBUF_INIT, expected = STRBUF_INIT;
		sb_init(&data);
		sb_init(&expected);
		for (int i = 0; i < d; i++)
			sb_adds(&data, "{\"n\":");
		sb_adds(&data, "false");
		for (int i = 0; i < d; i++)
			sb_adds(&data, "}");
		for (int i = 0; i < d; i++)
			sb_adds(&expected, "<");
		for (int i = 0; i < d; i++)
			sb_adds(&expected, ">");
		if (d == 50)
			expect("{{>node}}", data.buf, node, 0, expected.buf);
		else
			expect_error("{{>node}}", data.buf, node, NULL, -ELOOP,
				     "partial \"node\": line 1: nested deeper than 100 sections "
				     "and partials");
		sb_free(&data);
		sb_free(&expected);
	}
}

static void test_budgets(void **state)
{
	const struct mustache_opts small = { .max_output = 10 };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&out);
	sb_adds(&out, "not counted");
	assert_int_equal(render("01234{{x}}", "{\"x\":\"<\"}", NULL, &small, &out, &err), 0);
	assert_string_equal(sb_str(&out), "not counted01234&lt;");
	sb_free(&out);
	sb_free(&err);
	expect_error("\n012345678{{x}}", "{\"x\":\"<\"}", NULL, &small, -EFBIG,
		     "line 2: output larger than 10 bytes");
	/* Exponential work that prints nothing (3^20 visits) is stopped by the step budget. */
	const struct mustache_opts steps = { .max_steps = 100000 };
	struct strbuf fan = STRBUF_INIT;
	sb_init(&fan);
	for (int i = 0; i < 20; i++)
		sb_adds(&fan, "{{#l}}");
	for (int i = 0; i < 20; i++)
		sb_adds(&fan, "{{/l}}");
	expect_error(fan.buf, "{\"l\":[1,2,3]}", NULL, &steps, -EFBIG,
		     "line 1: more than 100000 steps");
	sb_free(&fan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_compile_errors),
		cmocka_unit_test(test_compile_nesting_limit),
		cmocka_unit_test(test_strict),
		cmocka_unit_test(test_no_escape),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_partial_indentation),
		cmocka_unit_test(test_render_many),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_budgets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
