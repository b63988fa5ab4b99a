/*
 * The netlink handle over its backend: closing, applying a batch, and the
 * typed dumps (the request encoded here, each reply parsed by
 * lib/core/nl_msg.c, the sending and receiving the backend's).
 */
#include <brindle/sys/nl.h>

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>

#define MSG_MAX 4096

/* --- typed dumps over a backend ------------------------------------------------------------ */

void nl_close(struct nl *nl)
{
	if (nl)
		nl->ops->close(nl);
}

int nl_apply(struct nl *nl, struct nl_batch *b, int *errs)
{
	if (nl_batch_count(b) == 0)
		return 0;
	int *e = errs ? errs : xcalloc(nl_batch_count(b), sizeof(int));
	int r = nl->ops->apply(nl, b, e);
	int failed = 0;
	if (r == 0)
		for (size_t i = 0; i < nl_batch_count(b); i++)
			failed += e[i] != 0;
	if (!errs)
		free(e);
	return r < 0 ? r : failed;
}

#define LIST_PUSH(list, item)                                                              \
	do {                                                                               \
		if ((list)->n == (list)->cap) {                                            \
			(list)->cap = (list)->cap ? (list)->cap * 2 : 16;                  \
			(list)->v = xrealloc((list)->v, sizeof(*(list)->v) * (list)->cap); \
		}                                                                          \
		(list)->v[(list)->n++] = (item);                                           \
	} while (0)

static int link_cb(const struct nlmsghdr *h, void *ctx)
{
	struct nl_link l;
	if (h->nlmsg_type == RTM_NEWLINK && nl_parse_link(h, &l) == 0)
		LIST_PUSH((struct nl_link_list *)ctx, l);
	return 0;
}

int nl_dump_links(struct nl *nl, struct nl_link_list *out)
{
	uint8_t buf[MSG_MAX];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = RTM_GETLINK;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	out->n = 0;
	return nl->ops->dump(nl, h, h->nlmsg_len, link_cb, out);
}

static int addr_cb(const struct nlmsghdr *h, void *ctx)
{
	struct nl_addr a;
	if (h->nlmsg_type == RTM_NEWADDR && nl_parse_addr(h, &a) == 0)
		LIST_PUSH((struct nl_addr_list *)ctx, a);
	return 0;
}

int nl_dump_addrs(struct nl *nl, uint8_t family, struct nl_addr_list *out)
{
	uint8_t buf[MSG_MAX];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = RTM_GETADDR;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	ifa->ifa_family = family;
	out->n = 0;
	return nl->ops->dump(nl, h, h->nlmsg_len, addr_cb, out);
}

struct route_dump {
	struct nl_route_list *out;
	const struct nl_route_filter *f;
};

static int route_cb(const struct nlmsghdr *h, void *ctx)
{
	struct route_dump *rd = ctx;
	struct nl_route r;
	if (h->nlmsg_type != RTM_NEWROUTE || nl_parse_route(h, &r) < 0)
		return 0;
	/* The kernel filters with strict checking; filter again for older kernels. */
	const struct nl_route_filter *f = rd->f;
	if (f && ((f->table && r.table != f->table) || (f->protocol && r.protocol != f->protocol) ||
		  (f->oif && r.oif != f->oif)))
		return 0;
	LIST_PUSH(rd->out, r);
	return 0;
}

int nl_dump_routes(struct nl *nl, const struct nl_route_filter *f, struct nl_route_list *out)
{
	uint8_t buf[MSG_MAX];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = RTM_GETROUTE;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(h, sizeof(*rtm));
	rtm->rtm_family = f && f->family ? f->family : AF_INET;
	if (f && f->table) {
		rtm->rtm_table = f->table < 256 ? (uint8_t)f->table : RT_TABLE_UNSPEC;
		mnl_attr_put_u32(h, RTA_TABLE, f->table);
	}
	if (f && f->protocol)
		rtm->rtm_protocol = f->protocol;
	if (f && f->oif)
		mnl_attr_put_u32(h, RTA_OIF, (uint32_t)f->oif);
	out->n = 0;
	struct route_dump rd = { out, f };
	return nl->ops->dump(nl, h, h->nlmsg_len, route_cb, &rd);
}

static int neigh_cb(const struct nlmsghdr *h, void *ctx)
{
	struct nl_neigh n;
	if (h->nlmsg_type == RTM_NEWNEIGH && nl_parse_neigh(h, &n) == 0)
		LIST_PUSH((struct nl_neigh_list *)ctx, n);
	return 0;
}

int nl_dump_neighs(struct nl *nl, uint8_t family, int ifindex, struct nl_neigh_list *out)
{
	uint8_t buf[MSG_MAX];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = RTM_GETNEIGH;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	struct ndmsg *nd = mnl_nlmsg_put_extra_header(h, sizeof(*nd));
	nd->ndm_family = family;
	/* Strict checking: neighbours filter on NDA_IFINDEX, FDB dumps on the header. */
	if (ifindex && family == AF_BRIDGE)
		nd->ndm_ifindex = ifindex;
	else if (ifindex)
		mnl_attr_put_u32(h, NDA_IFINDEX, (uint32_t)ifindex);
	out->n = 0;
	int r = nl->ops->dump(nl, h, h->nlmsg_len, neigh_cb, out);
	if (r == 0 && ifindex) { /* drop others where a kernel did not filter */
		size_t k = 0;
		for (size_t i = 0; i < out->n; i++)
			if (out->v[i].ifindex == ifindex)
				out->v[k++] = out->v[i];
		out->n = k;
	}
	return r;
}
