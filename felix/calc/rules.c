/*
 * Rendering rules as iptables-save text: the chain builder (rule ids), and
 * the rules of policies and profiles. Pure.
 *
 * A rule's id is its first comment, "cali:" and 16 characters of
 * base64url(SHA-224(previous rule's hash || rule text without the id)), the
 * first rule chaining from SHA-224(chain name), as Felix does: a rule's id
 * changes when it or anything before it in the chain changes, so comparing
 * ids position by position finds the first difference.
 */
#include "policy_internal.h"

#include <brindle/core/hash.h>
#include <brindle/sys/ipt.h>
#include <brindle/core/util.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- chain builder ---------------------------------------------------------------------- */

void cb_start(struct chain_builder *b, const char *name)
{
	b->c = xcalloc(1, sizeof(*b->c));
	snprintf(b->c->name, sizeof(b->c->name), "%s", name);
	b->cap = 0;
	hash_digest(HASH_SHA224, name, strlen(name), b->prev);
	sb_init(&b->generic);
	sb_init(&b->matches);
	sb_init(&b->target);
}

struct pchain *cb_finish(struct chain_builder *b)
{
	sb_free(&b->generic);
	sb_free(&b->matches);
	sb_free(&b->target);
	struct pchain *c = b->c;
	b->c = NULL;
	return c;
}

void pchain_free(struct pchain *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->n; i++)
		free(c->rules[i]);
	free(c->rules);
	free(c);
}

static void vadd(struct strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void vadd(struct strbuf *sb, const char *fmt, va_list ap)
{
	sb_addc(sb, ' ');
	sb_vaddf(sb, fmt, ap);
}

void cb_generic(struct chain_builder *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vadd(&b->generic, fmt, ap);
	va_end(ap);
}

void cb_match(struct chain_builder *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vadd(&b->matches, fmt, ap);
	va_end(ap);
}

void cb_target(struct chain_builder *b, const char *fmt, ...)
{
	sb_reset(&b->target);
	va_list ap;
	va_start(ap, fmt);
	vadd(&b->target, fmt, ap);
	va_end(ap);
}

/* Append @s as iptables-save quotes a string (leading space included). */
static void cb_quote(struct strbuf *out, const char *s)
{
	static const char plain[] = "_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	size_t n = strspn(s, plain);
	sb_addc(out, ' ');
	if (n > 0 && s[n] == '\0') {
		sb_adds(out, s);
		return;
	}
	sb_addc(out, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\' || *s == '\'')
			sb_addc(out, '\\');
		sb_addc(out, *s);
	}
	sb_addc(out, '"');
}

void cb_comment(struct chain_builder *b, const char *text)
{
	/* The kernel keeps 255 bytes; keep what we write printable and unquoted-safe. */
	char clean[256];
	size_t n = 0;
	for (; *text && n < sizeof(clean) - 1; text++)
		clean[n++] = (*text == '"' || *text == '\\' || *text == '\'' || *text < ' ')
				     ? '_'
				     : *text;
	clean[n] = '\0';
	sb_adds(&b->matches, " -m comment --comment");
	cb_quote(&b->matches, clean);
}

void cb_emit(struct chain_builder *b)
{
	struct strbuf body = STRBUF_INIT;
	sb_add(&body, b->generic.buf, b->generic.len);
	sb_add(&body, b->matches.buf, b->matches.len);
	sb_add(&body, b->target.buf, b->target.len);
	/* id = H(prev || body) */
	size_t n = sizeof(b->prev) + body.len;
	uint8_t *buf = xmalloc(n);
	memcpy(buf, b->prev, sizeof(b->prev));
	memcpy(buf + sizeof(b->prev), body.buf, body.len);
	uint8_t d[32];
	hash_digest(HASH_SHA224, buf, n, d);
	memcpy(b->prev, d, sizeof(b->prev));
	free(buf);
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char id[17];
	for (int i = 0; i < 16; i++) {
		/* 16 characters take 96 bits: six bits each, from the first 12 bytes */
		int bit = i * 6;
		unsigned v = ((unsigned)d[bit / 8] << 8 | d[bit / 8 + 1]) >> (10 - bit % 8);
		id[i] = b64[v & 63];
	}
	id[16] = '\0';
	struct strbuf rule = STRBUF_INIT;
	sb_add(&rule, b->generic.buf, b->generic.len);
	sb_addf(&rule, " -m comment --comment \"" IPT_ID_PREFIX "%s\"", id);
	sb_add(&rule, b->matches.buf, b->matches.len);
	sb_add(&rule, b->target.buf, b->target.len);
	struct pchain *c = b->c;
	if (c->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 8;
		c->rules = xrealloc(c->rules, sizeof(*c->rules) * b->cap);
	}
	char *text = sb_detach(&rule);
	memmove(text, text + 1, strlen(text)); /* the leading space */
	c->rules[c->n++] = text;
	sb_free(&body);
	sb_reset(&b->generic);
	sb_reset(&b->matches);
	sb_reset(&b->target);
}

void cb_chain_name(char out[32], const char *prefix, const char *suffix)
{
	size_t lp = strlen(prefix), ls = strlen(suffix);
	if (lp + ls <= IPT_CHAIN_MAX && !(lp + ls == IPT_CHAIN_MAX && suffix[0] == '_')) {
		memcpy(out, prefix, lp);
		memcpy(out + lp, suffix, ls + 1);
		return;
	}
	char h[32];
	size_t keep = IPT_CHAIN_MAX - 1 - lp;
	hash_b64url(HASH_SHA256, suffix, h, keep);
	memcpy(out, prefix, lp);
	out[lp] = '_';
	memcpy(out + lp + 1, h, keep);
	out[lp + 1 + keep] = '\0';
}

/* --- marks -------------------------------------------------------------------------------- */

int pmarks_from_mask(uint32_t mask, struct pmarks *out)
{
	uint32_t bits[4];
	size_t n = 0;
	for (uint32_t b = 1; b && n < 4; b <<= 1)
		if (mask & b)
			bits[n++] = b;
	if (n < 4)
		return -EINVAL;
	out->accept = bits[0];
	out->pass = bits[1];
	out->scratch0 = bits[2];
	out->scratch1 = bits[3];
	out->all = bits[0] | bits[1] | bits[2] | bits[3];
	return 0;
}

/* --- rules of policies and profiles -------------------------------------------------------- */

static void add_proto(struct chain_builder *b, bool neg, uint8_t p)
{
	const char *name = ipt_proto_name(p);
	if (name)
		cb_generic(b, "%s-p %s", neg ? "! " : "", name);
	else
		cb_generic(b, "%s-p %u", neg ? "! " : "", p);
}

/* A list of port ranges, for multiport: at most 15 slots (a range takes two). */
struct pchunk {
	const struct prange *r;
	uint32_t n;
};

static size_t port_chunks(const struct prange *r, uint32_t n, struct pchunk *out, size_t max)
{
	size_t k = 0;
	uint32_t start = 0, slots = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t need = r[i].min == r[i].max ? 1 : 2;
		if (slots + need > 15) {
			if (k < max)
				out[k++] = (struct pchunk){ r + start, i - start };
			start = i;
			slots = 0;
		}
		slots += need;
	}
	if (n > start && k < max)
		out[k++] = (struct pchunk){ r + start, n - start };
	return k;
}

static void add_ports(struct chain_builder *b, bool neg, bool src, const struct pchunk *c)
{
	struct strbuf s = STRBUF_INIT;
	for (uint32_t i = 0; i < c->n; i++) {
		if (i)
			sb_addc(&s, ',');
		if (c->r[i].min == c->r[i].max)
			sb_addf(&s, "%u", c->r[i].min);
		else
			sb_addf(&s, "%u:%u", c->r[i].min, c->r[i].max);
	}
	cb_match(b, "-m multiport %s--%s %s", neg ? "! " : "", src ? "sports" : "dports",
		 sb_str(&s));
	sb_free(&s);
}

/* One way a side's ports can match: a chunk of numeric ports or one named port. */
struct palt {
	const struct pchunk *chunk;
	const struct pnamed *named;
};

#define MAX_ALTS 64

static size_t port_alts(const struct pentity *e, struct pchunk *chunks, struct palt *alts)
{
	size_t nc = port_chunks(e->ports, e->n_ports, chunks, MAX_ALTS);
	size_t n = 0;
	for (size_t i = 0; i < nc; i++)
		alts[n++] = (struct palt){ &chunks[i], NULL };
	for (uint32_t i = 0; i < e->n_named && n < MAX_ALTS; i++)
		alts[n++] = (struct palt){ NULL, &e->named[i] };
	if (!n)
		alts[n++] = (struct palt){ NULL, NULL }; /* no port restriction */
	return n;
}

static const char *use_set(const struct render_ctx *rc, struct pset_ref ref)
{
	return rc->use_set(rc->ctx, &ref);
}

/* Address matches of one side: generic -s/-d first (the caller orders sides), sets later. */
static bool side_generic(struct chain_builder *b, const struct pentity *e, bool src,
			 bool *neg_nets_as_set)
{
	char c[CIDR_STRLEN];
	const char *opt = src ? "-s" : "-d";
	*neg_nets_as_set = e->n_not_nets > 1;
	if (e->n_nets == 1) {
		cb_generic(b, "%s %s", opt, cidr_str(&e->nets[0], c));
		if (e->n_not_nets == 1)
			*neg_nets_as_set = true; /* only one -s per rule */
		return true;
	}
	if (e->n_nets == 0 && e->n_not_nets == 1) {
		cb_generic(b, "! %s %s", opt, cidr_str(&e->not_nets[0], c));
		return true;
	}
	return e->n_nets > 1 || e->n_not_nets > 1;
}

static void side_sets(struct chain_builder *b, const struct render_ctx *rc, const struct pentity *e,
		      bool src, bool neg_nets_as_set)
{
	const char *dir = src ? "src" : "dst";
	if (e->sel)
		cb_match(b, "-m set --match-set %s %s",
			 use_set(rc, (struct pset_ref){ .kind = PSET_SEL, .sel = e->sel }), dir);
	if (e->not_sel)
		cb_match(b, "-m set ! --match-set %s %s",
			 use_set(rc, (struct pset_ref){ .kind = PSET_SEL, .sel = e->not_sel }),
			 dir);
	if (e->n_nets > 1)
		cb_match(b, "-m set --match-set %s %s",
			 use_set(rc, (struct pset_ref){ .kind = PSET_NETS,
							.nets = e->nets,
							.n_nets = e->n_nets }),
			 dir);
	if (neg_nets_as_set)
		cb_match(b, "-m set ! --match-set %s %s",
			 use_set(rc, (struct pset_ref){ .kind = PSET_NETS,
							.nets = e->not_nets,
							.n_nets = e->n_not_nets }),
			 dir);
}

static void side_ports(struct chain_builder *b, const struct render_ctx *rc,
		       const struct pentity *e, bool src, const struct palt *alt)
{
	const char *dims = src ? "src,src" : "dst,dst";
	if (alt->chunk)
		add_ports(b, false, src, alt->chunk);
	if (alt->named)
		cb_match(b, "-m set --match-set %s %s",
			 use_set(rc, (struct pset_ref){ .kind = PSET_NAMED,
							.sel = e->named_sel,
							.named = alt->named }),
			 dims);
	struct pchunk chunks[MAX_ALTS];
	size_t nc = port_chunks(e->not_ports, e->n_not_ports, chunks, MAX_ALTS);
	for (size_t i = 0; i < nc; i++)
		add_ports(b, true, src, &chunks[i]);
	for (uint32_t i = 0; i < e->n_not_named; i++)
		cb_match(b, "-m set ! --match-set %s %s",
			 use_set(rc, (struct pset_ref){ .kind = PSET_NAMED,
							.sel = e->named_sel,
							.named = &e->not_named[i] }),
			 dims);
}

/* ICMP's type and code in an IPv4 rule, ICMPv6's in an IPv6 one. */
static void add_icmp(struct chain_builder *b, int af, bool neg, int type, int code)
{
	if (type < 0)
		return; /* any ICMP: the protocol says it all */
	const char *bang = neg ? "! " : "";
	if (af == AF_INET6 && code < 0)
		cb_match(b, "-m icmp6 %s--icmpv6-type %d", bang, type);
	else if (af == AF_INET6)
		cb_match(b, "-m icmp6 %s--icmpv6-type %d/%d", bang, type, code);
	else if (code < 0)
		cb_match(b, "-m icmp %s--icmp-type %d", bang, type);
	else
		cb_match(b, "-m icmp %s--icmp-type %d/%d", bang, type, code);
}

/* The match part of one expansion of @r, into @b (generic options and matches). */
static void rule_matches(struct chain_builder *b, const struct render_ctx *rc,
			 const struct prule *r, const struct palt *sa, const struct palt *da)
{
	bool src_neg_set, dst_neg_set;
	side_generic(b, &r->src, true, &src_neg_set);
	side_generic(b, &r->dst, false, &dst_neg_set);
	if (r->proto)
		add_proto(b, false, r->proto);
	else if (r->not_proto)
		add_proto(b, true, r->not_proto);
	side_sets(b, rc, &r->src, true, src_neg_set);
	side_sets(b, rc, &r->dst, false, dst_neg_set);
	side_ports(b, rc, &r->src, true, sa);
	side_ports(b, rc, &r->dst, false, da);
	if (r->has_icmp)
		add_icmp(b, rc->af, false, r->icmp_type, r->icmp_code);
	if (r->has_not_icmp)
		add_icmp(b, rc->af, true, r->not_icmp_type, r->not_icmp_code);
}

/* Save and restore the match part, to emit several rules with the same matches. */
struct saved {
	struct strbuf generic, matches;
};

static void save_matches(struct chain_builder *b, struct saved *s)
{
	sb_init(&s->generic);
	sb_init(&s->matches);
	sb_add(&s->generic, b->generic.buf, b->generic.len);
	sb_add(&s->matches, b->matches.buf, b->matches.len);
}

static void restore_matches(struct chain_builder *b, const struct saved *s)
{
	sb_reset(&b->generic);
	sb_reset(&b->matches);
	sb_add(&b->generic, s->generic.buf, s->generic.len);
	sb_add(&b->matches, s->matches.buf, s->matches.len);
}

static void free_saved(struct saved *s)
{
	sb_free(&s->generic);
	sb_free(&s->matches);
}

/* NFLOG group of the event log: 1 for traffic to an endpoint, 2 from it (as Felix). */
#define NFLOG_GROUP(ingress) ((ingress) ? 1 : 2)
#define LIMIT_MATCH	     "-m limit --limit 10/sec --limit-burst 20"

void render_event_log(struct chain_builder *b, bool ingress, const char *prefix)
{
	cb_match(b, LIMIT_MATCH);
	struct strbuf t = STRBUF_INIT;
	sb_adds(&t, "-j NFLOG --nflog-prefix");
	cb_quote(&t, prefix);
	sb_addf(&t, " --nflog-group %d", NFLOG_GROUP(ingress));
	cb_target(b, "%s", sb_str(&t));
	sb_free(&t);
	cb_emit(b);
}

/* The short form of a policy in NFLOG prefixes: 12 characters of a hash of its id. */
void policy_log_hash(const char *id, char out[13])
{
	hash_b64url(HASH_SHA224, id, out, 12);
}

/* A rule of a preview chain: log what it would do, mark it, return (see render_ctx.preview). */
static void emit_preview_action(struct chain_builder *b, const struct render_ctx *rc,
				const struct ppolicy *p, const struct prule *r, bool ingress)
{
	const struct pmarks *m = &rc->marks;
	if (r->action == PACT_LOG) {
		/* nothing to preview: the kernel log is the policy in force's */
		sb_reset(&b->generic);
		sb_reset(&b->matches);
		return;
	}
	char h[13], prefix[64];
	policy_log_hash(p->id, h);
	char v = r->action == PACT_ALLOW ? 'A' : r->action == PACT_DENY ? 'D' : 'P';
	snprintf(prefix, sizeof(prefix), "%c%c:w:%s:%d", v, ingress ? 'i' : 'o', h, r->index);
	uint32_t bit = r->action == PACT_ALLOW	? m->accept
		       : r->action == PACT_DENY ? m->scratch0
						: m->pass;
	struct saved s;
	save_matches(b, &s);
	render_event_log(b, ingress, prefix);
	restore_matches(b, &s);
	cb_target(b, "-j MARK --set-xmark 0x%x/0x%x", bit, bit);
	cb_emit(b);
	cb_match(b, "-m mark --mark 0x%x/0x%x", bit, bit);
	cb_target(b, "-j RETURN");
	cb_emit(b);
	free_saved(&s);
}

static void emit_action(struct chain_builder *b, const struct render_ctx *rc,
			const struct ppolicy *p, const struct prule *r, bool ingress)
{
	const struct pmarks *m = &rc->marks;
	if (rc->preview) {
		emit_preview_action(b, rc, p, r, ingress);
		return;
	}
	char prefix[64] = "";
	if (rc->event_log && (r->action == PACT_DENY ||
			      (r->action == PACT_ALLOW && rc->event_log_allowed))) {
		char h[13];
		policy_log_hash(p->id, h);
		snprintf(prefix, sizeof(prefix), "%c%c:%c:%s:%d",
			 r->action == PACT_DENY ? 'D' : 'A', ingress ? 'i' : 'o',
			 p->kind == PK_PROFILE ? 'r' : 'p', h, r->index);
	}
	struct saved s;
	save_matches(b, &s);
	if (prefix[0]) {
		render_event_log(b, ingress, prefix);
		restore_matches(b, &s);
	}
	switch (r->action) {
	case PACT_ALLOW:
	case PACT_PASS: {
		uint32_t bit = r->action == PACT_ALLOW ? m->accept : m->pass;
		cb_target(b, "-j MARK --set-xmark 0x%x/0x%x", bit, bit);
		cb_emit(b);
		cb_match(b, "-m mark --mark 0x%x/0x%x", bit, bit);
		cb_target(b, "-j RETURN");
		cb_emit(b);
		break;
	}
	case PACT_DENY:
		cb_target(b, "-j DROP");
		cb_emit(b);
		break;
	case PACT_LOG: {
		const char *lp = rc->cfg->log_prefix[0] ? rc->cfg->log_prefix : "calico-packet";
		char pfx[30];
		snprintf(pfx, sizeof(pfx), "%s: ", lp);
		struct strbuf t = STRBUF_INIT;
		sb_adds(&t, "-j LOG --log-prefix");
		cb_quote(&t, pfx);
		sb_adds(&t, " --log-level 5");
		cb_target(b, "%s", sb_str(&t));
		sb_free(&t);
		cb_emit(b);
		break;
	}
	}
	free_saved(&s);
}

void render_policy_rules(struct chain_builder *b, const struct render_ctx *rc,
			 const struct ppolicy *p, bool ingress)
{
	const struct prule *rules = ingress ? p->in : p->out;
	uint32_t n = ingress ? p->n_in : p->n_out;
	for (uint32_t i = 0; i < n; i++) {
		const struct prule *r = &rules[i];
		if (r->proto && r->not_proto == r->proto)
			continue; /* can never match */
		struct pchunk sc[MAX_ALTS], dc[MAX_ALTS];
		struct palt sa[MAX_ALTS], da[MAX_ALTS];
		size_t ns = port_alts(&r->src, sc, sa), nd = port_alts(&r->dst, dc, da);
		for (size_t x = 0; x < ns; x++) {
			for (size_t y = 0; y < nd; y++) {
				if (i == 0 && x == 0 && y == 0)
					cb_comment(b, p->display);
				rule_matches(b, rc, r, &sa[x], &da[y]);
				emit_action(b, rc, p, r, ingress);
			}
		}
	}
}

void render_fail_closed(struct chain_builder *b, const char *why)
{
	char text[256];
	snprintf(text, sizeof(text), "Fail closed: %s", why);
	cb_comment(b, text);
	cb_target(b, "-j DROP");
	cb_emit(b);
}
