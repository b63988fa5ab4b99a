/*
 * rtnetlink parsing: the input is a stream of netlink messages as a dump
 * reply or a monitor socket would carry them. Every well-formed header is
 * handed to the parser for its type. Besides not crashing or reading past
 * the message: whatever parses re-encodes into a request that parses back to
 * the same object (encode and parse agree), and describing it terminates.
 */
#include <brindle/sys/nl.h>

#include <brindle/core/ipset_batch.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/ipset/ip_set.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_netlink: %s\n", what);
		abort();
	}
}

/* The single message of @b, parsed by @parse into @out. */
#define REPARSE(b, parse, out)                                                   \
	do {                                                                     \
		size_t len_;                                                     \
		const struct nlmsghdr *h_ = nl_batch_data(b, &len_);             \
		check(nl_batch_count(b) == 1 && mnl_nlmsg_ok(h_, (int)len_),     \
		      "encoder produced a malformed message");                   \
		check(parse(h_, out) == 0, "encoded object does not parse back"); \
		(void)nl_batch_describe(b, 0);                                   \
	} while (0)

static void route(struct nl_batch *b, const struct nlmsghdr *h)
{
	struct nl_route r, back;
	if (nl_parse_route(h, &r) < 0)
		return;
	struct strbuf s;
	sb_init(&s);
	nl_route_str(&r, &s);
	sb_free(&s);
	nl_batch_route(b, NL_REPLACE, &r);
	REPARSE(b, nl_parse_route, &back);
	check(nl_route_equal(&r, &back), "route changed in a round trip");
}

static void addr(struct nl_batch *b, const struct nlmsghdr *h)
{
	struct nl_addr a, back;
	if (nl_parse_addr(h, &a) < 0)
		return;
	nl_batch_addr(b, NL_REPLACE, &a);
	REPARSE(b, nl_parse_addr, &back);
	check(a.ifindex == back.ifindex && cidr_cmp(&a.addr, &back.addr) == 0 &&
		      a.scope == back.scope,
	      "address changed in a round trip");
}

static void neigh(struct nl_batch *b, const struct nlmsghdr *h)
{
	struct nl_neigh n, back;
	if (nl_parse_neigh(h, &n) < 0)
		return;
	struct strbuf s;
	sb_init(&s);
	nl_neigh_str(&n, &s);
	sb_free(&s);
	nl_batch_neigh(b, NL_REPLACE, &n);
	REPARSE(b, nl_parse_neigh, &back);
	check(n.family == back.family && n.ifindex == back.ifindex &&
		      ip_equal(&n.dst, &back.dst) && n.has_lladdr == back.has_lladdr &&
		      (!n.has_lladdr || memcmp(n.lladdr, back.lladdr, 6) == 0) &&
		      n.state == back.state && n.protocol == back.protocol,
	      "neighbour changed in a round trip");
}

static void link_(struct nl_batch *b, const struct nlmsghdr *h)
{
	struct nl_link l, back;
	if (nl_parse_link(h, &l) < 0)
		return;
	check(memchr(l.name, 0, sizeof(l.name)) && memchr(l.kind, 0, sizeof(l.kind)),
	      "unterminated link name or kind");
	nl_batch_link(b, NL_SET, &l);
	REPARSE(b, nl_parse_link, &back);
	check(back.ifindex == l.ifindex && strcmp(back.name, l.name) == 0 && back.mtu == l.mtu,
	      "link changed in a round trip");
}

/* felix's drift repair reads netconf events; its ip set check, set header dumps. */
static void netconf(const struct nlmsghdr *h)
{
	struct nl_netconf nc;
	if (nl_parse_netconf(h, &nc) < 0)
		return;
	check(nc.forwarding >= -1 && nc.proxy_neigh >= -1 && nc.rp_filter >= -1,
	      "netconf value out of range");
}

static void ipset_header(const struct nlmsghdr *h)
{
	struct ips_list l = { 0 };
	int r = ips_parse_header_msg(h, "", &l);
	check(r < 0 || (size_t)r == l.n, "ip set header count");
	for (size_t i = 0; i < l.n; i++)
		check(memchr(l.v[i].info.name, 0, sizeof(l.v[i].info.name)) != NULL,
		      "unterminated set name");
	ips_list_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Netlink messages are 4-byte aligned in the socket buffer. */
	uint32_t *buf = malloc(size + 4);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct nl_batch *b = nl_batch_new();
	/*
	 * Walked by hand: libmnl's mnl_nlmsg_ok compares the length as a signed
	 * int, so a length above 2^31 passes it. The kernel never sends one; the
	 * fuzzer does.
	 */
	size_t left = size;
	const struct nlmsghdr *h = (const void *)buf;
	while (left >= sizeof(*h) && h->nlmsg_len >= sizeof(*h) && h->nlmsg_len <= left) {
		size_t step = MNL_ALIGN(h->nlmsg_len);
		nl_batch_reset(b);
		switch (h->nlmsg_type) {
		case RTM_NEWROUTE:
		case RTM_DELROUTE:
			route(b, h);
			break;
		case RTM_NEWADDR:
		case RTM_DELADDR:
			addr(b, h);
			break;
		case RTM_NEWNEIGH:
		case RTM_DELNEIGH:
			neigh(b, h);
			break;
		case RTM_NEWLINK:
		case RTM_DELLINK:
			link_(b, h);
			break;
		case RTM_NEWNETCONF:
			netconf(h);
			break;
		case (NFNL_SUBSYS_IPSET << 8) | IPSET_CMD_LIST:
			ipset_header(h);
			break;
		}
		if (step >= left)
			break;
		left -= step;
		h = (const void *)((const char *)h + step);
	}
	nl_batch_free(b);
	free(buf);
	return 0;
}
