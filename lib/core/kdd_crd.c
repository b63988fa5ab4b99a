/* Calico kinds as custom resources (see kdd_crd.h). */
#include <brindle/core/json.h>
#include <brindle/core/kdd_crd.h>
#include <brindle/core/model_crd.h>
#include <brindle/core/util.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAME 253

bool kdd_crd_names(const struct br_kind *k, const char **crd_kind, const char **crd_plural)
{
	if (!k->crd_kind || !k->crd_plural)
		return false;
	*crd_kind = k->crd_kind;
	*crd_plural = k->crd_plural;
	return true;
}

static bool is_policy(const struct br_kind *k)
{
	return k->id == KIND_NETWORKPOLICY || k->id == KIND_GLOBALNETWORKPOLICY;
}

/* '.', ':' and '/' as '-' (Calico's names for CIDRs); @s may already use '-' for '/'. */
static void cidr_name(struct strbuf *out, const char *s)
{
	for (; *s; s++)
		sb_addc(out, *s == '.' || *s == ':' || *s == '/' ? '-' : *s);
}

int kdd_crd_name(const struct br_kind *k, const char *scope, const char *name, struct strbuf *out,
		 struct strbuf *err)
{
	size_t start = out->len;
	switch (k->id) {
	case KIND_BLOCKAFFINITY:
		if (!scope || !*scope) {
			sb_addf(err, "%s %s: no node", k->kind, name);
			return -EINVAL;
		}
		sb_addf(out, "%s-", scope);
		cidr_name(out, name);
		break;
	case KIND_IPAMBLOCK:
		cidr_name(out, name);
		break;
	case KIND_IPAMHANDLE:
		for (const char *p = name; *p; p++)
			sb_addc(out, (char)tolower((unsigned char)*p));
		break;
	default:
		sb_adds(out, name);
		break;
	}
	if (out->len - start > MAX_NAME) {
		sb_addf(err, "%s %s: its custom resource's name would be longer than %d characters",
			k->kind, name, MAX_NAME);
		return -EINVAL;
	}
	return 0;
}

/* kubectl's record of the CR it applied: kept on the CR, or its next apply cannot prune. */
#define KUBECTL_LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

/*
 * The members of object @v that the CR itself carries, added to @dst: keys holding
 * "projectcalico.org/", and kubectl's last-applied record (so that a daemon writing a CR that
 * a user applied with kubectl, as a status write does, keeps kubectl's three-way merge
 * working).
 */
static void copy_calico_keys(struct arena *a, const struct jv *v, struct jv *dst)
{
	if (!v || v->type != JV_OBJECT)
		return;
	for (size_t i = 0; i < v->obj.n; i++) {
		const char *key = v->obj.members[i].key;
		if ((strstr(key, "projectcalico.org/") || streq(key, KUBECTL_LAST_APPLIED)) &&
		    !streq(key, KDD_METADATA_ANNOTATION))
			jv_add(a, dst, key, v->obj.members[i].value);
	}
}

struct jv *kdd_crd_encode(struct arena *a, const struct br_object *o, bool for_update,
			  struct strbuf *err)
{
	const struct br_kind *k = o->kind;
	const char *crd_kind, *crd_plural;
	if (!kdd_crd_names(k, &crd_kind, &crd_plural)) {
		sb_addf(err, "%s is not stored as a custom resource", k->kind);
		return NULL;
	}
	struct strbuf name = STRBUF_INIT;
	sb_init(&name);
	const char *scope = k->id == KIND_BLOCKAFFINITY
				    ? ((const struct br_blockaffinity *)o)->spec.node
				    : NULL;
	if (kdd_crd_name(k, scope, o->meta.name, &name, err) < 0) {
		sb_free(&name);
		return NULL;
	}
	const struct jv *doc = model_encode(a, o);
	const struct jv *md = jv_get(doc, "metadata");
	const struct jv *spec = k->spec_inline ? NULL : jv_get(doc, "spec");

	struct jv *cmd = jv_object(a);
	jv_add(a, cmd, "name", jv_string(a, sb_str(&name)));
	sb_free(&name);
	if (k->namespaced && o->meta.namespace)
		jv_add(a, cmd, "namespace", jv_string(a, o->meta.namespace));
	if (for_update) {
		const char *rv = o->meta.resource_version;
		if (!rv || !*rv)
			rv = arena_printf(a, "%" PRId64, o->revision);
		jv_add(a, cmd, "resourceVersion", jv_string(a, rv));
	}
	/* The v3 metadata, minus what the CR itself carries. */
	struct jv *keep = jv_object(a);
	for (size_t i = 0; md && md->type == JV_OBJECT && i < md->obj.n; i++) {
		const char *key = md->obj.members[i].key;
		if (streq(key, "namespace") || streq(key, "resourceVersion") || streq(key, "uid") ||
		    (streq(key, "name") && !is_policy(k)))
			continue;
		jv_add(a, keep, key, md->obj.members[i].value);
	}
	struct jv *labels = jv_object(a), *annotations = jv_object(a);
	copy_calico_keys(a, md ? jv_get(md, "labels") : NULL, labels);
	copy_calico_keys(a, md ? jv_get(md, "annotations") : NULL, annotations);
	struct strbuf json = STRBUF_INIT;
	sb_init(&json);
	json_write(&json, keep, false);
	jv_add(a, annotations, KDD_METADATA_ANNOTATION, jv_string(a, sb_str(&json)));
	sb_free(&json);
	if (labels->obj.n)
		jv_add(a, cmd, "labels", labels);
	jv_add(a, cmd, "annotations", annotations);

	struct jv *cr = jv_object(a);
	jv_add(a, cr, "apiVersion", jv_string(a, MODEL_CRD_API_VERSION));
	jv_add(a, cr, "kind", jv_string(a, crd_kind));
	jv_add(a, cr, "metadata", cmd);
	jv_add(a, cr, "spec", spec ? model_crd_spec_out(a, k, spec) : jv_object(a));
	/* The kinds with a status (CalicoNodeStatus, KubeControllersConfiguration) keep it in the
	 * custom resource, which has no status subresource (Calico's CRDs have none). */
	const struct jv *status = k->status ? jv_get(doc, "status") : NULL;
	if (status)
		jv_add(a, cr, "status", (struct jv *)status);
	return cr;
}

int kdd_revision(const char *rv, int64_t *out)
{
	if (!rv || *rv < '1' || *rv > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	long long v = strtoll(rv, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static const char *str_of(const struct jv *obj, const char *key)
{
	const struct jv *v = obj && obj->type == JV_OBJECT ? jv_get(obj, key) : NULL;
	return v && v->type == JV_STRING ? v->s.text : NULL;
}

/* Labels or annotations: the annotation's copy, with the CR's Calico keys it lacks. */
static struct jv *merged(struct arena *a, const struct jv *from_ann, const struct jv *from_cr,
			 bool have_ann)
{
	struct jv *out = jv_object(a);
	if (!have_ann) {
		/* A CR written by hand or by kubectl: its own labels and annotations. */
		for (size_t i = 0; from_cr && from_cr->type == JV_OBJECT && i < from_cr->obj.n; i++)
			if (!streq(from_cr->obj.members[i].key, KDD_METADATA_ANNOTATION))
				jv_add(a, out, from_cr->obj.members[i].key,
				       from_cr->obj.members[i].value);
		return out;
	}
	if (from_ann && from_ann->type == JV_OBJECT)
		for (size_t i = 0; i < from_ann->obj.n; i++)
			jv_add(a, out, from_ann->obj.members[i].key,
			       from_ann->obj.members[i].value);
	for (size_t i = 0; from_cr && from_cr->type == JV_OBJECT && i < from_cr->obj.n; i++) {
		const char *key = from_cr->obj.members[i].key;
		if ((strstr(key, "projectcalico.org/") || streq(key, KUBECTL_LAST_APPLIED)) &&
		    !streq(key, KDD_METADATA_ANNOTATION) && !jv_get(out, key))
			jv_add(a, out, key, from_cr->obj.members[i].value);
	}
	return out;
}

/* The v3 name (and scope) of an IPAM CR, from its spec. */
static const char *ipam_name(struct arena *a, const struct br_kind *k, const struct jv *spec)
{
	const char *cidr = str_of(spec, "cidr");
	switch (k->id) {
	case KIND_BLOCKAFFINITY: /* its node (the scope) is spec.node */
	case KIND_IPAMBLOCK: {
		if (!cidr)
			return NULL;
		char *n = arena_strdup(a, cidr);
		char *slash = strchr(n, '/');
		if (slash)
			*slash = '-';
		return n;
	}
	case KIND_IPAMHANDLE:
		return str_of(spec, "handleID");
	default:
		return NULL;
	}
}

struct br_object *kdd_crd_decode(const struct br_kind *k, const struct jv *cr,
				 struct model_errors *errs)
{
	const char *crd_kind, *crd_plural;
	if (!kdd_crd_names(k, &crd_kind, &crd_plural)) {
		model_errors_add(errs, "%s is not stored as a custom resource", k->kind);
		return NULL;
	}
	const struct jv *md = cr && cr->type == JV_OBJECT ? jv_get(cr, "metadata") : NULL;
	const char *crname = str_of(md, "name");
	if (!crname) {
		model_errors_add(errs, "%s: a custom resource without metadata.name", crd_plural);
		return NULL;
	}
	const char *ns = str_of(md, "namespace");
	const char *where = ns ? ns : "";
	struct arena *a = arena_new();
	struct br_object *o = NULL;
	const struct jv *cr_ann = jv_get(md, "annotations");
	const char *ann_text = str_of(cr_ann, KDD_METADATA_ANNOTATION);
	struct jv *ann = NULL;
	if (ann_text) {
		struct strbuf perr = STRBUF_INIT;
		sb_init(&perr);
		if (json_parse(a, ann_text, strlen(ann_text), &ann, &perr) < 0 ||
		    ann->type != JV_OBJECT) {
			model_errors_add(
				errs, "%s/%s%s%s: metadata.annotations[%s]: not a JSON object%s%s",
				crd_plural, where, *where ? "/" : "", crname,
				KDD_METADATA_ANNOTATION, perr.len ? ": " : "", sb_str(&perr));
			sb_free(&perr);
			goto out;
		}
		sb_free(&perr);
	}
	const struct jv *spec = jv_get(cr, "spec");
	const char *name = ipam_name(a, k, spec);
	if (!name &&
	    (k->id == KIND_BLOCKAFFINITY || k->id == KIND_IPAMBLOCK || k->id == KIND_IPAMHANDLE)) {
		model_errors_add(errs, "%s/%s: spec: names no %s", crd_plural, crname,
				 k->id == KIND_IPAMHANDLE ? "handleID" : "cidr");
		goto out;
	}
	if (!name && is_policy(k)) {
		name = str_of(ann, "name");
		/* Calico 3.30-3.31 stored default-tier policies as "default.<name>". */
		if (!name)
			name = strncmp(crname, "default.", 8) == 0 ? crname + 8 : crname;
	}
	if (!name)
		name = crname;

	struct jv *doc = jv_object(a), *vmd = jv_object(a);
	jv_add(a, doc, "apiVersion", jv_string(a, k->api_version));
	jv_add(a, doc, "kind", jv_string(a, k->kind));
	jv_add(a, vmd, "name", jv_string(a, name));
	if (k->namespaced && ns)
		jv_add(a, vmd, "namespace", jv_string(a, ns));
	const char *uid = str_of(md, "uid"), *created = str_of(md, "creationTimestamp");
	if (uid)
		jv_add(a, vmd, "uid", jv_string(a, uid));
	if (created)
		jv_add(a, vmd, "creationTimestamp", jv_string(a, created));
	struct jv *labels =
		merged(a, ann ? jv_get(ann, "labels") : NULL, jv_get(md, "labels"), ann);
	struct jv *annotations = merged(a, ann ? jv_get(ann, "annotations") : NULL, cr_ann, ann);
	if (labels->obj.n)
		jv_add(a, vmd, "labels", labels);
	if (annotations->obj.n)
		jv_add(a, vmd, "annotations", annotations);
	jv_add(a, doc, "metadata", vmd);
	if (spec && spec->type != JV_NULL)
		jv_add(a, doc, "spec", model_crd_spec_in(a, k, spec));
	const struct jv *status = k->status ? jv_get(cr, "status") : NULL;
	if (status && status->type != JV_NULL)
		jv_add(a, doc, "status", (struct jv *)status);

	struct model_errors e = { 0 };
	o = model_decode_kind(k, doc, &e);
	for (size_t i = 0; i < e.n; i++)
		model_errors_add(errs, "%s/%s%s%s: %s", crd_plural, where, *where ? "/" : "",
				 crname, e.v[i]);
	model_errors_clear(&e);
	if (!o)
		goto out;
	const char *rv = str_of(md, "resourceVersion");
	if (rv) {
		if (kdd_revision(rv, &o->revision) < 0) {
			model_errors_add(errs,
					 "%s/%s: metadata.resourceVersion \"%s\" is not a number",
					 crd_plural, crname, rv);
			model_free(o);
			o = NULL;
			goto out;
		}
		o->meta.resource_version = arena_strdup(o->arena, rv);
	}
out:
	arena_free(a);
	return o;
}
