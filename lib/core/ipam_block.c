/*
 * IPAM's pure half: one block's ordinals and attributes, block names, and
 * which block of a pool to claim next. Plain data in, plain data out; the
 * datastore protocol in lib/ipam.c decides with these and writes the result.
 *
 * A block stores, per ordinal, either -1 (free) or an index into its
 * attribute list; free ordinals are also kept in "unallocated" in the order
 * they became free, so the address free longest is reused first. Arrays that
 * change are rebuilt in the block's arena.
 */
#include <brindle/sys/ipam.h>
#include <brindle/core/sel.h>

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

void ipam_block_name(const struct br_cidr *c, char buf[IPAM_BLOCK_NAME_LEN])
{
	char ip[IP_STRLEN];
	snprintf(buf, IPAM_BLOCK_NAME_LEN, "%s-%u", ip_str(&c->ip, ip), c->len);
}

int ipam_block_name_parse(const char *name, struct br_cidr *out)
{
	const char *dash = name ? strrchr(name, '-') : NULL;
	char buf[CIDR_STRLEN];
	if (!dash || (size_t)(dash - name) + strlen(dash) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%.*s/%s", (int)(dash - name), name, dash + 1);
	struct br_cidr c;
	if (cidr_parse(buf, false, &c) < 0 || !cidr_is_network(&c))
		return -EINVAL;
	*out = c;
	return 0;
}

size_t ipam_block_capacity(const struct br_ipamblock *b)
{
	return b->spec.allocations.n;
}

size_t ipam_block_free_count(const struct br_ipamblock *b)
{
	return b->spec.unallocated.n;
}

const char *ipam_block_host(const struct br_ipamblock *b, char *buf, size_t size)
{
	const char *a = b->spec.affinity;
	if (!a || !str_has_prefix(a, "host:") || !a[5])
		return NULL;
	snprintf(buf, size, "%s", a + 5);
	return buf;
}

void ipam_block_init(struct br_ipamblock *b, const struct br_cidr *cidr, const char *node,
		     bool strict_affinity)
{
	struct arena *a = b->o.arena;
	char buf[CIDR_STRLEN];
	size_t n = (size_t)1 << (ip_bits(&cidr->ip) - cidr->len);
	b->spec.cidr = arena_strdup(a, cidr_str(cidr, buf));
	b->spec.affinity = node ? arena_printf(a, "host:%s", node) : NULL;
	b->spec.strict_affinity = strict_affinity;
	b->spec.allocations.v = arena_new_array(a, int64_t, n);
	b->spec.allocations.n = n;
	b->spec.unallocated.v = arena_new_array(a, int64_t, n);
	b->spec.unallocated.n = n;
	for (size_t i = 0; i < n; i++) {
		b->spec.allocations.v[i] = -1;
		b->spec.unallocated.v[i] = (int64_t)i;
	}
	b->spec.attributes = NULL;
	b->spec.n_attributes = 0;
	b->spec.sequence_number = 0;
}

/* Messages are optional: callers that only want a yes or no pass NULL. */
static void verr(struct strbuf *err, const char *fmt, ...) printf_like(2, 3);
static void verr(struct strbuf *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(err, fmt, ap);
	va_end(ap);
}

int ipam_block_validate(const struct br_ipamblock *b, struct br_cidr *cidr, struct strbuf *err)
{
	struct br_cidr c, named;
	const char *name = b->o.meta.name;
	if (!b->spec.cidr || cidr_parse(b->spec.cidr, false, &c) < 0 || !cidr_is_network(&c)) {
		verr(err, "block %s: cidr \"%s\" is not a network", name,
		     b->spec.cidr ? b->spec.cidr : "");
		return -EINVAL;
	}
	if (ipam_block_name_parse(name, &named) < 0 || cidr_cmp(&c, &named) != 0) {
		verr(err, "block %s: name does not match its cidr %s", name, b->spec.cidr);
		return -EINVAL;
	}
	unsigned host_bits = ip_bits(&c.ip) - c.len;
	if (host_bits > 16) {
		verr(err, "block %s: too large (/%u)", name, c.len);
		return -EINVAL;
	}
	size_t n = (size_t)1 << host_bits;
	if (b->spec.allocations.n != n) {
		verr(err, "block %s: %zu allocation entries for %zu addresses", name,
		     b->spec.allocations.n, n);
		return -EINVAL;
	}
	size_t used = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t v = b->spec.allocations.v[i];
		if (v < -1 || v >= (int64_t)b->spec.n_attributes) {
			verr(err, "block %s: ordinal %zu points at attribute %" PRId64, name, i, v);
			return -EINVAL;
		}
		used += v >= 0;
	}
	uint8_t *seen = xcalloc(n, 1);
	int r = 0;
	for (size_t i = 0; i < b->spec.unallocated.n && r == 0; i++) {
		int64_t o = b->spec.unallocated.v[i];
		if (o < 0 || o >= (int64_t)n || seen[o] || b->spec.allocations.v[o] != -1) {
			verr(err, "block %s: free list entry %" PRId64 " is invalid", name, o);
			r = -EINVAL;
		} else {
			seen[o] = 1;
		}
	}
	free(seen);
	if (r == 0 && used + b->spec.unallocated.n != n) {
		verr(err, "block %s: %zu used and %zu free of %zu addresses", name, used,
		     b->spec.unallocated.n, n);
		r = -EINVAL;
	}
	if (r == 0 && cidr)
		*cidr = c;
	return r;
}

static struct br_cidr block_cidr(const struct br_ipamblock *b)
{
	struct br_cidr c = { 0 };
	int r = cidr_parse(b->spec.cidr, false, &c);
	(void)r; /* validated when read */
	return c;
}

int64_t ipam_block_empty_since(const struct br_ipamblock *b)
{
	const char *v = labels_get(&b->o.meta.annotations, IPAM_EMPTY_SINCE_ANNOTATION);
	if (!v || !*v)
		return -1;
	char *end;
	long long t = strtoll(v, &end, 10);
	return *end || t < 0 ? -1 : (int64_t)t;
}

void ipam_block_mark_empty(struct br_ipamblock *b, int64_t now)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRId64, now);
	labels_set(b->o.arena, &b->o.meta.annotations, IPAM_EMPTY_SINCE_ANNOTATION, buf);
}

static bool same_secondary(const struct br_labels *a, const struct br_labels *b)
{
	if (!a || !a->n)
		return !b || !b->n;
	return b && labels_equal(a, b);
}

/* Index of an attribute equal to (handle, secondary), appending one if none. */
static int64_t attr_index(struct br_ipamblock *b, const char *handle,
			  const struct br_labels *secondary)
{
	for (size_t i = 0; i < b->spec.n_attributes; i++)
		if (streq(b->spec.attributes[i].handle_id, handle) &&
		    same_secondary(&b->spec.attributes[i].secondary, secondary))
			return (int64_t)i;
	struct arena *a = b->o.arena;
	size_t n = b->spec.n_attributes;
	struct br_ipam_attr *v = arena_new_array(a, struct br_ipam_attr, n + 1);
	if (n)
		memcpy(v, b->spec.attributes, n * sizeof(*v));
	v[n].handle_id = arena_strdup(a, handle);
	v[n].secondary = secondary ? labels_copy(a, secondary) : (struct br_labels){ 0 };
	b->spec.attributes = v;
	b->spec.n_attributes = n + 1;
	return (int64_t)n;
}

/* Drop attributes no ordinal points at, renumbering the others. */
static void compact_attrs(struct br_ipamblock *b)
{
	size_t n = b->spec.n_attributes;
	if (!n)
		return;
	int64_t *map = xcalloc(n, sizeof(*map));
	for (size_t i = 0; i < b->spec.allocations.n; i++)
		if (b->spec.allocations.v[i] >= 0)
			map[b->spec.allocations.v[i]] = 1;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (map[i]) {
			b->spec.attributes[m] = b->spec.attributes[i];
			map[i] = (int64_t)m++;
		}
	}
	for (size_t i = 0; i < b->spec.allocations.n; i++)
		if (b->spec.allocations.v[i] >= 0)
			b->spec.allocations.v[i] = map[b->spec.allocations.v[i]];
	b->spec.n_attributes = m;
	free(map);
}

static void touched(struct br_ipamblock *b)
{
	b->spec.sequence_number++;
}

/* Remove @ordinal from the free list (which keeps its order). */
static void take_free(struct br_ipamblock *b, int64_t ordinal)
{
	size_t m = 0;
	for (size_t i = 0; i < b->spec.unallocated.n; i++)
		if (b->spec.unallocated.v[i] != ordinal)
			b->spec.unallocated.v[m++] = b->spec.unallocated.v[i];
	b->spec.unallocated.n = m;
}

/* Append to the free list; rebuilt in the arena since it grows. */
static void put_free(struct br_ipamblock *b, int64_t ordinal)
{
	size_t n = b->spec.unallocated.n;
	int64_t *v = arena_new_array(b->o.arena, int64_t, n + 1);
	if (n)
		memcpy(v, b->spec.unallocated.v, n * sizeof(*v));
	v[n] = ordinal;
	b->spec.unallocated.v = v;
	b->spec.unallocated.n = n + 1;
}

static void clear_empty_mark(struct br_ipamblock *b)
{
	labels_del(&b->o.meta.annotations, IPAM_EMPTY_SINCE_ANNOTATION);
}

static bool ipam_is_reserved(const struct ipam_reserved *r, const struct br_ip *ip)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (cidr_contains_ip(&r->v[i], ip))
			return true;
	return false;
}

size_t ipam_block_free_unreserved(const struct br_ipamblock *b,
				  const struct ipam_reserved *reserved)
{
	if (!reserved || !reserved->n)
		return b->spec.unallocated.n;
	struct br_cidr c = block_cidr(b);
	size_t n = 0;
	for (size_t i = 0; i < b->spec.unallocated.n; i++) {
		struct br_ip ip = ip_add(&c.ip, (uint64_t)b->spec.unallocated.v[i]);
		n += !ipam_is_reserved(reserved, &ip);
	}
	return n;
}

bool ipam_block_all_reserved(const struct br_cidr *c, const struct ipam_reserved *reserved)
{
	for (size_t i = 0; reserved && i < reserved->n; i++)
		if (cidr_contains(&reserved->v[i], c))
			return true;
	if (!reserved || !reserved->n)
		return false;
	/* Covered by several: look at each address (blocks are small). */
	uint64_t size = (uint64_t)1 << ((c->ip.family == AF_INET ? 32 : 128) - c->len);
	if (size > 65536)
		return false;
	for (uint64_t o = 0; o < size; o++) {
		struct br_ip ip = ip_add(&c->ip, o);
		if (!ipam_is_reserved(reserved, &ip))
			return false;
	}
	return true;
}

int ipam_block_assign(struct br_ipamblock *b, const char *handle, const struct br_labels *secondary,
		      const struct ipam_reserved *reserved, struct br_ip *out)
{
	struct br_cidr c = block_cidr(b);
	int64_t ordinal = -1;
	for (size_t i = 0; i < b->spec.unallocated.n && ordinal < 0; i++) {
		struct br_ip ip = ip_add(&c.ip, (uint64_t)b->spec.unallocated.v[i]);
		if (!ipam_is_reserved(reserved, &ip))
			ordinal = b->spec.unallocated.v[i];
	}
	if (ordinal < 0)
		return -ENOSPC;
	b->spec.allocations.v[ordinal] = attr_index(b, handle, secondary);
	take_free(b, ordinal);
	clear_empty_mark(b);
	touched(b);
	*out = ip_add(&c.ip, (uint64_t)ordinal);
	return 0;
}

static int ordinal_of(const struct br_ipamblock *b, const struct br_ip *ip, int64_t *ordinal)
{
	struct br_cidr c = block_cidr(b);
	if (!cidr_contains_ip(&c, ip))
		return -ERANGE;
	uint64_t off = ip_offset(&c.ip, ip);
	if (off >= b->spec.allocations.n)
		return -ERANGE;
	*ordinal = (int64_t)off;
	return 0;
}

int ipam_block_assign_ip(struct br_ipamblock *b, const struct br_ip *ip, const char *handle,
			 const struct br_labels *secondary)
{
	int64_t o;
	int r = ordinal_of(b, ip, &o);
	if (r < 0)
		return r;
	if (b->spec.allocations.v[o] >= 0)
		return -EADDRINUSE;
	b->spec.allocations.v[o] = attr_index(b, handle, secondary);
	take_free(b, o);
	clear_empty_mark(b);
	touched(b);
	return 0;
}

static void release_ordinal(struct br_ipamblock *b, int64_t o)
{
	b->spec.allocations.v[o] = -1;
	put_free(b, o);
}

static void after_release(struct br_ipamblock *b, int64_t now)
{
	compact_attrs(b);
	touched(b);
	if (ipam_block_used(b) == 0)
		ipam_block_mark_empty(b, now);
}

size_t ipam_block_release_handle(struct br_ipamblock *b, const char *handle, int64_t now)
{
	size_t n = 0;
	for (size_t i = 0; i < b->spec.allocations.n; i++) {
		int64_t a = b->spec.allocations.v[i];
		if (a >= 0 && streq(b->spec.attributes[a].handle_id, handle)) {
			release_ordinal(b, (int64_t)i);
			n++;
		}
	}
	if (n)
		after_release(b, now);
	return n;
}

int ipam_block_release_ip(struct br_ipamblock *b, const struct br_ip *ip, int64_t now,
			  const char **handle)
{
	int64_t o;
	int r = ordinal_of(b, ip, &o);
	if (r < 0)
		return r;
	int64_t a = b->spec.allocations.v[o];
	if (a < 0)
		return -ENOENT;
	const char *h = b->spec.attributes[a].handle_id;
	release_ordinal(b, o);
	after_release(b, now);
	if (handle)
		*handle = h;
	return 0;
}

const char *ipam_block_handle_of(const struct br_ipamblock *b, const struct br_ip *ip)
{
	int64_t o;
	if (ordinal_of(b, ip, &o) < 0 || b->spec.allocations.v[o] < 0)
		return NULL;
	return b->spec.attributes[b->spec.allocations.v[o]].handle_id;
}

size_t ipam_block_ips_of(const struct br_ipamblock *b, const char *handle, struct br_ip *out,
			 size_t max)
{
	struct br_cidr c = block_cidr(b);
	size_t n = 0;
	for (size_t i = 0; i < b->spec.allocations.n; i++) {
		int64_t a = b->spec.allocations.v[i];
		if (a >= 0 && streq(b->spec.attributes[a].handle_id, handle)) {
			if (n < max)
				out[n] = ip_add(&c.ip, i);
			n++;
		}
	}
	return n;
}

bool ipam_block_ordinal(const struct br_ipamblock *b, size_t ordinal, struct br_ip *ip,
			const struct br_ipam_attr **attr)
{
	if (ordinal >= b->spec.allocations.n || b->spec.allocations.v[ordinal] < 0)
		return false;
	struct br_cidr c = block_cidr(b);
	*ip = ip_add(&c.ip, ordinal);
	if (attr)
		*attr = &b->spec.attributes[b->spec.allocations.v[ordinal]];
	return true;
}

/* --- pools ----------------------------------------------------------------------------------- */

static int pool_cidr(const struct br_ippool *p, struct br_cidr *c, unsigned *bs)
{
	if (cidr_parse(p->spec.cidr, false, c) < 0)
		return -EINVAL;
	cidr_mask(c);
	*bs = p->spec.block_size.set ? (unsigned)p->spec.block_size.v
				     : (c->ip.family == AF_INET6 ? 122 : 26);
	if (*bs < c->len || *bs > ip_bits(&c->ip))
		return -EINVAL;
	return 0;
}

int ipam_pool_block_of(const struct br_ippool *pool, const struct br_ip *ip, struct br_cidr *out)
{
	struct br_cidr c;
	unsigned bs;
	if (pool_cidr(pool, &c, &bs) < 0 || !cidr_contains_ip(&c, ip))
		return -ERANGE;
	struct br_cidr b = { .ip = *ip, .len = (uint8_t)bs };
	cidr_mask(&b);
	*out = b;
	return 0;
}

/* The last address of @c (host bits all ones). */
static struct br_ip cidr_last(const struct br_cidr *c)
{
	struct br_ip r = c->ip;
	unsigned bits = ip_bits(&r);
	for (unsigned i = c->len; i < bits; i++)
		r.a[i / 8] |= (uint8_t)(0x80 >> (i % 8));
	return r;
}

/* Address order; at one address the larger block first. */
static int cmp_cidr_start(const void *pa, const void *pb)
{
	const struct br_cidr *a = pa, *b = pb;
	int r = ip_cmp(&a->ip, &b->ip);
	return r ? r : (a->len > b->len) - (a->len < b->len);
}

int ipam_pool_free_block(const struct br_ippool *pool, const struct br_cidr *taken, size_t n_taken,
			 struct br_cidr *out)
{
	struct br_cidr c;
	unsigned bs;
	if (pool_cidr(pool, &c, &bs) < 0)
		return -EINVAL;
	uint64_t step_bits = ip_bits(&c.ip) - bs;
	if (step_bits >= 64)
		return -ENOSPC; /* IPv6 blocks wider than 2^64 addresses: not supported */
	/*
	 * A block of another size (an overlapping pool, a blockSize changed) makes
	 * every block it overlaps unusable, not only the one of the same CIDR. The
	 * blocks that touch the pool, in address order, are walked beside the
	 * candidates: CIDRs nest or are disjoint, so a candidate is free when no
	 * block starting at or before its last address reaches its first.
	 */
	struct br_cidr *v = xcalloc(n_taken + 1, sizeof(*v));
	size_t m = 0;
	for (size_t k = 0; k < n_taken; k++)
		if (cidr_overlaps(&taken[k], &c))
			v[m++] = taken[k];
	qsort(v, m, sizeof(*v), cmp_cidr_start);
	unsigned shift = bs - c.len;
	/* Beyond 2^20 blocks we look at the first 2^20: plenty for any node count. */
	uint64_t n = shift >= 20 ? (uint64_t)1 << 20 : (uint64_t)1 << shift;
	size_t k = 0;
	bool have_reach = false;
	struct br_ip reach = { 0 }; /* the furthest last address of the blocks passed */
	int r = -ENOSPC;
	for (uint64_t i = 0; i < n; i++) {
		struct br_cidr b = { .ip = ip_add(&c.ip, i << step_bits), .len = (uint8_t)bs };
		struct br_ip last = cidr_last(&b);
		for (; k < m && ip_cmp(&v[k].ip, &last) <= 0; k++) {
			struct br_ip l = cidr_last(&v[k]);
			if (!have_reach || ip_cmp(&l, &reach) > 0)
				reach = l;
			have_reach = true;
		}
		if (!have_reach || ip_cmp(&reach, &b.ip) < 0) {
			*out = b;
			r = 0;
			break;
		}
	}
	free(v);
	return r;
}

/* Indices of @v in address order. */
struct cidr_index {
	const struct br_cidr *v;
	size_t i;
};

static int cmp_cidr_index(const void *pa, const void *pb)
{
	const struct cidr_index *a = pa, *b = pb;
	int r = cmp_cidr_start(&a->v[a->i], &b->v[b->i]);
	return r ? r : (a->i > b->i) - (a->i < b->i);
}

size_t ipam_overlaps(const struct br_cidr *v, size_t n, struct ipam_pair **pairs)
{
	struct cidr_index *idx = xcalloc(n + 1, sizeof(*idx));
	for (size_t i = 0; i < n; i++)
		idx[i] = (struct cidr_index){ v, i };
	qsort(idx, n, sizeof(*idx), cmp_cidr_index);
	struct ipam_pair *out = NULL;
	size_t np = 0, cap = 0;
	/* In address order, the blocks that overlap one are those right after it inside it. */
	for (size_t a = 0; a < n; a++) {
		const struct br_cidr *ca = &v[idx[a].i];
		for (size_t b = a + 1; b < n && cidr_overlaps(ca, &v[idx[b].i]); b++) {
			if (np == cap) {
				cap = cap ? cap * 2 : 8;
				out = xrealloc(out, cap * sizeof(*out));
			}
			size_t i = idx[a].i, j = idx[b].i;
			out[np++] = (struct ipam_pair){ MIN(i, j), MAX(i, j) };
		}
	}
	free(idx);
	*pairs = out;
	return np;
}

bool ipam_pool_serves_namespace(const struct br_ippool *p, const struct br_labels *labels)
{
	const char *text = p->spec.namespace_selector;
	if (!text || !*text || streq(text, "all()"))
		return true;
	struct sel *s;
	if (!labels || sel_parse(text, &s, NULL) < 0)
		return false;
	struct sel_labels l = sel_labels_of(labels);
	bool ok = sel_eval(s, &l);
	sel_free(s);
	return ok;
}

bool ipam_pool_serves(const struct br_ippool *pool, const struct br_labels *node_labels,
		      struct strbuf *why)
{
	if (pool->spec.disabled) {
		if (why)
			sb_addf(why, "pool %s is disabled", pool->o.meta.name);
		return false;
	}
	bool workload = pool->spec.n_allowed_uses == 0;
	for (size_t i = 0; i < pool->spec.n_allowed_uses; i++)
		workload |= streq(pool->spec.allowed_uses[i], "Workload");
	if (!workload) {
		if (why)
			sb_addf(why, "pool %s is not for workloads (allowedUses)",
				pool->o.meta.name);
		return false;
	}
	const char *text = pool->spec.node_selector ? pool->spec.node_selector : "all()";
	struct sel *s;
	if (sel_parse(text, &s, NULL) < 0) {
		if (why)
			sb_addf(why, "pool %s has an invalid nodeSelector", pool->o.meta.name);
		return false;
	}
	struct br_labels none = { 0 };
	struct sel_labels l = sel_labels_of(node_labels ? node_labels : &none);
	bool ok = sel_eval(s, &l);
	sel_free(s);
	if (!ok && why)
		sb_addf(why, "pool %s: nodeSelector %s does not select this node",
			pool->o.meta.name, text);
	return ok;
}

/* --- whose address -------------------------------------------------------------------------- */

/* Whether @handle ("<network>.<containerID>") is the handle of container @cid. */
static bool handle_of_container(const char *handle, const char *cid)
{
	size_t h = strlen(handle), c = cid ? strlen(cid) : 0;
	return c && h > c && streq(handle + h - c, cid) && handle[h - c - 1] == '.';
}

static int64_t attr_time(const struct br_ipam_attr *attr)
{
	const char *v = labels_get(&attr->secondary, IPAM_ATTR_TIMESTAMP);
	if (!v || *v < '0' || *v > '9')
		return -1;
	char *end;
	long long t = strtoll(v, &end, 10);
	return *end ? -1 : (int64_t)t;
}

enum ipam_owner ipam_owner_state(const struct br_ipam_attr *attr, const struct br_ip *ip,
				 struct br_object *const *weps, size_t n_weps, int64_t now,
				 int64_t grace_s, struct strbuf *why)
{
	const char *ns = labels_get(&attr->secondary, IPAM_ATTR_NAMESPACE);
	const char *ep = labels_get(&attr->secondary, IPAM_ATTR_ENDPOINT);
	const struct br_workloadendpoint *mine = NULL;
	for (size_t i = 0; i < n_weps; i++) {
		const struct br_workloadendpoint *w = (const struct br_workloadendpoint *)weps[i];
		for (size_t k = 0; k < w->spec.n_ip_networks; k++) {
			struct br_cidr c;
			if (cidr_parse(w->spec.ip_networks[k], true, &c) == 0 &&
			    ip_equal(&c.ip, ip)) {
				verr(why, "used by endpoint %s/%s (container %s)",
				     w->o.meta.namespace, w->o.meta.name,
				     w->spec.container_id ? w->spec.container_id : "?");
				return IPAM_OWNER_LIVE;
			}
		}
		if (ep && streq(w->o.meta.name, ep) && streq(w->o.meta.namespace, ns))
			mine = w;
	}
	if (!ep) {
		verr(why, "no endpoint recorded for it (assigned by brindle-ipam for another "
			  "plugin, which writes no endpoints, or by an older brindle-cni)");
		return IPAM_OWNER_UNKNOWN;
	}
	if (mine && handle_of_container(attr->handle_id, mine->spec.container_id)) {
		verr(why, "its container's endpoint %s/%s exists", ns, ep);
		return IPAM_OWNER_LIVE;
	}
	int64_t t = attr_time(attr);
	if (t < 0) {
		verr(why, "no endpoint, and no time of assignment to tell an ADD in progress");
		return IPAM_OWNER_UNKNOWN;
	}
	if (now - t < grace_s) {
		verr(why, "assigned %" PRId64 " s ago: its endpoint may not be written yet",
		     now - t);
		return IPAM_OWNER_UNKNOWN;
	}
	verr(why, "endpoint %s/%s of its container is gone", ns ? ns : "", ep);
	return IPAM_OWNER_GONE;
}
