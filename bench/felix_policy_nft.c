/*
 * felix's policy programming on the nftables backend, in a network namespace
 * of its own, with the cluster of policy_scenario.h (issue 18's figures).
 *
 *  1. Full programming from nothing at LOCAL (250) local endpoints, REMOTE
 *     (10,000) remote ones, POLICIES (500) Kubernetes NetworkPolicies:
 *     felix's calculation and its one batch, next to `nft -f` of the same
 *     ruleset (what `nft list table` printed after felix's program, loaded
 *     into emptied tables: nft's own parser and batch).
 *  2. One change with everything programmed (a policy changed, a local
 *     endpoint added), time to enforced (calc + batch), at growing numbers of
 *     local endpoints: the curve of a change's cost against the table's size.
 *
 * Medians of 5 runs; ratios within the run.
 * Run: sudo build/release/bench/bench_felix_policy_nft [LOCAL [REMOTE [POLICIES]]]
 */
#include "calc/calc.h"
#include "calc/policy.h"
#include "dataplane/dataplane.h"
#include "policy_scenario.h"

#include <brindle/sys/log.h>
#include <brindle/sys/nft.h>
#include <brindle/sys/clock.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUNS	5
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
	struct nft *nft;
	struct dataplane *dp;
	struct felix_config cfg;
};

static void felix_open(struct felix *f, int local, int remote, int policies)
{
	felix_config_defaults(&f->cfg);
	f->c = calc_new("node1");
	calc_set_config(f->c, &f->cfg);
	pol_set_dispatch_maps(calc_policy(f->c), true); /* as felix does on nftables */
	policy_scenario(local, remote, policies, emit, f->c);
	if (nft_open(&f->nft) < 0) {
		fprintf(stderr, "cannot open nftables\n");
		exit(1);
	}
	struct dp_backends b = { .nft = f->nft };
	f->dp = dataplane_new(&b);
}

static void felix_close(struct felix *f)
{
	dataplane_free(f->dp);
	nft_close(f->nft);
	calc_free(f->c);
}

static double felix_apply(struct felix *f, double *calc_ms)
{
	struct pol *p = calc_policy(f->c);
	uint64_t t0 = now_ns();
	pol_flush(p);
	*calc_ms = ms_since(t0);
	if (dataplane_apply(f->dp, NULL, pol_desired(p), &f->cfg, now_ms()) < 0) {
		fprintf(stderr, "felix apply failed: %s\n",
			dataplane_status(f->dp)->policy_problem);
		exit(1);
	}
	return ms_since(t0);
}

static size_t count_rules(void)
{
	FILE *p = popen("nft list table ip brindle-filter | grep -c ' comment \"cali:'", "r");
	size_t n = 0;
	if (p && fscanf(p, "%zu", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	return n;
}

/* One change at a size: median time to enforced of a policy changed and an endpoint added. */
static void change_curve(int local, int remote, int policies, double *pol_ms, double *ep_ms,
			 size_t *rules)
{
	double pol[RUNS * CHANGES], ep[RUNS * CHANGES], calc;
	int nc = 0;
	for (int r = 0; r < RUNS; r++) {
		sh("nft flush ruleset");
		struct felix f;
		felix_open(&f, local, remote, policies);
		felix_apply(&f, &calc);
		*rules = count_rules();
		for (int k = 0; k < CHANGES; k++, nc++) {
			emit(policy_scenario_policy(7, 1 + nc), f.c);
			pol[nc] = felix_apply(&f, &calc);
			emit(policy_scenario_endpoint(local + remote + nc, true), f.c);
			ep[nc] = felix_apply(&f, &calc);
		}
		felix_close(&f);
	}
	*pol_ms = median(pol, (size_t)nc);
	*ep_ms = median(ep, (size_t)nc);
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
	char path[] = "/tmp/bench-nft-XXXXXX";
	close(mkstemp(path));
	double f_total[RUNS], f_calc[RUNS], base[RUNS];
	size_t rules = 0;
	for (int r = 0; r < RUNS; r++) {
		sh("nft flush ruleset");
		struct felix f;
		felix_open(&f, local, remote, policies);
		f_total[r] = felix_apply(&f, &f_calc[r]);
		rules = count_rules();
		char cmd[512];
		snprintf(cmd, sizeof(cmd),
			 "(nft list table ip brindle-filter; nft list table ip brindle-nat) > %s",
			 path);
		sh(cmd);
		felix_close(&f);
		sh("nft flush ruleset");
		snprintf(cmd, sizeof(cmd), "nft -f %s", path);
		uint64_t t0 = now_ns();
		sh(cmd);
		base[r] = ms_since(t0);
	}
	unlink(path);
	double ft = median(f_total, RUNS), b = median(base, RUNS);
	printf("Policy programming on nftables: %d local endpoints, %d remote, %d policies "
	       "(median of %d)\n",
	       local, remote, policies, RUNS);
	printf("  in the kernel: %zu rules of felix's\n\n", rules);
	printf("Full programming from nothing\n");
	printf("  %-52s %8.1f ms  1.00x\n", "nft -f of the same ruleset (baseline)", b);
	printf("  %-52s %8.1f ms  %.2fx\n", "felix: calc + one nftables batch", ft, ft / b);
	printf("  %-52s %8.1f ms  %.2fx\n", "  of which the batch (build, send, commit)",
	       ft - median(f_calc, RUNS), (ft - median(f_calc, RUNS)) / b);
	printf("\nOne change with everything programmed: time to enforced (calc + batch)\n");
	printf("  %10s %10s %18s %18s\n", "local eps", "rules", "policy changed", "endpoint added");
	int sizes[] = { local / 10, local, local * 4 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double pm, em;
		size_t n;
		change_curve(sizes[i] ? sizes[i] : 1, remote, policies, &pm, &em, &n);
		printf("  %10d %10zu %15.2f ms %15.2f ms\n", sizes[i], n, pm, em);
	}
	return 0;
}
