/* IPv4/IPv6 addresses and prefixes: parsing, printing, containment. Pure. */
#ifndef BRINDLE_NET_H
#define BRINDLE_NET_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <brindle/core/util.h>

struct br_ip {
	uint8_t family; /* AF_INET or AF_INET6; 0 = unset */
	uint8_t a[16];	/* network byte order; IPv4 in the first 4 bytes */
};

struct br_cidr {
	struct br_ip ip;
	uint8_t len;
};

#define IP_STRLEN   46 /* INET6_ADDRSTRLEN */
#define CIDR_STRLEN 50 /* address + "/128" */

int ip_parse(const char *s, struct br_ip *out) must_check;
/*
 * "a.b.c.d/n" or "x::y/n". With @allow_bare a plain address is taken as a
 * host prefix. Host bits are kept as written; see cidr_is_network.
 */
int cidr_parse(const char *s, bool allow_bare, struct br_cidr *out) must_check;
const char *ip_str(const struct br_ip *ip, char buf[IP_STRLEN]);
const char *cidr_str(const struct br_cidr *c, char buf[CIDR_STRLEN]);

static inline unsigned ip_bits(const struct br_ip *ip)
{
	return ip->family == AF_INET6 ? 128 : 32;
}

static inline uint32_t ip4_u32(const struct br_ip *ip)
{
	return (uint32_t)ip->a[0] << 24 | (uint32_t)ip->a[1] << 16 | (uint32_t)ip->a[2] << 8 |
	       ip->a[3];
}

struct br_ip ip4_from_u32(uint32_t v);

/* Zero the host bits. */
void cidr_mask(struct br_cidr *c);
bool cidr_is_network(const struct br_cidr *c);
bool cidr_contains_ip(const struct br_cidr *c, const struct br_ip *ip);
bool cidr_contains(const struct br_cidr *outer, const struct br_cidr *inner);
bool cidr_overlaps(const struct br_cidr *a, const struct br_cidr *b);
int ip_cmp(const struct br_ip *a, const struct br_ip *b);
bool ip_equal(const struct br_ip *a, const struct br_ip *b);
int cidr_cmp(const struct br_cidr *a, const struct br_cidr *b);
/* The address @offset positions after the network address (IPv4 only past 32 bits). */
struct br_ip ip_add(const struct br_ip *base, uint64_t offset);
/* Offset of @ip from @base (same family, ip >= base, distance < 2^64). */
uint64_t ip_offset(const struct br_ip *base, const struct br_ip *ip);

#endif
