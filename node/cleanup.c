/*
 * brindle-node cleanup: everything of Brindle's on this node's kernel
 * removed, and nothing else (docs/install.md, uninstalling). What is
 * Brindle's is what felix marks as its own:
 *   iptables  in filter, nat, mangle and raw, of iptables and ip6tables: the
 *             rules in built-in chains whose comment id starts "cali:", then
 *             every chain named "cali-*" (flushed, then deleted), one commit
 *             per table;
 *   ip sets   every set named "cali4*" or "cali6*" (after the rules that use them);
 *   nftables  Brindle's tables brindle-filter and brindle-nat (the nft backend's),
 *             in the ip and ip6 families;
 *   routes    every route of protocol 80 (felix's: pods, blocks, tunnels);
 *   devices   vxlan.calico and vxlan-v6.calico deleted; tunl0 (which cannot
 *             be deleted) loses its addresses and goes down;
 *   CNI       the plugins, configuration and kubeconfig install-cni wrote
 *             (CNI_BIN_DIR, CNI_NET_DIR, CNI_CONF_NAME as for install-cni),
 *             so the runtime stops calling a plugin that is gone.
 * Pods' own veths are left to their CNI DEL. Run it after stopping felix (it
 * would put everything back), e.g. from the DaemonSet's uninstall job.
 */
#include "node.h"

#include <brindle/core/devices.h>
#include <brindle/core/ipt_rule.h>
#include <brindle/core/nl_msg.h>
#include <brindle/core/util.h>
#include <brindle/sys/ipset.h>
#include <brindle/sys/ipt.h>
#include <brindle/sys/log.h>
#include <brindle/sys/nl.h>
#include <brindle/sys/rules_cleanup.h>

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int clean_netlink(void)
{
	struct nl *nl;
	int r = nl_open_kernel(&nl);
	if (r < 0) {
		log_error("netlink: %s", strerror(-r));
		return r;
	}
	struct nl_route_list routes = { 0 };
	struct nl_link_list links = { 0 };
	struct nl_addr_list addrs = { 0 };
	struct nl_batch *b = nl_batch_new();
	struct nl_route_filter f = { .family = AF_UNSPEC, .protocol = NL_PROTO_BRINDLE };
	size_t n_routes = 0;
	/* -EINTR: a table changed during a dump; read them again (a few times). */
	for (int tries = 0; tries < 5; tries++) {
		nl_route_list_free(&routes);
		nl_link_list_free(&links);
		nl_addr_list_free(&addrs);
		if ((r = nl_dump_routes(nl, &f, &routes)) == 0 &&
		    (r = nl_dump_links(nl, &links)) == 0)
			r = nl_dump_addrs(nl, AF_UNSPEC, &addrs);
		if (r != -EINTR)
			break;
	}
	if (r == 0) {
		for (size_t i = 0; i < routes.n; i++)
			if (routes.v[i].protocol == NL_PROTO_BRINDLE) {
				nl_batch_route(b, NL_DEL, &routes.v[i]);
				n_routes++;
			}
		const struct nl_link *vx = nl_link_by_name(&links, VXLAN_DEV);
		const struct nl_link *vx6 = nl_link_by_name(&links, VXLAN6_DEV);
		if (vx)
			nl_batch_link(b, NL_DEL, vx);
		if (vx6)
			nl_batch_link(b, NL_DEL, vx6);
		const struct nl_link *tun = nl_link_by_name(&links, IPIP_DEV);
		for (size_t i = 0; tun && i < addrs.n; i++)
			if (addrs.v[i].ifindex == tun->ifindex)
				nl_batch_addr(b, NL_DEL, &addrs.v[i]);
		if (tun && (tun->flags & IFF_UP)) {
			struct nl_link down = *tun;
			down.flags &= ~(unsigned)IFF_UP;
			nl_batch_link(b, NL_SET, &down);
		}
		size_t n = nl_batch_count(b);
		int *errs = n ? xcalloc(n, sizeof(*errs)) : NULL;
		/* a route gone with its device meanwhile is not an error */
		if (n && (r = nl_apply(nl, b, errs)) > 0) {
			r = 0;
			for (size_t i = 0; i < n; i++)
				if (errs[i] < 0 && errs[i] != -ENOENT && errs[i] != -ESRCH && !r)
					r = errs[i];
		}
		free(errs);
		if (r == 0)
			log_info("netlink: removed %zu routes%s%s%s", n_routes,
				 vx ? ", " VXLAN_DEV : "", vx6 ? ", " VXLAN6_DEV : "",
				 tun ? ", cleared " IPIP_DEV : "");
	}
	if (r < 0)
		log_error("netlink: %s", strerror(-r));
	nl_batch_free(b);
	nl_route_list_free(&routes);
	nl_link_list_free(&links);
	nl_addr_list_free(&addrs);
	nl_close(nl);
	return r;
}

/* What install-cni wrote, where it wrote it (the same settings): a missing file is fine. */
static int clean_cni_files(void)
{
	const char *bin = node_env_or("CNI_BIN_DIR", "/host/opt/cni/bin");
	const char *net = node_env_or("CNI_NET_DIR", "/host/etc/cni/net.d");
	const char *files[] = { "brindle-cni", "brindle-ipam",
				node_env_or("CNI_CONF_NAME", "10-brindle.conflist"),
				"brindle-kubeconfig" };
	int r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", i < 2 ? bin : net, files[i]);
		if (unlink(path) == 0)
			log_info("removed %s", path);
		else if (errno != ENOENT) {
			log_error("removing %s: %s", path, strerror(errno));
			r = -errno;
		}
	}
	return r;
}

int node_cleanup(void)
{
	/* The rules first: they use the sets. Each part runs even when one before failed. */
	int r1 = cleanup_iptables(NULL), r2 = cleanup_ipsets(), r3 = clean_netlink();
	int r4 = clean_cni_files(), r5 = cleanup_nftables();
	return r1 < 0 ? r1 : r2 < 0 ? r2 : r3 < 0 ? r3 : r4 < 0 ? r4 : r5;
}
