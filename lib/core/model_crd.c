/*
 * CustomResourceDefinitions from the model's field tables. A kind with a CRD
 * name (br_kind.crd_kind) gets an OpenAPI v3 structural schema: every node is
 * typed, except int-or-string ones (x-kubernetes-int-or-string), so the
 * apiserver validates types, enums, ranges and required fields, and prunes
 * fields the model does not know. What only the model can check (CIDRs,
 * selectors, fields that exclude each other) stays the model's. Pure: jv in
 * an arena, YAML into a strbuf.
 */
#include "model_internal.h"

#include <brindle/core/model_crd.h>
#include <brindle/core/yaml.h>

#include <ctype.h>

static struct jv *typed(struct arena *a, const char *type)
{
	struct jv *s = jv_object(a);
	jv_add(a, s, "type", jv_string(a, type));
	return s;
}

static struct jv *array_of(struct arena *a, struct jv *items)
{
	struct jv *s = typed(a, "array");
	jv_add(a, s, "items", items);
	return s;
}

static struct jv *struct_schema(struct arena *a, const struct model_struct *d);

/* Enum values matched without case (MF_NOCASE): a case-insensitive pattern, as Calico's CRDs
 * declare their log levels. */
static struct jv *nocase_pattern(struct arena *a, const char *const *values)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sb_adds(&sb, "^(?i)(");
	for (const char *const *e = values; *e; e++) {
		if (e != values)
			sb_addc(&sb, '|');
		for (const char *p = *e; *p; p++) {
			if (!isalnum((unsigned char)*p))
				sb_addc(&sb, '\\');
			sb_addc(&sb, *p);
		}
	}
	sb_adds(&sb, ")$");
	struct jv *s = jv_string(a, sb_str(&sb));
	sb_free(&sb);
	return s;
}

static struct jv *string_schema(struct arena *a, const struct model_field *f)
{
	struct jv *s = typed(a, "string");
	if (!f->enum_values)
		return s;
	if (f->flags & MF_NOCASE) {
		jv_add(a, s, "pattern", nocase_pattern(a, f->enum_values));
		return s;
	}
	struct jv *e = jv_array(a);
	for (const char *const *v = f->enum_values; *v; v++)
		jv_push(a, e, jv_string(a, *v));
	jv_add(a, s, "enum", e);
	return s;
}

static struct jv *int_schema(struct arena *a, const struct model_field *f)
{
	struct jv *s = typed(a, "integer");
	if (f->min < f->max) {
		jv_add(a, s, "minimum", jv_int(a, f->min));
		jv_add(a, s, "maximum", jv_int(a, f->max));
	}
	return s;
}

static struct jv *field_schema(struct arena *a, const struct model_field *f)
{
	struct jv *s;
	switch (f->type) {
	case MF_STRING:
		return string_schema(a, f);
	case MF_BOOL:
	case MF_OPT_BOOL:
		return typed(a, f->flags & MF_CRD_STRING ? "string" : "boolean");
	case MF_INT:
	case MF_OPT_INT:
		return int_schema(a, f);
	case MF_OPT_FLOAT:
		return typed(a, "number");
	case MF_STRLIST:
		return array_of(a, typed(a, "string"));
	case MF_MAP:
		s = typed(a, "object");
		jv_add(a, s, "additionalProperties", typed(a, "string"));
		return s;
	case MF_STRUCT:
	case MF_PTR:
		return struct_schema(a, f->sub);
	case MF_LIST:
		return array_of(a, struct_schema(a, f->sub));
	case MF_CUSTOM:
		return f->codec->schema(a);
	}
	return NULL;
}

static struct jv *struct_schema(struct arena *a, const struct model_struct *d)
{
	struct jv *s = typed(a, "object"), *props = jv_object(a), *req = jv_array(a);
	for (size_t i = 0; i < d->n_fields; i++) {
		const struct model_field *f = &d->fields[i];
		jv_add(a, props, f->name, field_schema(a, f));
		if (f->flags & MF_REQUIRED)
			jv_push(a, req, jv_string(a, f->name));
	}
	jv_add(a, s, "properties", props);
	if (req->arr.n)
		jv_add(a, s, "required", req);
	return s;
}

struct jv *model_crd_schema(struct arena *a, const struct br_kind *k)
{
	if (!k->crd_kind)
		return NULL;
	struct jv *s = typed(a, "object"), *props = jv_object(a);
	jv_add(a, props, "apiVersion", typed(a, "string"));
	jv_add(a, props, "kind", typed(a, "string"));
	jv_add(a, props, "metadata", typed(a, "object"));
	if (k->spec)
		jv_add(a, props, "spec", struct_schema(a, k->spec));
	if (k->status)
		jv_add(a, props, "status", struct_schema(a, k->status));
	jv_add(a, s, "properties", props);
	return s;
}

static const char *lowercase(struct arena *a, const char *s)
{
	char *l = arena_strdup(a, s);
	for (char *p = l; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return l;
}

struct jv *model_crd(struct arena *a, const struct br_kind *k)
{
	if (!k->crd_kind)
		return NULL;
	struct jv *doc = jv_object(a), *meta = jv_object(a), *spec = jv_object(a);
	jv_add(a, doc, "apiVersion", jv_string(a, "apiextensions.k8s.io/v1"));
	jv_add(a, doc, "kind", jv_string(a, "CustomResourceDefinition"));
	jv_add(a, meta, "name",
	       jv_string(a, arena_printf(a, "%s.%s", k->crd_plural, MODEL_CRD_GROUP)));
	jv_add(a, doc, "metadata", meta);

	struct jv *names = jv_object(a);
	jv_add(a, names, "kind", jv_string(a, k->crd_kind));
	jv_add(a, names, "listKind", jv_string(a, arena_printf(a, "%sList", k->crd_kind)));
	jv_add(a, names, "plural", jv_string(a, k->crd_plural));
	jv_add(a, names, "singular", jv_string(a, lowercase(a, k->crd_kind)));
	jv_add(a, spec, "group", jv_string(a, MODEL_CRD_GROUP));
	jv_add(a, spec, "names", names);
	jv_add(a, spec, "scope", jv_string(a, k->namespaced ? "Namespaced" : "Cluster"));

	struct jv *version = jv_object(a), *schema = jv_object(a), *versions = jv_array(a);
	jv_add(a, version, "name", jv_string(a, MODEL_CRD_VERSION));
	jv_add(a, version, "served", jv_bool(a, true));
	jv_add(a, version, "storage", jv_bool(a, true));
	jv_add(a, schema, "openAPIV3Schema", model_crd_schema(a, k));
	jv_add(a, version, "schema", schema);
	jv_push(a, versions, version);
	jv_add(a, spec, "versions", versions);
	jv_add(a, doc, "spec", spec);
	return doc;
}

void model_crds_yaml(struct strbuf *out)
{
	sb_adds(out, "# Calico's kinds as CustomResourceDefinitions in " MODEL_CRD_API_VERSION
		     ", for Brindle\n"
		     "# with the Kubernetes API as its datastore (docs/crds.md). Generated from "
		     "Brindle's\n"
		     "# resource model (lib/core/model_kinds.c); do not edit. Regenerate with:\n"
		     "#   brindlectl manifests crds > deploy/crds.yaml\n");
	struct arena *a = arena_new();
	for (size_t i = 0; i < KIND_COUNT; i++) {
		const struct jv *crd = model_crd(a, model_kind((enum br_kind_id)i));
		if (!crd)
			continue;
		sb_adds(out, "---\n");
		yaml_write(out, crd);
	}
	arena_free(a);
}

/* @spec's MF_CRD_STRING fields of kind @k converted by @conv (a new object in @a). */
static struct jv *convert_flagged(struct arena *a, const struct br_kind *k, const struct jv *spec,
				  struct jv *(*conv)(struct arena *a, const struct jv *v))
{
	if (!k->spec || !spec || spec->type != JV_OBJECT)
		return (struct jv *)spec;
	struct jv *out = jv_object(a);
	for (size_t i = 0; i < spec->obj.n; i++) {
		const struct jv_member *m = &spec->obj.members[i];
		struct jv *v = m->value;
		for (size_t f = 0; f < k->spec->n_fields; f++)
			if ((k->spec->fields[f].flags & MF_CRD_STRING) &&
			    streq(k->spec->fields[f].name, m->key))
				v = conv(a, v);
		jv_add(a, out, m->key, v);
	}
	return out;
}

static struct jv *bool_to_string(struct arena *a, const struct jv *v)
{
	bool b;
	return jv_as_bool(v, &b) ? jv_string(a, b ? "true" : "false") : (struct jv *)v;
}

static struct jv *string_to_bool(struct arena *a, const struct jv *v)
{
	const char *s = v->type == JV_STRING ? jv_as_string(v) : NULL;
	if (s && (streq(s, "true") || streq(s, "false")))
		return jv_bool(a, streq(s, "true"));
	if (s && !*s)
		return jv_bool(a, false); /* empty: not set, so not deleted */
	return (struct jv *)v;
}

struct jv *model_crd_spec_out(struct arena *a, const struct br_kind *k, const struct jv *spec)
{
	return convert_flagged(a, k, spec, bool_to_string);
}

struct jv *model_crd_spec_in(struct arena *a, const struct br_kind *k, const struct jv *spec)
{
	return convert_flagged(a, k, spec, string_to_bool);
}
