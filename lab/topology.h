/*
 * The lab's topology file (docs/lab.md): parsed, defaulted and validated in
 * one pure step, text in and a complete description out. Nothing is built
 * from a file that fails here; every problem is reported as
 * "<file>: <field path>: <message>".
 */
#ifndef BRINDLE_LAB_TOPOLOGY_H
#define BRINDLE_LAB_TOPOLOGY_H

#include <brindle/core/arena.h>
#include <brindle/core/labels.h>
#include <brindle/core/net.h>
#include <brindle/core/strbuf.h>

#include <stdbool.h>
#include <stdint.h>

/* Longest lab name: namespace names are "lab-<name>-<node>" and must stay readable. */
#define LAB_NAME_MAX 24

enum lab_proto {
	LAB_TCP,
	LAB_UDP,
	LAB_SCTP
};

enum lab_encap {
	LAB_ENCAP_NONE,
	LAB_ENCAP_VXLAN,
	LAB_ENCAP_VXLAN_CROSS_SUBNET,
	LAB_ENCAP_IPIP,
	LAB_ENCAP_IPIP_CROSS_SUBNET
};

struct lab_port {
	const char *name; /* NULL for `serve` entries */
	enum lab_proto proto;
	uint16_t port;
};

struct lab_subnet {
	const char *name;
	struct br_cidr cidr;  /* len 0: none (an IPv6-only subnet, cidr6 alone) */
	struct br_ip gateway; /* the fabric's address on this segment */
	/* cidr6: its IPv6 prefix beside the IPv4 one (len 0: none), and the fabric's IPv6
	 * address on it (gateway6, default the prefix with the IPv4 gateway's host part, as
	 * nodes' addresses: .254 -> ::fe) */
	struct br_cidr cidr6;
	struct br_ip gateway6;
};

struct lab_pool {
	struct br_cidr cidr; /* IPv4 or IPv6 */
	unsigned block_size;
	bool nat_outgoing;
};

struct lab_node {
	const char *name;
	size_t subnet; /* index into lab_topology.subnets */
	struct br_ip ip;	   /* family 0: none (its subnet has no cidr: IPv6 only) */
	struct br_ip ip6;	   /* family 0: none (its subnet has no cidr6) */
	const char *rr_cluster_id; /* NULL unless a route reflector */
	bool pods;		   /* may run pods */
	struct lab_port *serve;
	size_t n_serve;
};

struct lab_external {
	const char *name;
	struct br_ip ip, ip6; /* either may be none (family 0), not both */
	struct lab_port *serve;
	size_t n_serve;
};

struct lab_bgp_peer {
	const char *name;
	const char *kind; /* "frr" or "gobgp" */
	uint32_t as_number;
	size_t subnet;
	struct br_ip ip, ip6; /* its addresses on the subnet: a BGP session per family */
};

struct lab_namespace {
	const char *name;
	struct br_labels labels;
};

struct lab_pod {
	const char *namespace;
	const char *name;
	size_t node;
	struct br_labels labels;
	bool has_ip;
	struct br_ip ip; /* requested through IPAM when has_ip */
	struct lab_port *ports;
	size_t n_ports;
	struct lab_port *serve;
	size_t n_serve;
	bool host_network;
};

struct lab_topology {
	const char *name;
	uint32_t as_number;
	bool node_mesh;
	enum lab_encap encap;
	/* ruleBackend: felix's FELIX_IPTABLESBACKEND on every node ("Legacy", "NFT", "Auto";
	 * NULL: felix's default, Auto) */
	const char *rule_backend;
	/* where the lab keeps its resources: its own etcd, or a Kubernetes control plane */
	bool kubernetes;
	/* on Kubernetes: settings of the ConfigMap brindle-config over the manifest's */
	struct br_labels brindle_config;
	struct lab_subnet *subnets;
	size_t n_subnets;
	struct lab_pool *pools;
	size_t n_pools;
	struct lab_node *nodes;
	size_t n_nodes;
	struct lab_external *externals;
	size_t n_externals;
	struct lab_bgp_peer *peers;
	size_t n_peers;
	struct lab_namespace *namespaces;
	size_t n_namespaces;
	struct lab_pod *pods;
	size_t n_pods;
	/* an IPv6 pool: pods get IPv6 addresses, felix has ipv6Support; an IPv4 pool: pods get
	 * IPv4 ones (without one the lab is IPv6 only: its nodes may have no IPv4 either) */
	bool ipv6, ipv4;
};

/*
 * Parse @text (YAML or JSON, one document) named @source in messages. On
 * success *out points into @a. On failure returns -EINVAL and appends one
 * line per problem to @err ("<source>: <path>: <message>\n").
 */
int lab_topology_parse(struct arena *a, const char *source, const char *text, size_t len,
		       struct lab_topology **out, struct strbuf *err) must_check;

const char *lab_proto_name(enum lab_proto p); /* "TCP", "UDP", "SCTP" */
/* @labels as a JSON object (also a YAML flow mapping): {"k": "v", ...}. */
void lab_labels_json(struct strbuf *sb, const struct br_labels *labels);
/* Any case; false when unknown. */
bool lab_proto_parse(const char *s, enum lab_proto *out);

/* Network namespace names of the lab's parts (into @a). */
const char *lab_ns_fabric(struct arena *a, const char *lab);
const char *lab_ns_node(struct arena *a, const char *lab, const char *node);
const char *lab_ns_pod(struct arena *a, const char *lab, const char *ns, const char *pod);
const char *lab_ns_external(struct arena *a, const char *lab, const char *host);

/*
 * On datastore: kubernetes, whether the nodes reach the API server over IPv6 (on the first
 * subnet's gateway6): when none of them has an IPv4 address. (Otherwise every node has one
 * and the API server is on the first subnet's IPv4 gateway; a mix is refused.)
 */
bool lab_api_ipv6(const struct lab_topology *t);

/* An RFC 1123 label of at most @max characters (namespace and pod names). */
bool lab_dns_label(const char *s, size_t max);
/* A lab name: lower case letters, digits and '-', at most LAB_NAME_MAX. */
bool lab_name_valid(const char *name);

/*
 * The lab's datastore resources as a YAML stream: BGPConfiguration default,
 * IPPool pool-<i>, one Node per node (reflectors labelled
 * route-reflector: "true"), the BGPPeer peer-with-route-reflectors when there
 * are reflectors, one BGPPeer per bgpPeers entry, one v1 Namespace per
 * namespace: what `lab up` applies and export-clab embeds.
 */
void lab_resources_yaml(const struct lab_topology *t, struct strbuf *out);

#endif
