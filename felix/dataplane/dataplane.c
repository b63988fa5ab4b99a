/*
 * One apply: read back when needed, set up tunnel devices, then plan every
 * dirty key of interfaces, neighbours, FDB entries and routes into one
 * netlink batch, send it, and fold each message's result into the mirrors.
 * Failed writes are retried at the next apply; a route or neighbour whose
 * interface is missing waits for the interface's notification.
 */
#include "dataplane_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define LOG_CHANGES_PER_APPLY 20
#define RETRY_MS	      1000

struct dataplane *dataplane_new(struct nl *nl, struct sysctl *sys)
{
	struct dataplane *dp = xcalloc(1, sizeof(*dp));
	dp->nl = nl;
	dp->sys = sys;
	dp->batch = nl_batch_new();
	dp->resync_needed = true;
	dp->error_rl = (struct ratelimit)RATELIMIT_INIT(1000, 20);
	return dp;
}

static void clear_pending(struct dataplane *dp)
{
	for (struct hmap_iter it = hmap_iter(&dp->pending); hmap_next(&it);) {
		hmap_clear(it.value);
		free(it.value);
	}
	hmap_clear(&dp->pending);
}

void dataplane_free(struct dataplane *dp)
{
	if (!dp)
		return;
	links_clear(dp);
	routes_clear(dp);
	neighs_clear(dp);
	clear_pending(dp);
	for (int k = 0; k < DESIRED_KINDS; k++)
		hmap_clear(&dp->retry[k]);
	hmap_clear(&dp->graceful);
	hmap_clear(&dp->addressed);
	hmap_clear(&dp->conflicts);
	hmap_clear(&dp->foreign);
	nl_batch_free(dp->batch);
	free(dp->ops);
	free(dp);
}

void dataplane_request_resync(struct dataplane *dp)
{
	dp->resync_needed = true;
}

const struct dp_status *dataplane_status(const struct dataplane *dp)
{
	return &dp->status;
}

uint64_t dataplane_next_deadline(const struct dataplane *dp)
{
	return dp->next_deadline;
}

void dp_error(struct dataplane *dp, enum dp_error_kind kind, const char *fmt, ...)
{
	dp->status.errors[kind]++;
	/* A kernel without IPIP is a standing condition (status.problem), not a failed write;
	 * a refusal is felix doing its job. */
	if (kind != DP_ERR_IPIP && kind != DP_ERR_REFUSED)
		dp->status.last_apply_ok = false;
	if (!ratelimit_ok(&dp->error_rl))
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(LOG_ERROR, fmt, ap);
	va_end(ap);
}

static size_t changes_this_apply;

void dp_changed(struct dataplane *dp, const char *fmt, ...)
{
	/* What changed and why, once; a flood of changes is summarised. */
	enum log_level level = ++changes_this_apply <= LOG_CHANGES_PER_APPLY ? LOG_INFO : LOG_DEBUG;
	if (!log_enabled(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

struct dp_op *dp_add_op(struct dataplane *dp, enum desired_kind kind, enum nl_op op,
			const char *key, const char *why)
{
	GROW(dp->ops, dp->ops_cap, dp->n_ops + 1);
	struct dp_op *o = &dp->ops[dp->n_ops++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->op = op;
	snprintf(o->key, sizeof(o->key), "%s", key);
	snprintf(o->why, sizeof(o->why), "%s", why ? why : "");
	return o;
}

void dp_wait_for_link(struct dataplane *dp, const char *ifname, enum desired_kind kind,
		      const char *key)
{
	struct hmap *keys = hmap_get(&dp->pending, ifname);
	if (!keys) {
		keys = xcalloc(1, sizeof(*keys));
		hmap_put(&dp->pending, ifname, keys);
	}
	char tagged[160];
	snprintf(tagged, sizeof(tagged), "%d:%s", (int)kind, key);
	hmap_put(keys, tagged, (void *)1);
}

/* Whatever waited for @ifname is planned again at the next apply. */
static void wake(struct dataplane *dp, const char *ifname)
{
	struct hmap *keys = hmap_del(&dp->pending, ifname);
	if (!keys)
		return;
	for (struct hmap_iter it = hmap_iter(keys); hmap_next(&it);) {
		int kind = it.key[0] - '0';
		hmap_put(&dp->retry[kind], it.key + 2, (void *)1);
	}
	hmap_clear(keys);
	free(keys);
}

void dataplane_on_link(struct dataplane *dp, const struct nl_link *l, bool deleted)
{
	if (deleted) {
		/* The kernel dropped its routes and neighbours with it. */
		for (struct hmap_iter it = hmap_iter(&dp->routes); hmap_next(&it);) {
			struct mirror_route *m = it.value;
			if (m->oif == l->ifindex) {
				hmap_put(&dp->retry[DESIRED_ROUTE], it.key, (void *)1);
				free(hmap_del(&dp->routes, it.key));
			}
		}
		/* Neighbour and FDB keys start with the interface's name. */
		struct hmap *mirrors[] = { &dp->neighs, &dp->fdbs };
		size_t nl = strlen(l->name);
		for (int k = 0; k < 2; k++)
			for (struct hmap_iter it = hmap_iter(mirrors[k]); hmap_next(&it);)
				if (strncmp(it.key, l->name, nl) == 0 && it.key[nl] == '|') {
					hmap_put(&dp->retry[k ? DESIRED_FDB : DESIRED_NEIGH],
						 it.key, (void *)1);
					hmap_del(mirrors[k], it.key);
				}
		links_del(dp, l->ifindex);
		return;
	}
	const struct nl_link *old = link_indexed(dp, l->ifindex);
	bool was_up = old && (old->flags & IFF_UP);
	links_put(dp, l);
	if (l->flags & IFF_UP) {
		wake(dp, l->name);
		if (!was_up)
			hmap_put(&dp->retry[DESIRED_IFACE], l->name, (void *)1);
	}
}

bool dataplane_on_addr(struct dataplane *dp, const struct nl_addr *a)
{
	/* Workload veths get IPv6 link-local addresses as they come up: those do not count. */
	const struct br_ip *ip = &a->addr.ip;
	if (ip->family == AF_INET6 && ip->a[0] == 0xfe && (ip->a[1] & 0xc0) == 0x80)
		return false;
	dp->addrs_stale = true;
	return true;
}

bool dp_refuse_host_iface(struct dataplane *dp, struct desired *d, enum desired_kind kind,
			  const char *key, const char *ifname)
{
	char why[160];
	if (!host_iface(dp, ifname, why, sizeof(why)))
		return false;
	dp_error(dp, DP_ERR_REFUSED, "refused: %s wants %s %s, but %s", desired_why(d, kind, key),
		 kind == DESIRED_IFACE	 ? "the workload settings of"
		 : kind == DESIRED_ROUTE ? "route"
					 : "neighbour",
		 key, why);
	return true;
}

static void plan_iface(struct dataplane *dp, struct desired *d, const char *name)
{
	if (!desired_get(d, DESIRED_IFACE, name))
		return;
	const struct nl_link *l = link_named(dp, name);
	if (!l || !(l->flags & IFF_UP)) {
		dp_wait_for_link(dp, name, DESIRED_IFACE, name);
		return;
	}
	if (dp_refuse_host_iface(dp, d, DESIRED_IFACE, name, name))
		return;
	int changed = 0;
	int r = sysctl_workload_iface(dp->sys, name, &changed);
	if (r < 0) {
		dp_error(dp, DP_ERR_SYSCTL, "settings of %s: %s", name, strerror(-r));
		hmap_put(&dp->retry[DESIRED_IFACE], name, (void *)1);
	} else if (changed) {
		dp_changed(dp,
			   "interface %s: %d setting%s changed (proxy_arp, forwarding, "
			   "route_localnet, proxy_delay, accept_ra)",
			   name, changed, changed == 1 ? "" : "s");
	}
}

/* Everything that might differ: every desired key and every key the kernel has. */
static int resync(struct dataplane *dp, struct desired *d, uint64_t now)
{
	int r;
	dp->status.resyncs++;
	if ((r = links_dump(dp)) < 0 || (r = addrs_dump(dp)) < 0 ||
	    (r = routes_dump(dp, d, now)) < 0 || (r = neighs_dump(dp)) < 0) {
		dp_error(dp, DP_ERR_DUMP, "reading the kernel's state: %s", strerror(-r));
		return r;
	}
	clear_pending(dp);
	hmap_clear(&dp->graceful);
	/* Routes left to another owner are tried again (and reported only if that changes). */
	for (struct hmap_iter it = hmap_iter(&dp->foreign); hmap_next(&it);)
		hmap_put(&dp->foreign, it.key, FOREIGN_RETRY);
	d->tunnels_dirty = true;
	for (int k = 0; k < DESIRED_KINDS; k++)
		desired_mark_all_dirty(d, (enum desired_kind)k);
	for (struct hmap_iter it = hmap_iter(&dp->routes); hmap_next(&it);)
		desired_mark_dirty(d, DESIRED_ROUTE, it.key);
	for (struct hmap_iter it = hmap_iter(&dp->neighs); hmap_next(&it);)
		desired_mark_dirty(d, DESIRED_NEIGH, it.key);
	for (struct hmap_iter it = hmap_iter(&dp->fdbs); hmap_next(&it);)
		desired_mark_dirty(d, DESIRED_FDB, it.key);
	dp->resync_needed = false;
	return 0;
}

/* The union of the dirty and retry sets of @kind, then both cleared. */
static char **take_keys(struct dataplane *dp, struct desired *d, enum desired_kind kind, size_t *n)
{
	struct hmap *sets[] = { &d->dirty[kind], &dp->retry[kind] };
	size_t cap = d->dirty[kind].n + dp->retry[kind].n;
	char **keys = xmalloc(sizeof(char *) * (cap ? cap : 1));
	*n = 0;
	for (int s = 0; s < 2; s++)
		for (struct hmap_iter it = hmap_iter(sets[s]); hmap_next(&it);)
			if (s == 0 || !hmap_has(&d->dirty[kind], it.key))
				keys[(*n)++] = xstrdup(it.key);
	desired_clear_dirty(d, kind);
	hmap_clear(&dp->retry[kind]);
	return keys;
}

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

int dataplane_apply(struct dataplane *dp, struct desired *d, const struct felix_config *cfg,
		    uint64_t now)
{
	changes_this_apply = 0;
	dp->status.last_apply_ok = true;
	dp->next_deadline = 0;
	if (dp->resync_needed && resync(dp, d, now) < 0) {
		dp->next_deadline = now + RETRY_MS;
		return -EIO;
	}
	if (d->tunnels_dirty) {
		d->tunnels_dirty = false;
		tunnels_reconcile(dp, d, cfg);
	}
	if (dp->addrs_stale && addrs_dump(dp) < 0) {
		dp_error(dp, DP_ERR_DUMP, "reading the kernel's addresses failed");
		dp->resync_needed = true;
		dp->next_deadline = now + RETRY_MS;
		return -EIO;
	}
	/* Route keys whose grace period may have ended. */
	for (struct hmap_iter it = hmap_iter(&dp->graceful); hmap_next(&it);)
		hmap_put(&dp->retry[DESIRED_ROUTE], it.key, (void *)1);
	hmap_clear(&dp->graceful);

	size_t n;
	char **keys = take_keys(dp, d, DESIRED_IFACE, &n);
	for (size_t i = 0; i < n; i++)
		plan_iface(dp, d, keys[i]);
	free_keys(keys, n);

	nl_batch_reset(dp->batch);
	dp->n_ops = 0;
	/* Neighbours and FDB entries before the routes that use them. */
	keys = take_keys(dp, d, DESIRED_FDB, &n);
	for (size_t i = 0; i < n; i++)
		neighs_plan(dp, d, DESIRED_FDB, keys[i]);
	free_keys(keys, n);
	keys = take_keys(dp, d, DESIRED_NEIGH, &n);
	for (size_t i = 0; i < n; i++)
		neighs_plan(dp, d, DESIRED_NEIGH, keys[i]);
	free_keys(keys, n);
	keys = take_keys(dp, d, DESIRED_ROUTE, &n);
	for (size_t i = 0; i < n; i++)
		routes_plan(dp, d, keys[i], now, cfg);
	free_keys(keys, n);

	if (dp->n_ops) {
		int *errs = xcalloc(dp->n_ops, sizeof(int));
		int r = nl_apply(dp->nl, dp->batch, errs);
		if (r < 0) {
			/* Nothing is known about what got through: read everything back. */
			dp_error(dp, DP_ERR_NETLINK, "sending %zu changes: %s", dp->n_ops,
				 strerror(-r));
			dp->resync_needed = true;
		} else {
			for (size_t i = 0; i < dp->n_ops; i++) {
				if (!errs[i])
					dp->status.writes++;
				if (dp->ops[i].kind == DESIRED_ROUTE)
					routes_done(dp, &dp->ops[i], errs[i]);
				else
					neighs_done(dp, &dp->ops[i], errs[i]);
			}
		}
		free(errs);
		routes_resolve_conflicts(dp, d);
	}
	/* A cold start plans thousands of writes; do not keep that much for good. */
	if (dp->ops_cap > 1024) {
		free(dp->ops);
		dp->ops = NULL;
		dp->ops_cap = 0;
	}
	nl_batch_reset(dp->batch);
	if (changes_this_apply > LOG_CHANGES_PER_APPLY)
		log_info("%zu dataplane changes in this apply (the first %d logged above; the rest "
			 "at debug level)",
			 changes_this_apply, LOG_CHANGES_PER_APPLY);
	bool retrying = false;
	for (int k = 0; k < DESIRED_KINDS; k++)
		retrying |= dp->retry[k].n > 0;
	if (retrying || dp->resync_needed)
		if (!dp->next_deadline || now + RETRY_MS < dp->next_deadline)
			dp->next_deadline = now + RETRY_MS;
	dp->status.routes = dp->routes.n;
	dp->status.neighs = dp->neighs.n;
	dp->status.fdbs = dp->fdbs.n;
	return dp->status.last_apply_ok ? 0 : -EIO;
}
