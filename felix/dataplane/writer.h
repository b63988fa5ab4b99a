/*
 * The one protocol every kernel writer of felix follows, in the spirit of
 * FRR's dataplane providers and BIRD's kernel sync: one writer per kind of
 * kernel object (links and their settings, neighbours, routes, ip sets,
 * iptables tables), each behind this small table of functions and each
 * keeping a mirror of what the kernel has of ours (the nftables writer keeps
 * only its sets': the wanted state's marks say what was there before, which
 * is all its writes need). A writer's turn:
 *
 *   read    the kernel's state of its kind into the mirror, replacing it: at
 *           the start, every refresh interval, on a resync request and after
 *           a failure. Between reads the mirror is trusted, so a turn costs
 *           in proportion to what changed, not to what exists.
 *   plan    compare what is wanted with the mirror for the keys the wanted
 *           state marks dirty (every key after a read), taking those marks,
 *           and queue the difference.
 *   apply   write the queue and fold each write's result into the mirror. A
 *           key that cannot be written yet (its interface is not there) waits
 *           in the writer and is planned again when it can be.
 *   finish  once every writer applied, in reverse order: remove what nothing
 *           refers to any more (ip sets no rule uses). Optional.
 *
 * The contract, the same for every writer: each function returns 0 or a
 * negative errno. A writer that fails reads everything back at its next turn,
 * and that turn waits for a backoff (100 ms, doubling to 10 s while it keeps
 * failing). The orchestrator (dataplane.c) owns the order, the backoff and
 * the refresh intervals; writers do not call one another, except that the
 * routes and neighbours writers look interfaces up in the links writer's
 * mirror (links.h).
 *
 * Callers use the typed wrappers below, never the table directly.
 */
#ifndef FELIX_DATAPLANE_WRITER_H
#define FELIX_DATAPLANE_WRITER_H

#include "calc/desired.h"
#include "calc/policy.h"
#include "config.h"
#include "dataplane/dataplane.h"

#include <brindle/sys/log.h>
#include <brindle/sys/nl.h>
#include <brindle/core/util.h>
#include <brindle/sys/clock.h>

/* What every writer is given at each turn. */
struct dp_input {
	struct desired *routing;    /* links, neighbours and routes */
	struct pol_desired *policy; /* ip sets and iptables */
	struct pol_desired *policy6; /* IPv6's ip sets and ip6tables (NULL: none) */
	const struct felix_config *cfg;
	uint64_t now_ms;
};

/* A dump the kernel interrupted (its table changed meanwhile: -EINTR) is done again. */
#define DP_DUMP_TRIES 3

/* Changes logged at info level per apply; the rest at debug, and their number. */
#define DP_LOG_CHANGES_PER_APPLY 20

/* Shared by the writers of one dataplane: the status, and what they log. */
struct dp_report {
	struct dp_status status;
	struct ratelimit error_rl;
	size_t changes; /* logged this apply */
};

struct dp_writer;

/* What a writer's check between reads found. */
enum dp_check {
	DP_CHECK_SAME, /* the kernel holds what the writer last left there */
	DP_CHECK_TURN, /* changed: the writer marked what to compare, and wants a turn */
	DP_CHECK_READ, /* changed: read everything back at the next turn */
};

struct dp_writer_ops {
	const char *name;
	int (*read)(struct dp_writer *w, const struct dp_input *in);
	int (*plan)(struct dp_writer *w, const struct dp_input *in);
	int (*apply)(struct dp_writer *w, const struct dp_input *in);
	int (*finish)(struct dp_writer *w, const struct dp_input *in);
	/* A link appeared, changed (@deleted false) or went away. */
	void (*link_changed)(struct dp_writer *w, const struct nl_link *l, bool deleted);
	/*
	 * A route was added, changed or deleted (from a netlink monitor; the
	 * writer's own writes come back this way too). True when the writer
	 * wants a turn: a route of ours changed under it.
	 */
	bool (*route_changed)(struct dp_writer *w, const struct nl_route *r, bool deleted,
			      uint64_t now_ms);
	/*
	 * A cheap look, on a short timer, at whether someone else changed what
	 * is ours since the writer's last turn, for kinds the kernel tells no
	 * one about (iptables, ip sets). It must cost far less than a read.
	 */
	enum dp_check (*check)(struct dp_writer *w);
	/* When the writer wants a turn without new data (a grace period ending); 0: never. */
	uint64_t (*deadline)(const struct dp_writer *w);
	void (*free)(struct dp_writer *w);
};

/* Every writer's struct starts with this. */
struct dp_writer {
	const struct dp_writer_ops *ops;
	struct dp_report *report;
};

static inline must_check int dp_writer_read(struct dp_writer *w, const struct dp_input *in)
{
	return w->ops->read(w, in);
}

static inline must_check int dp_writer_plan(struct dp_writer *w, const struct dp_input *in)
{
	return w->ops->plan(w, in);
}

static inline must_check int dp_writer_apply(struct dp_writer *w, const struct dp_input *in)
{
	return w->ops->apply(w, in);
}

static inline must_check int dp_writer_finish(struct dp_writer *w, const struct dp_input *in)
{
	return w->ops->finish ? w->ops->finish(w, in) : 0;
}

static inline void dp_writer_link_changed(struct dp_writer *w, const struct nl_link *l,
					  bool deleted)
{
	if (w->ops->link_changed)
		w->ops->link_changed(w, l, deleted);
}

static inline bool dp_writer_route_changed(struct dp_writer *w, const struct nl_route *r,
					   bool deleted, uint64_t now_ms)
{
	return w->ops->route_changed && w->ops->route_changed(w, r, deleted, now_ms);
}

static inline enum dp_check dp_writer_check(struct dp_writer *w)
{
	return w->ops->check ? w->ops->check(w) : DP_CHECK_SAME;
}

static inline uint64_t dp_writer_deadline(const struct dp_writer *w)
{
	return w->ops->deadline ? w->ops->deadline(w) : 0;
}

static inline void dp_writer_free(struct dp_writer *w)
{
	if (w)
		w->ops->free(w);
}

/* An error: counted by kind, logged (rate-limited) with the kernel's own text. */
void dp_report_error(struct dp_report *r, enum dp_error_kind kind, const char *fmt, ...)
	printf_like(3, 4);
/* A change made and why, logged once; a flood of them is summarised after the apply. */
void dp_report_change(struct dp_report *r, const char *fmt, ...) printf_like(2, 3);

/*
 * The writers, each made on a backend that stays the caller's (the links
 * writer, which also serves lookups, is made in links.h).
 */
struct ipt;
struct ips;
struct links;
struct dp_writer *neighs_new(struct dp_report *r, struct nl *nl, const struct links *links);
struct dp_writer *routes_new(struct dp_report *r, struct nl *nl, const struct links *links);
/* The ip sets and iptables writers of family @af (AF_INET: cali4 sets and iptables, reading
 * dp_input.policy; AF_INET6: cali6 sets and ip6tables, reading dp_input.policy6). */
struct dp_writer *ipsets_new(struct dp_report *r, struct ips *ips, int af);
struct dp_writer *iptables_new(struct dp_report *r, struct ipt *ipt, int af);
/*
 * The nftables backend: rules and sets in Brindle's own nf_tables tables (nftables.c), of
 * family @af (@nft's: AF_INET reads dp_input.policy into ip tables, AF_INET6 dp_input.policy6
 * into ip6 tables). @commits counts the commits of all of felix's nftables writers (one per
 * family share it): each commit moves the ruleset's generation by one, so a writer tells
 * felix's own commits from someone else's by it.
 */
struct nft;
struct dp_writer *nftables_new(struct dp_report *r, struct nft *nft, int af, uint64_t *commits);

#endif
