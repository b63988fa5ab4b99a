/*
 * rtnetlink objects and messages, pure: links, addresses, routes, neighbours
 * and FDB entries as plain structs; batches of requests encoded, and dump
 * replies parsed, by functions over buffers (lib/core/nl_msg.c, on libmnl's
 * attribute helpers). Talking to a kernel is <brindle/sys/nl.h>.
 */
#ifndef BRINDLE_CORE_NL_MSG_H
#define BRINDLE_CORE_NL_MSG_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/net.h>
#include <brindle/core/strbuf.h>

/* <net/if.h> lacks it, and <linux/if.h> conflicts with <net/if.h>. */
#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000
#endif

/* Route protocol number that marks Brindle's routes and neighbour entries. */
#define NL_PROTO_BRINDLE 80

struct nl_link {
	int ifindex;
	char name[IFNAMSIZ];
	unsigned flags; /* IFF_UP, IFF_LOWER_UP, ... */
	unsigned mtu;
	uint8_t mac[6];
	bool has_mac;
	char kind[16]; /* "veth", "vxlan", "ipip", ... ("" when unknown) */
	int parent;    /* IFLA_LINK */
	/* vxlan */
	uint32_t vxlan_id;
	uint16_t vxlan_port;
	struct br_ip vxlan_local;
	int vxlan_link;
	bool vxlan_learning;
	/* encode only: veth peer, target namespace */
	char peer_name[IFNAMSIZ];
	int peer_netns_fd; /* -1: same namespace */
	int netns_fd;	   /* -1: none (IFLA_NET_NS_FD, to move a link) */
};

struct nl_addr {
	int ifindex;
	struct br_cidr addr;
	uint8_t scope;	/* RT_SCOPE_UNIVERSE, RT_SCOPE_LINK, ... */
	uint32_t flags; /* IFA_F_NODAD (an IPv6 address usable at once), ...; written only */
};

struct nl_route {
	uint8_t family;
	uint8_t protocol;
	uint8_t scope;
	uint8_t type; /* RTN_UNICAST, RTN_BLACKHOLE, ... */
	uint32_t table;
	struct br_cidr dst;
	struct br_ip gw; /* family 0 when none */
	int oif;	 /* 0 when none */
	bool onlink;
	uint32_t priority;
	uint32_t mtu; /* RTAX_MTU, 0 when none */
};

struct nl_neigh {
	uint8_t family; /* AF_INET / AF_INET6 neighbours, AF_BRIDGE for FDB entries */
	int ifindex;
	struct br_ip dst; /* neighbour: its address; FDB: the remote VTEP */
	uint8_t lladdr[6];
	bool has_lladdr;
	uint16_t state; /* NUD_PERMANENT, ... */
	uint8_t flags;	/* NTF_SELF, ... */
	uint8_t protocol;
};

struct nl_link_list {
	struct nl_link *v;
	size_t n, cap;
};
struct nl_addr_list {
	struct nl_addr *v;
	size_t n, cap;
};
struct nl_route_list {
	struct nl_route *v;
	size_t n, cap;
};
struct nl_neigh_list {
	struct nl_neigh *v;
	size_t n, cap;
};

void nl_link_init(struct nl_link *l);
const struct nl_link *nl_link_by_name(const struct nl_link_list *l, const char *name);
const struct nl_link *nl_link_by_index(const struct nl_link_list *l, int ifindex);

/* --- requests: a batch of messages -------------------------------------------------- */

enum nl_op {
	NL_ADD,	    /* create, failing if it exists */
	NL_REPLACE, /* create or replace (links: create or modify) */
	NL_DEL,
	NL_SET, /* links: change an existing link (RTM_NEWLINK without NLM_F_CREATE) */
};

struct nl_batch;

struct nl_batch *nl_batch_new(void);
void nl_batch_free(struct nl_batch *b);
void nl_batch_reset(struct nl_batch *b);
size_t nl_batch_count(const struct nl_batch *b);
/* Human-readable form of message @i ("route replace 10.0.0.1/32 dev #4 proto 80 ..."). */
const char *nl_batch_describe(const struct nl_batch *b, size_t i);

void nl_batch_link(struct nl_batch *b, enum nl_op op, const struct nl_link *l);
void nl_batch_addr(struct nl_batch *b, enum nl_op op, const struct nl_addr *a);
void nl_batch_route(struct nl_batch *b, enum nl_op op, const struct nl_route *r);
void nl_batch_neigh(struct nl_batch *b, enum nl_op op, const struct nl_neigh *n);

/* The encoded messages, back to back (for backends). */
const void *nl_batch_data(const struct nl_batch *b, size_t *len);
/* Message @i of the batch gets sequence number @seq + i. */
void nl_batch_set_seq(struct nl_batch *b, uint32_t seq);

/* --- pure parsing of one message (as a dump or the recording backend sees it) ----- */

struct nlmsghdr;
int nl_parse_link(const struct nlmsghdr *h, struct nl_link *out) must_check;
int nl_parse_addr(const struct nlmsghdr *h, struct nl_addr *out) must_check;
int nl_parse_route(const struct nlmsghdr *h, struct nl_route *out) must_check;
int nl_parse_neigh(const struct nlmsghdr *h, struct nl_neigh *out) must_check;
/* RTM_NEWNETCONF: whose settings changed (ifindex < 0 for "all" and "default") and the
 * new values the message carries (-1 for those it does not: a change carries only its own;
 * and for a value over 255, which no setting has). */
struct nl_netconf {
	uint8_t family;
	int ifindex;
	int forwarding, proxy_neigh, rp_filter;
};
int nl_parse_netconf(const struct nlmsghdr *h, struct nl_netconf *out) must_check;

/* Dump filters: what the kernel filters on with strict checking. Zero = any. */
struct nl_route_filter {
	uint8_t family;
	uint32_t table;
	uint8_t protocol;
	int oif;
};

/* The lists a dump fills; freed with these. */
void nl_link_list_free(struct nl_link_list *l);
void nl_addr_list_free(struct nl_addr_list *l);
void nl_route_list_free(struct nl_route_list *l);
void nl_neigh_list_free(struct nl_neigh_list *l);

/* "10.0.0.1/32 dev #4 proto 80 scope link" style text, for logs and tests. */
void nl_route_str(const struct nl_route *r, struct strbuf *out);
void nl_neigh_str(const struct nl_neigh *n, struct strbuf *out);
bool nl_route_equal(const struct nl_route *a, const struct nl_route *b);
/* Same destination, table and metric: what identifies a route to the kernel. */
bool nl_route_same_key(const struct nl_route *a, const struct nl_route *b);

#endif
