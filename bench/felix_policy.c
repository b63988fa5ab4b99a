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
 * Each figure is the median of 5 runs (the changes: 4 of each per run, each
 * followed by the baseline, since a legacy commit leaves freeing the table it
 * replaced to the kernel and the next commit pays part of it); ratios are
 * within the run.
 * Run: sudo build/release/bench/bench_felix_policy
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

/* Empty tables and no sets: the namespace as felix first finds it. */
static void reset(void)
{
	sh("for t in filter nat; do iptables-legacy -t $t -F && iptables-legacy -t $t -X; done");
	sh("ipset destroy 2>/dev/null || true");
}

static void feed(struct calc *c, int local, int remote, int policies);

static void emit(struct br_object *o, void *ctx)
{
	struct calc *c = ctx;
	struct ds_update u = { .kind = o->kind,
			       .scope = o->kind->namespaced ? o->meta.namespace : NULL,
			       .name = o->meta.name,
			       .obj = o };
	calc_update(c, &u);
}

static void feed(struct calc *c, int local, int remote, int policies)
{
	policy_scenario(local, remote, policies, emit, c);
}

struct felix {
	struct calc *c;
	struct ipt *ipt;
	struct ips *ips;
	struct dataplane *dp;
	struct felix_config cfg;
};

static void felix_open(struct felix *f, int local, int remote, int policies)
{
	felix_config_defaults(&f->cfg);
	f->c = calc_new("node1", false);
	calc_set_config(f->c, &f->cfg);
	feed(f->c, local, remote, policies);
	if (ipt_open_kernel(AF_INET, NULL, 10000, &f->ipt) < 0 || ips_open_kernel(&f->ips) < 0) {
		fprintf(stderr, "cannot open iptables / ip sets\n");
		exit(1);
	}
	struct dp_backends b = { .ipt = f->ipt, .ips = f->ips };
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
	struct pol *p = calc_policy(f->c);
	uint64_t t0 = now_ns();
	pol_flush(p);
	*calc_ms = ms_since(t0);
	if (dataplane_apply(f->dp, NULL, pol_desired(p), NULL, &f->cfg, now_ms()) < 0) {
		fprintf(stderr, "felix apply failed: %s\n",
			dataplane_status(f->dp)->policy_problem);
		exit(1);
	}
	return ms_since(t0);
}

/* The same rules and sets as restore files, from felix's desired state. */
static void write_restore_files(struct felix *f, const char *ipt_path, const char *ips_path)
{
	struct pol_desired *d = pol_desired(calc_policy(f->c));
	FILE *out = fopen(ips_path, "w");
	for (struct hmap_iter it = hmap_iter(&d->sets); hmap_next(&it);) {
		const struct pset *s = it.value;
		fprintf(out, "create %s %s family inet hashsize 1024 maxelem 1048576\n",
			s->info.name, ips_type_name(s->info.type));
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
	snprintf(cmd, sizeof(cmd), "ipset restore -f %s && iptables-legacy-restore --noflush < %s",
		 ips_path, ipt_path);
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
	static const ipt_chainlabel chain = "cali-FORWARD";
	uint64_t t0 = now_ns();
	struct xtc_handle *h = iptc_init("filter");
	const struct ipt_entry *e = h ? iptc_first_rule(chain, h) : NULL;
	if (!e) {
		fprintf(stderr, "iptc: %s\n", iptc_strerror(errno));
		exit(1);
	}
	struct ipt_entry *copy = malloc(e->next_offset);
	memcpy(copy, e, e->next_offset);
	if (!iptc_replace_entry(chain, copy, 0, h) || !iptc_commit(h)) {
		fprintf(stderr, "iptc: %s\n", iptc_strerror(errno));
		exit(1);
	}
	iptc_free(h);
	free(copy);
	return ms_since(t0);
}

static size_t count_rules(const char *table)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "iptables-legacy-save -t %s | grep -c '^-A'", table);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (p && fscanf(p, "%zu", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	return n;
}

int main(int argc, char **argv)
{
	int local = argc > 1 ? atoi(argv[1]) : 250;
	int remote = argc > 2 ? atoi(argv[2]) : 10000;
	int policies = argc > 3 ? atoi(argv[3]) : 500;
	if (unshare(CLONE_NEWNET) < 0) {
		perror("unshare (run as root)");
		return 1;
	}
	log_init("bench", getenv("BENCH_DEBUG") ? LOG_INFO : LOG_WARNING, LOG_TEXT, 2);
	sh("ip link set lo up");
	char ipt_path[] = "/tmp/bench-ipt-XXXXXX", ips_path[] = "/tmp/bench-ips-XXXXXX";
	close(mkstemp(ipt_path));
	close(mkstemp(ips_path));
	double f_total[RUNS], f_calc[RUNS], base[RUNS];
	/* the changes: CHANGES of each per run, each followed by the floor */
	double chg_pol[RUNS * CHANGES], chg_ep[RUNS * CHANGES], floor_[2 * RUNS * CHANGES];
	double calc_pol[RUNS * CHANGES], calc_ep[RUNS * CHANGES];
	int nc = 0, nf = 0;
	struct pol_stats st = { 0 };
	size_t rules = 0;
	for (int r = 0; r < RUNS; r++) {
		reset();
		struct felix f;
		felix_open(&f, local, remote, policies);
		f_total[r] = felix_apply(&f, &f_calc[r]);
		pol_stats(calc_policy(f.c), &st);
		rules = count_rules("filter") + count_rules("nat");
		write_restore_files(&f, ipt_path, ips_path);
		for (int k = 0; k < CHANGES; k++, nc++) {
			/* one policy changed (its ports), then the floor */
			emit(policy_scenario_policy(7, 1 + nc), f.c);
			chg_pol[nc] = felix_apply(&f, &calc_pol[nc]);
			floor_[nf++] = bare_commit();
			/* one local endpoint added, then the floor */
			emit(policy_scenario_endpoint(local + remote + nc, true), f.c);
			chg_ep[nc] = felix_apply(&f, &calc_ep[nc]);
			floor_[nf++] = bare_commit();
		}
		felix_close(&f);
		reset();
		base[r] = restore(ipt_path, ips_path);
	}
	unlink(ipt_path);
	unlink(ips_path);
	double ft = median(f_total, RUNS), b = median(base, RUNS), fl = median(floor_, (size_t)nf);
	printf("Policy programming: %d local endpoints, %d remote, %d policies (median of %d)\n",
	       local, remote, policies, RUNS);
	printf("  in the kernel: %zu rules, %zu chains, %zu ip sets with %zu members; %zu active "
	       "policies\n\n",
	       rules, st.chains, st.active_sets, st.members, st.active_policies);
	printf("Full programming from empty tables\n");
	printf("  %-52s %8.1f ms  1.00x\n", "ipset restore + iptables-legacy-restore (baseline)", b);
	printf("  %-52s %8.1f ms  %.2fx\n", "felix: calc + ip sets + iptables", ft, ft / b);
	printf("  %-52s %8.1f ms\n", "  of which calc (policies to rules and members)",
	       median(f_calc, RUNS));
	printf("\nOne change with everything programmed: time to enforced (median of %d, each "
	       "followed by the baseline)\n",
	       nc);
	printf("  %-52s %8.1f ms  1.00x\n", "bare libiptc init + 1 replace + commit (baseline)", fl);
	double cp = median(chg_pol, (size_t)nc), ce = median(chg_ep, (size_t)nc);
	printf("  %-52s %8.1f ms  %.2fx\n", "felix: one policy changed", cp, cp / fl);
	printf("  %-52s %8.1f ms  %.2fx\n", "felix: one local endpoint added", ce, ce / fl);
	printf("  %-52s %8.2f / %.2f ms\n", "  of which calc (policy / endpoint)",
	       median(calc_pol, (size_t)nc), median(calc_ep, (size_t)nc));
	return 0;
}
