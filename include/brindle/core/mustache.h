/*
 * Mustache templates (the core of the official spec: variables, sections,
 * inverted sections, comments, partials, set delimiters; no lambdas), used to
 * render BIRD configuration. Pure: no I/O, no logging.
 *
 * A template is compiled once into an immutable tree and rendered any number
 * of times against a jv document. Partials are compiled templates the caller
 * hands out by name through struct mustache_partials, so the engine never
 * reads files and a recursive partial is just a pointer to itself.
 *
 * Values: strings print their text, numbers their text as written, booleans
 * "true"/"false", null nothing. Falsy for sections: a missing name, null,
 * false and the empty list; everything else (0, "", {}) is truthy.
 * See docs/templates.md.
 */
#ifndef BRINDLE_MUSTACHE_H
#define BRINDLE_MUSTACHE_H

#include <stddef.h>
#include <brindle/core/jv.h>
#include <brindle/core/strbuf.h>

struct mustache; /* a compiled template; immutable, owns its memory */

/* Sections and partials nest at most this deep, at compile and render time. */
#define MUSTACHE_MAX_DEPTH 100

/*
 * Compile the NUL-terminated @text. On error returns -EINVAL and writes a
 * message to @err (if not NULL) such as `line 3: section "peers" is not closed`.
 */
int mustache_compile(const char *text, struct mustache **out, struct strbuf *err) must_check;
/* Accepts NULL. */
void mustache_free(struct mustache *t);

/*
 * Partial lookup: returns the compiled template called @name, or NULL when
 * there is none. The template must stay valid for the whole render.
 */
struct mustache_partials {
	const struct mustache *(*lookup)(void *ctx, const char *name);
	void *ctx;
};

enum mustache_flags {
	/*
	 * A name that cannot be resolved (variable, section, inverted section or
	 * partial) is an error, and so is printing null, a list or an object.
	 */
	MUSTACHE_STRICT = 1 << 0,
	/* Print values as they are instead of HTML-escaping & " < >. */
	MUSTACHE_NO_ESCAPE = 1 << 1,
};

#define MUSTACHE_DEFAULT_MAX_OUTPUT (64u << 20)
#define MUSTACHE_DEFAULT_MAX_STEPS  (16u << 20)

struct mustache_opts {
	unsigned flags;	   /* enum mustache_flags */
	size_t max_output; /* bytes one render may add; 0: MUSTACHE_DEFAULT_MAX_OUTPUT */
	size_t max_steps;  /* nodes and list items visited; 0: MUSTACHE_DEFAULT_MAX_STEPS */
};

/*
 * Render @t with @data as the root context and append the result to @out.
 * @p may be NULL (no partials); @opts may be NULL (defaults: HTML escaping, not
 * strict). On error @out is left as it was, a message goes to @err (if not
 * NULL), prefixed with `partial "name": ` when it happened inside a partial,
 * and the return is:
 *   -ENOENT  strict mode: `line 7: "node.asNumber" is not defined`,
 *            `line 2: partial "peer" is not defined`
 *   -EINVAL  strict mode: `line 4: "peers" is a list, not a printable value`
 *   -ELOOP   `line 1: nested deeper than 100 sections and partials`
 *   -EFBIG   `line 9: output larger than N bytes`, `line 9: more than N steps`
 */
int mustache_render(const struct mustache *t, const struct jv *data,
		    const struct mustache_partials *p, const struct mustache_opts *opts,
		    struct strbuf *out, struct strbuf *err) must_check;

#endif
