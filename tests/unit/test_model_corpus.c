/*
 * The manifest corpus under tests/data/calico-v3: every document decodes, and
 * prints back to a document that decodes to the same resource; and the corpus
 * uses every field the model has for its kinds that are CRDs (walked from their
 * CRD schemas, which are generated from the field tables), so a field added to
 * the model without a manifest using it fails here.
 */
#include "harness.h"

#include <brindle/core/arena.h>
#include <brindle/core/json.h>
#include <brindle/core/jv.h>
#include <brindle/core/model.h>
#include <brindle/core/model_crd.h>

#include <stdlib.h>
#include <string.h>

static const char *const corpus[] = {
	"tests/data/calico-v3/new-kinds.yaml",
	"tests/data/calico-v3/felixconfiguration.yaml",
	"tests/data/calico-v3/other-kinds.yaml",
};

/*
 * Paths, and for declared ones a key saying which field of which structure the
 * path is: the structure's schema as JSON and the field's name. A structure
 * used in several places (a BGPFilter rule in exportV4 and importV6, the spec
 * in KubeControllersConfiguration's status.runningConfig) is then covered once.
 */
struct paths {
	char **v, **key;
	size_t n, cap;
};

static void paths_add_key(struct paths *p, const char *s, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i], s) == 0)
			return;
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->v = realloc(p->v, p->cap * sizeof(*p->v));
		p->key = realloc(p->key, p->cap * sizeof(*p->key));
		assert_non_null(p->v);
		assert_non_null(p->key);
	}
	p->key[p->n] = key ? strdup(key) : NULL;
	p->v[p->n++] = strdup(s);
}

static void paths_add(struct paths *p, const char *s)
{
	paths_add_key(p, s, NULL);
}

static bool paths_has(const struct paths *p, const char *s)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i], s) == 0)
			return true;
	return false;
}

static void paths_free(struct paths *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i]);
		free(p->key[i]);
	}
	free(p->v);
	free(p->key);
}

/* Every member path of a document ("spec.exportV4[].cidr"), lists as "[]". */
static void doc_paths(const struct jv *v, const char *at, struct paths *out)
{
	char sub[512];
	if (v->type == JV_OBJECT) {
		for (size_t i = 0; i < v->obj.n; i++) {
			test_snprintf(sub, sizeof(sub), "%s%s%s", at, *at ? "." : "",
				      v->obj.members[i].key);
			paths_add(out, sub);
			doc_paths(v->obj.members[i].value, sub, out);
		}
	} else if (v->type == JV_ARRAY) {
		test_snprintf(sub, sizeof(sub), "%s[]", at);
		for (size_t i = 0; i < v->arr.n; i++)
			doc_paths(v->arr.items[i], sub, out);
	}
}

/* Every field path a schema declares under @at; maps (additionalProperties) are leaves. */
static void schema_paths(const struct jv *s, const char *at, struct paths *out)
{
	char sub[512];
	const struct jv *props = jv_get(s, "properties");
	struct strbuf key = STRBUF_INIT;
	sb_init(&key);
	for (size_t i = 0; props && i < props->obj.n; i++) {
		test_snprintf(sub, sizeof(sub), "%s%s%s", at, *at ? "." : "",
			      props->obj.members[i].key);
		sb_reset(&key);
		json_write(&key, s, false);
		sb_addf(&key, "/%s", props->obj.members[i].key);
		paths_add_key(out, sub, key.buf);
		schema_paths(props->obj.members[i].value, sub, out);
	}
	sb_free(&key);
	const struct jv *items = jv_get(s, "items");
	if (items) {
		test_snprintf(sub, sizeof(sub), "%s[]", at);
		schema_paths(items, sub, out);
	}
}

static void test_corpus(void **state)
{
	(void)state;
	struct paths used[KIND_COUNT] = { 0 };
	bool seen[KIND_COUNT] = { false };
	for (size_t f = 0; f < ARRAY_SIZE(corpus); f++) {
		struct strbuf text = STRBUF_INIT;
		sb_init(&text);
		test_read_source_file(corpus[f], &text);
		struct br_object **objs;
		size_t n;
		struct model_errors errs = { 0 };
		if (model_read(corpus[f], text.buf, text.len, NULL, &objs, &n, &errs) < 0) {
			for (size_t i = 0; i < errs.n; i++)
				print_error("%s\n", errs.v[i]);
			fail_msg("%s does not read", corpus[f]);
		}
		for (size_t i = 0; i < n; i++) {
			/* printed and read back: the same resource, printed the same */
			struct strbuf json = STRBUF_INIT, again = STRBUF_INIT;
			sb_init(&json);
			sb_init(&again);
			model_to_json(objs[i], &json);
			struct br_object **back;
			size_t nb;
			assert_int_equal(
				model_read("printed", json.buf, json.len, NULL, &back, &nb, &errs),
				0);
			assert_int_equal(nb, 1);
			assert_true(model_equal(objs[i], back[0]));
			model_to_json(back[0], &again);
			assert_string_equal(json.buf, again.buf);
			model_free_all(back, nb);

			struct arena *a = arena_new();
			struct jv *doc = model_encode(a, objs[i]);
			enum br_kind_id id = objs[i]->kind->id;
			seen[id] = true;
			doc_paths(doc, "", &used[id]);
			arena_free(a);
			sb_free(&json);
			sb_free(&again);
		}
		model_free_all(objs, n);
		sb_free(&text);
	}
	size_t missing = 0;
	for (size_t k = 0; k < KIND_COUNT; k++) {
		if (!seen[k])
			continue;
		struct arena *a = arena_new();
		struct jv *schema = model_crd_schema(a, model_kind((enum br_kind_id)k));
		if (!schema) {
			/* not a CRD (Profile, the Kubernetes kinds): round-tripped only */
			arena_free(a);
			continue;
		}
		struct paths declared = { 0 };
		const struct jv *props = jv_get(schema, "properties");
		const char *const sections[] = { "spec", "status" };
		for (size_t s = 0; s < 2; s++) {
			const struct jv *sec = jv_get(props, sections[s]);
			if (sec)
				schema_paths(sec, sections[s], &declared);
		}
		struct paths covered = { 0 };
		for (size_t i = 0; i < declared.n; i++)
			if (paths_has(&used[k], declared.v[i]))
				paths_add(&covered, declared.key[i]);
		for (size_t i = 0; i < declared.n; i++) {
			/* the `http` rule match is refused, so no manifest can hold it */
			if (strstr(declared.v[i], ".http"))
				continue;
			if (!paths_has(&covered, declared.key[i])) {
				print_error("%s: no manifest in the corpus sets %s\n",
					    model_kind((enum br_kind_id)k)->kind, declared.v[i]);
				missing++;
			}
		}
		paths_free(&declared);
		paths_free(&covered);
		arena_free(a);
	}
	for (size_t k = 0; k < KIND_COUNT; k++)
		paths_free(&used[k]);
	assert_int_equal(missing, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
