/*
 * iptables rules, text -> entry: iptables-save syntax into the kernel's entry
 * layout, as iptables 1.8.9 (legacy) builds it (see ipt_rule_internal.h).
 */
#include "ipt_rule_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const log_levels[] = { "emerg",   "alert",  "crit", "error",
					  "warning", "notice", "info", "debug" };

/* --- building entries ------------------------------------------------------------- */

/* The header's fields for either family; IPT_INV_* and IP6T_INV_* are the same bits. */
struct hdr {
	union ipt_addr src, smsk, dst, dmsk;
	char iniface[IFNAMSIZ], outiface[IFNAMSIZ];
	unsigned char iniface_mask[IFNAMSIZ], outiface_mask[IFNAMSIZ];
	uint16_t proto;
	uint8_t invflags;
	bool go;
};

struct parser {
	struct ipt_tokens t;
	size_t i; /* next token */
	struct strbuf *err;
	const struct ipt_sets *sets;
	int af;
	struct hdr ip;
	uint8_t *buf; /* matches, then the target */
	size_t len, cap;
	bool has_src, has_dst, has_in, has_out, has_proto;
	/* checks that need the whole rule */
	size_t multiport_tok, icmp_tok, icmp6_tok, reset_tok;
};

static const char *tok(struct parser *p, size_t i)
{
	return i < p->t.n ? p->t.v[i] : NULL;
}

printf_like(3, 4) static int fail(struct parser *p, size_t i, const char *fmt, ...)
{
	va_list ap;
	if (i >= p->t.n && p->t.n)
		i = p->t.n - 1;
	sb_addf(p->err, "token %zu (\"%s\"): ", i + 1, p->t.n ? p->t.v[i] : "");
	va_start(ap, fmt);
	sb_vaddf(p->err, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The argument of the option at token i (i + 1), or an error naming the option. */
static int arg(struct parser *p, size_t i, const char **out)
{
	if (i + 1 >= p->t.n)
		return fail(p, i, "missing argument");
	*out = p->t.v[i + 1];
	return 0;
}

/* Adds an extension of @data_size bytes; returns its data, zeroed. */
static void *add_ext(struct parser *p, const char *name, uint8_t revision, size_t data_size)
{
	size_t size = MATCH_HDR + XT_ALIGN(data_size);
	GROW(p->buf, p->cap, p->len + size);
	struct xt_entry_match *m = (void *)(p->buf + p->len);
	memset(m, 0, size);
	m->u.user.match_size = (uint16_t)size;
	snprintf(m->u.user.name, sizeof(m->u.user.name), "%s", name);
	m->u.user.revision = revision;
	p->len += size;
	return m->data;
}

static bool parse_u32(const char *s, int base, uint32_t max, uint32_t *out)
{
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, base);
	if (errno || *end || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* A decimal number without sign, leading zeros or blanks. */
static bool parse_dec(const char *s, uint32_t max, uint32_t *out)
{
	if (s[0] == '0' && s[1])
		return false;
	for (const char *c = s; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	return parse_u32(s, 10, max, out);
}

/* Names we print raw: no blanks, quotes, backslashes, and not an option or "!". */
static bool plain_name(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || s[0] == '-' || s[0] == '!')
		return false;
	return strcspn(s, " \"'\\") == n;
}

/* --- the IP header part ----------------------------------------------------------- */

static int parse_cidr(struct parser *p, size_t i, const char *s, union ipt_addr *addr,
		      union ipt_addr *mask)
{
	char ip[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	uint32_t bits = p->af == AF_INET6 ? 128 : 32, len = bits;
	const char *what =
		p->af == AF_INET6 ? "not an IPv6 address or CIDR" : "not an IPv4 address or CIDR";
	if (n >= sizeof(ip))
		return fail(p, i, "%s", what);
	memcpy(ip, s, n);
	ip[n] = 0;
	memset(addr, 0, sizeof(*addr));
	memset(mask, 0, sizeof(*mask));
	if (inet_pton(p->af, ip, addr) != 1 || (slash && !parse_dec(slash + 1, bits, &len)))
		return fail(p, i, "%s", what);
	for (uint32_t b = 0; b < len; b++)
		mask->bytes[b / 8] |= (uint8_t)(0x80u >> (b % 8));
	for (size_t b = 0; b < sizeof(addr->bytes); b++)
		addr->bytes[b] &= mask->bytes[b];
	return 0;
}

static int parse_iface(struct parser *p, size_t i, const char *s, char *name, unsigned char *mask)
{
	size_t n = strlen(s);
	if (n == 0 || n >= IFNAMSIZ || !plain_name(s, IFNAMSIZ - 1) || strchr(s, '/'))
		return fail(p, i,
			    "not an interface name (1-15 characters, no '/', blanks or quotes)");
	if (strcmp(s, "+") == 0)
		return fail(p, i, "\"+\" matches every interface: leave the option out");
	memset(name, 0, IFNAMSIZ);
	memset(mask, 0, IFNAMSIZ);
	memcpy(name, s, n);
	if (s[n - 1] == '+')
		memset(mask, 0xff, n - 1);
	else
		memset(mask, 0xff, n + 1);
	return 0;
}

static int parse_proto(struct parser *p, size_t i, const char *s, uint16_t *out)
{
	uint32_t v;
	if (parse_dec(s, 255, &v)) {
		if (v == 0)
			return fail(p, i, "protocol 0 matches every protocol: leave -p out");
		*out = (uint16_t)v;
		return 0;
	}
	for (size_t k = 0; k < ARRAY_SIZE(protocols); k++)
		if (strcmp(protocols[k].name, s) == 0) {
			*out = protocols[k].num;
			return 0;
		}
	if (strcmp(s, "all") == 0)
		return fail(p, i, "\"all\" matches every protocol: leave -p out");
	return fail(p, i, "unknown protocol");
}

/* --- matches ---------------------------------------------------------------------- */

/*
 * Each match parser starts at token p->i (the first token after "-m NAME")
 * and consumes its options; it stops at the first token that is not one of
 * them. A "!" before an option of the match negates it.
 */
static bool is_opt_of(struct parser *p, size_t i, const char *const *opts)
{
	const char *s = tok(p, i);
	if (s && strcmp(s, "!") == 0)
		s = tok(p, i + 1);
	/* Every long option here belongs to the match: one of @opts or an error of it. */
	(void)opts;
	return s && strncmp(s, "--", 2) == 0;
}

struct opt {
	size_t at;   /* token of the option */
	bool invert; /* preceded by "!" */
	const char *name;
	const char *val; /* its argument, or NULL for a flag */
};

/* Reads "[!] --name [arg]" at p->i. @flags: options that take no argument. */
static int next_opt(struct parser *p, const char *ext, const char *const *known,
		    const char *const *flags, struct opt *o)
{
	o->invert = false;
	if (strcmp(tok(p, p->i), "!") == 0) {
		o->invert = true;
		if (!tok(p, ++p->i))
			return fail(p, p->i, "nothing to negate");
	}
	o->at = p->i;
	o->name = tok(p, p->i);
	o->val = NULL;
	bool found = false;
	for (const char *const *k = known; *k; k++)
		if (strcmp(*k, o->name) == 0)
			found = true;
	if (!found)
		return fail(p, o->at, "unknown option of %s", ext);
	for (const char *const *f = flags; f && *f; f++)
		if (strcmp(*f, o->name) == 0) {
			p->i++;
			return 0;
		}
	int r = arg(p, o->at, &o->val);
	if (r)
		return r;
	p->i += 2;
	return 0;
}

static int no_invert(struct parser *p, const struct opt *o)
{
	if (o->invert)
		return fail(p, o->at, "cannot be negated");
	return 0;
}

static int once(struct parser *p, const struct opt *o, bool *seen)
{
	if (*seen)
		return fail(p, o->at, "given twice");
	*seen = true;
	return 0;
}

static int match_comment(struct parser *p, size_t m_at)
{
	static const char *const known[] = { "--comment", NULL };
	struct xt_comment_info *c = add_ext(p, "comment", 0, sizeof(*c));
	size_t off = (size_t)((uint8_t *)c - p->buf);
	bool seen = false;
	while (is_opt_of(p, p->i, known)) {
		struct opt o;
		int r = next_opt(p, "comment", known, NULL, &o);
		if (!r)
			r = no_invert(p, &o);
		if (!r)
			r = once(p, &o, &seen);
		if (r)
			return r;
		if (strlen(o.val) >= XT_MAX_COMMENT_LEN)
			return fail(p, o.at + 1, "longer than %d characters",
				    XT_MAX_COMMENT_LEN - 1);
		c = (void *)(p->buf + off);
		snprintf(c->comment, sizeof(c->comment), "%s", o.val);
	}
	if (!seen)
		return fail(p, m_at, "-m comment needs --comment");
	return 0;
}

static int parse_mark_mask(struct parser *p, size_t i, const char *s, uint32_t *mark,
			   uint32_t *mask)
{
	char buf[32];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof(buf))
		return fail(p, i, "not a mark (0xV or 0xV/0xM)");
	memcpy(buf, s, n);
	buf[n] = 0;
	*mask = 0xffffffffu;
	if (!parse_u32(buf, 0, UINT32_MAX, mark) ||
	    (slash && !parse_u32(slash + 1, 0, UINT32_MAX, mask)))
		return fail(p, i, "not a mark (0xV or 0xV/0xM)");
	return 0;
}

static int match_mark(struct parser *p, size_t m_at)
{
	static const char *const known[] = { "--mark", NULL };
	struct xt_mark_mtinfo1 *m = add_ext(p, "mark", 1, sizeof(*m));
	size_t off = (size_t)((uint8_t *)m - p->buf);
	bool seen = false;
	while (is_opt_of(p, p->i, known)) {
		struct opt o;
		uint32_t mark, mask;
		int r = next_opt(p, "mark", known, NULL, &o);
		if (!r)
			r = once(p, &o, &seen);
		if (!r)
			r = parse_mark_mask(p, o.at + 1, o.val, &mark, &mask);
		if (r)
			return r;
		m = (void *)(p->buf + off);
		m->mark = mark;
		m->mask = mask;
		m->invert = o.invert;
	}
	if (!seen)
		return fail(p, m_at, "-m mark needs --mark");
	return 0;
}

static int match_conntrack(struct parser *p, size_t m_at)
{
	static const char *const known[] = { "--ctstate", NULL };
	struct xt_conntrack_mtinfo3 *c = add_ext(p, "conntrack", 3, sizeof(*c));
	size_t off = (size_t)((uint8_t *)c - p->buf);
	bool seen = false;
	while (is_opt_of(p, p->i, known)) {
		struct opt o;
		int r = next_opt(p, "conntrack", known, NULL, &o);
		if (!r)
			r = once(p, &o, &seen);
		if (r)
			return r;
		uint16_t states = 0;
		for (const char *s = o.val;;) {
			size_t n = strcspn(s, ",");
			size_t k;
			for (k = 0; k < ARRAY_SIZE(ct_states); k++)
				if (strlen(ct_states[k].name) == n &&
				    strncasecmp(ct_states[k].name, s, n) == 0)
					break;
			if (k == ARRAY_SIZE(ct_states))
				return fail(p, o.at + 1, "unknown conntrack state \"%.*s\"", (int)n,
					    s);
			states |= ct_states[k].bit;
			if (!s[n])
				break;
			s += n + 1;
		}
		c = (void *)(p->buf + off);
		c->state_mask = states;
		c->match_flags |= XT_CONNTRACK_STATE;
		if (o.invert)
			c->invert_flags |= XT_CONNTRACK_STATE;
	}
	if (!seen)
		return fail(p, m_at, "-m conntrack needs --ctstate");
	return 0;
}

static int match_set(struct parser *p, size_t m_at)
{
	static const char *const known[] = { "--match-set", NULL };
	struct xt_set_info_match_v4 *s = add_ext(p, "set", 4, sizeof(*s));
	size_t off = (size_t)((uint8_t *)s - p->buf);
	bool seen = false;
	while (is_opt_of(p, p->i, known)) {
		struct opt o;
		const char *dirs = NULL;
		int r = next_opt(p, "set", known, NULL, &o);
		if (!r)
			r = once(p, &o, &seen);
		if (!r)
			r = arg(p, o.at + 1, &dirs);
		if (r)
			return r;
		p->i++;
		if (!plain_name(o.val, IPT_SET_NAME_MAX))
			return fail(p, o.at + 1, "not an ip set name (1-%d characters)",
				    IPT_SET_NAME_MAX);
		uint16_t index;
		if (!p->sets)
			return fail(p, o.at + 1, "no resolver of ip set names");
		if (p->sets->index_of(p->sets->ctx, o.val, &index) < 0)
			return fail(p, o.at + 1, "no such ip set");
		uint8_t dim = 0, flags = o.invert ? IPSET_INV_MATCH : 0;
		for (const char *d = dirs;;) {
			size_t n = strcspn(d, ",");
			if (dim == IPSET_DIM_MAX)
				return fail(p, o.at + 2, "more than %d directions", IPSET_DIM_MAX);
			dim++;
			if (n == 3 && strncmp(d, "src", 3) == 0)
				flags |= (uint8_t)(1 << dim);
			else if (n != 3 || strncmp(d, "dst", 3) != 0)
				return fail(p, o.at + 2,
					    "directions are src or dst, comma separated");
			if (!d[n])
				break;
			d += n + 1;
		}
		s = (void *)(p->buf + off);
		s->match_set.index = index;
		s->match_set.dim = dim;
		s->match_set.flags = flags;
	}
	if (!seen)
		return fail(p, m_at, "-m set needs --match-set");
	return 0;
}

static int match_multiport(struct parser *p, size_t m_at)
{
	static const char *const known[] = { "--sports", "--dports", NULL };
	struct xt_multiport_v1 *mp = add_ext(p, "multiport", 1, sizeof(*mp));
	size_t off = (size_t)((uint8_t *)mp - p->buf);
	bool seen = false;
	while (is_opt_of(p, p->i, known)) {
		struct opt o;
		int r = next_opt(p, "multiport", known, NULL, &o);
		if (!r)
			r = once(p, &o, &seen);
		if (r)
			return r;
		struct xt_multiport_v1 v = { 0 };
		v.flags = strcmp(o.name, "--sports") == 0 ? XT_MULTIPORT_SOURCE
							  : XT_MULTIPORT_DESTINATION;
		v.invert = o.invert;
		unsigned n = 0;
		for (const char *s = o.val;;) {
			size_t len = strcspn(s, ",");
			char one[16];
			if (len >= sizeof(one))
				return fail(p, o.at + 1, "not a port or range");
			memcpy(one, s, len);
			one[len] = 0;
			char *colon = strchr(one, ':');
			if (colon)
				*colon++ = 0;
			uint32_t lo, hi;
			if (!parse_dec(one, 65535, &lo) || (colon && !parse_dec(colon, 65535, &hi)))
				return fail(p, o.at + 1, "not a port or range");
			if (n + (colon ? 2 : 1) > XT_MULTI_PORTS)
				return fail(p, o.at + 1,
					    "more than %d port slots (a range takes 2)",
					    XT_MULTI_PORTS);
			v.ports[n] = (uint16_t)lo;
			if (colon) {
				if (lo >= hi)
					return fail(p, o.at + 1, "range %u:%u is empty or one port",
						    lo, hi);
				v.pflags[n] = 1;
				v.ports[++n] = (uint16_t)hi;
			}
			n++;
			if (!s[len])
				break;
			s += len + 1;
		}
		v.count = (uint8_t)n;
		memcpy(p->buf + off, &v, sizeof(v));
	}
	if (!seen)
		return fail(p, m_at, "-m multiport needs --sports or --dports");
	p->multiport_tok = m_at + 1;
	return 0;
}

/*
 * -m icmp --icmp-type T[/C]|any (IPv4) or -m icmp6 --icmpv6-type T[/C] (IPv6, numbers only, as
 * ip6tables-save prints them: it knows no "any"). struct ipt_icmp and struct ip6t_icmp have
 * the same layout.
 */
static int match_icmp_of(struct parser *p, size_t m_at, bool v6)
{
	_Static_assert(sizeof(struct ipt_icmp) == sizeof(struct ip6t_icmp) &&
			       IPT_ICMP_INV == IP6T_ICMP_INV,
		       "ICMP and ICMPv6 matches differ");
	const char *name = v6 ? "icmp6" : "icmp",
		   *what = v6 ? "icmpv6 type (T or T/C)" : "icmp type (T, T/C or any)";
	static const char *const known4[] = { "--icmp-type", NULL }, *const known6[] = {
		"--icmpv6-type", NULL
	};
	const char *const *known = v6 ? known6 : known4;
	struct ipt_icmp *ic = add_ext(p, name, 0, sizeof(*ic));
	size_t off = (size_t)((uint8_t *)ic - p->buf);
	bool seen = false;
	while (is_opt_of(p, p->i, known)) {
		struct opt o;
		int r = next_opt(p, name, known, NULL, &o);
		if (!r)
			r = once(p, &o, &seen);
		if (r)
			return r;
		struct ipt_icmp v = { .invflags = o.invert ? IPT_ICMP_INV : 0 };
		if (!v6 && strcmp(o.val, "any") == 0) {
			v.type = 0xff;
			v.code[0] = 0;
			v.code[1] = 0xff;
		} else {
			char buf[16];
			size_t len = strlen(o.val);
			if (len >= sizeof(buf))
				return fail(p, o.at + 1, "not an %s", what);
			memcpy(buf, o.val, len + 1);
			char *slash = strchr(buf, '/');
			if (slash)
				*slash++ = 0;
			uint32_t t, c = 0;
			if (!parse_dec(buf, 255, &t) || (slash && !parse_dec(slash, 255, &c)))
				return fail(p, o.at + 1, "not an %s", what);
			if (!v6 && t == 255 && slash)
				return fail(p, o.at + 1,
					    "type 255 prints as \"any\", whatever its code");
			v.type = (uint8_t)t;
			v.code[0] = (uint8_t)c;
			v.code[1] = slash ? (uint8_t)c : 0xff;
		}
		memcpy(p->buf + off, &v, sizeof(v));
	}
	if (!seen)
		return fail(p, m_at, "-m %s needs %s", name, known[0]);
	if (v6)
		p->icmp6_tok = m_at + 1;
	else
		p->icmp_tok = m_at + 1;
	return 0;
}

static int match_icmp(struct parser *p, size_t m_at)
{
	return match_icmp_of(p, m_at, false);
}

static int match_icmp6(struct parser *p, size_t m_at)
{
	return match_icmp_of(p, m_at, true);
}

static int parse_addr_types(struct parser *p, size_t i, const char *s, uint16_t *out)
{
	uint16_t v = 0;
	for (;;) {
		size_t n = strcspn(s, ","), k;
		for (k = 0; k < ARRAY_SIZE(addr_types); k++)
			if (strlen(addr_types[k]) == n && strncasecmp(addr_types[k], s, n) == 0)
				break;
		if (k == ARRAY_SIZE(addr_types))
			return fail(p, i, "unknown address type \"%.*s\"", (int)n, s);
		v |= (uint16_t)(1u << k);
		if (!s[n])
			break;
		s += n + 1;
	}
	*out = v;
	return 0;
}

static int match_addrtype(struct parser *p, size_t m_at)
{
	static const char *const known[] = { "--src-type", "--dst-type", "--limit-iface-in",
					     "--limit-iface-out", NULL };
	static const char *const flags[] = { "--limit-iface-in", "--limit-iface-out", NULL };
	struct xt_addrtype_info_v1 *a = add_ext(p, "addrtype", 1, sizeof(*a));
	size_t off = (size_t)((uint8_t *)a - p->buf);
	struct xt_addrtype_info_v1 v = { 0 };
	bool src = false, dst = false, lin = false, lout = false;
	while (is_opt_of(p, p->i, known)) {
		struct opt o;
		int r = next_opt(p, "addrtype", known, flags, &o);
		if (r)
			return r;
		if (strcmp(o.name, "--src-type") == 0) {
			r = once(p, &o, &src);
			if (!r)
				r = parse_addr_types(p, o.at + 1, o.val, &v.source);
			if (o.invert)
				v.flags |= XT_ADDRTYPE_INVERT_SOURCE;
		} else if (strcmp(o.name, "--dst-type") == 0) {
			r = once(p, &o, &dst);
			if (!r)
				r = parse_addr_types(p, o.at + 1, o.val, &v.dest);
			if (o.invert)
				v.flags |= XT_ADDRTYPE_INVERT_DEST;
		} else {
			bool in = strcmp(o.name, "--limit-iface-in") == 0;
			r = no_invert(p, &o);
			if (!r)
				r = once(p, &o, in ? &lin : &lout);
			if (!r && lin && lout)
				r = fail(p, o.at,
					 "--limit-iface-in and --limit-iface-out exclude each "
					 "other");
			v.flags |= in ? XT_ADDRTYPE_LIMIT_IFACE_IN : XT_ADDRTYPE_LIMIT_IFACE_OUT;
		}
		if (r)
			return r;
	}
	if (!src && !dst)
		return fail(p, m_at, "-m addrtype needs --src-type or --dst-type");
	memcpy(p->buf + off, &v, sizeof(v));
	return 0;
}

static int parse_rate(struct parser *p, size_t i, const char *s, uint32_t *avg)
{
	char buf[16];
	size_t n = strcspn(s, "/");
	uint32_t mult = 1, r;
	if (n >= sizeof(buf))
		return fail(p, i, "not a rate (N/sec, N/min, N/hour or N/day)");
	memcpy(buf, s, n);
	buf[n] = 0;
	if (s[n]) {
		const char *u = s + n + 1;
		static const struct {
			const char *name;
			uint32_t mult;
		} units[] = {
			{ "second", 1 }, { "minute", 60 }, { "hour", 3600 }, { "day", 86400 }
		};
		size_t k, ul = strlen(u);
		for (k = 0; k < ARRAY_SIZE(units); k++)
			if (ul && strncasecmp(units[k].name, u, ul) == 0)
				break;
		if (k == ARRAY_SIZE(units))
			return fail(p, i, "not a rate (N/sec, N/min, N/hour or N/day)");
		mult = units[k].mult;
	}
	if (!parse_dec(buf, UINT32_MAX, &r) || r == 0)
		return fail(p, i, "not a rate (N/sec, N/min, N/hour or N/day)");
	*avg = (uint32_t)((uint64_t)XT_LIMIT_SCALE * mult / r);
	if (*avg == 0)
		return fail(p, i, "rate too fast (at most %d/sec)", XT_LIMIT_SCALE);
	return 0;
}

/*
 * xt_limit's check, with its u32 arithmetic: credits are HZ * CREDITS_PER_JIFFY
 * per second, 32000 with HZ 250 or 1000 (Debian's and most kernels').
 */
static uint32_t user2credits(uint32_t user)
{
	const uint32_t per_sec = 32000;
	if (user > UINT32_MAX / per_sec)
		return (user / XT_LIMIT_SCALE) * per_sec;
	return (user * per_sec) / XT_LIMIT_SCALE;
}

static bool limit_overflows(uint32_t avg, uint32_t burst)
{
	return user2credits(avg * burst) < user2credits(avg);
}

static int match_limit(struct parser *p, size_t m_at)
{
	static const char *const known[] = { "--limit", "--limit-burst", NULL };
	struct xt_rateinfo *l = add_ext(p, "limit", 0, sizeof(*l));
	size_t off = (size_t)((uint8_t *)l - p->buf);
	uint32_t avg = XT_LIMIT_SCALE * 3600 / 3, burst = LIMIT_BURST_DEFAULT; /* 3/hour */
	bool seen_limit = false, seen_burst = false;
	size_t burst_at = m_at;
	while (is_opt_of(p, p->i, known)) {
		struct opt o;
		int r = next_opt(p, "limit", known, NULL, &o);
		if (!r)
			r = no_invert(p, &o);
		if (r)
			return r;
		if (strcmp(o.name, "--limit") == 0) {
			r = once(p, &o, &seen_limit);
			if (!r)
				r = parse_rate(p, o.at + 1, o.val, &avg);
		} else {
			r = once(p, &o, &seen_burst);
			if (!r && !parse_dec(o.val, 10000, &burst))
				r = fail(p, o.at + 1, "not a burst (1-10000)");
			if (!r && burst == 0)
				r = fail(p, o.at + 1, "not a burst (1-10000)");
			burst_at = o.at + 1;
		}
		if (r)
			return r;
	}
	if (limit_overflows(avg, burst))
		return fail(p, burst_at,
			    "rate times burst overflows the kernel's credits: lower either");
	l = (void *)(p->buf + off);
	l->avg = avg;
	l->burst = burst;
	return 0;
}

static const struct {
	const char *name;
	int (*parse)(struct parser *p, size_t m_at);
} matches[] = {
	{ "comment", match_comment },	  { "mark", match_mark },
	{ "conntrack", match_conntrack }, { "set", match_set },
	{ "multiport", match_multiport }, { "icmp", match_icmp },
	{ "icmp6", match_icmp6 },	  { "addrtype", match_addrtype },
	{ "limit", match_limit },
};

/* --- targets ---------------------------------------------------------------------- */

static bool is_verdict(const char *s)
{
	return strcmp(s, "ACCEPT") == 0 || strcmp(s, "DROP") == 0 || strcmp(s, "RETURN") == 0;
}

static int target_standard(struct parser *p, size_t at, const char *name)
{
	struct xt_standard_target *t;
	GROW(p->buf, p->cap, p->len + STD_SIZE);
	t = (void *)(p->buf + p->len);
	memset(t, 0, STD_SIZE);
	t->target.u.user.target_size = STD_SIZE;
	snprintf(t->target.u.user.name, sizeof(t->target.u.user.name), "%s", name);
	p->len += STD_SIZE;
	if (tok(p, p->i))
		return fail(p, p->i, "unexpected after the target");
	(void)at;
	return 0;
}

static int check_prefix(struct parser *p, size_t i, const char *s, size_t max)
{
	if (strlen(s) > max)
		return fail(p, i, "longer than %zu characters", max);
	return 0;
}

static int target_module(struct parser *p, size_t at, const char *name)
{
	static const char *const mark_opts[] = { "--set-xmark", "--set-mark", NULL };
	static const char *const masq_opts[] = { "--random-fully", NULL };
	static const char *const nflog_opts[] = { "--nflog-prefix", "--nflog-group",
						  "--nflog-threshold", NULL };
	static const char *const log_opts[] = { "--log-prefix", "--log-level", NULL };
	static const char *const reject_opts[] = { "--reject-with", NULL };
	const char *const *known = NULL, *const *flags = NULL;
	size_t size = 0;
	uint8_t rev = 0;
	if (strcmp(name, "MARK") == 0) {
		known = mark_opts;
		size = sizeof(struct xt_mark_tginfo2);
		rev = 2;
	} else if (strcmp(name, "MASQUERADE") == 0) {
		known = flags = masq_opts;
		size = p->af == AF_INET6 ? sizeof(struct nf_nat_range)
					 : sizeof(struct nf_nat_ipv4_multi_range_compat);
	} else if (strcmp(name, "NFLOG") == 0) {
		known = nflog_opts;
		size = sizeof(struct xt_nflog_info);
	} else if (strcmp(name, "LOG") == 0) {
		known = log_opts;
		size = sizeof(struct xt_log_info);
	} else {
		known = reject_opts;
		size = p->af == AF_INET6 ? sizeof(struct ip6t_reject_info)
					 : sizeof(struct ipt_reject_info);
	}
	uint8_t *data = add_ext(p, name, rev, size);
	size_t off = (size_t)(data - p->buf);
	union {
		struct xt_mark_tginfo2 mark;
		struct nf_nat_ipv4_multi_range_compat masq;
		struct nf_nat_range masq6;
		struct xt_nflog_info nflog;
		struct xt_log_info log;
		struct ipt_reject_info reject;
	} v;
	memset(&v, 0, sizeof(v));
	bool seen[4] = { false };
	if (strcmp(name, "MASQUERADE") == 0 && p->af == AF_INET)
		v.masq.rangesize = 1; /* IPv6's struct nf_nat_range has no count */
	else if (strcmp(name, "LOG") == 0)
		v.log.level = LOG_LEVEL_DEFAULT;
	else if (strcmp(name, "REJECT") == 0)
		v.reject.with = p->af == AF_INET6 ? (unsigned)IP6T_ICMP6_PORT_UNREACH
						  : (unsigned)IPT_ICMP_PORT_UNREACHABLE;
	while (tok(p, p->i)) {
		struct opt o;
		const char *s = tok(p, p->i);
		if (strcmp(s, "!") != 0 && strncmp(s, "--", 2) != 0)
			return fail(p, p->i, "unexpected after the target");
		int r = next_opt(p, name, known, flags, &o);
		if (!r)
			r = no_invert(p, &o);
		if (r)
			return r;
		size_t which = 0;
		while (known[which] && strcmp(known[which], o.name) != 0)
			which++;
		if (strcmp(name, "MARK") == 0) /* two spellings of one option */
			which = 0;
		r = once(p, &o, &seen[which]);
		if (r)
			return r;
		uint32_t u;
		if (strcmp(o.name, "--set-xmark") == 0 || strcmp(o.name, "--set-mark") == 0) {
			uint32_t mark, mask;
			r = parse_mark_mask(p, o.at + 1, o.val, &mark, &mask);
			v.mark.mark = mark;
			v.mark.mask = strcmp(o.name, "--set-xmark") == 0 ? mask : mask | mark;
		} else if (strcmp(o.name, "--random-fully") == 0) {
			if (p->af == AF_INET6)
				v.masq6.flags |= NF_NAT_RANGE_PROTO_RANDOM_FULLY;
			else
				v.masq.range[0].flags |= NF_NAT_RANGE_PROTO_RANDOM_FULLY;
		} else if (strcmp(o.name, "--nflog-prefix") == 0) {
			r = check_prefix(p, o.at + 1, o.val, sizeof(v.nflog.prefix) - 1);
			if (!r)
				snprintf(v.nflog.prefix, sizeof(v.nflog.prefix), "%s", o.val);
		} else if (strcmp(o.name, "--nflog-group") == 0) {
			if (!parse_dec(o.val, UINT16_MAX, &u))
				r = fail(p, o.at + 1, "not a group (0-65535)");
			v.nflog.group = (uint16_t)u;
		} else if (strcmp(o.name, "--nflog-threshold") == 0) {
			if (!parse_dec(o.val, UINT16_MAX, &u))
				r = fail(p, o.at + 1, "not a threshold (0-65535)");
			v.nflog.threshold = (uint16_t)u;
		} else if (strcmp(o.name, "--log-prefix") == 0) {
			r = check_prefix(p, o.at + 1, o.val, sizeof(v.log.prefix) - 1);
			if (!r)
				snprintf(v.log.prefix, sizeof(v.log.prefix), "%s", o.val);
		} else if (strcmp(o.name, "--log-level") == 0) {
			u = 8;
			for (uint32_t k = 0; k < ARRAY_SIZE(log_levels); k++)
				if (strcasecmp(log_levels[k], o.val) == 0)
					u = k;
			if (u == 8 && !parse_dec(o.val, 7, &u))
				r = fail(p, o.at + 1, "not a log level (0-7)");
			v.log.level = (uint8_t)u;
		} else { /* --reject-with */
			int with = reject_with(p->af, o.val);
			if (with < 0)
				r = fail(p, o.at + 1, "unknown reject type");
			else
				v.reject.with = (unsigned)with;
			if (!r && with == (p->af == AF_INET6 ? IP6T_TCP_RESET : IPT_TCP_RESET))
				p->reset_tok = o.at + 1;
		}
		if (r)
			return r;
	}
	if (strcmp(name, "MARK") == 0 && !seen[0])
		return fail(p, at, "-j MARK needs --set-xmark");
	memcpy(p->buf + off, &v, size);
	return 0;
}

bool ipt_chain_name_valid(const char *name)
{
	return plain_name(name, IPT_CHAIN_MAX) && !is_verdict(name) && !is_module_target(name) &&
	       strcmp(name, "QUEUE") != 0;
}

static int parse_target(struct parser *p, size_t at, bool go)
{
	const char *name = NULL;
	int r = arg(p, at, &name);
	if (r)
		return r;
	p->i = at + 2;
	if (go) {
		if (is_verdict(name) || is_module_target(name))
			return fail(p, at + 1, "-g needs a chain");
		p->ip.go = true;
	}
	if (is_verdict(name))
		return target_standard(p, at, name);
	if (is_module_target(name))
		return target_module(p, at, name);
	if (!plain_name(name, IPT_CHAIN_MAX))
		return fail(p, at + 1, "not a chain name (1-%d characters)", IPT_CHAIN_MAX);
	return target_standard(p, at, name);
}

/* --- the rule --------------------------------------------------------------------- */

static int parse_ip_opt(struct parser *p, size_t at, bool invert)
{
	const char *o = tok(p, at), *v = NULL;
	int r = arg(p, at, &v);
	if (r)
		return r;
	struct hdr *ip = &p->ip;
	bool *seen;
	uint8_t inv;
	switch (o[1]) {
	case 's':
		seen = &p->has_src;
		inv = IPT_INV_SRCIP;
		r = parse_cidr(p, at + 1, v, &ip->src, &ip->smsk);
		break;
	case 'd':
		seen = &p->has_dst;
		inv = IPT_INV_DSTIP;
		r = parse_cidr(p, at + 1, v, &ip->dst, &ip->dmsk);
		break;
	case 'i':
		seen = &p->has_in;
		inv = IPT_INV_VIA_IN;
		r = parse_iface(p, at + 1, v, ip->iniface, ip->iniface_mask);
		break;
	case 'o':
		seen = &p->has_out;
		inv = IPT_INV_VIA_OUT;
		r = parse_iface(p, at + 1, v, ip->outiface, ip->outiface_mask);
		break;
	default:
		seen = &p->has_proto;
		inv = IPT_INV_PROTO;
		r = parse_proto(p, at + 1, v, &ip->proto);
		break;
	}
	if (r)
		return r;
	if (*seen)
		return fail(p, at, "given twice");
	*seen = true;
	if (invert)
		ip->invflags |= inv;
	p->i = at + 2;
	return 0;
}

static bool is_ip_opt(const char *s)
{
	return s && s[0] == '-' && s[1] && !s[2] && strchr("sdiop", s[1]);
}

static int final_checks(struct parser *p)
{
	uint16_t proto = p->ip.proto;
	bool inv = p->ip.invflags & IPT_INV_PROTO;
	if (p->multiport_tok &&
	    (inv || (proto != IPPROTO_TCP && proto != IPPROTO_UDP && proto != IPPROTO_UDPLITE &&
		     proto != IPPROTO_SCTP && proto != IPPROTO_DCCP)))
		return fail(p, p->multiport_tok - 1,
			    "needs -p tcp, udp, udplite, sctp or dccp (not negated)");
	if (p->icmp_tok && p->af != AF_INET)
		return fail(p, p->icmp_tok - 1, "an IPv6 rule matches ICMPv6: -m icmp6");
	if (p->icmp_tok && (inv || proto != IPPROTO_ICMP))
		return fail(p, p->icmp_tok - 1, "needs -p icmp (not negated)");
	if (p->icmp6_tok && p->af != AF_INET6)
		return fail(p, p->icmp6_tok - 1, "an IPv4 rule matches ICMP: -m icmp");
	if (p->icmp6_tok && (inv || proto != IPPROTO_ICMPV6))
		return fail(p, p->icmp6_tok - 1, "needs -p ipv6-icmp (not negated)");
	if (p->reset_tok && (inv || proto != IPPROTO_TCP))
		return fail(p, p->reset_tok, "needs -p tcp (not negated)");
	return 0;
}

int ipt_rule_parse(int af, const char *text, const struct ipt_sets *sets, void **out, size_t *len,
		   struct strbuf *err)
{
	struct parser p = { .err = err, .sets = sets, .af = af };
	if (af != AF_INET && af != AF_INET6) {
		sb_addf(err, "address family %d is neither IPv4 nor IPv6", af);
		return -EINVAL;
	}
	bool have_target = false;
	int r = ipt_tokenize(text, &p.t, err);
	if (r)
		goto done;
	if (p.t.n == 0) {
		sb_adds(err, "empty rule");
		r = -EINVAL;
		goto done;
	}
	while (!r && p.i < p.t.n) {
		size_t at = p.i;
		const char *s = tok(&p, at);
		bool invert = false;
		if (strcmp(s, "!") == 0) {
			invert = true;
			s = tok(&p, ++at);
			if (!s) {
				r = fail(&p, at, "nothing to negate");
				break;
			}
		}
		if (is_ip_opt(s)) {
			r = parse_ip_opt(&p, at, invert);
		} else if (invert) {
			r = fail(&p, at, "cannot be negated");
		} else if (strcmp(s, "-m") == 0) {
			const char *name = NULL;
			size_t k;
			r = arg(&p, at, &name);
			if (r)
				break;
			for (k = 0; k < ARRAY_SIZE(matches); k++)
				if (strcmp(matches[k].name, name) == 0)
					break;
			if (k == ARRAY_SIZE(matches)) {
				r = fail(&p, at + 1, "unknown match");
				break;
			}
			p.i = at + 2;
			r = matches[k].parse(&p, at + 1);
		} else if (strcmp(s, "-j") == 0 || strcmp(s, "-g") == 0) {
			r = parse_target(&p, at, s[1] == 'g');
			have_target = true;
		} else {
			r = fail(&p, at, "unknown option");
		}
	}
	if (!r && !have_target)
		r = fail(&p, p.t.n, "no target (-j or -g)");
	if (!r)
		r = final_checks(&p);
	if (r)
		goto done;

	/* The target is the last extension added; find where it starts. */
	size_t target_off = 0;
	for (size_t off = 0; off < p.len;) {
		const struct xt_entry_match *m = (const void *)(p.buf + off);
		target_off = off;
		off += m->u.match_size;
	}
	size_t head = entry_header_size(af), total = head + p.len;
	if (total > UINT16_MAX) {
		sb_adds(err, "rule too long for the kernel's 16-bit offsets");
		r = -EINVAL;
		goto done;
	}
	const struct hdr *h = &p.ip;
	uint8_t *raw = xcalloc(1, total);
	/* the header of either family: the same fields under the same names */
#define FILL(ip, e, fam, flags_)                                                    \
	do {                                                                        \
		ip->src = h->src.fam, ip->smsk = h->smsk.fam, ip->dst = h->dst.fam; \
		ip->dmsk = h->dmsk.fam;                                             \
		memcpy(ip->iniface, h->iniface, IFNAMSIZ);                          \
		memcpy(ip->outiface, h->outiface, IFNAMSIZ);                        \
		memcpy(ip->iniface_mask, h->iniface_mask, IFNAMSIZ);                \
		memcpy(ip->outiface_mask, h->outiface_mask, IFNAMSIZ);              \
		ip->proto = h->proto, ip->flags = (uint8_t)(flags_);                \
		ip->invflags = h->invflags;                                         \
		e->target_offset = (uint16_t)(head + target_off);                   \
		e->next_offset = (uint16_t)total;                                   \
	} while (0)
	if (af == AF_INET6) {
		struct ip6t_entry *e = (void *)raw;
		struct ip6t_ip6 *ip = &e->ipv6;
		FILL(ip, e, v6, (h->proto ? IP6T_F_PROTO : 0) | (h->go ? IP6T_F_GOTO : 0));
	} else {
		struct ipt_entry *e = (void *)raw;
		struct ipt_ip *ip = &e->ip;
		FILL(ip, e, v4, h->go ? IPT_F_GOTO : 0);
	}
#undef FILL
	memcpy(raw + head, p.buf, p.len);
	*out = raw;
	*len = total;
done:
	free(p.buf);
	ipt_tokens_free(&p.t);
	return r;
}

/* --- ids ----------------------------------------------------------------------------- */

/*
 * The common shape, without tokenizing (felix reads the id of every rule it
 * wants at every apply): plain words, then `-m comment --comment "cali:..."`.
 * Taken only when the words before it hold no quote, backslash or control
 * character and no -j or -g, and the comment is a quoted word without
 * escapes or a bare word; anything else goes the long way.
 */
static bool plain_comment_id(const char *text, char *id)
{
	static const char lead[] = "-m comment --comment ";
	const char *m = text;
	while ((m = strstr(m, lead)) && m != text && m[-1] != ' ')
		m++;
	if (!m)
		return false;
	for (const char *w = text; w < m;) {
		size_t n = strcspn(w, " ");
		if ((n == 2 && (memcmp(w, "-j", 2) == 0 || memcmp(w, "-g", 2) == 0)))
			return false;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)w[i] < 0x20 || w[i] == 0x7f || w[i] == '"' ||
			    w[i] == '\\')
				return false;
		w += n + (w[n] == ' ');
	}
	const char *c = m + sizeof(lead) - 1, *end;
	if (*c == '"') {
		c++;
		end = strpbrk(c, "\"\\");
		if (!end || *end != '"' || (end[1] && end[1] != ' '))
			return false;
	} else {
		end = c + strcspn(c, " \"\\");
		if (*end && *end != ' ')
			return false;
	}
	for (const char *p = c; p < end; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	return id_from_comment(c, (size_t)(end - c), id);
}

bool ipt_rule_text_id(const char *text, char *id)
{
	if (plain_comment_id(text, id))
		return true;
	struct ipt_tokens t = { 0 };
	struct strbuf err = STRBUF_INIT;
	bool found = false;
	sb_init(&err);
	if (ipt_tokenize(text, &t, &err) == 0) {
		bool in_comment = false;
		for (size_t i = 0; i + 1 < t.n && !found; i++) {
			if (strcmp(t.v[i], "-j") == 0 || strcmp(t.v[i], "-g") == 0) {
				break;
			} else if (strcmp(t.v[i], "-m") == 0) {
				in_comment = strcmp(t.v[i + 1], "comment") == 0;
			} else if (in_comment && strcmp(t.v[i], "--comment") == 0) {
				found = id_from_comment(t.v[i + 1], strlen(t.v[i + 1]), id);
				i++;
			}
		}
	}
	ipt_tokens_free(&t);
	sb_free(&err);
	return found;
}
