/*
 * Kubernetes API objects to Brindle's resources (include/brindle/core/kdd_map.h).
 * Each mapping reads the API object with its own type checks (errors carry
 * the API object's field paths), writes a Brindle document and hands it to
 * the model's decoder, whose errors are then prefixed with the object and
 * the resource they were found in. Pure.
 */
#include <brindle/core/cni.h>
#include <brindle/core/json.h>
#include <brindle/core/kdd_map.h>
#include <brindle/core/net.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALICO_V3    "projectcalico.org/v3"
#define ANN_CNI	     "cni.projectcalico.org/"
#define ANN_NODE     "projectcalico.org/"
#define LABEL_NS     "projectcalico.org/namespace"
#define LABEL_ORCH   "projectcalico.org/orchestrator"
#define LABEL_SA     "projectcalico.org/serviceaccount"
#define LABEL_NAME   "projectcalico.org/name"
#define K8S_NS_LABEL "kubernetes.io/metadata.name"

/* --- reading API objects -------------------------------------------------------------- */

/* One mapping: a scratch arena for the document it builds, and where its messages go. */
struct kmap {
	struct arena *a;
	struct model_errors *errs;
	struct model_errors *warns;
	const char *what; /* "Pod shop/web-0" */
	size_t n_errs;	  /* errs->n at the start */
};

static void kmap_init(struct kmap *m, struct model_errors *errs, struct model_errors *warns)
{
	m->a = arena_new();
	m->errs = errs;
	m->warns = warns;
	m->what = "object";
	m->n_errs = errs->n;
}

static bool kmap_failed(const struct kmap *m)
{
	return m->errs->n != m->n_errs;
}

static void vmsg(struct model_errors *e, const struct kmap *m, const char *path, const char *fmt,
		 va_list ap) printf_like(4, 0);
static void vmsg(struct model_errors *e, const struct kmap *m, const char *path, const char *fmt,
		 va_list ap)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sb_vaddf(&sb, fmt, ap);
	if (path && *path)
		model_errors_add(e, "%s: %s: %s", m->what, path, sb_str(&sb));
	else
		model_errors_add(e, "%s: %s", m->what, sb_str(&sb));
	sb_free(&sb);
}

static void kerr(struct kmap *m, const char *path, const char *fmt, ...) printf_like(3, 4);
static void kerr(struct kmap *m, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(m->errs, m, path, fmt, ap);
	va_end(ap);
}

static void kwarn(struct kmap *m, const char *path, const char *fmt, ...) printf_like(3, 4);
static void kwarn(struct kmap *m, const char *path, const char *fmt, ...)
{
	if (!m->warns)
		return;
	va_list ap;
	va_start(ap, fmt);
	vmsg(m->warns, m, path, fmt, ap);
	va_end(ap);
}

static const char *path_of(struct kmap *m, const char *parent, const char *key)
{
	return *parent ? arena_printf(m->a, "%s.%s", parent, key) : key;
}

static bool is_null(const struct jv *v)
{
	return !v || v->type == JV_NULL;
}

/* A member that must be of @type when present; NULL when absent, null or of another type. */
static const struct jv *get_typed(struct kmap *m, const struct jv *obj, const char *parent,
				  const char *key, enum jv_type type)
{
	const struct jv *v = obj ? jv_get(obj, key) : NULL;
	if (is_null(v))
		return NULL;
	if (v->type != type) {
		const char *want = jv_type_name(type);
		kerr(m, path_of(m, parent, key), "must be a%s %s, not a %s",
		     strchr("aeiou", want[0]) ? "n" : "", want, jv_type_name(v->type));
		return NULL;
	}
	return v;
}

static const struct jv *get_obj(struct kmap *m, const struct jv *obj, const char *parent,
				const char *key)
{
	return get_typed(m, obj, parent, key, JV_OBJECT);
}

static const struct jv *get_arr(struct kmap *m, const struct jv *obj, const char *parent,
				const char *key)
{
	return get_typed(m, obj, parent, key, JV_ARRAY);
}

/* A string member; "" when absent or null. */
static const char *get_str(struct kmap *m, const struct jv *obj, const char *parent,
			   const char *key)
{
	const struct jv *v = get_typed(m, obj, parent, key, JV_STRING);
	return v ? arena_strndup(m->a, v->s.text, v->s.len) : "";
}

static bool get_bool(struct kmap *m, const struct jv *obj, const char *parent, const char *key)
{
	const struct jv *v = get_typed(m, obj, parent, key, JV_BOOL);
	bool b = false;
	return v && jv_as_bool(v, &b) && b;
}

/* An integer member within [min, max]; 0 when absent. */
static int64_t get_int(struct kmap *m, const struct jv *obj, const char *parent, const char *key,
		       int64_t min, int64_t max)
{
	const struct jv *v = get_typed(m, obj, parent, key, JV_NUMBER);
	int64_t i = 0;
	if (!v)
		return 0;
	if (!jv_as_int64(v, &i)) {
		kerr(m, path_of(m, parent, key), "%.*s is not an integer", (int)v->s.len,
		     v->s.text);
		return 0;
	}
	if (i < min || i > max) {
		kerr(m, path_of(m, parent, key),
		     "%" PRId64 " is out of range (%" PRId64 "-%" PRId64 ")", i, min, max);
		return 0;
	}
	return i;
}

/* A map of strings (labels, annotations) into @out; an error for any other value. */
static void get_string_map(struct kmap *m, const struct jv *obj, const char *parent,
			   const char *key, struct br_labels *out)
{
	const struct jv *v = get_obj(m, obj, parent, key);
	const char *path = path_of(m, parent, key);
	for (size_t i = 0; v && i < v->obj.n; i++) {
		const struct jv *val = v->obj.members[i].value;
		if (val->type != JV_STRING) {
			kerr(m, path_of(m, path, v->obj.members[i].key),
			     "must be a string, not a %s", jv_type_name(val->type));
			continue;
		}
		labels_set(m->a, out, v->obj.members[i].key,
			   arena_strndup(m->a, val->s.text, val->s.len));
	}
}

/* A string-valued annotation; NULL when absent (so "" set explicitly can be told apart). */
static const char *annotation(struct kmap *m, const struct jv *meta, const char *key)
{
	const struct jv *anns = meta ? jv_get(meta, "annotations") : NULL;
	const struct jv *v = anns && anns->type == JV_OBJECT ? jv_get(anns, key) : NULL;
	if (is_null(v))
		return NULL;
	if (v->type != JV_STRING) {
		kerr(m, arena_printf(m->a, "metadata.annotations.%s", key),
		     "must be a string, not a %s", jv_type_name(v->type));
		return NULL;
	}
	return arena_strndup(m->a, v->s.text, v->s.len);
}

/* The object's metadata, name and namespace; sets m->what to "<Kind> <ns>/<name>". */
static const struct jv *read_meta(struct kmap *m, const struct jv *doc, const char *kind,
				  bool namespaced, const char **name, const char **ns)
{
	m->what = kind;
	if (!doc || doc->type != JV_OBJECT) {
		kerr(m, NULL, "must be an object, not a %s",
		     doc ? jv_type_name(doc->type) : "none");
		return NULL;
	}
	const struct jv *kv = jv_get(doc, "kind");
	if (!is_null(kv) && (kv->type != JV_STRING || !streq(jv_as_string(kv), kind))) {
		kerr(m, "kind", "expected %s", kind);
		return NULL;
	}
	const struct jv *meta = get_obj(m, doc, "", "metadata");
	*name = get_str(m, meta, "metadata", "name");
	*ns = namespaced ? get_str(m, meta, "metadata", "namespace") : "";
	if (kmap_failed(m))
		return NULL;
	if (!**name || (namespaced && !**ns)) {
		kerr(m, **name ? "metadata.namespace" : "metadata.name", "required");
		return NULL;
	}
	m->what = namespaced ? arena_printf(m->a, "%s %s/%s", kind, *ns, *name)
			     : arena_printf(m->a, "%s %s", kind, *name);
	return meta;
}

/*
 * uid, resourceVersion, creationTimestamp of @meta into the document's
 * metadata @out; the resourceVersion between @rv_before and @rv_after.
 */
static void copy_identity(struct kmap *m, const struct jv *meta, struct jv *out,
			  const char *rv_before, const char *rv_after)
{
	static const char *const keys[] = { "uid", "resourceVersion", "creationTimestamp" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *v = get_str(m, meta, "metadata", keys[i]);
		if (!*v)
			continue;
		if (i == 1)
			v = arena_printf(m->a, "%s%s%s", rv_before, v, rv_after);
		jv_add(m->a, out, keys[i], jv_string(m->a, v));
	}
}

/* A resourceVersion as the datastore revision: etcd's, when it is a plain number. */
static int64_t revision_of(const struct jv *doc)
{
	const struct jv *meta = doc && doc->type == JV_OBJECT ? jv_get(doc, "metadata") : NULL;
	const char *rv = meta && meta->type == JV_OBJECT
				 ? jv_as_string(jv_get(meta, "resourceVersion"))
				 : NULL;
	if (!rv || !*rv || *rv < '0' || *rv > '9')
		return 0;
	char *end;
	errno = 0;
	long long v = strtoll(rv, &end, 10);
	return *end || errno ? 0 : (int64_t)v;
}

static struct jv *labels_doc(struct arena *a, const struct br_labels *l)
{
	struct jv *o = jv_object(a);
	for (size_t i = 0; i < l->n; i++)
		jv_add(a, o, l->v[i].key, jv_string(a, l->v[i].value));
	return o;
}

static struct jv *new_doc(struct kmap *m, const char *kind, struct jv **meta, struct jv **spec)
{
	struct jv *doc = jv_object(m->a);
	jv_add(m->a, doc, "apiVersion", jv_string(m->a, CALICO_V3));
	jv_add(m->a, doc, "kind", jv_string(m->a, kind));
	*meta = jv_object(m->a);
	*spec = jv_object(m->a);
	jv_add(m->a, doc, "metadata", *meta);
	jv_add(m->a, doc, "spec", *spec);
	return doc;
}

/* The model's decoding of what we built; its errors name the resource too. */
static struct br_object *decode_built(struct kmap *m, enum br_kind_id id, const struct jv *doc,
				      const char *name, int64_t revision)
{
	struct model_errors errs = { 0 };
	const struct br_kind *k = model_kind(id);
	struct br_object *o = model_decode_kind(k, doc, &errs);
	for (size_t i = 0; i < errs.n; i++)
		kerr(m, NULL, "as %s %s: %s", k->kind, name, errs.v[i]);
	model_errors_clear(&errs);
	if (o)
		o->revision = revision;
	return o;
}

/* --- WorkloadEndpoint ← Pod ------------------------------------------------------------- */

char *kdd_wep_name(struct arena *a, const char *node, const char *pod)
{
	return cni_wep_name(a, node, "k8s", pod, "eth0");
}

/* @n characters of @s with each "--" read as '-' into *out; false for a lone '-' or nothing. */
static bool unescape_part(struct arena *a, const char *s, size_t n, const char **out)
{
	char *u = arena_alloc(a, n + 1);
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		u[w++] = s[i];
		if (s[i] == '-' && (i + 1 >= n || s[++i] != '-'))
			return false;
	}
	u[w] = '\0';
	*out = u;
	return n > 0;
}

bool kdd_wep_name_parse(struct arena *a, const char *wep, const char **node, const char **pod)
{
	/*
	 * A separator is a dash no other dash pairs with: the last of the run
	 * before "eth0", and the "-k8s-" whose both sides read back (only one
	 * can: a dash of it would be a part's unpaired one for any other).
	 */
	if (!str_has_suffix(wep, "-eth0"))
		return false;
	size_t body = strlen(wep) - strlen("-eth0");
	for (const char *p = wep; (p = strstr(p, "-k8s-")) && (size_t)(p - wep) + 5 < body; p++) {
		size_t i = (size_t)(p - wep);
		const char *n, *q;
		if (unescape_part(a, wep, i, &n) && unescape_part(a, p + 5, body - i - 5, &q)) {
			*node = n;
			*pod = q;
			return true;
		}
	}
	return false;
}

/* One address of the pod as a network: a bare address becomes /32 or /128. */
static void add_pod_ip(struct kmap *m, struct jv *nets, const char *path, const char *text)
{
	struct br_cidr c;
	char buf[CIDR_STRLEN];
	if (cidr_parse(text, true, &c) < 0) {
		kerr(m, path, "\"%s\" is not an IP address", text);
		return;
	}
	jv_push(m->a, nets, jv_string(m->a, cidr_str(&c, buf)));
}

/*
 * The first non-empty source of addresses, in Calico's order: the CNI
 * plugin's annotations (there before the kubelet reports the pod's status),
 * then status.podIPs, then status.podIP.
 */
static struct jv *pod_ips(struct kmap *m, const struct jv *meta, const struct jv *status)
{
	struct jv *nets = jv_array(m->a);
	const char *list = annotation(m, meta, ANN_CNI "podIPs");
	if (list && *list) {
		const char *path = "metadata.annotations." ANN_CNI "podIPs";
		for (const char *p = list;;) {
			const char *comma = strchr(p, ',');
			size_t n = comma ? (size_t)(comma - p) : strlen(p);
			add_pod_ip(m, nets, path, arena_strndup(m->a, p, n));
			if (!comma)
				break;
			p = comma + 1;
		}
		return nets;
	}
	const char *ip = annotation(m, meta, ANN_CNI "podIP");
	if (ip && *ip) {
		add_pod_ip(m, nets, "metadata.annotations." ANN_CNI "podIP", ip);
		return nets;
	}
	const struct jv *ips = get_arr(m, status, "status", "podIPs");
	for (size_t i = 0; ips && i < ips->arr.n; i++) {
		const char *path = arena_printf(m->a, "status.podIPs[%zu]", i);
		const struct jv *item = ips->arr.items[i];
		if (item->type != JV_OBJECT) {
			kerr(m, path, "must be an object, not a %s", jv_type_name(item->type));
			continue;
		}
		const char *one = get_str(m, item, path, "ip");
		if (*one)
			add_pod_ip(m, nets, path_of(m, path, "ip"), one);
	}
	if (nets->arr.n || kmap_failed(m))
		return nets;
	ip = get_str(m, status, "status", "podIP");
	if (*ip)
		add_pod_ip(m, nets, "status.podIP", ip);
	return nets;
}

static bool pod_finished(struct kmap *m, const struct jv *meta, const struct jv *status)
{
	const char *phase = get_str(m, status, "status", "phase");
	if (streq(phase, "Succeeded") || streq(phase, "Failed") || streq(phase, "Completed"))
		return true;
	/* Deleting, and the CNI plugin has said the address is gone. */
	const char *ip = annotation(m, meta, ANN_CNI "podIP");
	return !is_null(jv_get(meta, "deletionTimestamp")) && ip && !*ip;
}

/* Named and host-mapped ports of one list of containers. */
static void pod_ports(struct kmap *m, const struct jv *spec, const char *list, struct jv *out)
{
	const struct jv *cs = get_arr(m, spec, "spec", list);
	for (size_t i = 0; cs && i < cs->arr.n; i++) {
		const char *cpath = arena_printf(m->a, "spec.%s[%zu]", list, i);
		const struct jv *c = cs->arr.items[i];
		if (c->type != JV_OBJECT) {
			kerr(m, cpath, "must be an object, not a %s", jv_type_name(c->type));
			continue;
		}
		const struct jv *ports = get_arr(m, c, cpath, "ports");
		for (size_t k = 0; ports && k < ports->arr.n; k++) {
			const char *ppath = arena_printf(m->a, "%s.ports[%zu]", cpath, k);
			const struct jv *p = ports->arr.items[k];
			if (p->type != JV_OBJECT) {
				kerr(m, ppath, "must be an object, not a %s",
				     jv_type_name(p->type));
				continue;
			}
			int64_t port = get_int(m, p, ppath, "containerPort", 1, 65535);
			int64_t host_port = get_int(m, p, ppath, "hostPort", 0, 65535);
			const char *name = get_str(m, p, ppath, "name");
			const char *proto = get_str(m, p, ppath, "protocol");
			const char *host_ip = get_str(m, p, ppath, "hostIP");
			if (!port || (!*name && !host_port))
				continue;
			if (!*proto)
				proto = "TCP";
			if (!streq(proto, "TCP") && !streq(proto, "UDP") && !streq(proto, "SCTP"))
				continue; /* as Calico: a protocol policy cannot name */
			struct jv *o = jv_object(m->a);
			if (*name)
				jv_add(m->a, o, "name", jv_string(m->a, name));
			jv_add(m->a, o, "protocol", jv_string(m->a, proto));
			jv_add(m->a, o, "port", jv_int(m->a, port));
			if (host_port)
				jv_add(m->a, o, "hostPort", jv_int(m->a, host_port));
			if (*host_ip)
				jv_add(m->a, o, "hostIP", jv_string(m->a, host_ip));
			jv_push(m->a, out, o);
		}
	}
}

int kdd_pod_to_wep(const struct jv *pod, enum kdd_pod_state *state,
		   struct br_workloadendpoint **out, struct model_errors *errs)
{
	struct kmap m;
	kmap_init(&m, errs, NULL);
	const char *name, *ns;
	const struct jv *meta = read_meta(&m, pod, "Pod", true, &name, &ns);
	const struct jv *spec = meta ? get_obj(&m, pod, "", "spec") : NULL;
	const struct jv *status = meta ? get_obj(&m, pod, "", "status") : NULL;
	const char *node = get_str(&m, spec, "spec", "nodeName");
	bool host_net = get_bool(&m, spec, "spec", "hostNetwork");
	if (kmap_failed(&m)) {
		arena_free(m.a);
		return -EINVAL;
	}
	if (host_net || !*node) {
		*state = KDD_POD_SKIP;
		*out = NULL;
		arena_free(m.a);
		return 0;
	}

	struct jv *wmeta, *wspec;
	struct jv *doc = new_doc(&m, "WorkloadEndpoint", &wmeta, &wspec);
	const char *wep = kdd_wep_name(m.a, node, name);
	jv_add(m.a, wmeta, "name", jv_string(m.a, wep));
	jv_add(m.a, wmeta, "namespace", jv_string(m.a, ns));
	copy_identity(&m, meta, wmeta, "", "");

	const char *sa = get_str(&m, spec, "spec", "serviceAccountName");
	if (!*sa)
		sa = get_str(&m, spec, "spec", "serviceAccount"); /* the deprecated alias */
	struct br_labels labels = { 0 };
	get_string_map(&m, meta, "metadata", "labels", &labels);
	labels_set(m.a, &labels, LABEL_NS, ns);
	labels_set(m.a, &labels, LABEL_ORCH, "k8s");
	const char *why;
	if (*sa && valid_label_value(sa, &why))
		labels_set(m.a, &labels, LABEL_SA, sa);
	jv_add(m.a, wmeta, "labels", labels_doc(m.a, &labels));

	bool finished = pod_finished(&m, meta, status);
	struct jv *nets = pod_ips(&m, meta, status);
	const char *container_id = annotation(&m, meta, ANN_CNI "containerID");
	struct jv *ports = jv_array(m.a);
	pod_ports(&m, spec, "containers", ports);
	pod_ports(&m, spec, "initContainers", ports);

	char iface[16];
	cni_host_veth_name(ns, name, iface);
	struct jv *profiles = jv_array(m.a);
	jv_push(m.a, profiles, jv_string(m.a, arena_printf(m.a, KDD_NS_PROFILE_PREFIX "%s", ns)));
	if (*sa)
		jv_push(m.a, profiles,
			jv_string(m.a, arena_printf(m.a, KDD_SA_PROFILE_PREFIX "%s.%s", ns, sa)));

	jv_add(m.a, wspec, "orchestrator", jv_string(m.a, "k8s"));
	jv_add(m.a, wspec, "node", jv_string(m.a, node));
	if (container_id && *container_id)
		jv_add(m.a, wspec, "containerID", jv_string(m.a, container_id));
	jv_add(m.a, wspec, "pod", jv_string(m.a, name));
	jv_add(m.a, wspec, "endpoint", jv_string(m.a, "eth0"));
	if (*sa)
		jv_add(m.a, wspec, "serviceAccountName", jv_string(m.a, sa));
	if (!finished)
		jv_add(m.a, wspec, "ipNetworks", nets);
	jv_add(m.a, wspec, "profiles", profiles);
	jv_add(m.a, wspec, "interfaceName", jv_string(m.a, iface));
	if (ports->arr.n)
		jv_add(m.a, wspec, "ports", ports);

	struct br_object *o = NULL;
	if (!kmap_failed(&m))
		o = decode_built(&m, KIND_WORKLOADENDPOINT, doc, wep, revision_of(pod));
	arena_free(m.a);
	if (!o)
		return -EINVAL;
	*state = finished ? KDD_POD_FINISHED : KDD_POD_ACTIVE;
	*out = (struct br_workloadendpoint *)o;
	return 0;
}

/* --- Profiles ← Namespace, ServiceAccount -------------------------------------------------- */

/* labelsToApply: each label of @src under @prefix, and <prefix>projectcalico.org/name. */
static struct jv *labels_to_apply(struct kmap *m, const struct br_labels *src, const char *prefix,
				  const char *name, bool name_label)
{
	struct br_labels out = { 0 };
	const char *why;
	for (size_t i = 0; i < src->n; i++) {
		const char *key = arena_printf(m->a, "%s%s", prefix, src->v[i].key);
		if (!valid_label_key(key, &why)) {
			kwarn(m, arena_printf(m->a, "metadata.labels.%s", src->v[i].key),
			      "not applied to pods as %s: %s; selectors cannot match it", key, why);
			continue;
		}
		labels_set(m->a, &out, key, src->v[i].value);
	}
	const char *name_key = arena_printf(m->a, "%s" LABEL_NAME, prefix);
	if (valid_label_value(name, &why))
		labels_set(m->a, &out, name_key, name);
	else
		kwarn(m, "metadata.name", "not applied to pods as %s: %s", name_key, why);
	if (name_label) {
		const char *k8s_key = arena_printf(m->a, "%s" K8S_NS_LABEL, prefix);
		if (!labels_has(&out, k8s_key))
			labels_set(m->a, &out, k8s_key, name);
	}
	return labels_doc(m->a, &out);
}

static struct jv *allow_all(struct arena *a)
{
	struct jv *rules = jv_array(a), *allow = jv_object(a);
	jv_add(a, allow, "action", jv_string(a, "Allow"));
	jv_push(a, rules, allow);
	return rules;
}

static int map_profile(const struct jv *src, bool is_ns, struct br_profile **out,
		       struct model_errors *errs, struct model_errors *warns)
{
	struct kmap m;
	kmap_init(&m, errs, warns);
	const char *name, *ns;
	const struct jv *meta =
		read_meta(&m, src, is_ns ? "Namespace" : "ServiceAccount", !is_ns, &name, &ns);
	struct br_labels labels = { 0 };
	if (meta)
		get_string_map(&m, meta, "metadata", "labels", &labels);
	if (kmap_failed(&m)) {
		arena_free(m.a);
		return -EINVAL;
	}
	struct jv *pmeta, *pspec;
	struct jv *doc = new_doc(&m, "Profile", &pmeta, &pspec);
	const char *pname = is_ns ? arena_printf(m.a, KDD_NS_PROFILE_PREFIX "%s", name)
				  : arena_printf(m.a, KDD_SA_PROFILE_PREFIX "%s.%s", ns, name);
	jv_add(m.a, pmeta, "name", jv_string(m.a, pname));
	copy_identity(&m, meta, pmeta, is_ns ? "" : "/", is_ns ? "/" : "");
	if (is_ns) {
		jv_add(m.a, pspec, "ingress", allow_all(m.a));
		jv_add(m.a, pspec, "egress", allow_all(m.a));
	}
	jv_add(m.a, pspec, "labelsToApply",
	       labels_to_apply(&m, &labels, is_ns ? KDD_NS_LABEL_PREFIX : KDD_SA_LABEL_PREFIX, name,
			       is_ns));
	struct br_object *o = decode_built(&m, KIND_PROFILE, doc, pname, revision_of(src));
	arena_free(m.a);
	if (!o)
		return -EINVAL;
	*out = (struct br_profile *)o;
	return 0;
}

int kdd_namespace_to_profile(const struct jv *ns, struct br_profile **out,
			     struct model_errors *errs, struct model_errors *warns)
{
	return map_profile(ns, true, out, errs, warns);
}

int kdd_serviceaccount_to_profile(const struct jv *sa, struct br_profile **out,
				  struct model_errors *errs, struct model_errors *warns)
{
	return map_profile(sa, false, out, errs, warns);
}

/* --- Node ↔ core v1 Node ------------------------------------------------------------------ */

/* Where each annotation goes in the Node document: spec[.<sub>].<field>, or status. */
enum node_part {
	IN_SPEC,
	IN_BGP,
	IN_WIREGUARD,
	IN_STATUS
};

static const struct node_ann {
	const char *annotation; /* after "projectcalico.org/" */
	enum node_part part;
	const char *field;
} node_anns[] = {
	{ "IPv4Address", IN_BGP, "ipv4Address" },
	{ "IPv6Address", IN_BGP, "ipv6Address" },
	{ "IPv4IPIPTunnelAddr", IN_BGP, "ipv4IPIPTunnelAddr" },
	{ "ASNumber", IN_BGP, "asNumber" },
	{ "RouteReflectorClusterID", IN_BGP, "routeReflectorClusterID" },
	{ "IPv4VXLANTunnelAddr", IN_SPEC, "ipv4VXLANTunnelAddr" },
	{ "VXLANTunnelMACAddr", IN_SPEC, "vxlanTunnelMACAddr" },
	{ "IPv6VXLANTunnelAddr", IN_SPEC, "ipv6VXLANTunnelAddr" },
	{ "VXLANTunnelMACAddrV6", IN_SPEC, "vxlanTunnelMACAddrV6" },
	{ "IPv4WireguardInterfaceAddr", IN_WIREGUARD, "interfaceIPv4Address" },
	{ "IPv6WireguardInterfaceAddr", IN_WIREGUARD, "interfaceIPv6Address" },
	{ "WireguardPublicKey", IN_STATUS, "wireguardPublicKey" },
};

/* The object of @part in a Node document with spec @spec and status @status, made on demand. */
static struct jv *node_part_obj(struct arena *a, struct jv *spec, struct jv *status,
				enum node_part part)
{
	if (part == IN_SPEC)
		return spec;
	if (part == IN_STATUS)
		return status;
	const char *key = part == IN_BGP ? "bgp" : "wireguard";
	struct jv *o = jv_get(spec, key);
	if (!o) {
		o = jv_object(a);
		jv_add(a, spec, key, o);
	}
	return o;
}

/* Whether the model takes @value in the place of @na (in a Node of nothing else). */
static bool node_value_ok(struct kmap *m, const struct node_ann *na, const char *value)
{
	struct jv *meta, *spec, *status = jv_object(m->a);
	struct jv *doc = new_doc(m, "Node", &meta, &spec);
	jv_add(m->a, meta, "name", jv_string(m->a, "probe"));
	jv_add(m->a, doc, "status", status);
	jv_add(m->a, node_part_obj(m->a, spec, status, na->part), na->field,
	       jv_string(m->a, value));
	struct model_errors errs = { 0 };
	struct br_object *o = model_decode_kind(model_kind(KIND_NODE), doc, &errs);
	if (!o)
		kwarn(m, arena_printf(m->a, "metadata.annotations." ANN_NODE "%s", na->annotation),
		      "\"%s\" ignored: %s", value, errs.n ? errs.v[0] : "refused");
	model_errors_clear(&errs);
	model_free(o);
	return o != NULL;
}

/* Calico-only labels, kept as JSON in an annotation; a warning when it does not parse. */
static void node_calico_labels(struct kmap *m, const struct jv *meta, struct br_labels *out)
{
	const char *text = annotation(m, meta, ANN_NODE "labels");
	const char *path = "metadata.annotations." ANN_NODE "labels";
	struct jv *v;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (!text || !*text) {
		sb_free(&err);
		return;
	}
	if (json_parse(m->a, text, strlen(text), &v, &err) < 0 || v->type != JV_OBJECT) {
		kwarn(m, path, "ignored: not a JSON object of labels%s%s", err.len ? ": " : "",
		      sb_str(&err));
		sb_free(&err);
		return;
	}
	sb_free(&err);
	for (size_t i = 0; i < v->obj.n; i++) {
		const char *key = v->obj.members[i].key,
			   *val = jv_as_string(v->obj.members[i].value);
		const char *why;
		if (!val || v->obj.members[i].value->type != JV_STRING)
			kwarn(m, path, "label %s ignored: not a string", key);
		else if (!valid_label_key(key, &why) || !valid_label_value(val, &why))
			kwarn(m, path, "label %s ignored: %s", key, why);
		else
			labels_set(m->a, out, key, val);
	}
}

static void add_address(struct arena *a, struct jv *list, const char *address, const char *type)
{
	struct jv *o = jv_object(a);
	jv_add(a, o, "address", jv_string(a, address));
	jv_add(a, o, "type", jv_string(a, type));
	jv_push(a, list, o);
}

int kdd_node_to_calico(const struct jv *node, struct br_node **out, struct model_errors *errs,
		       struct model_errors *warns)
{
	struct kmap m;
	kmap_init(&m, errs, warns);
	const char *name, *unused;
	const struct jv *meta = read_meta(&m, node, "Node", false, &name, &unused);
	const struct jv *kspec = meta ? get_obj(&m, node, "", "spec") : NULL;
	const struct jv *kstatus = meta ? get_obj(&m, node, "", "status") : NULL;
	struct br_labels labels = { 0 }, k8s_labels = { 0 };
	if (meta) {
		get_string_map(&m, meta, "metadata", "labels", &k8s_labels);
		node_calico_labels(&m, meta, &labels);
	}
	if (kmap_failed(&m)) {
		arena_free(m.a);
		return -EINVAL;
	}
	for (size_t i = 0; i < k8s_labels.n; i++)
		labels_set(m.a, &labels, k8s_labels.v[i].key, k8s_labels.v[i].value);

	struct jv *nmeta, *nspec, *nstatus = jv_object(m.a);
	struct jv *doc = new_doc(&m, "Node", &nmeta, &nspec);
	jv_add(m.a, doc, "status", nstatus);
	jv_add(m.a, nmeta, "name", jv_string(m.a, name));
	copy_identity(&m, meta, nmeta, "", "");
	if (labels.n)
		jv_add(m.a, nmeta, "labels", labels_doc(m.a, &labels));

	struct jv *addresses = jv_array(m.a);
	for (size_t i = 0; i < ARRAY_SIZE(node_anns); i++) {
		const struct node_ann *na = &node_anns[i];
		const char *v =
			annotation(&m, meta, arena_printf(m.a, ANN_NODE "%s", na->annotation));
		if (!v || !*v || !node_value_ok(&m, na, v))
			continue;
		jv_add(m.a, node_part_obj(m.a, nspec, nstatus, na->part), na->field,
		       jv_string(m.a, v));
		if (streq(na->field, "ipv4Address") || streq(na->field, "ipv6Address"))
			add_address(m.a, addresses, v, "CalicoNodeIP");
	}
	const struct jv *kaddrs = get_arr(&m, kstatus, "status", "addresses");
	for (size_t i = 0; kaddrs && i < kaddrs->arr.n; i++) {
		const struct jv *a = kaddrs->arr.items[i];
		const char *path = arena_printf(m.a, "status.addresses[%zu]", i);
		if (a->type != JV_OBJECT) {
			kerr(&m, path, "must be an object, not a %s", jv_type_name(a->type));
			continue;
		}
		const char *type = get_str(&m, a, path, "type");
		const char *addr = get_str(&m, a, path, "address");
		if (*addr && (streq(type, "InternalIP") || streq(type, "ExternalIP")))
			add_address(m.a, addresses, addr, type);
	}
	if (addresses->arr.n)
		jv_add(m.a, nspec, "addresses", addresses);
	struct jv *refs = jv_array(m.a), *ref = jv_object(m.a);
	jv_add(m.a, ref, "nodeName", jv_string(m.a, name));
	jv_add(m.a, ref, "orchestrator", jv_string(m.a, "k8s"));
	jv_push(m.a, refs, ref);
	jv_add(m.a, nspec, "orchRefs", refs);

	/* status.podCIDRs: the node's spec.podCIDRs (informational; a bad one is dropped). */
	struct jv *cidrs = jv_array(m.a);
	const struct jv *kcidrs = get_arr(&m, kspec, "spec", "podCIDRs");
	for (size_t i = 0; kcidrs && i < kcidrs->arr.n; i++) {
		const char *c = jv_as_string(kcidrs->arr.items[i]);
		struct br_cidr parsed;
		if (c && kcidrs->arr.items[i]->type == JV_STRING &&
		    cidr_parse(c, false, &parsed) == 0)
			jv_push(m.a, cidrs, kcidrs->arr.items[i]);
		else
			kwarn(&m, arena_printf(m.a, "spec.podCIDRs[%zu]", i),
			      "ignored: not a CIDR");
	}
	if (cidrs->arr.n)
		jv_add(m.a, nstatus, "podCIDRs", cidrs);

	struct br_object *o = NULL;
	if (!kmap_failed(&m))
		o = decode_built(&m, KIND_NODE, doc, name, revision_of(node));
	arena_free(m.a);
	if (!o)
		return -EINVAL;
	*out = (struct br_node *)o;
	return 0;
}

struct jv *kdd_node_annotations(struct arena *a, const struct br_node *n)
{
	const struct br_node_spec *s = &n->spec;
	const struct br_node_bgp *b = s->bgp;
	const struct br_node_wireguard *w = s->wireguard;
	char asn[16] = "";
	if (b && b->as_number.set)
		snprintf(asn, sizeof(asn), "%" PRIu32, b->as_number.v);
	const char *values[] = {
		b ? b->ipv4_address : NULL,
		b ? b->ipv6_address : NULL,
		b ? b->ipv4_ipip_tunnel_addr : NULL,
		asn,
		b ? b->route_reflector_cluster_id : NULL,
		s->ipv4_vxlan_tunnel_addr,
		s->vxlan_tunnel_mac_addr,
		s->ipv6_vxlan_tunnel_addr,
		s->vxlan_tunnel_mac_addr_v6,
		w ? w->interface_ipv4_address : NULL,
		w ? w->interface_ipv6_address : NULL,
	};
	_Static_assert(ARRAY_SIZE(values) == ARRAY_SIZE(node_anns) - 1,
		       "every spec annotation, in node_anns' order");
	struct jv *o = jv_object(a);
	for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
		const char *key = arena_printf(a, ANN_NODE "%s", node_anns[i].annotation);
		jv_add(a, o, key, values[i] && *values[i] ? jv_string(a, values[i]) : jv_null(a));
	}
	return o;
}

/* --- Kubernetes kinds the model stores as they are ---------------------------------------------
 */

int kdd_decode(const struct br_kind *k, const struct jv *doc, struct br_object **out,
	       struct model_errors *errs)
{
	struct kmap m;
	kmap_init(&m, errs, NULL);
	const char *name, *ns;
	const struct jv *meta = read_meta(&m, doc, k->kind, k->namespaced, &name, &ns);
	if (!meta) {
		arena_free(m.a);
		return -EINVAL;
	}
	struct jv *pruned = model_prune(m.a, k, doc);
	if (!jv_get(pruned, "kind")) {
		jv_add(m.a, pruned, "apiVersion", jv_string(m.a, k->api_version));
		jv_add(m.a, pruned, "kind", jv_string(m.a, k->kind));
	}
	struct model_errors derrs = { 0 };
	struct br_object *o = model_decode_kind(k, pruned, &derrs);
	for (size_t i = 0; i < derrs.n; i++)
		kerr(&m, NULL, "%s", derrs.v[i]);
	model_errors_clear(&derrs);
	arena_free(m.a);
	if (!o)
		return -EINVAL;
	o->revision = revision_of(doc);
	*out = o;
	return 0;
}

/* --- what a pod asks of IPAM ----------------------------------------------------------------- */

/*
 * Annotation @key of @obj (@what names it) as a JSON list of strings; NULL
 * with *n 0 when it is not set or empty.
 */
static const struct jv *annotation_list(struct arena *a, const struct jv *obj, const char *what,
					const char *key, int *r, struct strbuf *err)
{
	const struct jv *anns = jv_get(jv_get(obj, "metadata"), "annotations");
	const struct jv *v = anns && anns->type == JV_OBJECT ? jv_get(anns, key) : NULL;
	*r = 0;
	if (!v || v->type != JV_STRING || !v->s.len)
		return NULL;
	struct jv *list;
	struct strbuf perr = STRBUF_INIT;
	sb_init(&perr);
	if (json_parse(a, v->s.text, v->s.len, &list, &perr) < 0 || list->type != JV_ARRAY) {
		sb_addf(err, "%s: metadata.annotations[%s]: not a JSON list of strings%s%s", what,
			key, perr.len ? ": " : "", sb_str(&perr));
		*r = -EINVAL;
	}
	for (size_t i = 0; *r == 0 && i < list->arr.n; i++)
		if (list->arr.items[i]->type != JV_STRING) {
			sb_addf(err, "%s: metadata.annotations[%s][%zu]: must be a string", what,
				key, i);
			*r = -EINVAL;
		}
	sb_free(&perr);
	return *r == 0 ? list : NULL;
}

static const char *md_str(struct arena *a, const struct jv *md, const char *key)
{
	const struct jv *v = jv_get(md, key);
	return v && v->type == JV_STRING ? arena_strndup(a, v->s.text, v->s.len) : "";
}

/* "pod shop/web-1", "namespace shop": for messages. */
static const char *obj_name(struct arena *a, const char *kind, const struct jv *obj)
{
	const struct jv *md = jv_get(obj, "metadata");
	const char *ns = md_str(a, md, "namespace"), *name = md_str(a, md, "name");
	return *ns ? arena_printf(a, "%s %s/%s", kind, ns, name)
		   : arena_printf(a, "%s %s", kind, name);
}

/* The pools of annotation @key: the pod's, else its namespace's. */
static int pod_pools(struct arena *a, const struct jv *pod, const struct jv *ns,
		     const char *pod_name, const char *key, const char ***out, size_t *n,
		     const char **from, struct strbuf *err)
{
	int r;
	const struct jv *pools = annotation_list(a, pod, pod_name, key, &r, err);
	*from = pod_name;
	if (r == 0 && !pools && ns) {
		*from = obj_name(a, "namespace", ns);
		pools = annotation_list(a, ns, *from, key, &r, err);
	}
	if (r < 0)
		return r;
	if (!pools || !pools->arr.n) {
		*from = NULL;
		return 0;
	}
	*out = arena_alloc(a, sizeof(**out) * pools->arr.n);
	for (size_t i = 0; i < pools->arr.n; i++)
		(*out)[(*n)++] =
			arena_strndup(a, pools->arr.items[i]->s.text, pools->arr.items[i]->s.len);
	return 0;
}

int kdd_pod_ipam(struct arena *a, const struct jv *pod, const struct jv *ns,
		 struct kdd_pod_ipam *out, struct strbuf *err)
{
	*out = (struct kdd_pod_ipam){ 0 };
	const char *pod_name = obj_name(a, "pod", pod);
	int r;
	const struct jv *ips = annotation_list(a, pod, pod_name, ANN_CNI "ipAddrs", &r, err);
	if (r < 0)
		return r;
	for (size_t i = 0; ips && i < ips->arr.n; i++) {
		const struct jv *s = ips->arr.items[i];
		const char *text = arena_strndup(a, s->s.text, s->s.len), *why = NULL;
		struct br_ip ip;
		if (i >= KDD_POD_MAX_IPS)
			why = arena_printf(a, "more than %d addresses", KDD_POD_MAX_IPS);
		else if (ip_parse(text, &ip) < 0)
			why = arena_printf(a, "\"%s\" is not an IP address", text);
		if (why) {
			sb_addf(err, "%s: metadata.annotations[" ANN_CNI "ipAddrs][%zu]: %s", pod_name,
				i, why);
			return -EINVAL;
		}
		out->ips[out->n_ips++] = ip;
	}
	if (out->n_ips)
		return 0;
	r = pod_pools(a, pod, ns, pod_name, ANN_CNI "ipv4pools", &out->pools, &out->n_pools,
		      &out->pools_from, err);
	if (r == 0)
		r = pod_pools(a, pod, ns, pod_name, ANN_CNI "ipv6pools", &out->pools6,
			      &out->n_pools6, &out->pools6_from, err);
	return r;
}

struct jv *kdd_native_encode(struct arena *a, const struct br_object *o, bool for_update)
{
	struct jv *doc = model_encode(a, o);
	struct jv *md = (struct jv *)jv_get(doc, "metadata");
	if (md && md->type == JV_OBJECT) {
		/* uid and creationTimestamp are the server's; resourceVersion only as a
		 * precondition. */
		size_t w = 0;
		for (size_t i = 0; i < md->obj.n; i++) {
			const char *key = md->obj.members[i].key;
			if (streq(key, "uid") || streq(key, "creationTimestamp") ||
			    streq(key, "resourceVersion"))
				continue;
			md->obj.members[w++] = md->obj.members[i];
		}
		md->obj.n = w;
		if (for_update) {
			const char *rv = o->meta.resource_version;
			if (!rv || !*rv)
				rv = arena_printf(a, "%" PRId64, o->revision);
			jv_add(a, md, "resourceVersion", jv_string(a, rv));
		}
	}
	return doc;
}
