/*
 * Block IPAM: pools are cut into blocks (blockSize, /26 by default); a node
 * claims a block by affinity before it hands out addresses from it, and every
 * address is recorded against a handle ("<network>.<containerID>").
 *
 * Two layers:
 *  - pure block and pool arithmetic (lib/ipam_block.c): allocate and release
 *    ordinals inside one IPAMBlock, name blocks, find an unclaimed block in a
 *    pool, decide whether a pool serves a node. No I/O.
 *  - the datastore protocol (lib/ipam.c): read, decide with the pure layer,
 *    write with compare-and-swap, retry. It never holds state between calls.
 *
 * Invariants kept by the protocol (see docs/ipam.md):
 *  - an ordinal is handed out by a compare-and-swap update of its block, so
 *    two writers never both succeed with the same address;
 *  - a handle is written before the block whose addresses it gains, and
 *    after the block whose addresses it loses (in one transaction where the
 *    datastore has them: etcd), so a handle always lists every block that
 *    holds its addresses and releasing it finds them all;
 *  - assigning for a handle that already holds addresses returns them:
 *    an ADD retried by the runtime allocates nothing new;
 *  - a node claims a block in two phases: a pending BlockAffinity, then the
 *    block created with that node's affinity and the affinity confirmed
 *    (one transaction on etcd; the block first on Kubernetes). An empty
 *    block and its affinity are deleted together, the block first. Only a
 *    confirmed affinity routes or allocates; leftover pending ones are
 *    finished or withdrawn by the node's next operation, and by
 *    ipam_release_empty_blocks(), which also removes a block left without
 *    its affinity;
 *  - no two blocks overlap: a new block overlaps no existing one of any
 *    size (pools may overlap, a pool's blockSize may change). On etcd block
 *    creations are serialised by a marker every creation updates (see
 *    IPAM_CLAIMS_MARKER), so two claims cannot both miss each other; on
 *    Kubernetes each claim reads the blocks again after creating its own and
 *    yields to an overlapping one before it confirms.
 *
 * Addresses are IPv4 today; the block layer is family-agnostic.
 */
#ifndef BRINDLE_IPAM_H
#define BRINDLE_IPAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/labels.h>
#include <brindle/core/model.h>
#include <brindle/core/net.h>
#include <brindle/core/strbuf.h>

struct ds;
struct ds_read;

/* Block annotation: wall-clock seconds since the block last became empty. */
#define IPAM_EMPTY_SINCE_ANNOTATION "ipam.brindle.projectcalico.org/empty-since"
/* Default grace period before an empty block loses its affinity. */
#define IPAM_DEFAULT_EMPTY_GRACE_S 300
/* "10.244.0.0-26" plus NUL. */
#define IPAM_BLOCK_NAME_LEN (IP_STRLEN + 5)
/*
 * The IPAMHandle every block creation updates in its transaction: a claim
 * that read the blocks before another claim wrote one fails and reads again.
 * Not a CNI handle (those are "<network>.<containerID>", with a dot).
 */
#define IPAM_CLAIMS_MARKER "brindle-block-claims"
/* The marker's count of claims, so that its value changes with each. */
#define IPAM_CLAIMS_ANNOTATION "ipam.brindle.projectcalico.org/claims"
/* Before this many seconds an address without an endpoint may be an ADD in progress. */
#define IPAM_DEFAULT_LEAK_GRACE_S 300

/* Secondary attributes kept beside each address. */
#define IPAM_ATTR_NAMESPACE "namespace"
#define IPAM_ATTR_POD	    "pod"
#define IPAM_ATTR_NODE	    "node"
/*
 * The WorkloadEndpoint (in "namespace") brindle-cni writes for the address.
 * brindle-ipam serving another plugin sets none: no endpoint is written then.
 */
#define IPAM_ATTR_ENDPOINT "endpoint"
/* When the address was assigned, in seconds since the epoch. */
#define IPAM_ATTR_TIMESTAMP "timestamp"

/* --- pure: blocks and pools -------------------------------------------------------------- */

/* "10.244.0.0/26" ↔ "10.244.0.0-26" (the block's datastore name). */
void ipam_block_name(const struct br_cidr *c, char buf[IPAM_BLOCK_NAME_LEN]);
int ipam_block_name_parse(const char *name, struct br_cidr *out) must_check;

/*
 * Fill an empty IPAMBlock (from model_new) for @cidr, every ordinal free,
 * with affinity "host:<node>" (none when @node is NULL).
 */
void ipam_block_init(struct br_ipamblock *b, const struct br_cidr *cidr, const char *node,
		     bool strict_affinity);
/*
 * Check a block read from the datastore: its CIDR parses and matches its
 * name, allocations has one entry per address, every free ordinal is listed
 * once and only free ordinals are, every attribute index is valid. @cidr
 * and @err (the reason) are optional.
 */
int ipam_block_validate(const struct br_ipamblock *b, struct br_cidr *cidr,
			struct strbuf *err) must_check;
size_t ipam_block_capacity(const struct br_ipamblock *b);
size_t ipam_block_free_count(const struct br_ipamblock *b);
static inline size_t ipam_block_used(const struct br_ipamblock *b)
{
	return ipam_block_capacity(b) - ipam_block_free_count(b);
}
/* The node in "host:<node>", or NULL. */
const char *ipam_block_host(const struct br_ipamblock *b, char *buf, size_t size);

/* Addresses automatic assignment leaves alone (IPReservations' reservedCIDRs). */
struct ipam_reserved {
	const struct br_cidr *v;
	size_t n;
};
/*
 * Hand out the free ordinal that has been free longest (FIFO) and is not in
 * @reserved (NULL: none) to @handle, with @secondary (node, namespace, pod)
 * kept beside it. -ENOSPC when none is left. Bumps the block's sequence
 * number and clears its empty-since mark.
 */
int ipam_block_assign(struct br_ipamblock *b, const char *handle, const struct br_labels *secondary,
		      const struct ipam_reserved *reserved, struct br_ip *out) must_check;
/* How many free addresses of @b automatic assignment may hand out (not reserved). */
size_t ipam_block_free_unreserved(const struct br_ipamblock *b,
				  const struct ipam_reserved *reserved);
/* The same for one given address: -ERANGE outside the block, -EADDRINUSE when taken. */
int ipam_block_assign_ip(struct br_ipamblock *b, const struct br_ip *ip, const char *handle,
			 const struct br_labels *secondary) must_check;
/*
 * Free every address of @handle; returns how many. When the block ends up
 * empty, it is marked empty since @now (seconds).
 */
size_t ipam_block_release_handle(struct br_ipamblock *b, const char *handle, int64_t now);
/* Free one address; *handle (optional) gets the owner's handle (in @b's arena). -ENOENT if free. */
int ipam_block_release_ip(struct br_ipamblock *b, const struct br_ip *ip, int64_t now,
			  const char **handle) must_check;
/* The handle holding @ip (NULL when free or outside). */
const char *ipam_block_handle_of(const struct br_ipamblock *b, const struct br_ip *ip);
/* Addresses held by @handle, in ordinal order; returns the count (writes at most @max). */
size_t ipam_block_ips_of(const struct br_ipamblock *b, const char *handle, struct br_ip *out,
			 size_t max);
/* Ordinal → address, for listings. false when the ordinal is free. */
bool ipam_block_ordinal(const struct br_ipamblock *b, size_t ordinal, struct br_ip *ip,
			const struct br_ipam_attr **attr);
/* Seconds since the epoch when the block became empty, or -1 when not marked. */
int64_t ipam_block_empty_since(const struct br_ipamblock *b);
void ipam_block_mark_empty(struct br_ipamblock *b, int64_t now);

/* The block of @pool that contains @ip. -ERANGE when @ip is outside the pool. */
int ipam_pool_block_of(const struct br_ippool *pool, const struct br_ip *ip,
		       struct br_cidr *out) must_check;
/*
 * The first block of @pool (in address order) that overlaps none of @taken,
 * the existing blocks of any size. -ENOSPC when there is none.
 */
int ipam_pool_free_block(const struct br_ippool *pool, const struct br_cidr *taken, size_t n_taken,
			 struct br_cidr *out) must_check;
/* Every address of block @c is reserved (so claiming it for automatic assignment is useless). */
bool ipam_block_all_reserved(const struct br_cidr *c, const struct ipam_reserved *reserved);
/* Two indices into a list of CIDRs, i < j. */
struct ipam_pair {
	size_t i, j;
};
/*
 * Every pair of overlapping CIDRs of @v (blocks of any size, which nest or
 * are disjoint): *pairs gets them (caller frees), the count is returned.
 */
size_t ipam_overlaps(const struct br_cidr *v, size_t n, struct ipam_pair **pairs);

enum ipam_owner {
	IPAM_OWNER_LIVE,    /* an endpoint has the address, or its container's endpoint exists */
	IPAM_OWNER_GONE,    /* brindle-cni wrote an endpoint for it, which is gone */
	IPAM_OWNER_UNKNOWN, /* no endpoint, but nothing shows that its owner is gone */
};
/*
 * Whether whoever holds @ip (its attribute @attr) still exists, judged from
 * the WorkloadEndpoints @weps: an endpoint with the address is live; else an
 * address brindle-cni assigned (attribute "endpoint") whose endpoint is gone
 * or now another container's is gone, once older than @grace_s at @now (an
 * ADD writes its endpoint after the address). Anything else is unknown: an
 * address brindle-ipam assigned for another plugin has no endpoint to look
 * at. @why (optional) gets the reason.
 */
enum ipam_owner ipam_owner_state(const struct br_ipam_attr *attr, const struct br_ip *ip,
				 struct br_object *const *weps, size_t n_weps, int64_t now,
				 int64_t grace_s, struct strbuf *why);

/*
 * A pool's namespaceSelector: whether pods of a namespace with @labels may have
 * its addresses automatically. Unknown labels (NULL) pass only pools without one.
 */
bool ipam_pool_serves_namespace(const struct br_ippool *pool, const struct br_labels *labels);
/*
 * Whether @pool serves workloads on a node with @node_labels: enabled, used
 * for workloads, its nodeSelector matches. When not, @why (optional) says
 * which.
 */
bool ipam_pool_serves(const struct br_ippool *pool, const struct br_labels *node_labels,
		      struct strbuf *why);

/* --- the datastore protocol ---------------------------------------------------------------- */

struct ipam_request {
	const char *handle; /* "<network>.<containerID>" */
	const char *node;
	/*
	 * The family of the addresses wanted: AF_INET6, or AF_INET (0 means AF_INET). Only pools
	 * of that family serve the request, and only addresses of that family the handle holds
	 * count as already assigned: a dual-stack ADD asks once per family with one handle.
	 */
	int family;
	/* Pools to use (names or CIDRs); none = every pool that serves the node. */
	const char *const *pools;
	size_t n_pools;
	/* Specific addresses to assign (instead of any); each must be free. */
	const struct br_ip *ips;
	size_t n_ips;
	/* Kept beside each address: namespace, pod, node (shown by ipam tools). */
	const struct br_labels *secondary;
	/*
	 * The pod's namespace's labels, for pools with a namespaceSelector; NULL when
	 * not known (then such pools are used only when named).
	 */
	const struct br_labels *namespace_labels;
	int64_t now;	 /* wall clock, seconds (empty-block marks) */
	long timeout_ms; /* overall deadline for retries; 0 = 30 s */
	/*
	 * A block the node is likely to assign from (the one its last assignment
	 * came from, ipam_assigned.block): read fresh with the first round of reads,
	 * it saves the block's own read (a round trip on Kubernetes) when the node
	 * still has it. Only a hint: a wrong or stale one costs nothing but the read.
	 */
	const char *block_hint;
	/*
	 * Reads of the caller's (on Kubernetes: the pod and its namespace) made with
	 * IPAM's first round, so both cost one round trip. @prepare then sees them
	 * before anything is decided and may set @pools, @ips and @namespace_labels
	 * (the pod's annotations choose them); a negative return ends ipam_assign
	 * with it, and the caller keeps its own account of why.
	 */
	struct ds_read *also;
	size_t n_also;
	int (*prepare)(void *ctx, const struct ds_read *also, size_t n_also,
		       struct ipam_request *req);
	void *prepare_ctx;
};

#define IPAM_MAX_IPS 16
struct ipam_assigned {
	struct br_ip ips[IPAM_MAX_IPS];
	size_t n;
	bool reused;	/* the handle already held them (a retried ADD) */
	size_t held;	/* ips[0..held) the handle held before this call */
	char pool[256]; /* the pool of the first address */
	char block[IPAM_BLOCK_NAME_LEN]; /* the block of the first address assigned, or "" */
};

/*
 * One address of @req->family (or the requested ones) for @req->handle on @req->node: from a
 * block the node owns, else a newly claimed block, else (unless
 * StrictAffinity) a block borrowed from another node. Errors:
 *   -ENOSPC      no free address in any usable pool
 *   -EADDRINUSE  a requested address is taken (by another handle)
 *   -EINVAL      a requested address is in no usable pool, or a named pool is unknown
 *   -ETIMEDOUT   the datastore stayed unreachable or contended past the deadline
 *   others       the datastore failed
 * @err gets a sentence for operators.
 */
int ipam_assign(struct ds *d, const struct ipam_request *req, struct ipam_assigned *out,
		struct strbuf *err) must_check;

/* Addresses held by @handle (none: *n = 0 and 0). */
int ipam_handle_ips(struct ds *d, const char *handle, struct br_ip *out, size_t max, size_t *n,
		    struct strbuf *err) must_check;

/*
 * Free every address of @handle and then the handle. Releasing an unknown
 * handle succeeds with *released = 0. @node (optional) is the caller's node:
 * its empty blocks past @grace_s then lose their affinity (see
 * ipam_release_empty_blocks).
 */
int ipam_release_handle(struct ds *d, const char *handle, int64_t now, long timeout_ms,
			size_t *released, struct strbuf *err) must_check;

/*
 * Free one address (brindlectl ipam release, a failed ADD giving back what
 * it took): in every block that holds it for @holder (for anyone when NULL;
 * more than one block only when blocks overlap), each block together with
 * its handle's count in one transaction. *handle (optional, caller frees)
 * gets the handle that held it. -ENOENT when the address is not allocated,
 * -EBUSY when another handle than @holder holds it now.
 */
int ipam_release_ip(struct ds *d, const struct br_ip *ip, const char *holder, int64_t now,
		    char **handle, struct strbuf *err) must_check;

struct ipam_sweep {
	/* Only this node's affinities and blocks; NULL: every node's, and blocks of none. */
	const char *node;
	/* The node itself sweeps (its CNI DEL): its pending claims are settled at once. */
	bool by_node;
	int64_t now;	 /* wall clock, seconds */
	int64_t grace_s; /* how long a block stays empty, or a claim pending, before it goes */
	long timeout_ms; /* 0 = 30 s */
};

struct ipam_swept {
	size_t empty;	/* empty blocks released, with their affinity */
	size_t orphans; /* empty blocks without an affinity, released */
	size_t claims;	/* pending claims withdrawn (or confirmed: the block was the node's) */
};

/*
 * Repairs that need no owner's word, every step compare-and-swap:
 *  - a block affine to a node that has been empty for @grace_s loses its
 *    affinity: affinity → pendingDeletion (routes withdrawn), then block and
 *    affinity deleted in one transaction if both are unchanged (an address
 *    taken meanwhile keeps them, back to confirmed). Empty blocks not yet
 *    marked get marked. An empty block that overlaps another block goes at
 *    once;
 *  - an affinity whose block is gone, or another node's, is deleted;
 *  - a pending claim is settled — withdrawn, or confirmed when its block
 *    exists for its node — when the node sweeps itself, when the node has no
 *    Node resource, or when it has been pending for @grace_s;
 *  - (without by_node) an empty block that no affinity of its node backs
 *    (an orphan, left by older versions or other tools) is deleted.
 * @out (optional) counts what was done.
 */
int ipam_release_empty_blocks(struct ds *d, const struct ipam_sweep *s, struct ipam_swept *out,
			      struct strbuf *err) must_check;

/*
 * Test hook: when set, called between the steps of the operations that take
 * more than one write (claiming a block, releasing an empty block), with the
 * name of the step just done ("claim-pending", ...), so that a test can stop
 * an operation there and run a competing one (tests/integration/
 * test_ipam_ds.c runs every such interleaving). NULL outside tests.
 */
extern void (*ipam_test_hook)(const char *step);

#endif
