/*
 * The field-table engine: decode a jv tree into typed structs (rejecting
 * unknown fields), apply defaults, validate, and encode back to the canonical
 * jv form. Also the document-level entry points (kind lookup and dispatch,
 * kind: List, file reading). Errors and field paths are model_ctx.c's.
 */
#include "model_internal.h"

#include <brindle/core/json.h>
#include <brindle/core/yaml.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* --- decoding -------------------------------------------------------------- */

/* The engine's entry points, recursive through the field functions below. */
static bool model_decode_struct(struct model_ctx *c, const struct model_struct *d,
				const struct jv *v, void *obj);
static void model_default_struct(struct model_ctx *c, const struct model_struct *d, void *obj);
static void model_check_struct(struct model_ctx *c, const struct model_struct *d, const void *obj);
/* NULL when everything is empty (and not MF_EMIT_EMPTY at the parent). */
static struct jv *model_encode_struct(struct arena *a, const struct model_struct *d,
				      const void *obj, bool force);

#define AT(obj, off)  ((void *)((char *)(obj) + (off)))
#define CAT(obj, off) ((const void *)((const char *)(obj) + (off)))

static const struct model_field *find_field(const struct model_struct *d, const char *name)
{
	for (size_t i = 0; i < d->n_fields; i++)
		if (streq(d->fields[i].name, name))
			return &d->fields[i];
	return NULL;
}

/* A control character other than tab, newline and carriage return: its offset, else -1. */
static long control_char(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') || *p == 0x7f)
			return (long)(p - (const unsigned char *)s);
	return -1;
}

static bool refuse_control(struct model_ctx *c, const char *field, const char *s)
{
	long at = control_char(s);
	if (at < 0)
		return false;
	char what[96];
	snprintf(what, sizeof(what), "must not hold control characters (byte 0x%02x at offset %ld)",
		 (unsigned char)s[at], at);
	if (field)
		model_err_at(c, field, "%s", what);
	else
		model_err(c, "%s", what);
	return true;
}

static bool decode_string(struct model_ctx *c, const struct jv *v, const char **out)
{
	const char *s = jv_as_string(v);
	if (!s) {
		model_err(c, "must be a string, not a %s", jv_type_name(v->type));
		return false;
	}
	if (refuse_control(c, NULL, s))
		return false;
	*out = arena_strdup(c->a, s);
	return true;
}

static bool decode_field(struct model_ctx *c, const struct model_field *f, const struct jv *v,
			 void *obj)
{
	void *p = AT(obj, f->off);
	int64_t i;
	double d;
	bool b;
	switch (f->type) {
	case MF_STRING:
		if (!decode_string(c, v, p))
			return false;
		if ((f->flags & MF_NOCASE) && f->enum_values)
			for (const char *const *e = f->enum_values; *e; e++)
				if (strcasecmp(*e, *(const char **)p) == 0)
					*(const char **)p = *e;
		return true;
	case MF_BOOL:
	case MF_OPT_BOOL:
		if (!jv_as_bool(v, &b)) {
			model_err(c, "must be true or false");
			return false;
		}
		if (f->type == MF_BOOL)
			*(bool *)p = b;
		else
			*(struct opt_bool *)p = (struct opt_bool){ true, b };
		return true;
	case MF_INT:
	case MF_OPT_INT:
		if (!jv_as_int64(v, &i)) {
			model_err(c, "must be an integer");
			return false;
		}
		if (f->type == MF_INT)
			*(int64_t *)p = i;
		else
			*(struct opt_int *)p = (struct opt_int){ true, i };
		return true;
	case MF_OPT_FLOAT:
		if (!jv_as_double(v, &d)) {
			model_err(c, "must be a number");
			return false;
		}
		*(struct opt_float *)p = (struct opt_float){ true, d };
		return true;
	case MF_STRLIST: {
		if (v->type != JV_ARRAY) {
			model_err(c, "must be a list of strings");
			return false;
		}
		const char **items = arena_alloc(c->a, sizeof(char *) * (v->arr.n ? v->arr.n : 1));
		bool ok = true;
		for (size_t k = 0; k < v->arr.n; k++) {
			size_t m = model_push_index(c, k);
			if (!decode_string(c, v->arr.items[k], &items[k])) {
				items[k] = ""; /* reported; the checks see a string */
				ok = false;
			}
			model_pop(c, m);
		}
		*(const char ***)p = items;
		*(size_t *)AT(obj, f->count_off) = v->arr.n;
		return ok;
	}
	case MF_MAP: {
		if (v->type != JV_OBJECT) {
			model_err(c, "must be a map of strings");
			return false;
		}
		struct br_labels *l = p;
		bool ok = true;
		for (size_t k = 0; k < v->obj.n; k++) {
			const struct jv *mv = v->obj.members[k].value;
			const char *s = jv_as_string(mv);
			if (!s) {
				model_err_at(c, v->obj.members[k].key, "must be a string, not a %s",
					     jv_type_name(mv->type));
				ok = false;
				continue;
			}
			if (refuse_control(c, v->obj.members[k].key, v->obj.members[k].key) ||
			    refuse_control(c, v->obj.members[k].key, s)) {
				ok = false;
				continue;
			}
			labels_set(c->a, l, v->obj.members[k].key, s);
		}
		return ok;
	}
	case MF_STRUCT:
		return model_decode_struct(c, f->sub, v, p);
	case MF_PTR: {
		void *sub = arena_alloc(c->a, f->sub->size);
		*(void **)p = sub;
		return model_decode_struct(c, f->sub, v, sub);
	}
	case MF_LIST: {
		if (v->type != JV_ARRAY) {
			model_err(c, "must be a list");
			return false;
		}
		char *items = arena_alloc(c->a, f->sub->size * (v->arr.n ? v->arr.n : 1));
		bool ok = true;
		for (size_t k = 0; k < v->arr.n; k++) {
			size_t m = model_push_index(c, k);
			ok &= model_decode_struct(c, f->sub, v->arr.items[k],
						  items + k * f->sub->size);
			model_pop(c, m);
		}
		*(void **)p = items;
		*(size_t *)AT(obj, f->count_off) = v->arr.n;
		return ok;
	}
	case MF_CUSTOM:
		return f->codec->decode(c, v, p);
	}
	return false;
}

static bool model_decode_struct(struct model_ctx *c, const struct model_struct *d,
				const struct jv *v, void *obj)
{
	if (v->type != JV_OBJECT) {
		model_err(c, "must be an object, not a %s", jv_type_name(v->type));
		return false;
	}
	bool ok = true;
	for (size_t i = 0; i < v->obj.n; i++) {
		const char *key = v->obj.members[i].key;
		const struct jv *mv = v->obj.members[i].value;
		for (size_t j = 0; j < i; j++) {
			if (streq(v->obj.members[j].key, key)) {
				model_err_at(c, key, "duplicate field");
				ok = false;
			}
		}
		const struct model_field *f = find_field(d, key);
		if (!f) {
			model_err_at(c, key, "unknown field");
			ok = false;
			continue;
		}
		if (f->present_off)
			*(bool *)AT(obj, f->present_off) = true;
		if (mv->type == JV_NULL)
			continue; /* null is absent, as in Kubernetes */
		size_t m = model_push(c, key);
		ok &= decode_field(c, f, mv, obj);
		model_pop(c, m);
	}
	return ok;
}

/* --- defaults ---------------------------------------------------------------- */

static void model_default_struct(struct model_ctx *c, const struct model_struct *d, void *obj)
{
	if (d->defaults)
		d->defaults(c, obj);
	for (size_t i = 0; i < d->n_fields; i++) {
		const struct model_field *f = &d->fields[i];
		void *p = AT(obj, f->off);
		switch (f->type) {
		case MF_STRUCT:
			model_default_struct(c, f->sub, p);
			break;
		case MF_PTR:
			if (*(void **)p)
				model_default_struct(c, f->sub, *(void **)p);
			break;
		case MF_LIST: {
			char *items = *(char **)p;
			size_t n = *(size_t *)AT(obj, f->count_off);
			for (size_t k = 0; k < n; k++)
				model_default_struct(c, f->sub, items + k * f->sub->size);
			break;
		}
		default:
			break;
		}
	}
}

/* --- validation ------------------------------------------------------------- */

static bool field_present(const struct model_field *f, const void *obj)
{
	const void *p = CAT(obj, f->off);
	switch (f->type) {
	case MF_STRING:
		return *(const char *const *)p && **(const char *const *)p;
	case MF_BOOL:
		return *(const bool *)p;
	case MF_OPT_BOOL:
		return ((const struct opt_bool *)p)->set;
	case MF_INT:
		return *(const int64_t *)p != 0;
	case MF_OPT_INT:
		return ((const struct opt_int *)p)->set;
	case MF_OPT_FLOAT:
		return ((const struct opt_float *)p)->set;
	case MF_STRLIST:
	case MF_LIST:
		return *(const size_t *)CAT(obj, f->count_off) > 0;
	case MF_MAP:
		return ((const struct br_labels *)p)->n > 0;
	case MF_STRUCT:
		return true;
	case MF_PTR:
		return *(void *const *)p != NULL;
	case MF_CUSTOM: {
		struct arena *a = arena_new();
		bool present = f->codec->encode(a, p) != NULL;
		arena_free(a);
		return present;
	}
	}
	return false;
}

static void check_enum(struct model_ctx *c, const struct model_field *f, const char *s)
{
	for (const char *const *e = f->enum_values; *e; e++)
		if (streq(*e, s))
			return;
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (const char *const *e = f->enum_values; *e; e++) {
		if (e != f->enum_values)
			sb_adds(&sb, e[1] ? ", " : " or ");
		sb_adds(&sb, *e);
	}
	model_err(c, "\"%s\" is not one of %s", s, sb_str(&sb));
	sb_free(&sb);
}

static void check_range(struct model_ctx *c, const struct model_field *f, int64_t v)
{
	if (f->min < f->max && (v < f->min || v > f->max))
		model_err(c, "%" PRId64 " is out of range (%" PRId64 "-%" PRId64 ")", v, f->min,
			  f->max);
}

static void model_check_struct(struct model_ctx *c, const struct model_struct *d, const void *obj)
{
	for (size_t i = 0; i < d->n_fields; i++) {
		const struct model_field *f = &d->fields[i];
		const void *p = CAT(obj, f->off);
		if (!field_present(f, obj)) {
			if (f->flags & MF_REQUIRED)
				model_err_at(c, f->name, "required");
			continue;
		}
		size_t m = model_push(c, f->name);
		switch (f->type) {
		case MF_STRING:
			if (f->enum_values)
				check_enum(c, f, *(const char *const *)p);
			break;
		case MF_INT:
			check_range(c, f, *(const int64_t *)p);
			break;
		case MF_OPT_INT:
			check_range(c, f, ((const struct opt_int *)p)->v);
			break;
		case MF_STRLIST:
			if (f->check_item) {
				const char *const *items = *(const char *const *const *)p;
				size_t n = *(const size_t *)CAT(obj, f->count_off);
				for (size_t k = 0; k < n; k++) {
					size_t mi = model_push_index(c, k);
					f->check_item(c, items[k]);
					model_pop(c, mi);
				}
			}
			break;
		case MF_STRUCT:
			model_check_struct(c, f->sub, p);
			break;
		case MF_PTR:
			model_check_struct(c, f->sub, *(const void *const *)p);
			break;
		case MF_LIST: {
			const char *items = *(const char *const *)p;
			size_t n = *(const size_t *)CAT(obj, f->count_off);
			for (size_t k = 0; k < n; k++) {
				size_t mi = model_push_index(c, k);
				model_check_struct(c, f->sub, items + k * f->sub->size);
				model_pop(c, mi);
			}
			break;
		}
		default:
			break;
		}
		if (f->check)
			f->check(c, p);
		model_pop(c, m);
	}
	if (d->check)
		d->check(c, obj);
}

/* --- encoding ----------------------------------------------------------------- */

static struct jv *encode_field(struct arena *a, const struct model_field *f, const void *obj)
{
	const void *p = CAT(obj, f->off);
	bool emit_empty = f->flags & MF_EMIT_EMPTY;
	switch (f->type) {
	case MF_STRING: {
		const char *s = *(const char *const *)p;
		return (s && *s) ? jv_string(a, s) : (emit_empty ? jv_string(a, "") : NULL);
	}
	case MF_BOOL:
		return (*(const bool *)p || emit_empty) ? jv_bool(a, *(const bool *)p) : NULL;
	case MF_OPT_BOOL: {
		const struct opt_bool *o = p;
		return o->set ? jv_bool(a, o->v) : NULL;
	}
	case MF_INT:
		return (*(const int64_t *)p || emit_empty) ? jv_int(a, *(const int64_t *)p) : NULL;
	case MF_OPT_INT: {
		const struct opt_int *o = p;
		return o->set ? jv_int(a, o->v) : NULL;
	}
	case MF_OPT_FLOAT: {
		const struct opt_float *o = p;
		return o->set ? jv_double(a, o->v) : NULL;
	}
	case MF_STRLIST: {
		const char *const *items = *(const char *const *const *)p;
		size_t n = *(const size_t *)CAT(obj, f->count_off);
		bool present = f->present_off && *(const bool *)CAT(obj, f->present_off);
		if (!n && !emit_empty && !present)
			return NULL;
		struct jv *arr = jv_array(a);
		for (size_t k = 0; k < n; k++)
			jv_push(a, arr, jv_string(a, items[k]));
		return arr;
	}
	case MF_MAP: {
		const struct br_labels *l = p;
		if (!l->n && !emit_empty)
			return NULL;
		struct jv *o = jv_object(a);
		for (size_t k = 0; k < l->n; k++)
			jv_add(a, o, l->v[k].key, jv_string(a, l->v[k].value));
		return o;
	}
	case MF_STRUCT:
		return model_encode_struct(a, f->sub, p, emit_empty);
	case MF_PTR: {
		const void *sub = *(const void *const *)p;
		return sub ? model_encode_struct(a, f->sub, sub, true) : NULL;
	}
	case MF_LIST: {
		const char *items = *(const char *const *)p;
		size_t n = *(const size_t *)CAT(obj, f->count_off);
		bool present = f->present_off && *(const bool *)CAT(obj, f->present_off);
		if (!n && !emit_empty && !present)
			return NULL;
		struct jv *arr = jv_array(a);
		for (size_t k = 0; k < n; k++)
			jv_push(a, arr,
				model_encode_struct(a, f->sub, items + k * f->sub->size, true));
		return arr;
	}
	case MF_CUSTOM:
		return f->codec->encode(a, p);
	}
	return NULL;
}

static struct jv *model_encode_struct(struct arena *a, const struct model_struct *d,
				      const void *obj, bool force)
{
	struct jv *o = jv_object(a);
	for (size_t i = 0; i < d->n_fields; i++) {
		struct jv *v = encode_field(a, &d->fields[i], obj);
		if (v)
			jv_add(a, o, d->fields[i].name, v);
	}
	return (o->obj.n || force) ? o : NULL;
}

/* --- metadata ------------------------------------------------------------------ */

static void check_meta_labels(struct model_ctx *c, const void *field)
{
	model_check_label_map(c, field);
}

static const struct model_field meta_fields[] = {
	MF("name", MF_STRING, struct br_meta, name),
	MF("namespace", MF_STRING, struct br_meta, namespace, .check = model_check_dns_label),
	MF("uid", MF_STRING, struct br_meta, uid),
	MF("resourceVersion", MF_STRING, struct br_meta, resource_version),
	MF("generation", MF_OPT_INT, struct br_meta, generation),
	MF("creationTimestamp", MF_STRING, struct br_meta, creation_timestamp),
	MF("labels", MF_MAP, struct br_meta, labels, .check = check_meta_labels),
	MF("annotations", MF_MAP, struct br_meta, annotations, .check = model_check_annotation_map),
};
static MODEL_STRUCT(meta_desc, struct br_meta, meta_fields);

/* --- kinds --------------------------------------------------------------------- */

const struct br_kind *model_kind(enum br_kind_id id)
{
	return &model_kinds[id];
}

/* By apiVersion and kind as written in a document. */
static const struct br_kind *model_kind_find(const char *api_version, const char *kind)
{
	for (size_t i = 0; i < KIND_COUNT; i++)
		if (streq(model_kinds[i].kind, kind) &&
		    streq(model_kinds[i].api_version, api_version))
			return &model_kinds[i];
	return NULL;
}

static bool name_matches(const struct br_kind *k, const char *name)
{
	if (strcasecmp(name, k->kind) == 0 || strcasecmp(name, k->plural) == 0)
		return true;
	for (const char *const *a = k->aliases; a && *a; a++)
		if (strcasecmp(name, *a) == 0)
			return true;
	return false;
}

const struct br_kind *model_kind_by_name(const char *name)
{
	const char *dot = strchr(name, '.');
	char base[64];
	if (dot && (size_t)(dot - name) < sizeof(base)) {
		/* Qualified: "networkpolicy.networking.k8s.io", "ippools.projectcalico.org" */
		memcpy(base, name, (size_t)(dot - name));
		base[dot - name] = '\0';
		for (size_t i = 0; i < KIND_COUNT; i++) {
			const struct br_kind *k = &model_kinds[i];
			if (strcasecmp(dot + 1, k->group) == 0 &&
			    (strcasecmp(base, k->kind) == 0 || strcasecmp(base, k->plural) == 0))
				return k;
		}
		return NULL;
	}
	/* Calico's kinds come first in the table, so bare "networkpolicy" is Calico's. */
	for (size_t i = 0; i < KIND_COUNT; i++)
		if (name_matches(&model_kinds[i], name))
			return &model_kinds[i];
	return NULL;
}

/* --- resources ------------------------------------------------------------------ */

static const struct br_kind *find_kind_by_doc(const char *api_version, const char *kind,
					      bool *api_mismatch)
{
	*api_mismatch = false;
	const struct br_kind *k = model_kind_find(api_version, kind);
	if (k)
		return k;
	for (size_t i = 0; i < KIND_COUNT; i++)
		if (streq(model_kinds[i].kind, kind))
			*api_mismatch = true;
	return NULL;
}

static struct br_object *decode_resource(struct model_ctx *c, const struct br_kind *k,
					 const struct jv *doc)
{
	struct arena *a = arena_new();
	struct br_object *o = arena_alloc(a, k->size);
	o->kind = k;
	o->arena = a;
	c->a = a;
	c->obj = o;
	size_t before = c->errs->n;
	model_failed_clear(c);

	/* A kind without "spec" (EndpointSlice) has its fields at the top level. */
	struct arena *tmp = k->spec_inline ? arena_new() : NULL;
	struct jv *inline_spec = tmp ? jv_object(tmp) : NULL;
	for (size_t i = 0; i < doc->obj.n; i++) {
		const char *key = doc->obj.members[i].key;
		const struct jv *v = doc->obj.members[i].value;
		if (inline_spec && !streq(key, "apiVersion") && !streq(key, "kind") &&
		    !streq(key, "metadata")) {
			jv_add(tmp, inline_spec, key, (struct jv *)v);
			continue;
		}
		size_t m = model_push(c, key);
		if (streq(key, "apiVersion") || streq(key, "kind")) {
			/* matched by the caller */
		} else if (streq(key, "metadata")) {
			model_decode_struct(c, &meta_desc, v, &o->meta);
		} else if (streq(key, "spec") && k->spec) {
			if (v->type != JV_NULL)
				model_decode_struct(c, k->spec, v, AT(o, k->spec_off));
		} else if (streq(key, "status") && k->status) {
			if (v->type != JV_NULL)
				model_decode_struct(c, k->status, v, AT(o, k->status_off));
		} else {
			model_err(c, "unknown field");
		}
		model_pop(c, m);
	}
	if (inline_spec)
		model_decode_struct(c, k->spec, inline_spec, AT(o, k->spec_off));
	arena_free(tmp);

	if (!o->meta.name || !*o->meta.name) {
		if (!model_path_failed(c, "metadata.name"))
			model_err_at(c, "metadata.name", "required"); /* and marks it failed */
		o->meta.name = ""; /* the checks below see a name; their errors are not repeated */
	}
	if (k->namespaced && !o->meta.namespace)
		o->meta.namespace = c->default_ns ? arena_strdup(a, c->default_ns) : "default";
	if (!k->namespaced && o->meta.namespace && *o->meta.namespace)
		model_err_at(c, "metadata.namespace", "must not be set: %s is not namespaced",
			     k->kind);

	/* Default and check what did decode, so that one bad field does not hide the others'
	 * problems; errors under a field that failed to decode are not reported twice. */
	c->checking = true;
	size_t m = k->spec_inline ? c->path.len : model_push(c, "spec");
	if (k->spec)
		model_default_struct(c, k->spec, AT(o, k->spec_off));
	model_pop(c, m);
	if (k->defaults)
		k->defaults(c, o);
	m = model_push(c, "metadata");
	model_check_struct(c, &meta_desc, &o->meta);
	model_pop(c, m);
	model_check_name(c, o);
	m = k->spec_inline ? c->path.len : model_push(c, "spec");
	if (k->spec)
		model_check_struct(c, k->spec, AT(o, k->spec_off));
	model_pop(c, m);
	if (k->status) {
		m = model_push(c, "status");
		model_check_struct(c, k->status, AT(o, k->status_off));
		model_pop(c, m);
	}
	if (k->check)
		k->check(c, o);
	model_failed_clear(c);
	if (c->errs->n != before) {
		arena_free(a);
		return NULL;
	}
	return o;
}

static struct br_object *decode_doc(struct model_ctx *c, const struct jv *doc, bool allow_internal)
{
	if (doc->type != JV_OBJECT) {
		model_err(c, "must be an object with apiVersion and kind, not a %s",
			  jv_type_name(doc->type));
		return NULL;
	}
	const struct jv *av = jv_get(doc, "apiVersion"), *kv = jv_get(doc, "kind");
	const char *api_version = jv_as_string(av), *kind = jv_as_string(kv);
	if (!api_version || !*api_version)
		model_err_at(c, "apiVersion", "required");
	if (!kind || !*kind)
		model_err_at(c, "kind", "required");
	if (!api_version || !kind || !*api_version || !*kind)
		return NULL;
	bool mismatch;
	const struct br_kind *k = find_kind_by_doc(api_version, kind, &mismatch);
	if (k && k->internal && !allow_internal)
		k = NULL, mismatch = false;
	if (!k) {
		if (mismatch)
			model_err_at(c, "apiVersion", "%s is not served as %s", kind, api_version);
		else
			model_err_at(c, "kind", "unknown kind \"%s\" (apiVersion %s)", kind,
				     api_version);
		return NULL;
	}
	return decode_resource(c, k, doc);
}

static void ctx_init(struct model_ctx *c, struct model_errors *errs)
{
	memset(c, 0, sizeof(*c));
	sb_init(&c->path);
	c->errs = errs;
	c->n_errs_before = errs->n;
}

struct br_object *model_decode(const struct jv *doc, bool allow_internal, struct model_errors *errs)
{
	struct model_ctx c;
	ctx_init(&c, errs);
	struct br_object *o = decode_doc(&c, doc, allow_internal);
	model_failed_clear(&c);
	sb_free(&c.path);
	return o;
}

struct br_object *model_decode_kind(const struct br_kind *k, const struct jv *doc,
				    struct model_errors *errs)
{
	struct model_ctx c;
	ctx_init(&c, errs);
	c.stored = true;
	struct br_object *o = NULL;
	const char *kind = jv_as_string(jv_get(doc, "kind"));
	if (doc->type != JV_OBJECT)
		model_err(&c, "must be an object");
	else if (!streq(kind, k->kind))
		model_err_at(&c, "kind", "expected %s, found %s", k->kind, kind ? kind : "none");
	else
		o = decode_resource(&c, k, doc);
	model_failed_clear(&c);
	sb_free(&c.path);
	return o;
}

/* --- pruning ------------------------------------------------------------------ */

static struct jv *prune_struct(struct arena *a, const struct model_struct *d, const struct jv *v);

static struct jv *prune_value(struct arena *a, const struct model_field *f, struct jv *v)
{
	if ((f->type == MF_STRUCT || f->type == MF_PTR) && v->type == JV_OBJECT)
		return prune_struct(a, f->sub, v);
	if (f->type == MF_LIST && v->type == JV_ARRAY) {
		struct jv *arr = jv_array(a);
		for (size_t i = 0; i < v->arr.n; i++) {
			struct jv *item = v->arr.items[i];
			jv_push(a, arr,
				item->type == JV_OBJECT ? prune_struct(a, f->sub, item) : item);
		}
		return arr;
	}
	return v; /* scalars, maps, codecs, and values of the wrong type (the decoder says so) */
}

static struct jv *prune_struct(struct arena *a, const struct model_struct *d, const struct jv *v)
{
	struct jv *out = jv_object(a);
	for (size_t i = 0; i < v->obj.n; i++) {
		const struct model_field *f = find_field(d, v->obj.members[i].key);
		if (f)
			jv_add(a, out, f->name, prune_value(a, f, v->obj.members[i].value));
	}
	return out;
}

struct jv *model_prune(struct arena *a, const struct br_kind *k, const struct jv *doc)
{
	if (doc->type != JV_OBJECT)
		return (struct jv *)doc;
	struct jv *out = jv_object(a);
	for (size_t i = 0; i < doc->obj.n; i++) {
		const char *key = doc->obj.members[i].key;
		struct jv *v = doc->obj.members[i].value;
		const struct model_field *f;
		if (streq(key, "apiVersion") || streq(key, "kind"))
			jv_add(a, out, key, v);
		else if (streq(key, "metadata"))
			jv_add(a, out, key,
			       v->type == JV_OBJECT ? prune_struct(a, &meta_desc, v) : v);
		else if (streq(key, "spec") && k->spec && !k->spec_inline)
			jv_add(a, out, key, v->type == JV_OBJECT ? prune_struct(a, k->spec, v) : v);
		else if (streq(key, "status") && k->status)
			jv_add(a, out, key,
			       v->type == JV_OBJECT ? prune_struct(a, k->status, v) : v);
		else if (k->spec && k->spec_inline && (f = find_field(k->spec, key)))
			jv_add(a, out, key, prune_value(a, f, v));
	}
	return out;
}

struct br_object *model_new(const struct br_kind *k, const char *ns, const char *name)
{
	struct arena *a = arena_new();
	struct br_object *o = arena_alloc(a, k->size);
	o->kind = k;
	o->arena = a;
	o->meta.name = arena_strdup(a, name);
	if (k->namespaced)
		o->meta.namespace = arena_strdup(a, ns ? ns : "default");
	struct model_errors errs = { 0 };
	struct model_ctx c;
	ctx_init(&c, &errs);
	c.a = a;
	c.obj = o;
	if (k->spec)
		model_default_struct(&c, k->spec, AT(o, k->spec_off));
	if (k->defaults)
		k->defaults(&c, o);
	sb_free(&c.path);
	model_errors_clear(&errs);
	return o;
}

void model_free(struct br_object *o)
{
	if (o)
		arena_free(o->arena);
}

void model_free_all(struct br_object **objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		model_free(objs[i]);
	free(objs);
}

struct jv *model_encode(struct arena *a, const struct br_object *o)
{
	const struct br_kind *k = o->kind;
	struct jv *doc = jv_object(a);
	jv_add(a, doc, "apiVersion", jv_string(a, k->api_version));
	jv_add(a, doc, "kind", jv_string(a, k->kind));
	jv_add(a, doc, "metadata", model_encode_struct(a, &meta_desc, &o->meta, true));
	if (k->spec && k->spec_inline) {
		struct jv *spec = model_encode_struct(a, k->spec, CAT(o, k->spec_off), true);
		for (size_t i = 0; i < spec->obj.n; i++)
			jv_add(a, doc, spec->obj.members[i].key, spec->obj.members[i].value);
	} else if (k->spec) {
		struct jv *spec = model_encode_struct(a, k->spec, CAT(o, k->spec_off), true);
		jv_add(a, doc, "spec", spec);
	}
	if (k->status) {
		struct jv *st = model_encode_struct(a, k->status, CAT(o, k->status_off), false);
		if (st)
			jv_add(a, doc, "status", st);
	}
	return doc;
}

void model_to_json(const struct br_object *o, struct strbuf *out)
{
	struct arena *a = arena_new();
	json_write(out, model_encode(a, o), false);
	arena_free(a);
}

struct br_object *model_clone(const struct br_object *o)
{
	struct arena *a = arena_new();
	struct model_errors errs = { 0 };
	struct br_object *c = model_decode_kind(o->kind, model_encode(a, o), &errs);
	arena_free(a);
	model_errors_clear(&errs);
	if (c)
		c->revision = o->revision;
	return c;
}

bool model_equal(const struct br_object *x, const struct br_object *y)
{
	if (x->kind != y->kind)
		return false;
	struct arena *a = arena_new();
	bool eq = jv_equal(model_encode(a, x), model_encode(a, y));
	arena_free(a);
	return eq;
}

bool model_same_content(const struct br_object *x, const struct br_object *y)
{
	if (x->kind != y->kind || !labels_equal(&x->meta.labels, &y->meta.labels) ||
	    !labels_equal(&x->meta.annotations, &y->meta.annotations))
		return false;
	struct arena *a = arena_new();
	const struct br_kind *k = x->kind;
	bool eq = true;
	/* Status counts too: a Service's load-balancer address lives there. */
	if (k->spec)
		eq = jv_equal(model_encode_struct(a, k->spec, CAT(x, k->spec_off), true),
			      model_encode_struct(a, k->spec, CAT(y, k->spec_off), true));
	if (eq && k->status) {
		const struct jv *sx =
			model_encode_struct(a, k->status, CAT(x, k->status_off), false);
		const struct jv *sy =
			model_encode_struct(a, k->status, CAT(y, k->status_off), false);
		eq = (!sx && !sy) || (sx && sy && jv_equal(sx, sy));
	}
	arena_free(a);
	return eq;
}

/* --- reading files ----------------------------------------------------------------- */

struct objvec {
	struct br_object **v;
	size_t n, cap;
};

static void objvec_push(struct objvec *ov, struct br_object *o)
{
	GROW(ov->v, ov->cap, ov->n + 1);
	ov->v[ov->n++] = o;
}

/*
 * The list forms calicoctl and kubectl read and write: "kind: List" (items of any
 * kind), "kind: <Kind>List" (what `get -o yaml` of one kind prints; its items
 * may leave out apiVersion and kind, as the Kubernetes API's typed lists do),
 * and a document that is itself a list of resources. NULL when @doc is one
 * resource; *@item_kind is the typed list's kind.
 */
static const struct jv *doc_items(struct model_ctx *c, const struct jv *doc,
				  const struct br_kind **item_kind)
{
	*item_kind = NULL;
	if (doc->type == JV_ARRAY)
		return doc;
	if (doc->type != JV_OBJECT)
		return NULL;
	const char *kind = jv_as_string(jv_get(doc, "kind"));
	const char *av = jv_as_string(jv_get(doc, "apiVersion"));
	size_t kl = kind ? strlen(kind) : 0;
	if (!kind || kl < 4 || !streq(kind + kl - 4, "List"))
		return NULL;
	if (!streq(kind, "List")) {
		char *base = strndup(kind, kl - 4);
		if (!base)
			return NULL;
		*item_kind = av ? model_kind_find(av, base) : NULL;
		free(base);
		if (!*item_kind)
			return NULL; /* reported as an unknown kind */
	}
	for (size_t i = 0; i < doc->obj.n; i++) {
		const char *key = doc->obj.members[i].key;
		if (!streq(key, "apiVersion") && !streq(key, "kind") && !streq(key, "items") &&
		    !streq(key, "metadata"))
			model_err_at(c, key, "unknown field");
	}
	const struct jv *items = jv_get(doc, "items");
	if (items && items->type != JV_ARRAY) {
		model_err_at(c, "items", "must be a list");
		return NULL;
	}
	static const struct jv none = { .type = JV_ARRAY };
	return items ? items : &none;
}

/* An item of a typed list, with the list's apiVersion and kind where it gives none. */
static const struct jv *typed_item(struct arena *a, const struct br_kind *k, const struct jv *item)
{
	if (!k || item->type != JV_OBJECT || (jv_get(item, "apiVersion") && jv_get(item, "kind")))
		return item;
	struct jv *o = jv_object(a);
	if (!jv_get(item, "apiVersion"))
		jv_add(a, o, "apiVersion", jv_string(a, k->api_version));
	if (!jv_get(item, "kind"))
		jv_add(a, o, "kind", jv_string(a, k->kind));
	for (size_t i = 0; i < item->obj.n; i++)
		jv_add(a, o, item->obj.members[i].key, item->obj.members[i].value);
	return o;
}

static void read_doc(const char *source, size_t docno, const struct jv *doc, const char *default_ns,
		     bool allow_internal, struct objvec *out, struct model_errors *errs)
{
	struct model_errors local = { 0 };
	struct model_ctx c;
	ctx_init(&c, &local);
	c.default_ns = default_ns;
	const struct br_kind *item_kind;
	const struct jv *items = doc_items(&c, doc, &item_kind);
	if (items) {
		struct arena *a = arena_new();
		for (size_t i = 0; i < items->arr.n; i++) {
			sb_reset(&c.path);
			sb_addf(&c.path, doc->type == JV_ARRAY ? "[%zu]" : "items[%zu]", i);
			const struct jv *item = typed_item(a, item_kind, items->arr.items[i]);
			const char *ik = jv_as_string(jv_get(item, "kind"));
			if (item_kind && item->type == JV_OBJECT && ik &&
			    !streq(ik, item_kind->kind)) {
				model_err_at(&c, "kind", "a %sList holds %s, not %s",
					     item_kind->kind, item_kind->kind, ik);
				continue;
			}
			struct br_object *o = decode_doc(&c, item, allow_internal);
			if (o)
				objvec_push(out, o);
		}
		arena_free(a);
	} else if (c.errs->n == c.n_errs_before) {
		struct br_object *o = decode_doc(&c, doc, allow_internal);
		if (o)
			objvec_push(out, o);
	}
	for (size_t i = 0; i < local.n; i++)
		model_errors_add(errs, "%s: document %zu: %s", source, docno, local.v[i]);
	model_errors_clear(&local);
	model_failed_clear(&c);
	sb_free(&c.path);
}

static int read_all(const char *source, const char *text, size_t len, const char *default_ns,
		    bool allow_internal, struct br_object ***objs, size_t *n,
		    struct model_errors *errs)
{
	struct arena *a = arena_new();
	struct strbuf perr = STRBUF_INIT;
	struct jv **docs = NULL;
	size_t ndocs = 0;
	size_t before = errs->n;
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	sb_init(&perr);
	int r;
	if (i < len && (text[i] == '{' || text[i] == '[')) {
		r = json_parse_all(a, text, len, &docs, &ndocs, &perr);
		if (r < 0)
			model_errors_add(errs, "%s: %s", source, sb_str(&perr));
	} else {
		r = yaml_parse_all(a, text, len, &docs, &ndocs, &perr);
		if (r < 0)
			model_errors_add(errs, "%s: %s", source, sb_str(&perr));
	}
	sb_free(&perr);

	struct objvec out = { 0 };
	struct strbuf json = STRBUF_INIT;
	sb_init(&json);
	for (size_t d = 0; r == 0 && d < ndocs; d++) {
		if (!docs[d])
			continue;
		/* Its size as the Kubernetes API would take it. */
		sb_reset(&json);
		json_write(&json, docs[d], false);
		if (json.len > MODEL_MAX_DOCUMENT) {
			model_errors_add(
				errs,
				"%s: document %zu: %.1f MiB as JSON, over the %.1f MiB one "
				"resource may have (the Kubernetes API's limit)",
				source, d + 1, (double)json.len / (1 << 20),
				(double)MODEL_MAX_DOCUMENT / (1 << 20));
			continue;
		}
		read_doc(source, d + 1, docs[d], default_ns, allow_internal, &out, errs);
	}
	sb_free(&json);
	arena_free(a);
	if (r == 0 && out.n == 0 && errs->n == before)
		model_errors_add(errs, "%s: no resources found", source);
	if (errs->n != before) {
		model_free_all(out.v, out.n);
		*objs = NULL;
		*n = 0;
		return -EINVAL;
	}
	*objs = out.v;
	*n = out.n;
	return 0;
}

int model_read(const char *source, const char *text, size_t len, const char *default_ns,
	       struct br_object ***objs, size_t *n, struct model_errors *errs)
{
	return read_all(source, text, len, default_ns, false, objs, n, errs);
}

int model_read_internal(const char *source, const char *text, size_t len, const char *default_ns,
			struct br_object ***objs, size_t *n, struct model_errors *errs)
{
	return read_all(source, text, len, default_ns, true, objs, n, errs);
}
