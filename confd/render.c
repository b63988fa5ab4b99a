/* Template sets and rendering (see render.h). */
#include "render.h"

#include <brindle/core/hmap.h>
#include <brindle/core/mustache.h>

#include <errno.h>
#include <stdlib.h>

#define SUFFIX ".mustache"

struct tmpl {
	char *output; /* file name, or NULL for a partial */
	char *name;   /* the template file's name */
	struct mustache *m;
};

struct render_templates {
	struct tmpl *v;
	size_t n;
	struct hmap partials; /* name → struct mustache */
};

static int cmp_tmpl(const void *x, const void *y)
{
	const struct tmpl *a = x, *b = y;
	/* Outputs by name, the main file last (BIRD reads it; the others are its includes). */
	bool am = a->output && strcmp(a->output, RENDER_MAIN_FILE) == 0;
	bool bm = b->output && strcmp(b->output, RENDER_MAIN_FILE) == 0;
	if (am != bm)
		return am ? 1 : -1;
	return strcmp(a->name, b->name);
}

int render_templates_compile(const struct render_source *src, size_t n,
			     struct render_templates **out, struct strbuf *err)
{
	struct render_templates *t = xcalloc(1, sizeof(*t));
	t->v = xcalloc(n + 1, sizeof(*t->v));
	bool have_main = false;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *name = src[i].name;
		size_t len = strlen(name);
		if (len <= strlen(SUFFIX) || !str_has_suffix(name, SUFFIX) || strchr(name, '/')) {
			sb_addf(err,
				"%s: template files are named <file>.mustache or "
				"_<partial>.mustache",
				name);
			r = -EINVAL;
			break;
		}
		struct tmpl *tp = &t->v[t->n];
		tp->name = xstrdup(name);
		t->n++;
		char *base = xstrndup(name, len - strlen(SUFFIX));
		struct strbuf cerr = STRBUF_INIT;
		sb_init(&cerr);
		if (mustache_compile(src[i].text, &tp->m, &cerr) < 0) {
			sb_addf(err, "%s: %s", name, sb_str(&cerr));
			r = -EINVAL;
		} else if (base[0] == '_') {
			hmap_put(&t->partials, base + 1, tp->m);
		} else {
			tp->output = xstrdup(base);
			have_main |= strcmp(base, RENDER_MAIN_FILE) == 0;
		}
		sb_free(&cerr);
		free(base);
	}
	if (r == 0 && !have_main) {
		sb_addf(err, "the templates have no %s.mustache", RENDER_MAIN_FILE);
		r = -EINVAL;
	}
	if (r < 0) {
		render_templates_free(t);
		return r;
	}
	qsort(t->v, t->n, sizeof(*t->v), cmp_tmpl);
	*out = t;
	return 0;
}

void render_templates_free(struct render_templates *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].output);
		free(t->v[i].name);
		mustache_free(t->v[i].m);
	}
	free(t->v);
	hmap_clear(&t->partials);
	free(t);
}

static const struct mustache *lookup(void *ctx, const char *name)
{
	const struct render_templates *t = ctx;
	return hmap_get(&t->partials, name);
}

int render_config(const struct render_templates *t, const struct jv *data,
		  struct render_output *out, struct strbuf *err)
{
	struct render_output o = { 0 };
	o.files = xcalloc(t->n + 1, sizeof(*o.files));
	struct mustache_partials partials = { lookup, (void *)t };
	struct mustache_opts opts = { .flags = MUSTACHE_STRICT | MUSTACHE_NO_ESCAPE };
	for (size_t i = 0; i < t->n; i++) {
		if (!t->v[i].output)
			continue;
		struct render_file *f = &o.files[o.n++];
		f->name = xstrdup(t->v[i].output);
		sb_init(&f->text);
		struct strbuf rerr = STRBUF_INIT;
		sb_init(&rerr);
		int r = mustache_render(t->v[i].m, data, &partials, &opts, &f->text, &rerr);
		if (r < 0) {
			sb_addf(err, "%s: %s", t->v[i].name, sb_str(&rerr));
			sb_free(&rerr);
			render_output_clear(&o);
			return r;
		}
		sb_free(&rerr);
	}
	*out = o;
	return 0;
}

void render_output_clear(struct render_output *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->files[i].name);
		sb_free(&o->files[i].text);
	}
	free(o->files);
	o->files = NULL;
	o->n = 0;
}

bool render_output_equal(const struct render_output *a, const struct render_output *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->files[i].name, b->files[i].name) != 0 ||
		    a->files[i].text.len != b->files[i].text.len ||
		    memcmp(a->files[i].text.buf, b->files[i].text.buf, a->files[i].text.len) != 0)
			return false;
	return true;
}
