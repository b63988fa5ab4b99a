/*
 * brindlectl ipam: what the block IPAM holds, whether it agrees with the
 * endpoints, and releasing by hand.
 *
 *   ipam show [--show-blocks]          per pool (and block): total, in use, free
 *   ipam check [--grace S]             addresses assigned twice or held for an
 *                                      owner that is gone, endpoints without an
 *                                      address, overlapping blocks, blocks no
 *                                      affinity backs (orphans), blocks of missing
 *                                      nodes, handles that hold nothing, claims
 *                                      left pending
 *   ipam release --ip A [--force] [--grace S]
 *                                      free one address where its owner is known to
 *                                      be gone (brindle-cni's endpoint for it is,
 *                                      for longer than the grace); anything else
 *                                      only with --force
 *   ipam release --empty-blocks [--node N] [--grace S]
 *                                      release blocks empty for longer than the grace
 *                                      period (default 300 s), empty orphans, and
 *                                      empty blocks that overlap another; settle
 *                                      stale pending claims
 *
 * Writes go through lib/sys/ipam.c with the plugins' compare-and-swap
 * discipline: what was checked is what is released, or nothing is.
 */
#include "ctl.h"

#include <brindle/sys/ipam.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct state {
	struct br_object **pools, **blocks, **affs, **handles, **weps, **nodes;
	size_t n_pools, n_blocks, n_affs, n_handles, n_weps, n_nodes;
};

static void state_free(struct state *s)
{
	model_free_all(s->pools, s->n_pools);
	model_free_all(s->blocks, s->n_blocks);
	model_free_all(s->affs, s->n_affs);
	model_free_all(s->handles, s->n_handles);
	model_free_all(s->weps, s->n_weps);
	model_free_all(s->nodes, s->n_nodes);
}

static int load(struct ds *d, struct state *s, bool all)
{
	struct {
		enum br_kind_id k;
		struct br_object ***v;
		size_t *n;
		bool always;
	} what[] = {
		{ KIND_IPPOOL, &s->pools, &s->n_pools, true },
		{ KIND_IPAMBLOCK, &s->blocks, &s->n_blocks, true },
		{ KIND_BLOCKAFFINITY, &s->affs, &s->n_affs, false },
		{ KIND_IPAMHANDLE, &s->handles, &s->n_handles, false },
		{ KIND_WORKLOADENDPOINT, &s->weps, &s->n_weps, false },
		{ KIND_NODE, &s->nodes, &s->n_nodes, false },
	};
	for (size_t i = 0; i < ARRAY_SIZE(what); i++) {
		if (!all && !what[i].always)
			continue;
		if (ds_list(d, model_kind(what[i].k), NULL, what[i].v, what[i].n) < 0) {
			ctl_error("listing %s: %s", model_kind(what[i].k)->plural,
				  ds_last_error(d));
			return -1;
		}
	}
	return 0;
}

/* --- show ----------------------------------------------------------------------------------- */

struct row {
	const char *cols[6];
};

static void print_rows(const char *const *head, size_t ncol, struct row *rows, size_t n)
{
	size_t w[6] = { 0 };
	for (size_t c = 0; c < ncol; c++) {
		w[c] = strlen(head[c]);
		for (size_t i = 0; i < n; i++)
			w[c] = MAX(w[c], strlen(rows[i].cols[c]));
	}
	for (size_t c = 0; c < ncol; c++)
		printf("%-*s%s", c + 1 < ncol ? (int)w[c] : 0, head[c],
		       c + 1 < ncol ? "   " : "\n");
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < ncol; c++)
			printf("%-*s%s", c + 1 < ncol ? (int)w[c] : 0, rows[i].cols[c],
			       c + 1 < ncol ? "   " : "\n");
}

/* An IPv6 pool holds more than 2^64 addresses: counts of pools are 128-bit. */
typedef unsigned __int128 u128;

static char *u128_str(struct arena *a, u128 v)
{
	char buf[48], *p = buf + sizeof(buf);
	*--p = '\0';
	do {
		*--p = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v);
	return arena_strdup(a, p);
}

static char *count_pct(struct arena *a, u128 part, u128 total)
{
	return arena_printf(a, "%s (%s%%)", u128_str(a, part),
			    u128_str(a, total ? (part * 100 + total / 2) / total : 0));
}

static bool block_in_pool(const struct br_ippool *p, const struct br_cidr *bc)
{
	struct br_cidr pc;
	if (cidr_parse(p->spec.cidr, false, &pc) < 0)
		return false;
	cidr_mask(&pc);
	return cidr_contains(&pc, bc);
}

static int ipam_show(struct ctl *c, bool blocks)
{
	struct ds *d = ctl_ds(c);
	if (!d)
		return CTL_FAIL;
	struct state s = { 0 };
	if (load(d, &s, false) < 0) {
		state_free(&s);
		return CTL_FAIL;
	}
	struct arena *a = arena_new();
	/* A block shows under every pool that holds it: pools may overlap. */
	size_t max_rows = s.n_pools + 1;
	for (size_t i = 0; i < s.n_pools && blocks; i++)
		max_rows += s.n_blocks;
	struct row *rows = xcalloc(max_rows, sizeof(*rows));
	size_t n = 0;
	for (size_t i = 0; i < s.n_pools; i++) {
		const struct br_ippool *p = (const struct br_ippool *)s.pools[i];
		struct br_cidr pc;
		if (cidr_parse(p->spec.cidr, false, &pc) < 0)
			continue;
		unsigned host_bits = ip_bits(&pc.ip) - pc.len;
		/* A /0 IPv6 pool (2^128) is shown one short: nobody will notice. */
		u128 total = host_bits >= 128 ? ~(u128)0 : (u128)1 << host_bits;
		u128 used = 0;
		size_t pool_row = n++;
		for (size_t k = 0; k < s.n_blocks; k++) {
			const struct br_ipamblock *b = (const struct br_ipamblock *)s.blocks[k];
			struct br_cidr bc;
			if (ipam_block_validate(b, &bc, NULL) < 0 || !block_in_pool(p, &bc))
				continue;
			used += ipam_block_used(b);
			if (!blocks)
				continue;
			char host[256];
			const char *node = ipam_block_host(b, host, sizeof(host));
			uint64_t cap = ipam_block_capacity(b);
			rows[n++] = (struct row){ {
				"Block",
				arena_strdup(a, b->spec.cidr),
				arena_strdup(a, node ? node : "(none)"),
				arena_printf(a, "%" PRIu64, cap),
				count_pct(a, ipam_block_used(b), cap),
				count_pct(a, ipam_block_free_count(b), cap),
			} };
		}
		rows[pool_row] = (struct row){ {
			p->spec.disabled ? "IP Pool (disabled)" : "IP Pool",
			p->spec.cidr,
			"",
			u128_str(a, total),
			count_pct(a, used, total),
			count_pct(a, total - used, total),
		} };
	}
	static const char *const head[] = { "GROUPING",	 "CIDR",       "NODE",
					    "IPS TOTAL", "IPS IN USE", "IPS FREE" };
	if (!s.n_pools)
		printf("No IP pools.\n");
	else if (blocks)
		print_rows(head, 6, rows, n);
	else {
		for (size_t i = 0; i < n; i++)
			memmove(&rows[i].cols[2], &rows[i].cols[3], 3 * sizeof(char *));
		static const char *const head5[] = { "GROUPING", "CIDR", "IPS TOTAL", "IPS IN USE",
						     "IPS FREE" };
		print_rows(head5, 5, rows, n);
	}
	free(rows);
	arena_free(a);
	state_free(&s);
	return CTL_OK;
}

/* --- check ---------------------------------------------------------------------------------- */

static bool node_exists(const struct state *s, const char *node)
{
	for (size_t i = 0; i < s->n_nodes; i++)
		if (streq(s->nodes[i]->meta.name, node))
			return true;
	return false;
}

static const struct br_blockaffinity *affinity_of(const struct state *s, const char *node,
						  const char *block)
{
	for (size_t i = 0; i < s->n_affs; i++) {
		const struct br_blockaffinity *a = (const struct br_blockaffinity *)s->affs[i];
		if (streq(a->spec.node, node) && streq(a->o.meta.name, block))
			return a;
	}
	return NULL;
}

static const struct br_ipamblock *block_named(const struct state *s, const char *name)
{
	for (size_t i = 0; i < s->n_blocks; i++)
		if (streq(s->blocks[i]->meta.name, name))
			return (const struct br_ipamblock *)s->blocks[i];
	return NULL;
}

/* The valid blocks that contain @ip (more than one only when blocks overlap). */
static size_t blocks_with(const struct state *s, const struct br_ip *ip,
			  const struct br_ipamblock **out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_blocks; i++) {
		const struct br_ipamblock *b = (const struct br_ipamblock *)s->blocks[i];
		struct br_cidr bc;
		if (ipam_block_validate(b, &bc, NULL) < 0 || !cidr_contains_ip(&bc, ip))
			continue;
		if (n < max)
			out[n] = b;
		n++;
	}
	return MIN(n, max);
}

struct alloc {
	struct br_ip ip;
	const struct br_ipamblock *block;
	const struct br_ipam_attr *attr;
};

static int cmp_alloc(const void *pa, const void *pb)
{
	const struct alloc *a = pa, *b = pb;
	int r = ip_cmp(&a->ip, &b->ip);
	return r ? r : strcmp(a->block->o.meta.name, b->block->o.meta.name);
}

struct check {
	struct state s;
	int64_t now, grace;
	size_t problems, allocated, unchecked, recent;
};

static void problem(struct check *k, const char *fmt, ...) printf_like(2, 3);
static void problem(struct check *k, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	k->problems++;
}

/* Damaged blocks, blocks of missing nodes, blocks no affinity backs, overlapping blocks. */
static void check_blocks(struct check *k)
{
	const struct state *s = &k->s;
	char host[256];
	struct br_cidr *cidrs = xcalloc(s->n_blocks + 1, sizeof(*cidrs));
	for (size_t i = 0; i < s->n_blocks; i++) {
		const struct br_ipamblock *b = (const struct br_ipamblock *)s->blocks[i];
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		if (ipam_block_validate(b, &cidrs[i], &why) < 0) {
			problem(k, "damaged block: %s", sb_str(&why));
			cidrs[i] = (struct br_cidr){ 0 };
			sb_free(&why);
			continue;
		}
		sb_free(&why);
		const char *node = ipam_block_host(b, host, sizeof(host));
		const char *fix = ipam_block_used(b) ? ""
						     : "; empty: ipam release --empty-blocks "
						       "releases it";
		const struct br_blockaffinity *a =
			node ? affinity_of(s, node, b->o.meta.name) : NULL;
		if (!node)
			problem(k, "block %s has no node (an orphan)%s", b->spec.cidr, fix);
		else if (!a)
			problem(k,
				"block %s belongs to node %s, which has no affinity for it (an "
				"orphan)%s",
				b->spec.cidr, node, fix);
		if (node && !node_exists(s, node))
			problem(k, "block %s belongs to node %s, which does not exist",
				b->spec.cidr, node);
	}
	struct ipam_pair *pairs;
	size_t np = ipam_overlaps(cidrs, s->n_blocks, &pairs);
	for (size_t i = 0; i < np; i++) {
		const struct br_ipamblock *x = (const struct br_ipamblock *)s->blocks[pairs[i].i];
		const struct br_ipamblock *y = (const struct br_ipamblock *)s->blocks[pairs[i].j];
		if (!cidrs[pairs[i].i].ip.family || !cidrs[pairs[i].j].ip.family)
			continue;
		problem(k, "blocks %s and %s overlap%s", x->spec.cidr, y->spec.cidr,
			ipam_block_used(x) && ipam_block_used(y)
				? ""
				: "; ipam release --empty-blocks releases the empty one");
	}
	free(pairs);
	free(cidrs);
}

/* Every address: assigned twice, or held for an owner that is gone. */
static void check_addresses(struct check *k)
{
	const struct state *s = &k->s;
	struct alloc *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < s->n_blocks; i++) {
		const struct br_ipamblock *b = (const struct br_ipamblock *)s->blocks[i];
		if (ipam_block_validate(b, NULL, NULL) < 0)
			continue;
		for (size_t o = 0; o < ipam_block_capacity(b); o++) {
			struct alloc x = { .block = b };
			if (!ipam_block_ordinal(b, o, &x.ip, &x.attr))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				v = xrealloc(v, cap * sizeof(*v));
			}
			v[n++] = x;
		}
	}
	k->allocated = n;
	if (n)
		qsort(v, n, sizeof(*v), cmp_alloc);
	char ip[IP_STRLEN];
	for (size_t i = 0; i < n; i++) {
		ip_str(&v[i].ip, ip);
		if (i + 1 < n && ip_equal(&v[i].ip, &v[i + 1].ip) &&
		    (i == 0 || !ip_equal(&v[i - 1].ip, &v[i].ip)))
			problem(k,
				"address %s is assigned twice: in block %s (handle %s) and in "
				"block %s (handle %s)",
				ip, v[i].block->spec.cidr, v[i].attr->handle_id,
				v[i + 1].block->spec.cidr, v[i + 1].attr->handle_id);
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		enum ipam_owner st = ipam_owner_state(v[i].attr, &v[i].ip, s->weps, s->n_weps,
						      k->now, k->grace, &why);
		if (st == IPAM_OWNER_GONE)
			problem(k,
				"address %s (handle %s) has no endpoint: %s (a leak: ipam release "
				"--ip %s frees it)",
				ip, v[i].attr->handle_id, sb_str(&why), ip);
		else if (st == IPAM_OWNER_UNKNOWN &&
			 labels_get(&v[i].attr->secondary, IPAM_ATTR_ENDPOINT))
			k->recent++;
		else if (st == IPAM_OWNER_UNKNOWN)
			k->unchecked++;
		sb_free(&why);
	}
	free(v);
}

static void check_endpoints(struct check *k)
{
	const struct state *s = &k->s;
	for (size_t i = 0; i < s->n_weps; i++) {
		const struct br_workloadendpoint *w =
			(const struct br_workloadendpoint *)s->weps[i];
		for (size_t j = 0; j < w->spec.n_ip_networks; j++) {
			struct br_cidr cidr;
			const struct br_ipamblock *in[4];
			if (cidr_parse(w->spec.ip_networks[j], true, &cidr) < 0)
				continue;
			size_t nb = blocks_with(s, &cidr.ip, in, ARRAY_SIZE(in));
			const char *handle = NULL;
			for (size_t b = 0; b < nb && !handle; b++)
				handle = ipam_block_handle_of(in[b], &cidr.ip);
			if (!handle)
				problem(k, "endpoint %s/%s has %s, which IPAM has not assigned",
					w->o.meta.namespace, w->o.meta.name,
					w->spec.ip_networks[j]);
			else if (w->spec.container_id &&
				 !str_has_suffix(handle, w->spec.container_id))
				problem(k, "endpoint %s/%s has %s, which IPAM holds for handle %s",
					w->o.meta.namespace, w->o.meta.name, w->spec.ip_networks[j],
					handle);
		}
	}
}

static void check_handles(struct check *k)
{
	const struct state *s = &k->s;
	for (size_t i = 0; i < s->n_handles; i++) {
		const struct br_ipamhandle *h = (const struct br_ipamhandle *)s->handles[i];
		if (streq(h->o.meta.name, IPAM_CLAIMS_MARKER))
			continue;
		size_t held = 0;
		for (size_t j = 0; j < s->n_blocks; j++) {
			const struct br_ipamblock *b = (const struct br_ipamblock *)s->blocks[j];
			if (ipam_block_validate(b, NULL, NULL) == 0)
				held += ipam_block_ips_of(b, h->spec.handle_id, NULL, 0);
		}
		if (!held)
			problem(k, "handle %s holds no address", h->spec.handle_id);
	}
}

/* "2006-01-02T15:04:05Z" → seconds; -1 when it is not that. */
static int64_t parse_time(const char *s)
{
	struct tm tm = { 0 };
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
	return end && !*end ? (int64_t)timegm(&tm) : -1;
}

static void check_affinities(struct check *k)
{
	const struct state *s = &k->s;
	char host[256];
	for (size_t i = 0; i < s->n_affs; i++) {
		const struct br_blockaffinity *a = (const struct br_blockaffinity *)s->affs[i];
		const struct br_ipamblock *b = block_named(s, a->o.meta.name);
		const char *owner = b ? ipam_block_host(b, host, sizeof(host)) : NULL;
		bool gone = !node_exists(s, a->spec.node);
		if (streq(a->spec.state, "pending")) {
			int64_t born = parse_time(a->o.meta.creation_timestamp);
			bool stale = gone || born < 0 || k->now - born >= k->grace;
			const char *what = !b ? "an interrupted claim (no block)"
					   : streq(owner, a->spec.node)
						   ? "its block exists"
						   : "a claim lost to another node";
			if (stale)
				problem(k,
					"affinity of node %s for %s is pending: %s (stale%s; ipam "
					"release --empty-blocks settles it)",
					a->spec.node, a->spec.cidr, what,
					gone ? ": the node does not exist" : "");
			else
				printf("affinity of node %s for %s is pending: %s (a claim in "
				       "progress, not counted)\n",
				       a->spec.node, a->spec.cidr, what);
		} else if (!streq(a->spec.state, "confirmed")) {
			problem(k, "affinity of node %s for %s is %s", a->spec.node, a->spec.cidr,
				a->spec.state);
		} else if (!b || !streq(owner, a->spec.node)) {
			problem(k, "affinity of node %s for %s is confirmed, but the block %s",
				a->spec.node, a->spec.cidr,
				b ? "is another node's" : "does not exist");
		}
		if (gone)
			problem(k, "node %s, which does not exist, has an affinity for %s",
				a->spec.node, a->spec.cidr);
	}
}

static int ipam_check(struct ctl *c, int64_t grace)
{
	struct ds *d = ctl_ds(c);
	if (!d)
		return CTL_FAIL;
	struct check k = { .now = time(NULL), .grace = grace };
	if (load(d, &k.s, true) < 0) {
		state_free(&k.s);
		return CTL_FAIL;
	}
	size_t n_handles = k.s.n_handles;
	for (size_t i = 0; i < k.s.n_handles; i++)
		n_handles -= streq(k.s.handles[i]->meta.name, IPAM_CLAIMS_MARKER);
	printf("Checking %zu block(s), %zu handle(s), %zu endpoint(s), %zu node(s).\n",
	       k.s.n_blocks, n_handles, k.s.n_weps, k.s.n_nodes);
	check_blocks(&k);
	check_addresses(&k);
	check_endpoints(&k);
	check_handles(&k);
	check_affinities(&k);
	if (k.unchecked)
		printf("%zu address(es) assigned by brindle-ipam for another plugin, which writes "
		       "no endpoints (or by a brindle-cni that did not record its endpoint): not "
		       "checked (releasing one needs --force).\n",
		       k.unchecked);
	if (k.recent)
		printf("%zu address(es) without an endpoint yet, assigned less than %" PRId64
		       " s ago: not checked.\n",
		       k.recent, grace);
	printf("%zu address(es) allocated; %zu problem(s) found.\n", k.allocated, k.problems);
	state_free(&k.s);
	return k.problems ? CTL_FAIL : CTL_OK;
}

/* --- release -------------------------------------------------------------------------------- */

/*
 * Release @text wherever it is held, but only where its owner is known to be
 * gone (or with --force): an endpoint has it, or it has none yet (an ADD in
 * progress), or it was assigned for a plugin that writes no endpoints.
 * Each release names the handle it checked, so an address freed and
 * reassigned meanwhile is not released.
 */
static int ipam_release_one(struct ctl *c, const char *text, bool force, int64_t grace)
{
	struct br_ip ip;
	if (ip_parse(text, &ip) < 0) {
		ctl_error("\"%s\" is not an IP address", text);
		return CTL_USAGE;
	}
	struct ds *d = ctl_ds(c);
	if (!d)
		return CTL_FAIL;
	struct state s = { 0 };
	if (load(d, &s, false) < 0) {
		state_free(&s);
		return CTL_FAIL;
	}
	if (ds_list(d, model_kind(KIND_WORKLOADENDPOINT), NULL, &s.weps, &s.n_weps) < 0) {
		ctl_error("listing endpoints: %s", ds_last_error(d));
		state_free(&s);
		return CTL_FAIL;
	}
	const struct br_ipamblock *in[8];
	size_t nb = blocks_with(&s, &ip, in, ARRAY_SIZE(in));
	int64_t now = time(NULL);
	int rc = CTL_OK;
	size_t held = 0;
	for (size_t i = 0; i < nb; i++) {
		struct br_cidr bc;
		struct br_ip at;
		const struct br_ipam_attr *attr;
		if (ipam_block_name_parse(in[i]->o.meta.name, &bc) < 0 ||
		    !ipam_block_ordinal(in[i], ip_offset(&bc.ip, &ip), &at, &attr))
			continue;
		const char *handle = attr->handle_id;
		held++;
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		enum ipam_owner st =
			ipam_owner_state(attr, &ip, s.weps, s.n_weps, now, grace, &why);
		if (st != IPAM_OWNER_GONE && !force) {
			if (st == IPAM_OWNER_LIVE)
				ctl_error("%s (handle %s): %s; use --force to release it anyway",
					  text, handle, sb_str(&why));
			else
				ctl_error("%s (handle %s) has no endpoint, but nothing shows its "
					  "owner "
					  "is gone: %s; use --force to release it anyway",
					  text, handle, sb_str(&why));
			sb_free(&why);
			rc = CTL_FAIL;
			continue;
		}
		sb_free(&why);
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		int r = ipam_release_ip(d, &ip, handle, now, NULL, &err);
		if (r == -EBUSY || r == -ENOENT)
			ctl_error("%s changed while it was checked (%s); check again", text,
				  sb_str(&err));
		else if (r < 0)
			ctl_error("%s", sb_str(&err));
		else
			printf("Released %s (handle %s)\n", text, handle);
		rc = r < 0 ? CTL_FAIL : rc;
		sb_free(&err);
	}
	if (!held) {
		ctl_error("%s is not assigned", text);
		rc = CTL_FAIL;
	}
	state_free(&s);
	return rc;
}

static int ipam_release_blocks(struct ctl *c, const char *node, int64_t grace)
{
	struct ds *d = ctl_ds(c);
	if (!d)
		return CTL_FAIL;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct ipam_sweep s = { .node = node, .now = time(NULL), .grace_s = grace };
	struct ipam_swept n;
	int r = ipam_release_empty_blocks(d, &s, &n, &err);
	if (r < 0) {
		ctl_error("%s", sb_str(&err));
		sb_free(&err);
		return CTL_FAIL;
	}
	sb_free(&err);
	printf("Released %zu empty block(s) and %zu orphan block(s); settled %zu pending "
	       "claim(s)\n",
	       n.empty, n.orphans, n.claims);
	return CTL_OK;
}

/* --- the commands ------------------------------------------------------------------------ */

enum {
	SHOW_BLOCKS
};
static const struct ctl_flag show_flags[] = {
	[SHOW_BLOCKS] = { "--show-blocks", NULL, NULL,
			  "a row per block with the node that owns it" },
	{ 0 },
};

enum {
	CHECK_GRACE
};
static const struct ctl_flag check_flags[] = {
	[CHECK_GRACE] = { "--grace", NULL, "SECONDS",
			  "an address younger than this is no leak (default 300)" },
	{ 0 },
};

enum {
	REL_IP,
	REL_FORCE,
	REL_GRACE,
	REL_EMPTY,
	REL_NODE
};
static const struct ctl_flag release_flags[] = {
	[REL_IP] = { "--ip", NULL, "ADDRESS",
		     "free this address if its owner is known to be gone" },
	[REL_FORCE] = { "--force", NULL, NULL, "--ip: free it whoever holds it" },
	[REL_GRACE] = { "--grace", NULL, "SECONDS",
			"--ip: the address's age, --empty-blocks: how long a block has been "
			"empty (default 300)" },
	[REL_EMPTY] = { "--empty-blocks", NULL, NULL,
			"release empty blocks, empty orphans and empty overlapping blocks; "
			"settle stale pending claims" },
	[REL_NODE] = { "--node", NULL, "NODE", "--empty-blocks: only this node's" },
	{ 0 },
};

/* The seconds of --grace; -1 when not given, -2 (printed) when not a number of seconds. */
static long long grace_arg(const char *grace)
{
	char *end = NULL;
	long long g = grace ? strtoll(grace, &end, 10) : -1;
	if (grace && (!*grace || *end || g < 0)) {
		ctl_error("--grace takes a number of seconds");
		return -2;
	}
	return g;
}

static int no_positional(const char *cmd, const struct ctl_parsed *p)
{
	if (!p->n_pos)
		return CTL_OK;
	ctl_error("%s: unexpected argument \"%s\"", cmd, p->pos[0]);
	return CTL_USAGE;
}

static int ipam_cmd_show(struct ctl *c, int argc, char **argv)
{
	struct ctl_parsed p;
	int r = ctl_parse("ipam show", show_flags, argc, argv, 1, &p);
	if (r == CTL_OK)
		r = no_positional("ipam show", &p);
	if (r == CTL_OK)
		r = ipam_show(c, p.value[SHOW_BLOCKS] != NULL);
	ctl_parsed_free(&p);
	return r;
}

static int ipam_cmd_check(struct ctl *c, int argc, char **argv)
{
	struct ctl_parsed p;
	int r = ctl_parse("ipam check", check_flags, argc, argv, 1, &p);
	if (r == CTL_OK)
		r = no_positional("ipam check", &p);
	long long g = r == CTL_OK ? grace_arg(p.value[CHECK_GRACE]) : -1;
	if (g < -1)
		r = CTL_USAGE;
	if (r == CTL_OK)
		r = ipam_check(c, g >= 0 ? g : IPAM_DEFAULT_LEAK_GRACE_S);
	ctl_parsed_free(&p);
	return r;
}

static int ipam_cmd_release(struct ctl *c, int argc, char **argv)
{
	struct ctl_parsed p;
	int r = ctl_parse("ipam release", release_flags, argc, argv, 1, &p);
	if (r == CTL_OK)
		r = no_positional("ipam release", &p);
	long long g = r == CTL_OK ? grace_arg(p.value[REL_GRACE]) : -1;
	if (g < -1)
		r = CTL_USAGE;
	const char *ip = p.value[REL_IP];
	bool empty = p.value[REL_EMPTY] != NULL;
	if (r == CTL_OK && ip && !empty) {
		r = ipam_release_one(c, ip, p.value[REL_FORCE] != NULL,
				     g >= 0 ? g : IPAM_DEFAULT_LEAK_GRACE_S);
	} else if (r == CTL_OK && empty && !ip) {
		r = ipam_release_blocks(c, p.value[REL_NODE],
					g >= 0 ? g : IPAM_DEFAULT_EMPTY_GRACE_S);
	} else if (r == CTL_OK) {
		ctl_error("ipam release needs --ip ADDRESS or --empty-blocks");
		r = CTL_USAGE;
	}
	ctl_parsed_free(&p);
	return r;
}

const struct ctl_cmd ctl_ipam_cmds[] = {
	{ "show", NULL, "per pool (and block): addresses in total, in use and free", show_flags,
	  NULL, ipam_cmd_show },
	{ "check", NULL, "compare IPAM with the endpoints and nodes; exit 1 when they disagree",
	  check_flags, NULL, ipam_cmd_check },
	{ "release", NULL, "free an address (--ip) or empty blocks (--empty-blocks)", release_flags,
	  NULL, ipam_cmd_release },
	{ 0 },
};
