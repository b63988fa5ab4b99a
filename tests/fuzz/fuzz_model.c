/*
 * The resource reader (JSON/YAML → decode → defaults → validation) on
 * arbitrary input. Beyond not crashing: whatever it accepts must read back
 * from its canonical JSON to the same canonical JSON (decode ∘ encode is the
 * identity on accepted resources, and defaults are idempotent). Both readers:
 * users' files (model_read) and datastore exports, which admit the IPAM kinds
 * (model_read_internal, brindlectl datastore migrate import).
 */
#include <brindle/core/model.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef int (*reader)(const char *source, const char *text, size_t len, const char *default_ns,
		      struct br_object ***objs, size_t *n, struct model_errors *errs);

static void one(reader read, const uint8_t *data, size_t size)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (read("fuzz", (const char *)data, size, NULL, &objs, &n, &errs) < 0) {
		if (errs.n == 0)
			abort(); /* a refusal must say why */
		model_errors_clear(&errs);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
		sb_init(&a);
		sb_init(&b);
		model_to_json(objs[i], &a);
		struct br_object **again;
		size_t m;
		if (read("canonical", a.buf, a.len, NULL, &again, &m, &errs) < 0 || m != 1) {
			fprintf(stderr, "canonical form does not read back: %s\n%s\n", a.buf,
				errs.n ? errs.v[0] : "");
			abort();
		}
		model_to_json(again[0], &b);
		if (strcmp(a.buf, b.buf) != 0) {
			fprintf(stderr, "canonical form not stable:\n%s\n%s\n", a.buf, b.buf);
			abort();
		}
		model_free_all(again, m);
		sb_free(&a);
		sb_free(&b);
	}
	model_free_all(objs, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	one(model_read, data, size);
	one(model_read_internal, data, size);
	return 0;
}
