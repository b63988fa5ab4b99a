/*
 * iptables rule text into tokens, as iptables-restore splits it (ipt_rule_internal.h): what the
 * parser (ipt_rule_parse.c) and the rule-id reader read.
 */
#include "ipt_rule_internal.h"

#include <errno.h>
#include <stdlib.h>

void ipt_tokens_free(struct ipt_tokens *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
}

int ipt_tokenize(const char *text, struct ipt_tokens *out, struct strbuf *err)
{
	struct strbuf cur = STRBUF_INIT;
	bool in_token = false, quoted = false;
	for (const char *p = text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			sb_addf(err, "control character 0x%02x at offset %zu", (unsigned char)*p,
				(size_t)(p - text));
			return -EINVAL;
		}
	sb_init(&cur);
	for (const char *p = text;; p++) {
		unsigned char c = (unsigned char)*p;
		if (quoted) {
			if (!c) {
				sb_addf(err, "token %zu: unterminated quote", out->n + 1);
				goto fail;
			}
			if (c == '\\') {
				if (!p[1]) {
					sb_addf(err, "token %zu: unterminated quote", out->n + 1);
					goto fail;
				}
				sb_addc(&cur, *++p);
			} else if (c == '"') {
				quoted = false;
			} else {
				sb_addc(&cur, (char)c);
			}
			continue;
		}
		if (c == '"') {
			quoted = in_token = true;
			continue;
		}
		if (c == ' ' || c == '\0') {
			if (in_token) {
				GROW(out->v, out->cap, out->n + 1);
				out->v[out->n++] = sb_detach(&cur);
				sb_init(&cur);
				in_token = false;
			}
			if (!c)
				break;
			continue;
		}
		sb_addc(&cur, (char)c);
		in_token = true;
	}
	sb_free(&cur);
	return 0;
fail:
	sb_free(&cur);
	return -EINVAL;
}
