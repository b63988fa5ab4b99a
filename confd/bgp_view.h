/*
 * The BGP view: from the datastore's resources, what one node's BIRD should
 * do. Which sessions it has (mesh, global and node-specific peers, reverse
 * peerings, route-reflector roles), which prefixes it originates (its own
 * confirmed blocks, service addresses), which it hands on to peers, and which
 * learned routes it may install in the kernel without touching what felix
 * owns. Pure: plain data in, plain data out, no system calls; the one thing
 * it cannot know by itself (a password's value) it asks a callback for.
 *
 * The rules (see docs/bgp.md for the operator's view):
 * - A node never peers with its own address. Mesh sessions go to every node
 *   with an address of the family, except nodes with a route-reflector
 *   cluster ID; a node with a cluster ID has no mesh at all.
 * - Passive: a mesh session, or a Global_ session towards a Brindle node,
 *   waits when the peer's address, compared as a string, is greater than ours.
 * - RR client flags only on iBGP sessions where we have a cluster ID and the
 *   peer's differs (an external peer has none).
 * - Duplicates (same address and port) keep the first of: mesh, global
 *   peers, node peers, reverse peerings.
 * - Export to peers: own blocks as aggregates and service routes (from a
 *   static protocol), borrowed pod addresses (host routes on cali*
 *   interfaces inside a pool but outside our blocks), and over iBGP routes
 *   learned inside pools and service ranges (so reflectors reflect them);
 *   never anything inside a pool with disableBGPExport.
 * - Kernel: only routes learned over BGP, never an own block itself, service
 *   ranges or pools felix tunnels (Always); for CrossSubnet pools only routes
 *   whose next hop is in our own subnet (felix tunnels the others).
 */
#ifndef BRINDLE_CONFD_BGP_VIEW_H
#define BRINDLE_CONFD_BGP_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <brindle/core/arena.h>
#include <brindle/core/bgp_names.h>
#include <brindle/core/jv.h>
#include <brindle/core/model.h>
#include <brindle/core/strbuf.h>

#define BGP_DEFAULT_AS 64512

/*
 * Resolves a BGPPeer's or the mesh's password: the value into @out (in @a)
 * and 0, or a negative errno with a message in @err. Called only for
 * sessions this node has.
 */
/* TCP MD5 keys are at most this long (the kernel's TCP_MD5SIG_MAXKEYLEN). */
#define BGP_PASSWORD_MAX 80
/* Why BIRD and the kernel cannot use password @pw, or NULL when they can. */
const char *bgp_password_problem(const char *pw);

typedef int (*bgp_password_fn)(void *ctx, const struct br_bgp_password *p, struct arena *a,
			       const char **out, struct strbuf *err);

/* Everything the view reads. Arrays of pointers in any order; none is modified. */
struct bgp_input {
	const char *node_name;
	const struct br_node *const *nodes;
	size_t n_nodes;
	const struct br_bgpconfig *const *configs; /* "default" and "node.<name>" */
	size_t n_configs;
	const struct br_bgppeer *const *peers;
	size_t n_peers;
	const struct br_ippool *const *pools;
	size_t n_pools;
	/* Block affinities; only this node's confirmed ones count. */
	const struct br_blockaffinity *const *affinities;
	size_t n_affinities;
	const struct br_service *const *services;
	size_t n_services;
	const struct br_endpointslice *const *slices;
	size_t n_slices;
	const struct br_bgpfilter *const *filters; /* every BGPFilter */
	size_t n_filters;
	bgp_password_fn password;
	void *password_ctx;
};

enum bgp_family {
	BGP_V4,
	BGP_V6
};

struct bgp_session {
	char name[BGP_SESSION_NAME_MAX];
	enum bgp_peer_type type;
	struct br_ip ip;
	const char *peer_ip;   /* text of ip */
	uint16_t port;	       /* 0: BGP's own (179) */
	uint32_t as, local_as; /* peer's, ours for this session */
	bool ibgp;
	bool passive;
	bool rr_client;		    /* then rr_cluster_id is ours */
	const char *rr_cluster_id;  /* NULL unless rr_client */
	const char *source_address; /* NULL: let the kernel choose */
	bool strict_bind;	    /* bindMode NodeIP */
	const char *password;	    /* NULL: none */
	int64_t restart_time_s;	    /* 0: BIRD's default */
	int64_t keepalive_time_s;   /* 0: BIRD's default */
	int ttl_security;	    /* hops; 0: off */
	int allow_local_as;	    /* 0: off */
	const char *next_hop;	    /* NULL, "self" or "keep" */
	const char *peer_node;	    /* the Brindle node at ip, if any */
	const char *origin;	    /* "node-to-node mesh", "bgppeer x", "bgppeer x (reverse)" */
	/* The BGPPeer's filters, in its order, and the functions of them that apply to this
	 * session's family (bgp_filters_load). */
	const struct br_bgpfilter **filters;
	size_t n_filters;
	const char **import_fns, **export_fns;
	size_t n_import_fns, n_export_fns;
};

/* One rule of a BGPFilter function: "if <cond> then <action>;", no cond: always. */
struct bgp_filter_rule_text {
	const char *cond;
	const char *action; /* "accept" or "reject" */
};

struct bgp_filter_fn {
	const char *name;   /* brindle_bgpfilter_<name>_<hash>_<import|export>_v<N> */
	const char *filter; /* the BGPFilter */
	bool import;
	struct bgp_filter_rule_text *rules;
	size_t n_rules;
};

enum bgp_pool_mode {
	BGP_POOL_PLAIN,
	BGP_POOL_TUNNEL,
	BGP_POOL_CROSS_SUBNET
};

struct bgp_pool {
	const char *cidr;
	const char *name;
	enum bgp_pool_mode mode;
	bool export; /* !disableBGPExport */
};

struct bgp_block {
	const char *cidr;
};

struct bgp_static {
	const char *cidr;
	const char *why; /* "block", "service range", "service <ns>/<name>" */
};

struct bgp_reach {
	const char *cidr; /* the peer, as a host prefix */
	const char *via;
};

struct bgp_community_set {
	const char *cidr;
	const char **standard; /* "(65000,100)" */
	size_t n_standard;
	const char **large; /* "(65000,1,2)" */
	size_t n_large;
};

struct bgp_family_view {
	bool enabled;		      /* this node has an address of the family */
	const char *address;	      /* ours */
	const char *subnet;	      /* the network of our address's prefix */
	struct bgp_session *sessions; /* sorted by name */
	size_t n_sessions;
	struct bgp_block *blocks; /* own confirmed blocks, sorted */
	size_t n_blocks;
	struct bgp_static *statics; /* blocks and service routes, sorted, unique */
	size_t n_statics;
	struct bgp_reach *reach; /* reachableBy routes */
	size_t n_reach;
	const char **service_ranges; /* every configured service CIDR (never to the kernel) */
	size_t n_service_ranges;
	struct bgp_pool *pools; /* sorted by CIDR */
	size_t n_pools;
	struct bgp_community_set *communities;
	size_t n_communities;
	struct bgp_filter_fn *filter_fns; /* the BGPFilters the sessions use */
	size_t n_filter_fns;
};

struct bgp_view {
	struct arena *a;
	const char *node_name;
	const char *router_id;
	uint32_t as;
	int listen_port;       /* 0: 179 */
	const char *log_level; /* "debug", "info" or "none" */
	bool bind_node_ip;
	const char **ignored_interfaces;
	size_t n_ignored_interfaces;
	struct bgp_family_view fam[2];
	/* Things left out, each a sentence for the log ("bgppeer x: ..."). */
	const char **problems;
	size_t n_problems;
};

/*
 * Build the view for in->node_name. Fails with -ENOENT when the node is not
 * in the input and -ENODATA when it has no BGP address; @err says which.
 * Problems with single peers or services do not fail the build: they are
 * left out and listed in view->problems.
 */
int bgp_view_build(const struct bgp_input *in, struct bgp_view **out,
		   struct strbuf *err) must_check;
void bgp_view_free(struct bgp_view *v);

/* The functions of the BGPFilters @fv's sessions name, and each session's calls (bgp_filters.c). */
void bgp_filters_load(struct arena *a, struct bgp_family_view *fv, int f);

/* The data the templates see (documented in bgp-templates/README.md), in @a. */
struct jv *bgp_view_data(const struct bgp_view *v, struct arena *a);

#endif
