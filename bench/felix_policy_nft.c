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
 *     local endpoints: the curve of a change's cost against the table's size,
 *     with its parts: the calculation, felix's planning of the batch, and the
 *     kernel's commit.
 *
 * Both families, alternating run by run (the IPv6 issue's goal: IPv6 within
 * 1.2x of IPv4 in the same run): IPv6 is the same cluster in IPv6 addresses
 * (policy_scenario_family), written into Brindle's ip6 tables. BENCH_FAMILY=4
 * or 6 runs one.
 *
 * Medians of 5 runs; ratios within the run.
 * Run: sudo build/release/bench/bench_felix_policy_nft [LOCAL [REMOTE [POLICIES [CURVE...]]]]
 * (CURVE: the local endpoints of each point of the curve; LOCAL/10, LOCAL, 4 LOCAL if none)
 * For a profile of one kind of change (perf record): BENCH_PROFILE=N makes N endpoint
 * additions (with BENCH_PROFILE_POLICY set, N changes of one policy's ports) at LOCAL after
 * one full program, and nothing else.
 */
#include "calc/calc.h"
#include "calc/policy.h"
#include "dataplane/dataplane.h"
#include "policy_scenario.h"

#include <brindle/sys/log.h>
#include <brindle/sys/nft.h>
#include <brindle/sys/rules_cleanup.h>
#include <brindle/sys/clock.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUNS	5
#define CHANGES 4

/* The family under way: AF_INET (nftables' ip tables) or AF_INET6 (ip6). */
static int af = AF_INET;

static const char *nft_family(void)
{
	return af == AF_INET6 ? "ip6" : "ip";
}

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
	struct nft *nft, *nft6;
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
	pol_set_dispatch_maps(policy(f), true); /* as felix does on nftables */
	policy_scenario_family(af);
	policy_scenario(local, remote, policies, emit, f->c);
	f->nft6 = NULL;
	if (nft_open(AF_INET, &f->nft) < 0 ||
	    (af == AF_INET6 && nft_open(AF_INET6, &f->nft6) < 0)) {
		fprintf(stderr, "cannot open nftables\n");
		exit(1);
	}
	struct dp_backends b = { .nft = f->nft, .nft6 = f->nft6 };
	f->dp = dataplane_new(&b);
}

static void felix_close(struct felix *f)
{
	dataplane_free(f->dp);
	nft_close(f->nft);
	nft_close(f->nft6);
	calc_free(f->c);
}

/* The handle of the family under way. */
static struct nft *nft_of(struct felix *f)
{
	return af == AF_INET6 ? f->nft6 : f->nft;
}

static double commit_ms; /* the kernel's share of the last apply */

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
	commit_ms = dataplane_status(f->dp)->rule_commit_ms;
	return ms_since(t0);
}

static size_t count_rules(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "nft list table %s brindle-filter | grep -c ' comment \"cali:'",
		 nft_family());
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (p && fscanf(p, "%zu", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	return n;
}

/* A change's time and its parts (medians). */
struct change {
	double total, calc, commit;
};

/*
 * The kernel's floor for a change of this table: one rule appended to a chain (a verdict, as
 * every rule of felix's has) in a batch of its own, timed as felix's commits are; the rule is
 * deleted again after. Every rule with a verdict makes the kernel check the table's jumps
 * again at the commit, from the base chains down.
 */
static double kernel_floor(struct nft *nft)
{
	struct nft_rule_ir ir;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (nft_rule_from_text(af, "-m comment --comment \"cali:benchfloor000000\" -j ACCEPT", &ir,
			       &err) < 0) {
		fprintf(stderr, "floor rule: %s\n", sb_str(&err));
		exit(1);
	}
	sb_free(&err);
	struct nft_batch *b = nft_batch_new(nft);
	nft_batch_add_rule(b, NFT_TABLE_FILTER, "cali-FORWARD", &ir);
	uint64_t t0 = now_ns();
	if (nft_batch_commit(b) < 0) {
		fprintf(stderr, "floor commit: %s\n", nft_last_error(nft));
		exit(1);
	}
	double ms = ms_since(t0);
	nft_batch_free(b);
	/* its handle, for the delete (untimed) */
	struct nft_table_state ts;
	uint64_t handle = 0;
	if (nft_read(nft, NFT_TABLE_FILTER, &ts) == 0) {
		const struct nft_chain_state *c = nft_table_state_chain(&ts, "cali-FORWARD");
		for (size_t i = 0; c && i < c->n; i++)
			if (streq(c->rules[i].id, ir.id))
				handle = c->rules[i].handle;
		nft_table_state_free(&ts);
	}
	if (!handle) {
		fprintf(stderr, "floor: the rule is not in cali-FORWARD\n");
		exit(1);
	}
	b = nft_batch_new(nft);
	nft_batch_del_rule(b, NFT_TABLE_FILTER, "cali-FORWARD", handle);
	if (nft_batch_commit(b) < 0) {
		fprintf(stderr, "floor delete: %s\n", nft_last_error(nft));
		exit(1);
	}
	nft_batch_free(b);
	return ms;
}

static struct change change_median(double *total, double *calc, double *commit, size_t n)
{
	return (struct change){ median(total, n), median(calc, n), median(commit, n) };
}

/* The changes measured at one size, over runs: time to enforced and its parts. */
struct samples {
	double floor[RUNS * CHANGES];
	double tot[3][RUNS * CHANGES], calc[3][RUNS * CHANGES], commit[3][RUNS * CHANGES];
	int n;
	size_t rules;
};

/*
 * One run at a size: everything programmed, then CHANGES times a policy changed, a local
 * endpoint added and a remote one added (it joins the sets of the policies that select it),
 * each with the kernel's floor after.
 */
static void change_run(int local, int remote, int policies, struct samples *s)
{
	double calc;
	sh("nft flush ruleset");
	struct felix f;
	felix_open(&f, local, remote, policies);
	felix_apply(&f, &calc);
	s->rules = count_rules();
	for (int k = 0; k < CHANGES; k++) {
		int nc = s->n++;
		emit(policy_scenario_policy(7, 1 + nc), f.c);
		s->tot[0][nc] = felix_apply(&f, &s->calc[0][nc]);
		s->commit[0][nc] = commit_ms;
		emit(policy_scenario_endpoint(local + remote + nc, true), f.c);
		s->tot[1][nc] = felix_apply(&f, &s->calc[1][nc]);
		s->commit[1][nc] = commit_ms;
		emit(policy_scenario_endpoint(local + remote + 1000 + nc, false), f.c);
		s->tot[2][nc] = felix_apply(&f, &s->calc[2][nc]);
		s->commit[2][nc] = commit_ms;
		s->floor[nc] = kernel_floor(nft_of(&f));
	}
	felix_close(&f);
}

static void print_change(const struct change *c)
{
	printf(" %7.2f ms (%5.2f + %5.2f + %5.2f)", c->total, c->calc,
	       c->total - c->calc - c->commit, c->commit);
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
	if (getenv("BENCH_PROFILE")) {
		struct felix f;
		double calc, sum = 0, sum_calc = 0;
		int n = atoi(getenv("BENCH_PROFILE"));
		/* BENCH_PROFILE_POLICY: a policy changed each time instead */
		bool pol = getenv("BENCH_PROFILE_POLICY") != NULL;
		felix_open(&f, local, remote, policies);
		felix_apply(&f, &calc);
		for (int k = 0; k < n; k++) {
			emit(pol ? policy_scenario_policy(7, 1 + k)
				 : policy_scenario_endpoint(local + remote + k, true),
			     f.c);
			sum += felix_apply(&f, &calc);
			sum_calc += calc;
		}
		printf("%d %s at %d local: %.2f ms each, of which calc %.2f ms\n", n,
		       pol ? "policy changes" : "endpoint additions", local, sum / n, sum_calc / n);
		felix_close(&f);
		return 0;
	}
	const char *fam = getenv("BENCH_FAMILY"); /* 4, 6, or both (unset) */
	bool v4 = !fam || strcmp(fam, "6") != 0, v6 = !fam || strcmp(fam, "4") != 0;
	int fams[2], n_fams = 0;
	if (v4)
		fams[n_fams++] = AF_INET;
	if (v6)
		fams[n_fams++] = AF_INET6;
	double f_total[2][RUNS], f_calc[2][RUNS], base[2][RUNS], readback[2][RUNS];
	size_t rules[2] = { 0 };
	/* the families run by run, alternating, so that a slow minute falls on both */
	for (int r = 0; r < RUNS; r++) {
		for (int k = 0; k < n_fams; k++) {
			af = fams[k];
			sh("nft flush ruleset");
			struct felix f;
			felix_open(&f, local, remote, policies);
			f_total[k][r] = felix_apply(&f, &f_calc[k][r]);
			rules[k] = count_rules();
			/* what a writer without felix's mirror would read before each change */
			struct nft_table_state ts;
			uint64_t t_read = now_ns();
			if (nft_read(nft_of(&f), NFT_TABLE_FILTER, &ts) < 0) {
				fprintf(stderr, "read back: %s\n", nft_last_error(nft_of(&f)));
				exit(1);
			}
			readback[k][r] = ms_since(t_read);
			nft_table_state_free(&ts);
			char cmd[512];
			snprintf(
				cmd, sizeof(cmd),
				"(nft list table %s brindle-filter; nft list table %s brindle-nat) "
				"> %s",
				nft_family(), nft_family(), path);
			sh(cmd);
			felix_close(&f);
			sh("nft flush ruleset");
			snprintf(cmd, sizeof(cmd), "nft -f %s", path);
			uint64_t t0 = now_ns();
			sh(cmd);
			base[k][r] = ms_since(t0);
		}
	}
	unlink(path);
	printf("Policy programming on nftables: %d local endpoints, %d remote, %d policies "
	       "(median of %d)\n",
	       local, remote, policies, RUNS);
	double full[2] = { 0 };
	for (int k = 0; k < n_fams; k++) {
		af = fams[k];
		double ft = median(f_total[k], RUNS), b = median(base[k], RUNS);
		full[k] = ft;
		printf("\n%s: in the kernel, %zu rules of felix's (tables of family %s)\n",
		       af == AF_INET6 ? "IPv6" : "IPv4", rules[k], nft_family());
		printf("Full programming from nothing\n");
		printf("  %-52s %8.1f ms  1.00x\n", "nft -f of the same ruleset (baseline)", b);
		printf("  %-52s %8.1f ms  %.2fx\n", "felix: calc + one nftables batch", ft, ft / b);
		printf("  %-52s %8.1f ms  %.2fx\n", "  of which the batch (build, send, commit)",
		       ft - median(f_calc[k], RUNS), (ft - median(f_calc[k], RUNS)) / b);
		printf("  %-52s %8.1f ms\n", "reading the filter table back (no mirror)",
		       median(readback[k], RUNS));
	}
	printf("\nOne change with everything programmed: time to enforced (calc + plan + kernel "
	       "commit)\n");
	printf("  %4s %9s %8s %10s %-37s %-37s %-37s\n", "", "local eps", "rules", "kernel",
	       "  policy changed", "  local endpoint added", "  remote endpoint added");
	int sizes[16] = { local / 10, local, local * 4 }, n_sizes = 3;
	if (argc > 4)
		for (n_sizes = 0; n_sizes < 16 && 4 + n_sizes < argc; n_sizes++)
			sizes[n_sizes] = atoi(argv[4 + n_sizes]);
	struct change at_local[2][3];
	bool have_local = false;
	for (int i = 0; i < n_sizes; i++) {
		static struct samples sm[2];
		memset(sm, 0, sizeof(sm));
		/* run by run, the families alternating, as the full programming above */
		for (int r = 0; r < RUNS; r++) {
			for (int k = 0; k < n_fams; k++) {
				af = fams[k];
				change_run(sizes[i] ? sizes[i] : 1, remote, policies, &sm[k]);
			}
		}
		for (int k = 0; k < n_fams; k++) {
			af = fams[k];
			struct change c[3];
			for (int j = 0; j < 3; j++)
				c[j] = change_median(sm[k].tot[j], sm[k].calc[j], sm[k].commit[j],
						     (size_t)sm[k].n);
			printf("  %4s %9d %8zu %7.2f ms", af == AF_INET6 ? "IPv6" : "IPv4",
			       sizes[i], sm[k].rules, median(sm[k].floor, (size_t)sm[k].n));
			for (int j = 0; j < 3; j++)
				print_change(&c[j]);
			printf("\n");
			if (sizes[i] == local) {
				memcpy(at_local[k], c, sizeof(c));
				have_local = true;
			}
		}
	}
	if (n_fams == 2) {
		printf("\nIPv6 against IPv4, same run (goal: within 1.2x)\n");
		printf("  %-52s %8.2fx\n", "full programming", full[1] / full[0]);
		static const char *const what[] = { "one policy changed",
						    "one local endpoint added",
						    "one remote endpoint added" };
		for (int j = 0; j < 3 && have_local; j++)
			printf("  %-52s %8.2fx\n", what[j],
			       at_local[1][j].total / at_local[0][j].total);
	}
	return 0;
}
