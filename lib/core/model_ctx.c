/*
 * What every pass over the field tables carries (struct model_ctx): the errors
 * and the path of the field being looked at; and the helpers the tables'
 * functions share. A leaf: calls nothing else of the model.
 */
#include "model_internal.h"

#include <stdarg.h>
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
		sb_adds(&sb, field);
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
	sb_vaddf(&sb, fmt, ap);
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
	sb_adds(&c->path, field);
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
