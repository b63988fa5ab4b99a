/*
 * What brindle-cni and brindle-ipam share: reading the runtime's request
 * (environment and stdin), answering it (result or CNI error on stdout),
 * logging to the plugin's log file, the datastore, the host-wide IPAM lock,
 * and the dataplane (dataplane.c).
 */
#ifndef BRINDLE_CNI_PLUGIN_H
#define BRINDLE_CNI_PLUGIN_H

#include <brindle/cni.h>
#include <brindle/ds.h>
#include <brindle/ipam.h>

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
 * CHECK need CNI_NETNS and CNI_IFNAME.
 */
void plugin_start(struct plugin *p, const char *prog, int argc, char **argv);
/* Open the datastore from the configuration (falling back to BRINDLE_* variables). */
void plugin_open_ds(struct plugin *p);
/* Answer with a CNI error (and log it) and exit non-zero. */
__attribute__((noreturn)) void plugin_fail(struct plugin *p, int code, const char *msg,
					   const char *details);
/* Print @doc to stdout and exit 0. */
__attribute__((noreturn)) void plugin_succeed(struct plugin *p, const char *doc);
/* CNI error code for an IPAM failure. */
int plugin_ipam_code(int r);

/* The host-wide IPAM lock (flock), around assign and release. */
void plugin_lock(struct plugin *p);
void plugin_unlock(struct plugin *p);

/* IPAM for this container's handle; fail (and exit) on errors. */
void plugin_assign(struct plugin *p, struct ipam_assigned *out);
/* Release the handle, then this node's empty blocks past their grace. 0 or negative errno. */
int plugin_release(struct plugin *p, struct strbuf *err);

/* --- dataplane.c ------------------------------------------------------------------------- */

struct dp_spec {
	const char *host_if; /* caliX */
	const char *netns;   /* CNI_NETNS */
	const char *ifname;  /* CNI_IFNAME */
	unsigned mtu;	     /* 0: the kernel's default */
	const struct br_ip *ips;
	size_t n_ips;
};

/*
 * Create the pod's veth (host side @host_if with MAC ee:ee:ee:ee:ee:ee and
 * the workload sysctls, pod side @ifname in @netns), the pod's /32 addresses
 * and routes (169.254.1.1 on-link, default via it), and the host route
 * "<ip>/32 dev host_if scope link proto 80". A stale host interface of the
 * same name (an earlier sandbox of the pod) is replaced. @pod_mac gets the
 * pod side's MAC ("aa:bb:..."). On failure whatever was created is removed.
 */
int dp_setup(const struct dp_spec *s, char pod_mac[18], struct strbuf *err) must_check;
/*
 * Remove the pod side @ifname in @netns (NULL or gone: nothing to do), which
 * takes its host side with it; with @host_if, also that host interface.
 */
int dp_teardown(const char *netns, const char *ifname, const char *host_if,
		struct strbuf *err) must_check;
/* Verify everything dp_setup creates; @err says what differs. */
int dp_check(const struct dp_spec *s, struct strbuf *err) must_check;

#endif
