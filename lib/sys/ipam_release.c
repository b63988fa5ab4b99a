/*
 * IPAM's releases: an address by handle or by hand, and the sweep of empty
 * blocks, orphaned blocks and interrupted claims. The attempt loop and the
 * reads and writes are ipam.c's (ipam_internal.h).
 */
#include "ipam_internal.h"
#include <brindle/sys/clock.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- releasing ------------------------------------------------------------------------------ */

/*
 * Every block of the handle freed, then the handle deleted (one transaction
 * on etcd). Stopped half way, the handle still leads to what is left.
 */
static int release_attempt(struct ipam_op *op, const char *handle, int64_t now, size_t *released)
{
	struct br_ipamhandle *h;
	int r = ipam_get_handle(op, handle, &h);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	size_t nb = h->spec.block.n, nw = 0, n = 0;
	struct br_ipamblock **blocks = xcalloc(nb + 1, sizeof(*blocks));
	struct ds_write *w = xcalloc(nb + 1, sizeof(*w));
	for (size_t i = 0; i < nb && r == 0; i++) {
		struct br_ipamblock *b;
		char name[IPAM_BLOCK_NAME_LEN];
		r = ipam_get_block(op, ipam_handle_key_block(h->spec.block.v[i].key, name), &b);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		blocks[i] = b;
		size_t k = ipam_block_release_handle(b, handle, now);
		if (k) {
			w[nw++] = (struct ds_write){ DS_WRITE_UPDATE, &b->o };
			n += k;
		}
	}
	if (r == 0) {
		w[nw++] = (struct ds_write){ DS_WRITE_DELETE, &h->o };
		r = ds_write_seq(op->d, w, nw, NULL);
		if (r < 0)
			r = ipam_op_ds_error(op, r);
		else
			*released += n;
	}
	for (size_t i = 0; i < nb; i++)
		model_free(blocks[i] ? &blocks[i]->o : NULL);
	free(blocks);
	free(w);
	model_free(&h->o);
	return r;
}

int ipam_release_handle(struct ds *d, const char *handle, int64_t now, long timeout_ms,
			size_t *released, struct strbuf *err)
{
	struct ipam_op op;
	size_t n = 0;
	if (!handle || !*handle || strchr(handle, '/')) {
		sb_addf(err, "invalid handle");
		return -EINVAL;
	}
	ipam_op_init(&op, d, timeout_ms, err);
	for (;;) {
		int r = release_attempt(&op, handle, now, &n);
		if (r == 0) {
			if (released)
				*released = n;
			return 0;
		}
		if (!ipam_op_again(&op, r))
			return ipam_op_give_up(&op, r, "releasing the handle");
	}
}

/*
 * Free @ip in @b (read just now), then count it off its handle (one
 * transaction on etcd); the handle goes when it holds nothing more. *hid
 * gets the handle (caller frees).
 */
static int release_in_block(struct ipam_op *op, struct br_ipamblock *b, const struct br_ip *ip,
			    int64_t now, char **hid)
{
	const char *h = NULL;
	int r = ipam_block_release_ip(b, ip, now, &h);
	if (r < 0)
		return r == -ENOENT ? -ECANCELED : r; /* freed since it was read */
	*hid = xstrdup(h);
	struct br_ipamhandle *hd = NULL;
	r = ipam_get_handle(op, *hid, &hd);
	if (r < 0 && r != -ENOENT)
		return r;
	struct ds_write w[2] = { { DS_WRITE_UPDATE, &b->o } };
	size_t nw = 1;
	if (hd) {
		ipam_handle_set(hd, b->o.meta.name, ipam_handle_count(hd, b->o.meta.name) - 1);
		w[nw++] = (struct ds_write){ hd->spec.block.n ? DS_WRITE_UPDATE : DS_WRITE_DELETE,
					     &hd->o };
	}
	r = ds_write_seq(op->d, w, nw, NULL);
	model_free(hd ? &hd->o : NULL);
	return r < 0 ? ipam_op_ds_error(op, r) : 0;
}

/*
 * Every block that holds @ip for @holder (anyone when NULL). -ENXIO when no
 * block holds it, -EBUSY (*busy: the holder) when only others do.
 */
static int release_ip_attempt(struct ipam_op *op, const struct br_ip *ip, const char *holder,
			      int64_t now, char **handle, char **busy)
{
	struct ipam_objs blocks = { 0 };
	int r = ipam_list(op, KIND_IPAMBLOCK, NULL, &blocks);
	if (r < 0)
		return r;
	size_t done = 0;
	for (size_t i = 0; i < blocks.n && r == 0; i++) {
		struct br_ipamblock *b = (struct br_ipamblock *)blocks.v[i];
		struct br_cidr c;
		if (ipam_block_name_parse(b->o.meta.name, &c) < 0 || !cidr_contains_ip(&c, ip))
			continue;
		sb_reset(op->err);
		if (ipam_block_validate(b, NULL, op->err) < 0) {
			r = -EUCLEAN;
			break;
		}
		const char *h = ipam_block_handle_of(b, ip);
		if (!h)
			continue;
		if (holder && !streq(h, holder)) {
			free(*busy);
			*busy = xstrdup(h);
			continue;
		}
		char *hid = NULL;
		r = release_in_block(op, b, ip, now, &hid);
		if (r == 0 && !done++ && handle) {
			free(*handle);
			*handle = hid;
			hid = NULL;
		}
		free(hid);
	}
	ipam_objs_free(&blocks);
	if (r == 0 && !done)
		r = *busy ? -EBUSY : -ENXIO;
	return r;
}

int ipam_release_ip(struct ds *d, const struct br_ip *ip, const char *holder, int64_t now,
		    char **handle, struct strbuf *err)
{
	struct ipam_op op;
	ipam_op_init(&op, d, 0, err);
	char *got = NULL, *busy = NULL;
	for (;;) {
		free(busy);
		busy = NULL;
		int r = release_ip_attempt(&op, ip, holder, now, &got, &busy);
		char b[IP_STRLEN];
		if (r == -ENXIO || r == -EBUSY) {
			/* An earlier attempt may have done it, its answer lost. */
			if (got)
				r = 0;
			sb_reset(err);
			if (r == -ENXIO)
				sb_addf(err, "%s is not assigned", ip_str(ip, b));
			else if (r == -EBUSY)
				sb_addf(err, "%s is now held by handle %s, not %s", ip_str(ip, b),
					busy, holder);
			r = r == -ENXIO ? -ENOENT : r;
		}
		if (r == 0 || !ipam_op_again(&op, r)) {
			free(busy);
			if (r == 0 && handle)
				*handle = got;
			else
				free(got);
			return r == 0 || r == -ENOENT || r == -EBUSY || r == -EUCLEAN
				       ? r
				       : ipam_op_give_up(&op, r, "releasing the address");
		}
	}
}

/* --- empty blocks, orphans and pending claims ------------------------------------------------ */

struct sweep {
	struct ipam_op *op;
	const struct ipam_sweep *s;
	struct ipam_swept *out;
	struct ipam_objs blocks, affs; /* blocks: all (without by_node) */
	bool *overlapped;	       /* per block: it overlaps another */
};

static bool sweep_overlapped(const struct sweep *w, const char *block)
{
	for (size_t i = 0; i < w->blocks.n; i++)
		if (streq(w->blocks.v[i]->meta.name, block))
			return w->overlapped[i];
	return false;
}

/* "2006-01-02T15:04:05Z" → seconds; -1 when it is not that. */
static int64_t parse_time(const char *s)
{
	struct tm tm = { 0 };
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
	return end && !*end ? (int64_t)timegm(&tm) : -1;
}

/*
 * A pending claim is stale — no claim in progress will finish it — when its
 * node sweeps (its own claims run under the same host lock, and a racing one
 * only loses its compare-and-swap), when its node has no Node resource, or
 * when it is older than the grace period (a claim takes seconds).
 */
static int pending_stale(struct sweep *w, const struct br_blockaffinity *a, bool *stale)
{
	const struct ipam_sweep *s = w->s;
	if (s->by_node && streq(s->node, a->spec.node)) {
		*stale = true;
		return 0;
	}
	int64_t born = parse_time(a->o.meta.creation_timestamp);
	if (born < 0 || s->now - born >= s->grace_s) {
		*stale = true;
		return 0;
	}
	struct br_object *n;
	int r = ds_get(w->op->d, model_kind(KIND_NODE), NULL, a->spec.node, &n);
	if (r == -ENOENT) {
		*stale = true;
		return 0;
	}
	if (r < 0)
		return ipam_op_ds_error(w->op, r);
	model_free(n);
	*stale = false;
	return 0;
}

/* Withdraw a stale pending claim, or confirm it when its block is the node's already. */
static int settle_pending(struct sweep *w, struct br_blockaffinity *a)
{
	bool stale = false;
	int r = pending_stale(w, a, &stale);
	if (r < 0 || !stale)
		return r;
	struct br_ipamblock *b;
	r = ipam_get_block(w->op, a->o.meta.name, &b);
	if (r == -ENOENT) {
		r = ipam_withdraw(w->op, a);
	} else if (r == 0) {
		char host[256];
		r = streq(ipam_block_host(b, host, sizeof(host)), a->spec.node)
			    ? ipam_set_affinity_state(w->op, a, "confirmed")
			    : ipam_withdraw(w->op, a);
		model_free(&b->o);
	}
	if (r == 0)
		w->out->claims++;
	return r;
}

static int sweep_one(struct sweep *w, struct br_blockaffinity *a)
{
	struct ipam_op *op = w->op;
	const struct ipam_sweep *s = w->s;
	if (streq(a->spec.state, "pending"))
		return settle_pending(w, a);
	struct br_ipamblock *b;
	int r = ipam_get_block(op, a->o.meta.name, &b);
	char host[256];
	if (r == -ENOENT ||
	    (r == 0 && !streq(ipam_block_host(b, host, sizeof(host)), a->spec.node))) {
		/* Nothing to route (or a lost claim's leftover: the block is another's). */
		if (r == 0)
			model_free(&b->o);
		return ipam_withdraw(op, a);
	}
	if (r < 0)
		return r;
	if (ipam_block_used(b) > 0) {
		r = streq(a->spec.state, "pendingDeletion")
			    ? ipam_set_affinity_state(op, a, "confirmed")
			    : 0;
		model_free(&b->o);
		return r;
	}
	/* An empty block overlapping another goes at once: it must not hand out addresses. */
	bool at_once = sweep_overlapped(w, b->o.meta.name);
	int64_t since = ipam_block_empty_since(b);
	if (!at_once && since < 0) {
		ipam_block_mark_empty(b, s->now);
		r = ipam_commit_block(op, b);
		model_free(&b->o);
		return r;
	}
	if (!at_once && s->now - since < s->grace_s) {
		model_free(&b->o);
		return 0;
	}
	/*
	 * Withdraw the route first, then the block and the claim if both are
	 * unchanged (one transaction on etcd; the block first elsewhere: an
	 * affinity left without its block is withdrawn by the next sweep).
	 */
	ipam_step_done("sweep-decided");
	if (!streq(a->spec.state, "pendingDeletion"))
		r = ipam_set_affinity_state(op, a, "pendingDeletion");
	if (r == 0) {
		ipam_step_done("sweep-withdrawn");
		struct ds_write wr[2] = { { DS_WRITE_DELETE, &b->o }, { DS_WRITE_DELETE, &a->o } };
		r = ds_write_seq(op->d, wr, 2, NULL);
		r = r < 0 ? ipam_op_ds_error(op, r) : 0;
		if (r == 0)
			w->out->empty++;
	}
	model_free(&b->o);
	return r;
}

/* Whether @w's affinities include @node's for @block. */
static bool sweep_has_affinity(const struct sweep *w, const char *node, const char *block)
{
	for (size_t i = 0; i < w->affs.n; i++) {
		const struct br_blockaffinity *a = (const struct br_blockaffinity *)w->affs.v[i];
		if (streq(a->spec.node, node) && streq(a->o.meta.name, block))
			return true;
	}
	return false;
}

/*
 * An empty block that no affinity of its node backs (or that has no node)
 * routes nowhere and is nobody's to reuse: delete it if still unchanged.
 * Blocks were listed before affinities and a block is created together
 * with its affinity, so a block listed without one is an orphan unless an
 * affinity appeared since: asked again before the delete.
 */
static int sweep_orphan(struct sweep *w, struct br_ipamblock *b)
{
	char host[256];
	const char *node = ipam_block_host(b, host, sizeof(host));
	if (w->s->node && !streq(node, w->s->node))
		return 0;
	if (ipam_block_validate(b, NULL, NULL) < 0 || ipam_block_used(b) > 0)
		return 0;
	if (node && sweep_has_affinity(w, node, b->o.meta.name))
		return 0;
	if (node) {
		struct br_object *a;
		int r = ds_get(w->op->d, model_kind(KIND_BLOCKAFFINITY), node, b->o.meta.name, &a);
		if (r == 0) {
			model_free(a);
			return 0;
		}
		if (r != -ENOENT)
			return ipam_op_ds_error(w->op, r);
	}
	int r = ds_delete(w->op->d, model_kind(KIND_IPAMBLOCK), NULL, b->o.meta.name,
			  b->o.revision);
	if (r == 0)
		w->out->orphans++;
	return r < 0 && r != -ENOENT ? ipam_op_ds_error(w->op, r) : 0;
}

static void sweep_free(struct sweep *w)
{
	ipam_objs_free(&w->blocks);
	ipam_objs_free(&w->affs);
	free(w->overlapped);
	w->overlapped = NULL;
}

static int sweep_attempt(struct sweep *w)
{
	int r = 0;
	/* The node's own sweep (every CNI DEL) reads only its affinities; the rest is maintenance.
	 */
	if (!w->s->by_node) {
		r = ipam_list(w->op, KIND_IPAMBLOCK, NULL, &w->blocks);
		if (r < 0)
			return r;
		struct br_cidr *c = xcalloc(w->blocks.n + 1, sizeof(*c));
		for (size_t i = 0; i < w->blocks.n; i++)
			if (ipam_block_name_parse(w->blocks.v[i]->meta.name, &c[i]) < 0)
				c[i] = (struct br_cidr){ 0 };
		struct ipam_pair *pairs;
		size_t np = ipam_overlaps(c, w->blocks.n, &pairs);
		w->overlapped = xcalloc(w->blocks.n + 1, sizeof(*w->overlapped));
		for (size_t i = 0; i < np; i++)
			w->overlapped[pairs[i].i] = w->overlapped[pairs[i].j] = true;
		free(pairs);
		free(c);
	}
	r = ipam_list(w->op, KIND_BLOCKAFFINITY, w->s->node, &w->affs);
	for (size_t i = 0; i < w->affs.n && r == 0; i++) {
		r = sweep_one(w, (struct br_blockaffinity *)w->affs.v[i]);
		if (r == -EUCLEAN)
			r = 0; /* damaged blocks are for ipam check, not for us */
	}
	for (size_t i = 0; i < w->blocks.n && r == 0; i++)
		r = sweep_orphan(w, (struct br_ipamblock *)w->blocks.v[i]);
	sweep_free(w);
	return r;
}

int ipam_release_empty_blocks(struct ds *d, const struct ipam_sweep *s, struct ipam_swept *out,
			      struct strbuf *err)
{
	struct ipam_op op;
	struct ipam_swept n = { 0 };
	if (s->by_node && (!s->node || !*s->node)) {
		sb_addf(err, "a node's own sweep needs the node");
		return -EINVAL;
	}
	ipam_op_init(&op, d, s->timeout_ms, err);
	struct sweep w = { .op = &op, .s = s, .out = &n };
	for (;;) {
		int r = sweep_attempt(&w);
		if (r == 0) {
			if (out)
				*out = n;
			return 0;
		}
		if (!ipam_op_again(&op, r))
			return ipam_op_give_up(&op, r, "releasing empty blocks");
	}
}
