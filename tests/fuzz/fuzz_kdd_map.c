/*
 * The Kubernetes datastore's mapping on arbitrary JSON (what an apiserver,
 * or something posing as one, sends). Every mapping of kdd_map.h runs on the
 * same document. Beyond not crashing: a refusal says why and names the
 * object; what maps is a valid resource (it decodes again, unchanged, the way
 * the etcd path reads it); a mapped pod's state matches its addresses; and a
 * mapped Node's annotations map back to the same spec; an endpoint name
 * that parses spells itself again; the CNI plugin's reading of Calico's IPAM
 * annotations refuses with a reason or gives addresses or pools, not both.
 */
#include <brindle/core/json.h>
#include <brindle/core/kdd_map.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(bool ok, const char *what)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_kdd_map: %s\n", what);
	abort();
}

/* After a mapping: refusals carry messages naming the object; results decode again. */
static void check(int r, const struct br_object *o, struct model_errors *errs,
		  struct model_errors *warns, const char *what)
{
	if (r < 0) {
		must(r == -EINVAL, "an error other than -EINVAL");
		must(errs->n > 0, "a refusal without a message");
		must(o == NULL, "a refusal with an object");
		for (size_t i = 0; i < errs->n; i++)
			must(strncmp(errs->v[i], what, strlen(what)) == 0,
			     "an error that does not name the object");
	} else {
		must(errs->n == 0, "messages in errs for a mapped object");
	}
	for (size_t i = 0; warns && i < warns->n; i++)
		must(strncmp(warns->v[i], what, strlen(what)) == 0,
		     "a warning that does not name the object");
	if (o) {
		struct arena *a = arena_new();
		struct model_errors again = { 0 };
		struct br_object *d = model_decode_kind(o->kind, model_encode(a, o), &again);
		must(d != NULL, "a mapped object the model refuses to decode");
		must(model_equal(o, d), "a mapped object that changes when decoded again");
		model_free(d);
		model_errors_clear(&again);
		arena_free(a);
	}
	model_errors_clear(errs);
	if (warns)
		model_errors_clear(warns);
}

static void node_round_trip(const struct br_node *n)
{
	struct arena *a = arena_new();
	struct jv *doc = jv_object(a), *meta = jv_object(a);
	jv_add(a, meta, "name", jv_string(a, n->o.meta.name));
	jv_add(a, meta, "annotations", kdd_node_annotations(a, n));
	jv_add(a, doc, "metadata", meta);
	struct model_errors errs = { 0 }, warns = { 0 };
	struct br_node *back = NULL;
	must(kdd_node_to_calico(doc, &back, &errs, &warns) == 0, "a node's annotations refused");
	must(warns.n == 0, "a node's own annotations warned about");
	const struct jv *x = jv_get(jv_get(model_encode(a, &n->o), "spec"), "bgp");
	const struct jv *y = jv_get(jv_get(model_encode(a, &back->o), "spec"), "bgp");
	must(x && y ? jv_equal(x, y) : x == y, "a node's BGP spec changed through its annotations");
	model_free(&back->o);
	model_errors_clear(&errs);
	model_errors_clear(&warns);
	arena_free(a);
}

/* The input as an endpoint name: what parses spells the name again. */
static void wep_name_round_trip(struct arena *a, const uint8_t *data, size_t size)
{
	char *s = arena_alloc(a, size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	const char *node, *pod;
	if (kdd_wep_name_parse(a, s, &node, &pod))
		must(streq(kdd_wep_name(a, node, pod), s),
		     "an endpoint name that parses differently");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	struct arena *a = arena_new();
	wep_name_round_trip(a, data, size);
	struct jv *doc;
	if (json_parse(a, (const char *)data, size, &doc, NULL) < 0) {
		arena_free(a);
		return 0;
	}
	struct model_errors errs = { 0 }, warns = { 0 };

	enum kdd_pod_state st = KDD_POD_SKIP;
	struct br_workloadendpoint *w = NULL;
	int r = kdd_pod_to_wep(doc, &st, &w, &errs);
	if (r == 0) {
		must((st == KDD_POD_SKIP) == (w == NULL), "a pod's state and object disagree");
		must(!w || st != KDD_POD_FINISHED || w->spec.n_ip_networks == 0,
		     "a finished pod with addresses");
		must(!w || w->spec.n_profiles >= 1, "an endpoint without its namespace's profile");
		const char *node, *pod;
		must(!w || (kdd_wep_name_parse(a, w->o.meta.name, &node, &pod) &&
			    streq(node, w->spec.node) && streq(pod, w->spec.pod)),
		     "an endpoint's name that does not read back as its node and pod");
	}
	check(r, w ? &w->o : NULL, &errs, NULL, "Pod");
	model_free(w ? &w->o : NULL);

	struct br_profile *p = NULL;
	r = kdd_namespace_to_profile(doc, &p, &errs, &warns);
	check(r, p ? &p->o : NULL, &errs, &warns, "Namespace");
	model_free(p ? &p->o : NULL);
	p = NULL;
	r = kdd_serviceaccount_to_profile(doc, &p, &errs, &warns);
	check(r, p ? &p->o : NULL, &errs, &warns, "ServiceAccount");
	model_free(p ? &p->o : NULL);

	struct br_node *n = NULL;
	r = kdd_node_to_calico(doc, &n, &errs, &warns);
	check(r, n ? &n->o : NULL, &errs, &warns, "Node");
	if (n)
		node_round_trip(n);
	model_free(n ? &n->o : NULL);

	/* The same document as a pod and as its namespace for the CNI plugin's IPAM annotations. */
	struct kdd_pod_ipam want;
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	r = kdd_pod_ipam(a, doc, doc, &want, &why);
	must(r == 0 || r == -EINVAL, "an IPAM annotation error other than -EINVAL");
	must(r == 0 || why.len > 0, "an IPAM annotation refused without a reason");
	must(r < 0 || !(want.n_ips && want.n_pools), "fixed addresses and pools at once");
	must(r < 0 || want.n_ips <= KDD_POD_MAX_IPS, "more addresses than the limit");
	for (size_t i = 0; r == 0 && i < want.n_pools; i++)
		must(want.pools[i] != NULL, "a pool without a name");
	sb_free(&why);

	const enum br_kind_id kinds[] = { KIND_K8S_NETWORKPOLICY, KIND_NAMESPACE, KIND_SERVICE,
					  KIND_ENDPOINTSLICE };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct br_object *o = NULL;
		const struct br_kind *k = model_kind(kinds[i]);
		r = kdd_decode(k, doc, &o, &errs);
		check(r, o, &errs, NULL, k->kind);
		model_free(o);
	}
	arena_free(a);
	return 0;
}
