/*
 * The node's address, chosen as calico-node chooses it (IP_AUTODETECTION_METHOD):
 * pure logic over a list of interfaces and their addresses (brindle-node
 * reads them from the kernel). The methods:
 *   first-found               the first global address of an interface that is up,
 *                             skipping loopback, container bridges, veths, tunnels and
 *                             Calico's and Brindle's own devices (ad_skipped)
 *   interface=RE[,RE...]      the first interface whose whole name matches one of them
 *                             (up or not, skipped or not: the user named it)
 *   skip-interface=RE[,RE...] first-found, also skipping those
 *   cidr=CIDR[,CIDR...]       the first address inside one of them, of an interface
 *                             that is up
 *   can-reach=DEST            the address the kernel would send from to DEST (a system
 *                             call: brindle-node resolves it, then ad_choose finds
 *                             the interface address that is it)
 *   kubernetes-internal-ip    the Node's InternalIP (read from the API by brindle-node)
 * Interfaces are tried in ifindex order, their addresses in the kernel's order.
 */
#ifndef BRINDLE_AUTODETECT_H
#define BRINDLE_AUTODETECT_H

#include <brindle/core/net.h>
#include <brindle/core/strbuf.h>

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

enum ad_kind {
	AD_FIRST_FOUND,
	AD_INTERFACE,
	AD_SKIP_INTERFACE,
	AD_CIDR,
	AD_CAN_REACH,
	AD_K8S_INTERNAL_IP,
};

#define AD_MAX_ITEMS 16

struct ad_method {
	enum ad_kind kind;
	regex_t re[AD_MAX_ITEMS]; /* interface=, skip-interface= */
	struct br_cidr cidr[AD_MAX_ITEMS];
	size_t n;
	char target[256]; /* can-reach= */
};

struct ad_iface {
	const char *name;
	bool up;
	const struct br_cidr *addrs;
	size_t n_addrs;
};

/*
 * Parse @text ("" or NULL: first-found) for @family (AF_INET or AF_INET6).
 * -EINVAL with a sentence in @err naming what is wrong; ad_method_free after
 * success.
 */
int ad_method_parse(const char *text, int family, struct ad_method *m, struct strbuf *err);
void ad_method_free(struct ad_method *m);

/* Whether first-found passes over an interface of this name (Calico's list). */
bool ad_skipped(const char *ifname);

/*
 * The address (with its interface's prefix length) the method picks from
 * @ifs, of @family. For can-reach, @source is the address the kernel chose
 * (the one to find); ignored otherwise. -ENOENT with a sentence in @err when
 * nothing fits; AD_K8S_INTERNAL_IP is not chosen here (-EINVAL).
 */
int ad_choose(const struct ad_method *m, const struct ad_iface *ifs, size_t n, int family,
	      const struct br_ip *source, struct br_cidr *out, struct strbuf *err);

/*
 * The encapsulation MTU calico-node computes: the smallest MTU among up
 * interfaces named like host NICs (en*, wl*, ww*, sl*, ib*, eth*, wlan*,
 * wwan*), else 1460, minus the overhead of the encapsulations in use (@encaps,
 * AD_ENCAP_*: IPIP 20, VXLAN 50, IPv6 VXLAN 70; the largest of them).
 */
struct ad_link_mtu {
	const char *name;
	bool up;
	unsigned mtu;
};
enum {
	AD_ENCAP_IPIP = 1,
	AD_ENCAP_VXLAN = 2,
	AD_ENCAP_VXLAN6 = 4
};
unsigned ad_pod_mtu(const struct ad_link_mtu *links, size_t n, unsigned encaps);

#endif
