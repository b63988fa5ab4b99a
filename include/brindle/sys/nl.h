/*
 * rtnetlink with a kernel: one table of backend functions with two
 * implementations, the kernel (lib/sys/nl_kernel.c: one sendmsg per batch, a
 * sequence number per message, per-message errors, strict kernel-side
 * filtered dumps) and a recording backend for tests
 * (<brindle/testing/nl_record.h>: a simulated kernel that applies the
 * encoded messages and answers dumps). The objects and messages are
 * <brindle/core/nl_msg.h>.
 */
#ifndef BRINDLE_SYS_NL_H
#define BRINDLE_SYS_NL_H

#include <brindle/core/nl_msg.h>

/* --- backends ------------------------------------------------------------------------- */

struct nl;

struct nl_ops {
	/* Send @req (a dump request) and call @cb for every reply message. */
	int (*dump)(struct nl *nl, const void *req, size_t len,
		    int (*cb)(const struct nlmsghdr *h, void *ctx), void *ctx);
	/* Apply every message; errs[i] is 0 or a negative errno for message i. */
	int (*apply)(struct nl *nl, struct nl_batch *b, int *errs);
	void (*close)(struct nl *nl);
};

struct nl {
	const struct nl_ops *ops;
	void *priv;
};

/* The kernel backend in the current network namespace, or in the one at @netns_path. */
int nl_open_kernel(struct nl **out) must_check;
int nl_open_kernel_netns(const char *netns_path, struct nl **out) must_check;
void nl_close(struct nl *nl);

/* Dumps return -EINTR when the kernel interrupted them (the table changed): dump again. */
int nl_dump_links(struct nl *nl, struct nl_link_list *out) must_check;
int nl_dump_addrs(struct nl *nl, uint8_t family, struct nl_addr_list *out) must_check;
int nl_dump_routes(struct nl *nl, const struct nl_route_filter *f,
		   struct nl_route_list *out) must_check;
/* AF_INET/AF_INET6 neighbours, or AF_BRIDGE for FDB entries; @ifindex 0 = all. */
int nl_dump_neighs(struct nl *nl, uint8_t family, int ifindex,
		   struct nl_neigh_list *out) must_check;
/*
 * Apply a batch. Returns 0 when every message succeeded, the number of failed
 * messages when some did (their errors in @errs, which may be NULL), or a
 * negative errno when the batch could not be sent.
 */
int nl_apply(struct nl *nl, struct nl_batch *b, int *errs) must_check;

/*
 * Multicast notifications (kernel only): RTMGRP_LINK etc. in @groups. The fd
 * is non-blocking, for an event loop; nl_monitor_read hands every pending
 * message to @cb and returns -ENOBUFS when the kernel dropped some (resync).
 */
struct nl_monitor;
int nl_monitor_open(unsigned groups, struct nl_monitor **out) must_check;
int nl_monitor_fd(const struct nl_monitor *m);
int nl_monitor_read(struct nl_monitor *m, void (*cb)(const struct nlmsghdr *h, void *ctx),
		    void *ctx);
void nl_monitor_close(struct nl_monitor *m);

#endif
