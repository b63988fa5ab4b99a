/*
 * The Kubernetes datastore's mapping (kdd_map.h) on objects as the real
 * kube-apiserver returns them (tests/data/kdd/: fetched with `kubectl get
 * --raw` from the test control plane, managedFields and all): Pod →
 * WorkloadEndpoint, Namespace and ServiceAccount → Profiles, Node ↔ Calico
 * Node, and the Kubernetes kinds the model stores as they are; then the
 * cases a real cluster meets (finished and deleting pods, each source of
 * addresses, long names) and bad input, which is refused with the object and
 * the field named.
 */
#include "harness.h"

#include <brindle/core/cni.h>
#include <brindle/core/json.h>
#include <brindle/core/kdd_map.h>

#include <errno.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- helpers ------------------------------------------------------------------------------- */

static struct arena *A;

static int setup(void **state)
{
	(void)state;
	A = arena_new();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	arena_free(A);
	return 0;
}

static struct jv *parse(const char *text)
{
	struct jv *v;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (json_parse(A, text, strlen(text), &v, &err) < 0)
		fail_msg("bad test JSON: %s\n%s", sb_str(&err), text);
	sb_free(&err);
	return v;
}

static struct jv *fixture(const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	test_read_source_file(arena_printf(A, "tests/data/kdd/%s", name), &sb);
	struct jv *v = parse(sb_str(&sb));
	sb_free(&sb);
	return v;
}

static const char *canonical(const struct br_object *o)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	model_to_json(o, &sb);
	const char *s = arena_strdup(A, sb_str(&sb));
	sb_free(&sb);
	return s;
}

static void no_messages(struct model_errors *e, const char *what)
{
	for (size_t i = 0; i < e->n; i++)
		print_error("%s: %s\n", what, e->v[i]);
	assert_int_equal(e->n, 0);
}

/*
 * A pod of the shape the apiserver returns; @meta_extra and @spec_extra are
 * members ending in ',' that come first, so they win over the defaults after.
 */
static struct jv *pod(const char *meta_extra, const char *spec_extra, const char *status)
{
	return parse(arena_printf(
		A,
		"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web-0\","
		"\"namespace\":\"shop\",%s\"uid\":\"u-1\",\"resourceVersion\":\"77\","
		"\"labels\":{\"app\":\"web\"}},\"spec\":{%s\"nodeName\":\"node-1\","
		"\"serviceAccountName\":\"default\",\"containers\":[{\"name\":\"c\",\"image\":"
		"\"i\","
		"\"ports\":[{\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"}]}]},"
		"\"status\":%s}",
		meta_extra, spec_extra, status));
}

static struct br_workloadendpoint *map_pod(const struct jv *p, enum kdd_pod_state want)
{
	struct model_errors errs = { 0 };
	struct br_workloadendpoint *w = NULL;
	enum kdd_pod_state st;
	int r = kdd_pod_to_wep(p, &st, &w, &errs);
	no_messages(&errs, "pod");
	assert_int_equal(r, 0);
	assert_int_equal(st, want);
	if (want == KDD_POD_SKIP)
		assert_null(w);
	else
		assert_non_null(w);
	return w;
}

/* The one error mapping @p gives. */
static const char *pod_error(const struct jv *p)
{
	struct model_errors errs = { 0 };
	struct br_workloadendpoint *w = (void *)1;
	enum kdd_pod_state st = KDD_POD_ACTIVE;
	assert_int_equal(kdd_pod_to_wep(p, &st, &w, &errs), -EINVAL);
	assert_ptr_equal(w, (void *)1); /* untouched */
	assert_true(errs.n >= 1);
	const char *e = arena_strdup(A, errs.v[0]);
	model_errors_clear(&errs);
	return e;
}

static void nets_are(const struct br_workloadendpoint *w, size_t n, ...)
{
	va_list ap;
	va_start(ap, n);
	assert_int_equal(w->spec.n_ip_networks, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(w->spec.ip_networks[i], va_arg(ap, const char *));
	va_end(ap);
}

/* --- WorkloadEndpoint ← Pod -------------------------------------------------------------- */

static void test_pod_from_apiserver(void **state)
{
	(void)state;
	struct br_workloadendpoint *w = map_pod(fixture("pod.json"), KDD_POD_ACTIVE);
	assert_string_equal(
		canonical(&w->o),
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"WorkloadEndpoint\","
		"\"metadata\":{\"name\":\"node--1-k8s-web--0-eth0\",\"namespace\":\"shop\","
		"\"uid\":\"9cbdf715-2e19-4bc4-a002-8e3198fe12e8\",\"resourceVersion\":\"245\","
		"\"creationTimestamp\":\"2026-11-25T19:35:33Z\",\"labels\":{\"app\":\"web\","
		"\"projectcalico.org/namespace\":\"shop\",\"projectcalico.org/"
		"orchestrator\":\"k8s\","
		"\"projectcalico.org/serviceaccount\":\"api\",\"tier\":\"front\"}},"
		"\"spec\":{\"orchestrator\":\"k8s\",\"node\":\"node-1\",\"pod\":\"web-0\","
		"\"endpoint\":\"eth0\",\"serviceAccountName\":\"api\","
		"\"ipNetworks\":[\"10.244.1.5/32\",\"fd00:10:244:1::5/128\"],"
		"\"profiles\":[\"kns.shop\",\"ksa.shop.api\"],\"interfaceName\":"
		"\"calia4fc3c48bd8\","
		"\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8080},"
		"{\"protocol\":\"TCP\",\"port\":8443,\"hostPort\":443},"
		"{\"name\":\"sctp-port\",\"protocol\":\"SCTP\",\"port\":7777},"
		"{\"name\":\"init-port\",\"protocol\":\"UDP\",\"port\":9000}]}}");
	assert_int_equal(w->o.revision, 245);
	/* The host side is the CNI plugin's name for the pod. */
	char iface[16];
	cni_host_veth_name("shop", "web-0", iface);
	assert_string_equal(w->spec.interface_name, iface);
	/* Calico's own examples: the name of a pod's endpoint, and its host interface. */
	assert_string_equal(kdd_wep_name(A, "ip-10-1", "web-1"), "ip--10--1-k8s-web--1-eth0");
	cni_host_veth_name("namespace", "podname", iface);
	assert_string_equal(iface, "cali82111e10a96");
	/* What the etcd path gives for the same document is the same endpoint. */
	struct model_errors errs = { 0 };
	struct br_object *again = model_decode(model_encode(A, &w->o), false, &errs);
	no_messages(&errs, "decode");
	assert_true(model_equal(again, &w->o));
	model_free(again);
	model_free(&w->o);
}

/* An endpoint's name read back: the node and pod of kdd_wep_name, nothing else. */
static void test_wep_name_parse(void **state)
{
	(void)state;
	const char *node, *pod;
	assert_true(kdd_wep_name_parse(A, "ip--10--1-k8s-web--1-eth0", &node, &pod));
	assert_string_equal(node, "ip-10-1");
	assert_string_equal(pod, "web-1");
	assert_true(kdd_wep_name_parse(A, "n1-k8s-web.a-eth0", &node, &pod));
	assert_string_equal(node, "n1");
	assert_string_equal(pod, "web.a");
	/* Whatever kdd_wep_name spells parses back, dashes at the ends of the parts too. */
	const char *names[][2] = { { "a", "b" },	  { "a--b", "c---d" }, { "k8s", "eth0" },
				   { "a-", "-b" },	  { "-", "-" },	       { "x-k8s", "k8s-y" },
				   { "n-k8s-p", "eth0-" } };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *w = kdd_wep_name(A, names[i][0], names[i][1]);
		assert_true(kdd_wep_name_parse(A, w, &node, &pod));
		assert_string_equal(node, names[i][0]);
		assert_string_equal(pod, names[i][1]);
	}
	const char *bad[] = { "",
			      "web",
			      "n1-k8s-web",
			      "n1-k8s-web-eth1",
			      "n1-cni-web-eth0",
			      "-k8s-web-eth0",
			      "n1-k8s--eth0",
			      "n1-k8s-web-eth0-",
			      "n1-k8s-web-eth0-x",
			      "n1-k8s-web-eth0--" };
	node = pod = "unchanged";
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(kdd_wep_name_parse(A, bad[i], &node, &pod));
		assert_string_equal(node, "unchanged");
	}
}

static void test_pod_not_endpoints(void **state)
{
	(void)state;
	map_pod(fixture("pod-hostnet.json"), KDD_POD_SKIP);
	map_pod(fixture("pod-pending.json"), KDD_POD_SKIP); /* no nodeName yet */
	map_pod(pod("", "\"hostNetwork\":true,", "{\"podIP\":\"10.0.0.5\"}"), KDD_POD_SKIP);
	map_pod(pod("", "\"nodeName\":\"\",", "{}"), KDD_POD_SKIP);
}

static void test_pod_list_item(void **state)
{
	(void)state;
	/* Items of a list response carry no kind or apiVersion. */
	const struct jv *items = jv_get(fixture("pods-list.json"), "items");
	assert_int_equal(items->arr.n, 3);
	size_t endpoints = 0;
	for (size_t i = 0; i < items->arr.n; i++) {
		assert_null(jv_get(items->arr.items[i], "kind"));
		struct model_errors errs = { 0 };
		struct br_workloadendpoint *w = NULL;
		enum kdd_pod_state st;
		assert_int_equal(kdd_pod_to_wep(items->arr.items[i], &st, &w, &errs), 0);
		no_messages(&errs, "list item");
		endpoints += w != NULL;
		model_free(w ? &w->o : NULL);
	}
	assert_int_equal(endpoints, 1); /* web-0; hostnet and pending are not endpoints */
}

static void test_pod_finished(void **state)
{
	(void)state;
	const char *ips = "\"podIP\":\"10.244.1.5\",\"podIPs\":[{\"ip\":\"10.244.1.5\"}]";
	const char *phases[] = { "Succeeded", "Failed", "Completed" };
	for (size_t i = 0; i < 3; i++) {
		struct br_workloadendpoint *w = map_pod(
			pod("", "", arena_printf(A, "{\"phase\":\"%s\",%s}", phases[i], ips)),
			KDD_POD_FINISHED);
		nets_are(w, 0);
		assert_string_equal(w->spec.interface_name, "calia4fc3c48bd8");
		model_free(&w->o);
	}
	/* Deleting, in its grace period: still addressed (the apiserver's own shape). */
	struct br_workloadendpoint *w = map_pod(fixture("pod-deleting.json"), KDD_POD_ACTIVE);
	nets_are(w, 2, "10.244.1.5/32", "fd00:10:244:1::5/128");
	model_free(&w->o);
	/* Deleting, and the CNI plugin released the address: finished. */
	const char *released = "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\","
			       "\"annotations\":{\"cni.projectcalico.org/podIP\":\"\","
			       "\"cni.projectcalico.org/podIPs\":\"\"},";
	w = map_pod(pod(released, "", arena_printf(A, "{\"phase\":\"Running\",%s}", ips)),
		    KDD_POD_FINISHED);
	nets_are(w, 0);
	model_free(&w->o);
	/* The same annotation without a deletion is only a pod without an address yet. */
	w = map_pod(pod("\"annotations\":{\"cni.projectcalico.org/podIP\":\"\"},", "",
			"{\"phase\":\"Pending\"}"),
		    KDD_POD_ACTIVE);
	nets_are(w, 0);
	model_free(&w->o);
}

static void test_pod_address_sources(void **state)
{
	(void)state;
	struct br_workloadendpoint *w;
	/* status.podIPs first, then status.podIP. */
	w = map_pod(pod("", "",
			"{\"podIP\":\"10.0.0.9\",\"podIPs\":[{\"ip\":\"10.0.0.5\"},"
			"{\"ip\":\"fd00::5\"}]}"),
		    KDD_POD_ACTIVE);
	nets_are(w, 2, "10.0.0.5/32", "fd00::5/128");
	model_free(&w->o);
	w = map_pod(pod("", "", "{\"podIP\":\"10.0.0.9\",\"podIPs\":[]}"), KDD_POD_ACTIVE);
	nets_are(w, 1, "10.0.0.9/32");
	model_free(&w->o);
	/* Then the CNI plugin's annotations: podIPs (a comma list), then podIP. */
	const char *anns = "\"annotations\":{\"cni.projectcalico.org/podIPs\":"
			   "\"10.0.0.7/32,fd00::7/128\",\"cni.projectcalico.org/podIP\":"
			   "\"10.0.0.8/32\",\"cni.projectcalico.org/containerID\":\"abc123\"},";
	w = map_pod(pod(anns, "", "{\"phase\":\"Pending\"}"), KDD_POD_ACTIVE);
	nets_are(w, 2, "10.0.0.7/32", "fd00::7/128");
	assert_string_equal(w->spec.container_id, "abc123");
	model_free(&w->o);
	w = map_pod(
		pod("\"annotations\":{\"cni.projectcalico.org/podIP\":\"10.0.0.8\"},", "", "{}"),
		KDD_POD_ACTIVE);
	nets_are(w, 1, "10.0.0.8/32");
	assert_null(w->spec.container_id);
	model_free(&w->o);
	/* None: an endpoint without addresses (yet). */
	w = map_pod(pod("", "", "{\"phase\":\"Pending\"}"), KDD_POD_ACTIVE);
	nets_are(w, 0);
	model_free(&w->o);
}

static void test_pod_service_account(void **state)
{
	(void)state;
	/* A name too long for a label value keeps its profile but not its label (Calico's rule). */
	char long_sa[80];
	memset(long_sa, 'a', 70);
	long_sa[70] = '\0';
	struct br_workloadendpoint *w =
		map_pod(pod("", arena_printf(A, "\"serviceAccountName\":\"%s\",", long_sa), "{}"),
			KDD_POD_ACTIVE);
	assert_int_equal(w->spec.n_profiles, 2);
	assert_string_equal(w->spec.profiles[1], arena_printf(A, "ksa.shop.%s", long_sa));
	assert_null(labels_get(&w->o.meta.labels, "projectcalico.org/serviceaccount"));
	model_free(&w->o);
	/* The deprecated spec.serviceAccount stands in; with neither, only the namespace's. */
	struct jv *p = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"
			     "\"spec\":{\"nodeName\":\"n\",\"serviceAccount\":\"old\"}}");
	w = map_pod(p, KDD_POD_ACTIVE);
	assert_string_equal(w->spec.profiles[1], "ksa.ns.old");
	assert_string_equal(labels_get(&w->o.meta.labels, "projectcalico.org/serviceaccount"),
			    "old");
	model_free(&w->o);
	w = map_pod(parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"
			  "\"spec\":{\"nodeName\":\"n\"}}"),
		    KDD_POD_ACTIVE);
	assert_int_equal(w->spec.n_profiles, 1);
	assert_string_equal(w->spec.profiles[0], "kns.ns");
	assert_null(w->spec.service_account_name);
	model_free(&w->o);
	/* A pod's own label cannot claim another namespace. */
	w = map_pod(pod("", "", "{}"), KDD_POD_ACTIVE);
	model_free(&w->o);
	w = map_pod(parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"labels\":"
			  "{\"projectcalico.org/namespace\":\"kube-system\"}},"
			  "\"spec\":{\"nodeName\":\"n\"}}"),
		    KDD_POD_ACTIVE);
	assert_string_equal(labels_get(&w->o.meta.labels, "projectcalico.org/namespace"), "ns");
	model_free(&w->o);
}

static void test_pod_ports(void **state)
{
	(void)state;
	const char *spec = "\"containers\":[{\"name\":\"a\",\"ports\":["
			   "{\"containerPort\":53,\"name\":\"dns\",\"protocol\":\"UDP\"},"
			   "{\"containerPort\":80}," /* neither: left out */
			   "{\"containerPort\":81,\"hostPort\":8081,\"hostIP\":\"10.0.0.1\"},"
			   "{\"containerPort\":82,\"name\":\"odd\",\"protocol\":\"XTP\"}]}],";
	struct br_workloadendpoint *w = map_pod(pod("", spec, "{}"), KDD_POD_ACTIVE);
	assert_int_equal(w->spec.n_ports, 2);
	assert_string_equal(w->spec.ports[0].name, "dns");
	assert_string_equal(w->spec.ports[0].protocol, "UDP");
	assert_int_equal(w->spec.ports[0].port, 53);
	assert_null(w->spec.ports[1].name);
	assert_string_equal(w->spec.ports[1].protocol, "TCP");
	assert_int_equal(w->spec.ports[1].host_port, 8081);
	assert_string_equal(w->spec.ports[1].host_ip, "10.0.0.1");
	model_free(&w->o);
}

static void test_pod_bad_input(void **state)
{
	(void)state;
	assert_string_equal(pod_error(pod("\"labels\":{\"app\":7},", "", "{}")),
			    "Pod shop/web-0: metadata.labels.app: must be a string, not a number");
	assert_string_equal(pod_error(pod("", "", "{\"podIPs\":[{\"ip\":\"10.0.0.300\"}]}")),
			    "Pod shop/web-0: status.podIPs[0].ip: \"10.0.0.300\" is not an IP "
			    "address");
	assert_string_equal(
		pod_error(pod("\"annotations\":{\"cni.projectcalico.org/podIPs\":\"10.0.0.1,x\"},",
			      "", "{}")),
		"Pod shop/web-0: metadata.annotations.cni.projectcalico.org/podIPs: \"x\" is not "
		"an IP address");
	assert_string_equal(
		pod_error(pod("", "\"initContainers\":[{\"ports\":[{\"containerPort\":70000}]}],",
			      "{}")),
		"Pod shop/web-0: spec.initContainers[0].ports[0].containerPort: 70000 is out of "
		"range (1-65535)");
	assert_string_equal(
		pod_error(pod("", "\"initContainers\":[{\"ports\":[{\"containerPort\":\"80\"}]}],",
			      "{}")),
		"Pod shop/web-0: spec.initContainers[0].ports[0].containerPort: must be a number, "
		"not a string");
	assert_string_equal(pod_error(pod("", "\"hostNetwork\":\"yes\",", "{}")),
			    "Pod shop/web-0: spec.hostNetwork: must be a boolean, not a string");
	assert_string_equal(pod_error(parse("{\"metadata\":{\"namespace\":\"x\"}}")),
			    "Pod: metadata.name: required");
	assert_string_equal(pod_error(parse("[1]")), "Pod: must be an object, not a list");
	assert_string_equal(pod_error(parse("{\"kind\":\"Service\",\"metadata\":{}}")),
			    "Pod: kind: expected Pod");
	/* What only the model refuses names the resource it was building. */
	assert_string_equal(pod_error(pod("\"labels\":{\"bad key!\":\"x\"},", "", "{}")),
			    "Pod shop/web-0: as WorkloadEndpoint node--1-k8s-web--0-eth0: "
			    "metadata.labels: key \"bad key!\": name part must consist of "
			    "letters, digits, '-', '_' and '.', and start and end with a letter "
			    "or digit");
	/* A port with neither a name nor a host port is refused by the model (not made here). */
	struct model_errors errs = { 0 };
	struct br_object *o = model_decode(
		parse("{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"WorkloadEndpoint\","
		      "\"metadata\":{\"name\":\"w\",\"namespace\":\"n\"},\"spec\":{"
		      "\"interfaceName\":\"cali1\",\"ports\":[{\"port\":80}]}}"),
		false, &errs);
	assert_null(o);
	assert_string_equal(errs.v[0], "spec.ports[0].name: required (unless hostPort is set)");
	model_errors_clear(&errs);
}

/* --- Profiles ← Namespace, ServiceAccount -------------------------------------------------- */

static void test_namespace_profile(void **state)
{
	(void)state;
	struct model_errors errs = { 0 }, warns = { 0 };
	struct br_profile *p = NULL;
	assert_int_equal(kdd_namespace_to_profile(fixture("namespace.json"), &p, &errs, &warns), 0);
	no_messages(&errs, "errors");
	no_messages(&warns, "warnings");
	assert_string_equal(
		canonical(&p->o),
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Profile\",\"metadata\":{"
		"\"name\":\"kns.shop\",\"uid\":\"fec1abde-cf6f-4b5e-86b6-95286d9f30b1\","
		"\"resourceVersion\":\"232/\",\"creationTimestamp\":\"2026-11-25T19:35:32Z\"},"
		"\"spec\":{\"ingress\":[{\"action\":\"Allow\"}],\"egress\":[{\"action\":\"Allow\"}]"
		","
		"\"labelsToApply\":{\"pcns.env\":\"prod\",\"pcns.kubernetes.io/metadata.name\":"
		"\"shop\",\"pcns.projectcalico.org/name\":\"shop\",\"pcns.team\":\"blue\"}}}");
	assert_int_equal(p->o.revision, 232);
	model_free(&p->o);
	/*
	 * A label whose key is too long once prefixed is left out with a warning; and
	 * felix's default kubernetes.io/metadata.name is there even when the label is not.
	 */
	char key[64];
	memset(key, 'k', 62);
	key[62] = '\0';
	struct jv *ns = parse(arena_printf(
		A, "{\"metadata\":{\"name\":\"old\",\"labels\":{\"%s\":\"v\",\"a\":\"b\"}}}", key));
	assert_int_equal(kdd_namespace_to_profile(ns, &p, &errs, &warns), 0);
	no_messages(&errs, "errors");
	assert_int_equal(warns.n, 1);
	assert_non_null(strstr(warns.v[0], arena_printf(A,
							"Namespace old: metadata.labels.%s: "
							"not applied to pods as pcns.%s",
							key, key)));
	model_errors_clear(&warns);
	assert_int_equal(p->spec.labels_to_apply.n, 3);
	assert_string_equal(labels_get(&p->spec.labels_to_apply, "pcns.a"), "b");
	assert_string_equal(
		labels_get(&p->spec.labels_to_apply, "pcns.kubernetes.io/metadata.name"), "old");
	model_free(&p->o);
	/* Bad input. */
	p = (void *)1;
	assert_int_equal(kdd_namespace_to_profile(parse("{\"metadata\":{\"name\":\"x\","
							"\"labels\":{\"a\":null,\"b\":[]}}}"),
						  &p, &errs, &warns),
			 -EINVAL);
	assert_ptr_equal(p, (void *)1);
	assert_int_equal(errs.n, 2);
	assert_string_equal(errs.v[0], "Namespace x: metadata.labels.a: must be a string, not a "
				       "null");
	assert_string_equal(errs.v[1], "Namespace x: metadata.labels.b: must be a string, not a "
				       "list");
	model_errors_clear(&errs);
}

static void test_serviceaccount_profile(void **state)
{
	(void)state;
	struct model_errors errs = { 0 }, warns = { 0 };
	struct br_profile *p = NULL;
	assert_int_equal(
		kdd_serviceaccount_to_profile(fixture("serviceaccount.json"), &p, &errs, &warns),
		0);
	no_messages(&errs, "errors");
	no_messages(&warns, "warnings");
	assert_string_equal(canonical(&p->o),
			    "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Profile\","
			    "\"metadata\":{\"name\":\"ksa.shop.api\",\"uid\":"
			    "\"2f0c55c1-af7e-49e7-9bb1-aa4843577269\",\"resourceVersion\":\"/236\","
			    "\"creationTimestamp\":\"2026-11-25T19:35:33Z\"},\"spec\":{"
			    "\"labelsToApply\":{\"pcsa.projectcalico.org/name\":\"api\","
			    "\"pcsa.role\":\"backend\"}}}");
	model_free(&p->o);
	/* A name that is no label value: the profile, without its name label. */
	char name[100];
	memset(name, 's', 90);
	name[90] = '\0';
	assert_int_equal(kdd_serviceaccount_to_profile(
				 parse(arena_printf(A,
						    "{\"metadata\":{\"name\":\"%s\",\"namespace\":"
						    "\"shop\"}}",
						    name)),
				 &p, &errs, &warns),
			 0);
	no_messages(&errs, "errors");
	assert_int_equal(warns.n, 1);
	model_errors_clear(&warns);
	assert_int_equal(p->spec.labels_to_apply.n, 0);
	assert_string_equal(p->o.meta.name, arena_printf(A, "ksa.shop.%s", name));
	model_free(&p->o);
	/* A ServiceAccount names its namespace. */
	assert_int_equal(kdd_serviceaccount_to_profile(parse("{\"metadata\":{\"name\":\"a\"}}"), &p,
						       &errs, &warns),
			 -EINVAL);
	assert_string_equal(errs.v[0], "ServiceAccount: metadata.namespace: required");
	model_errors_clear(&errs);
}

/* --- Node ↔ core v1 Node ------------------------------------------------------------------- */

static struct br_node *map_node(const struct jv *n, struct model_errors *warns)
{
	struct model_errors errs = { 0 };
	struct br_node *out = NULL;
	assert_int_equal(kdd_node_to_calico(n, &out, &errs, warns), 0);
	no_messages(&errs, "node");
	return out;
}

static void test_node_from_apiserver(void **state)
{
	(void)state;
	struct model_errors warns = { 0 };
	struct br_node *n = map_node(fixture("node.json"), &warns);
	/* The fixture's RouteReflectorClusterID is "not-an-ip": ignored, with a message. */
	assert_int_equal(warns.n, 1);
	assert_string_equal(warns.v[0],
			    "Node node-1: metadata.annotations.projectcalico.org/"
			    "RouteReflectorClusterID: \"not-an-ip\" ignored: "
			    "spec.bgp.routeReflectorClusterID: \"not-an-ip\" is not a valid IPv4 "
			    "address");
	model_errors_clear(&warns);
	assert_string_equal(
		canonical(&n->o),
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Node\",\"metadata\":{\"name\":"
		"\"node-1\",\"uid\":\"26d39762-2005-4f48-8def-30bfcd3f7340\",\"resourceVersion\":"
		"\"247\",\"creationTimestamp\":\"2026-11-25T19:35:32Z\",\"labels\":{\"rack\":"
		"\"r1\"}},\"spec\":{\"bgp\":{\"ipv4Address\":\"10.0.0.11/24\",\"asNumber\":64512},"
		"\"ipv4VXLANTunnelAddr\":\"10.244.1.0\",\"addresses\":[{\"address\":"
		"\"10.0.0.11/24\",\"type\":\"CalicoNodeIP\"},{\"address\":\"10.0.0.11\",\"type\":"
		"\"InternalIP\"},{\"address\":\"203.0.113.7\",\"type\":\"ExternalIP\"}],"
		"\"orchRefs\":[{\"nodeName\":\"node-1\",\"orchestrator\":\"k8s\"}]},\"status\":{"
		"\"podCIDRs\":[\"10.244.1.0/24\"]}}");
	model_free(&n->o);
}

static void test_node_annotations_round_trip(void **state)
{
	(void)state;
	const char *anns =
		"\"projectcalico.org/IPv4Address\":\"192.0.2.1/24\","
		"\"projectcalico.org/IPv6Address\":\"2001:db8::1/64\","
		"\"projectcalico.org/IPv4IPIPTunnelAddr\":\"10.244.0.1\","
		"\"projectcalico.org/ASNumber\":\"1.10\","
		"\"projectcalico.org/RouteReflectorClusterID\":\"224.0.0.1\","
		"\"projectcalico.org/IPv4VXLANTunnelAddr\":\"10.244.0.2\","
		"\"projectcalico.org/VXLANTunnelMACAddr\":\"66:aa:bb:cc:dd:ee\","
		"\"projectcalico.org/IPv6VXLANTunnelAddr\":\"fd00::2\","
		"\"projectcalico.org/VXLANTunnelMACAddrV6\":\"66:aa:bb:cc:dd:ef\","
		"\"projectcalico.org/IPv4WireguardInterfaceAddr\":\"10.244.0.3\","
		"\"projectcalico.org/IPv6WireguardInterfaceAddr\":\"fd00::3\","
		"\"projectcalico.org/WireguardPublicKey\":\"key=\","
		"\"projectcalico.org/labels\":\"{\\\"calico-only\\\":\\\"yes\\\",\\\"zone\\\":"
		"\\\"calico\\\"}\"";
	struct jv *k8s = parse(arena_printf(A,
					    "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"zone\":"
					    "\"k8s\"},\"annotations\":{%s}}}",
					    anns));
	struct model_errors warns = { 0 };
	struct br_node *n = map_node(k8s, &warns);
	no_messages(&warns, "warnings");
	assert_string_equal(n->spec.bgp->ipv6_address, "2001:db8::1/64");
	assert_int_equal(n->spec.bgp->as_number.v, 65536 + 10);
	assert_string_equal(n->spec.vxlan_tunnel_mac_addr_v6, "66:aa:bb:cc:dd:ef");
	assert_string_equal(n->spec.wireguard->interface_ipv6_address, "fd00::3");
	assert_string_equal(n->status.wireguard_public_key, "key=");
	/* Calico-only labels, overlaid by the node's own. */
	assert_string_equal(labels_get(&n->o.meta.labels, "calico-only"), "yes");
	assert_string_equal(labels_get(&n->o.meta.labels, "zone"), "k8s");

	/* Back: every spec annotation with its value (the AS number plain). */
	struct jv *back = kdd_node_annotations(A, n);
	assert_int_equal(back->obj.n, 11);
	assert_string_equal(jv_as_string(jv_get(back, "projectcalico.org/ASNumber")), "65546");
	assert_string_equal(jv_as_string(jv_get(back, "projectcalico.org/VXLANTunnelMACAddrV6")),
			    "66:aa:bb:cc:dd:ef");
	/* ... which maps to the same spec again. */
	struct jv *meta = jv_object(A), *doc = jv_object(A);
	jv_add(A, meta, "name", jv_string(A, "n1"));
	jv_add(A, meta, "annotations", back);
	jv_add(A, doc, "metadata", meta);
	struct br_node *again = map_node(doc, &warns);
	no_messages(&warns, "warnings");
	struct jv *s1 = jv_get(model_encode(A, &n->o), "spec");
	struct jv *s2 = jv_get(model_encode(A, &again->o), "spec");
	assert_true(jv_equal(s1, s2));
	model_free(&again->o);

	/* A node without any: every annotation null, so a merge patch clears them. */
	struct br_node *bare = map_node(parse("{\"metadata\":{\"name\":\"n2\"}}"), &warns);
	no_messages(&warns, "warnings");
	struct jv *clear = kdd_node_annotations(A, bare);
	assert_int_equal(clear->obj.n, 11);
	for (size_t i = 0; i < clear->obj.n; i++)
		assert_int_equal(clear->obj.members[i].value->type, JV_NULL);
	assert_null(bare->spec.bgp);
	assert_int_equal(bare->spec.n_orch_refs, 1);
	model_free(&bare->o);
	model_free(&n->o);
}

static void test_node_bad_annotations(void **state)
{
	(void)state;
	struct model_errors warns = { 0 };
	struct br_node *n = map_node(parse("{\"metadata\":{\"name\":\"n3\",\"annotations\":{"
					   "\"projectcalico.org/IPv4Address\":\"10.0.0.300/24\","
					   "\"projectcalico.org/ASNumber\":\"-4\","
					   "\"projectcalico.org/VXLANTunnelMACAddr\":\"zz\","
					   "\"projectcalico.org/IPv4VXLANTunnelAddr\":\"10.1.1.1\","
					   "\"projectcalico.org/labels\":\"{nope\"}},"
					   "\"spec\":{\"podCIDRs\":[\"10.0.0.0/33\"]}}"),
				     &warns);
	/* Each bad value is named and dropped; the good one stays. */
	assert_int_equal(warns.n, 5);
	const char *want[] = { "metadata.annotations.projectcalico.org/labels: ignored",
			       "projectcalico.org/IPv4Address: \"10.0.0.300/24\" ignored",
			       "projectcalico.org/ASNumber: \"-4\" ignored",
			       "projectcalico.org/VXLANTunnelMACAddr: \"zz\" ignored",
			       "spec.podCIDRs[0]: ignored" };
	for (size_t i = 0; i < 5; i++) {
		if (!strstr(warns.v[i], want[i]))
			fail_msg("warning %zu: %s", i, warns.v[i]);
		assert_true(str_has_prefix(warns.v[i], "Node n3: "));
	}
	model_errors_clear(&warns);
	assert_null(n->spec.bgp);
	assert_string_equal(n->spec.ipv4_vxlan_tunnel_addr, "10.1.1.1");
	model_free(&n->o);
	/* Its labels are a Node's own: a bad one fails the node. */
	struct model_errors errs = { 0 };
	struct br_node *out = NULL;
	assert_int_equal(kdd_node_to_calico(parse("{\"metadata\":{\"name\":\"n4\",\"labels\":"
						  "{\"a\":true}}}"),
					    &out, &errs, &warns),
			 -EINVAL);
	assert_string_equal(errs.v[0],
			    "Node n4: metadata.labels.a: must be a string, not a boolean");
	model_errors_clear(&errs);
}

/* --- Kubernetes kinds the model stores as they are ---------------------------------------------
 */

static struct br_object *decode_ok(enum br_kind_id id, const struct jv *doc)
{
	struct model_errors errs = { 0 };
	struct br_object *o = NULL;
	assert_int_equal(kdd_decode(model_kind(id), doc, &o, &errs), 0);
	no_messages(&errs, "decode");
	return o;
}

/*
 * The object the user applied (kubectl keeps it in an annotation) read the etcd
 * way: the apiserver's defaults are the model's, so the specs agree.
 */
static void same_spec_as_applied(const struct br_object *o)
{
	const char *applied = labels_get(&o->meta.annotations,
					 "kubectl.kubernetes.io/last-applied-configuration");
	assert_non_null(applied);
	struct model_errors errs = { 0 };
	struct br_object *etcd = model_decode(parse(applied), false, &errs);
	no_messages(&errs, "applied");
	struct jv *x = model_encode(A, o), *y = model_encode(A, etcd);
	/* Only a NetworkPolicy: the apiserver adds a Service's IPs, a Namespace's finalizer. */
	if (o->kind->id == KIND_K8S_NETWORKPOLICY) {
		struct strbuf sx = STRBUF_INIT, sy = STRBUF_INIT;
		sb_init(&sx);
		sb_init(&sy);
		json_write(&sx, jv_get(x, "spec"), false);
		json_write(&sy, jv_get(y, "spec"), false);
		assert_string_equal(sb_str(&sx), sb_str(&sy));
		sb_free(&sx);
		sb_free(&sy);
	}
	assert_true(labels_equal(&o->meta.labels, &etcd->meta.labels));
	model_free(etcd);
}

static void test_decode_kubernetes_kinds(void **state)
{
	(void)state;
	struct jv *np = fixture("networkpolicy.json");
	/* The strict decoder refuses an API object as it comes... */
	struct model_errors errs = { 0 };
	assert_null(model_decode(np, false, &errs));
	assert_string_equal(errs.v[0], "metadata.managedFields: unknown field");
	model_errors_clear(&errs);
	/* ... and takes it once pruned. */
	struct br_object *o = decode_ok(KIND_K8S_NETWORKPOLICY, np);
	const struct br_k8s_networkpolicy *p = (const void *)o;
	assert_int_equal(o->revision, 243);
	assert_int_equal(p->spec.n_ingress, 1);
	assert_int_equal(p->spec.ingress[0].n_ports, 2);
	assert_int_equal(p->spec.ingress[0].ports[1].end_port.v, 8100);
	assert_string_equal(p->spec.ingress[0].peers[1].ip_block->except[0], "10.1.2.0/24");
	same_spec_as_applied(o);
	model_free(o);

	o = decode_ok(KIND_NAMESPACE, fixture("namespace.json"));
	assert_string_equal(((struct br_namespace *)o)->status.phase, "Active");
	same_spec_as_applied(o);
	model_free(o);

	o = decode_ok(KIND_SERVICE, fixture("service.json"));
	const struct br_service *s = (const void *)o;
	assert_string_equal(s->spec.external_traffic_policy, "Local");
	assert_string_equal(s->spec.cluster_ip, "10.96.225.26");
	assert_int_equal(s->spec.ports[0].node_port, 31819);
	same_spec_as_applied(o);
	model_free(o);

	/* An item of a list: no kind, no apiVersion, ownerReferences and generateName. */
	struct jv *slice = fixture("endpointslice.json");
	assert_null(jv_get(slice, "kind"));
	o = decode_ok(KIND_ENDPOINTSLICE, slice);
	const struct br_endpointslice *es = (const void *)o;
	assert_string_equal(es->spec.address_type, "IPv4");
	assert_string_equal(es->spec.endpoints[0].node_name, "node-1");
	assert_true(es->spec.endpoints[0].conditions.ready.v);
	assert_string_equal(labels_get(&o->meta.labels, K8S_SERVICE_NAME_LABEL), "web");
	model_free(o);

	/* A different kind, or a value the model refuses, is an error naming the object. */
	assert_int_equal(kdd_decode(model_kind(KIND_SERVICE), fixture("namespace.json"), &o, &errs),
			 -EINVAL);
	assert_string_equal(errs.v[0], "Service: kind: expected Service");
	model_errors_clear(&errs);
	assert_int_equal(kdd_decode(model_kind(KIND_K8S_NETWORKPOLICY),
				    parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\","
					  "\"managedFields\":[]},\"spec\":{\"podSelector\":{},"
					  "\"ingress\":[{\"ports\":[{\"port\":0}]}]}}"),
				    &o, &errs),
			 -EINVAL);
	assert_string_equal(errs.v[0], "NetworkPolicy n/p: spec.ingress[0].ports[0].port: 0 is "
				       "out of range (1-65535)");
	model_errors_clear(&errs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pod_from_apiserver, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wep_name_parse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pod_not_endpoints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pod_list_item, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pod_finished, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pod_address_sources, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pod_service_account, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pod_ports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pod_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespace_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_serviceaccount_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_from_apiserver, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_annotations_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_bad_annotations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_decode_kubernetes_kinds, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
