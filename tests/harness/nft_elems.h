/*
 * nftables set elements for tests, from and to host-order numbers: an element keeps its
 * addresses as network-order bytes (<brindle/core/nft_rule.h>), which a test reads better as
 * 0x0a000001 than as bytes.
 */
#ifndef BRINDLE_TEST_NFT_ELEMS_H
#define BRINDLE_TEST_NFT_ELEMS_H

#include <brindle/core/nft_rule.h>

#include <arpa/inet.h>
#include <string.h>

/* An interval of IPv4 addresses [lo, hi]. */
static inline struct nft_elem elem_range4(uint32_t lo, uint32_t hi)
{
	struct nft_elem e;
	memset(&e, 0, sizeof(e));
	uint32_t l = htonl(lo), h = htonl(hi);
	memcpy(e.lo, &l, 4);
	memcpy(e.hi, &h, 4);
	return e;
}

/* A named port: an IPv4 address, a protocol and a port. */
static inline struct nft_elem elem_port4(uint32_t addr, uint8_t proto, uint16_t port)
{
	struct nft_elem e = elem_range4(addr, 0);
	e.proto = proto;
	e.port = port;
	return e;
}

/* The IPv4 address an element's lo or hi holds. */
static inline uint32_t elem_addr4(const uint8_t *a)
{
	uint32_t v;
	memcpy(&v, a, 4);
	return ntohl(v);
}

#endif
