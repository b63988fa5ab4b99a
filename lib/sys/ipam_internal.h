/*
 * What lib/sys/ipam.c (reading, handles, assigning), ipam_claim.c (claiming
 * blocks) and ipam_release.c (releasing, empty blocks, orphans) share: the
 * attempt loop of every operation (ipam.c's comment at the top tells it), the
 * reads and writes they all make (those two in ipam_op.c, below the three),
 * and claims. Not for use outside them.
 */
#ifndef BRINDLE_IPAM_INTERNAL_H
#define BRINDLE_IPAM_INTERNAL_H

#include <brindle/sys/ds.h>
#include <brindle/sys/ipam.h>

struct ipam_op {
	struct ds *d;
	struct strbuf *err;
	uint64_t deadline;
	int attempt;
	bool fresh; /* read nothing from the API server's cache (ds_read.cached) */
	bool stop;  /* the caller's prepare failed: no retry */
	unsigned seed;
};

/* An operation's deadline and error text, for @timeout_ms (0: 30 s). */
void ipam_op_init(struct ipam_op *op, struct ds *d, long timeout_ms, struct strbuf *err);
/* After a failed attempt: wait and true to try again, false when out of time or attempts. */
bool ipam_op_again(struct ipam_op *op, int r);
/* The operation's error once it gives up: -EAGAIN (contended), -ETIMEDOUT, or @r. */
int ipam_op_give_up(struct ipam_op *op, int r, const char *what);
/* @r, with the datastore's last error as the operation's text. */
int ipam_op_ds_error(struct ipam_op *op, int r);
/* Tell ipam_test_hook (tests force interleavings with it) that @step is done. */
void ipam_step_done(const char *step);

struct ipam_objs {
	struct br_object **v;
	size_t n;
};

void ipam_objs_free(struct ipam_objs *l);
int ipam_list(struct ipam_op *op, enum br_kind_id k, const char *scope, struct ipam_objs *out);
/* A block, checked (-EUCLEAN when damaged: ipam check reports it). */
int ipam_get_block(struct ipam_op *op, const char *name, struct br_ipamblock **out);
int ipam_get_handle(struct ipam_op *op, const char *handle, struct br_ipamhandle **out);
int ipam_commit_block(struct ipam_op *op, struct br_ipamblock *b);

/* A handle's count of addresses in block @block (a block name); -1 when none. */
int64_t ipam_handle_count(const struct br_ipamhandle *h, const char *block);
/* Set it (0 or less: the key goes). */
void ipam_handle_set(struct br_ipamhandle *h, const char *block, int64_t count);
/* The block name of a handle's key, in @buf. */
const char *ipam_handle_key_block(const char *key, char buf[IPAM_BLOCK_NAME_LEN]);

int ipam_set_affinity_state(struct ipam_op *op, struct br_blockaffinity *a, const char *state);
/* Delete affinity @a if unchanged. */
int ipam_withdraw(struct ipam_op *op, struct br_blockaffinity *a);

/* --- claims (ipam_claim.c) --- */

/*
 * What a claim decides from: the claims marker, then every block. Creating a
 * block moves the marker, so a creation decided from a view fails when any
 * block was created after the view was read.
 */
struct ipam_claim_view {
	struct br_ipamhandle *marker; /* NULL when there is none yet */
	struct ipam_objs blocks;
	struct br_cidr *cidrs; /* blocks.v[i]'s CIDR (from its name); len 0 when damaged */
};

void ipam_claim_view_free(struct ipam_claim_view *v);
int ipam_claim_view_read(struct ipam_op *op, struct ipam_claim_view *v);
ssize_t ipam_view_overlap(const struct ipam_claim_view *v, const struct br_cidr *c);
struct br_cidr *ipam_view_taken(const struct ipam_claim_view *v, size_t *n);
int ipam_finish_claim(struct ipam_op *op, struct ipam_claim_view *v, struct br_blockaffinity *a,
		      bool strict, struct br_ipamblock **block);
int ipam_claim_cidr(struct ipam_op *op, struct ipam_claim_view *v, const struct br_cidr *c,
		    const char *node, bool strict, struct br_ipamblock **out);

#endif
