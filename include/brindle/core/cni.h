/*
 * The CNI side of brindle-cni and brindle-ipam that involves no system
 * calls: the network configuration from stdin, CNI_ARGS, result and error
 * documents in each spec version, and the names the dataplane contract
 * derives from a pod (host veth, WorkloadEndpoint).
 *
 * Network configuration (docs/cni.md has the full table):
 *   cniVersion, name, type, mtu, nodename, log_level, log_file_path,
 *   datastore_type, etcd_endpoints, etcd_ca_cert_file, etcd_cert_file,
 *   etcd_key_file, kubernetes {kubeconfig}, ipam {type, assign_ipv4, assign_ipv6, ipv4_pools,
 *   ipv6_pools, empty_block_grace_seconds, ipam_lock_file, timeout_seconds}, prevResult,
 *   runtimeConfig.ips, and
 *   the CNI conventions' args:
 *     args.cni.labels  [{key, value}]        pod labels for the WorkloadEndpoint
 *     args.cni.ips     ["10.0.0.5", ...]     requested addresses (prefix ignored)
 *     args.brindle.ports [{name, protocol, port}]  named ports (Brindle extension)
 * Unknown fields are ignored, as runtimes add their own; known fields of the
 * wrong type are errors.
 */
#ifndef BRINDLE_CNI_H
#define BRINDLE_CNI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/arena.h>
#include <brindle/core/jv.h>
#include <brindle/core/labels.h>
#include <brindle/core/net.h>
#include <brindle/core/strbuf.h>

/* Error codes of the CNI spec; 100 and up are ours (docs/cni.md). */
enum cni_error_code {
	CNI_ERR_INCOMPATIBLE_VERSION = 1,
	CNI_ERR_UNSUPPORTED_FIELD = 2,
	CNI_ERR_UNKNOWN_CONTAINER = 3,
	CNI_ERR_INVALID_ENV = 4,
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,
	CNI_ERR_INVALID_CONFIG = 7,
	CNI_ERR_TRY_AGAIN = 11,
	CNI_ERR_DATASTORE = 100,  /* the datastore failed or is unreachable */
	CNI_ERR_NO_ADDRESS = 101, /* no free address, or the requested one is taken */
	CNI_ERR_DATAPLANE = 102,  /* a kernel operation failed */
	CNI_ERR_CHECK = 103,	  /* CHECK found the container's network not as created */
	CNI_ERR_CONFLICT = 104,	  /* the container already has the interface or a route ADD adds */
};

#define CNI_DEFAULT_VERSION  "0.2.0" /* a configuration without cniVersion */
#define CNI_LATEST_VERSION   "1.0.0"
#define CNI_GATEWAY	     "169.254.1.1"
#define CNI_GATEWAY6	     "fe80::ecee:eeff:feee:eeee" /* the host veth's, from its MAC */
#define CNI_HOST_MAC	     "ee:ee:ee:ee:ee:ee"
#define CNI_DEFAULT_LOG_FILE "/var/log/brindle/cni/cni.log"
#define CNI_DEFAULT_LOCK     "/run/brindle/ipam.lock"
#define CNI_MAX_IPS	     16

/*
 * The network configuration brindle-node install-cni writes unless CNI_NETWORK_CONFIG
 * says another (brindle-cni on the Kubernetes datastore, then portmap), with @IPAM more
 * members of brindle-cni's "ipam" (a string literal: "" or ", \"assign_ipv6\": ...").
 */
#define CNI_DEFAULT_CONFLIST(IPAM)                                                                \
	"{\"cniVersion\": \"1.0.0\", \"name\": \"k8s-pod-network\", \"plugins\": [\n"             \
	"  {\"type\": \"brindle-cni\", \"log_level\": \"info\",\n"                                \
	"   \"log_file_path\": \"/var/log/brindle/cni/cni.log\",\n"                               \
	"   \"datastore_type\": \"kubernetes\",\n"                                                \
	"   \"kubernetes\": {\"kubeconfig\": \"__KUBECONFIG_FILEPATH__\"},\n"                     \
	"   \"ipam\": {\"type\": \"brindle-ipam\"" IPAM "}},\n"                                   \
	"  {\"type\": \"portmap\", \"snat\": true, \"capabilities\": {\"portMappings\": true}}\n" \
	"]}\n"

/* Every version we read and write; false for others. */
bool cni_version_supported(const char *v);
/* <0, 0, >0 like strcmp, for "a.b.c" versions; unparsable ones sort first. */
int cni_version_cmp(const char *a, const char *b);

struct cni_port {
	const char *name;
	const char *protocol; /* TCP, UDP, SCTP; NULL = TCP */
	int64_t port;
};

struct cni_conf {
	struct arena *a; /* owns everything below */
	const char *cni_version;
	const char *name;
	const char *type;
	int64_t mtu;	      /* 0: the number in mtu_file, else the kernel's default */
	const char *mtu_file; /* NULL: /var/lib/brindle/mtu (brindle-node startup writes it) */
	const char *nodename;
	const char *nodename_file; /* NULL: /var/lib/brindle/nodename */
	const char *log_level;
	const char *log_file_path;
	const char *datastore_type;
	const char *etcd_endpoints; /* comma-separated */
	const char *etcd_ca_cert_file;
	const char *etcd_cert_file;
	const char *etcd_key_file;
	const char *kubeconfig; /* kubernetes.kubeconfig (Calico's), for datastore_type kubernetes */
	/* felix on this node polices IPv6 (ipv6Support): what brindle-node install-cni writes
	 * when its FELIX_IPV6SUPPORT (the ConfigMap felix reads too) is true */
	bool felix_ipv6_support;
	/* ipam */
	const char *ipam_type;
	bool assign_ipv4,
		assign_ipv6; /* the families a pod gets (Calico's: IPv4 only unless set) */
	const char **ipv4_pools;
	size_t n_ipv4_pools;
	const char **ipv6_pools;
	size_t n_ipv6_pools;
	int64_t empty_block_grace_s;
	const char *ipam_lock_file; /* "" disables the host lock */
	int64_t ipam_timeout_s;
	/* args and runtimeConfig */
	struct br_labels labels;
	struct br_ip *ips;
	size_t n_ips;
	struct cni_port *ports;
	size_t n_ports;
	/* prevResult's addresses (CHECK, DEL) */
	struct br_ip *prev_ips;
	size_t n_prev_ips;
	bool has_prev_result;
};

/*
 * Parse the network configuration. On error returns a negative errno, sets
 * *code to the CNI error code (decode or invalid config or version) and
 * writes the reason to @err. Everything is checked here, so what parses can
 * be used without further validation.
 */
int cni_conf_parse(const char *text, size_t len, struct cni_conf **out, int *code,
		   struct strbuf *err) must_check;
void cni_conf_free(struct cni_conf *c);

/*
 * CNI_ARGS ("K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod;IgnoreUnknown=1") into a
 * map. -EINVAL (with @err) for an item without "=".
 */
int cni_args_parse(struct arena *a, const char *args, struct br_labels *out,
		   struct strbuf *err) must_check;

/*
 * CNI_CONTAINERID as the spec allows it: 1-128 letters, digits, '-', '_' and '.'.
 * (It becomes part of the IPAM handle and of datastore keys.)
 */
bool cni_container_id_valid(const char *id);
/*
 * CNI_IFNAME: a name the kernel takes for an interface (1-15 bytes, not "."
 * or "..") and, as the plugins use it in names and keys, made of letters,
 * digits, '-', '_' and '.' only.
 */
bool cni_ifname_valid(const char *ifname);

/* Who the container is: from CNI_ARGS' K8S_POD_*, else the container ID stands in. */
struct cni_identity {
	const char *orchestrator; /* "k8s", or "cni" for a plain runtime */
	const char *namespace;
	const char *pod;
};
void cni_identity(struct arena *a, const struct br_labels *args, const char *container_id,
		  struct cni_identity *out);
/*
 * Whether an ADD may write an endpoint for @id on interface @ifname: the
 * namespace must be a DNS label and the pod name a DNS subdomain (as
 * Kubernetes names them; for a plain runtime the container ID stands in for
 * the pod), and @ifname, the last part of the endpoint's name, a DNS
 * subdomain too (lower case). -EINVAL, with a sentence naming the variable
 * to blame in @err, otherwise 0.
 */
int cni_identity_check(const struct cni_identity *id, const char *ifname,
		       struct strbuf *err) must_check;

/* "cali" + 11 hex of sha1("<namespace>.<pod>"). */
void cni_host_veth_name(const char *ns, const char *pod, char out[16]);
/* "<node>-<orchestrator>-<pod>-<iface>", with each '-' inside a part doubled. */
char *cni_wep_name(struct arena *a, const char *node, const char *orchestrator, const char *pod,
		   const char *iface);
/* "<network>.<containerID>" */
char *cni_handle_id(struct arena *a, const char *network, const char *container_id);

/* --- results -------------------------------------------------------------------------------- */

struct cni_iface {
	char name[16];
	char mac[18];
	const char *sandbox; /* NULL: on the host */
};

struct cni_result {
	struct cni_iface ifaces[2];
	size_t n_ifaces;
	int ip_iface; /* index into ifaces of the addresses' interface; -1 = none (IPAM) */
	struct br_ip ips[CNI_MAX_IPS];
	size_t n_ips;
	bool gateway; /* 169.254.1.1 as gateway and a default route via it */
};

/* The result document in the form @version expects (1.0.0, 0.3.x/0.4.0, 0.1.0/0.2.0). */
void cni_result_write(struct strbuf *out, const char *version, const struct cni_result *r);
void cni_error_write(struct strbuf *out, const char *version, int code, const char *msg,
		     const char *details);
void cni_version_write(struct strbuf *out, const char *version);

#endif
