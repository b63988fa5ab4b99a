/* NFLOG packet messages parsed into events: pure (nflog_msg.h). */
#include <brindle/core/nflog_msg.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <netinet/in.h>
#include <string.h>

/* --- parsing ------------------------------------------------------------------------------- */

struct attrs {
	const struct nlattr *tb[NFULA_MAX + 1];
};

static int collect(const struct nlattr *a, void *data)
{
	struct attrs *at = data;
	unsigned type = mnl_attr_get_type(a);
	if (type <= NFULA_MAX)
		at->tb[type] = a;
	return MNL_CB_OK;
}

static bool get_u32(const struct nlattr *a, uint32_t *out)
{
	if (!a || mnl_attr_validate(a, MNL_TYPE_U32) < 0)
		return false;
	*out = ntohl(mnl_attr_get_u32(a));
	return true;
}

static void transport(struct nflog_event *ev, const uint8_t *p, size_t len)
{
	switch (ev->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
		if (len >= 4) {
			ev->sport = (uint16_t)(p[0] << 8 | p[1]);
			ev->dport = (uint16_t)(p[2] << 8 | p[3]);
		}
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (len >= 2) {
			ev->icmp_type = p[0];
			ev->icmp_code = p[1];
		}
		break;
	}
}

static void payload(struct nflog_event *ev, const uint8_t *p, size_t len)
{
	if (len < 1)
		return;
	unsigned version = p[0] >> 4;
	if (version == 4 && len >= 20) {
		size_t ihl = (size_t)(p[0] & 0x0f) * 4;
		if (ihl < 20 || ihl > len)
			return;
		ev->proto = p[9];
		ev->src.family = ev->dst.family = AF_INET;
		memcpy(ev->src.a, p + 12, 4);
		memcpy(ev->dst.a, p + 16, 4);
		/* a fragment other than the first has no transport header */
		if ((((unsigned)p[6] << 8 | p[7]) & 0x1fff) == 0)
			transport(ev, p + ihl, len - ihl);
	} else if (version == 6 && len >= 40) {
		ev->proto = p[6]; /* extension headers are not followed */
		ev->src.family = ev->dst.family = AF_INET6;
		memcpy(ev->src.a, p + 8, 16);
		memcpy(ev->dst.a, p + 24, 16);
		transport(ev, p + 40, len - 40);
	}
}

int nflog_parse(const struct nlmsghdr *h, struct nflog_event *out)
{
	if (h->nlmsg_len < sizeof(*h) ||
	    h->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET))
		return -ENOENT;
	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(struct nfgenmsg)))
		return -EINVAL;
	const struct nfgenmsg *g = mnl_nlmsg_get_payload(h);
	struct nflog_event ev = { .group = ntohs(g->res_id), .icmp_type = -1, .icmp_code = -1 };
	struct attrs at = { 0 };
	if (mnl_attr_parse(h, sizeof(*g), collect, &at) < 0)
		return -EINVAL;
	const struct nlattr *pfx = at.tb[NFULA_PREFIX];
	if (pfx) {
		size_t n = mnl_attr_get_payload_len(pfx);
		const char *s = mnl_attr_get_payload(pfx);
		size_t len = strnlen(s, n);
		if (len >= sizeof(ev.prefix))
			len = sizeof(ev.prefix) - 1;
		memcpy(ev.prefix, s, len);
		ev.prefix[len] = '\0';
	}
	get_u32(at.tb[NFULA_IFINDEX_INDEV], &ev.indev);
	get_u32(at.tb[NFULA_IFINDEX_OUTDEV], &ev.outdev);
	const struct nlattr *ts = at.tb[NFULA_TIMESTAMP];
	if (ts && mnl_attr_get_payload_len(ts) >= sizeof(struct nfulnl_msg_packet_timestamp)) {
		struct nfulnl_msg_packet_timestamp t;
		memcpy(&t, mnl_attr_get_payload(ts), sizeof(t));
		ev.time_us = be64toh(t.sec) * 1000000 + be64toh(t.usec) % 1000000;
	}
	const struct nlattr *pl = at.tb[NFULA_PAYLOAD];
	if (pl)
		payload(&ev, mnl_attr_get_payload(pl), mnl_attr_get_payload_len(pl));
	*out = ev;
	return 0;
}
