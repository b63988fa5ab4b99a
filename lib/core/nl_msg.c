/*
 * Pure rtnetlink encoding and parsing, on libmnl's message and attribute
 * helpers (which only touch the caller's buffer). Unknown attributes are
 * skipped; known ones are validated for type and length before use.
 */
#include <brindle/sys/nl.h>

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netconf.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdio.h>
#include <stdlib.h>

#define MSG_MAX 4096

struct nl_batch {
	uint8_t *data;
	size_t len, cap;
	size_t *offsets; /* start of message i */
	size_t n, ncap;
	uint32_t seq;
	struct strbuf desc; /* nl_batch_describe's last answer */
};

void nl_link_init(struct nl_link *l)
{
	memset(l, 0, sizeof(*l));
	l->peer_netns_fd = -1;
	l->netns_fd = -1;
}

const struct nl_link *nl_link_by_name(const struct nl_link_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return &l->v[i];
	return NULL;
}

const struct nl_link *nl_link_by_index(const struct nl_link_list *l, int ifindex)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].ifindex == ifindex)
			return &l->v[i];
	return NULL;
}

/* --- batches --------------------------------------------------------------------------- */

struct nl_batch *nl_batch_new(void)
{
	return xcalloc(1, sizeof(struct nl_batch));
}

void nl_batch_reset(struct nl_batch *b)
{
	b->len = 0;
	b->n = 0;
	/* A cold start's batch is large; do not keep its buffers for good. */
	if (b->cap > 256 * 1024) {
		free(b->data);
		free(b->offsets);
		b->data = NULL;
		b->offsets = NULL;
		b->cap = b->ncap = 0;
	}
}

void nl_batch_free(struct nl_batch *b)
{
	if (!b)
		return;
	nl_batch_reset(b);
	free(b->data);
	free(b->offsets);
	sb_free(&b->desc);
	free(b);
}

size_t nl_batch_count(const struct nl_batch *b)
{
	return b->n;
}

const void *nl_batch_data(const struct nl_batch *b, size_t *len)
{
	*len = b->len;
	return b->data;
}

void nl_batch_set_seq(struct nl_batch *b, uint32_t seq)
{
	b->seq = seq;
	for (size_t i = 0; i < b->n; i++) {
		struct nlmsghdr *h = (struct nlmsghdr *)(b->data + b->offsets[i]);
		h->nlmsg_seq = seq + (uint32_t)i;
	}
}

static void push(struct nl_batch *b, const struct nlmsghdr *h)
{
	size_t len = h->nlmsg_len;
	if (b->len + len > b->cap) {
		b->cap = MAX(b->cap * 2, b->len + len + 4096);
		b->data = xrealloc(b->data, b->cap);
	}
	if (b->n == b->ncap) {
		b->ncap = b->ncap ? b->ncap * 2 : 16;
		b->offsets = xrealloc(b->offsets, sizeof(size_t) * b->ncap);
	}
	memcpy(b->data + b->len, h, len);
	((struct nlmsghdr *)(b->data + b->len))->nlmsg_seq = b->seq + (uint32_t)b->n;
	b->offsets[b->n] = b->len;
	b->len += len;
	b->n++;
}

static uint16_t op_flags(enum nl_op op)
{
	uint16_t f = NLM_F_REQUEST | NLM_F_ACK;
	if (op == NL_ADD)
		f |= NLM_F_CREATE | NLM_F_EXCL;
	else if (op == NL_REPLACE)
		f |= NLM_F_CREATE | NLM_F_REPLACE;
	return f;
}

static void put_ip(struct nlmsghdr *h, uint16_t type, const struct br_ip *ip)
{
	mnl_attr_put(h, type, ip->family == AF_INET6 ? 16 : 4, ip->a);
}

void nl_batch_link(struct nl_batch *b, enum nl_op op, const struct nl_link *l)
{
	uint8_t buf[MSG_MAX];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = op == NL_DEL ? RTM_DELLINK : RTM_NEWLINK;
	/* The kernel refuses NLM_F_REPLACE on links: "replace" is create-or-modify. */
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	if (op == NL_ADD)
		h->nlmsg_flags |= NLM_F_CREATE | NLM_F_EXCL;
	else if (op == NL_REPLACE)
		h->nlmsg_flags |= NLM_F_CREATE;
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = l->ifindex;
	if (op != NL_DEL) {
		ifi->ifi_change = IFF_UP;
		ifi->ifi_flags = l->flags & IFF_UP;
	}
	if (l->name[0])
		mnl_attr_put_strz(h, IFLA_IFNAME, l->name);
	if (op != NL_DEL) {
		if (l->mtu)
			mnl_attr_put_u32(h, IFLA_MTU, l->mtu);
		if (l->has_mac)
			mnl_attr_put(h, IFLA_ADDRESS, 6, l->mac);
		if (l->netns_fd >= 0)
			mnl_attr_put_u32(h, IFLA_NET_NS_FD, (uint32_t)l->netns_fd);
		if (l->parent)
			mnl_attr_put_u32(h, IFLA_LINK, (uint32_t)l->parent);
	}
	if (op != NL_DEL && l->kind[0] && op != NL_SET) {
		struct nlattr *info = mnl_attr_nest_start(h, IFLA_LINKINFO);
		mnl_attr_put_strz(h, IFLA_INFO_KIND, l->kind);
		if (strcmp(l->kind, "veth") == 0 && l->peer_name[0]) {
			struct nlattr *data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
			struct nlattr *peer = mnl_attr_nest_start(h, VETH_INFO_PEER);
			/* The peer's attributes follow its own ifinfomsg. */
			struct ifinfomsg *pi = (struct ifinfomsg *)((char *)h + h->nlmsg_len);
			memset(pi, 0, sizeof(*pi));
			h->nlmsg_len += MNL_ALIGN(sizeof(*pi));
			mnl_attr_put_strz(h, IFLA_IFNAME, l->peer_name);
			if (l->peer_netns_fd >= 0)
				mnl_attr_put_u32(h, IFLA_NET_NS_FD, (uint32_t)l->peer_netns_fd);
			mnl_attr_nest_end(h, peer);
			mnl_attr_nest_end(h, data);
		} else if (strcmp(l->kind, "vxlan") == 0) {
			struct nlattr *data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
			mnl_attr_put_u32(h, IFLA_VXLAN_ID, l->vxlan_id);
			mnl_attr_put_u16(h, IFLA_VXLAN_PORT, htons(l->vxlan_port));
			if (l->vxlan_local.family == AF_INET)
				put_ip(h, IFLA_VXLAN_LOCAL, &l->vxlan_local);
			else if (l->vxlan_local.family == AF_INET6)
				put_ip(h, IFLA_VXLAN_LOCAL6, &l->vxlan_local);
			if (l->vxlan_link)
				mnl_attr_put_u32(h, IFLA_VXLAN_LINK, (uint32_t)l->vxlan_link);
			mnl_attr_put_u8(h, IFLA_VXLAN_LEARNING, l->vxlan_learning ? 1 : 0);
			mnl_attr_nest_end(h, data);
		}
		mnl_attr_nest_end(h, info);
	}
	push(b, h);
}

void nl_batch_addr(struct nl_batch *b, enum nl_op op, const struct nl_addr *a)
{
	uint8_t buf[MSG_MAX];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = op == NL_DEL ? RTM_DELADDR : RTM_NEWADDR;
	h->nlmsg_flags = op_flags(op);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	ifa->ifa_family = a->addr.ip.family;
	ifa->ifa_prefixlen = a->addr.len;
	ifa->ifa_scope = a->scope;
	ifa->ifa_index = (uint32_t)a->ifindex;
	ifa->ifa_flags = (uint8_t)a->flags;
	put_ip(h, IFA_LOCAL, &a->addr.ip);
	put_ip(h, IFA_ADDRESS, &a->addr.ip);
	if (a->flags)
		mnl_attr_put_u32(h, IFA_FLAGS, a->flags);
	push(b, h);
}

void nl_route_str(const struct nl_route *r, struct strbuf *out)
{
	char c[CIDR_STRLEN], ip[IP_STRLEN];
	if (r->type == RTN_BLACKHOLE)
		sb_adds(out, "blackhole ");
	else if (r->type != RTN_UNICAST && r->type)
		sb_addf(out, "type%u ", r->type);
	sb_adds(out, cidr_str(&r->dst, c));
	if (r->gw.family)
		sb_addf(out, " via %s", ip_str(&r->gw, ip));
	if (r->oif)
		sb_addf(out, " dev #%d", r->oif);
	if (r->table && r->table != RT_TABLE_MAIN)
		sb_addf(out, " table %u", r->table);
	sb_addf(out, " proto %u", r->protocol);
	if (r->scope == RT_SCOPE_LINK)
		sb_adds(out, " scope link");
	else if (r->scope == RT_SCOPE_HOST)
		sb_adds(out, " scope host");
	if (r->onlink)
		sb_adds(out, " onlink");
	if (r->priority)
		sb_addf(out, " metric %u", r->priority);
	if (r->mtu)
		sb_addf(out, " mtu %u", r->mtu);
}

void nl_batch_route(struct nl_batch *b, enum nl_op op, const struct nl_route *r)
{
	uint8_t buf[MSG_MAX];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = op == NL_DEL ? RTM_DELROUTE : RTM_NEWROUTE;
	h->nlmsg_flags = op_flags(op);
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(h, sizeof(*rtm));
	rtm->rtm_family = r->dst.ip.family;
	rtm->rtm_dst_len = r->dst.len;
	uint32_t table = r->table ? r->table : RT_TABLE_MAIN;
	rtm->rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
	rtm->rtm_protocol = r->protocol;
	rtm->rtm_scope = r->scope;
	rtm->rtm_type = r->type ? r->type : RTN_UNICAST;
	if (r->onlink)
		rtm->rtm_flags |= RTNH_F_ONLINK;
	put_ip(h, RTA_DST, &r->dst.ip);
	if (table >= 256)
		mnl_attr_put_u32(h, RTA_TABLE, table);
	if (r->gw.family)
		put_ip(h, RTA_GATEWAY, &r->gw);
	if (r->oif)
		mnl_attr_put_u32(h, RTA_OIF, (uint32_t)r->oif);
	if (r->priority)
		mnl_attr_put_u32(h, RTA_PRIORITY, r->priority);
	if (r->mtu && op != NL_DEL) {
		struct nlattr *m = mnl_attr_nest_start(h, RTA_METRICS);
		mnl_attr_put_u32(h, RTAX_MTU, r->mtu);
		mnl_attr_nest_end(h, m);
	}
	push(b, h);
}

void nl_neigh_str(const struct nl_neigh *n, struct strbuf *out)
{
	char ip[IP_STRLEN];
	if (n->family == AF_BRIDGE)
		sb_adds(out, "fdb ");
	if (n->has_lladdr)
		sb_addf(out, "%02x:%02x:%02x:%02x:%02x:%02x", n->lladdr[0], n->lladdr[1],
			n->lladdr[2], n->lladdr[3], n->lladdr[4], n->lladdr[5]);
	if (n->dst.family)
		sb_addf(out, "%s%s %s", n->has_lladdr ? " " : "",
			n->family == AF_BRIDGE ? "dst" : "ip", ip_str(&n->dst, ip));
	sb_addf(out, " dev #%d", n->ifindex);
	if (n->state & NUD_PERMANENT)
		sb_adds(out, " permanent");
	if (n->protocol)
		sb_addf(out, " proto %u", n->protocol);
}

void nl_batch_neigh(struct nl_batch *b, enum nl_op op, const struct nl_neigh *n)
{
	uint8_t buf[MSG_MAX];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = op == NL_DEL ? RTM_DELNEIGH : RTM_NEWNEIGH;
	h->nlmsg_flags = op_flags(op);
	struct ndmsg *nd = mnl_nlmsg_put_extra_header(h, sizeof(*nd));
	nd->ndm_family = n->family;
	nd->ndm_ifindex = n->ifindex;
	nd->ndm_state = n->state;
	nd->ndm_flags = n->flags;
	if (n->dst.family)
		put_ip(h, NDA_DST, &n->dst);
	if (n->has_lladdr)
		mnl_attr_put(h, NDA_LLADDR, 6, n->lladdr);
	if (n->protocol && op != NL_DEL)
		mnl_attr_put_u8(h, NDA_PROTOCOL, n->protocol);
	push(b, h);
}

/* --- descriptions, rendered from the encoded message when asked for ---------------------- */

static const char *msg_op(const struct nlmsghdr *h)
{
	if (h->nlmsg_type == RTM_DELLINK || h->nlmsg_type == RTM_DELADDR ||
	    h->nlmsg_type == RTM_DELROUTE || h->nlmsg_type == RTM_DELNEIGH)
		return "del";
	if (!(h->nlmsg_flags & NLM_F_CREATE))
		return "set";
	if (h->nlmsg_flags & NLM_F_EXCL)
		return "add";
	return "replace";
}

static void describe_link(const struct nlmsghdr *h, struct strbuf *d)
{
	struct nl_link l;
	const char *op = msg_op(h);
	if (nl_parse_link(h, &l) < 0) {
		sb_adds(d, "link (unreadable)");
		return;
	}
	sb_addf(d, "link %s", op);
	if (l.name[0])
		sb_addf(d, " %s", l.name);
	if (l.ifindex)
		sb_addf(d, " #%d", l.ifindex);
	if (strcmp(op, "del") == 0)
		return;
	if (l.kind[0])
		sb_addf(d, " type %s", l.kind);
	if (l.mtu)
		sb_addf(d, " mtu %u", l.mtu);
	if (l.has_mac)
		sb_addf(d, " address %02x:%02x:%02x:%02x:%02x:%02x", l.mac[0], l.mac[1], l.mac[2],
			l.mac[3], l.mac[4], l.mac[5]);
	sb_adds(d, l.flags & IFF_UP ? " up" : " down");
}

const char *nl_batch_describe(const struct nl_batch *cb, size_t i)
{
	struct nl_batch *b = (struct nl_batch *)cb; /* the answer buffer is a cache */
	if (!b->desc.buf)
		sb_init(&b->desc);
	sb_reset(&b->desc);
	if (i >= b->n)
		return "";
	const struct nlmsghdr *h = (const struct nlmsghdr *)(b->data + b->offsets[i]);
	struct nl_route r;
	struct nl_neigh n;
	struct nl_addr a;
	char c[CIDR_STRLEN];
	switch (h->nlmsg_type) {
	case RTM_NEWLINK:
	case RTM_DELLINK:
		describe_link(h, &b->desc);
		break;
	case RTM_NEWADDR:
	case RTM_DELADDR:
		if (nl_parse_addr(h, &a) == 0)
			sb_addf(&b->desc, "addr %s %s dev #%d", msg_op(h), cidr_str(&a.addr, c),
				a.ifindex);
		break;
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		if (nl_parse_route(h, &r) == 0) {
			sb_addf(&b->desc, "route %s ", msg_op(h));
			nl_route_str(&r, &b->desc);
		}
		break;
	case RTM_NEWNEIGH:
	case RTM_DELNEIGH:
		if (nl_parse_neigh(h, &n) == 0) {
			sb_addf(&b->desc, "neigh %s ", msg_op(h));
			nl_neigh_str(&n, &b->desc);
		}
		break;
	}
	return sb_str(&b->desc);
}

/* --- parsing ------------------------------------------------------------------------------- */

struct attrs {
	const struct nlattr *tb[64];
	unsigned max;
};

static int collect(const struct nlattr *a, void *data)
{
	struct attrs *at = data;
	unsigned type = mnl_attr_get_type(a);
	if (type < at->max && type < ARRAY_SIZE(at->tb))
		at->tb[type] = a; /* unknown types are skipped */
	return MNL_CB_OK;
}

static void parse_attrs(const struct nlmsghdr *h, size_t hdr, struct attrs *at, unsigned max)
{
	memset(at, 0, sizeof(*at));
	at->max = max;
	mnl_attr_parse(h, (unsigned)hdr, collect, at);
}

static void parse_nested(const struct nlattr *nest, struct attrs *at, unsigned max)
{
	memset(at, 0, sizeof(*at));
	at->max = max;
	mnl_attr_parse_nested(nest, collect, at);
}

/* An address attribute of the right size for @family. */
static bool get_ip(const struct nlattr *a, uint8_t family, struct br_ip *out)
{
	size_t want = family == AF_INET6 ? 16 : 4;
	if (!a || mnl_attr_get_payload_len(a) != want)
		return false;
	memset(out, 0, sizeof(*out));
	out->family = family;
	memcpy(out->a, mnl_attr_get_payload(a), want);
	return true;
}

static bool get_u32(const struct nlattr *a, uint32_t *out)
{
	if (!a || mnl_attr_validate(a, MNL_TYPE_U32) < 0)
		return false;
	*out = mnl_attr_get_u32(a);
	return true;
}

int nl_parse_link(const struct nlmsghdr *h, struct nl_link *out)
{
	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(struct ifinfomsg)))
		return -EINVAL;
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);
	struct nl_link l;
	nl_link_init(&l);
	l.ifindex = ifi->ifi_index;
	l.flags = ifi->ifi_flags;
	struct attrs at;
	parse_attrs(h, sizeof(*ifi), &at, IFLA_MAX + 1);
	if (at.tb[IFLA_IFNAME] && mnl_attr_validate(at.tb[IFLA_IFNAME], MNL_TYPE_NUL_STRING) == 0)
		snprintf(l.name, sizeof(l.name), "%s", mnl_attr_get_str(at.tb[IFLA_IFNAME]));
	uint32_t v;
	if (get_u32(at.tb[IFLA_MTU], &v))
		l.mtu = v;
	if (get_u32(at.tb[IFLA_LINK], &v))
		l.parent = (int)v;
	if (at.tb[IFLA_ADDRESS] && mnl_attr_get_payload_len(at.tb[IFLA_ADDRESS]) == 6) {
		memcpy(l.mac, mnl_attr_get_payload(at.tb[IFLA_ADDRESS]), 6);
		l.has_mac = true;
	}
	if (at.tb[IFLA_LINKINFO]) {
		struct attrs info;
		parse_nested(at.tb[IFLA_LINKINFO], &info, IFLA_INFO_MAX + 1);
		if (info.tb[IFLA_INFO_KIND] &&
		    mnl_attr_validate(info.tb[IFLA_INFO_KIND], MNL_TYPE_STRING) == 0)
			snprintf(l.kind, sizeof(l.kind), "%.*s",
				 (int)strnlen(mnl_attr_get_str(info.tb[IFLA_INFO_KIND]),
					      mnl_attr_get_payload_len(info.tb[IFLA_INFO_KIND])),
				 mnl_attr_get_str(info.tb[IFLA_INFO_KIND]));
		if (strcmp(l.kind, "vxlan") == 0 && info.tb[IFLA_INFO_DATA]) {
			struct attrs vx;
			parse_nested(info.tb[IFLA_INFO_DATA], &vx, IFLA_VXLAN_MAX + 1);
			get_u32(vx.tb[IFLA_VXLAN_ID], &l.vxlan_id);
			if (vx.tb[IFLA_VXLAN_PORT] &&
			    mnl_attr_validate(vx.tb[IFLA_VXLAN_PORT], MNL_TYPE_U16) == 0)
				l.vxlan_port = ntohs(mnl_attr_get_u16(vx.tb[IFLA_VXLAN_PORT]));
			if (!get_ip(vx.tb[IFLA_VXLAN_LOCAL], AF_INET, &l.vxlan_local))
				get_ip(vx.tb[IFLA_VXLAN_LOCAL6], AF_INET6, &l.vxlan_local);
			if (get_u32(vx.tb[IFLA_VXLAN_LINK], &v))
				l.vxlan_link = (int)v;
			if (vx.tb[IFLA_VXLAN_LEARNING] &&
			    mnl_attr_validate(vx.tb[IFLA_VXLAN_LEARNING], MNL_TYPE_U8) == 0)
				l.vxlan_learning = mnl_attr_get_u8(vx.tb[IFLA_VXLAN_LEARNING]) != 0;
		}
	}
	*out = l;
	return 0;
}

int nl_parse_addr(const struct nlmsghdr *h, struct nl_addr *out)
{
	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(struct ifaddrmsg)))
		return -EINVAL;
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(h);
	struct nl_addr a = { .ifindex = (int)ifa->ifa_index, .scope = ifa->ifa_scope };
	struct attrs at;
	parse_attrs(h, sizeof(*ifa), &at, IFA_MAX + 1);
	if (!get_ip(at.tb[IFA_LOCAL], ifa->ifa_family, &a.addr.ip) &&
	    !get_ip(at.tb[IFA_ADDRESS], ifa->ifa_family, &a.addr.ip))
		return -EINVAL;
	a.addr.len = ifa->ifa_prefixlen;
	*out = a;
	return 0;
}

int nl_parse_route(const struct nlmsghdr *h, struct nl_route *out)
{
	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(struct rtmsg)))
		return -EINVAL;
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(h);
	if (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6)
		return -EAFNOSUPPORT;
	struct nl_route r = {
		.family = rtm->rtm_family,
		.protocol = rtm->rtm_protocol,
		.scope = rtm->rtm_scope,
		.type = rtm->rtm_type,
		.table = rtm->rtm_table,
		.onlink = (rtm->rtm_flags & RTNH_F_ONLINK) != 0,
	};
	struct attrs at;
	parse_attrs(h, sizeof(*rtm), &at, RTA_MAX + 1);
	if (!get_ip(at.tb[RTA_DST], rtm->rtm_family, &r.dst.ip)) {
		memset(&r.dst.ip, 0, sizeof(r.dst.ip)); /* the default route */
		r.dst.ip.family = rtm->rtm_family;
	}
	r.dst.len = rtm->rtm_dst_len;
	get_ip(at.tb[RTA_GATEWAY], rtm->rtm_family, &r.gw);
	uint32_t v;
	if (get_u32(at.tb[RTA_OIF], &v))
		r.oif = (int)v;
	get_u32(at.tb[RTA_PRIORITY], &r.priority);
	get_u32(at.tb[RTA_TABLE], &r.table);
	if (at.tb[RTA_METRICS]) {
		struct attrs m;
		parse_nested(at.tb[RTA_METRICS], &m, RTAX_MAX + 1);
		get_u32(m.tb[RTAX_MTU], &r.mtu);
	}
	*out = r;
	return 0;
}

int nl_parse_netconf(const struct nlmsghdr *h, struct nl_netconf *out)
{
	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(struct netconfmsg)))
		return -EINVAL;
	const struct netconfmsg *nc = mnl_nlmsg_get_payload(h);
	struct attrs at;
	parse_attrs(h, sizeof(*nc), &at, NETCONFA_MAX + 1);
	uint32_t v;
	if (!get_u32(at.tb[NETCONFA_IFINDEX], &v))
		return -EINVAL;
	*out = (struct nl_netconf){ .family = nc->ncm_family, .ifindex = (int)v };
	int *vals[] = { &out->forwarding, &out->proxy_neigh, &out->rp_filter };
	int types[] = { NETCONFA_FORWARDING, NETCONFA_PROXY_NEIGH, NETCONFA_RP_FILTER };
	/* A setting's values are small (0, 1, 2): anything else is taken as not said. */
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++)
		*vals[i] = get_u32(at.tb[types[i]], &v) && v <= 255 ? (int)v : -1;
	return 0;
}

int nl_parse_neigh(const struct nlmsghdr *h, struct nl_neigh *out)
{
	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(struct ndmsg)))
		return -EINVAL;
	const struct ndmsg *nd = mnl_nlmsg_get_payload(h);
	struct nl_neigh n = {
		.family = nd->ndm_family,
		.ifindex = nd->ndm_ifindex,
		.state = nd->ndm_state,
		.flags = nd->ndm_flags,
	};
	struct attrs at;
	parse_attrs(h, sizeof(*nd), &at, NDA_MAX + 1);
	if (at.tb[NDA_DST]) {
		size_t len = mnl_attr_get_payload_len(at.tb[NDA_DST]);
		get_ip(at.tb[NDA_DST], len == 16 ? AF_INET6 : AF_INET, &n.dst);
	}
	if (at.tb[NDA_LLADDR] && mnl_attr_get_payload_len(at.tb[NDA_LLADDR]) == 6) {
		memcpy(n.lladdr, mnl_attr_get_payload(at.tb[NDA_LLADDR]), 6);
		n.has_lladdr = true;
	}
	if (at.tb[NDA_PROTOCOL] && mnl_attr_validate(at.tb[NDA_PROTOCOL], MNL_TYPE_U8) == 0)
		n.protocol = mnl_attr_get_u8(at.tb[NDA_PROTOCOL]);
	*out = n;
	return 0;
}

void nl_link_list_free(struct nl_link_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void nl_addr_list_free(struct nl_addr_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void nl_route_list_free(struct nl_route_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void nl_neigh_list_free(struct nl_neigh_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

bool nl_route_same_key(const struct nl_route *a, const struct nl_route *b)
{
	/* What the kernel matches an IPv4/IPv6 route on for replace and delete. */
	uint32_t ta = a->table ? a->table : RT_TABLE_MAIN, tb = b->table ? b->table : RT_TABLE_MAIN;
	return cidr_cmp(&a->dst, &b->dst) == 0 && ta == tb && a->priority == b->priority;
}

bool nl_route_equal(const struct nl_route *a, const struct nl_route *b)
{
	uint8_t ya = a->type ? a->type : RTN_UNICAST, yb = b->type ? b->type : RTN_UNICAST;
	return nl_route_same_key(a, b) && ya == yb && a->protocol == b->protocol &&
	       a->scope == b->scope && a->oif == b->oif && a->onlink == b->onlink &&
	       a->mtu == b->mtu && ip_cmp(&a->gw, &b->gw) == 0;
}
