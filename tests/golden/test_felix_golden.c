/*
 * Golden rule sets of felix's policy core. Each scenario,
 * tests/golden/felix/<name>.yaml, is a YAML stream: first a "golden:"
 * document (the node to render for, and FELIX_* environment settings), then
 * the datastore's resources. The desired filter and nat tables and ip sets
 * are written like iptables-save / ipset save would print them and compared
 * with tests/golden/felix/<name>/{filter,nat,sets}.txt; policies that cannot
 * be rendered are listed in errors.txt. Every rule must be in the canonical
 * text the kernel reads back (parse, then format, gives the same string).
 *
 * BRINDLE_UPDATE_GOLDEN=1 rewrites the files instead of comparing; review
 * the diff.
 */
#include "harness.h"

#include "calc/policy.h"

#include <brindle/sys/ipt.h>
#include <brindle/core/yaml.h>
#include <brindle/sys/strbuf_file.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define GOLDEN_DIR "tests/golden/felix"

static bool updating(void)
{
	const char *u = getenv("BRINDLE_UPDATE_GOLDEN");
	return u && *u && strcmp(u, "0") != 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Compare (or write) one golden file; returns false on a difference. */
static bool golden_file(const char *dir, const char *name, const struct strbuf *text)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (updating()) {
		if (!text->len) {
			unlink(path);
			return true;
		}
		FILE *f = fopen(path, "w");
		if (!f || fwrite(text->buf, 1, text->len, f) != text->len || fclose(f) != 0)
			fail_msg("cannot write %s", path);
		return true;
	}
	struct strbuf want = STRBUF_INIT;
	sb_init(&want);
	int r = sb_read_file(&want, path);
	bool same = (r < 0 && !text->len) ||
		    (r == 0 && want.len == text->len && memcmp(want.buf, text->buf, text->len) == 0);
	if (!same) {
		char got[4096];
		snprintf(got, sizeof(got), "%s/%s.got", dir, name);
		const char *build = getenv("BRINDLE_BUILD_DIR");
		if (build) {
			char flat[1024];
			snprintf(flat, sizeof(flat), "%s_%s", strrchr(dir, '/') + 1, name);
			snprintf(got, sizeof(got), "%s/golden-got", build);
			mkdir(got, 0755);
			snprintf(got, sizeof(got), "%s/golden-got/felix_%s", build, flat);
		}
		FILE *f = fopen(got, "w");
		if (f) {
			fwrite(text->buf, 1, text->len, f);
			fclose(f);
		}
		print_error("%s differs from what felix renders (diff -u %s %s)\n", path, path, got);
	}
	sb_free(&want);
	return same;
}

/* Set names as the kernel would resolve them (any name exists). */
static struct ipt_set_table sets;

/* The family the scenario renders (golden.family: 4 or 6). */
static int family = AF_INET;

/* A rule must read back from the kernel as written. */
static bool canonical(const char *chain, const char *rule)
{
	void *e;
	size_t len;
	struct strbuf err = STRBUF_INIT, back = STRBUF_INIT;
	sb_init(&err);
	sb_init(&back);
	bool ok = ipt_rule_parse(family, rule, &sets.sets, &e, &len, &err) == 0;
	if (!ok) {
		print_error("%s: %s: does not parse: %s\n", chain, rule, sb_str(&err));
	} else {
		ipt_rule_format(family, e, NULL, &sets.sets, &back);
		ok = streq(sb_str(&back), rule);
		if (!ok)
			print_error("%s: rendered  %s\n%s: reads back %s\n", chain, rule, chain,
				    sb_str(&back));
		free(e);
	}
	sb_free(&err);
	sb_free(&back);
	return ok;
}

static bool dump_table(const struct ptable *t, const char *name, struct strbuf *out)
{
	bool ok = true;
	sb_addf(out, "*%s\n", name);
	size_t n = t->chains.n, k = 0;
	const char **names = xcalloc(n + 1, sizeof(*names));
	for (struct hmap_iter it = hmap_iter(&t->chains); hmap_next(&it);)
		names[k++] = it.key;
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++)
		sb_addf(out, ":%s - [0:0]\n", names[i]);
	for (size_t h = 0; h < t->n_hooks; h++) {
		const struct phook *hk = &t->hooks[h];
		for (uint32_t i = 0; i < hk->n_insert; i++) {
			sb_addf(out, "-I %s %u %s\n", hk->chain, i + 1, hk->insert[i]);
			ok &= canonical(hk->chain, hk->insert[i]);
		}
		for (uint32_t i = 0; i < hk->n_append; i++) {
			sb_addf(out, "-A %s %s\n", hk->chain, hk->append[i]);
			ok &= canonical(hk->chain, hk->append[i]);
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct pchain *c = hmap_get(&t->chains, names[i]);
		for (uint32_t r = 0; r < c->n; r++) {
			sb_addf(out, "-A %s %s\n", c->name, c->rules[r]);
			ok &= canonical(c->name, c->rules[r]);
		}
	}
	sb_adds(out, "COMMIT\n");
	free(names);
	return ok;
}

static void dump_sets(const struct pol_desired *d, struct strbuf *out)
{
	size_t n = d->sets.n, k = 0;
	const char **names = xcalloc(n + 1, sizeof(*names));
	for (struct hmap_iter it = hmap_iter(&d->sets); hmap_next(&it);)
		names[k++] = it.key;
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		const struct pset *s = hmap_get(&d->sets, names[i]);
		sb_addf(out, "create %s %s family %s\n", s->info.name, ips_type_name(s->info.type),
			s->info.family == AF_INET6 ? "inet6" : "inet");
		size_t m = s->members.n, j = 0;
		const char **mem = xcalloc(m + 1, sizeof(*mem));
		for (struct hmap_iter it = hmap_iter(&s->members); hmap_next(&it);)
			mem[j++] = it.key;
		qsort(mem, m, sizeof(*mem), cmp_str);
		for (size_t q = 0; q < m; q++)
			sb_addf(out, "add %s %s\n", s->info.name, mem[q]);
		free(mem);
	}
	free(names);
}

static bool run_scenario(const char *path, const char *dir)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&text);
	sb_init(&err);
	if (sb_read_file(&text, path) < 0)
		fail_msg("cannot read %s", path);
	struct arena *a = arena_new();
	struct jv **docs;
	size_t ndocs;
	if (yaml_parse_all(a, text.buf, text.len, &docs, &ndocs, &err) < 0)
		fail_msg("%s: %s", path, sb_str(&err));
	const struct jv *golden = ndocs && docs[0] ? jv_get(docs[0], "golden") : NULL;
	if (!golden)
		fail_msg("%s: the first document must be \"golden: {...}\"", path);
	const char *node = jv_as_string(jv_get(golden, "node"));
	if (!node)
		fail_msg("%s: golden.node names the node to render for", path);
	char *env[32] = { 0 };
	const struct jv *ev = jv_get(golden, "env");
	for (size_t i = 0; ev && ev->type == JV_ARRAY && i < ev->arr.n && i < 31; i++)
		env[i] = (char *)jv_as_string(ev->arr.items[i]);
	int64_t fam = 4;
	if (jv_get(golden, "family") && !jv_as_int64(jv_get(golden, "family"), &fam))
		fail_msg("%s: golden.family is 4 or 6", path);
	family = fam == 6 ? AF_INET6 : AF_INET;
	struct pol *p = pol_new(node, family);
	struct felix_config cfg;
	struct model_errors cerrs = { 0 };
	felix_config_compute(&cfg, NULL, NULL, env, &cerrs);
	if (cerrs.n)
		fail_msg("%s: %s", path, cerrs.v[0]);
	pol_set_config(p, &cfg);
	for (size_t i = 1; i < ndocs; i++) {
		if (!docs[i])
			continue;
		struct model_errors errs = { 0 };
		struct br_object *o = model_decode(docs[i], true, &errs);
		if (!o)
			fail_msg("%s: document %zu: %s", path, i + 1, errs.v[0]);
		model_errors_clear(&errs);
		struct ds_update u = { .kind = o->kind,
				       .scope = o->kind->namespaced ? o->meta.namespace : NULL,
				       .name = o->meta.name,
				       .obj = o };
		pol_update(p, &u);
		model_free(o);
	}
	pol_flush(p);
	struct pol_desired *d = pol_desired(p);
	mkdir(dir, 0755);
	bool ok = true;
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	ok &= dump_table(&d->tables[PT_FILTER], "filter", &out);
	ok &= golden_file(dir, "filter.txt", &out);
	sb_reset(&out);
	ok &= dump_table(&d->tables[PT_NAT], "nat", &out);
	ok &= golden_file(dir, "nat.txt", &out);
	sb_reset(&out);
	dump_sets(d, &out);
	ok &= golden_file(dir, "sets.txt", &out);
	sb_reset(&out);
	for (size_t i = 0; i < pol_n_errors(p); i++)
		sb_addf(&out, "%s\n", pol_error(p, i));
	ok &= golden_file(dir, "errors.txt", &out);
	sb_free(&out);
	pol_free(p);
	model_errors_clear(&cerrs);
	arena_free(a);
	sb_free(&text);
	sb_free(&err);
	return ok;
}

static void test_golden(void **state)
{
	ipt_set_table_init(&sets);
	char top[4096];
	snprintf(top, sizeof(top), "%s", test_source_path(GOLDEN_DIR));
	DIR *dd = opendir(top);
	assert_non_null(dd);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(dd)))
		if (str_has_suffix(de->d_name, ".yaml")) {
			GROW(names, cap, n + 1);
			names[n++] = xstrndup(de->d_name, strlen(de->d_name) - 5);
		}
	closedir(dd);
	qsort(names, n, sizeof(*names), cmp_str);
	int failures = 0;
	for (size_t i = 0; i < n; i++) {
		char path[4096], dir[4096];
		test_snprintf(path, sizeof(path), "%s/%s.yaml", top, names[i]);
		test_snprintf(dir, sizeof(dir), "%s/%s", top, names[i]);
		if (!run_scenario(path, dir)) {
			print_error("scenario %s: FAILED\n", names[i]);
			failures++;
		}
		free(names[i]);
	}
	free(names);
	ipt_set_table_free(&sets);
	print_message("%zu scenarios%s\n", n, updating() ? " (golden files updated)" : "");
	assert_int_equal(failures, 0);
	assert_true(n >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
