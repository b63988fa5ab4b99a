/*
 * iptables programming time of the kernel backend (lib/ipt_kernel.c):
 *   bench_ipt_commit [PODS [RUNS]]      (default 500 pods, 7 runs; root)
 *
 * In a private network namespace, builds a felix-shaped filter table (see
 * shared/docs/reference/calico-felix.md §1.5, §8.3): per pod a cali-tw (12
 * rules) and cali-fw (14 rules) chain and a policy chain whose rule matches
 * an ip set (20 sets, created with ipset in the namespace), 20 namespace
 * profiles, 16-way dispatch trees, every rule with a cali: comment. Then,
 * medians over RUNS:
 *   (a) our backend loading it into an empty table in one session
 *   (b) iptables-legacy-restore --noflush loading the same rules from a file
 *   (c) bare libiptc: iptc_init, iptc_replace_entry of one rule, iptc_commit
 *       (a commit with no change writes nothing, so it needs the change)
 *   (d) our session replacing one rule of the loaded table
 * and the ratios a/b (goal ≤ 1.0) and d/c (goal ≤ 1.2). Both we and
 * iptables take a temporary lock file (XTABLES_LOCKFILE), not the machine's.
 */
#include <brindle/sys/ipt.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netinet/in.h>
#include <libiptc/libiptc.h>

#define NSETS 20
#define NNS   20

struct rule {
	const char *chain;
	char *text;
};

static char **chains;
static size_t nchains, chains_cap;
static struct rule *rules;
static size_t nrules, rules_cap;
static unsigned idseq;

static void chain(const char *name)
{
	GROW(chains, chains_cap, nchains + 1);
	chains[nchains++] = xstrdup(name);
}

/* @ip: the rule's -s/-d/-i/-o/-p part ("" for none), which iptables-save prints first. */
static void rule(const char *chain_name, const char *ip, const char *fmt, ...) printf_like(3, 4);
static void rule(const char *chain_name, const char *ip, const char *fmt, ...)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char id[17];
	uint64_t x = 0x9e3779b97f4a7c15ull * ++idseq;
	for (int i = 0; i < 16; i++, x = x * 6364136223846793005ull + 1442695040888963407ull)
		id[i] = b64[(x >> 58) & 63];
	id[16] = 0;
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sb_addf(&sb, "%s%s-m comment --comment \"cali:%s\"", ip, *ip ? " " : "", id);
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	GROW(rules, rules_cap, nrules + 1);
	rules[nrules].chain = chain_name;
	rules[nrules++].text = sb_detach(&sb);
}

static const char *last_chain(void)
{
	return chains[nchains - 1];
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void build(int pods)
{
	char name[64];
	chain("cali-FORWARD");
	const char *fwd = last_chain();
	rule(fwd, "", " -m comment --comment \"Start of policy\" -j MARK --set-xmark 0x0/0x1e0000");
	chain("cali-from-wl-dispatch");
	const char *from = last_chain();
	chain("cali-to-wl-dispatch");
	const char *to = last_chain();
	rule(fwd, "-i cali+", " -j %s", from);
	rule(fwd, "-o cali+", " -j %s", to);
	for (int n = 0; n < NNS; n++) {
		snprintf(name, sizeof(name), "cali-pri-kns.ns%d", n);
		chain(name);
		rule(last_chain(), "", " -j MARK --set-xmark 0x10000/0x10000");
		rule(last_chain(), "", " -m mark --mark 0x10000/0x10000 -j RETURN");
		snprintf(name, sizeof(name), "cali-pri-ksa.ns%d.default", n);
		chain(name);
	}
	const char *from_child[16], *to_child[16];
	for (int c = 0; c < 16; c++) {
		snprintf(name, sizeof(name), "cali-from-wl-dispatch-%x", c);
		chain(name);
		from_child[c] = last_chain();
		snprintf(name, sizeof(name), "cali-to-wl-dispatch-%x", c);
		chain(name);
		to_child[c] = last_chain();
		char ip[32];
		snprintf(ip, sizeof(ip), "-i cali%x+", c);
		rule(from, ip, " -g %s", from_child[c]);
		ip[1] = 'o';
		rule(to, ip, " -g %s", to_child[c]);
	}
	for (int p = 0; p < pods; p++) {
		char iface[16], tw[32], fw[32], pol[32];
		unsigned h = (unsigned)p * 2654435761u;
		snprintf(iface, sizeof(iface), "cali%x%07x%03x", h >> 28, h & 0xfffffff, p & 0xfff);
		snprintf(tw, sizeof(tw), "cali-tw-%s", iface);
		snprintf(fw, sizeof(fw), "cali-fw-%s", iface);
		snprintf(pol, sizeof(pol), "cali-pi-_%019x", p * 7919u + 11);
		chain(pol);
		const char *pc = last_chain();
		rule(pc, "-p tcp",
		     " -m set --match-set cali40s:set%019d src -m multiport --dports "
		     "80,443,8080:8090 -j MARK --set-xmark 0x10000/0x10000",
		     p % NSETS);
		rule(pc, "", " -m mark --mark 0x10000/0x10000 -j RETURN");
		int ns = p % NNS;
		for (int dir = 0; dir < 2; dir++) {
			chain(dir ? fw : tw);
			const char *c = last_chain();
			rule(c, "", " -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT");
			rule(c, "", " -m conntrack --ctstate INVALID -j DROP");
			rule(c, "", " -j MARK --set-xmark 0x0/0x30000");
			if (dir) {
				rule(c, "-p udp",
				     " -m comment --comment \"Drop VXLAN encapped packets "
				     "originating in workloads\" -m multiport --dports 4789 -j "
				     "DROP");
				rule(c, "-p ipencap",
				     " -m comment --comment \"Drop IPinIP encapped packets "
				     "originating in workloads\" -j DROP");
			}
			rule(c, "",
			     " -m comment --comment \"Start of tier default\" -j MARK --set-xmark "
			     "0x0/0x20000");
			rule(c, "", " -m mark --mark 0x0/0x20000 -j %s", pc);
			rule(c, "",
			     " -m comment --comment \"Return if policy accepted\" -m mark --mark "
			     "0x10000/0x10000 -j RETURN");
			rule(c, "",
			     " -m comment --comment \"End of tier default. Drop if no policies "
			     "passed packet\" -m mark --mark 0x0/0x20000 -j DROP");
			rule(c, "", " -j cali-pri-kns.ns%d", ns);
			rule(c, "",
			     " -m comment --comment \"Return if profile accepted\" -m mark --mark "
			     "0x10000/0x10000 -j RETURN");
			rule(c, "", " -j cali-pri-ksa.ns%d.default", ns);
			rule(c, "",
			     " -m comment --comment \"Return if profile accepted\" -m mark --mark "
			     "0x10000/0x10000 -j RETURN");
			rule(c, "",
			     " -m comment --comment \"Drop if no profiles matched\" -j DROP");
		}
		int child = (int)(h >> 28);
		char ip[32];
		snprintf(ip, sizeof(ip), "-i %s", iface);
		rule(from_child[child], ip, " -g %s", fw);
		ip[1] = 'o';
		rule(to_child[child], ip, " -g %s", tw);
	}
	for (int c = 0; c < 16; c++) {
		rule(from_child[c], "", " -m comment --comment \"Unknown interface\" -j DROP");
		rule(to_child[c], "", " -m comment --comment \"Unknown interface\" -j DROP");
	}
	rule(from, "", " -m comment --comment \"Unknown interface\" -j DROP");
	rule(to, "", " -m comment --comment \"Unknown interface\" -j DROP");
	rule("FORWARD", "", " -j cali-FORWARD");
	rule("FORWARD", "",
	     " -m comment --comment \"Policy explicitly accepted packet.\" -m mark --mark "
	     "0x10000/0x10000 -j ACCEPT");
	qsort(chains, nchains, sizeof(*chains), cmp_str);
}

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void must(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "bench_ipt_commit: %s failed\n", what);
		exit(1);
	}
}

static void empty_table(void)
{
	must(sh("printf '*filter\\n:INPUT ACCEPT [0:0]\\n:FORWARD ACCEPT [0:0]\\n"
		":OUTPUT ACCEPT [0:0]\\nCOMMIT\\n' | iptables-legacy-restore") == 0,
	     "emptying the table");
}

static void ok(struct ipt *t, int r, const char *what)
{
	if (r) {
		fprintf(stderr, "bench_ipt_commit: %s: %s\n", what, t ? ipt_last_error(t) : "");
		exit(1);
	}
}

static char lock_path[64];

static double load_ours(void)
{
	struct ipt *t;
	struct ipt_table_state st;
	uint64_t t0 = now_ns();
	ok(NULL, ipt_open_kernel(AF_INET, lock_path, 10000, &t), "open");
	ok(t, ipt_begin(t, "filter", &st), "begin");
	ipt_table_state_free(&st);
	for (size_t i = 0; i < nchains; i++)
		ok(t, ipt_new_chain(t, chains[i]), "new_chain");
	for (size_t i = 0; i < nrules; i++)
		ok(t, ipt_append(t, rules[i].chain, rules[i].text), rules[i].text);
	ok(t, ipt_commit(t), "commit");
	ipt_close(t);
	return (double)(now_ns() - t0) / 1e6;
}

static double load_restore(const char *file)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "iptables-legacy-restore -w 10 --noflush < %s", file);
	uint64_t t0 = now_ns();
	must(sh(cmd) == 0, "iptables-legacy-restore");
	return (double)(now_ns() - t0) / 1e6;
}

/* The rule (d) replaces, and its replacement for run @run. */
static const struct rule *replaced(size_t *pos)
{
	/* A rule in the middle of the table, inside one pod's chain. */
	const struct rule *r = &rules[nrules / 2];
	*pos = 0;
	for (const struct rule *x = r; x > rules && x[-1].chain == r->chain; x--)
		(*pos)++;
	return r;
}

static void replacement(int run, char *text, size_t size)
{
	snprintf(text, size,
		 "-m comment --comment \"cali:replacedreplace%03d\" -m mark --mark 0x%x/0x10000 -j "
		 "RETURN",
		 run % 1000, run & 1 ? 0x10000 : 0);
}

/* libiptc alone doing what (d) does: read the table, replace one entry, write it back. */
static double bare_libiptc(int run)
{
	size_t pos, len;
	const struct rule *r = replaced(&pos);
	char text[256];
	void *entry;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	replacement(run, text, sizeof(text));
	must(ipt_rule_parse(AF_INET, text, NULL, &entry, &len, &err) == 0, "parse");
	sb_free(&err);
	uint64_t t0 = now_ns();
	struct xtc_handle *h = iptc_init("filter");
	must(h != NULL, "iptc_init");
	must(iptc_replace_entry(r->chain, entry, (unsigned)pos, h), "iptc_replace_entry");
	must(iptc_commit(h), "iptc_commit");
	iptc_free(h);
	double ms = (double)(now_ns() - t0) / 1e6;
	free(entry);
	return ms;
}

/* iptc_init + iptc_commit with no change: libiptc returns without writing (a read only). */
static double init_commit_unchanged(void)
{
	uint64_t t0 = now_ns();
	struct xtc_handle *h = iptc_init("filter");
	must(h != NULL, "iptc_init");
	must(iptc_commit(h), "iptc_commit");
	iptc_free(h);
	return (double)(now_ns() - t0) / 1e6;
}

/* A read: what felix's writer pays to look at the table (libiptc parses it all). */
static double iptc_read(void)
{
	uint64_t t0 = now_ns();
	struct xtc_handle *h = iptc_init("filter");
	must(h != NULL, "iptc_init");
	iptc_free(h);
	return (double)(now_ns() - t0) / 1e6;
}

/* The kernel's copy of the table alone: the floor of any digest of it. */
static double kernel_copy(void)
{
	uint64_t t0 = now_ns();
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	must(fd >= 0, "raw socket");
	struct ipt_getinfo info = { .name = "filter" };
	socklen_t len = sizeof(info);
	must(getsockopt(fd, IPPROTO_IP, IPT_SO_GET_INFO, &info, &len) == 0, "IPT_SO_GET_INFO");
	size_t size = sizeof(struct ipt_get_entries) + info.size;
	struct ipt_get_entries *e = calloc(1, size);
	memcpy(e->name, info.name, sizeof(e->name));
	e->size = info.size;
	len = (socklen_t)size;
	must(getsockopt(fd, IPPROTO_IP, IPT_SO_GET_ENTRIES, e, &len) == 0, "IPT_SO_GET_ENTRIES");
	free(e);
	close(fd);
	return (double)(now_ns() - t0) / 1e6;
}

/* felix's drift check of the table: ipt_fingerprint. */
static double digest(struct ipt *t)
{
	uint64_t fp, t0 = now_ns();
	ok(t, ipt_fingerprint(t, "filter", true, &fp), "fingerprint");
	return (double)(now_ns() - t0) / 1e6;
}

static double replace_one(int run)
{
	struct ipt *t;
	struct ipt_table_state st;
	size_t pos;
	const struct rule *r = replaced(&pos);
	char text[256];
	replacement(run, text, sizeof(text));
	uint64_t t0 = now_ns();
	ok(NULL, ipt_open_kernel(AF_INET, lock_path, 10000, &t), "open");
	ok(t, ipt_begin(t, "filter", &st), "begin");
	ok(t, ipt_replace(t, r->chain, pos, text), "replace");
	ok(t, ipt_commit(t), "commit");
	double ms = (double)(now_ns() - t0) / 1e6;
	ipt_table_state_free(&st);
	ipt_close(t);
	return ms;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int pods = argc > 1 ? atoi(argv[1]) : 500, runs = argc > 2 ? atoi(argv[2]) : 7;
	if (pods < 1 || runs < 1 || runs > 100) {
		fprintf(stderr, "usage: %s [PODS [RUNS]]\n", argv[0]);
		return 2;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr, "unshare(CLONE_NEWNET): %s (run as root)\n", strerror(errno));
		return 1;
	}
	snprintf(lock_path, sizeof(lock_path), "/tmp/bench-ipt-%d.lock", (int)getpid());
	setenv("XTABLES_LOCKFILE", lock_path, 1);
	for (int s = 0; s < NSETS; s++) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "ipset create cali40s:set%019d hash:net", s);
		must(sh(cmd) == 0, "ipset create");
	}
	build(pods);

	char file[] = "/tmp/bench-ipt-XXXXXX";
	int fd = mkstemp(file);
	must(fd >= 0, "mkstemp");
	FILE *f = fdopen(fd, "w");
	fprintf(f, "*filter\n");
	for (size_t i = 0; i < nchains; i++)
		fprintf(f, ":%s - [0:0]\n", chains[i]);
	for (size_t i = 0; i < nrules; i++)
		fprintf(f, "-A %s %s\n", rules[i].chain, rules[i].text);
	fprintf(f, "COMMIT\n");
	fclose(f);

	printf("filter table: %d pods, %zu chains, %zu rules; median of %d runs\n", pods, nchains,
	       nrules, runs);
	double a[100], b[100], c[100], d[100], c0[100], e[100], r[100], k[100];
	struct ipt *fpt;
	ok(NULL, ipt_open_kernel(AF_INET, lock_path, 10000, &fpt), "open");
	for (int i = 0; i < runs; i++) {
		empty_table();
		a[i] = load_ours();
		empty_table();
		b[i] = load_restore(file);
		c0[i] = init_commit_unchanged();
		r[i] = iptc_read();
		k[i] = kernel_copy();
		e[i] = digest(fpt);
		/* Alternate which goes first: a table replace leaves the kernel freeing the old
		 * table, which the next one partly pays for. */
		if (i % 2) {
			d[i] = replace_one(2 * i + 1);
			c[i] = bare_libiptc(2 * i);
		} else {
			c[i] = bare_libiptc(2 * i);
			d[i] = replace_one(2 * i + 1);
		}
	}
	double ma = median(a, runs), mb = median(b, runs), mc = median(c, runs),
	       md = median(d, runs);
	printf("(a) brindle load from empty       %8.1f ms\n", ma);
	printf("(b) iptables-legacy-restore       %8.1f ms    a/b = %.2f (goal <= 1.0)\n", mb,
	       ma / mb);
	printf("    libiptc init + commit, no change %5.1f ms    (writes nothing: not a floor)\n",
	       median(c0, runs));
	printf("(c) bare libiptc, replace one     %8.1f ms\n", mc);
	printf("(d) brindle replace one rule      %8.1f ms    d/c = %.2f (goal <= 1.2)\n", md,
	       md / mc);
	double me = median(e, runs), mr = median(r, runs);
	printf("(e) brindle table digest (drift check) %4.1f ms    e/read = %.2f; read (iptc_init) "
	       "%.1f ms; the kernel's copy alone %.1f ms\n",
	       me, me / mr, mr, median(k, runs));
	ipt_close(fpt);
	unlink(file);
	unlink(lock_path);
	for (size_t i = 0; i < nrules; i++)
		free(rules[i].text);
	for (size_t i = 0; i < nchains; i++)
		free(chains[i]);
	free(rules);
	free(chains);
	return 0;
}
