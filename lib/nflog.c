/*
 * NFLOG over libmnl: binding groups, reading packets, parsing them.
 */
#include <brindle/nflog.h>
#include <brindle/util.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct nflog {
	struct mnl_socket *nl;
	uint32_t seq;
	char buf[65536];
};

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

/* --- the socket -------------------------------------------------------------------------- */

static int config(struct nflog *l, uint16_t group, void (*put)(struct nlmsghdr *h, void *arg),
		  void *arg)
{
	char buf[512];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = ++l->seq;
	struct nfgenmsg *g = mnl_nlmsg_put_extra_header(h, sizeof(*g));
	g->nfgen_family = AF_UNSPEC;
	g->version = NFNETLINK_V0;
	g->res_id = htons(group);
	put(h, arg);
	if (mnl_socket_sendto(l->nl, h, h->nlmsg_len) < 0)
		return -errno;
	/* the ack */
	ssize_t n = mnl_socket_recvfrom(l->nl, l->buf, sizeof(l->buf));
	if (n < 0)
		return -errno;
	int r = mnl_cb_run(l->buf, (size_t)n, l->seq, mnl_socket_get_portid(l->nl), NULL, NULL);
	return r < 0 ? -errno : 0;
}

static void put_cmd(struct nlmsghdr *h, void *arg)
{
	struct nfulnl_msg_config_cmd c = { .command = (uint8_t)(uintptr_t)arg };
	mnl_attr_put(h, NFULA_CFG_CMD, sizeof(c), &c);
}

static void put_mode(struct nlmsghdr *h, void *arg)
{
	struct nfulnl_msg_config_mode m = { .copy_range = htonl((uint32_t)(uintptr_t)arg),
					    .copy_mode = NFULNL_COPY_PACKET };
	mnl_attr_put(h, NFULA_CFG_MODE, sizeof(m), &m);
	/* deliver at once: a one-packet queue, no timeout */
	mnl_attr_put_u32(h, NFULA_CFG_QTHRESH, htonl(1));
	mnl_attr_put_u32(h, NFULA_CFG_TIMEOUT, htonl(0));
}

int nflog_open(const uint16_t *groups, size_t n, uint16_t copy_bytes, struct nflog **out)
{
	struct nflog *l = xcalloc(1, sizeof(*l));
	int r;
	l->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!l->nl) {
		r = -errno;
		free(l);
		return r;
	}
	if (mnl_socket_bind(l->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = -errno;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		if ((r = config(l, groups[i], put_cmd, (void *)(uintptr_t)NFULNL_CFG_CMD_BIND)) < 0 ||
		    (r = config(l, groups[i], put_mode, (void *)(uintptr_t)copy_bytes)) < 0)
			goto fail;
	}
	int fd = mnl_socket_get_fd(l->nl);
	int one = 1;
	setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one));
	int sz = 1 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	*out = l;
	return 0;
fail:
	mnl_socket_close(l->nl);
	free(l);
	return r;
}

int nflog_fd(const struct nflog *l)
{
	return mnl_socket_get_fd(l->nl);
}

int nflog_read(struct nflog *l, void (*cb)(const struct nflog_event *ev, void *ctx), void *ctx)
{
	int fd = mnl_socket_get_fd(l->nl);
	for (;;) {
		ssize_t n = recv(fd, l->buf, sizeof(l->buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return -errno;
		}
		int len = (int)n;
		for (const struct nlmsghdr *h = (const void *)l->buf; mnl_nlmsg_ok(h, len);
		     h = mnl_nlmsg_next(h, &len)) {
			struct nflog_event ev;
			if (nflog_parse(h, &ev) == 0)
				cb(&ev, ctx);
		}
	}
}

void nflog_close(struct nflog *l)
{
	if (!l)
		return;
	mnl_socket_close(l->nl);
	free(l);
}
