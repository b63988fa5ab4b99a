/*
 * iptables rule text fuzz target, each input read as an IPv4 and as an IPv6
 * rule. Besides not crashing, checks the
 * formatter's contract: when text parses, its formatted form parses again to
 * the same entry, byte for byte, and formats identically; and the id read
 * from that text, and from the input, is the id read from the entry.
 */
#include <brindle/sys/ipt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *text)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_ipt_rule: %s for [%s]\n", what, text);
	abort();
}

/* Both families read the same text: what parses must format back to itself. */
static void one(int af, const char *text)
{
	struct ipt_set_table sets;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, again = STRBUF_INIT;
	void *e = NULL, *e2 = NULL;
	size_t len, len2;
	ipt_set_table_init(&sets);
	sb_init(&err);
	sb_init(&out);
	sb_init(&again);
	if (ipt_rule_parse(af, text, &sets.sets, &e, &len, &err) == 0) {
		check(err.len == 0, "error text on success", text);
		ipt_rule_format(af, e, NULL, &sets.sets, &out);
		int r = ipt_rule_parse(af, sb_str(&out), &sets.sets, &e2, &len2, &err);
		if (r)
			fprintf(stderr, "formatted: [%s]: %s\n", sb_str(&out), sb_str(&err));
		check(r == 0, "formatted text does not parse", text);
		check(len == len2 && memcmp(e, e2, len) == 0, "formatted text parses differently",
		      text);
		ipt_rule_format(af, e2, NULL, &sets.sets, &again);
		check(strcmp(sb_str(&out), sb_str(&again)) == 0, "formats differently", text);
		char id1[IPT_ID_LEN + 1], id2[IPT_ID_LEN + 1];
		bool h1 = ipt_rule_entry_id(af, e, id1), h2 = ipt_rule_text_id(sb_str(&out), id2);
		check(h1 == h2 && (!h1 || strcmp(id1, id2) == 0), "ids differ", text);
		h2 = ipt_rule_text_id(text, id2);
		check(h1 == h2 && (!h1 || strcmp(id1, id2) == 0), "input's id differs", text);
	} else {
		check(err.len > 0, "no error text", text);
	}
	free(e);
	free(e2);
	sb_free(&err);
	sb_free(&out);
	sb_free(&again);
	ipt_set_table_free(&sets);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	char *text = xmalloc(size + 1); /* not strndup: the input has no NUL to stop at */
	memcpy(text, data, size);
	text[size] = 0;
	one(AF_INET, text);
	one(AF_INET6, text);
	free(text);
	return 0;
}
