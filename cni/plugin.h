/*
 * What brindle-cni and brindle-ipam share: reading the runtime's request
 * (environment and stdin), answering it (result or CNI error on stdout),
 * logging to the plugin's log file, the datastore, the host-wide IPAM lock,
 * and the dataplane (dataplane.c).
 */
#ifndef BRINDLE_CNI_PLUGIN_H
#define BRINDLE_CNI_PLUGIN_H

#include <brindle/core/cni.h>
#include <brindle/sys/ds.h>
#include <brindle/sys/ipam.h>

enum plugin_cmd {
	CMD_ADD,
	CMD_DEL,
	CMD_CHECK,
	CMD_VERSION
};

struct plugin {
	const char *prog; /* "brindle-cni" */
	enum plugin_cmd cmd;
	const char *container_id;
	const char *netns;
	int netns_fd; /* CNI_NETNS, opened and checked (ADD, CHECK); -1 otherwise */
	const char *ifname;
	struct br_labels args; /* CNI_ARGS */
	struct cni_identity id;
	struct cni_conf *conf;
	const char *version; /* the configuration's cniVersion, for answers */
	char node[256];
	const char *handle;
	struct ds *ds;
	struct ds_config_storage storage;
	struct arena *a;
	int lock_fd;
	int log_fd;
	uint64_t started_ns; /* for the timings in debug logs */
};

/*
 * Read the environment and stdin into @p; on VERSION answers and exits. On a
 * bad request answers with the CNI error and exits. brindle-cni's ADD and
 * CHECK need CNI_NETNS and CNI_IFNAME; CNI_NETNS must then be a network
 * namespace (code 3 when it does not exist, 4 when it is something else),
 * which stays open in p->netns_fd.
 */
void plugin_start(struct plugin *p, const char *prog, int argc, char **argv);
/* Open the datastore from the configuration (falling back to BRINDLE_* variables). */
void plugin_open_ds(struct plugin *p);
/* The pods' MTU: the configuration's, else the MTU file's (brindle-node startup), else 0. */
unsigned plugin_mtu(struct plugin *p);
/* Answer with a CNI error (and log it) and exit non-zero. */
__attribute__((noreturn)) void plugin_fail(struct plugin *p, int code, const char *msg,
					   const char *details);
/* Print @doc to stdout and exit 0. */
__attribute__((noreturn)) void plugin_succeed(struct plugin *p, const char *doc);
/* CNI error code for an IPAM failure. */
int plugin_ipam_code(int r);

/* What one IPAM assignment added, so that a failed ADD can give back exactly that. */
struct plugin_added {
	bool new_handle; /* the handle held nothing before: all of it is this call's */
	struct br_ip ips[CNI_MAX_IPS];
	size_t n;
};

/*
 * IPAM for this container's handle; fail (and exit) on errors. With @added,
 * also what this call added to the handle (a retried ADD gets back what the
 * handle holds and adds nothing).
 */
void plugin_assign(struct plugin *p, struct ipam_assigned *out, struct plugin_added *added);
/*
 * Give back what plugin_assign() added: the whole handle when it was new,
 * else only the addresses it added. No sweep of empty blocks.
 */
int plugin_unassign(struct plugin *p, const struct plugin_added *added,
		    struct strbuf *err) must_check;
/* Release the handle, then this node's empty blocks past their grace. 0 or negative errno. */
int plugin_release(struct plugin *p, struct strbuf *err) must_check;

/* --- dataplane.c ------------------------------------------------------------------------- */

struct dp_spec {
	const char *host_if; /* caliX */
	const char *netns;   /* CNI_NETNS, for messages */
	int netns_fd;	     /* CNI_NETNS from dp_netns_open() */
	const char *ifname;  /* CNI_IFNAME */
	unsigned mtu;	     /* 0: the kernel's default */
	const struct br_ip *ips;
	size_t n_ips;
};

/*
 * Open @path and check that it is a network namespace (nsfs, type
 * CLONE_NEWNET). Anything but a regular file (a FIFO, a device, a directory)
 * is refused without being opened. -ENOENT (or -ENOTDIR) when it does not
 * exist, -EINVAL when it is not a network namespace, else -errno; @err says
 * which.
 */
int dp_netns_open(const char *path, int *fd, struct strbuf *err) must_check;

/*
 * Whether the container is free for what dp_setup() adds: no interface
 * @ifname, no IPv4 default route and no route to 169.254.1.1 in its main
 * table (whichever interface they use), no IPv6 default route when @s has an
 * IPv6 address, and the host interface @host_if, if
 * there is one, is not the other end of one of the container's veths.
 * -EEXIST with a sentence in @err when it is not; -EALREADY when @ifname is
 * a veth joined to @host_if (this plugin made it for this pod: a completed
 * ADD's, or an interrupted one's). Changes nothing.
 */
int dp_precheck(const struct dp_spec *s, struct strbuf *err) must_check;

/* What dp_setup() created, for dp_undo(). */
struct dp_made {
	int host_ifindex; /* the host end of the veth (the pod end goes with it) */
};

/*
 * Create the pod's veth (host side @host_if with MAC ee:ee:ee:ee:ee:ee and
 * the workload sysctls, pod side @ifname in @netns), the pod's /32 addresses
 * and routes (169.254.1.1 on-link, default via it), and the host route
 * "<ip>/32 dev host_if scope link proto 80". Refuses (-EEXIST) as
 * dp_precheck() does, and never replaces a route the container has. A stale
 * host interface of the same name (an earlier sandbox of the pod) is
 * replaced. @pod_mac gets the pod side's MAC ("aa:bb:..."). On failure what
 * this call created is removed again.
 */
int dp_setup(const struct dp_spec *s, char pod_mac[18], struct dp_made *made,
	     struct strbuf *err) must_check;
/* Remove what dp_setup() created (@made), and nothing else. */
int dp_undo(const struct dp_spec *s, const struct dp_made *made, struct strbuf *err) must_check;
/*
 * Remove the pod side @ifname in @netns (NULL, gone or not a network
 * namespace: nothing to do there), which takes its host side with it; with
 * @host_if, also that host interface.
 */
int dp_teardown(const char *netns, const char *ifname, const char *host_if,
		struct strbuf *err) must_check;
/* Verify everything dp_setup creates; @err says what differs. */
int dp_check(const struct dp_spec *s, struct strbuf *err) must_check;

#endif
