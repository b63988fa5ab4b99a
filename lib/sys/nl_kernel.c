/*
 * The kernel rtnetlink backend over libmnl sockets. Dumps use strict
 * checking (NETLINK_GET_STRICT_CHK) so the kernel filters routes by table,
 * protocol and interface. A dump the kernel marks as interrupted
 * (NLM_F_DUMP_INTR) is read to its end and reported as -EINTR: dump again. A batch goes out in
 * chunks of back-to-back messages, each with NLM_F_ACK and its own sequence number; every ack is
 * matched back to its message, so one bad route fails alone.
 */
#include <brindle/sys/nl.h>

#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (32 * 1024)

struct nl_kernel {
	struct nl nl;
	struct mnl_socket *sock;
	uint32_t portid;
	uint32_t seq;
};

static struct nl_kernel *kernel_of(struct nl *nl)
{
	return container_of(nl, struct nl_kernel, nl);
}

struct dump_ctx {
	int (*cb)(const struct nlmsghdr *h, void *ctx);
	void *ctx;
};

static int dump_msg(const struct nlmsghdr *h, void *data)
{
	struct dump_ctx *d = data;
	d->cb(h, d->ctx);
	return MNL_CB_OK;
}

/* Whether @buf holds the end (DONE or an error) of dump @seq. */
static bool dump_ends_in(const uint8_t *buf, size_t n, uint32_t seq)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	int len = (int)n;
	for (; mnl_nlmsg_ok(h, len); h = mnl_nlmsg_next(h, &len))
		if (h->nlmsg_seq == seq &&
		    (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR))
			return true;
	return false;
}

/*
 * The kernel flagged the dump as interrupted (the table changed during it).
 * libmnl stops at the flag; read the rest of the dump so the socket is clean
 * for the next request, and let the caller dump again.
 */
static int drain_dump(struct nl_kernel *k, uint8_t *buf, size_t n, uint32_t seq)
{
	while (!dump_ends_in(buf, n, seq)) {
		ssize_t got = mnl_socket_recvfrom(k->sock, buf, 32768);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		n = (size_t)got;
	}
	return -EINTR;
}

static int k_dump(struct nl *nl, const void *req, size_t len,
		  int (*cb)(const struct nlmsghdr *h, void *ctx), void *ctx)
{
	struct nl_kernel *k = kernel_of(nl);
	uint8_t copy[4096];
	if (len > sizeof(copy))
		return -EINVAL;
	memcpy(copy, req, len);
	struct nlmsghdr *h = (struct nlmsghdr *)copy;
	uint32_t seq = ++k->seq;
	h->nlmsg_seq = seq;
	if (mnl_socket_sendto(k->sock, copy, len) < 0)
		return -errno;
	static __thread uint8_t buf[32768];
	struct dump_ctx d = { cb, ctx };
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(k->sock, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		int r = mnl_cb_run(buf, (size_t)n, seq, k->portid, dump_msg, &d);
		if (r == MNL_CB_STOP)
			return 0;
		if (r < 0 && errno == EINTR)
			return drain_dump(k, buf, (size_t)n, seq);
		if (r < 0)
			return -errno;
	}
}

/* Read acks until every message in [first, last] has answered. */
static int collect_acks(struct nl_kernel *k, uint32_t base, size_t first, size_t last, int *errs,
			bool *answered)
{
	size_t pending = 0;
	for (size_t i = first; i <= last; i++)
		pending += !answered[i];
	static __thread uint8_t buf[65536];
	while (pending) {
		ssize_t n = mnl_socket_recvfrom(k->sock, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		int left = (int)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; mnl_nlmsg_ok(h, left);
		     h = mnl_nlmsg_next(h, &left)) {
			if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq < base)
				continue;
			size_t i = h->nlmsg_seq - base;
			if (i < first || i > last || answered[i])
				continue;
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
			errs[i] = e->error;
			answered[i] = true;
			pending--;
		}
	}
	return 0;
}

static int k_apply(struct nl *nl, struct nl_batch *b, int *errs)
{
	struct nl_kernel *k = kernel_of(nl);
	size_t n = nl_batch_count(b);
	uint32_t base = k->seq + 1;
	k->seq += (uint32_t)n;
	nl_batch_set_seq(b, base);
	size_t len;
	const uint8_t *data = nl_batch_data(b, &len);
	bool *answered = xcalloc(n, sizeof(bool));
	int r = 0;
	size_t off = 0, i = 0;
	while (i < n && r == 0) {
		/* A chunk of whole messages, then its acks. */
		size_t start = off, first = i;
		while (i < n) {
			const struct nlmsghdr *h = (const struct nlmsghdr *)(data + off);
			if (off > start && off - start + h->nlmsg_len > CHUNK)
				break;
			off += h->nlmsg_len;
			i++;
		}
		if (mnl_socket_sendto(k->sock, data + start, off - start) < 0) {
			r = -errno;
			break;
		}
		r = collect_acks(k, base, first, i - 1, errs, answered);
	}
	free(answered);
	return r;
}

static void k_close(struct nl *nl)
{
	struct nl_kernel *k = kernel_of(nl);
	mnl_socket_close(k->sock);
	free(k);
}

static const struct nl_ops kernel_ops = { k_dump, k_apply, k_close };

int nl_open_kernel(struct nl **out)
{
	struct mnl_socket *s = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!s)
		return -errno;
	if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;
		mnl_socket_close(s);
		return -e;
	}
	int one = 1;
	/* Kernel-side dump filtering; a kernel without it just sends more. */
	setsockopt(mnl_socket_get_fd(s), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
	setsockopt(mnl_socket_get_fd(s), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	int rcv = 4 << 20;
	setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	struct nl_kernel *k = xcalloc(1, sizeof(*k));
	k->nl.ops = &kernel_ops;
	k->sock = s;
	k->portid = mnl_socket_get_portid(s);
	k->seq = (uint32_t)time(NULL);
	*out = &k->nl;
	return 0;
}

int nl_open_kernel_netns(const char *netns_path, struct nl **out)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	int target = open(netns_path, O_RDONLY | O_CLOEXEC);
	if (target < 0) {
		int e = errno;
		close(self);
		return -e;
	}
	int r = setns(target, CLONE_NEWNET) < 0 ? -errno : 0;
	if (r == 0) {
		/* A netlink socket belongs to the namespace it was made in. */
		r = nl_open_kernel(out);
		if (setns(self, CLONE_NEWNET) < 0)
			abort(); /* stranded in another namespace: nothing safe to do */
	}
	close(target);
	close(self);
	return r;
}

struct nl_monitor {
	struct mnl_socket *sock;
};

int nl_monitor_open(unsigned groups, struct nl_monitor **out)
{
	struct mnl_socket *s = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!s)
		return -errno;
	if (mnl_socket_bind(s, groups, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;
		mnl_socket_close(s);
		return -e;
	}
	int rcv = 4 << 20;
	setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	struct nl_monitor *m = xcalloc(1, sizeof(*m));
	m->sock = s;
	*out = m;
	return 0;
}

int nl_monitor_fd(const struct nl_monitor *m)
{
	return mnl_socket_get_fd(m->sock);
}

int nl_monitor_read(struct nl_monitor *m, void (*cb)(const struct nlmsghdr *h, void *ctx),
		    void *ctx)
{
	static __thread uint8_t buf[65536];
	int dropped = 0;
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(m->sock, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return dropped;
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				dropped = -ENOBUFS;
				continue;
			}
			return -errno;
		}
		int left = (int)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; mnl_nlmsg_ok(h, left);
		     h = mnl_nlmsg_next(h, &left))
			cb(h, ctx);
	}
}

void nl_monitor_close(struct nl_monitor *m)
{
	if (!m)
		return;
	mnl_socket_close(m->sock);
	free(m);
}
