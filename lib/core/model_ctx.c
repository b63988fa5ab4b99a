/*
 * What every pass over the field tables carries (struct model_ctx): the errors
 * and the path of the field being looked at; and the helpers the tables'
 * functions share. A leaf: calls nothing else of the model.
 */
#include "model_internal.h"

#include <brindle/core/log_escape.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ERRORS 50

/* --- errors and paths ---------------------------------------------------- */

void model_errors_clear(struct model_errors *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
	e->v = NULL;
	e->n = 0;
}

void model_errors_add(struct model_errors *e, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	sb_init(&sb);
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	e->v = xrealloc(e->v, sizeof(char *) * (e->n + 1));
	e->v[e->n++] = sb_detach(&sb);
}

static void verr(struct model_ctx *c, const char *field, const char *fmt, va_list ap)
	printf_like(3, 0);
/* @path is @failed or lies under it ("spec.x" covers "spec.x.y" and "spec.x[0]"). */
static bool path_under(const char *path, const char *failed)
{
	size_t n = strlen(failed);
	return strncmp(path, failed, n) == 0 &&
	       (path[n] == '\0' || path[n] == '.' || path[n] == '[');
}

/* At most this many bytes of one value go into an error, escaped: a 10 MB label is not echoed. */
#define ECHO_MAX 100

static void add_bounded(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s), cut = n > ECHO_MAX ? ECHO_MAX : n;
	while (cut > 0 && cut < n && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut--; /* not inside a UTF-8 sequence */
	log_escape(sb, s, cut);
	if (cut < n)
		sb_addf(sb, "... (%zu bytes)", n);
}

/*
 * printf for error texts. A quoted "%s" is a value from the input (the
 * model's errors quote every one): cut to ECHO_MAX bytes and escaped. Other
 * conversions format as printf does.
 */
static void vformat(struct strbuf *sb, const char *fmt, va_list ap)
{
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			sb_addc(sb, *p);
			continue;
		}
		const char *spec = p++;
		while (*p && strchr("-+ #0123456789.", *p))
			p++;
		while (*p && strchr("hlzjt", *p))
			p++;
		char one[32];
		snprintf(one, sizeof(one), "%.*s", (int)(p - spec + 1), spec);
		bool lng = strstr(one, "l") != NULL, sz = strchr(one, 'z') != NULL;
		switch (*p) {
		case 's':
			if (spec > fmt && spec[-1] == '"')
				add_bounded(sb, va_arg(ap, const char *));
			else
				sb_adds(sb, va_arg(ap, const char *));
			break;
		case '%':
			sb_addc(sb, '%');
			break;
		case 'd':
		case 'i':
			if (strstr(one, "ll") || lng)
				sb_addf(sb, "%lld",
					(long long)(lng && !strstr(one, "ll")
							    ? va_arg(ap, long)
							    : va_arg(ap, long long)));
			else
				sb_addf(sb, "%d", va_arg(ap, int));
			break;
		case 'u':
		case 'x':
			if (sz)
				sb_addf(sb, *p == 'u' ? "%zu" : "%zx", va_arg(ap, size_t));
			else if (lng)
				sb_addf(sb, *p == 'u' ? "%llu" : "%llx",
					strstr(one, "ll")
						? va_arg(ap, unsigned long long)
						: (unsigned long long)va_arg(ap, unsigned long));
			else
				sb_addf(sb, *p == 'u' ? "%u" : "%x", va_arg(ap, unsigned));
			break;
		case 'g':
		case 'f':
			sb_addf(sb, *p == 'g' ? "%g" : "%f", va_arg(ap, double));
			break;
		case 'c':
			sb_addc(sb, (char)va_arg(ap, int));
			break;
		default: /* not used by the model's errors */
			sb_adds(sb, one);
			if (!*p)
				return;
		}
	}
}

static void verr(struct model_ctx *c, const char *field, const char *fmt, va_list ap)
{
	if (c->errs->n - c->n_errs_before >= MAX_ERRORS)
		return;
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sb_adds(&sb, sb_str(&c->path));
	if (field) {
		if (sb.len)
			sb_addc(&sb, '.');
		add_bounded(&sb, field);
	}
	if (c->checking) {
		if (model_path_failed(c, sb_str(&sb))) {
			sb_free(&sb);
			return;
		}
	} else {
		c->failed = xrealloc(c->failed, sizeof(char *) * (c->n_failed + 1));
		c->failed[c->n_failed++] = xstrdup(sb_str(&sb));
	}
	if (sb.len)
		sb_adds(&sb, ": ");
	vformat(&sb, fmt, ap);
	c->errs->v = xrealloc(c->errs->v, sizeof(char *) * (c->errs->n + 1));
	c->errs->v[c->errs->n++] = sb_detach(&sb);
}

bool model_path_failed(const struct model_ctx *c, const char *path)
{
	for (size_t i = 0; i < c->n_failed; i++)
		if (path_under(path, c->failed[i]))
			return true;
	return false;
}

void model_failed_clear(struct model_ctx *c)
{
	for (size_t i = 0; i < c->n_failed; i++)
		free(c->failed[i]);
	free(c->failed);
	c->failed = NULL;
	c->n_failed = 0;
	c->checking = false;
}

void model_err(struct model_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verr(c, NULL, fmt, ap);
	va_end(ap);
}

void model_err_at(struct model_ctx *c, const char *field, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verr(c, field, fmt, ap);
	va_end(ap);
}

size_t model_push(struct model_ctx *c, const char *field)
{
	size_t mark = c->path.len;
	if (c->path.len)
		sb_addc(&c->path, '.');
	add_bounded(&c->path, field);
	return mark;
}

size_t model_push_index(struct model_ctx *c, size_t i)
{
	size_t mark = c->path.len;
	sb_addf(&c->path, "[%zu]", i);
	return mark;
}

void model_pop(struct model_ctx *c, size_t mark)
{
	sb_truncate(&c->path, mark);
}

/* --- helpers ------------------------------------------------------------------ */

const char **model_strlist(struct arena *a, size_t n, ...)
{
	va_list ap;
	const char **v = arena_alloc(a, sizeof(char *) * n);
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		v[i] = va_arg(ap, const char *);
	va_end(ap);
	return v;
}
