/*
 * Mustache fuzz target. The input up to its first NUL byte is the template;
 * what follows, if it is JSON, replaces the fixed context. Every partial name
 * resolves: names starting with "s" to the input template itself, "i" to a
 * partial that recurses over the data, anything else to a small template.
 * Besides not crashing or hanging, checks the error contract: messages start
 * with "line " (or "partial "), a failed render leaves the output as it was,
 * and output stays within its cap.
 */
#include <brindle/core/json.h>
#include <brindle/core/mustache.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OUTPUT (1u << 20)

static const char context_json[] =
	"{\"name\":\"n<1>\",\"as\":64512,\"t\":true,\"f\":false,\"z\":null,\"e\":[],"
	"\"items\":[{\"name\":\"a\",\"items\":[{\"name\":\"b\"}]},\"s\",1.5,[1,[2]]],"
	"\"o\":{\"a\":{\"b\":\"c&d\"},\"items\":[]}}";

static struct mustache *item_partial, *small_partial;

static void check(bool ok, const char *what, const char *text)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_mustache: %s for template:\n%s\n", what, text);
	abort();
}

static struct mustache *compile_fixed(const char *text)
{
	struct mustache *t;
	if (mustache_compile(text, &t, NULL) < 0)
		abort();
	return t;
}

static const struct mustache *lookup(void *ctx, const char *name)
{
	if (name[0] == 's')
		return ctx;
	if (name[0] == 'i')
		return item_partial;
	return small_partial;
}

static bool good_message(const char *m)
{
	return strncmp(m, "line ", 5) == 0 || strncmp(m, "partial \"", 9) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct arena *fixed;
	static struct jv *context;
	if (!fixed) {
		fixed = arena_new();
		if (json_parse(fixed, context_json, strlen(context_json), &context, NULL) < 0)
			abort();
		item_partial = compile_fixed("{{#items}}\n  <{{name}}{{>item}}>\n{{/items}}\n");
		small_partial = compile_fixed("[{{.}}|{{name}}]\n  {{#t}}{{>x}}{{/t}}\n");
	}

	const uint8_t *nul = memchr(data, 0, size);
	size_t tlen = nul ? (size_t)(nul - data) : size;
	char *text = malloc(tlen + 1);
	memcpy(text, data, tlen);
	text[tlen] = '\0';

	struct arena *a = arena_new();
	const struct jv *root = context;
	struct jv *parsed;
	if (nul && json_parse(a, (const char *)nul + 1, size - tlen - 1, &parsed, NULL) == 0)
		root = parsed;

	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct mustache *t = NULL;
	sb_init(&out);
	sb_init(&err);
	if (mustache_compile(text, &t, &err) < 0) {
		check(t == NULL, "failed compile wrote its out-parameter", text);
		check(strncmp(sb_str(&err), "line ", 5) == 0, "malformed compile error", text);
		goto done;
	}
	struct mustache_partials partials = { lookup, t };
	struct mustache_opts opts = {
		.flags = tlen & 3, /* strict and no-escape in every combination */
		.max_output = MAX_OUTPUT,
		.max_steps = 1u << 18,
	};
	sb_adds(&out, "prefix");
	int r = mustache_render(t, root, &partials, &opts, &out, &err);
	if (r < 0) {
		check(r == -ENOENT || r == -EINVAL || r == -ELOOP || r == -EFBIG,
		      "unexpected render error code", text);
		check(good_message(sb_str(&err)), "malformed render error", text);
		check(streq(sb_str(&out), "prefix"), "failed render changed the output", text);
	} else {
		check(out.len - strlen("prefix") <= MAX_OUTPUT, "output over its cap", text);
	}
done:
	mustache_free(t);
	arena_free(a);
	sb_free(&out);
	sb_free(&err);
	free(text);
	return 0;
}
