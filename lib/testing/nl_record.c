/*
 * The recording rtnetlink backend: a small simulated kernel. Batches are
 * applied by parsing the encoded messages with the same parsers dumps use,
 * with the kernel's answers for the cases that matter (EEXIST, ENOENT/ESRCH,
 * ENODEV, ENETDOWN); dumps encode the simulated tables. Every applied
 * message is logged with interface names, so tests can assert exactly what
 * was written.
 */
#include <brindle/sys/nl.h>
#include <brindle/testing/nl_record.h>

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>

struct nl_record {
	struct nl nl;
	struct nl_link_list links;
	struct nl_addr_list addrs;
	struct nl_route_list routes;
	struct nl_neigh_list neighs;
	int next_ifindex;
	char **log;
	size_t nlog, logcap;
	char *fail_what;
	int fail_err;
	bool ipip;
};

static struct nl_record *record_of(struct nl *nl)
{
	return container_of(nl, struct nl_record, nl);
}

#define PUSH(list, item)                                                                   \
	do {                                                                               \
		if ((list)->n == (list)->cap) {                                            \
			(list)->cap = (list)->cap ? (list)->cap * 2 : 16;                  \
			(list)->v = xrealloc((list)->v, sizeof(*(list)->v) * (list)->cap); \
		}                                                                          \
		(list)->v[(list)->n++] = (item);                                           \
	} while (0)

#define REMOVE_AT(list, i) \
	memmove(&(list)->v[i], &(list)->v[(i) + 1], sizeof(*(list)->v) * ((list)->n-- - (i)-1))

static struct nl_link *link_at(struct nl_record *r, int ifindex)
{
	for (size_t i = 0; i < r->links.n; i++)
		if (r->links.v[i].ifindex == ifindex)
			return &r->links.v[i];
	return NULL;
}

static struct nl_link *link_named(struct nl_record *r, const char *name)
{
	for (size_t i = 0; i < r->links.n; i++)
		if (strcmp(r->links.v[i].name, name) == 0)
			return &r->links.v[i];
	return NULL;
}

/* "#5" → "cali123" in a description. */
static char *with_names(struct nl_record *r, const char *desc)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (const char *p = desc; *p;) {
		if (p[0] == '#' && p[1] >= '0' && p[1] <= '9') {
			char *end;
			long idx = strtol(p + 1, &end, 10);
			const struct nl_link *l = link_at(r, (int)idx);
			if (l) {
				sb_adds(&sb, l->name);
				p = end;
				continue;
			}
		}
		sb_addc(&sb, *p++);
	}
	return sb_detach(&sb);
}

static void append_log(struct nl_record *r, const char *desc)
{
	GROW(r->log, r->logcap, r->nlog + 1);
	r->log[r->nlog++] = with_names(r, desc);
}

static void drop_dependents(struct nl_record *r, int ifindex)
{
	for (size_t i = r->routes.n; i-- > 0;)
		if (r->routes.v[i].oif == ifindex)
			REMOVE_AT(&r->routes, i);
	for (size_t i = r->neighs.n; i-- > 0;)
		if (r->neighs.v[i].ifindex == ifindex)
			REMOVE_AT(&r->neighs, i);
	for (size_t i = r->addrs.n; i-- > 0;)
		if (r->addrs.v[i].ifindex == ifindex)
			REMOVE_AT(&r->addrs, i);
}

static int do_link(struct nl_record *r, const struct nlmsghdr *h)
{
	struct nl_link l;
	if (nl_parse_link(h, &l) < 0)
		return -EINVAL;
	struct nl_link *cur = l.ifindex ? link_at(r, l.ifindex) : link_named(r, l.name);
	if (h->nlmsg_type == RTM_DELLINK) {
		if (!cur)
			return -ENODEV;
		int idx = cur->ifindex;
		drop_dependents(r, idx);
		REMOVE_AT(&r->links, (size_t)(cur - r->links.v));
		return 0;
	}
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);
	if (cur) {
		if (h->nlmsg_flags & NLM_F_EXCL)
			return -EEXIST;
		if (ifi->ifi_change & IFF_UP)
			cur->flags = (cur->flags & ~(unsigned)(IFF_UP | IFF_LOWER_UP)) |
				     (ifi->ifi_flags & IFF_UP ? IFF_UP | IFF_LOWER_UP : 0);
		if (l.mtu)
			cur->mtu = l.mtu;
		if (l.has_mac) {
			memcpy(cur->mac, l.mac, 6);
			cur->has_mac = true;
		}
		if (l.name[0] && l.ifindex)
			snprintf(cur->name, sizeof(cur->name), "%s", l.name);
		return 0;
	}
	if (!(h->nlmsg_flags & NLM_F_CREATE))
		return -ENODEV;
	if (!l.kind[0])
		return -EOPNOTSUPP;
	if (strcmp(l.kind, "ipip") == 0 && !r->ipip)
		return -EOPNOTSUPP; /* like this machine's kernel, unless told otherwise */
	l.ifindex = r->next_ifindex++;
	l.flags = ifi->ifi_flags & IFF_UP ? IFF_UP | IFF_LOWER_UP : 0;
	if (!l.mtu)
		l.mtu = 1500;
	if (!l.has_mac) {
		uint8_t mac[6] = { 0x02, 0, 0, 0, (uint8_t)(l.ifindex >> 8), (uint8_t)l.ifindex };
		memcpy(l.mac, mac, 6);
		l.has_mac = true;
	}
	PUSH(&r->links, l);
	return 0;
}

static int do_addr(struct nl_record *r, const struct nlmsghdr *h)
{
	struct nl_addr a;
	if (nl_parse_addr(h, &a) < 0)
		return -EINVAL;
	if (!link_at(r, a.ifindex))
		return -ENODEV;
	for (size_t i = 0; i < r->addrs.n; i++) {
		struct nl_addr *c = &r->addrs.v[i];
		if (c->ifindex == a.ifindex && ip_equal(&c->addr.ip, &a.addr.ip)) {
			if (h->nlmsg_type == RTM_DELADDR) {
				REMOVE_AT(&r->addrs, i);
				return 0;
			}
			if (h->nlmsg_flags & NLM_F_EXCL)
				return -EEXIST;
			*c = a;
			return 0;
		}
	}
	if (h->nlmsg_type == RTM_DELADDR)
		return -EADDRNOTAVAIL;
	PUSH(&r->addrs, a);
	return 0;
}

static int do_route(struct nl_record *r, const struct nlmsghdr *h)
{
	struct nl_route rt;
	if (nl_parse_route(h, &rt) < 0)
		return -EINVAL;
	if (!rt.table)
		rt.table = RT_TABLE_MAIN;
	for (size_t i = 0; i < r->routes.n; i++) {
		struct nl_route *c = &r->routes.v[i];
		if (!nl_route_same_key(c, &rt))
			continue;
		if (h->nlmsg_type == RTM_DELROUTE) {
			if (rt.protocol && rt.protocol != c->protocol)
				continue;
			REMOVE_AT(&r->routes, i);
			return 0;
		}
		if (!(h->nlmsg_flags & NLM_F_REPLACE))
			return -EEXIST;
		goto validate_replace;
	}
	if (h->nlmsg_type == RTM_DELROUTE)
		return -ESRCH;
	if (!(h->nlmsg_flags & NLM_F_CREATE))
		return -ENOENT;
validate_replace:;
	if (rt.type == RTN_UNICAST && rt.oif) {
		const struct nl_link *l = link_at(r, rt.oif);
		if (!l)
			return -ENODEV;
		if (!(l->flags & IFF_UP))
			return -ENETDOWN;
	}
	for (size_t i = 0; i < r->routes.n; i++)
		if (nl_route_same_key(&r->routes.v[i], &rt)) {
			r->routes.v[i] = rt;
			return 0;
		}
	PUSH(&r->routes, rt);
	return 0;
}

static bool neigh_same(const struct nl_neigh *a, const struct nl_neigh *b)
{
	if (a->family != b->family || a->ifindex != b->ifindex)
		return false;
	if (a->family == AF_BRIDGE)
		return memcmp(a->lladdr, b->lladdr, 6) == 0 && ip_equal(&a->dst, &b->dst);
	return ip_equal(&a->dst, &b->dst);
}

static int do_neigh(struct nl_record *r, const struct nlmsghdr *h)
{
	struct nl_neigh n;
	if (nl_parse_neigh(h, &n) < 0)
		return -EINVAL;
	if (!link_at(r, n.ifindex))
		return -ENODEV;
	for (size_t i = 0; i < r->neighs.n; i++) {
		if (!neigh_same(&r->neighs.v[i], &n))
			continue;
		if (h->nlmsg_type == RTM_DELNEIGH) {
			REMOVE_AT(&r->neighs, i);
			return 0;
		}
		if (!(h->nlmsg_flags & NLM_F_REPLACE))
			return -EEXIST;
		r->neighs.v[i] = n;
		return 0;
	}
	if (h->nlmsg_type == RTM_DELNEIGH)
		return -ENOENT;
	if (!(h->nlmsg_flags & NLM_F_CREATE))
		return -ENOENT;
	PUSH(&r->neighs, n);
	return 0;
}

static int r_apply(struct nl *nl, struct nl_batch *b, int *errs)
{
	struct nl_record *r = record_of(nl);
	size_t len;
	const uint8_t *data = nl_batch_data(b, &len);
	size_t off = 0;
	for (size_t i = 0; i < nl_batch_count(b); i++) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)(data + off);
		off += h->nlmsg_len;
		const char *desc = nl_batch_describe(b, i);
		if (r->fail_what && strstr(desc, r->fail_what)) {
			errs[i] = r->fail_err;
			free(r->fail_what);
			r->fail_what = NULL;
			continue;
		}
		switch (h->nlmsg_type) {
		case RTM_NEWLINK:
		case RTM_DELLINK:
			errs[i] = do_link(r, h);
			break;
		case RTM_NEWADDR:
		case RTM_DELADDR:
			errs[i] = do_addr(r, h);
			break;
		case RTM_NEWROUTE:
		case RTM_DELROUTE:
			errs[i] = do_route(r, h);
			break;
		case RTM_NEWNEIGH:
		case RTM_DELNEIGH:
			errs[i] = do_neigh(r, h);
			break;
		default:
			errs[i] = -EOPNOTSUPP;
		}
		if (errs[i] == 0)
			append_log(r, desc);
	}
	return 0;
}

/* Dumps: encode each object as the kernel would send it. */
static int emit_all(struct nl_batch *tmp, int (*cb)(const struct nlmsghdr *h, void *ctx), void *ctx,
		    uint16_t type, const struct nl_link_list *links)
{
	size_t len;
	const uint8_t *data = nl_batch_data(tmp, &len);
	size_t off = 0;
	for (size_t i = 0; i < nl_batch_count(tmp); i++) {
		struct nlmsghdr *h = (struct nlmsghdr *)(data + off);
		off += h->nlmsg_len;
		h->nlmsg_type = type;
		h->nlmsg_flags = NLM_F_MULTI;
		if (type == RTM_NEWLINK) {
			/* The encoder carries only IFF_UP; dumps report every flag. */
			struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);
			ifi->ifi_flags = links->v[i].flags;
		}
		cb(h, ctx);
	}
	return 0;
}

static int r_dump(struct nl *nl, const void *req, size_t len,
		  int (*cb)(const struct nlmsghdr *h, void *ctx), void *ctx)
{
	struct nl_record *r = record_of(nl);
	const struct nlmsghdr *q = req;
	struct nl_batch *tmp = nl_batch_new();
	uint16_t type = 0;
	switch (q->nlmsg_type) {
	case RTM_GETLINK:
		for (size_t i = 0; i < r->links.n; i++)
			nl_batch_link(tmp, NL_ADD, &r->links.v[i]);
		type = RTM_NEWLINK;
		break;
	case RTM_GETADDR: {
		const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(q);
		for (size_t i = 0; i < r->addrs.n; i++)
			if (!ifa->ifa_family || ifa->ifa_family == r->addrs.v[i].addr.ip.family)
				nl_batch_addr(tmp, NL_ADD, &r->addrs.v[i]);
		type = RTM_NEWADDR;
		break;
	}
	case RTM_GETROUTE: {
		const struct rtmsg *rtm = mnl_nlmsg_get_payload(q);
		for (size_t i = 0; i < r->routes.n; i++) {
			const struct nl_route *rt = &r->routes.v[i];
			if (rtm->rtm_family && rt->dst.ip.family != rtm->rtm_family)
				continue;
			if (rtm->rtm_protocol && rt->protocol != rtm->rtm_protocol)
				continue;
			nl_batch_route(tmp, NL_ADD, rt);
		}
		type = RTM_NEWROUTE;
		break;
	}
	case RTM_GETNEIGH: {
		const struct ndmsg *nd = mnl_nlmsg_get_payload(q);
		for (size_t i = 0; i < r->neighs.n; i++) {
			const struct nl_neigh *n = &r->neighs.v[i];
			if (nd->ndm_family && n->family != nd->ndm_family)
				continue;
			nl_batch_neigh(tmp, NL_ADD, n);
		}
		type = RTM_NEWNEIGH;
		break;
	}
	default:
		nl_batch_free(tmp);
		return -EOPNOTSUPP;
	}
	emit_all(tmp, cb, ctx, type, &r->links);
	nl_batch_free(tmp);
	return 0;
}

static void r_close(struct nl *nl)
{
	struct nl_record *r = record_of(nl);
	nl_link_list_free(&r->links);
	nl_addr_list_free(&r->addrs);
	nl_route_list_free(&r->routes);
	nl_neigh_list_free(&r->neighs);
	for (size_t i = 0; i < r->nlog; i++)
		free(r->log[i]);
	free(r->log);
	free(r->fail_what);
	free(r);
}

static const struct nl_ops record_ops = { r_dump, r_apply, r_close };

struct nl *nl_open_recording(void)
{
	struct nl_record *r = xcalloc(1, sizeof(*r));
	r->nl.ops = &record_ops;
	r->next_ifindex = 2;
	struct nl_link lo;
	nl_link_init(&lo);
	lo.ifindex = 1;
	snprintf(lo.name, sizeof(lo.name), "lo");
	lo.flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP;
	lo.mtu = 65536;
	PUSH(&r->links, lo);
	return &r->nl;
}

static bool is_recording(const struct nl *nl)
{
	return nl->ops == &record_ops;
}

size_t nl_record_count(const struct nl *nl)
{
	return is_recording(nl) ? container_of(nl, const struct nl_record, nl)->nlog : 0;
}

const char *nl_record_entry(const struct nl *nl, size_t i)
{
	const struct nl_record *r = container_of(nl, const struct nl_record, nl);
	return is_recording(nl) && i < r->nlog ? r->log[i] : NULL;
}

void nl_record_clear_log(struct nl *nl)
{
	if (!is_recording(nl))
		return;
	struct nl_record *r = record_of(nl);
	for (size_t i = 0; i < r->nlog; i++)
		free(r->log[i]);
	r->nlog = 0;
}

void nl_record_allow_ipip(struct nl *nl)
{
	if (is_recording(nl))
		record_of(nl)->ipip = true;
}

void nl_record_fail_next(struct nl *nl, const char *what, int err)
{
	if (!is_recording(nl))
		return;
	struct nl_record *r = record_of(nl);
	free(r->fail_what);
	r->fail_what = xstrdup(what);
	r->fail_err = err;
}
