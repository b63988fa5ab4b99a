/*
 * brindle-felix: the per-node agent. One event loop: the datastore syncer
 * feeds the calculation core, a netlink monitor reports interfaces coming
 * and going, timers drive the periodic read-back; handlers only record what
 * changed, and one apply per loop turn (the before-sleep hook) brings the
 * kernel in line. Nothing is written before the datastore is in sync, and
 * stopping leaves the kernel as it is, so a restart disturbs no traffic.
 */
#include "calc/calc.h"
#include "calc/eventlog.h"
#include "calc/notices.h"
#include "calc/policy.h"
#include "config.h"
#include "dataplane/dataplane.h"
#include "logfile.h"

#include <brindle/sys/ds.h>
#include <brindle/sys/httpd.h>
#include <brindle/sys/ipset.h>
#include <brindle/sys/ipt.h>
#include <brindle/sys/log.h>
#include <brindle/sys/loop.h>
#include <brindle/core/metrics.h>
#include <brindle/sys/nft.h>
#include <brindle/sys/nl.h>
#include <brindle/sys/rules_cleanup.h>
#include <brindle/sys/sysctl.h>
#include <brindle/version.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <malloc.h>

extern char **environ;

struct felix {
	struct loop *loop;
	struct ds *ds;
	struct ds_syncer *syncer;
	const char *node;
	struct calc *calc;
	struct dataplane *dp;
	struct ipt *ipt;
	struct ipt *ipt6; /* ip6tables, with ipv6Support on the iptables backend */
	struct ips *ips;
	struct nft *nft;	/* the nftables backend (ipt and ips then NULL) */
	struct nft *nft6;	/* its ip6 tables (with ipv6Support) */
	bool clean_other;	/* the unused backend's rules go after the first good apply */
	bool rules_open;	/* the rule backend chosen (at the first apply in sync) */
	char backend_wanted[8]; /* the configuration's rule backend at start ("Auto", ...) */
	struct nflog *nflog;
	struct logfile *evlog;
	struct nl *nl;
	struct sysctl *sys;
	struct nl_monitor *mon;
	struct httpd *health, *metrics_http;
	struct loop_timer *wake, *drift_check;
	struct felix_config cfg;
	unsigned fc_generation;
	enum ds_sync_status sync;
	struct ds_outage outage;
	bool dirty;
	uint64_t pending_since_ms; /* the first datastore change not applied yet; 0: none */
	uint64_t last_change_ms;   /* the latest datastore change */
	bool last_apply_ok;
	uint64_t applies;
	uint64_t trimmed_at_resync;
	uint64_t invalid_values;
	struct metrics *m;
	struct metric *m_apply, *m_routes, *m_neighs, *m_fdbs, *m_local, *m_resyncs, *m_events,
		*m_errors, *m_in_sync, *m_writes, *m_stall, *m_ds_resyncs, *m_outage;
	/* Calico's names, for the dashboards built on Calico's felix (docs/felix.md) */
	struct metric *mc_local_eps, *mc_local_pols, *mc_hosts, *mc_resync_state,
		*mc_resyncs_started, *mc_dp_failures, *mc_ipsets, *mc_apply_time, *mc_calc_time;
	struct metric *m_chains, *m_rules, *m_sets, *m_members, *m_policies, *m_policy_errors,
		*m_commits, *m_rule_writes, *m_set_writes, *m_events_logged, *m_drift;
	size_t reported_errors;
};

static const char *const error_kind_names[DP_ERR_KINDS] = {
	[DP_ERR_NETLINK] = "netlink",	[DP_ERR_DUMP] = "dump",	  [DP_ERR_SYSCTL] = "sysctl",
	[DP_ERR_TUNNEL] = "tunnel",	[DP_ERR_IPIP] = "ipip",	  [DP_ERR_REFUSED] = "refused",
	[DP_ERR_IPTABLES] = "iptables", [DP_ERR_IPSET] = "ipset",
};

/* --- datastore ------------------------------------------------------------------------------ */

static void on_update(void *ctx, const struct ds_update *u)
{
	struct felix *f = ctx;
	metric_add(f->m_events, NULL, 1);
	if (u->error) {
		/* A stored value that does not decode is treated as absent, loudly. */
		f->invalid_values++;
		log_error("ignoring %s %s%s%s: %s", u->kind->kind, u->scope ? u->scope : "",
			  u->scope ? "/" : "", u->name, u->error);
	}
	uint64_t t0 = now_ns();
	calc_update(f->calc, u);
	metric_observe(f->mc_calc_time, NULL, (double)(now_ns() - t0) / 1e9);
	f->dirty = true;
	f->last_change_ms = now_ms();
	if (!f->pending_since_ms)
		f->pending_since_ms = f->last_change_ms;
}

/*
 * Whether datastore changes are still arriving: then the apply waits (the
 * wake timer is armed for when it may go), so a burst of events becomes one
 * apply, or one per apply_max_delay_ms while it lasts. A change alone waits
 * apply_settle_ms.
 */
static bool settling(struct felix *f, uint64_t now)
{
	if (!f->pending_since_ms)
		return false;
	uint64_t quiet = f->last_change_ms + f->cfg.apply_settle_ms;
	uint64_t bound = f->pending_since_ms + f->cfg.apply_max_delay_ms;
	uint64_t at = quiet < bound ? quiet : bound;
	if (now >= at)
		return false;
	loop_timer_arm(f->wake, at - now, 0);
	return true;
}

static void on_status(void *ctx, enum ds_sync_status st, const char *why)
{
	struct felix *f = ctx;
	if (st == DS_RESYNC && f->sync != DS_RESYNC)
		metric_add(f->mc_resyncs_started, NULL, 1);
	f->sync = st;
	ds_outage_status(&f->outage, st, why, now_ms());
	f->dirty = true;
}

/* Once per cause: the syncer re-lists because the store is not the view it had. */
static void on_resync(void *ctx, const char *reason, const char *detail)
{
	struct felix *f = ctx;
	log_warn("datastore: resync (%s): %s", reason, detail);
	metric_add(f->m_ds_resyncs, reason, 1);
}

static const struct ds_syncer_ops syncer_ops = { on_update, on_status, on_resync };

static const struct ds_watch_spec watched[] = {
	{ KIND_FELIXCONFIGURATION, NULL },
	{ KIND_NODE, NULL },
	{ KIND_IPPOOL, NULL },
	{ KIND_BLOCKAFFINITY, NULL },
	{ KIND_WORKLOADENDPOINT, NULL },
	{ KIND_HOSTENDPOINT, NULL },
	{ KIND_NETWORKPOLICY, NULL },
	{ KIND_GLOBALNETWORKPOLICY, NULL },
	{ KIND_K8S_NETWORKPOLICY, NULL },
	{ KIND_TIER, NULL },
	{ KIND_STAGEDNETWORKPOLICY, NULL },
	{ KIND_STAGEDGLOBALNETWORKPOLICY, NULL },
	{ KIND_STAGEDK8SNETWORKPOLICY, NULL },
	{ KIND_NETWORKSET, NULL },
	{ KIND_GLOBALNETWORKSET, NULL },
	{ KIND_PROFILE, NULL },
	{ KIND_NAMESPACE, NULL },
};

static int start_syncer(struct felix *f)
{
	f->sync = DS_RESYNC;
	if (ds_syncer_start(f->ds, f->loop, watched, ARRAY_SIZE(watched), &syncer_ops, f,
			    &f->syncer) < 0) {
		log_error("datastore: %s", ds_last_error(f->ds));
		return -1;
	}
	return 0;
}

/* --- the connection event log -------------------------------------------------------------- */

static void on_nflog_event(const struct nflog_event *ev, void *ctx)
{
	struct felix *f = ctx;
	char in[IF_NAMESIZE] = "", out[IF_NAMESIZE] = "";
	if (ev->indev && !if_indextoname(ev->indev, in))
		in[0] = '\0';
	if (ev->outdev && !if_indextoname(ev->outdev, out))
		out[0] = '\0';
	struct strbuf line = STRBUF_INIT;
	sb_init(&line);
	eventlog_format(calc_policy(f->calc), ev, in[0] ? in : NULL, out[0] ? out : NULL,
			now_ns() / 1000, &line);
	logfile_write(f->evlog, sb_str(&line));
	sb_free(&line);
}

static void on_nflog(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct felix *f = ctx;
	if (nflog_read(f->nflog, on_nflog_event, f) == -ENOBUFS)
		log_warn("event log: the kernel dropped events (a burst larger than the socket)");
}

/* Start or stop the event log to match the configuration. */
static void event_log_configure(struct felix *f)
{
	bool want = f->cfg.event_log_enabled;
	if (f->nflog && (!want || !f->evlog)) {
		loop_del_fd(f->loop, nflog_fd(f->nflog));
		nflog_close(f->nflog);
		f->nflog = NULL;
	}
	if (f->evlog && !want) {
		logfile_free(f->evlog);
		f->evlog = NULL;
		log_info("event log: off");
	}
	if (!want || f->nflog)
		return;
	static const uint16_t groups[] = { 1, 2 };
	int r = nflog_open(groups, ARRAY_SIZE(groups), 128, &f->nflog);
	if (r < 0) {
		log_error("event log: cannot bind NFLOG groups 1 and 2: %s", strerror(-r));
		return;
	}
	if (loop_add_fd(f->loop, nflog_fd(f->nflog), EPOLLIN, on_nflog, f) < 0) {
		nflog_close(f->nflog);
		f->nflog = NULL;
		return;
	}
	if (!f->evlog)
		f->evlog = logfile_open(f->cfg.event_log_dir, f->cfg.event_log_file, 100, 200);
	if (streq(f->cfg.event_log_file, "-"))
		log_info("event log: denied%s connections to standard output",
			 f->cfg.event_log_allowed ? " and allowed" : "");
	else
		log_info("event log: denied%s connections to %s/%s",
			 f->cfg.event_log_allowed ? " and allowed" : "", f->cfg.event_log_dir,
			 f->cfg.event_log_file);
}

/* --- configuration ---------------------------------------------------------------------------- */

static void compute_config(struct felix *f, struct felix_config *out)
{
	struct model_errors errs = { 0 };
	/* (no calculation yet at start: the environment's word alone) */
	felix_config_compute(out, f->calc ? calc_felixconfig(f->calc, false) : NULL,
			     f->calc ? calc_felixconfig(f->calc, true) : NULL, environ, &errs);
	for (size_t i = 0; i < errs.n; i++)
		log_error("configuration: %s", errs.v[i]);
	model_errors_clear(&errs);
}

static void maybe_reconfigure(struct felix *f)
{
	unsigned gen = calc_felixconfig_generation(f->calc);
	if (gen == f->fc_generation)
		return;
	f->fc_generation = gen;
	struct felix_config next;
	compute_config(f, &next);
	if (memcmp(&next, &f->cfg, sizeof(next)) == 0)
		return;
	if (next.health_port != f->cfg.health_port || next.metrics_port != f->cfg.metrics_port ||
	    next.health_enabled != f->cfg.health_enabled ||
	    next.metrics_enabled != f->cfg.metrics_enabled ||
	    strcmp(next.health_host, f->cfg.health_host) ||
	    strcmp(next.metrics_host, f->cfg.metrics_host))
		log_warn(
			"configuration: health and metrics endpoint changes take effect when felix "
			"restarts");
	if (next.log_severity != f->cfg.log_severity)
		log_set_level(next.log_severity);
	if (next.ipv6_support != (calc_policy6(f->calc) != NULL)) {
		if (f->rules_open) {
			/* The writers are chosen once: start again, as for the rule backend. */
			log_warn("configuration: ipv6Support changed to %s; felix restarts",
				 next.ipv6_support ? "true" : "false");
			loop_stop(f->loop, 0);
			return;
		}
		/* Before anything is written (the FelixConfiguration's word, at the first sync):
		 * the calculation starts again with the policy cores wanted, from a new list. */
		log_info("configuration: ipv6Support is %s (FelixConfiguration); listing the "
			 "datastore again for the %s policy",
			 next.ipv6_support ? "true" : "false",
			 next.ipv6_support ? "IPv6" : "IPv4-only");
		f->cfg = next;
		ds_syncer_stop(f->syncer);
		f->syncer = NULL;
		calc_free(f->calc);
		f->calc = calc_new(f->node, next.ipv6_support);
		calc_set_config(f->calc, &f->cfg);
		f->fc_generation = 0;
		if (start_syncer(f) < 0)
			loop_stop(f->loop, 1);
		return;
	}
	if (f->rules_open && !streq(next.rule_backend, f->backend_wanted)) {
		/* The writers are chosen at start (a switch programs the new backend before it
		 * removes the old one's rules): start again, as Calico's felix does. */
		log_warn("configuration: the rule backend changed from %s to %s; felix restarts to "
			 "switch",
			 f->backend_wanted, next.rule_backend);
		loop_stop(f->loop, 0);
		return;
	}
	log_info("configuration changed (FelixConfiguration); recomputing the dataplane");
	bool evlog_changed = strcmp(next.event_log_file, f->cfg.event_log_file) != 0 ||
			     strcmp(next.event_log_dir, f->cfg.event_log_dir) != 0;
	f->cfg = next;
	if (evlog_changed && f->evlog) {
		logfile_free(f->evlog);
		f->evlog = NULL;
		if (f->nflog) {
			loop_del_fd(f->loop, nflog_fd(f->nflog));
			nflog_close(f->nflog);
			f->nflog = NULL;
		}
	}
	event_log_configure(f);
	calc_set_config(f->calc, &f->cfg);
	f->dirty = true;
}

/* --- the apply ----------------------------------------------------------------------------------
 */

static void update_metrics(struct felix *f)
{
	const struct dp_status *st = dataplane_status(f->dp);
	/* The datastore as readiness sees it: in sync through an outage's grace period. */
	uint64_t now = now_ms();
	bool ds_ok = ds_outage_ok(&f->outage, now);
	metric_set(f->m_in_sync, NULL, ds_ok);
	/* Calico's values: 1 waiting for the datastore, 2 resyncing, 3 in sync */
	metric_set(f->mc_resync_state, NULL, ds_ok ? 3 : (double)f->sync + 1);
	metric_set(f->m_outage, NULL, (double)ds_outage_ms(&f->outage, now) / 1e3);
	metric_set(f->m_routes, NULL, (double)st->routes);
	metric_set(f->m_neighs, NULL, (double)st->neighs);
	metric_set(f->m_fdbs, NULL, (double)st->fdbs);
	metric_set(f->m_local, NULL, (double)calc_local_endpoints(f->calc));
	metric_set(f->m_resyncs, NULL, (double)st->resyncs);
	metric_set(f->m_writes, NULL, (double)st->writes);
	for (int k = 0; k < DP_ERR_KINDS; k++)
		metric_set(f->m_errors, error_kind_names[k], (double)st->errors[k]);
	metric_set(f->m_errors, "datastore", (double)f->invalid_values);
	struct pol_stats s;
	pol_stats(calc_policy(f->calc), &s);
	for (int t = 0; t < PT_TABLES; t++) {
		char v[32];
		snprintf(v, sizeof(v), "4,%s", pt_table_name((enum pt_table)t));
		metric_set(f->m_chains, v, (double)s.table_chains[t]);
		metric_set(f->m_rules, v, (double)s.table_rules[t]);
	}
	metric_set(f->m_sets, NULL, (double)s.active_sets);
	metric_set(f->m_members, NULL, (double)s.members);
	metric_set(f->m_policies, NULL, (double)s.active_policies);
	metric_set(f->mc_local_eps, NULL, (double)calc_local_endpoints(f->calc));
	metric_set(f->mc_local_pols, NULL, (double)s.active_policies);
	metric_set(f->mc_ipsets, NULL, (double)s.active_sets);
	metric_set(f->mc_hosts, NULL, (double)calc_nodes(f->calc));
	metric_set(f->m_policy_errors, NULL, (double)pol_n_errors(calc_policy(f->calc)));
	for (int t = 0; t < PT_TABLES; t++)
		metric_set(f->m_commits, pt_table_name(t), (double)st->commits[t]);
	static const char *const drift_names[DP_DRIFT_KINDS] = { "route", "sysctl", "iptables",
								 "ipset" };
	for (int k = 0; k < DP_DRIFT_KINDS; k++)
		metric_set(f->m_drift, drift_names[k], (double)st->drift_repairs[k]);
	metric_set(f->m_rule_writes, NULL, (double)st->rule_writes);
	metric_set(f->m_set_writes, NULL, (double)st->set_writes);
	metric_set(f->m_errors, "policy", (double)pol_n_errors(calc_policy(f->calc)));
	if (f->evlog) {
		metric_set(f->m_events_logged, "written", (double)logfile_written(f->evlog));
		metric_set(f->m_events_logged, "dropped", (double)logfile_dropped(f->evlog));
	}
}

/* Policies that cannot be rendered: said once each time the list changes. */
static void report_policy_errors(struct felix *f)
{
	const struct pol *p = calc_policy(f->calc);
	size_t n = pol_n_errors(p);
	if (n == f->reported_errors)
		return;
	f->reported_errors = n;
	for (size_t i = 0; i < n; i++)
		log_error("policy: %s; the endpoints it selects are denied (fail closed)",
			  pol_error(p, i));
}

static void log_notice(void *ctx, const struct notice *n)
{
	static const enum log_level levels[] = {
		[NOTICE_INFO] = LOG_INFO, [NOTICE_WARNING] = LOG_WARNING, [NOTICE_ERROR] = LOG_ERROR
	};
	log_msg(levels[n->level], "%s", n->text);
}

static int open_rule_backend(struct felix *f);

static void apply(struct loop *l, void *ctx)
{
	struct felix *f = ctx;
	/* What the calculation had to say this turn (it does not log itself). */
	calc_drain_notices(f->calc, log_notice, NULL);
	/* Nothing is written before the datastore is in sync. */
	if (f->sync != DS_IN_SYNC)
		return;
	maybe_reconfigure(f);
	calc_drain_notices(f->calc, log_notice, NULL);
	/* A new calculation listing the datastore again (ipv6Support learnt from the
	 * FelixConfiguration): nothing is written from it before its own sync. */
	if (f->sync != DS_IN_SYNC)
		return;
	if (!f->rules_open && open_rule_backend(f) < 0) {
		loop_stop(f->loop, 1);
		return;
	}
	uint64_t now = now_ms();
	if (settling(f, now))
		return;
	uint64_t deadline = dataplane_next_deadline(f->dp);
	if (!f->dirty && !(deadline && now >= deadline)) {
		/* Woken early (or by something else): the writers' retries and refreshes wait. */
		if (deadline)
			loop_timer_arm(f->wake, deadline - now, 0);
		return;
	}
	f->dirty = false;
	f->pending_since_ms = 0;
	uint64_t t0 = now_ns();
	struct pol *pol = calc_policy(f->calc), *pol6 = calc_policy6(f->calc);
	pol_flush(pol);
	if (pol6)
		pol_flush(pol6);
	report_policy_errors(f);
	int r = dataplane_apply(f->dp, calc_desired(f->calc), pol_desired(pol),
				pol6 ? pol_desired(pol6) : NULL, &f->cfg, now);
	double secs = (double)(now_ns() - t0) / 1e9;
	metric_observe(f->m_apply, NULL, secs);
	metric_observe(f->mc_apply_time, NULL, secs);
	if (f->applies++ == 0)
		log_info("first apply after sync took %.1f ms", secs * 1e3);
	f->last_apply_ok = r == 0;
	if (r != 0)
		metric_add(f->mc_dp_failures, NULL, 1);
	if (f->clean_other && r == 0) {
		/* The backend in use is programmed: the other one's rules (a switch, or a node
		 * that ran the other before) go now, not before, so no moment is unprotected. */
		f->clean_other = false;
		int c = f->nft ? (cleanup_iptables(f->cfg.iptables_lock_path) | cleanup_ipsets())
			       : cleanup_nftables();
		if (c < 0)
			log_warn("removing the unused rule backend's rules failed; they stay until "
				 "brindle-node cleanup");
	}
	/* The first list and a full apply free a lot at once: give it back to the system. */
	const struct dp_status *st = dataplane_status(f->dp);
	if (f->applies == 1 || st->resyncs != f->trimmed_at_resync) {
		f->trimmed_at_resync = st->resyncs;
		malloc_trim(0);
	}
	update_metrics(f);
	deadline = dataplane_next_deadline(f->dp);
	if (deadline)
		loop_timer_arm(f->wake, deadline > now ? deadline - now : 1, 0);
}

static void on_wake(struct loop *l, struct loop_timer *t, void *ctx)
{
	/* The before-sleep hook runs right after; the deadline makes it apply. */
}

/* --- link notifications -------------------------------------------------------------------------
 */

static void on_link_msg(const struct nlmsghdr *h, void *ctx)
{
	struct felix *f = ctx;
	struct nl_link l;
	struct nl_addr a;
	struct nl_route r;
	struct nl_netconf nc;
	if ((h->nlmsg_type == RTM_NEWROUTE || h->nlmsg_type == RTM_DELROUTE) &&
	    nl_parse_route(h, &r) == 0) {
		if (dataplane_on_route(f->dp, &r, h->nlmsg_type == RTM_DELROUTE, now_ms()))
			f->dirty = true;
		return;
	}
	if (h->nlmsg_type == RTM_NEWNETCONF && nl_parse_netconf(h, &nc) == 0) {
		if (nc.family == AF_INET && nc.ifindex > 0 && dataplane_on_netconf(f->dp, &nc))
			f->dirty = true;
		return;
	}
	if ((h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR) &&
	    nl_parse_addr(h, &a) == 0) {
		if (dataplane_on_addr(f->dp, &a))
			f->dirty = true;
		return;
	}
	if ((h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK) ||
	    nl_parse_link(h, &l) < 0)
		return;
	dataplane_on_link(f->dp, &l, h->nlmsg_type == RTM_DELLINK);
	if (felix_is_workload_iface(&f->cfg, l.name) || strcmp(l.name, VXLAN_DEV) == 0 ||
	    strcmp(l.name, VXLAN6_DEV) == 0 || strcmp(l.name, IPIP_DEV) == 0)
		f->dirty = true;
}

/* --- drift checks ------------------------------------------------------------------------ */

static void on_drift_check(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct felix *f = ctx;
	/* Only once felix has written, and only while it may write: not during an outage. */
	if (f->applies && f->sync == DS_IN_SYNC && dataplane_check(f->dp))
		f->dirty = true;
}

static void on_monitor(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct felix *f = ctx;
	if (nl_monitor_read(f->mon, on_link_msg, f) == -ENOBUFS) {
		log_warn("netlink notifications were dropped; reading the kernel's state again");
		dataplane_request_resync(f->dp);
		f->dirty = true;
	}
}

/* --- health and metrics
 * --------------------------------------------------------------------------- */

static void on_health(void *ctx, const char *path, struct httpd_response *resp)
{
	struct felix *f = ctx;
	if (strcmp(path, "/liveness") == 0) {
		resp->status = 200;
		sb_adds(&resp->body, "live\n");
		return;
	}
	if (strcmp(path, "/readiness") != 0)
		return;
	const struct dp_status *st = dataplane_status(f->dp);
	bool ready = true;
	uint64_t now = now_ms();
	ds_outage_describe(&f->outage, now, &resp->body);
	if (f->sync != DS_IN_SYNC)
		sb_adds(&resp->body, "\n");
	if (!ds_outage_ok(&f->outage, now)) {
		ready = false;
	} else if (!f->applies) {
		ready = false;
		sb_adds(&resp->body, "dataplane: not programmed yet\n");
	} else if (!f->last_apply_ok) {
		ready = false;
		sb_adds(&resp->body, "dataplane: the last apply failed (see the log); retrying\n");
	}
	if (st->problem[0]) {
		ready = false;
		sb_addf(&resp->body, "dataplane: %s\n", st->problem);
	}
	if (st->policy_problem[0]) {
		ready = false;
		sb_addf(&resp->body, "policy dataplane: %s\n", st->policy_problem);
	}
	/* A policy that cannot be rendered fails closed; it is reported, it does not make felix
	 * unready (the rest of the node's policy is in force). */
	const struct pol *pol = calc_policy(f->calc);
	for (size_t i = 0; i < pol_n_errors(pol); i++)
		sb_addf(&resp->body, "policy: %s (fail closed)\n", pol_error(pol, i));
	resp->status = ready ? 200 : 503;
	if (ready)
		sb_adds(&resp->body, "ready\n");
}

static void on_metrics(void *ctx, const char *path, struct httpd_response *resp)
{
	struct felix *f = ctx;
	if (strcmp(path, "/metrics") != 0)
		return;
	update_metrics(f);
	struct loop_stats ls;
	loop_get_stats(f->loop, &ls);
	metric_set(f->m_stall, "10s", (double)ls.longest_recent_ns / 1e9);
	metric_set(f->m_stall, "ever", (double)ls.longest_ns / 1e9);
	resp->status = 200;
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	metrics_render(f->m, &resp->body);
}

static void make_metrics(struct felix *f)
{
	static const double buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					  0.05,	  0.1,	 0.25,	 0.5,	1,    2.5 };
	f->m = metrics_new();
	f->m_apply = metrics_histogram(f->m, "felix_apply_seconds",
				       "Time to bring the kernel in line with the desired state.",
				       NULL, buckets, ARRAY_SIZE(buckets));
	f->m_routes = metrics_gauge(f->m, "felix_routes", "Routes programmed by felix.", NULL);
	f->m_neighs = metrics_gauge(f->m, "felix_neighbours",
				    "Neighbour entries programmed by felix.", NULL);
	f->m_fdbs = metrics_gauge(f->m, "felix_fdb_entries",
				  "VXLAN FDB entries programmed by felix.", NULL);
	f->m_local = metrics_gauge(f->m, "felix_local_endpoints",
				   "Workload endpoints on this node.", NULL);
	f->m_resyncs = metrics_counter(f->m, "felix_resyncs_total",
				       "Full read-backs of the kernel's state.", NULL);
	f->m_events = metrics_counter(f->m, "felix_datastore_events_total",
				      "Datastore updates received.", NULL);
	f->m_errors = metrics_counter(f->m, "felix_errors_total", "Errors, by kind.", "kind");
	f->m_in_sync =
		metrics_gauge(f->m, "felix_in_sync",
			      "1 when the datastore is listed and every watch is connected, or has "
			      "not been for less than the grace period (BRINDLE_DATASTORE_GRACE).",
			      NULL);
	f->m_outage = metrics_gauge(
		f->m, "felix_datastore_outage_seconds",
		"How long the datastore has been unreachable or being listed again (0: in sync); "
		"felix reports not ready once this passes BRINDLE_DATASTORE_GRACE.",
		NULL);
	f->m_ds_resyncs = metrics_counter(
		f->m, "felix_datastore_resyncs_total",
		"Re-lists of the datastore, by reason (compacted, revision_backwards, "
		"cluster_changed, store_changed, message_too_large).",
		"reason");
	f->m_stall = metrics_gauge(f->m, "felix_loop_longest_handler_seconds",
				   "The longest run of one event-loop handler (the datastore, "
				   "timers, netlink): in the last 10 s, and ever.",
				   "window");
	f->m_writes = metrics_counter(f->m, "felix_kernel_writes_total", "Netlink changes applied.",
				      NULL);
	/* Calico's names and labels (Calico counts the chains it programs, Brindle those it wants)
	 */
	f->m_chains = metrics_gauge(f->m, "felix_iptables_chains",
				    "iptables chains felix wants, by IP version and table.",
				    "ip_version,table");
	f->m_rules = metrics_gauge(f->m, "felix_iptables_rules",
				   "iptables rules in those chains, by IP version and table.",
				   "ip_version,table");
	f->m_sets = metrics_gauge(f->m, "felix_ipsets", "ip sets felix wants.", NULL);
	f->m_members = metrics_gauge(f->m, "felix_ipset_members",
				     "Members of those ip sets.", NULL);
	f->m_policies = metrics_gauge(f->m, "felix_active_policies",
				      "Policies that apply to an endpoint of this node.", NULL);
	f->m_policy_errors = metrics_gauge(
		f->m, "felix_policy_errors",
		"Policies and profiles that cannot be rendered (their endpoints fail closed).",
		NULL);
	f->m_commits = metrics_counter(f->m, "felix_iptables_commits_total",
				       "iptables table commits, by table.", "table");
	f->m_rule_writes = metrics_counter(f->m, "felix_iptables_rule_writes_total",
					   "iptables rules inserted, replaced or deleted.", NULL);
	f->m_set_writes = metrics_counter(f->m, "felix_ipset_writes_total",
					  "ip set operations applied.", NULL);
	f->m_drift =
		metrics_counter(f->m, "felix_dataplane_drift_repairs_total",
				"Someone else's changes to what felix programs, noticed and put "
				"back, by kind (route, sysctl, iptables, ipset).",
				"kind");
	f->m_events_logged = metrics_counter(
		f->m, "felix_event_log_lines_total",
		"Connection events written to the event log, or dropped by its rate limit.",
		"result");
	f->mc_local_eps = metrics_gauge(f->m, "felix_active_local_endpoints",
					"Number of active endpoints on this host.", NULL);
	f->mc_local_pols = metrics_gauge(f->m, "felix_active_local_policies",
					 "Number of active policies on this host.", NULL);
	f->mc_hosts = metrics_gauge(f->m, "felix_cluster_num_hosts",
				    "Total number of Calico hosts in the cluster.", NULL);
	f->mc_resync_state = metrics_gauge(f->m, "felix_resync_state",
					   "Current datastore state (1 waiting for the datastore, "
					   "2 resyncing, 3 in sync).",
					   NULL);
	f->mc_resyncs_started =
		metrics_counter(f->m, "felix_resyncs_started",
				"Number of times Felix has started resyncing with the "
				"datastore.",
				NULL);
	f->mc_dp_failures = metrics_counter(f->m, "felix_int_dataplane_failures",
					    "Number of times dataplane updates failed and will be "
					    "retried.",
					    NULL);
	f->mc_ipsets = metrics_gauge(f->m, "felix_ipsets_calico",
				     "Number of active Calico IP sets.", NULL);
	f->mc_apply_time =
		metrics_summary(f->m, "felix_int_dataplane_apply_time_seconds",
				"Time in seconds that it took to apply a dataplane update.", NULL);
	f->mc_calc_time = metrics_summary(
		f->m, "felix_calc_graph_update_time_seconds",
		"Seconds to update calculation graph for each datastore OnUpdate call.", NULL);
	metric_set(f->mc_resync_state, NULL, 1);
	metric_set(f->mc_resyncs_started, NULL, 0);
	metric_set(f->mc_dp_failures, NULL, 0);
	for (int k = 0; k <= DP_ERR_REFUSED; k++)
		metric_set(f->m_errors, error_kind_names[k], 0);
	metric_set(f->m_errors, "datastore", 0);
	metric_set(f->m_errors, error_kind_names[DP_ERR_IPTABLES], 0);
	metric_set(f->m_errors, error_kind_names[DP_ERR_IPSET], 0);
	metric_set(f->m_errors, "policy", 0);
}

/* --- main ------------------------------------------------------------------------------------- */

static void on_signal(struct loop *l, int signo, void *ctx)
{
	log_info("received signal %d: stopping (the kernel's state stays as it is)", signo);
	loop_stop(l, 0);
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: brindle-felix [--version]\n\n"
		     "The per-node agent. Configured by environment variables (FELIX_*, NODENAME,\n"
		     "BRINDLE_ETCD_ENDPOINTS, ...) and FelixConfiguration resources; see "
		     "docs/felix.md.\n");
}

static const char *nodename(char *buf, size_t size)
{
	const char *n = getenv("NODENAME");
	if (n && *n)
		return n;
	if (gethostname(buf, size) < 0)
		return NULL;
	buf[size - 1] = '\0';
	return buf;
}

static int start_http(struct felix *f)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = 0;
	if (f->cfg.health_enabled &&
	    (r = httpd_start(f->loop, f->cfg.health_host, f->cfg.health_port, on_health, f,
			     &f->health, &err)) < 0)
		log_error("health endpoint: %s", sb_str(&err));
	sb_reset(&err);
	if (r == 0 && f->cfg.metrics_enabled &&
	    (r = httpd_start(f->loop, f->cfg.metrics_host, f->cfg.metrics_port, on_metrics, f,
			     &f->metrics_http, &err)) < 0)
		log_error("metrics endpoint: %s", sb_str(&err));
	sb_free(&err);
	return r;
}

/*
 * The rule backend: the configuration's (the FelixConfiguration read once here, as the
 * dataplane is made before the sync; the environment over it), and for Auto what the node
 * already uses: nftables when kube-proxy's nftables table or iptables-nft's tables are there,
 * else iptables (legacy).
 */
static bool node_uses_nftables(struct nft *n)
{
	static const char *const tables[] = { "kube-proxy", "filter", "nat", "mangle", "raw" };
	for (size_t i = 0; i < ARRAY_SIZE(tables); i++) {
		bool exists;
		size_t chains;
		if (nft_table_chains(n, tables[i], &exists, &chains) < 0)
			continue;
		if (exists && chains > 0) {
			log_info("rule backend Auto: nftables table %s is in use; using nftables",
				 tables[i]);
			return true;
		}
	}
	log_info("rule backend Auto: no nftables tables in use; using iptables (legacy)");
	return false;
}

/* Called at the first apply in sync, when the configuration holds the FelixConfiguration's
 * word: nothing is written before that, so the choice can wait for it (and nothing blocks the
 * loop at start to read it). */
static int open_rule_backend(struct felix *f)
{
	snprintf(f->backend_wanted, sizeof(f->backend_wanted), "%s", f->cfg.rule_backend);
	int r = nft_open(AF_INET, &f->nft);
	if (r < 0 && !streq(f->backend_wanted, "Legacy")) {
		log_error("nftables: %s", strerror(-r));
		return r;
	}
	bool nft = streq(f->backend_wanted, "NFT") ||
		   (streq(f->backend_wanted, "Auto") && node_uses_nftables(f->nft));
	if (!nft) {
		nft_close(f->nft);
		f->nft = NULL;
		if ((r = ipt_open_kernel(AF_INET, f->cfg.iptables_lock_path, 10000, &f->ipt)) < 0 ||
		    (r = ips_open_kernel(&f->ips)) < 0) {
			log_error("%s: %s", f->ipt ? "ip sets" : "iptables", strerror(-r));
			return r;
		}
		if (calc_policy6(f->calc) &&
		    (r = ipt_open_kernel(AF_INET6, f->cfg.iptables_lock_path, 10000, &f->ipt6)) <
			    0) {
			log_error("ip6tables: %s", strerror(-r));
			return r;
		}
	} else if (calc_policy6(f->calc) && (r = nft_open(AF_INET6, &f->nft6)) < 0) {
		log_error("nftables (ip6): %s", strerror(-r));
		return r;
	}
	f->clean_other = true;
	f->rules_open = true;
	struct dp_backends b = {
		.ipt = f->ipt, .ipt6 = f->ipt6, .ips = f->ips, .nft = f->nft, .nft6 = f->nft6
	};
	dataplane_set_rule_backend(f->dp, &b);
	/* nftables looks interfaces up in verdict maps; iptables walks a tree of chains */
	pol_set_dispatch_maps(calc_policy(f->calc), nft);
	if (calc_policy6(f->calc))
		pol_set_dispatch_maps(calc_policy6(f->calc), nft);
	log_info("rule backend: %s (%s %s)", nft ? "nftables" : "iptables (legacy)",
		 streq(f->backend_wanted, "Auto") ? "detected; configured" : "configured",
		 f->backend_wanted);
	return 0;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--version") == 0) {
			printf("brindle-felix %s\n", BRINDLE_VERSION);
			return 0;
		}
		usage(strcmp(argv[i], "--help") == 0 ? stdout : stderr);
		return strcmp(argv[i], "--help") == 0 ? 0 : 2;
	}
	struct felix f = { 0 };
	const char *fmt = getenv("BRINDLE_LOG_FORMAT");
	log_init("felix", LOG_INFO, fmt && strcmp(fmt, "json") == 0 ? LOG_JSON : LOG_TEXT, 2);
	char host[256];
	const char *node = nodename(host, sizeof(host));
	if (!node) {
		log_error("cannot tell this node's name: set NODENAME");
		return 1;
	}
	f.node = node;
	compute_config(&f, &f.cfg); /* the environment's word (FelixConfiguration: at the sync) */
	f.calc = calc_new(node, f.cfg.ipv6_support);
	log_set_level(f.cfg.log_severity);
	calc_set_config(f.calc, &f.cfg);
	log_info("brindle-felix %s starting on node %s", BRINDLE_VERSION, node);
	if (f.cfg.ipv6_support)
		log_info("ipv6Support: IPv6 routes, and IPv6 policy (ip6tables, or nftables' ip6 "
			 "tables)");

	struct ds_config dcfg = { 0 };
	struct ds_config_storage storage = { 0 };
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int ret = 1;
	if (ds_config_from_env(&dcfg, &storage, &err) < 0 || ds_open(&dcfg, &f.ds, &err) < 0) {
		log_error("datastore: %s", sb_str(&err));
		goto out;
	}
	int r;
	if ((r = nl_open_kernel(&f.nl)) < 0 ||
	    (r = nl_monitor_open(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
					 RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE |
					 1u << (RTNLGRP_IPV4_NETCONF - 1),
				 &f.mon)) < 0) {
		log_error("netlink: %s", strerror(-r));
		goto out;
	}
	f.sys = sysctl_open_kernel();
	/* the rule backend comes with the sync (open_rule_backend) */
	struct dp_backends backends = { .nl = f.nl, .sys = f.sys };
	f.dp = dataplane_new(&backends);
	f.loop = loop_new();
	make_metrics(&f);
	/* A peer that closes early must not kill felix on a write (the HTTP server uses
	 * MSG_NOSIGNAL; this covers every other socket). */
	signal(SIGPIPE, SIG_IGN);
	if (loop_add_signal(f.loop, SIGTERM, on_signal, &f) < 0 ||
	    loop_add_signal(f.loop, SIGINT, on_signal, &f) < 0 ||
	    loop_add_fd(f.loop, nl_monitor_fd(f.mon), EPOLLIN, on_monitor, &f) < 0) {
		log_error("event loop setup failed");
		goto out;
	}
	if (start_http(&f) < 0)
		goto out;
	event_log_configure(&f);
	f.wake = loop_timer_new(f.loop, on_wake, &f);
	f.drift_check = loop_timer_new(f.loop, on_drift_check, &f);
	if (f.cfg.drift_check_ms)
		loop_timer_arm(f.drift_check, f.cfg.drift_check_ms, f.cfg.drift_check_ms);
	ds_outage_init(&f.outage, dcfg.outage_grace_ms);
	if (start_syncer(&f) < 0)
		goto out;
	loop_set_before_sleep(f.loop, apply, &f);
	ret = loop_run(f.loop);
out:
	ds_syncer_stop(f.syncer);
	httpd_stop(f.health);
	httpd_stop(f.metrics_http);
	loop_timer_free(f.wake);
	loop_timer_free(f.drift_check);
	dataplane_free(f.dp);
	nflog_close(f.nflog);
	logfile_free(f.evlog);
	ipt_close(f.ipt);
	ipt_close(f.ipt6);
	ips_close(f.ips);
	nft_close(f.nft);
	nft_close(f.nft6);
	calc_free(f.calc);
	nl_monitor_close(f.mon);
	nl_close(f.nl);
	sysctl_close(f.sys);
	metrics_free(f.m);
	loop_free(f.loop);
	ds_close(f.ds);
	ds_config_free_storage(&storage);
	sb_free(&err);
	return ret;
}
