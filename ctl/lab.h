/*
 * brindlectl lab: shared declarations of lab.c (commands), lab_up.c (building
 * and tearing down) and lab_proc.c (processes and namespaces). See docs/lab.md.
 */
#ifndef BRINDLE_CTL_LAB_H
#define BRINDLE_CTL_LAB_H

#include "ctl.h"
#include "topology.h"

#include <brindle/core/arena.h>
#include <brindle/core/strbuf.h>

#include <sys/types.h>

/* One lab on this machine: its name and where its state lives. */
struct lab {
	struct arena *a;
	const char *name;
	const char *dir;       /* <state base>/<name> */
	const char *etcd_sock; /* <dir>/etcd/etcd.sock:0 */
	const char *endpoints; /* "unix:<etcd_sock>" */
	struct lab_topology *topo;
	/* a lab on Kubernetes: its administrator's datastore, opened on first use (lab_kube.c) */
	struct ctl *admin;
	/* and the manifests it runs, read on first use (lab_kubelet.c) */
	struct lab_manifest *manifest;
};

/* Paths of the programs a lab runs (next to brindlectl in a build tree, or installed). */
/* The fabric's routing table for external hosts' traffic: a /32 per pod, via its node. */
#define LAB_EXTERNAL_TABLE 200

struct lab_bins {
	const char *felix, *confd, *node, *controllers, *cni, *cni_dir, *probe;
};

/* --- lab_view.c: the files a node's process sees -------------------------- */

/*
 * At @at of the view: @src of the machine bound there, or a symlink to @link,
 * or else a tmpfs.
 */
struct lab_view_mount {
	const char *src, *at, *link;
	bool read_only;
	bool lab_owned; /* @src is the lab's: what is missing under @at is made in it */
};
/*
 * The machine's root, then @mounts in order (their mount points made where
 * they are missing, never on the machine), built under @root: an empty
 * directory of the lab.
 */
struct lab_view {
	const char *root;
	const struct lab_view_mount *mounts;
	size_t n_mounts;
};
struct lab_view_op;
struct lab_view_plan {
	const char *root;
	const struct lab_view_op *ops;
	size_t n;
};
/* The view's mount operations, planned in the parent; NULL with the reason in @err. */
const struct lab_view_plan *lab_view_plan(struct arena *a, const struct lab_view *v,
					  struct strbuf *err);
/* In a child: a mount namespace of its own with the view built, then chroot to it. */
int lab_view_apply(const struct lab_view_plan *plan);

/* --- lab_proc.c ---------------------------------------------------------- */

/* Where labs keep their state: $BRINDLE_LAB_STATE_DIR or /run/brindle-lab. */
const char *lab_state_base(void);
/* Fills @l for lab @name (no check that it exists). */
void lab_init(struct lab *l, const char *name);
void lab_free(struct lab *l);
/* Loads the topology the lab was built from (<dir>/topology.yaml). */
int lab_load(struct lab *l) must_check;
void lab_find_bins(struct arena *a, struct lab_bins *b);
/* A file of the source tree when brindlectl runs from its build tree, else of the install. */
const char *lab_file(struct arena *a, const char *src_rel, const char *installed, int mode);
/* ctl_error("@what: <errno's text>"); the negative errno. */
int lab_fail_errno(const char *what);
/* @path and its parents made (0755) where missing. */
int lab_mkdirs(const char *path) must_check;
/* @text as the whole of the file @path (file_write_whole, @mode); a negative errno. */
int lab_write_file(const char *path, const char *text, int mode) must_check;

/*
 * Run @argv (inside network namespace @ns unless NULL, entered with setns),
 * @input on its stdin unless NULL; stdout and stderr go to @out unless NULL.
 * Returns the exit status (128+signal when killed), or a negative errno.
 */
int lab_run(const char *ns, char *const argv[], const char *input, struct strbuf *out);

/*
 * felix's rule backend in the lab ("Legacy", "NFT", "Auto"): the topology's ruleBackend, else
 * BRINDLE_LAB_RULE_BACKEND (legacy, nft, auto: how the test tiers run the lab tests on each),
 * else NULL (felix's default).
 */
const char *lab_rule_backend(const struct lab_topology *t);
/* @p cannot be served or probed here: SCTP without SCTP sockets. */
bool lab_proto_skipped(enum lab_proto p);
/* brindle-probe's words for @p: its serve flag ("--tcp") and its client command ("tcp"). */
const char *lab_probe_flag(enum lab_proto p);
const char *lab_probe_cmd(enum lab_proto p);
/* How a container's process runs: its network namespace, view and exact environment. */
struct lab_exec {
	const char *ns;			  /* NULL: the lab's own */
	const struct lab_view_plan *view; /* NULL: the machine's files */
	char *const *envp;		  /* NULL: the lab's environment */
	/*
	 * lab_spawn_exec: started again a second after it exits, as a kubelet
	 * restarts a container. The pid recorded is its supervisor's, which
	 * stops it on SIGTERM (lab down).
	 */
	bool restart;
};
/* lab_run and lab_spawn with a view and an environment. */
int lab_run_exec(const struct lab_exec *x, char *const argv[], const char *input,
		 struct strbuf *out);
int lab_spawn_exec(struct lab *l, const struct lab_exec *x, const char *log,
		   char *const argv[]) must_check;
/* The same with a command line split at spaces (no quoting: names have no spaces). */
int lab_runf(struct strbuf *out, const char *fmt, ...) printf_like(2, 3);
/*
 * A daemon of the lab: @argv in @ns (through `ip netns exec`, which also gives
 * it the namespace's /sys) or in the root namespace when NULL, in a session of
 * its own, output to <dir>/<log>.log; recorded in <dir>/pids for lab down.
 */
int lab_spawn(struct lab *l, const char *ns, const char *log, char *const argv[]) must_check;
/* The same, started again a second after each exit (lab_exec.restart): BIRD, the lab's process
 * manager's way. */
int lab_spawn_restarted(struct lab *l, const char *ns, const char *log,
			char *const argv[]) must_check;
/* Records a network namespace in <dir>/namespaces, then creates it with lo up. */
int lab_netns_add(struct lab *l, const char *ns) must_check;
/* Appends a line to <dir>/<file>. */
int lab_state_append(struct lab *l, const char *file, const char *fmt, ...) printf_like(3, 4);
/* Everything of the lab gone: processes, namespaces, state directory. */
void lab_teardown(struct lab *l);

/*
 * A pod as recorded in <dir>/pods: "ns/pod node ip netns ports", ports
 * "-" or "name:PROTO:port,..." (name "-" for serve entries): what it answers on.
 */
struct lab_pod_state {
	const char *ref; /* ns/pod */
	const char *node;
	const char *ip;
	const char *ip6; /* a dual-stack pod's IPv6 address (NULL: none) */
	const char *netns;
	struct lab_port *ports;
	size_t n_ports;
};
int lab_read_pods(struct lab *l, struct lab_pod_state **out, size_t *n) must_check;
/* Rewrites <dir>/<file> without its lines that start with @prefix (atomically). */
int lab_state_drop(struct lab *l, const char *file, const char *prefix) must_check;
/* SIGTERM (then SIGKILL) to the recorded processes logging to <dir>/<log>.log. */
void lab_kill_log(struct lab *l, const char *log);
/* The lab's datastore, through brindlectl's own configuration; ctl_close frees it. */
struct ds *lab_ds(struct lab *l, struct ctl *c);
void lab_ctl_close(struct ctl *c);

/* --- lab_up.c ------------------------------------------------------------- */
int lab_cmd_up(struct ctl *c, int argc, char **argv);
int lab_cmd_down(struct ctl *c, int argc, char **argv);
int lab_cmd_status(struct ctl *c, int argc, char **argv);
/* One pod (from the topology or `lab pod add`): namespace, brindle-cni ADD, brindle-probe. */
int lab_pod_start(struct lab *l, const struct lab_bins *b, const struct lab_pod *p) must_check;
/* brindle-cni DEL of a pod started by lab_pod_start. */
int lab_pod_cni_del(struct lab *l, const struct lab_bins *b, const struct lab_pod_state *ps,
		    const char *ns, const char *pod) must_check;
/* Whether the pod answers on each of its TCP and UDP ports from inside itself. */
bool lab_pod_serving(struct lab *l, const struct lab_bins *b, const struct lab_pod_state *ps);
/* Runs brindlectl's apply/delete against the lab's etcd; quiet hides their output. */
int lab_ctl_cmd(struct lab *l, int (*fn)(struct ctl *, int, char **), int argc, char **argv,
		bool quiet);

/* --- lab_kube.c (a lab with `datastore: kubernetes`) ------------------------ */

/* A token of ServiceAccount @ns/@sa from the TokenRequest API (a day), in the lab's arena. */
int lab_kube_token(struct lab *l, const char *ns, const char *sa, const char **token) must_check;

/* <dir>/kube/<who>.kubeconfig: admin, brindle-node, brindle-cni, brindlectl. */
const char *lab_kubeconfig(struct lab *l, const char *who);
/* This process into the lab's fabric namespace, where its API server listens (once; no-op on etcd).
 */
int lab_kube_enter(struct lab *l) must_check;
/* The control plane started in the fabric; CRDs, roles and users; the nodes and namespaces. */
int lab_kube_up(struct lab *l) must_check;
/* A namespace created (or an existing one's labels replaced) as the cluster's administrator. */
int lab_kube_namespace(struct lab *l, const char *name, const struct br_labels *labels,
		       bool create) must_check;
/* The pod as an API object on its node; then Running with @ip, as the kubelet reports it. */
int lab_kube_pod_create(struct lab *l, const struct lab_pod *p) must_check;
int lab_kube_pod_running(struct lab *l, const struct lab_pod *p, const char *ip) must_check;
int lab_kube_pod_delete(struct lab *l, const char *ns, const char *pod) must_check;
/* "k=v" sets, "k-" removes one of the pod's labels. */
int lab_kube_pod_label(struct lab *l, const char *ns, const char *pod, char **args,
		       int n) must_check;
/* ctl.h's cluster_write: the cluster's own kinds written as its administrator. */
int lab_kube_cluster_write(struct ctl *c, const struct br_kind *k, const char *ns, const char *name,
			   struct br_object *o, const char **what);

/* --- lab_kubelet.c (the lab as the kubelet of a lab on Kubernetes) --------- */

/* The DaemonSet's pod on node @n: its init containers run, then its containers started. */
int lab_kubelet_node(struct lab *l, const struct lab_bins *b, const struct lab_node *n) must_check;
/* The Deployment brindle-controllers' pod, in the fabric's namespace. */
int lab_kubelet_controllers(struct lab *l, const struct lab_bins *b) must_check;
/* A runtime's view of node @node's host, for its CNI plugin; NULL on failure (said). */
const struct lab_view_plan *lab_kubelet_host_view(struct lab *l, const char *node);
/* The configuration the node's runtime gives its CNI plugin, into @conf (empty when none: said). */
void lab_kubelet_cni_conf(struct lab *l, const char *node, struct strbuf *conf);

/* --- lab_probe.c ---------------------------------------------------------- */
int lab_cmd_probe(struct ctl *c, int argc, char **argv);
/* Flag tables of the lab's commands (ctl.h's struct ctl_flag). */
extern const struct ctl_flag lab_up_flags[], lab_probe_flags[], lab_matrix_flags[],
	lab_pod_add_flags[], lab_export_clab_flags[];
int lab_cmd_matrix(struct ctl *c, int argc, char **argv);

/* --- lab_pods.c ----------------------------------------------------------- */
int lab_cmd_ns(struct ctl *c, int argc, char **argv);
int lab_cmd_pod(struct ctl *c, int argc, char **argv);
int lab_cmd_exec(struct ctl *c, int argc, char **argv);

#endif
