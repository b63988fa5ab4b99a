/*
 * IPAM's datastore protocol (the pure decisions are in lib/ipam_block.c).
 *
 * Every operation is a loop of attempts. An attempt reads what it needs,
 * decides, and writes with compare-and-swap; when a write loses a race
 * (-ECANCELED, -EEXIST, -ENOENT on something just read) or the datastore is
 * unreachable, the attempt is abandoned and the next one starts again from
 * reading, after a short jittered wait, until the deadline. Nothing is kept
 * between attempts, so an attempt may always start from a half-done
 * predecessor: a write whose answer was lost (etcd restarted after applying
 * it), a claim that stopped after its pending affinity. Each attempt begins
 * by recognising such leftovers:
 *  - assign: the handle already holds addresses → they are the answer;
 *  - a pending affinity of this node → finish the claim or withdraw it.
 * A block and the handle of its addresses change in one transaction, so an
 * address never exists without a handle that leads to it.
 */
#include <brindle/sys/ds.h>
#include <brindle/core/hash.h>
#include <brindle/sys/ipam.h>
#include <brindle/sys/clock.h>
#include "ipam_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ipam_cfg {
	bool strict;
	bool auto_allocate;
	int64_t max_blocks;
};

static int read_config(struct ipam_op *op, struct ipam_cfg *cfg)
{
	*cfg = (struct ipam_cfg){ .auto_allocate = true };
	struct br_object *o;
	int r = ds_get(op->d, model_kind(KIND_IPAMCONFIGURATION), NULL, "default", &o);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return ipam_op_ds_error(op, r);
	const struct br_ipamconfig *c = (const struct br_ipamconfig *)o;
	cfg->strict = c->spec.strict_affinity;
	cfg->auto_allocate = !c->spec.auto_allocate_blocks.set || c->spec.auto_allocate_blocks.v;
	cfg->max_blocks = c->spec.max_blocks_per_host.set ? c->spec.max_blocks_per_host.v : 0;
	model_free(o);
	return 0;
}

/* The node's labels (none when there is no Node resource, as with a bare runtime). */
static int read_node(struct ipam_op *op, const char *node, struct br_object **out)
{
	int r = ds_get(op->d, model_kind(KIND_NODE), NULL, node, out);
	if (r == -ENOENT) {
		*out = NULL;
		return 0;
	}
	return r < 0 ? ipam_op_ds_error(op, r) : 0;
}

static bool pool_named(const struct br_ippool *p, const char *want)
{
	if (streq(p->o.meta.name, want))
		return true;
	struct br_cidr a, b;
	if (cidr_parse(want, false, &a) < 0 || cidr_parse(p->spec.cidr, false, &b) < 0)
		return false;
	cidr_mask(&a);
	cidr_mask(&b);
	return cidr_cmp(&a, &b) == 0;
}

static int req_family(const struct ipam_request *req)
{
	return req->family ? req->family : AF_INET;
}

static const char *family_name(int family)
{
	return family == AF_INET6 ? "IPv6" : "IPv4";
}

/*
 * The pools of @req's family that serve @node, restricted to @req's list when it has one
 * (then an unknown or unusable name, or a pool of the other family, is an error). Pointers
 * into @all.
 */
static int usable_pools(struct ipam_op *op, const struct ipam_request *req,
			const struct ipam_objs *all, const struct br_labels *node_labels,
			const struct br_ippool ***out, size_t *n)
{
	const struct br_ippool **v = xcalloc(all->n + 1, sizeof(*v));
	size_t m = 0;
	for (size_t i = 0; i < req->n_pools; i++) {
		const struct br_ippool *found = NULL;
		for (size_t k = 0; k < all->n && !found; k++)
			if (pool_named((const struct br_ippool *)all->v[k], req->pools[i]))
				found = (const struct br_ippool *)all->v[k];
		sb_reset(op->err);
		if (!found) {
			sb_addf(op->err, "IP pool \"%s\" does not exist", req->pools[i]);
			free(v);
			return -EINVAL;
		}
		if (!ipam_pool_serves(found, node_labels, op->err)) {
			free(v);
			return -EINVAL;
		}
		struct br_cidr fc;
		if (cidr_parse(found->spec.cidr, false, &fc) < 0 ||
		    fc.ip.family != req_family(req)) {
			sb_addf(op->err, "IP pool \"%s\" (%s) is not an %s pool", req->pools[i],
				found->spec.cidr, family_name(req_family(req)));
			free(v);
			return -EINVAL;
		}
		v[m++] = found;
	}
	if (!req->n_pools) {
		for (size_t k = 0; k < all->n; k++) {
			const struct br_ippool *p = (const struct br_ippool *)all->v[k];
			struct br_cidr c;
			/* assignmentMode Manual: only for those who name it (Calico's rule). */
			if (p->spec.assignment_mode && streq(p->spec.assignment_mode, "Manual"))
				continue;
			if (!ipam_pool_serves_namespace(p, req->namespace_labels))
				continue;
			if (cidr_parse(p->spec.cidr, false, &c) == 0 &&
			    c.ip.family == req_family(req) &&
			    ipam_pool_serves(p, node_labels, NULL))
				v[m++] = p;
		}
	}
	*out = v;
	*n = m;
	return 0;
}

/* The first of @pools that holds all of @block, whatever its blockSize says today. */
static const struct br_ippool *pool_of_block(const struct br_ippool *const *pools, size_t n,
					     const struct br_cidr *block)
{
	for (size_t i = 0; i < n; i++) {
		struct br_cidr pc;
		if (cidr_parse(pools[i]->spec.cidr, false, &pc) < 0)
			continue;
		cidr_mask(&pc);
		if (cidr_contains(&pc, block))
			return pools[i];
	}
	return NULL;
}

/* --- handles ------------------------------------------------------------------------------ */

/*
 * After a handle was counted up for @block but the block's own write failed
 * (a datastore without transactions): count it down again, so the handle
 * does not outlive its addresses. Best effort: a count left over is
 * harmless (addresses are found through the blocks, and releasing the
 * handle deletes it) and ipam check reports it. Keeps op->err as it was.
 */
static void uncount_handle(struct ipam_op *op, const char *handle, const char *block, int64_t n)
{
	for (int i = 0; i < 3; i++) {
		struct br_object *o;
		if (ds_get(op->d, model_kind(KIND_IPAMHANDLE), NULL, handle, &o) < 0)
			return;
		struct br_ipamhandle *h = (struct br_ipamhandle *)o;
		ipam_handle_set(h, block, ipam_handle_count(h, block) - n);
		int r = h->spec.block.n ? ds_update(op->d, o)
					: ds_delete(op->d, o->kind, NULL, handle, o->revision);
		model_free(o);
		if (r != -ECANCELED)
			return;
	}
}

/*
 * Write @b together with @handle listing @b with @add more addresses: the
 * handle first, then the block (one transaction on etcd), so an address
 * never exists without the handle that leads to it. *@absent: the handle was
 * just seen not to exist, so it is created without reading it again (a
 * racing creator makes the write fail, and the attempt starts over);
 * cleared once it exists.
 */
static int commit_with_handle(struct ipam_op *op, const char *handle, struct br_ipamblock *b,
			      int64_t add, bool *absent)
{
	const char *block = b->o.meta.name;
	struct br_ipamhandle *h;
	int r = *absent ? -ENOENT : ipam_get_handle(op, handle, &h);
	enum ds_write_op hop = DS_WRITE_UPDATE;
	if (r == -ENOENT) {
		h = (struct br_ipamhandle *)model_new(model_kind(KIND_IPAMHANDLE), NULL, handle);
		h->spec.handle_id = arena_strdup(h->o.arena, handle);
		hop = DS_WRITE_CREATE;
	} else if (r < 0) {
		return r;
	}
	int64_t have = ipam_handle_count(h, block);
	ipam_handle_set(h, block, (have > 0 ? have : 0) + add);
	struct ds_write w[2] = { { hop, &h->o }, { DS_WRITE_UPDATE, &b->o } };
	size_t done;
	r = ds_write_seq(op->d, w, 2, &done);
	model_free(&h->o);
	if (done >= 1)
		*absent = false;
	if (r < 0) {
		r = ipam_op_ds_error(op, r);
		if (done == 1)
			uncount_handle(op, handle, block, add);
	}
	return r;
}

/* Addresses a handle holds, found through the blocks it lists. */
static int handle_ips(struct ipam_op *op, const struct br_ipamhandle *h, struct br_ip *out,
		      size_t max, size_t *n)
{
	size_t got = 0;
	for (size_t i = 0; i < h->spec.block.n; i++) {
		struct br_ipamblock *b;
		char name[IPAM_BLOCK_NAME_LEN];
		int r = ipam_get_block(op, ipam_handle_key_block(h->spec.block.v[i].key, name), &b);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		got += ipam_block_ips_of(b, h->spec.handle_id, out + MIN(got, max),
					 got < max ? max - got : 0);
		model_free(&b->o);
	}
	*n = MIN(got, max);
	return 0;
}

int ipam_handle_ips(struct ds *d, const char *handle, struct br_ip *out, size_t max, size_t *n,
		    struct strbuf *err)
{
	struct ipam_op op;
	ipam_op_init(&op, d, 0, err);
	for (;;) {
		struct br_ipamhandle *h;
		int r = ipam_get_handle(&op, handle, &h);
		if (r == -ENOENT) {
			*n = 0;
			return 0;
		}
		if (r == 0) {
			r = handle_ips(&op, h, out, max, n);
			model_free(&h->o);
			if (r == 0)
				return 0;
		}
		if (r == -ENOENT || !ipam_op_again(&op, r))
			return ipam_op_give_up(&op, r, "reading the handle");
	}
}

/* --- assigning ------------------------------------------------------------------------------ */

struct assign_ctx {
	const struct ipam_request *req;
	struct br_ipamblock *hinted; /* the request's block_hint, read fresh this attempt */
	struct ipam_cfg cfg;
	bool have_cfg;
	bool handle_absent;
	struct ipam_objs pools, affs;
	struct br_object *node;
	const struct br_ippool **usable;
	size_t n_usable;
	struct br_cidr *reserved_cidrs; /* IPReservations' reservedCIDRs */
	struct ipam_reserved reserved;
};

/* IPAMConfiguration matters only to claims and borrowing: read it when they come up. */
static int need_cfg(struct ipam_op *op, struct assign_ctx *c)
{
	if (c->have_cfg)
		return 0;
	int r = read_config(op, &c->cfg);
	c->have_cfg = r == 0;
	return r;
}

/* The reserved addresses of IPReservations @objs (which are freed). */
static void reserved_of(struct assign_ctx *c, struct br_object **objs, size_t n)
{
	size_t total = 0, k = 0;
	for (size_t i = 0; i < n; i++)
		total += ((struct br_ipreservation *)objs[i])->spec.n_reserved_cidrs;
	c->reserved_cidrs = total ? xcalloc(total, sizeof(*c->reserved_cidrs)) : NULL;
	for (size_t i = 0; i < n; i++) {
		const struct br_ipreservation_spec *s = &((struct br_ipreservation *)objs[i])->spec;
		for (size_t j = 0; j < s->n_reserved_cidrs; j++)
			if (cidr_parse(s->reserved_cidrs[j], true, &c->reserved_cidrs[k]) == 0) {
				cidr_mask(&c->reserved_cidrs[k]);
				k++;
			}
	}
	c->reserved = (struct ipam_reserved){ c->reserved_cidrs, k };
	model_free_all(objs, n);
}

/* Take one address from @b for the request; the handle first, then the block. */
static int assign_from(struct ipam_op *op, struct assign_ctx *c, struct br_ipamblock *b,
		       struct ipam_assigned *out)
{
	const struct ipam_request *req = c->req;
	struct br_ip ip;
	if (ipam_block_assign(b, req->handle, req->secondary, &c->reserved, &ip) < 0)
		return -ENOSPC;
	int r = commit_with_handle(op, req->handle, b, 1, &c->handle_absent);
	if (r == 0 && !out->n)
		snprintf(out->block, sizeof(out->block), "%s", b->o.meta.name);
	if (r == 0)
		out->ips[out->n++] = ip;
	return r;
}

static uint64_t node_hash(const char *node)
{
	uint8_t d[32];
	hash_digest(HASH_SHA1, node, strlen(node), d);
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | d[i];
	return v;
}

static void set_pool(struct ipam_assigned *out, const struct br_ippool *p)
{
	if (p && !out->pool[0])
		snprintf(out->pool, sizeof(out->pool), "%s", p->o.meta.name);
}

/* From the node's own confirmed blocks; leftover pending claims are settled first. */
static int assign_affine(struct ipam_op *op, struct assign_ctx *c, struct ipam_assigned *out,
			 size_t *n_confirmed)
{
	*n_confirmed = 0;
	for (size_t i = 0; i < c->affs.n; i++) {
		struct br_blockaffinity *a = (struct br_blockaffinity *)c->affs.v[i];
		if (streq(a->spec.state, "pending")) {
			int r = need_cfg(op, c);
			if (r == 0)
				r = ipam_finish_claim(op, NULL, a, c->cfg.strict, NULL);
			if (r < 0)
				return r == -ECANCELED ? -EAGAIN : r;
			/* Confirmed now; its revision moved, so read everything again. */
			return -EAGAIN;
		}
	}
	for (size_t i = 0; i < c->affs.n; i++) {
		struct br_blockaffinity *a = (struct br_blockaffinity *)c->affs.v[i];
		struct br_cidr bc;
		if (!streq(a->spec.state, "confirmed") ||
		    ipam_block_name_parse(a->o.meta.name, &bc) < 0 ||
		    bc.ip.family != req_family(c->req))
			continue; /* (the node's blocks of the other family count for it alone) */
		(*n_confirmed)++;
		const struct br_ippool *p = pool_of_block(c->usable, c->n_usable, &bc);
		if (!p)
			continue;
		struct br_ipamblock *b = c->hinted;
		int r = 0;
		if (b && streq(b->o.meta.name, a->o.meta.name))
			c->hinted = NULL; /* read with the first round: taken */
		else
			r = ipam_get_block(op, a->o.meta.name, &b);
		if (r == -ENOENT || r == -EUCLEAN)
			continue; /* being released, or damaged: ipam check reports it */
		if (r < 0)
			return r;
		char host[256];
		if (!ipam_block_free_unreserved(b, &c->reserved) ||
		    !streq(ipam_block_host(b, host, sizeof(host)), c->req->node)) {
			model_free(&b->o);
			continue;
		}
		r = assign_from(op, c, b, out);
		model_free(&b->o);
		if (r == 0)
			set_pool(out, p);
		return r;
	}
	return -ENOSPC;
}

/* Claim the first block of a usable pool that overlaps no existing block. */
static int assign_new_block(struct ipam_op *op, struct assign_ctx *c, struct ipam_assigned *out)
{
	struct ipam_claim_view v;
	int r = ipam_claim_view_read(op, &v);
	if (r < 0)
		return r;
	size_t nt;
	struct br_cidr *taken = ipam_view_taken(&v, &nt);
	r = -ENOSPC;
	for (size_t i = 0; i < c->n_usable && r == -ENOSPC; i++) {
		struct br_cidr bc;
		/* Past blocks whose every address is reserved: no use to anyone's ADD. */
		int f;
		while ((f = ipam_pool_free_block(c->usable[i], taken, nt, &bc)) == 0 &&
		       ipam_block_all_reserved(&bc, &c->reserved)) {
			taken = xrealloc(taken, (nt + 1) * sizeof(*taken));
			taken[nt++] = bc;
		}
		if (f < 0)
			continue;
		ipam_step_done("claim-listed");
		struct br_ipamblock *b;
		r = ipam_claim_cidr(op, &v, &bc, c->req->node, c->cfg.strict, &b);
		if (r < 0) {
			r = r == -ECANCELED ? -EAGAIN : r;
			break;
		}
		r = assign_from(op, c, b, out);
		model_free(&b->o);
		if (r == 0)
			set_pool(out, c->usable[i]);
	}
	free(taken);
	ipam_claim_view_free(&v);
	return r;
}

/*
 * Borrow from any block of a usable pool, scanning from a node-dependent
 * start. A block that overlaps another (made before overlaps were refused)
 * is left alone: its addresses may be the other block's too.
 */
static int assign_borrowed(struct ipam_op *op, struct assign_ctx *c, struct ipam_assigned *out)
{
	struct ipam_objs blocks = { 0 };
	int r = ipam_list(op, KIND_IPAMBLOCK, NULL, &blocks);
	if (r < 0)
		return r;
	struct br_cidr *cidrs = xcalloc(blocks.n + 1, sizeof(*cidrs));
	bool *valid = xcalloc(blocks.n + 1, sizeof(*valid));
	for (size_t i = 0; i < blocks.n; i++)
		valid[i] = ipam_block_validate((struct br_ipamblock *)blocks.v[i], &cidrs[i],
					       NULL) == 0;
	struct ipam_pair *pairs;
	size_t np = ipam_overlaps(cidrs, blocks.n, &pairs);
	for (size_t i = 0; i < np; i++)
		valid[pairs[i].i] = valid[pairs[i].j] = false;
	free(pairs);
	r = -ENOSPC;
	size_t start = blocks.n ? (size_t)(node_hash(c->req->node) % blocks.n) : 0;
	for (size_t k = 0; k < blocks.n; k++) {
		size_t i = (start + k) % blocks.n;
		struct br_ipamblock *b = (struct br_ipamblock *)blocks.v[i];
		if (!valid[i] || !ipam_block_free_unreserved(b, &c->reserved))
			continue;
		const struct br_ippool *p = pool_of_block(c->usable, c->n_usable, &cidrs[i]);
		if (!p)
			continue;
		r = assign_from(op, c, b, out);
		if (r == 0)
			set_pool(out, p);
		break;
	}
	free(cidrs);
	free(valid);
	ipam_objs_free(&blocks);
	return r;
}

/*
 * The existing block for requested address @ip, in @v: -ENOENT when there
 * is none, -EINVAL (with the reason) when blocks that overlap both hold it.
 */
static int requested_block(struct ipam_op *op, const struct ipam_claim_view *v,
			   const struct br_ip *ip, struct br_ipamblock **out)
{
	struct br_ipamblock *found = NULL;
	for (size_t i = 0; i < v->blocks.n; i++) {
		if (!v->cidrs[i].ip.family || !cidr_contains_ip(&v->cidrs[i], ip))
			continue;
		if (found) {
			char ipb[IP_STRLEN];
			sb_reset(op->err);
			sb_addf(op->err,
				"requested address %s is in blocks %s and %s, which overlap "
				"(see brindlectl ipam check)",
				ip_str(ip, ipb), found->o.meta.name, v->blocks.v[i]->meta.name);
			return -EINVAL;
		}
		found = (struct br_ipamblock *)v->blocks.v[i];
	}
	if (!found)
		return -ENOENT;
	/* Read again: the view's copy is shared by the other requested addresses. */
	return ipam_get_block(op, found->o.meta.name, out);
}

/*
 * The block to claim for requested address @ip: of the first pool that
 * holds @ip and serves the node whose block for it overlaps no existing
 * block. -EINVAL with the reason when there is none.
 */
static int requested_claim(struct ipam_op *op, struct assign_ctx *c,
			   const struct ipam_claim_view *v, const struct br_ip *ip,
			   struct br_cidr *out, const struct br_ippool **pool)
{
	const struct br_labels *nl = c->node ? &c->node->meta.labels : NULL;
	char ipb[IP_STRLEN];
	bool in_pool = false, serves = false;
	ssize_t clash = -1;
	sb_reset(op->err);
	for (size_t i = 0; i < c->pools.n; i++) {
		const struct br_ippool *p = (const struct br_ippool *)c->pools.v[i];
		struct br_cidr bc;
		if (ipam_pool_block_of(p, ip, &bc) < 0)
			continue;
		/* Why the first pool that holds it does not serve the node, if none does. */
		struct strbuf *why = in_pool ? NULL : op->err;
		in_pool = true;
		if (!ipam_pool_serves(p, nl, why))
			continue;
		serves = true;
		ssize_t o = ipam_view_overlap(v, &bc);
		if (o < 0) {
			sb_reset(op->err);
			*out = bc;
			*pool = p;
			return 0;
		}
		clash = o;
	}
	if (!in_pool) {
		sb_reset(op->err);
		sb_addf(op->err, "requested address %s is in no IP pool", ip_str(ip, ipb));
	} else if (!serves) {
		sb_addf(op->err, " (requested address %s)", ip_str(ip, ipb));
	} else {
		sb_reset(op->err);
		sb_addf(op->err,
			"requested address %s: its block in every pool that holds it would "
			"overlap block %s",
			ip_str(ip, ipb), v->blocks.v[clash]->meta.name);
	}
	return -EINVAL;
}

static int assign_requested(struct ipam_op *op, struct assign_ctx *c, struct ipam_assigned *out)
{
	const struct ipam_request *req = c->req;
	const struct br_labels *nl = c->node ? &c->node->meta.labels : NULL;
	int r = need_cfg(op, c);
	if (r < 0)
		return r;
	for (size_t i = 0; i < req->n_ips; i++) {
		char ipb[IP_STRLEN], host[256];
		const struct br_ip *ip = &req->ips[i];
		bool held = false;
		for (size_t k = 0; k < out->n; k++)
			held |= ip_equal(&out->ips[k], ip);
		if (held)
			continue;
		/* Read per address: a block claimed for the previous one is in the next view. */
		struct ipam_claim_view v;
		if ((r = ipam_claim_view_read(op, &v)) < 0)
			return r;
		struct br_ipamblock *b = NULL;
		const struct br_ippool *p = NULL;
		r = requested_block(op, &v, ip, &b);
		if (r == 0) {
			struct br_cidr bc;
			r = ipam_block_name_parse(b->o.meta.name, &bc);
			for (size_t k = 0; k < c->pools.n && r == 0 && !p; k++) {
				const struct br_ippool *q = (const struct br_ippool *)c->pools.v[k];
				if (pool_of_block(&q, 1, &bc))
					p = q;
			}
			sb_reset(op->err);
			if (!p) {
				sb_addf(op->err, "requested address %s is in no IP pool",
					ip_str(ip, ipb));
				r = -EINVAL;
			} else if (!ipam_pool_serves(p, nl, op->err)) {
				sb_addf(op->err, " (requested address %s)", ip_str(ip, ipb));
				r = -EINVAL;
			}
		} else if (r == -ENOENT) {
			/* Nobody has a block for it yet: claim one for this node. */
			struct br_cidr bc;
			r = requested_claim(op, c, &v, ip, &bc, &p);
			if (r == 0) {
				ipam_step_done("claim-listed");
				r = ipam_claim_cidr(op, &v, &bc, req->node, c->cfg.strict, &b);
				if (r == -ECANCELED)
					r = -EAGAIN;
			}
		}
		ipam_claim_view_free(&v);
		if (r < 0) {
			model_free(b ? &b->o : NULL);
			return r;
		}
		const char *owner = ipam_block_host(b, host, sizeof(host));
		if (c->cfg.strict && owner && !streq(owner, req->node)) {
			sb_reset(op->err);
			sb_addf(op->err,
				"requested address %s is in block %s of node %s, and "
				"StrictAffinity forbids borrowing",
				ip_str(ip, ipb), b->o.meta.name, owner);
			model_free(&b->o);
			return -EINVAL;
		}
		r = ipam_block_assign_ip(b, ip, req->handle, req->secondary);
		if (r == -EADDRINUSE) {
			sb_reset(op->err);
			sb_addf(op->err, "requested address %s is already in use (handle %s)",
				ip_str(ip, ipb), ipam_block_handle_of(b, ip));
			model_free(&b->o);
			return r;
		}
		if (r == 0)
			r = commit_with_handle(op, req->handle, b, 1, &c->handle_absent);
		model_free(&b->o);
		if (r < 0)
			return r;
		out->ips[out->n++] = *ip;
		set_pool(out, p);
	}
	return 0;
}

/* Whether every pool selects all nodes, so the Node's labels need not be read. */
static bool selectors_trivial(const struct ipam_objs *pools)
{
	for (size_t i = 0; i < pools->n; i++) {
		const char *s = ((const struct br_ippool *)pools->v[i])->spec.node_selector;
		while (s && (*s == ' ' || *s == '\t'))
			s++;
		if (s && *s && !str_has_prefix(s, "all()"))
			return false;
		if (s && *s && s[strspn(s + 5, " \t") + 5])
			return false;
	}
	return true;
}

static void assign_ctx_free(struct assign_ctx *c)
{
	ipam_objs_free(&c->pools);
	ipam_objs_free(&c->affs);
	model_free(c->node);
	c->node = NULL;
	if (c->hinted)
		model_free(&c->hinted->o);
	c->hinted = NULL;
	free(c->usable);
	c->usable = NULL;
	free(c->reserved_cidrs);
	c->reserved_cidrs = NULL;
}

/* The hinted block as read with the first round, when it is one to use. */
static struct br_ipamblock *hinted_block(struct ds_read *rd)
{
	if (!rd->obj)
		return NULL;
	struct br_ipamblock *b = (struct br_ipamblock *)rd->obj;
	rd->obj = NULL;
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	bool ok = ipam_block_validate(b, NULL, &why) == 0;
	sb_free(&why);
	if (ok)
		return b;
	model_free(&b->o); /* read again on its own, which reports what is wrong with it */
	return NULL;
}

/* What any request must be, and what a caller's prepare may not break. */
static int check_request(const struct ipam_request *req, struct strbuf *err)
{
	if (!req->handle || !*req->handle || strchr(req->handle, '/') || !req->node ||
	    !*req->node || strchr(req->node, '/')) {
		sb_addf(err, "invalid handle or node name");
		return -EINVAL;
	}
	if (req->n_ips > IPAM_MAX_IPS) {
		sb_addf(err, "at most %d addresses per request", IPAM_MAX_IPS);
		return -EINVAL;
	}
	if (req->family && req->family != AF_INET && req->family != AF_INET6) {
		sb_addf(err, "address family %d: IPv4 or IPv6 only", req->family);
		return -EINVAL;
	}
	for (size_t i = 0; i < req->n_ips; i++)
		if (req->ips[i].family != req_family(req)) {
			char b[IP_STRLEN];
			sb_addf(err, "requested address %s is not an %s address",
				ip_str(&req->ips[i], b), family_name(req_family(req)));
			return -EINVAL;
		}
	if (req->n_also && !req->prepare) {
		sb_addf(err, "reads of the caller's without a prepare to see them");
		return -EINVAL;
	}
	return 0;
}

static int assign_attempt(struct ipam_op *op, struct ipam_request *req, struct ipam_assigned *out)
{
	*out = (struct ipam_assigned){ 0 };
	/*
	 * What the attempt decides from, read at once (one round trip on Kubernetes).
	 * The first attempt takes the pools and the node's affinities from the API
	 * server's cache (no wait for it to catch up after the last write): enough to
	 * assign from a block the node has, which is read fresh and written with
	 * compare-and-swap. Anything else (claiming a block, no pool) is decided
	 * again from fresh lists (-ESTALE). The reservations come from the cache too
	 * (see ds_read.cached): one made in the last moment is a race in any IPAM.
	 * The hinted block and the caller's reads join the first round.
	 */
	bool first = op->attempt == 0 && !op->fresh;
	bool cached = first && !req->n_ips;
	bool hint = first && req->block_hint && *req->block_hint;
	/* IPAM's four reads, the hinted block's, then the caller's. */
	enum {
		HANDLE,
		POOLS,
		AFFS,
		RESERVED,
		HINT
	};
	size_t n_also = req->n_also, n_own = HINT + hint;
	struct ds_read *rd = xcalloc(n_own + n_also, sizeof(*rd));
	rd[HANDLE] = (struct ds_read){ .kind = model_kind(KIND_IPAMHANDLE), .name = req->handle };
	rd[POOLS] = (struct ds_read){ .kind = model_kind(KIND_IPPOOL), .cached = cached };
	rd[AFFS] = (struct ds_read){ .kind = model_kind(KIND_BLOCKAFFINITY),
				     .scope = req->node,
				     .cached = cached };
	rd[RESERVED] = (struct ds_read){ .kind = model_kind(KIND_IPRESERVATION), .cached = cached };
	if (hint)
		rd[HINT] = (struct ds_read){ .kind = model_kind(KIND_IPAMBLOCK),
					     .name = req->block_hint };
	struct ds_read *also = rd + n_own;
	if (n_also)
		memcpy(also, req->also, n_also * sizeof(*rd));
	ds_read_many(op->d, rd, n_own + n_also);
	/* The caller's reads are its own, whatever became of IPAM's: asked once. */
	int r = 0;
	if (n_also) {
		memcpy(req->also, also, n_also * sizeof(*rd));
		req->n_also = 0;
		r = req->prepare(req->prepare_ctx, req->also, n_also, req);
		if (r == 0)
			r = check_request(req, op->err);
		if (r < 0)
			op->stop = true;
		else if (cached && req->n_ips)
			r = -ESTALE; /* addresses of the pod's own: decided from fresh lists */
	}
	/* A cluster whose CRDs predate IPReservation has none. */
	if (rd[RESERVED].err == -ENOENT)
		rd[RESERVED].err = 0;
	struct assign_ctx c = { .req = req,
				.handle_absent = rd[HANDLE].err == -ENOENT,
				.hinted = hint ? hinted_block(&rd[HINT]) : NULL,
				.pools = { rd[POOLS].objs, rd[POOLS].n },
				.affs = { rd[AFFS].objs, rd[AFFS].n } };
	reserved_of(&c, rd[RESERVED].objs, rd[RESERVED].n);
	struct br_object *handle = rd[HANDLE].obj;
	if (r == 0)
		r = rd[HANDLE].err == -ENOENT ? 0 : rd[HANDLE].err;
	for (size_t i = POOLS; i <= AFFS && r == 0; i++)
		r = rd[i].err;
	if (r == 0)
		r = rd[RESERVED].err;
	free(rd);
	if (r < 0) {
		model_free(handle);
		if (r != -ESTALE && !op->stop)
			r = ipam_op_ds_error(op, r);
		goto out;
	}
	size_t want = req->n_ips ? req->n_ips : 1;
	/* A handle that already holds addresses: a retried ADD gets them back. */
	if (handle) {
		struct br_ipamhandle *h = (struct br_ipamhandle *)handle;
		r = handle_ips(op, h, out->ips, ARRAY_SIZE(out->ips), &out->n);
		model_free(&h->o);
		/* those of the other family are another request's (a dual-stack ADD) */
		size_t kept = 0;
		for (size_t i = 0; i < out->n; i++)
			if (out->ips[i].family == req_family(req))
				out->ips[kept++] = out->ips[i];
		out->n = kept;
		out->held = out->n;
		if (r == 0 && out->n >= want)
			out->reused = true;
		if (r < 0 || out->reused)
			goto out;
	}
	if (!selectors_trivial(&c.pools))
		r = read_node(op, req->node, &c.node);
	if (r == 0)
		r = usable_pools(op, req, &c.pools, c.node ? &c.node->meta.labels : NULL, &c.usable,
				 &c.n_usable);
	/* A named pool missing or not serving the node in a cached list may be a moment
	 * old (just created or changed): decided again from fresh lists. */
	if (r == -EINVAL && cached)
		r = -ESTALE;
	if (r < 0)
		goto out;
	if (req->n_ips) {
		r = assign_requested(op, &c, out);
		goto out;
	}
	if (!c.n_usable && cached) {
		r = -ESTALE;
		goto out;
	}
	if (!c.n_usable) {
		sb_reset(op->err);
		sb_addf(op->err, "no IP pool serves node %s", req->node);
		r = -ENOSPC;
		goto out;
	}
	size_t n_confirmed;
	r = assign_affine(op, &c, out, &n_confirmed);
	if (r != -ENOSPC)
		goto out;
	if (cached) {
		r = -ESTALE;
		goto out;
	}
	if ((r = need_cfg(op, &c)) < 0)
		goto out;
	if (c.cfg.auto_allocate &&
	    (c.cfg.max_blocks <= 0 || (int64_t)n_confirmed < c.cfg.max_blocks)) {
		r = assign_new_block(op, &c, out);
		if (r != -ENOSPC)
			goto out;
	}
	if (!c.cfg.strict) {
		r = assign_borrowed(op, &c, out);
		if (r != -ENOSPC)
			goto out;
	}
	sb_reset(op->err);
	sb_addf(op->err, "no free address for node %s: %s", req->node,
		c.cfg.strict ? "its blocks are full, no block can be claimed, and StrictAffinity "
			       "forbids borrowing from other nodes"
			     : "every block of the usable pools is full");
	r = -ENOSPC;
out:
	assign_ctx_free(&c);
	return r;
}

int ipam_assign(struct ds *d, const struct ipam_request *req, struct ipam_assigned *out,
		struct strbuf *err)
{
	int r = check_request(req, err);
	if (r < 0)
		return r;
	struct ipam_request rq = *req; /* the caller's prepare may change it */
	struct ipam_op op;
	ipam_op_init(&op, d, req->timeout_ms, err);
	for (;;) {
		r = assign_attempt(&op, &rq, out);
		if (r == 0)
			return 0;
		if (op.stop)
			return r;
		if (r == -ESTALE) { /* decided from cached lists: again from fresh ones, at once */
			op.fresh = true;
			continue;
		}
		if (r == -ENOSPC || r == -EINVAL || r == -EADDRINUSE || r == -EUCLEAN)
			return r;
		if (!ipam_op_again(&op, r))
			return ipam_op_give_up(&op, r, "assigning an address");
	}
}
