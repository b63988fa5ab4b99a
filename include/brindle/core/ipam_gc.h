/*
 * IPAM garbage collection, the decision (pure): which allocations have lost
 * their owner, from the blocks, the pods and the nodes as they are now, as
 * Calico's kube-controllers decides it. An allocation made for a pod
 * (secondary attributes namespace and pod) is valid while that pod exists
 * on the node it was made for and, once the pod has addresses, lists this
 * one. A tunnel address (attribute type *TunnelAddress, or a handle
 * ipip-/vxlan-tunnel-addr-<node>) is valid while its node exists. Anything
 * else (an address for a plugin other than brindle-cni, one given by hand)
 * has no owner we can judge and is never collected. brindle-controllers
 * (controllers/) keeps each leak for a grace period before it releases it,
 * unless its node is gone.
 */
#ifndef BRINDLE_IPAM_GC_H
#define BRINDLE_IPAM_GC_H

#include <brindle/core/arena.h>
#include <brindle/core/model.h>
#include <brindle/core/net.h>

struct gc_pod {
	const char *ns, *name, *node;
	const struct br_ip *ips; /* none yet: the CNI ADD may be under way */
	size_t n_ips;
};

struct gc_input {
	struct br_ipamblock *const *blocks;
	size_t n_blocks;
	const struct gc_pod *pods;
	size_t n_pods;
	const char *const *nodes; /* the Nodes that exist */
	size_t n_nodes;
};

enum gc_reason {
	GC_POD_GONE,   /* no such pod */
	GC_POD_MOVED,  /* the pod is on another node now */
	GC_IP_NOT_POD, /* the pod has addresses, and not this one */
	GC_TUNNEL_NODE_GONE,
};

struct gc_leak {
	struct br_ip ip;
	const char *handle;
	const char *node;  /* the node it was allocated for */
	const char *owner; /* "ns/pod", or the node of a tunnel address */
	enum gc_reason why;
	bool node_gone; /* its node has no Node: released without a grace period */
};

const char *ipam_gc_reason(enum gc_reason r); /* "pod-gone", ... (metrics labels) */

/* The leaks, in block then ordinal order, allocated in @a. */
void ipam_gc_scan(struct arena *a, const struct gc_input *in, struct gc_leak **out, size_t *n);

#endif
