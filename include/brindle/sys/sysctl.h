/*
 * Interface sysctls (/proc/sys/net/...) behind one table of backend
 * functions: the kernel one reads and writes the files of the caller's
 * network namespace; the recording one (<brindle/testing/sysctl_record.h>)
 * keeps values in memory and logs writes, for unit tests.
 */
#ifndef BRINDLE_SYS_SYSCTL_H
#define BRINDLE_SYS_SYSCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <brindle/core/util.h>

struct sysctl;

struct sysctl_ops {
	/* @path relative to /proc/sys, like "net/ipv4/conf/cali1/proxy_arp". */
	int (*read)(struct sysctl *s, const char *path, char *buf, size_t size);
	int (*write)(struct sysctl *s, const char *path, const char *value);
	void (*close)(struct sysctl *s);
};

struct sysctl {
	const struct sysctl_ops *ops;
};

struct sysctl *sysctl_open_kernel(void);
void sysctl_close(struct sysctl *s);

int sysctl_read(struct sysctl *s, const char *path, char *buf, size_t size) must_check;

/*
 * The per-interface settings of the dataplane contract for a workload
 * interface: proxy_arp=1, forwarding=1, route_localnet=1, neigh proxy_delay=0,
 * accept_ra=0, and with @ipv6 IPv6's forwarding=1 and proxy_ndp=1 (IPv6 off
 * on the host does not make its settings fail). Returns the first error, after
 * trying them all; *changed counts the values written.
 */
int sysctl_workload_iface(struct sysctl *s, const char *ifname, bool ipv6, int *changed) must_check;
/*
 * The node's forwarding, as Calico's felix sets it at start (ipForwarding Enabled):
 * net.ipv4.ip_forward=1, and with @ipv6 net.ipv6.conf.all.forwarding=1. Returns the first
 * error; *changed counts the values written.
 */
int sysctl_forwarding(struct sysctl *s, bool ipv6, int *changed) must_check;

#endif
