/* The document tree: construction, lookup and scalar conversion. */
#include <brindle/core/jv.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static struct jv *scalar(struct arena *a, enum jv_type t, const char *text, size_t len)
{
	struct jv *v = arena_alloc(a, sizeof(*v));
	v->type = t;
	v->s.text = arena_strndup(a, text, len);
	v->s.len = len;
	return v;
}

struct jv *jv_null(struct arena *a)
{
	return scalar(a, JV_NULL, "null", 4);
}

struct jv *jv_bool(struct arena *a, bool b)
{
	return b ? scalar(a, JV_BOOL, "true", 4) : scalar(a, JV_BOOL, "false", 5);
}

struct jv *jv_number_text(struct arena *a, const char *text, size_t len)
{
	return scalar(a, JV_NUMBER, text, len);
}

struct jv *jv_int(struct arena *a, int64_t i)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRId64, i);
	return scalar(a, JV_NUMBER, buf, (size_t)n);
}

struct jv *jv_uint(struct arena *a, uint64_t u)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, u);
	return scalar(a, JV_NUMBER, buf, (size_t)n);
}

struct jv *jv_double(struct arena *a, double d)
{
	char buf[64];
	int n;
	if (d == (double)(int64_t)d && fabs(d) < 1e15)
		n = snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)d);
	else
		n = snprintf(buf, sizeof(buf), "%.17g", d);
	return scalar(a, JV_NUMBER, buf, (size_t)n);
}

struct jv *jv_string(struct arena *a, const char *s)
{
	return scalar(a, JV_STRING, s, strlen(s));
}

struct jv *jv_stringn(struct arena *a, const char *s, size_t len)
{
	return scalar(a, JV_STRING, s, len);
}

struct jv *jv_array(struct arena *a)
{
	struct jv *v = arena_alloc(a, sizeof(*v));
	v->type = JV_ARRAY;
	return v;
}

struct jv *jv_object(struct arena *a)
{
	struct jv *v = arena_alloc(a, sizeof(*v));
	v->type = JV_OBJECT;
	return v;
}

/* Arena arrays cannot be realloc'd: copy into a block twice the size. */
static void *grow_in_arena(struct arena *a, void *old, size_t n, size_t *cap, size_t elem)
{
	if (n < *cap)
		return old;
	size_t ncap = *cap ? *cap * 2 : 4;
	void *p = arena_alloc(a, ncap * elem);
	if (n)
		memcpy(p, old, n * elem);
	*cap = ncap;
	return p;
}

void jv_push(struct arena *a, struct jv *arr, struct jv *item)
{
	arr->arr.items =
		grow_in_arena(a, arr->arr.items, arr->arr.n, &arr->arr.cap, sizeof(struct jv *));
	arr->arr.items[arr->arr.n++] = item;
}

void jv_add(struct arena *a, struct jv *obj, const char *key, struct jv *value)
{
	obj->obj.members = grow_in_arena(a, obj->obj.members, obj->obj.n, &obj->obj.cap,
					 sizeof(struct jv_member));
	obj->obj.members[obj->obj.n].key = arena_strdup(a, key);
	obj->obj.members[obj->obj.n].value = value;
	obj->obj.n++;
}

struct jv *jv_copy(struct arena *a, const struct jv *v)
{
	struct jv *c = arena_alloc(a, sizeof(*c));
	*c = *v;
	c->src = v->src ? arena_strdup(a, v->src) : NULL;
	switch (v->type) {
	case JV_ARRAY:
		c->arr.items = v->arr.n ? arena_alloc(a, v->arr.n * sizeof(*c->arr.items)) : NULL;
		c->arr.cap = v->arr.n;
		for (size_t i = 0; i < v->arr.n; i++)
			c->arr.items[i] = jv_copy(a, v->arr.items[i]);
		break;
	case JV_OBJECT:
		c->obj.members =
			v->obj.n ? arena_alloc(a, v->obj.n * sizeof(*c->obj.members)) : NULL;
		c->obj.cap = v->obj.n;
		for (size_t i = 0; i < v->obj.n; i++) {
			c->obj.members[i].key = arena_strdup(a, v->obj.members[i].key);
			c->obj.members[i].value = jv_copy(a, v->obj.members[i].value);
		}
		break;
	default:
		c->s.text = arena_strndup(a, v->s.text, v->s.len);
		break;
	}
	return c;
}

struct jv *jv_get(const struct jv *obj, const char *key)
{
	if (!obj || obj->type != JV_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->obj.n; i++)
		if (streq(obj->obj.members[i].key, key))
			return obj->obj.members[i].value;
	return NULL;
}

const char *jv_type_name(enum jv_type t)
{
	switch (t) {
	case JV_NULL:
		return "null";
	case JV_BOOL:
		return "boolean";
	case JV_NUMBER:
		return "number";
	case JV_STRING:
		return "string";
	case JV_ARRAY:
		return "list";
	case JV_OBJECT:
		return "object";
	}
	return "?";
}

bool jv_as_bool(const struct jv *v, bool *out)
{
	if (!v)
		return false;
	if (v->type == JV_BOOL) {
		*out = v->s.text[0] == 't' || v->s.text[0] == 'T';
		return true;
	}
	if (!v->plain)
		return false;
	/* YAML 1.1 spellings Kubernetes' YAML reader also takes as booleans. */
	static const char *const yes[] = { "yes", "Yes", "YES", "on", "On", "ON", "y", "Y" };
	static const char *const no[] = { "no", "No", "NO", "off", "Off", "OFF", "n", "N" };
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (streq(v->s.text, yes[i])) {
			*out = true;
			return true;
		}
		if (streq(v->s.text, no[i])) {
			*out = false;
			return true;
		}
	}
	return false;
}

bool jv_as_int64(const struct jv *v, int64_t *out)
{
	if (!v || v->type != JV_NUMBER)
		return false;
	const char *t = v->s.text;
	char *end;
	errno = 0;
	long long i = strtoll(t, &end, 0);
	if (errno == 0 && end != t && *end == '\0' && t[0] != '+') {
		/* strtoll takes a leading 0 as octal; YAML 1.2 and JSON do not. */
		if (t[0] == '0' && t[1] >= '0' && t[1] <= '9')
			i = strtoll(t, &end, 10);
		*out = i;
		return true;
	}
	/* 80.0 is an integer too, as JSON numbers go. */
	double d;
	if (jv_as_double(v, &d) && d == floor(d) && fabs(d) < 9.2e18) {
		*out = (int64_t)d;
		return true;
	}
	return false;
}

bool jv_as_double(const struct jv *v, double *out)
{
	if (!v || v->type != JV_NUMBER)
		return false;
	char *end;
	errno = 0;
	double d = strtod(v->s.text, &end);
	if (errno != 0 || end == v->s.text || *end != '\0' || !isfinite(d))
		return false;
	*out = d;
	return true;
}

static bool jv_is_string(const struct jv *v)
{
	return v && (v->type == JV_STRING || (v->plain && v->type != JV_ARRAY &&
					      v->type != JV_OBJECT && v->type != JV_NULL));
}

const char *jv_as_string(const struct jv *v)
{
	if (!jv_is_string(v))
		return NULL;
	return v->plain && v->src ? v->src : v->s.text;
}

bool jv_equal(const struct jv *a, const struct jv *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case JV_ARRAY:
		if (a->arr.n != b->arr.n)
			return false;
		for (size_t i = 0; i < a->arr.n; i++)
			if (!jv_equal(a->arr.items[i], b->arr.items[i]))
				return false;
		return true;
	case JV_OBJECT:
		if (a->obj.n != b->obj.n)
			return false;
		for (size_t i = 0; i < a->obj.n; i++) {
			const struct jv *bv = jv_get(b, a->obj.members[i].key);
			if (!bv || !jv_equal(a->obj.members[i].value, bv))
				return false;
		}
		return true;
	default:
		return a->s.len == b->s.len && memcmp(a->s.text, b->s.text, a->s.len) == 0;
	}
}
