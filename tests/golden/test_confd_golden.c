/*
 * Golden files of confd's rendered BIRD configuration. Each scenario,
 * tests/golden/confd/<name>.yaml, is a YAML stream: first a "golden:"
 * document (which nodes to render, and the passwords the scenario's
 * environment, files and mounted secrets hold), then the datastore's
 * resources (block affinities included). For every node named, the BGP view
 * is built, rendered with bgp-templates/, and compared with
 * tests/golden/confd/<name>/<node>/; the view's problems, if any, are in
 * problems.txt there. Every golden set must pass `bird -p -c`.
 *
 * BRINDLE_UPDATE_GOLDEN=1 rewrites the files instead of comparing; review
 * the diff.
 */
#include "harness.h"

#include "bgp_view.h"
#include "output.h"
#include "render.h"

#include <brindle/core/yaml.h>
#include <brindle/sys/strbuf_file.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define GOLDEN_DIR "tests/golden/confd"

static bool updating(void)
{
	const char *u = getenv("BRINDLE_UPDATE_GOLDEN");
	return u && *u && strcmp(u, "0") != 0;
}

struct scenario {
	struct arena *a;
	struct jv *golden;
	struct br_object **objs;
	size_t n;
};

/* A password source that only knows what the scenario says. */
static int fake_password(void *ctx, const struct br_bgp_password *p, struct arena *a,
			 const char **out, struct strbuf *err)
{
	const struct jv *g = ctx;
	const struct jv *map = NULL;
	char key[512] = "";
	if (p->env) {
		map = jv_get(g, "env");
		snprintf(key, sizeof(key), "%s", p->env);
	} else if (p->file) {
		map = jv_get(g, "files");
		snprintf(key, sizeof(key), "%s", p->file);
	} else if (p->secret_key_ref) {
		map = jv_get(g, "secrets");
		snprintf(key, sizeof(key), "%s/%s", p->secret_key_ref->name,
			 p->secret_key_ref->key);
	}
	const struct jv *v = map && map->type == JV_OBJECT ? jv_get(map, key) : NULL;
	const char *s = v ? jv_as_string(v) : NULL;
	if (!s) {
		sb_adds(err, "not in the scenario");
		return -ENOENT;
	}
	*out = arena_strdup(a, s);
	return 0;
}

static void load_scenario(const char *path, struct scenario *sc)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&text);
	sb_init(&err);
	if (sb_read_file(&text, path) < 0)
		fail_msg("cannot read %s", path);
	sc->a = arena_new();
	struct jv **docs;
	size_t ndocs;
	if (yaml_parse_all(sc->a, text.buf, text.len, &docs, &ndocs, &err) < 0)
		fail_msg("%s: %s", path, sb_str(&err));
	if (ndocs < 1 || !docs[0] || !(sc->golden = jv_get(docs[0], "golden")))
		fail_msg("%s: the first document must be \"golden: {...}\"", path);
	sc->objs = xcalloc(ndocs, sizeof(*sc->objs));
	for (size_t i = 1; i < ndocs; i++) {
		if (!docs[i])
			continue;
		struct model_errors errs = { 0 };
		struct br_object *o = model_decode(docs[i], true, &errs);
		if (!o)
			fail_msg("%s: document %zu: %s", path, i + 1, errs.v[0]);
		model_errors_clear(&errs);
		sc->objs[sc->n++] = o;
	}
	sb_free(&text);
	sb_free(&err);
}

static void free_scenario(struct scenario *sc)
{
	model_free_all(sc->objs, sc->n);
	arena_free(sc->a);
}

#define COLLECT(kind_id, type, arr, cnt)                                \
	do {                                                            \
		arr = xcalloc(sc->n + 1, sizeof(*arr));                 \
		for (size_t i = 0; i < sc->n; i++)                      \
			if (sc->objs[i]->kind->id == kind_id)           \
				arr[cnt++] = (const type *)sc->objs[i]; \
	} while (0)

static struct bgp_input input_of(struct scenario *sc, const char *node)
{
	struct bgp_input in = { .node_name = node };
	const struct br_node **nodes;
	const struct br_bgpconfig **configs;
	const struct br_bgppeer **peers;
	const struct br_ippool **pools;
	const struct br_blockaffinity **affs;
	const struct br_service **svcs;
	const struct br_endpointslice **slices;
	const struct br_bgpfilter **filters;
	COLLECT(KIND_NODE, struct br_node, nodes, in.n_nodes);
	COLLECT(KIND_BGPCONFIGURATION, struct br_bgpconfig, configs, in.n_configs);
	COLLECT(KIND_BGPPEER, struct br_bgppeer, peers, in.n_peers);
	COLLECT(KIND_IPPOOL, struct br_ippool, pools, in.n_pools);
	COLLECT(KIND_BLOCKAFFINITY, struct br_blockaffinity, affs, in.n_affinities);
	COLLECT(KIND_SERVICE, struct br_service, svcs, in.n_services);
	COLLECT(KIND_ENDPOINTSLICE, struct br_endpointslice, slices, in.n_slices);
	COLLECT(KIND_BGPFILTER, struct br_bgpfilter, filters, in.n_filters);
	in.nodes = nodes;
	in.configs = configs;
	in.peers = peers;
	in.pools = pools;
	in.affinities = affs;
	in.services = svcs;
	in.slices = slices;
	in.filters = filters;
	in.password = fake_password;
	in.password_ctx = sc->golden;
	return in;
}

static void free_input(struct bgp_input *in)
{
	free((void *)in->nodes);
	free((void *)in->configs);
	free((void *)in->peers);
	free((void *)in->pools);
	free((void *)in->affinities);
	free((void *)in->services);
	free((void *)in->slices);
	free((void *)in->filters);
}

/* Compare (or write) one golden file; returns false on a difference. */
static bool golden_file(const char *dir, const char *name, const char *text, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (updating()) {
		FILE *f = fopen(path, "w");
		if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
			fail_msg("cannot write %s", path);
		return true;
	}
	struct strbuf want = STRBUF_INIT;
	sb_init(&want);
	bool same = sb_read_file(&want, path) == 0 && want.len == len &&
		    memcmp(want.buf, text, len) == 0;
	if (!same) {
		/* What confd rendered goes to the build tree (the source tree stays clean). */
		char got[4096];
		const char *build = getenv("BRINDLE_BUILD_DIR");
		if (build) {
			snprintf(got, sizeof(got), "%s/golden-got", build);
			mkdir(got, 0755);
			const char *rel = strstr(dir, GOLDEN_DIR "/");
			char flat[1024];
			test_snprintf(flat, sizeof(flat), "%s/%s",
				      rel ? rel + strlen(GOLDEN_DIR) + 1 : dir, name);
			for (char *c = flat; *c; c++)
				if (*c == '/')
					*c = '_';
			snprintf(got, sizeof(got), "%s/golden-got/%s", build, flat);
		} else {
			test_snprintf(got, sizeof(got), "%s.got", path);
		}
		FILE *f = fopen(got, "w");
		if (f) {
			fwrite(text, 1, len, f);
			fclose(f);
		}
		print_error("%s differs from what confd renders (see %s; diff -u %s %s)\n", path,
			    got, path, got);
	}
	sb_free(&want);
	return same;
}

static bool render_node(struct scenario *sc, const struct render_templates *t, const char *dir,
			const char *node)
{
	struct bgp_input in = input_of(sc, node);
	struct bgp_view *v;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (bgp_view_build(&in, &v, &err) < 0)
		fail_msg("%s: %s", dir, sb_str(&err));
	struct arena *a = arena_new();
	struct render_output out;
	if (render_config(t, bgp_view_data(v, a), &out, &err) < 0)
		fail_msg("%s: %s", dir, sb_str(&err));
	mkdir(dir, 0755);
	bool ok = true;
	for (size_t i = 0; i < out.n; i++)
		ok &= golden_file(dir, out.files[i].name, out.files[i].text.buf,
				  out.files[i].text.len);
	struct strbuf problems = STRBUF_INIT;
	sb_init(&problems);
	for (size_t i = 0; i < v->n_problems; i++)
		sb_addf(&problems, "%s\n", v->problems[i]);
	char ppath[4096];
	test_snprintf(ppath, sizeof(ppath), "%s/problems.txt", dir);
	if (problems.len)
		ok &= golden_file(dir, "problems.txt", problems.buf, problems.len);
	else if (updating())
		unlink(ppath);
	else if (access(ppath, F_OK) == 0) {
		print_error("%s: expected problems, the view has none\n", ppath);
		ok = false;
	}
	/* The golden set itself must be a configuration BIRD accepts. */
	char main_path[4096];
	test_snprintf(main_path, sizeof(main_path), "%s/%s", dir, RENDER_MAIN_FILE);
	sb_reset(&err);
	if (bird_check("bird", main_path, 10000, &err) < 0) {
		print_error("bird -p -c %s: %s\n", main_path, sb_str(&err));
		ok = false;
	}
	sb_free(&problems);
	render_output_clear(&out);
	arena_free(a);
	bgp_view_free(v);
	sb_free(&err);
	free_input(&in);
	return ok;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_golden(void **state)
{
	struct render_templates *t;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (templates_load(test_source_path("bgp-templates"), &t, &err) < 0)
		fail_msg("%s", sb_str(&err));
	char top[4096];
	snprintf(top, sizeof(top), "%s", test_source_path(GOLDEN_DIR));
	DIR *d = opendir(top);
	assert_non_null(d);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (str_has_suffix(de->d_name, ".yaml")) {
			GROW(names, cap, n + 1);
			names[n++] = xstrndup(de->d_name, strlen(de->d_name) - 5);
		}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_name);
	int failures = 0;
	size_t renders = 0;
	for (size_t i = 0; i < n; i++) {
		char path[4096], dir[4096];
		test_snprintf(path, sizeof(path), "%s/%s.yaml", top, names[i]);
		test_snprintf(dir, sizeof(dir), "%s/%s", top, names[i]);
		mkdir(dir, 0755);
		struct scenario sc = { 0 };
		load_scenario(path, &sc);
		const struct jv *nodes = jv_get(sc.golden, "nodes");
		if (!nodes || nodes->type != JV_ARRAY || !nodes->arr.n)
			fail_msg("%s: golden.nodes must list the nodes to render", path);
		for (size_t k = 0; k < nodes->arr.n; k++) {
			const char *node = jv_as_string(nodes->arr.items[k]);
			char ndir[4096];
			test_snprintf(ndir, sizeof(ndir), "%s/%s", dir, node);
			if (!render_node(&sc, t, ndir, node)) {
				print_error("scenario %s, node %s: FAILED\n", names[i], node);
				failures++;
			}
			renders++;
		}
		free_scenario(&sc);
		free(names[i]);
	}
	free(names);
	render_templates_free(t);
	sb_free(&err);
	print_message("%zu scenarios, %zu nodes rendered%s\n", n, renders,
		      updating() ? " (golden files updated)" : "");
	assert_int_equal(failures, 0);
	assert_true(n >= 15); /* what the issue asks for */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
