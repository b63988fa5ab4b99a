/*
 * ip set programming through our kernel backend (libipset, in process) next
 * to `ipset restore` of the same lines, in a network namespace of its own:
 *
 *  1. Full load: SETS sets (every tenth a hash:ip,port, the rest hash:net, as
 *     felix's selector and named-port sets) holding MEMBERS members between
 *     them, created and filled from nothing. Ours includes building the
 *     batch; `ipset restore` includes starting the program and parsing.
 *  2. With everything loaded: one member added, then removed again (ours:
 *     a batch of one; baselines: `ipset restore` of one line, `ipset add`).
 *  3. Reading everything back: list() next to `ipset save`.
 *
 * Every figure is the median of RUNS runs (the one-member figures of 10 per
 * run); ratios are ours over the baseline's.
 * Run: sudo build/release/bench/bench_ipset_load [SETS [MEMBERS [RUNS]]]
 */
#include <brindle/sys/ipset.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_ipset_load: %s: %s\n", what, why);
	exit(1);
}

/* Run ipset with @args (NULL-terminated after "ipset"), stdin from @in (or /dev/null). */
static double run_ipset(const char *in, char *const args[])
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, in ? in : "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	uint64_t t0 = now_ns();
	pid_t pid;
	if (posix_spawnp(&pid, "ipset", &fa, NULL, args, environ) != 0)
		die("ipset", "cannot start it");
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("ipset", "failed");
	double ms = ms_since(t0);
	posix_spawn_file_actions_destroy(&fa);
	return ms;
}

static void set_name(char *out, size_t size, int set)
{
	snprintf(out, size, "cali40%c:bench%05d", set % 10 == 9 ? 'n' : 's', set);
}

static enum ips_type set_type(int set)
{
	return set % 10 == 9 ? IPS_HASH_IP_PORT : IPS_HASH_NET;
}

static void member(int set, int i, char *out, size_t size)
{
	uint32_t v = (uint32_t)i + 1;
	if (set_type(set) == IPS_HASH_IP_PORT)
		snprintf(out, size, "10.%u.%u.%u,tcp:%d", (v >> 16) & 0xff, (v >> 8) & 0xff,
			 v & 0xff, 8000 + set % 100);
	else if (i % 10 == 0)
		snprintf(out, size, "172.%u.%u.0/24", (v >> 8) & 0xff, v & 0xff);
	else
		snprintf(out, size, "10.%u.%u.%u", (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
}

static int sets, members;

/* Member @i (0..members-1) belongs to set i % sets. */
static void build_batch(struct ips_batch *b)
{
	char name[32], m[64];
	for (int s = 0; s < sets; s++) {
		struct ips_info info = { .type = set_type(s), .family = AF_INET };
		set_name(info.name, sizeof(info.name), s);
		ips_batch_create(b, &info);
		for (int i = s; i < members; i += sets) {
			member(s, i, m, sizeof(m));
			set_name(name, sizeof(name), s);
			ips_batch_add(b, name, m);
		}
	}
}

static void write_restore_file(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		die(path, strerror(errno));
	struct ips_batch *b = ips_batch_new();
	build_batch(b);
	for (size_t i = 0; i < ips_batch_count(b); i++)
		fprintf(f, "%s\n", ips_batch_describe(b, i));
	ips_batch_free(b);
	if (fclose(f) != 0)
		die(path, strerror(errno));
}

static void apply_ok(struct ips *s, struct ips_batch *b)
{
	if (ips_apply(s, b, NULL) != 0)
		die("apply", ips_last_error(s));
	ips_batch_reset(b);
}

static void destroy_all(struct ips *s)
{
	struct ips_list l = { 0 };
	if (ips_list_names(s, "cali", &l) < 0)
		die("list", ips_last_error(s));
	struct ips_batch *b = ips_batch_new();
	for (size_t i = 0; i < l.n; i++)
		ips_batch_destroy(b, l.v[i].info.name);
	if (l.n)
		apply_ok(s, b);
	ips_batch_free(b);
	ips_list_free(&l);
}

/* Our list of everything, as "NAME MEMBER" lines, for checking both ways loaded the same. */
static void fingerprint(struct ips *s, struct strbuf *out)
{
	struct ips_list l = { 0 };
	if (ips_list_sets(s, "cali", &l) < 0)
		die("list", ips_last_error(s));
	sb_reset(out);
	for (size_t i = 0; i < l.n; i++)
		for (size_t j = 0; j < l.v[i].n; j++)
			sb_addf(out, "%s %s\n", l.v[i].info.name, l.v[i].members[j]);
	ips_list_free(&l);
}

int main(int argc, char **argv)
{
	sets = argc > 1 ? atoi(argv[1]) : 500;
	members = argc > 2 ? atoi(argv[2]) : 20000;
	int runs = argc > 3 ? atoi(argv[3]) : 5;
	if (sets <= 0 || members < 0 || runs <= 0) {
		fprintf(stderr, "usage: %s [SETS [MEMBERS [RUNS]]]\n", argv[0]);
		return 2;
	}
	if (unshare(CLONE_NEWNET) < 0)
		die("unshare(CLONE_NEWNET)", strerror(errno));
	char dir[] = "/tmp/bench-ipset-XXXXXX";
	if (!mkdtemp(dir))
		die("mkdtemp", strerror(errno));
	char full[64], one_add[64], one_del[64];
	snprintf(full, sizeof(full), "%s/full", dir);
	snprintf(one_add, sizeof(one_add), "%s/add", dir);
	snprintf(one_del, sizeof(one_del), "%s/del", dir);
	write_restore_file(full);
	char target[32];
	set_name(target, sizeof(target), 0);
	const char *extra = "10.250.250.250";
	FILE *f = fopen(one_add, "w");
	fprintf(f, "add %s %s\n", target, extra);
	fclose(f);
	f = fopen(one_del, "w");
	fprintf(f, "del %s %s\n", target, extra);
	fclose(f);

	struct ips *s;
	int r = ips_open_kernel(&s);
	if (r < 0)
		die("ips_open_kernel", strerror(-r));
	struct ips_batch *b = ips_batch_new();
	double *ours = calloc((size_t)runs, sizeof(double));
	double *restore = calloc((size_t)runs, sizeof(double));
	int k1 = 10, nk = runs * k1;
	double *add1 = calloc((size_t)nk, sizeof(double)),
	       *del1 = calloc((size_t)nk, sizeof(double));
	double *radd1 = calloc((size_t)nk, sizeof(double)),
	       *rdel1 = calloc((size_t)nk, sizeof(double));
	double *cadd1 = calloc((size_t)nk, sizeof(double));
	double *list = calloc((size_t)runs, sizeof(double)),
	       *save = calloc((size_t)runs, sizeof(double));
	double *names = calloc((size_t)runs, sizeof(double)),
	       *terse = calloc((size_t)runs, sizeof(double));
	struct strbuf fp_ours, fp_restore;
	sb_init(&fp_ours);
	sb_init(&fp_restore);
	char *restore_args[] = { "ipset", "restore", "-exist", NULL };
	char *save_args[] = { "ipset", "save", NULL };
	char *terse_args[] = { "ipset", "list", "-terse", NULL };
	char *add_args[] = { "ipset", "-exist", "add", target, (char *)extra, NULL };
	size_t ops = 0;

	for (int run = 0; run < runs; run++) {
		destroy_all(s);
		uint64_t t0 = now_ns();
		build_batch(b);
		ops = ips_batch_count(b);
		apply_ok(s, b);
		ours[run] = ms_since(t0);
		if (run == 0)
			fingerprint(s, &fp_ours);

		/* One member in and out, with everything loaded. */
		for (int k = 0; k < k1; k++) {
			t0 = now_ns();
			ips_batch_add(b, target, extra);
			apply_ok(s, b);
			add1[run * k1 + k] = ms_since(t0);
			t0 = now_ns();
			ips_batch_del(b, target, extra);
			apply_ok(s, b);
			del1[run * k1 + k] = ms_since(t0);
			radd1[run * k1 + k] = run_ipset(one_add, restore_args);
			rdel1[run * k1 + k] = run_ipset(one_del, restore_args);
			cadd1[run * k1 + k] = run_ipset(NULL, add_args);
			run_ipset(one_del, restore_args);
		}

		t0 = now_ns();
		struct ips_list l = { 0 };
		if (ips_list_sets(s, "cali", &l) < 0)
			die("list", ips_last_error(s));
		list[run] = ms_since(t0);
		ips_list_free(&l);
		save[run] = run_ipset(NULL, save_args);
		t0 = now_ns();
		if (ips_list_names(s, "cali", &l) < 0)
			die("list_names", ips_last_error(s));
		names[run] = ms_since(t0);
		ips_list_free(&l);
		terse[run] = run_ipset(NULL, terse_args);

		destroy_all(s);
		restore[run] = run_ipset(full, restore_args);
		if (run == 0) {
			fingerprint(s, &fp_restore);
			if (strcmp(sb_str(&fp_ours), sb_str(&fp_restore)) != 0)
				die("check", "ours and ipset restore loaded different sets");
		}
	}
	destroy_all(s);

	double o = median(ours, (size_t)runs), rs = median(restore, (size_t)runs);
	printf("Full load: %d sets, %d members, %zu operations (median of %d)\n", sets, members,
	       ops, runs);
	printf("  %-44s %8.2f ms  1.00x\n", "ipset restore (baseline)", rs);
	printf("  %-44s %8.2f ms  %.2fx\n", "ours: build the batch + apply", o, o / rs);
	double ra = median(radd1, (size_t)nk), rd = median(rdel1, (size_t)nk);
	double a = median(add1, (size_t)nk), d = median(del1, (size_t)nk);
	double ca = median(cadd1, (size_t)nk);
	printf("\nOne member added, then removed, with all loaded (median of %d)\n", nk);
	printf("  %-44s %8.3f ms  1.00x\n", "ipset restore, one add line (baseline)", ra);
	printf("  %-44s %8.3f ms  %.2fx\n", "ipset -exist add", ca, ca / ra);
	printf("  %-44s %8.3f ms  %.3fx\n", "ours: add", a, a / ra);
	printf("  %-44s %8.3f ms  1.00x\n", "ipset restore, one del line (baseline)", rd);
	printf("  %-44s %8.3f ms  %.3fx\n", "ours: del", d, d / rd);
	double li = median(list, (size_t)runs), sv = median(save, (size_t)runs);
	printf("\nReading everything back (median of %d)\n", runs);
	printf("  %-44s %8.2f ms  1.00x\n", "ipset save > /dev/null (baseline)", sv);
	printf("  %-44s %8.2f ms  %.2fx\n", "ours: list (parsed, canonical, sorted)", li, li / sv);
	double ln = median(names, (size_t)runs), te = median(terse, (size_t)runs);
	printf("\nEvery set's size, no members (felix's drift check; median of %d)\n", runs);
	printf("  %-44s %8.2f ms  1.00x\n", "ipset list -terse > /dev/null (baseline)", te);
	printf("  %-44s %8.2f ms  %.2fx\n", "ours: list_names (one netlink dump)", ln, ln / te);

	unlink(full);
	unlink(one_add);
	unlink(one_del);
	rmdir(dir);
	sb_free(&fp_ours);
	sb_free(&fp_restore);
	free(ours);
	free(restore);
	free(add1);
	free(del1);
	free(radd1);
	free(rdel1);
	free(cadd1);
	free(list);
	free(save);
	ips_batch_free(b);
	ips_close(s);
	return 0;
}
