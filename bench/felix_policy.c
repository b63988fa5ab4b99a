/*
 * felix's policy programming, measured in a network namespace of its own,
 * with the cluster of policy_scenario.h: 250 local endpoints, 10,000 remote
 * ones, 500 Kubernetes NetworkPolicies (override: bench_felix_policy LOCAL
 * REMOTE POLICIES).
 *
 *  1. Full programming from empty tables: felix's calculation (policies to
 *     chains and set members) and its writes (ip sets through libipset, one
 *     libiptc commit per table), next to Felix's own mechanism loading the
 *     same rules and sets: `ipset restore` + `iptables-legacy-restore`.
 *  2. One change with everything programmed: a policy changed, an endpoint
 *     added; time to enforced (calc + writes), next to a bare libiptc
 *     iptc_init + one rule replaced + iptc_commit of the filter table (the
 *     kernel's floor for any legacy commit of a table that size).
 *
 * Both families, run by run alternately: IPv4, and IPv6 (the same cluster
 * with IPv6 addresses and networks, through ip6tables), with their ratio;
 * BENCH_FAMILY=4 or 6 runs one. Each figure is the median of 5 runs (the changes: 4 of each per
 * run, each followed by the baseline, since a legacy commit leaves freeing the table it replaced to
 * the kernel and the next commit pays part of it); ratios are within the run. Run: sudo
 * build/release/bench/bench_felix_policy
 */
#include "calc/calc.h"
#include "calc/policy.h"
#include "dataplane/dataplane.h"
#include "policy_scenario.h"

#include <brindle/sys/ipt.h>
#include <brindle/sys/log.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <libiptc/libiptc.h>
#include <libiptc/libip6tc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUNS 5
#define CHANGES 4

static double ms_since(uint64_t t0)
{
	return (double)(now_ns() - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(double), cmp_double);
	return v[n / 2];
}

static void sh(const char *cmd)
{
	if (system(cmd) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		exit(1);
	}
}

/* The family under way: AF_INET (iptables) or AF_INET6 (ip6tables). */
static int af = AF_INET;

static const char *tool(void)
{
	return af == AF_INET6 ? "ip6tables-legacy" : "iptables-legacy";
}

/* Empty tables (of both families: the sets are shared) and no sets: the namespace as felix
 * first finds it. */
static void reset(void)
{
	sh("for c in iptables-legacy ip6tables-legacy; do for t in filter nat; do "
	   "$c -t $t -F && $c -t $t -X; done; done");
	sh("ipset destroy");
}

static void emit(struct br_object *o, void *ctx)
{
	struct calc *c = ctx;
	struct ds_update u = { .kind = o->kind,
			       .scope = o->kind->namespaced ? o->meta.namespace : NULL,
			       .name = o->meta.name,
			       .obj = o };
	calc_update(c, &u);
}

struct felix {
	struct calc *c;
	struct ipt *ipt;
	struct ips *ips;
	struct dataplane *dp;
	struct felix_config cfg;
};

/* The policy core of the family under way. */
static struct pol *policy(struct felix *f)
{
	return af == AF_INET6 ? calc_policy6(f->c) : calc_policy(f->c);
}

static void felix_open(struct felix *f, int local, int remote, int policies)
{
	felix_config_defaults(&f->cfg);
	f->cfg.ipv6_support = af == AF_INET6;
	f->c = calc_new("node1", af == AF_INET6);
	calc_set_config(f->c, &f->cfg);
	policy_scenario(local, remote, policies, emit, f->c);
	if (ipt_open_kernel(af, NULL, 10000, &f->ipt) < 0 || ips_open_kernel(&f->ips) < 0) {
		fprintf(stderr, "cannot open %s / ip sets\n", tool());
		exit(1);
	}
	struct dp_backends b = { .ips = f->ips };
	if (af == AF_INET6)
		b.ipt6 = f->ipt;
	else
		b.ipt = f->ipt;
	f->dp = dataplane_new(&b);
}

static void felix_close(struct felix *f)
{
	dataplane_free(f->dp);
	ipt_close(f->ipt);
	ips_close(f->ips);
	calc_free(f->c);
}

/* Calc (flush) and writes; returns the total, *calc_ms the calc part. */
static double felix_apply(struct felix *f, double *calc_ms)
{
	struct pol *p = policy(f);
	uint64_t t0 = now_ns();
	pol_flush(p);
	*calc_ms = ms_since(t0);
	struct pol_desired *d = pol_desired(p);
	if (dataplane_apply(f->dp, NULL, af == AF_INET ? d : NULL, af == AF_INET6 ? d : NULL,
			    &f->cfg, now_ms()) < 0) {
		fprintf(stderr, "felix apply failed: %s\n",
			dataplane_status(f->dp)->policy_problem);
		exit(1);
	}
	return ms_since(t0);
}

/* The same rules and sets as restore files, from felix's desired state. */
static void write_restore_files(struct felix *f, const char *ipt_path, const char *ips_path)
{
	struct pol_desired *d = pol_desired(policy(f));
	FILE *out = fopen(ips_path, "w");
	for (struct hmap_iter it = hmap_iter(&d->sets); hmap_next(&it);) {
		const struct pset *s = it.value;
		fprintf(out, "create %s %s family %s hashsize 1024 maxelem 1048576\n", s->info.name,
			ips_type_name(s->info.type), af == AF_INET6 ? "inet6" : "inet");
		for (struct hmap_iter m = hmap_iter(&s->members); hmap_next(&m);)
			fprintf(out, "add %s %s\n", s->info.name, m.key);
	}
	fclose(out);
	out = fopen(ipt_path, "w");
	for (int t = 0; t < PT_TABLES; t++) {
		const struct ptable *tb = &d->tables[t];
		fprintf(out, "*%s\n", pt_table_name(t));
		for (struct hmap_iter it = hmap_iter(&tb->chains); hmap_next(&it);)
			fprintf(out, ":%s - [0:0]\n", it.key);
		for (struct hmap_iter it = hmap_iter(&tb->chains); hmap_next(&it);) {
			const struct pchain *c = it.value;
			for (uint32_t i = 0; i < c->n; i++)
				fprintf(out, "-A %s %s\n", c->name, c->rules[i]);
		}
		for (size_t h = 0; h < tb->n_hooks; h++) {
			const struct phook *k = &tb->hooks[h];
			for (uint32_t i = 0; i < k->n_insert; i++)
				fprintf(out, "-I %s %u %s\n", k->chain, i + 1, k->insert[i]);
			for (uint32_t i = 0; i < k->n_append; i++)
				fprintf(out, "-A %s %s\n", k->chain, k->append[i]);
		}
		fprintf(out, "COMMIT\n");
	}
	fclose(out);
}

static double restore(const char *ipt_path, const char *ips_path)
{
	char cmd[512];
	uint64_t t0 = now_ns();
	snprintf(cmd, sizeof(cmd), "ipset restore -f %s && %s-restore --noflush < %s", ips_path,
		 tool(), ipt_path);
	sh(cmd);
	return ms_since(t0);
}

/*
 * The kernel's floor for a legacy commit: read the filter table, change one
 * rule (the first of cali-FORWARD, replaced by a copy of itself: libiptc
 * writes nothing unless something changed), write the table back.
 */
static double bare_commit(void)
{
	static const xt_chainlabel chain = "cali-FORWARD";
	uint64_t t0 = now_ns();
	bool ok;
	if (af == AF_INET6) {
		struct xtc_handle *h = ip6tc_init("filter");
		const struct ip6t_entry *e = h ? ip6tc_first_rule(chain, h) : NULL;
		struct ip6t_entry *copy = e ? malloc(e->next_offset) : NULL;
		if (copy)
			memcpy(copy, e, e->next_offset);
		ok = copy && ip6tc_replace_entry(chain, copy, 0, h) && ip6tc_commit(h);
		if (h)
			ip6tc_free(h);
		free(copy);
	} else {
		struct xtc_handle *h = iptc_init("filter");
		const struct ipt_entry *e = h ? iptc_first_rule(chain, h) : NULL;
		struct ipt_entry *copy = e ? malloc(e->next_offset) : NULL;
		if (copy)
			memcpy(copy, e, e->next_offset);
		ok = copy && iptc_replace_entry(chain, copy, 0, h) && iptc_commit(h);
		if (h)
			iptc_free(h);
		free(copy);
	}
	if (!ok) {
		fprintf(stderr, "%s: %s\n", tool(), iptc_strerror(errno));
		exit(1);
	}
	return ms_since(t0);
}

static size_t count_rules(const char *table)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "%s-save -t %s | grep -c '^-A'", tool(), table);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (p && fscanf(p, "%zu", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	return n;
}

/* One family's measurements, run by run, and their medians. */
struct figures {
	double f_total[RUNS], f_calc[RUNS], base[RUNS];
	/* the changes: CHANGES of each per run, each followed by the floor */
	double chg_pol[RUNS * CHANGES], chg_ep[RUNS * CHANGES], floors[2 * RUNS * CHANGES];
	double chg_calc_pol[RUNS * CHANGES], chg_calc_ep[RUNS * CHANGES];
	int runs, nc, nf;
	double full, full_calc, restore, floor_, pol, ep, calc_pol, calc_ep;
	struct pol_stats st;
	size_t rules;
};

/* Run @r of the family under way: full programming, the changes, the baseline restore. */
static void run_once(int local, int remote, int policies, struct figures *g)
{
	char ipt_path[] = "/tmp/bench-ipt-XXXXXX", ips_path[] = "/tmp/bench-ips-XXXXXX";
	close(mkstemp(ipt_path));
	close(mkstemp(ips_path));
	policy_scenario_family(af);
	int r = g->runs++;
	reset();
	struct felix f;
	felix_open(&f, local, remote, policies);
	g->f_total[r] = felix_apply(&f, &g->f_calc[r]);
	pol_stats(policy(&f), &g->st);
	g->rules = count_rules("filter") + count_rules("nat");
	write_restore_files(&f, ipt_path, ips_path);
	for (int k = 0; k < CHANGES; k++, g->nc++) {
		/* one policy changed (its ports), then the floor */
		emit(policy_scenario_policy(7, 1 + g->nc), f.c);
		g->chg_pol[g->nc] = felix_apply(&f, &g->chg_calc_pol[g->nc]);
		g->floors[g->nf++] = bare_commit();
		/* one local endpoint added, then the floor */
		emit(policy_scenario_endpoint(local + remote + g->nc, true), f.c);
		g->chg_ep[g->nc] = felix_apply(&f, &g->chg_calc_ep[g->nc]);
		g->floors[g->nf++] = bare_commit();
	}
	felix_close(&f);
	reset();
	g->base[r] = restore(ipt_path, ips_path);
	reset();
	unlink(ipt_path);
	unlink(ips_path);
}

static void medians(struct figures *g)
{
	g->full = median(g->f_total, (size_t)g->runs);
	g->full_calc = median(g->f_calc, (size_t)g->runs);
	g->restore = median(g->base, (size_t)g->runs);
	g->floor_ = median(g->floors, (size_t)g->nf);
	g->pol = median(g->chg_pol, (size_t)g->nc);
	g->ep = median(g->chg_ep, (size_t)g->nc);
	g->calc_pol = median(g->chg_calc_pol, (size_t)g->nc);
	g->calc_ep = median(g->chg_calc_ep, (size_t)g->nc);
}

static void report(const char *family, const struct figures *g, int local, int remote, int policies)
{
	printf("%s policy programming: %d local endpoints, %d remote, %d policies (median of "
	       "%d)\n",
	       family, local, remote, policies, RUNS);
	printf("  in the kernel: %zu rules, %zu chains, %zu ip sets with %zu members; %zu active "
	       "policies\n\n",
	       g->rules, g->st.chains, g->st.active_sets, g->st.members, g->st.active_policies);
	printf("Full programming from empty tables\n");
	printf("  %-52s %8.1f ms  1.00x\n", "ipset restore + *tables-legacy-restore (baseline)",
	       g->restore);
	printf("  %-52s %8.1f ms  %.2fx\n", "felix: calc + ip sets + rules", g->full,
	       g->full / g->restore);
	printf("  %-52s %8.1f ms\n", "  of which calc (policies to rules and members)",
	       g->full_calc);
	printf("\nOne change with everything programmed: time to enforced (median of %d, each "
	       "followed by the baseline)\n",
	       RUNS * CHANGES);
	printf("  %-52s %8.1f ms  1.00x\n", "bare libiptc init + 1 replace + commit (baseline)",
	       g->floor_);
	printf("  %-52s %8.1f ms  %.2fx\n", "felix: one policy changed", g->pol,
	       g->pol / g->floor_);
	printf("  %-52s %8.1f ms  %.2fx\n", "felix: one local endpoint added", g->ep,
	       g->ep / g->floor_);
	printf("  %-52s %8.2f / %.2f ms\n\n", "  of which calc (policy / endpoint)", g->calc_pol,
	       g->calc_ep);
}

int main(int argc, char **argv)
{
	int local = argc > 1 ? atoi(argv[1]) : 250;
	int remote = argc > 2 ? atoi(argv[2]) : 10000;
	int policies = argc > 3 ? atoi(argv[3]) : 500;
	const char *fam = getenv("BENCH_FAMILY"); /* 4, 6, or both (unset) */
	bool v4 = !fam || strcmp(fam, "6") != 0, v6 = !fam || strcmp(fam, "4") != 0;
	if (unshare(CLONE_NEWNET) < 0) {
		perror("unshare (run as root)");
		return 1;
	}
	log_init("bench", getenv("BENCH_DEBUG") ? LOG_INFO : LOG_WARNING, LOG_TEXT, 2);
	sh("ip link set lo up");
	static struct figures g4, g6;
	/* the families run by run, alternating, so that a slow minute of the machine falls on
	 * both */
	for (int r = 0; r < RUNS; r++) {
		if (v4) {
			af = AF_INET;
			run_once(local, remote, policies, &g4);
		}
		if (v6) {
			af = AF_INET6;
			run_once(local, remote, policies, &g6);
		}
	}
	if (v4) {
		medians(&g4);
		report("IPv4", &g4, local, remote, policies);
	}
	if (v6) {
		medians(&g6);
		report("IPv6 (the same cluster in IPv6 addresses, ip6tables)", &g6, local, remote,
		       policies);
	}
	if (v4 && v6) {
		printf("IPv6 against IPv4, same run (goal: within 1.2x)\n");
		printf("  %-52s %8.2fx\n", "full programming", g6.full / g4.full);
		printf("  %-52s %8.2fx\n", "one policy changed", g6.pol / g4.pol);
		printf("  %-52s %8.2fx\n", "one local endpoint added", g6.ep / g4.ep);
	}
	return 0;
}
