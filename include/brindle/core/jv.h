/*
 * jv: a JSON-shaped document tree, the common output of the JSON (yajl) and
 * YAML (libyaml) readers and the input of the resource decoder. Nodes live in
 * an arena and are immutable once built. Scalars keep their source text, so a
 * YAML plain scalar like `80` can still be read as the string "80" when the
 * target field is a string (as Kubernetes' YAML handling does).
 */
#ifndef BRINDLE_JV_H
#define BRINDLE_JV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/arena.h>
#include <brindle/core/strbuf.h>

enum jv_type {
	JV_NULL,
	JV_BOOL,
	JV_NUMBER,
	JV_STRING,
	JV_ARRAY,
	JV_OBJECT,
};

struct jv_member;

struct jv {
	enum jv_type type;
	bool plain;	 /* an unquoted YAML scalar: usable as a string too */
	unsigned line;	 /* 1-based source line, 0 when unknown */
	const char *src; /* plain scalars: the text as written */
	union {
		struct { /* NULL, BOOL, NUMBER, STRING: the source text */
			const char *text;
			size_t len;
		} s;
		struct {
			struct jv **items;
			size_t n, cap;
		} arr;
		struct {
			struct jv_member *members;
			size_t n, cap;
		} obj;
	};
};

struct jv_member {
	const char *key;
	struct jv *value;
};

struct jv *jv_null(struct arena *a);
struct jv *jv_bool(struct arena *a, bool b);
struct jv *jv_number_text(struct arena *a, const char *text, size_t len);
struct jv *jv_int(struct arena *a, int64_t i);
struct jv *jv_uint(struct arena *a, uint64_t u);
struct jv *jv_double(struct arena *a, double d);
struct jv *jv_string(struct arena *a, const char *s);
struct jv *jv_stringn(struct arena *a, const char *s, size_t len);
struct jv *jv_array(struct arena *a);
struct jv *jv_object(struct arena *a);

void jv_push(struct arena *a, struct jv *arr, struct jv *item);
/* Appends a member; keys are not checked for duplicates. */
void jv_add(struct arena *a, struct jv *obj, const char *key, struct jv *value);

struct jv *jv_get(const struct jv *obj, const char *key);
/* A deep copy of @v in @a (to keep a document past the life of its own arena). */
struct jv *jv_copy(struct arena *a, const struct jv *v);
const char *jv_type_name(enum jv_type t);

/* Scalar readers; false when the node is not of a compatible kind. */
bool jv_as_bool(const struct jv *v, bool *out);
bool jv_as_int64(const struct jv *v, int64_t *out);
bool jv_as_double(const struct jv *v, double *out);
/* A JSON string, or any YAML plain scalar's text. */
const char *jv_as_string(const struct jv *v);

bool jv_equal(const struct jv *a, const struct jv *b);

#endif
