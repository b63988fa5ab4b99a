/*
 * Rendering BIRD's configuration: a set of Mustache templates compiled once,
 * rendered against the BGP view's data into a set of files. Pure (the edge
 * that reads a template directory is templates_load in output.c).
 *
 * Template set: every "<file>.mustache" renders to "<file>" (the set must
 * have "bird.conf.mustache", the file BIRD is started with); every
 * "_<name>.mustache" is a partial, used as {{> name}}. Rendering is strict
 * (an unknown name is an error) and does no HTML escaping.
 */
#ifndef BRINDLE_CONFD_RENDER_H
#define BRINDLE_CONFD_RENDER_H

#include <stddef.h>
#include <brindle/core/jv.h>
#include <brindle/core/strbuf.h>

#define RENDER_MAIN_FILE "bird.conf"

struct render_templates;

struct render_source {
	const char *name; /* the template's file name, "bird.conf.mustache" */
	const char *text;
};

/* Compile a set; -EINVAL with "<template>: line N: ..." in @err. */
int render_templates_compile(const struct render_source *src, size_t n,
			     struct render_templates **out, struct strbuf *err) must_check;
void render_templates_free(struct render_templates *t);

struct render_file {
	char *name; /* "bird.conf" */
	struct strbuf text;
};

/* Output files in name order, the main file last. */
struct render_output {
	struct render_file *files;
	size_t n;
};

int render_config(const struct render_templates *t, const struct jv *data,
		  struct render_output *out, struct strbuf *err) must_check;
void render_output_clear(struct render_output *o);
bool render_output_equal(const struct render_output *a, const struct render_output *b);

#endif
