/*
 * NFLOG over libmnl: binding groups and reading packets (parsed by
 * lib/core/nflog_msg.c).
 */
#include <brindle/sys/nflog.h>
#include <brindle/core/util.h>

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
