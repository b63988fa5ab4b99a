/*
 * Selector parser fuzz target. Besides not crashing, checks the canonical
 * form's contract: it parses back to an equal tree that prints identically,
 * and it evaluates like the original (also under negation and cloning).
 */
#include <brindle/core/sel.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct br_kv kvs[] = {
	{ "a", "1" },	 { "app", "web" },
	{ "b", "x\"y" }, { "projectcalico.org/namespace", "default" },
	{ "tier", "" },
};

static void check(bool ok, const char *what, const char *text)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_selector: %s for %s\n", what, text);
	abort();
}

static void check_eval(const struct sel *s, const struct sel *back, const char *canon)
{
	struct br_labels full = { kvs, ARRAY_SIZE(kvs) }, some = { kvs, 2 }, none = { NULL, 0 };
	const struct br_labels *maps[] = { &full, &some, &none };
	struct sel *neg = sel_not(sel_clone(s));

	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		struct sel_labels l = sel_labels_of(maps[i]);
		bool r = sel_eval(s, &l);
		check(sel_eval(back, &l) == r, "reparsed selector evaluates differently", canon);
		check(sel_eval(neg, &l) == !r, "negation does not invert", canon);
	}
	sel_free(neg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct strbuf err = STRBUF_INIT, again = STRBUF_INIT;
	struct sel *s, *back, *copy;
	char *canon;

	memcpy(text, data, size);
	text[size] = '\0';
	sb_init(&err);
	if (sel_parse(text, &s, &err) < 0) {
		check(strncmp(sb_str(&err), "position ", 9) == 0, "malformed error message", text);
		goto out;
	}
	canon = sel_canonical(s);
	sb_reset(&err);
	if (sel_parse(canon, &back, &err) < 0) {
		fprintf(stderr, "canonical form does not parse: %s\n", sb_str(&err));
		check(false, "unparseable canonical form", canon);
	}
	sb_init(&again);
	sel_print(back, &again);
	check(strcmp(canon, sb_str(&again)) == 0, "canonical form not stable", canon);
	check(sel_equal(s, back), "reparsed tree differs", canon);
	copy = sel_clone(s);
	check(sel_equal(s, copy), "clone differs", canon);
	check_eval(s, back, canon);

	sel_free(copy);
	sel_free(back);
	sel_free(s);
	sb_free(&again);
	free(canon);
out:
	sb_free(&err);
	free(text);
	return 0;
}
