/*
 * IPAM's claims of blocks for a node: a pending affinity, the block, then the
 * affinity confirmed (on etcd in one transaction), yielding to a block that
 * would overlap. The attempt loop is ipam.c's (ipam_internal.h).
 */
#include "ipam_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- claiming blocks ---------------------------------------------------------------------- */

int ipam_set_affinity_state(struct ipam_op *op, struct br_blockaffinity *a, const char *state)
{
	a->spec.state = arena_strdup(a->o.arena, state);
	int r = ds_update(op->d, &a->o);
	return r < 0 ? ipam_op_ds_error(op, r) : 0;
}

/* Delete affinity @a if unchanged. */
int ipam_withdraw(struct ipam_op *op, struct br_blockaffinity *a)
{
	int r = ds_delete(op->d, model_kind(KIND_BLOCKAFFINITY), a->spec.node, a->o.meta.name,
			  a->o.revision);
	return r < 0 ? ipam_op_ds_error(op, r) : 0;
}

/* Withdraw a claim that cannot be finished: -ECANCELED once done, so the caller decides again. */
static int give_up_claim(struct ipam_op *op, struct br_blockaffinity *a)
{
	int r = ipam_withdraw(op, a);
	return r < 0 ? r : -ECANCELED;
}

void ipam_claim_view_free(struct ipam_claim_view *v)
{
	model_free(v->marker ? &v->marker->o : NULL);
	ipam_objs_free(&v->blocks);
	free(v->cidrs);
	*v = (struct ipam_claim_view){ 0 };
}

int ipam_claim_view_read(struct ipam_op *op, struct ipam_claim_view *v)
{
	*v = (struct ipam_claim_view){ 0 };
	/* Without transactions the marker cannot serialise claims: see claim_without_txn. */
	int r = ds_has_transactions(op->d) ? ipam_get_handle(op, IPAM_CLAIMS_MARKER, &v->marker)
					   : -ENOENT;
	if (r == -ENOENT) {
		v->marker = NULL;
		r = 0;
	}
	if (r == 0)
		r = ipam_list(op, KIND_IPAMBLOCK, NULL, &v->blocks);
	if (r < 0) {
		ipam_claim_view_free(v);
		return r;
	}
	v->cidrs = xcalloc(v->blocks.n + 1, sizeof(*v->cidrs));
	for (size_t i = 0; i < v->blocks.n; i++)
		if (ipam_block_name_parse(v->blocks.v[i]->meta.name, &v->cidrs[i]) < 0)
			v->cidrs[i] = (struct br_cidr){ 0 };
	return 0;
}

/* A block of @v that overlaps @c (index), or -1. */
ssize_t ipam_view_overlap(const struct ipam_claim_view *v, const struct br_cidr *c)
{
	for (size_t i = 0; i < v->blocks.n; i++)
		if (v->cidrs[i].ip.family && cidr_overlaps(&v->cidrs[i], c))
			return (ssize_t)i;
	return -1;
}

/* The blocks of @v (CIDRs) that are not damaged, for ipam_pool_free_block. */
struct br_cidr *ipam_view_taken(const struct ipam_claim_view *v, size_t *n)
{
	struct br_cidr *t = xcalloc(v->blocks.n + 1, sizeof(*t));
	size_t m = 0;
	for (size_t i = 0; i < v->blocks.n; i++)
		if (v->cidrs[i].ip.family)
			t[m++] = v->cidrs[i];
	*n = m;
	return t;
}

/*
 * The claim's second phase where writes cannot be grouped (the Kubernetes
 * API), in Calico's order: @b created (-EEXIST: someone else's now), then
 * every block read again, and only then @a confirmed. A block that now
 * overlaps @b was created by a claim racing this one: this claim yields
 * (deletes @b while still unchanged, withdraws @a: -ECANCELED, decided
 * again). Of two racing claims at least one sees the other's block (each
 * reads after its own create), so two overlapping blocks are never both
 * confirmed; both may yield, and their jittered retries part them.
 * Stopped half way, the pending affinity is finished or withdrawn by the
 * node's next operation or a sweep (finish_claim, settle_pending).
 */
static int claim_without_txn(struct ipam_op *op, struct br_blockaffinity *a, struct br_ipamblock *b,
			     const struct br_cidr *c)
{
	int r = ds_create(op->d, &b->o);
	if (r < 0)
		return ipam_op_ds_error(op, r);
	ipam_step_done("claim-created");
	struct ipam_objs blocks;
	if ((r = ipam_list(op, KIND_IPAMBLOCK, NULL, &blocks)) < 0)
		return r;
	bool clash = false;
	for (size_t i = 0; i < blocks.n && !clash; i++) {
		struct br_cidr o;
		clash = !streq(blocks.v[i]->meta.name, b->o.meta.name) &&
			ipam_block_name_parse(blocks.v[i]->meta.name, &o) == 0 &&
			cidr_overlaps(&o, c);
	}
	ipam_objs_free(&blocks);
	if (clash) {
		r = ds_delete(op->d, b->o.kind, NULL, b->o.meta.name, b->o.revision);
		if (r < 0)
			return ipam_op_ds_error(op, r);
		return give_up_claim(op, a);
	}
	r = ipam_set_affinity_state(op, a, "confirmed");
	if (r == -ECANCELED || r == -ENOENT) {
		/*
		 * Withdrawn meanwhile (a sweep took it for stale): the block is
		 * nobody's. Deleted unless it changed since; then the next attempt
		 * or a sweep decides.
		 */
		int del = ds_delete(op->d, b->o.kind, NULL, b->o.meta.name, b->o.revision);
		(void)del;
	}
	return r;
}

/*
 * The claim's second phase, one transaction: @c's block created for @a's
 * node, @a confirmed (if still at the revision read), the claims marker of
 * @v moved (if still at the revision read). Any of them changed: nothing is
 * written (-ECANCELED, -EEXIST), and the claim is decided again. Without
 * transactions: claim_without_txn.
 */
static int create_claimed(struct ipam_op *op, struct ipam_claim_view *v, struct br_blockaffinity *a,
			  const struct br_cidr *c, bool strict, struct br_ipamblock **out)
{
	char name[IPAM_BLOCK_NAME_LEN];
	ipam_block_name(c, name);
	struct br_ipamblock *b =
		(struct br_ipamblock *)model_new(model_kind(KIND_IPAMBLOCK), NULL, name);
	ipam_block_init(b, c, a->spec.node, strict);
	if (!ds_has_transactions(op->d)) {
		int r = claim_without_txn(op, a, b, c);
		if (r < 0 || !out)
			model_free(&b->o);
		else
			*out = b;
		return r;
	}
	a->spec.state = arena_strdup(a->o.arena, "confirmed");
	enum ds_write_op mop = DS_WRITE_UPDATE;
	if (!v->marker) {
		v->marker = (struct br_ipamhandle *)model_new(model_kind(KIND_IPAMHANDLE), NULL,
							      IPAM_CLAIMS_MARKER);
		v->marker->spec.handle_id = arena_strdup(v->marker->o.arena, IPAM_CLAIMS_MARKER);
		mop = DS_WRITE_CREATE;
	}
	/* A count, so that the marker's value changes with every claim. */
	struct br_meta *m = &v->marker->o.meta;
	const char *was = labels_get(&m->annotations, IPAM_CLAIMS_ANNOTATION);
	char count[24];
	snprintf(count, sizeof(count), "%lld", (was ? atoll(was) : 0) + 1);
	labels_set(v->marker->o.arena, &m->annotations, IPAM_CLAIMS_ANNOTATION, count);
	struct ds_write w[3] = { { DS_WRITE_CREATE, &b->o },
				 { DS_WRITE_UPDATE, &a->o },
				 { mop, &v->marker->o } };
	int r = ds_write_seq(op->d, w, 3, NULL);
	if (r < 0 || !out) {
		model_free(&b->o);
		return r < 0 ? ipam_op_ds_error(op, r) : 0;
	}
	*out = b;
	return 0;
}

/*
 * Settle the claim of affinity @a (pending, or found in another state for a
 * block that does not exist): its block exists for the node (confirm it),
 * is another node's (withdraw), would overlap another block (withdraw), or
 * is created now with @a confirmed. @v: the view the claim was decided from,
 * read before @a was written; NULL to read one. Returns 0 when confirmed
 * (*block, optional, gets the block), -ECANCELED when withdrawn.
 */
int ipam_finish_claim(struct ipam_op *op, struct ipam_claim_view *v, struct br_blockaffinity *a,
		      bool strict, struct br_ipamblock **block)
{
	struct br_cidr c;
	if (ipam_block_name_parse(a->o.meta.name, &c) < 0)
		return -EINVAL;
	struct br_ipamblock *b = NULL;
	int r = ipam_get_block(op, a->o.meta.name, &b);
	if (r == 0) {
		char host[256];
		if (!streq(ipam_block_host(b, host, sizeof(host)), a->spec.node)) {
			model_free(&b->o);
			return give_up_claim(op, a);
		}
		r = streq(a->spec.state, "confirmed") ? 0
						      : ipam_set_affinity_state(op, a, "confirmed");
		if (r < 0 || !block)
			model_free(&b->o);
		else
			*block = b;
		return r;
	}
	if (r != -ENOENT)
		return r;
	struct ipam_claim_view own;
	if (!v) {
		if ((r = ipam_claim_view_read(op, &own)) < 0)
			return r;
		v = &own;
	}
	if (ipam_view_overlap(v, &c) >= 0) {
		r = give_up_claim(op, a);
	} else {
		ipam_step_done("claim-checked");
		r = create_claimed(op, v, a, &c, strict, block);
	}
	if (v == &own)
		ipam_claim_view_free(&own);
	return r;
}

/* Claim @c for @node, decided from @v: a pending affinity, then the block with it confirmed. */
int ipam_claim_cidr(struct ipam_op *op, struct ipam_claim_view *v, const struct br_cidr *c,
		    const char *node, bool strict, struct br_ipamblock **out)
{
	char name[IPAM_BLOCK_NAME_LEN], cbuf[CIDR_STRLEN];
	ipam_block_name(c, name);
	struct br_blockaffinity *a =
		(struct br_blockaffinity *)model_new(model_kind(KIND_BLOCKAFFINITY), NULL, name);
	a->spec.node = arena_strdup(a->o.arena, node);
	a->spec.cidr = arena_strdup(a->o.arena, cidr_str(c, cbuf));
	a->spec.state = "pending";
	int r = ds_create(op->d, &a->o);
	if (r == -EEXIST) {
		/*
		 * Ours from an earlier attempt (affinities are per node), or one whose
		 * block was just released: carry on with it; its revision guards it.
		 */
		model_free(&a->o);
		struct br_object *o = NULL;
		r = ds_get(op->d, model_kind(KIND_BLOCKAFFINITY), node, name, &o);
		a = (struct br_blockaffinity *)o;
	}
	if (r < 0) {
		if (a)
			model_free(&a->o);
		return ipam_op_ds_error(op, r);
	}
	ipam_step_done("claim-pending");
	r = ipam_finish_claim(op, v, a, strict, out);
	model_free(&a->o);
	return r;
}
