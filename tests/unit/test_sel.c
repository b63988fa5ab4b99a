/* The selector language: parsing, canonical form, evaluation, derived selectors. */
#include "harness.h"

#include <brindle/core/sel.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static struct sel *parse_ok(const char *text)
{
	struct strbuf err = STRBUF_INIT;
	struct sel *s = NULL;

	sb_init(&err);
	if (sel_parse(text, &s, &err) < 0)
		fail_msg("sel_parse(%s): %s", text, sb_str(&err));
	sb_free(&err);
	return s;
}

static void assert_canon(const char *text, const char *want)
{
	struct sel *s = parse_ok(text);
	char *got = sel_canonical(s);
	if (strcmp(got, want) != 0)
		fail_msg("%s: canonical %s, want %s", text, got, want);
	free(got);
	sel_free(s);
}

static void assert_sel_text(struct sel *s, const char *want)
{
	char *got = sel_canonical(s);
	assert_string_equal(got, want);
	free(got);
}

static void assert_error(const char *text, const char *want)
{
	struct strbuf err = STRBUF_INIT;
	struct sel *s = NULL;

	sb_init(&err);
	if (sel_parse(text, &s, &err) != -EINVAL)
		fail_msg("%s: parsed, want error %s", text, want);
	assert_null(s);
	if (strcmp(sb_str(&err), want) != 0)
		fail_msg("%s: error \"%s\", want \"%s\"", text, sb_str(&err), want);
	sb_free(&err);
}

/* Labels from "k=v,k2=v2" ("" is no labels); values may not hold ',' or '='. */
static struct br_labels make_labels(struct arena *a, const char *spec)
{
	struct br_labels l = { 0 };
	char *copy = arena_strdup(a, spec), *save = NULL;

	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		assert_non_null(eq);
		*eq = '\0';
		labels_set(a, &l, kv, eq + 1);
	}
	return l;
}

static bool eval_on(const char *text, const char *spec)
{
	struct arena *a = arena_new();
	struct br_labels l = make_labels(a, spec);
	struct sel_labels view = sel_labels_of(&l);
	struct sel *s = parse_ok(text);
	bool r = sel_eval(s, &view);
	sel_free(s);
	arena_free(a);
	return r;
}

static void test_print_constructs(void **state)
{
	static const char *const cases[][2] = {
		{ "app == \"web\"", "app == \"web\"" },
		{ "app=='web'", "app == \"web\"" },
		{ "app != 'web'", "app != \"web\"" },
		{ "app in {'b', \"a\"}", "app in {\"a\", \"b\"}" },
		{ "app in {}", "app in {}" },
		{ "app not in {\"a\",\"b\",}", "app not in {\"a\", \"b\"}" },
		{ "app notin {'a'}", "app not in {\"a\"}" },
		{ "has(app)", "has(app)" },
		{ "has ( app )", "has(app)" },
		{ "!has(app)", "!has(app)" },
		{ "! has(app)", "!has(app)" },
		{ "all()", "all()" },
		{ "all( )", "all()" },
		{ "global()", "global()" },
		{ "", "all()" },
		{ " \t\n", "all()" },
		{ "app contains 'x'", "app contains \"x\"" },
		{ "app starts with \"x\"", "app starts with \"x\"" },
		{ "app startswith \"x\"", "app starts with \"x\"" },
		{ "app ends   with \"x\"", "app ends with \"x\"" },
		{ "!(a == \"x\" && b == \"y\")", "!(a == \"x\" && b == \"y\")" },
		{ "a == \"x\" && (b == \"y\" || c == \"z\")",
		  "a == \"x\" && (b == \"y\" || c == \"z\")" },
		{ "!(a contains \"x\")", "!a contains \"x\"" },
		{ "!global()", "!global()" },
		{ "!all()", "!all()" },
		{ "k == 'say \"hi\"'", "k == 'say \"hi\"'" },
		{ "k == \"it's\"", "k == \"it's\"" },
		{ "k in {'a\"', \"b'\"}", "k in {'a\"', \"b'\"}" },
		{ "k == \"\"", "k == \"\"" },
		{ "projectcalico.org/name-space_1 == \"a b\"",
		  "projectcalico.org/name-space_1 == \"a b\"" },
		/* Keywords are labels unless followed by "(". */
		{ "has == \"x\" && all in {\"y\"} && in != \"z\"",
		  "all in {\"y\"} && has == \"x\" && in != \"z\"" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		assert_canon(cases[i][0], cases[i][1]);
}

static void test_precedence(void **state)
{
	const char *s = "a == \"1\" || b == \"2\" && c == \"3\"";

	assert_canon(s, "a == \"1\" || b == \"2\" && c == \"3\"");
	assert_true(eval_on(s, "a=1"));
	assert_false(eval_on(s, "b=2"));
	assert_false(eval_on(s, "c=3"));
	assert_true(eval_on(s, "b=2,c=3"));

	s = "(a == \"1\" || b == \"2\") && c == \"3\"";
	assert_canon(s, "(a == \"1\" || b == \"2\") && c == \"3\"");
	assert_false(eval_on(s, "a=1"));
	assert_true(eval_on(s, "a=1,c=3"));

	/* "!" binds tighter than && and ||, but covers the whole comparison. */
	s = "!a == \"1\" && b == \"2\"";
	assert_canon(s, "a != \"1\" && b == \"2\"");
	assert_true(eval_on(s, "b=2"));
	assert_false(eval_on(s, "a=1,b=2"));
	s = "!has(a) || has(b) && has(c)";
	assert_canon(s, "!has(a) || has(b) && has(c)");
	assert_true(eval_on(s, ""));
	assert_false(eval_on(s, "a=1,b=1"));
	assert_true(eval_on(s, "a=1,b=1,c=1"));
	s = "!(has(a) || has(b)) && has(c)";
	assert_canon(s, "!(has(a) || has(b)) && has(c)");
	assert_true(eval_on(s, "c=1"));
	assert_false(eval_on(s, "b=1,c=1"));
}

static void test_eval_table(void **state)
{
	static const struct {
		const char *sel, *labels;
		bool want;
	} cases[] = {
		{ "app == \"web\"", "app=web", true },
		{ "app == \"web\"", "app=db", false },
		{ "app == \"web\"", "", false },
		{ "app == \"\"", "app=", true },
		{ "app == \"\"", "", false },
		{ "app != \"web\"", "app=web", false },
		{ "app != \"web\"", "app=db", true },
		{ "app != \"web\"", "", true },
		{ "app in {\"a\", \"web\"}", "app=web", true },
		{ "app in {\"a\", \"web\"}", "app=b", false },
		{ "app in {\"a\", \"web\"}", "", false },
		{ "app in {}", "app=a", false },
		{ "app not in {\"a\", \"web\"}", "app=web", false },
		{ "app not in {\"a\", \"web\"}", "app=b", true },
		{ "app not in {\"a\", \"web\"}", "", true },
		{ "app not in {}", "", true },
		{ "has(app)", "app=", true },
		{ "has(app)", "other=x", false },
		{ "!has(app)", "", true },
		{ "!has(app)", "app=x", false },
		{ "app contains \"e\"", "app=web", true },
		{ "app contains \"x\"", "app=web", false },
		{ "app contains \"\"", "app=web", true },
		{ "app contains \"e\"", "", false },
		{ "app contains \"\"", "", false },
		{ "app starts with \"we\"", "app=web", true },
		{ "app starts with \"eb\"", "app=web", false },
		{ "app starts with \"webs\"", "app=web", false },
		{ "app starts with \"\"", "", false },
		{ "app ends with \"eb\"", "app=web", true },
		{ "app ends with \"we\"", "app=web", false },
		{ "app ends with \"aweb\"", "app=web", false },
		{ "app ends with \"\"", "", false },
		{ "!app contains \"e\"", "", true },
		{ "all()", "", true },
		{ "all()", "app=web", true },
		{ "!all()", "app=web", false },
		{ "global()", "", true },
		{ "global()", "app=web", true },
		{ "global()", "projectcalico.org/namespace=default", false },
		{ "!global()", "projectcalico.org/namespace=default", true },
		{ "has(a) && has(b) && has(c)", "a=1,b=1,c=1", true },
		{ "has(a) && has(b) && has(c)", "a=1,c=1", false },
		{ "has(a) || has(b) || has(c)", "c=1", true },
		{ "has(a) || has(b) || has(c)", "d=1", false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		if (eval_on(cases[i].sel, cases[i].labels) != cases[i].want)
			fail_msg("%s on {%s}: want %d", cases[i].sel, cases[i].labels,
				 cases[i].want);
}

static const char *fixed_get(const void *ctx, const char *key)
{
	return strcmp(key, "app") == 0 ? ctx : NULL;
}

static void test_custom_labels(void **state)
{
	struct sel *s = parse_ok("app == \"web\" && !has(tier)");
	struct sel_labels web = { fixed_get, "web" }, db = { fixed_get, "db" };

	assert_true(sel_eval(s, &web));
	assert_false(sel_eval(s, &db));
	sel_free(s);
}

static void test_canonical_groups(void **state)
{
	static const char *const groups[][5] = {
		{ "a == \"x\" && b == \"y\"", "a=='x'&&b==\"y\"", "(b == \"y\") && (a == 'x')",
		  "b==\"y\" && a==\"x\" && a==\"x\"", "!(a != \"x\") && !!(b == 'y')" },
		{ "a == \"x\" || b == \"y\"", "b == 'y' || a == 'x'",
		  "((a == \"x\")) || b == \"y\"", "a == \"x\" || b == \"y\" || a == \"x\"",
		  "!!(b == \"y\" || a == \"x\")" },
		{ "a in {\"1\", \"2\"}", "a in {'2','1'}", "a in {\"2\", \"1\", \"2\",}",
		  "!(a not in {\"1\", \"2\"})", "!!!a notin {'1', '2'}" },
		{ "a not in {\"1\", \"2\"}", "a notin{'2','1'}", "!(a in {\"1\",\"2\"})",
		  "a not\tin {\"1\",\"1\",\"2\"}", NULL },
		{ "a != \"x\"", "!(a == \"x\")", "!!a != 'x'", "! ! ! a == \"x\"", NULL },
		{ "has(a) && has(b) && has(c)", "has(c) && (has(b) && has(a))",
		  "(has(a) && has(b)) && has(c)", "has(b) && has(c) && has(a) && all()",
		  "all() && (has(c) && all()) && has(b) && has(a)" },
		{ "has(a) || has(b) || has(c)", "has(c) || (has(b) || has(a))",
		  "(has(a) || has(b)) || has(c)", "has(b) || !!(has(c) || has(a))", NULL },
		{ "all()", "", "all() || has(a)", "has(b) || (all() && all())", "all() && all()" },
		{ "!(has(a) && has(b))", "!(has(b) && has(a))", "!!!(has(a) && has(b) && has(a))",
		  "!(all() && has(b) && has(a))", NULL },
		{ "(a == \"1\" || b == \"2\") && c == \"3\"", "c == '3' && (b == '2' || a == '1')",
		  "(c == \"3\") && ((a == \"1\") || (b == \"2\"))",
		  "c == \"3\" && (b == \"2\" || a == \"1\" || b == \"2\")", NULL },
		{ "a == \"1\" || b == \"2\" && c == \"3\"",
		  "(c == \"3\" && b == \"2\") || a == \"1\"", "a == '1' || (b == '2' && c == '3')",
		  "b == \"2\" && c == \"3\" || a == \"1\"", NULL },
		{ "global() && has(a)", "has(a) && global()", "has( a ) && global ( )",
		  "all() && global() && has(a)", NULL },
		{ "k == 'a\"b'", "k == 'a\"b'", "!(k != 'a\"b')", NULL, NULL },
	};

	for (size_t g = 0; g < ARRAY_SIZE(groups); g++)
		for (size_t i = 0; i < ARRAY_SIZE(groups[g]) && groups[g][i]; i++)
			assert_canon(groups[g][i], groups[g][0]);
}

static void test_round_trip(void **state)
{
	static const char *const texts[] = {
		"a == \"1\"",
		"!(a == \"1\" && (b == \"2\" || !has(c)))",
		"a == \"1\" || b == \"2\" && (c == \"3\" || !(d in {\"x\", \"y\"} && global()))",
		"k == 'x\"y' && v in {\"it's\", '\"q\"'}",
		"!!!(a starts with \"x\" || b ends with \"y\") && c contains \"z\"",
		"!all() || !global() && has(x)",
		"((((a == \"1\" || b == \"1\") && c == \"1\") || d == \"1\") && e == \"1\")",
		"x not in {} && y in {}",
	};

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		struct sel *s = parse_ok(texts[i]);
		char *once = sel_canonical(s);
		struct sel *back = parse_ok(once);
		char *twice = sel_canonical(back);
		assert_string_equal(once, twice);
		assert_true(sel_equal(s, back));
		free(once);
		free(twice);
		sel_free(back);
		sel_free(s);
	}
}

static void test_errors(void **state)
{
	static const char *const op_list = "expected \"==\", \"!=\", \"in\", \"not in\", "
					   "\"contains\", \"starts with\" or \"ends with\"";
	static const char *const cases[][2] = {
		{ "!", "position 1: unexpected end of selector" },
		{ "a == \"x\" &&", "position 11: unexpected end of selector" },
		{ "a == \"x\" || ", "position 12: unexpected end of selector" },
		{ "(", "position 1: unexpected end of selector" },
		{ ")", "position 0: unexpected \")\"" },
		{ "()", "position 1: unexpected \")\"" },
		{ "a == \"x\")", "position 8: unexpected \")\"" },
		{ "has(a) && b == \"y\" )", "position 19: unexpected \")\"" },
		{ "&& a == \"x\"", "position 0: unexpected \"&&\"" },
		{ "a == \"x\" || || b == \"y\"", "position 12: unexpected \"||\"" },
		{ "!= \"x\"", "position 0: unexpected \"!=\"" },
		{ "\"x\" == a", "position 0: unexpected string" },
		{ "{\"x\"}", "position 0: unexpected \"{\"" },
		{ "@app == \"x\"", "position 0: unexpected \"@\"" },
		{ "\x01", "position 0: unexpected byte 0x01" },
		{ "a == \"x\" \xff", "position 9: expected \"&&\", \"||\" or end of selector" },
		{ "a == \"x\" b == \"y\"",
		  "position 9: expected \"&&\", \"||\" or end of selector" },
		{ "a == \"x\" & b == \"y\"",
		  "position 9: expected \"&&\", \"||\" or end of selector" },
		{ "a == \"x\" | b == \"y\"",
		  "position 9: expected \"&&\", \"||\" or end of selector" },
		{ "(a == \"x\"",
		  "position 9: expected \"&&\", \"||\" or \")\" to close \"(\" at position 0" },
		{ "a == \"1\" && (b == \"2\" c",
		  "position 22: expected \"&&\", \"||\" or \")\" to close \"(\" at position 12" },
		{ "a == \"x\" || b == \"y", "position 17: unterminated string" },
		{ "a == 'x", "position 5: unterminated string" },
		{ "a in {\"x\", 'y}", "position 11: unterminated string" },
		{ "a == x", "position 5: expected a quoted string after \"==\"" },
		{ "a != ", "position 5: expected a quoted string after \"!=\"" },
		{ "a contains x", "position 11: expected a quoted string after \"contains\"" },
		{ "a starts with", "position 13: expected a quoted string after \"starts with\"" },
		{ "a ends with {\"x\"}",
		  "position 12: expected a quoted string after \"ends with\"" },
		{ "a in \"x\"", "position 5: expected \"{\" after \"in\"" },
		{ "a not in (\"x\")", "position 9: expected \"{\" after \"not in\"" },
		{ "a in {\"x\" \"y\"}", "position 10: expected \",\" or \"}\" in set" },
		{ "a in {\"x\"", "position 9: expected \",\" or \"}\" in set" },
		{ "a in {x}", "position 6: expected a quoted string or \"}\" in set" },
		{ "a in {,}", "position 6: expected a quoted string or \"}\" in set" },
		{ "a in {\"x\",,}", "position 10: expected a quoted string or \"}\" in set" },
		{ "has()", "position 4: expected a label after \"has(\"" },
		{ "has(\"a\")", "position 4: expected a label after \"has(\"" },
		{ "has(a", "position 5: expected \")\" to close \"has(\"" },
		{ "has(a b)", "position 6: expected \")\" to close \"has(\"" },
		{ "all(x)", "position 4: expected \")\" to close \"all(\"" },
		{ "global(", "position 7: expected \")\" to close \"global(\"" },
	};
	static const char *const after_label[][3] = {
		{ "app", "3", "app" },
		{ "app xyz", "4", "app" },
		{ "a = \"x\"", "2", "a" },
		{ "a & b", "2", "a" },
		{ "a starts \"x\"", "2", "a" },
		{ "a not \"x\"", "2", "a" },
		{ "a inx {\"x\"}", "2", "a" },
		{ "a =~ \"x\"", "2", "a" },
		{ "has(a) && foo(b)", "13", "foo" },
		{ "a.b/c-d_e", "9", "a.b/c-d_e" },
	};
	char want[256];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		assert_error(cases[i][0], cases[i][1]);
	for (size_t i = 0; i < ARRAY_SIZE(after_label); i++) {
		snprintf(want, sizeof(want), "position %s: %s after label \"%s\"",
			 after_label[i][1], op_list, after_label[i][2]);
		assert_error(after_label[i][0], want);
	}

	/* NULL err is allowed. */
	struct sel *s = NULL;
	assert_int_equal(sel_parse("a ==", &s, NULL), -EINVAL);
	assert_null(s);
}

static char *repeat(const char *unit, size_t n, const char *middle, const char *tail)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (size_t i = 0; i < n; i++)
		sb_adds(&sb, unit);
	sb_adds(&sb, middle);
	for (size_t i = 0; i < n; i++)
		sb_adds(&sb, tail);
	return sb_detach(&sb);
}

static void test_limits(void **state)
{
	char *text;
	struct sel *s;

	text = repeat("(", 100, "a == \"1\"", ")");
	assert_canon(text, "a == \"1\"");
	free(text);

	text = repeat("(", 101, "a == \"1\"", ")");
	assert_error(text, "position 100: selector nested too deeply");
	free(text);

	text = repeat("!(", 200, "has(a)", ")");
	assert_error(text, "position 201: selector nested too deeply");
	free(text);

	text = repeat("(has(a) && ", 101, "has(b)", ")");
	assert_error(text, "position 1100: selector nested too deeply");
	free(text);

	/* Runs of "!" are not nesting. */
	text = repeat("!", 100001, "has(a)", "");
	assert_canon(text, "!has(a)");
	free(text);

	/* Long flat lists are fine. */
	text = repeat("has(a) || ", 5000, "has(b)", "");
	assert_canon(text, "has(a) || has(b)");
	free(text);

	text = repeat("k", 512, " == \"v\"", "");
	s = parse_ok(text);
	sel_free(s);
	free(text);

	text = repeat("k", 513, " == \"v\"", "");
	assert_error(text, "position 0: label longer than 512 characters");
	free(text);

	text = repeat("k", 4 + 513, ")", "");
	memcpy(text, "has(", 4);
	assert_error(text, "position 4: label longer than 512 characters");
	free(text);
}

static struct br_label_req req(const char *key, const char *op, const char **values, size_t n)
{
	return (struct br_label_req){ .key = key, .op = op, .values = values, .n_values = n };
}

static void test_from_k8s(void **state)
{
	struct arena *a = arena_new();
	struct br_label_selector ls = { 0 };
	const char *tiers[] = { "fe", "be", "fe" }, *envs[] = { "prod" };
	struct br_label_req exprs[4];
	struct sel *s;

	/* Empty selector: everything. */
	s = sel_from_k8s(&ls);
	assert_true(sel_is_all(s));
	sel_free(s);

	labels_set(a, &ls.match_labels, "app", "web");
	labels_set(a, &ls.match_labels, "role", "x\"y");
	exprs[0] = req("tier", "In", tiers, 3);
	exprs[1] = req("env", "NotIn", envs, 1);
	exprs[2] = req("team", "Exists", NULL, 0);
	exprs[3] = req("legacy", "DoesNotExist", NULL, 0);
	ls.exprs = exprs;
	ls.n_exprs = 4;
	s = sel_from_k8s(&ls);
	assert_sel_text(s, "!has(legacy) && app == \"web\" && env not in {\"prod\"} && "
			   "has(team) && role == 'x\"y' && tier in {\"be\", \"fe\"}");

	struct {
		const char *labels;
		bool want;
	} cases[] = {
		/* NotIn matches an object that lacks the key. */
		{ "app=web,role=x\"y,tier=fe,team=t", true },
		{ "app=web,role=x\"y,tier=be,team=t,env=dev", true },
		{ "app=web,role=x\"y,tier=be,team=t,env=prod", false },
		{ "app=web,role=x\"y,tier=be,team=t,legacy=1", false },
		{ "app=web,role=x\"y,tier=be", false },
		{ "app=web,role=x\"y,team=t", false },
		{ "app=db,role=x\"y,tier=fe,team=t", false },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct br_labels l = make_labels(a, cases[i].labels);
		struct sel_labels view = sel_labels_of(&l);
		if (sel_eval(s, &view) != cases[i].want)
			fail_msg("{%s}: want %d", cases[i].labels, cases[i].want);
	}
	sel_free(s);

	/* Just a NotIn: true for an unlabelled object. */
	ls.match_labels.n = 0;
	ls.exprs = &exprs[1];
	ls.n_exprs = 1;
	s = sel_from_k8s(&ls);
	assert_sel_text(s, "env not in {\"prod\"}");
	struct br_labels none = { 0 };
	struct sel_labels view = sel_labels_of(&none);
	assert_true(sel_eval(s, &view));
	sel_free(s);

	/* Just a DoesNotExist. */
	ls.exprs = &exprs[3];
	s = sel_from_k8s(&ls);
	assert_sel_text(s, "!has(legacy)");
	assert_true(sel_eval(s, &view));
	sel_free(s);

	/* An operator the model should have rejected matches nothing. */
	exprs[0] = req("tier", "Bogus", tiers, 1);
	ls.exprs = exprs;
	s = sel_from_k8s(&ls);
	assert_sel_text(s, "!all()");
	assert_false(sel_eval(s, &view));
	sel_free(s);

	arena_free(a);
}

static void test_prefix_keys(void **state)
{
	struct sel *s = parse_ok("a == \"1\" && b != \"2\" && c in {\"3\"} && d not in {\"4\"} && "
				 "has(e) && f contains \"6\" && g starts with \"7\" && "
				 "h ends with \"8\" && (global() || !has(i))");
	struct sel *p = sel_prefix_keys(s, "pcns.");

	const char *want = "(!has(pcns.i) || global()) && has(pcns.e) && pcns.a == \"1\" && "
			   "pcns.b != \"2\" && pcns.c in {\"3\"} && pcns.d not in {\"4\"} && "
			   "pcns.f contains \"6\" && pcns.g starts with \"7\" && "
			   "pcns.h ends with \"8\"";

	/* The original is untouched; the copy is re-sorted (has(e) moved). */
	assert_sel_text(s, "(!has(i) || global()) && a == \"1\" && b != \"2\" && c in {\"3\"} && "
			   "d not in {\"4\"} && f contains \"6\" && g starts with \"7\" && "
			   "h ends with \"8\" && has(e)");
	assert_sel_text(p, want);
	struct sel *parsed = parse_ok(want);
	assert_true(sel_equal(p, parsed));
	sel_free(parsed);
	sel_free(p);
	sel_free(s);

	s = parse_ok("all()");
	p = sel_prefix_keys(s, "pcns.");
	assert_true(sel_is_all(p));
	sel_free(p);
	sel_free(s);

	s = parse_ok("!global() || !all()");
	p = sel_prefix_keys(s, "pcsa.");
	assert_sel_text(p, "!all() || !global()");
	sel_free(p);
	sel_free(s);
}

static void test_required_label(void **state)
{
	static const struct {
		const char *sel, *key, *value;
	} cases[] = {
		{ "app == \"web\"", "app", "web" },
		{ "has(x) && tier == \"db\" && app == \"web\"", "app", "web" },
		{ "!(app != \"web\")", "app", "web" },
		{ "all() && app == \"web\"", "app", "web" },
		{ "app != \"web\"", NULL, NULL },
		{ "app in {\"web\"}", NULL, NULL },
		{ "app == \"web\" || tier == \"db\"", NULL, NULL },
		{ "(app == \"web\" || x == \"y\") && has(z)", NULL, NULL },
		{ "!(app == \"web\" && x == \"y\")", NULL, NULL },
		{ "all()", NULL, NULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sel *s = parse_ok(cases[i].sel);
		const char *k = "unset", *v = "unset";
		bool found = sel_required_label(s, &k, &v);
		if (found != (cases[i].key != NULL))
			fail_msg("%s: found %d", cases[i].sel, found);
		if (found) {
			assert_string_equal(k, cases[i].key);
			assert_string_equal(v, cases[i].value);
		} else {
			/* Out-parameters untouched on failure. */
			assert_string_equal(k, "unset");
			assert_string_equal(v, "unset");
		}
		sel_free(s);
	}
}

static void test_constructors(void **state)
{
	const char *vals[] = { "b", "a", "b" };
	struct sel *s;

	s = sel_and(sel_eq("b", "y"), sel_and(sel_eq("a", "x"), sel_all()));
	assert_sel_text(s, "a == \"x\" && b == \"y\"");
	sel_free(s);

	s = sel_or(sel_has("a"), sel_all());
	assert_true(sel_is_all(s));
	sel_free(s);

	s = sel_and(sel_all(), sel_all());
	assert_true(sel_is_all(s));
	sel_free(s);

	s = sel_not(sel_all());
	assert_false(sel_is_all(s));
	assert_sel_text(s, "!all()");
	sel_free(s);

	s = sel_not(sel_not(sel_global()));
	assert_sel_text(s, "global()");
	sel_free(s);

	s = sel_not(sel_eq("a", "x"));
	assert_sel_text(s, "a != \"x\"");
	sel_free(s);

	s = sel_not(sel_neq("a", "x"));
	assert_sel_text(s, "a == \"x\"");
	sel_free(s);

	s = sel_not(sel_in("a", vals, 3));
	assert_sel_text(s, "a not in {\"a\", \"b\"}");
	sel_free(s);

	s = sel_not(sel_not_in("a", vals, 3));
	assert_sel_text(s, "a in {\"a\", \"b\"}");
	sel_free(s);

	s = sel_in("a", NULL, 0);
	assert_sel_text(s, "a in {}");
	sel_free(s);

	s = sel_or(sel_has("a"), sel_has("a"));
	assert_sel_text(s, "has(a)");
	sel_free(s);

	s = sel_or(sel_and(sel_has("b"), sel_has("c")), sel_or(sel_has("a"), sel_has("d")));
	assert_sel_text(s, "has(a) || has(b) && has(c) || has(d)");
	sel_free(s);

	/* Built and parsed spellings agree. */
	struct sel *built = sel_and(sel_not(sel_has("x")), sel_or(sel_eq("k", "v"), sel_global()));
	struct sel *parsed = parse_ok("(global() || k == 'v') && !has(x)");
	assert_true(sel_equal(built, parsed));
	sel_free(built);
	sel_free(parsed);

	/* A value with both quote kinds cannot round-trip; it prints in double quotes. */
	s = sel_eq("k", "a'b\"c");
	assert_sel_text(s, "k == \"a'b\"c\"");
	sel_free(s);

	sel_free(NULL);
}

static void test_clone_equal(void **state)
{
	static const char *const texts[] = {
		"all()",
		"global()",
		"has(a)",
		"a == \"1\"",
		"a == \"2\"",
		"b == \"1\"",
		"a != \"1\"",
		"a in {\"1\"}",
		"a in {\"1\", \"2\"}",
		"a not in {\"1\"}",
		"a contains \"1\"",
		"a starts with \"1\"",
		"a ends with \"1\"",
		"!has(a)",
		"has(a) && has(b)",
		"has(a) || has(b)",
		"has(a) && has(b) && has(c)",
		"!(has(a) && has(b))",
	};

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		struct sel *a = parse_ok(texts[i]);
		struct sel *c = sel_clone(a);
		assert_true(sel_equal(a, c));
		assert_true(sel_equal(c, a));
		sel_free(a);
		assert_sel_text(c, texts[i]);
		for (size_t j = 0; j < ARRAY_SIZE(texts); j++) {
			struct sel *b = parse_ok(texts[j]);
			assert_int_equal(sel_equal(c, b), i == j);
			sel_free(b);
		}
		sel_free(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_print_constructs), cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_eval_table),	 cmocka_unit_test(test_custom_labels),
		cmocka_unit_test(test_canonical_groups), cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_errors),		 cmocka_unit_test(test_limits),
		cmocka_unit_test(test_from_k8s),	 cmocka_unit_test(test_prefix_keys),
		cmocka_unit_test(test_required_label),	 cmocka_unit_test(test_constructors),
		cmocka_unit_test(test_clone_equal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
