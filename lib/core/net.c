#include <brindle/core/net.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int ip_parse(const char *s, struct br_ip *out)
{
	struct br_ip ip = { 0 };
	if (!s)
		return -EINVAL;
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, ip.a) != 1)
			return -EINVAL;
		ip.family = AF_INET6;
	} else {
		/* inet_pton rejects leading zeros and short forms: what we want. */
		if (inet_pton(AF_INET, s, ip.a) != 1)
			return -EINVAL;
		ip.family = AF_INET;
	}
	*out = ip;
	return 0;
}

int cidr_parse(const char *s, bool allow_bare, struct br_cidr *out)
{
	if (!s)
		return -EINVAL;
	const char *slash = strchr(s, '/');
	char buf[IP_STRLEN];
	struct br_cidr c;
	if (!slash) {
		if (!allow_bare || ip_parse(s, &c.ip) < 0)
			return -EINVAL;
		c.len = (uint8_t)ip_bits(&c.ip);
		*out = c;
		return 0;
	}
	size_t n = (size_t)(slash - s);
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (ip_parse(buf, &c.ip) < 0)
		return -EINVAL;
	const char *p = slash + 1;
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] != '\0') || strlen(p) > 3)
		return -EINVAL;
	unsigned long len = strtoul(p, NULL, 10);
	if (len > ip_bits(&c.ip))
		return -EINVAL;
	c.len = (uint8_t)len;
	*out = c;
	return 0;
}

const char *ip_str(const struct br_ip *ip, char buf[IP_STRLEN])
{
	if (!ip->family || !inet_ntop(ip->family, ip->a, buf, IP_STRLEN))
		snprintf(buf, IP_STRLEN, "?");
	return buf;
}

const char *cidr_str(const struct br_cidr *c, char buf[CIDR_STRLEN])
{
	char ip[IP_STRLEN];
	snprintf(buf, CIDR_STRLEN, "%s/%u", ip_str(&c->ip, ip), c->len);
	return buf;
}

struct br_ip ip4_from_u32(uint32_t v)
{
	struct br_ip ip = { .family = AF_INET };
	ip.a[0] = (uint8_t)(v >> 24);
	ip.a[1] = (uint8_t)(v >> 16);
	ip.a[2] = (uint8_t)(v >> 8);
	ip.a[3] = (uint8_t)v;
	return ip;
}

static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned len)
{
	unsigned bytes = len / 8, bits = len % 8;
	if (memcmp(a, b, bytes) != 0)
		return false;
	if (bits == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - bits));
	return (a[bytes] & mask) == (b[bytes] & mask);
}

void cidr_mask(struct br_cidr *c)
{
	unsigned total = ip_bits(&c->ip) / 8;
	for (unsigned i = 0; i < total; i++) {
		unsigned bit = i * 8;
		if (bit >= c->len)
			c->ip.a[i] = 0;
		else if (bit + 8 > c->len)
			c->ip.a[i] &= (uint8_t)(0xff << (8 - (c->len - bit)));
	}
}

bool cidr_is_network(const struct br_cidr *c)
{
	struct br_cidr m = *c;
	cidr_mask(&m);
	return memcmp(m.ip.a, c->ip.a, 16) == 0;
}

bool cidr_contains_ip(const struct br_cidr *c, const struct br_ip *ip)
{
	return c->ip.family == ip->family && prefix_equal(c->ip.a, ip->a, c->len);
}

bool cidr_contains(const struct br_cidr *outer, const struct br_cidr *inner)
{
	return outer->ip.family == inner->ip.family && outer->len <= inner->len &&
	       prefix_equal(outer->ip.a, inner->ip.a, outer->len);
}

bool cidr_overlaps(const struct br_cidr *a, const struct br_cidr *b)
{
	return cidr_contains(a, b) || cidr_contains(b, a);
}

int ip_cmp(const struct br_ip *a, const struct br_ip *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->a, b->a, 16);
}

bool ip_equal(const struct br_ip *a, const struct br_ip *b)
{
	return ip_cmp(a, b) == 0;
}

int cidr_cmp(const struct br_cidr *a, const struct br_cidr *b)
{
	int r = ip_cmp(&a->ip, &b->ip);
	if (r)
		return r;
	return (int)a->len - (int)b->len;
}

struct br_ip ip_add(const struct br_ip *base, uint64_t offset)
{
	struct br_ip r = *base;
	unsigned n = ip_bits(base) / 8;
	unsigned carry = 0;
	for (unsigned i = n; i-- > 0;) {
		unsigned v = r.a[i] + (unsigned)(offset & 0xff) + carry;
		r.a[i] = (uint8_t)v;
		carry = v >> 8;
		offset >>= 8;
	}
	return r;
}

uint64_t ip_offset(const struct br_ip *base, const struct br_ip *ip)
{
	unsigned n = ip_bits(base) / 8;
	uint64_t a = 0, b = 0;
	for (unsigned i = n > 8 ? n - 8 : 0; i < n; i++) {
		a = a << 8 | base->a[i];
		b = b << 8 | ip->a[i];
	}
	return b - a;
}
