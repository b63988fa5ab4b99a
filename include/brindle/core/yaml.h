/*
 * YAML in and out, over libyaml. The only file that includes yaml.h is
 * lib/yaml_libyaml.c.
 */
#ifndef BRINDLE_YAML_H
#define BRINDLE_YAML_H

#include <brindle/core/jv.h>
#include <brindle/core/strbuf.h>

/*
 * Parse every document of a YAML stream. Empty documents are kept as NULL
 * entries so document numbers match what the user sees. On a syntax error
 * returns -EINVAL and writes "document N: line L: <problem>" to @err.
 */
int yaml_parse_all(struct arena *a, const char *text, size_t len, struct jv ***docs, size_t *ndocs,
		   struct strbuf *err) must_check;

/* Block-style YAML, strings quoted only where a reader would take them for
 * something else. One document; no "---" marker. */
void yaml_write(struct strbuf *out, const struct jv *v);

#endif
