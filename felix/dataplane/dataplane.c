/*
 * The orchestrator of felix's kernel writers (writer.h): the order they run
 * in, their backoff after a failure, their refresh intervals, and the link
 * notifications every one of them sees. Nothing here writes to the kernel.
 */
#include "dataplane/dataplane.h"
#include "dataplane/links.h"
#include "dataplane/writer.h"
#include <brindle/sys/clock.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

enum writer_id {
	W_LINKS,
	W_IPSETS,
	W_IPTABLES,
	W_IPSETS6,
	W_IPTABLES6,
	W_NEIGHS,
	W_ROUTES,
	W_COUNT
};

#define W_BIT(id) (1u << (id))

/*
 * The order, in one place. A writer takes its turn only when the writers in
 * @needs_read have a good mirror (neighbours and routes look interfaces up in
 * the links writer's) and those in @needs_ok succeeded this apply: iptables
 * rules name the ip sets made before them (each family's its own). Then, once
 * all took their turns, the finishing steps: ip sets no rule uses any more are
 * destroyed after the rules that used them are gone.
 */
static const struct step {
	enum writer_id id;
	unsigned needs_read, needs_ok;
} turns[] = {
	{ W_LINKS, 0, 0 },
	{ W_IPSETS, 0, 0 },
	{ W_IPTABLES, 0, W_BIT(W_IPSETS) },
	{ W_IPSETS6, 0, 0 },
	{ W_IPTABLES6, 0, W_BIT(W_IPSETS6) },
	{ W_NEIGHS, W_BIT(W_LINKS), 0 },
	{ W_ROUTES, W_BIT(W_LINKS), 0 },
}, finishes[] = {
	{ W_IPSETS, 0, W_BIT(W_IPSETS) | W_BIT(W_IPTABLES) },
	{ W_IPSETS6, 0, W_BIT(W_IPSETS6) | W_BIT(W_IPTABLES6) },
};

/* The writers of policy, and which family's wanted state each reads. */
static bool policy_writer(enum writer_id id)
{
	return id == W_IPSETS || id == W_IPTABLES || id == W_IPSETS6 || id == W_IPTABLES6;
}

static bool has_input(enum writer_id id, const struct dp_input *in)
{
	if (id == W_IPSETS6 || id == W_IPTABLES6)
		return in->policy6 != NULL;
	return policy_writer(id) ? in->policy != NULL : in->routing != NULL;
}

/* A writer, and what the orchestrator keeps of it. */
struct slot {
	struct dp_writer *w; /* NULL: no backend for it */
	bool stale;	     /* read back at its next turn */
	bool mirrored;	     /* its last read succeeded: others may look things up in it */
	bool ok;	     /* its turn of this apply succeeded */
	uint64_t retry_at, backoff_ms;
	uint64_t read_at, refresh_ms;
};

struct dataplane {
	struct dp_report report;
	struct links *links;
	struct slot slots[W_COUNT];
	uint64_t nft_commits; /* by the nftables writers of both families */
};

static uint64_t refresh_ms(enum writer_id id, const struct felix_config *cfg)
{
	switch (id) {
	case W_IPSETS:
	case W_IPSETS6:
		return cfg->ipsets_refresh_ms;
	case W_IPTABLES:
	case W_IPTABLES6:
		return cfg->iptables_refresh_ms;
	default:
		return cfg->route_refresh_ms;
	}
}

struct dataplane *dataplane_new(const struct dp_backends *b)
{
	struct dataplane *dp = xcalloc(1, sizeof(*dp));
	struct dp_report *r = &dp->report;
	r->error_rl = (struct ratelimit)RATELIMIT_INIT(1000, 20);
	if (b->nl && b->sys) {
		dp->links = links_new(r, b->nl, b->sys);
		dp->slots[W_LINKS].w = links_writer(dp->links);
		dp->slots[W_NEIGHS].w = neighs_new(r, b->nl, dp->links);
		dp->slots[W_ROUTES].w = routes_new(r, b->nl, dp->links);
	}
	dataplane_set_rule_backend(dp, b);
	dataplane_request_resync(dp);
	return dp;
}

void dataplane_set_rule_backend(struct dataplane *dp, const struct dp_backends *b)
{
	struct dp_report *r = &dp->report;
	if (dp->slots[W_IPSETS].w || dp->slots[W_IPTABLES].w)
		return; /* chosen once */
	if (b->nft) {
		/* one writer for rules and sets, in the policy writer's place (each family's) */
		dp->slots[W_IPTABLES].w = nftables_new(r, b->nft, AF_INET, &dp->nft_commits);
		if (b->nft6)
			dp->slots[W_IPTABLES6].w =
				nftables_new(r, b->nft6, AF_INET6, &dp->nft_commits);
	} else {
		if (b->ips)
			dp->slots[W_IPSETS].w = ipsets_new(r, b->ips, AF_INET);
		if (b->ipt)
			dp->slots[W_IPTABLES].w = iptables_new(r, b->ipt, AF_INET);
		if (b->ips && b->ipt6)
			dp->slots[W_IPSETS6].w = ipsets_new(r, b->ips, AF_INET6);
		if (b->ipt6)
			dp->slots[W_IPTABLES6].w = iptables_new(r, b->ipt6, AF_INET6);
	}
	dp->slots[W_IPSETS].stale = dp->slots[W_IPTABLES].stale = true;
	dp->slots[W_IPSETS6].stale = dp->slots[W_IPTABLES6].stale = true;
}

void dataplane_free(struct dataplane *dp)
{
	if (!dp)
		return;
	for (int i = W_COUNT; i-- > 0;)
		dp_writer_free(dp->slots[i].w);
	free(dp);
}

void dataplane_request_resync(struct dataplane *dp)
{
	for (int i = 0; i < W_COUNT; i++)
		dp->slots[i].stale = true;
}

const struct dp_status *dataplane_status(const struct dataplane *dp)
{
	return &dp->report.status;
}

void dataplane_on_link(struct dataplane *dp, const struct nl_link *l, bool deleted)
{
	/* The links writer first: the others may look the link up as it is now. */
	for (int i = 0; i < W_COUNT; i++)
		if (dp->slots[i].w)
			dp_writer_link_changed(dp->slots[i].w, l, deleted);
}

bool dataplane_on_addr(struct dataplane *dp, const struct nl_addr *a)
{
	/* Workload veths get IPv6 link-local addresses as they come up: those do not count. */
	const struct br_ip *ip = &a->addr.ip;
	if (ip->family == AF_INET6 && ip->a[0] == 0xfe && (ip->a[1] & 0xc0) == 0x80)
		return false;
	if (dp->links)
		links_addrs_changed(dp->links);
	return true;
}

bool dataplane_on_route(struct dataplane *dp, const struct nl_route *r, bool deleted,
			uint64_t now_ms)
{
	bool turn = false;
	for (int i = 0; i < W_COUNT; i++)
		if (dp->slots[i].w)
			turn |= dp_writer_route_changed(dp->slots[i].w, r, deleted, now_ms);
	return turn;
}

bool dataplane_on_netconf(struct dataplane *dp, const struct nl_netconf *nc)
{
	return dp->links && links_settings_changed(dp->links, nc);
}

bool dataplane_check(struct dataplane *dp)
{
	bool turn = false;
	for (int i = 0; i < W_COUNT; i++) {
		struct slot *s = &dp->slots[i];
		/* A writer about to read back anyway needs no check. */
		if (!s->w || s->stale || !s->ok)
			continue;
		switch (dp_writer_check(s->w)) {
		case DP_CHECK_SAME:
			break;
		case DP_CHECK_READ:
			s->stale = true;
			/* fall through */
		case DP_CHECK_TURN:
			turn = true;
			break;
		}
	}
	return turn;
}

uint64_t dataplane_next_deadline(const struct dataplane *dp)
{
	uint64_t next = 0;
	for (int i = 0; i < W_COUNT; i++) {
		const struct slot *s = &dp->slots[i];
		if (!s->w)
			continue;
		uint64_t cands[] = { s->retry_at, s->refresh_ms ? s->read_at + s->refresh_ms : 0,
				     dp_writer_deadline(s->w) };
		for (size_t k = 0; k < ARRAY_SIZE(cands); k++)
			if (cands[k] && (!next || cands[k] < next))
				next = cands[k];
	}
	return next;
}

/* Do the writers in @mask meet the need? Absent writers always do. */
static bool met(const struct dataplane *dp, unsigned mask, bool need_ok)
{
	for (int i = 0; i < W_COUNT; i++) {
		const struct slot *s = &dp->slots[i];
		if (!(mask & W_BIT(i)) || !s->w)
			continue;
		if (need_ok ? !s->ok : !s->mirrored)
			return false;
	}
	return true;
}

static void failed(struct slot *s, uint64_t now)
{
	s->stale = true;
	s->ok = false;
	s->backoff_ms = s->backoff_ms ? MIN(s->backoff_ms * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
	s->retry_at = now + s->backoff_ms;
}

/* One writer's turn: read back if stale, plan, apply. */
static void take_turn(struct dataplane *dp, enum writer_id id, const struct dp_input *in)
{
	struct slot *s = &dp->slots[id];
	if (s->retry_at && in->now_ms < s->retry_at)
		return; /* backing off; stale already, so nothing is lost meanwhile */
	s->refresh_ms = refresh_ms(id, in->cfg);
	if (s->refresh_ms && s->read_at && in->now_ms >= s->read_at + s->refresh_ms)
		s->stale = true;
	int r = 0;
	if (s->stale) {
		r = dp_writer_read(s->w, in);
		s->mirrored = r == 0;
		if (r == 0) {
			s->stale = false;
			s->read_at = in->now_ms;
		}
	}
	if (r == 0)
		r = dp_writer_plan(s->w, in);
	if (r == 0)
		r = dp_writer_apply(s->w, in);
	if (r < 0) {
		failed(s, in->now_ms);
		return;
	}
	s->ok = true;
	s->retry_at = 0;
	s->backoff_ms = 0;
}

int dataplane_apply(struct dataplane *dp, struct desired *routing, struct pol_desired *policy,
		    struct pol_desired *policy6, const struct felix_config *cfg, uint64_t now_ms)
{
	struct dp_input in = { .routing = routing,
			       .policy = policy,
			       .policy6 = policy6,
			       .cfg = cfg,
			       .now_ms = now_ms };
	struct dp_report *rep = &dp->report;
	rep->changes = 0;
	for (int i = 0; i < W_COUNT; i++)
		dp->slots[i].ok = false;
	for (size_t i = 0; i < ARRAY_SIZE(turns); i++) {
		const struct step *t = &turns[i];
		if (!dp->slots[t->id].w || !has_input(t->id, &in))
			continue;
		if (met(dp, t->needs_read, false) && met(dp, t->needs_ok, true))
			take_turn(dp, t->id, &in);
	}
	for (size_t i = 0; i < ARRAY_SIZE(finishes); i++) {
		const struct step *t = &finishes[i];
		struct slot *s = &dp->slots[t->id];
		if (!s->w || !s->ok || !has_input(t->id, &in) || !met(dp, t->needs_ok, true))
			continue;
		if (dp_writer_finish(s->w, &in) < 0)
			failed(s, now_ms);
	}
	if (rep->changes > DP_LOG_CHANGES_PER_APPLY)
		log_info("%zu dataplane changes in this apply (the first %d logged above; the rest "
			 "at debug level)",
			 rep->changes, DP_LOG_CHANGES_PER_APPLY);
	bool ok = true, policy_ok = true;
	for (int i = 0; i < W_COUNT; i++) {
		const struct slot *s = &dp->slots[i];
		bool used = s->w && has_input(i, &in);
		if (!used || s->ok)
			continue;
		ok = false;
		policy_ok &= !policy_writer(i);
	}
	if (policy && policy_ok)
		rep->status.policy_problem[0] = '\0';
	rep->status.last_apply_ok = ok;
	return ok ? 0 : -EIO;
}
