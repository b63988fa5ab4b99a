/*
 * The links writer (links.c): a mirror of the kernel's interfaces and of
 * which ones hold a host address, kept by read-backs and link notifications;
 * the tunnel devices felix owns; the settings of workload interfaces. The
 * neighbours and routes writers look interfaces up here.
 */
#ifndef FELIX_DATAPLANE_LINKS_H
#define FELIX_DATAPLANE_LINKS_H

#include "dataplane/writer.h"

#include <brindle/sys/sysctl.h>

struct links *links_new(struct dp_report *r, struct nl *nl, struct sysctl *sys);
struct dp_writer *links_writer(struct links *l);

const struct nl_link *links_named(const struct links *l, const char *name);
const struct nl_link *links_indexed(const struct links *l, int ifindex);
/* An address was added or removed: the host interfaces are read again before the next plan. */
void links_addrs_changed(struct links *l);
/*
 * An interface's settings changed (a netconf event): when the event says
 * forwarding or proxy ARP turned off, the interface is looked at again (true).
 * Felix's own writes turn them on, so their echoes ask for nothing.
 */
bool links_settings_changed(struct links *l, const struct nl_netconf *nc);

/*
 * Refuse (and report) the workload item @key of @d on a host interface, which
 * no workload item may touch: the loopback, felix's own devices, or one
 * holding an address other than an IPv6 link-local one (workload veths hold
 * none). True when refused; a missing interface is not a host interface.
 */
bool links_refuse_host_iface(const struct links *l, const struct desired *d, enum desired_kind kind,
			     const char *key, const char *ifname);

#endif
