/*
 * The nf_tables backend (lib/sys/nft_kernel.c) against the real kernel, in a
 * network namespace of the test's own (unshare): tables belong to a
 * namespace, so nothing here touches the machine's, and everything goes with
 * the namespace when the test exits. What the backend writes is compared with
 * what nft(8), run in the same namespace, lists: nft's own reading of the
 * expressions, so a translation that means something else shows. Every
 * command runs under timeout(1).
 */
#include "harness.h"
#include "nft_elems.h"

#include <brindle/sys/nft.h>

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/netfilter.h>

#define T "brindle-test"

static struct nft *N;

static int printf_like(1, 2) sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char full[1100];
	snprintf(full, sizeof(full), "timeout 20 %s", cmd);
	int r = system(full);
	return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

/* What `nft list table FAMILY T` prints, its lines' leading tabs kept. */
static char *listed_family(const char *family, const char *table)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "timeout 20 nft list table %s %s", family, table);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(&out, buf, n);
	pclose(f);
	return sb_detach(&out);
}

static char *listed(const char *table)
{
	return listed_family("ip", table);
}

static void rule_af(int af, struct nft_batch *b, const char *chain, const char *text)
{
	struct nft_rule_ir ir;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (nft_rule_from_text(af, text, &ir, &err) < 0)
		fail_msg("%s: %s", text, sb_str(&err));
	sb_free(&err);
	nft_batch_add_rule(b, T, chain, &ir);
}

static void rule(struct nft_batch *b, const char *chain, const char *text)
{
	rule_af(AF_INET, b, chain, text);
}

static void commit(struct nft_batch *b)
{
	if (nft_batch_commit(b) < 0)
		fail_msg("commit: %s", nft_last_error(N));
	nft_batch_free(b);
}

static int setup(void **state)
{
	if (unshare(CLONE_NEWNET) < 0) {
		print_error("unshare(CLONE_NEWNET): %s (needs root)\n", strerror(errno));
		return -1;
	}
	if (nft_open(AF_INET, &N) < 0) {
		print_error("nft_open failed\n");
		return -1;
	}
	(void)state;
	return 0;
}

static int teardown(void **state)
{
	nft_close(N);
	(void)state;
	return 0;
}

static int clean(void **state)
{
	sh("nft flush ruleset");
	(void)state;
	return 0;
}

static const char *const want_table =
	"table ip brindle-test {\n"
	"\tset cali40s_web {\n"
	"\t\ttype ipv4_addr\n"
	"\t\tflags interval\n"
	"\t\telements = { 10.0.0.0/24, 10.1.0.5 }\n"
	"\t}\n"
	"\n"
	"\tset cali40n_http {\n"
	"\t\ttype ipv4_addr . inet_proto . inet_service\n"
	"\t\telements = { 10.0.0.1 . tcp . 80 }\n"
	"\t}\n"
	"\n"
	"\tchain cali-pi-web {\n"
	"\t\tip saddr @cali40s_web counter packets 0 bytes 0 meta mark set meta mark | 0x00010000 "
	"comment "
	"\"cali:aaaaaaaaaaaaaaaa\"\n"
	"\t\tip daddr . meta l4proto . th dport @cali40n_http counter packets 0 bytes 0 accept "
	"comment "
	"\"cali:bbbbbbbbbbbbbbbb\"\n"
	"\t\ttcp dport { 22, 8000-8080 } counter packets 0 bytes 0 drop comment "
	"\"cali:cccccccccccccccc\"\n"
	"\t}\n"
	"\n"
	"\tchain FORWARD {\n"
	"\t\ttype filter hook forward priority filter; policy accept;\n"
	"\t\tct state established,related counter packets 0 bytes 0 accept comment "
	"\"cali:dddddddddddddddd\"\n"
	"\t\tiifname \"cali*\" meta mark & 0x00030000 == 0x00000000 counter packets 0 bytes 0 jump "
	"cali-pi-web comment "
	"\"cali:eeeeeeeeeeeeeeee\"\n"
	"\t\toifname \"cali*\" limit rate 10/second burst 20 packets counter packets 0 bytes 0 log "
	"prefix \"Di:e:cali1\" "
	"group 1 comment \"cali:ffffffffffffffff\"\n"
	"\t}\n"
	"}\n";

static void write_example(void)
{
	struct nft_batch *b = nft_batch_new(N);
	nft_batch_add_table(b, T);
	nft_batch_add_set(b, T, "cali40s_web", NFT_SET_ADDRS);
	struct nft_elem web[] = { elem_range4(0x0a000000, 0x0a0000ff),
				  elem_range4(0x0a010005, 0x0a010005) };
	nft_batch_elems(b, T, "cali40s_web", NFT_SET_ADDRS, web, 2, true);
	nft_batch_add_set(b, T, "cali40n_http", NFT_SET_PORTS);
	struct nft_elem http[] = { elem_port4(0x0a000001, 6, 80) };
	nft_batch_elems(b, T, "cali40n_http", NFT_SET_PORTS, http, 1, true);
	nft_batch_add_chain(b, T, "cali-pi-web", -1, 0, NULL);
	nft_batch_add_chain(b, T, "FORWARD", NF_INET_FORWARD, 0, "filter");
	rule(b, "cali-pi-web",
	     "-m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -m set --match-set cali40s:web src "
	     "-j MARK --set-xmark 0x10000/0x10000");
	rule(b, "cali-pi-web",
	     "-m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -m set --match-set cali40n:http "
	     "dst,dst -j ACCEPT");
	rule(b, "cali-pi-web",
	     "-p tcp -m comment --comment \"cali:cccccccccccccccc\" -m multiport --dports "
	     "22,8000:8080 -j DROP");
	rule(b, "FORWARD",
	     "-m comment --comment \"cali:dddddddddddddddd\" -m conntrack --ctstate "
	     "RELATED,ESTABLISHED -j ACCEPT");
	rule(b, "FORWARD",
	     "-i cali+ -m comment --comment \"cali:eeeeeeeeeeeeeeee\" -m mark --mark 0x0/0x30000 "
	     "-j cali-pi-web");
	rule(b, "FORWARD",
	     "-o cali+ -m comment --comment \"cali:ffffffffffffffff\" -m limit --limit 10/sec "
	     "--limit-burst 20 -j NFLOG --nflog-prefix \"Di:e:cali1\" --nflog-group 1");
	commit(b);
}

/* Written in one batch, read back by nft and by the backend alike. */
static void test_write_and_read(void **state)
{
	write_example();
	char *got = listed(T);
	if (strcmp(got, want_table) != 0)
		fail_msg("nft lists:\n%s\nwanted:\n%s", got, want_table);
	free(got);
	/* what nft lists, nft reads back (an operator's `nft -f` of a saved table works) */
	char path[] = "/tmp/brindle-test-nft-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sh("sh -c 'nft list table ip %s > %s && nft delete table ip %s && "
			    "nft -f %s'",
			    T, path, T, path),
			 0);
	unlink(path);
	got = listed(T);
	assert_string_equal(got, want_table);
	free(got);

	struct nft_table_state ts;
	assert_int_equal(nft_read(N, T, &ts), 0);
	assert_true(ts.exists);
	assert_int_equal(ts.n_chains, 2);
	const struct nft_chain_state *c = nft_table_state_chain(&ts, "FORWARD");
	assert_non_null(c);
	assert_true(c->base);
	assert_int_equal(c->n, 3);
	assert_string_equal(c->rules[1].id, "cali:eeeeeeeeeeeeeeee");
	c = nft_table_state_chain(&ts, "cali-pi-web");
	assert_false(c->base);
	assert_int_equal(c->n, 3);
	const struct nft_set_state *s = nft_table_state_set(&ts, "cali40s_web");
	assert_non_null(s);
	assert_int_equal(s->kind, NFT_SET_ADDRS);
	assert_int_equal(s->n, 2);
	assert_int_equal(elem_addr4(s->elems[0].lo), 0x0a000000);
	assert_int_equal(elem_addr4(s->elems[0].hi), 0x0a0000ff);
	assert_int_equal(elem_addr4(s->elems[1].lo), 0x0a010005);
	assert_int_equal(elem_addr4(s->elems[1].hi), 0x0a010005);
	s = nft_table_state_set(&ts, "cali40n_http");
	assert_int_equal(s->kind, NFT_SET_PORTS);
	assert_int_equal(s->n, 1);
	assert_int_equal(s->elems[0].proto, 6);
	assert_int_equal(s->elems[0].port, 80);
	nft_table_state_free(&ts);

	/* another table's chains, rules and sets are not this one's */
	struct nft_batch *b = nft_batch_new(N);
	nft_batch_add_table(b, "brindle-other");
	nft_batch_add_chain(b, "brindle-other", "POSTROUTING", NF_INET_POST_ROUTING, 100, "nat");
	nft_batch_add_set(b, "brindle-other", "cali40s_other", NFT_SET_ADDRS);
	commit(b);
	assert_int_equal(nft_read(N, T, &ts), 0);
	assert_int_equal(ts.n_chains, 2);
	assert_int_equal(ts.n_sets, 2);
	assert_null(nft_table_state_chain(&ts, "POSTROUTING"));
	nft_table_state_free(&ts);

	/* a table that is not there reads as such */
	assert_int_equal(nft_read(N, "brindle-none", &ts), 0);
	assert_false(ts.exists);
	(void)state;
}

/* Edits by handle and by element; a generation that moves with every commit. */
static void test_edits(void **state)
{
	write_example();
	uint32_t g0, g1;
	assert_int_equal(nft_generation(N, &g0), 0);
	struct nft_table_state ts;
	assert_int_equal(nft_read(N, T, &ts), 0);
	const struct nft_chain_state *c = nft_table_state_chain(&ts, "cali-pi-web");
	struct nft_batch *b = nft_batch_new(N);
	nft_batch_del_rule(b, T, "cali-pi-web", c->rules[2].handle);
	struct nft_elem gone = elem_range4(0x0a010005, 0x0a010005);
	nft_batch_elems(b, T, "cali40s_web", NFT_SET_ADDRS, &gone, 1, false);
	struct nft_elem top = elem_range4(0xffffff00, 0xffffffff);
	nft_batch_elems(b, T, "cali40s_web", NFT_SET_ADDRS, &top, 1, true);
	nft_batch_add_set(b, T, "cali40s_empty", NFT_SET_ADDRS); /* read back with no element */
	/* adjacent intervals (one's end is the next one's start) read back as they are */
	nft_batch_add_set(b, T, "cali40s_adjacent", NFT_SET_ADDRS);
	struct nft_elem adj[] = { elem_range4(0x0a000014, 0x0a000014),
				  elem_range4(0x0a000015, 0x0a000015),
				  elem_range4(0x0a000016, 0x0a00001f) };
	nft_batch_elems(b, T, "cali40s_adjacent", NFT_SET_ADDRS, adj, 3, true);
	rule(b, "FORWARD", "-m comment --comment \"cali:9999999999999999\" -j DROP");
	commit(b);
	nft_table_state_free(&ts);
	/* appended, with a handle of its own */
	assert_int_equal(nft_read(N, T, &ts), 0);
	c = nft_table_state_chain(&ts, "FORWARD");
	assert_int_equal(c->n, 4);
	assert_string_equal(c->rules[3].id, "cali:9999999999999999");
	assert_true(c->rules[3].handle > c->rules[2].handle);
	nft_table_state_free(&ts);
	assert_int_equal(nft_generation(N, &g1), 0);
	assert_true(g1 != g0);
	assert_int_equal(nft_read(N, T, &ts), 0);
	c = nft_table_state_chain(&ts, "cali-pi-web");
	assert_int_equal(c->n, 2);
	assert_string_equal(c->rules[1].id, "cali:bbbbbbbbbbbbbbbb");
	const struct nft_set_state *s = nft_table_state_set(&ts, "cali40s_web");
	assert_int_equal(s->n, 2);
	assert_int_equal(elem_addr4(s->elems[1].lo), 0xffffff00);
	assert_int_equal(elem_addr4(s->elems[1].hi), 0xffffffff);
	s = nft_table_state_set(&ts, "cali40s_empty");
	assert_non_null(s);
	assert_int_equal(s->n, 0);
	s = nft_table_state_set(&ts, "cali40s_adjacent");
	assert_int_equal(s->n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(memcmp(s->elems[i].lo, adj[i].lo, 4), 0);
		assert_int_equal(memcmp(s->elems[i].hi, adj[i].hi, 4), 0);
	}
	nft_table_state_free(&ts);
	char *got = listed(T);
	assert_non_null(strstr(got, "elements = { 10.0.0.0/24, 255.255.255.0/24 }"));
	free(got);
	(void)state;
}

/*
 * A chain and a set written again whole in one batch, as the nftables writer does when a chain
 * differs or a set is made again: flushed, then filled.
 */
static void test_flush_and_refill(void **state)
{
	write_example();
	struct nft_batch *b = nft_batch_new(N);
	nft_batch_flush_chain(b, T, "cali-pi-web");
	struct nft_rule_ir ir;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	const char *texts[] = { "-m comment --comment \"cali:cccccccccccccccc\" -j ACCEPT",
				"-m comment --comment \"cali:dddddddddddddddd\" -j DROP" };
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		if (nft_rule_from_text(AF_INET, texts[i], &ir, &err) < 0)
			fail_msg("%s: %s", texts[i], sb_str(&err));
		nft_batch_add_rule(b, T, "cali-pi-web", &ir);
	}
	sb_free(&err);
	nft_batch_flush_set(b, T, "cali40s_web");
	struct nft_elem host = elem_range4(0x0a010009, 0x0a010009);
	nft_batch_elems(b, T, "cali40s_web", NFT_SET_ADDRS, &host, 1, true);
	/* an empty set flushed is no error */
	nft_batch_add_set(b, T, "cali40s_none", NFT_SET_ADDRS);
	nft_batch_flush_set(b, T, "cali40s_none");
	commit(b);
	struct nft_table_state ts;
	assert_int_equal(nft_read(N, T, &ts), 0);
	const struct nft_chain_state *c = nft_table_state_chain(&ts, "cali-pi-web");
	assert_int_equal(c->n, 2);
	assert_string_equal(c->rules[0].id, "cali:cccccccccccccccc");
	assert_string_equal(c->rules[1].id, "cali:dddddddddddddddd");
	assert_true(c->rules[0].handle != 0 && c->rules[1].handle > c->rules[0].handle);
	const struct nft_set_state *s = nft_table_state_set(&ts, "cali40s_web");
	assert_int_equal(s->n, 1);
	assert_int_equal(elem_addr4(s->elems[0].lo), 0x0a010009);
	assert_int_equal(elem_addr4(s->elems[0].hi), 0x0a010009);
	s = nft_table_state_set(&ts, "cali40s_none");
	assert_non_null(s);
	assert_int_equal(s->n, 0);
	nft_table_state_free(&ts);
	(void)state;
}

/* A batch that fails changes nothing, and says which edit failed. */
static void test_atomic_failure(void **state)
{
	write_example();
	char *before = listed(T);
	struct nft_batch *b = nft_batch_new(N);
	nft_batch_add_chain(b, T, "cali-new", -1, 0, NULL);
	rule(b, "cali-new", "-m comment --comment \"cali:1111111111111111\" -j ACCEPT");
	rule(b, "FORWARD", "-m comment --comment \"cali:2222222222222222\" -j cali-missing");
	assert_int_equal(nft_batch_commit(b), -ENOENT);
	nft_batch_free(b);
	assert_string_equal(nft_last_error(N), "add rule cali:2222222222222222 to chain "
					       "brindle-test FORWARD: No such file or directory");
	char *after = listed(T);
	assert_string_equal(after, before);
	free(before);
	free(after);
	(void)state;
}

/*
 * Interface dispatch through a verdict map: nft lists the lookup and the elements as it would
 * write them; the backend reads the elements back; an element and its chain go in one batch
 * (the element first: a chain a map element points to cannot be deleted).
 */
static void test_dispatch_map(void **state)
{
	struct nft_batch *b = nft_batch_new(N);
	nft_batch_add_table(b, T);
	nft_batch_add_chain(b, T, "cali-fw-cali1", -1, 0, NULL);
	nft_batch_add_chain(b, T, "cali-fw-cali22", -1, 0, NULL);
	nft_batch_add_chain(b, T, "cali-from-wl-dispatch", -1, 0, NULL);
	nft_batch_add_ifmap(b, T, "cali-from-wl-dispatch");
	struct nft_map_elem e[] = { { "cali22", "cali-fw-cali22" }, { "cali1", "cali-fw-cali1" } };
	nft_batch_ifmap_elems(b, T, "cali-from-wl-dispatch", e, 2, true);
	struct nft_rule_ir ir;
	nft_rule_dispatch(&ir, false, "cali-from-wl-dispatch");
	assert_string_equal(ir.id, NFT_DISPATCH_IIF_ID);
	nft_batch_add_rule(b, T, "cali-from-wl-dispatch", &ir);
	rule(b, "cali-from-wl-dispatch", "-m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -j DROP");
	commit(b);
	char *got = listed(T);
	if (!strstr(got, "\tmap cali-from-wl-dispatch {\n"
			 "\t\ttype ifname : verdict\n"
			 "\t\telements = { \"cali22\" : goto cali-fw-cali22,\n"
			 "\t\t\t     \"cali1\" : goto cali-fw-cali1 }\n") &&
	    !strstr(got, "\t\telements = { \"cali1\" : goto cali-fw-cali1,\n"
			 "\t\t\t     \"cali22\" : goto cali-fw-cali22 }\n"))
		fail_msg("map not as written:\n%s", got);
	if (!strstr(got,
		    "\t\tcounter packets 0 bytes 0 iifname vmap @cali-from-wl-dispatch comment "
		    "\"cali:dispatch-iifname\"\n"))
		fail_msg("lookup not as written:\n%s", got);
	free(got);
	struct nft_table_state ts;
	assert_int_equal(nft_read(N, T, &ts), 0);
	assert_int_equal(ts.n_sets, 0);
	assert_int_equal(ts.n_maps, 1);
	assert_string_equal(ts.maps[0].name, "cali-from-wl-dispatch");
	assert_int_equal(ts.maps[0].n, 2);
	assert_string_equal(ts.maps[0].elems[0].iface, "cali1");
	assert_string_equal(ts.maps[0].elems[0].chain, "cali-fw-cali1");
	assert_string_equal(ts.maps[0].elems[1].iface, "cali22");
	const struct nft_chain_state *c = nft_table_state_chain(&ts, "cali-from-wl-dispatch");
	assert_string_equal(c->rules[0].id, NFT_DISPATCH_IIF_ID);
	nft_table_state_free(&ts);
	/* the pod on cali1 goes: its element, then its chain, in one batch */
	b = nft_batch_new(N);
	nft_batch_ifmap_elems(b, T, "cali-from-wl-dispatch", &e[1], 1, false);
	nft_batch_del_chain(b, T, "cali-fw-cali1");
	commit(b);
	/* the other way round the kernel refuses, and says which edit */
	b = nft_batch_new(N);
	nft_batch_del_chain(b, T, "cali-fw-cali22");
	nft_batch_ifmap_elems(b, T, "cali-from-wl-dispatch", &e[0], 1, false);
	assert_int_equal(nft_batch_commit(b), -EBUSY);
	nft_batch_free(b);
	assert_non_null(strstr(nft_last_error(N), "delete chain brindle-test cali-fw-cali22"));
	assert_int_equal(nft_read(N, T, &ts), 0);
	assert_int_equal(ts.maps[0].n, 1);
	assert_string_equal(ts.maps[0].elems[0].iface, "cali22");
	assert_null(nft_table_state_chain(&ts, "cali-fw-cali1"));
	nft_table_state_free(&ts);
	(void)state;
}

/* A process committing to another table every @delay_us, for at most 15 s and never past
 * the test. */
static pid_t committer(useconds_t delay_us)
{
	pid_t child = fork();
	assert_true(child >= 0);
	if (child > 0)
		return child;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct nft *o;
	if (nft_open(AF_INET, &o) < 0)
		_exit(1);
	time_t end = time(NULL) + 15;
	for (int i = 0; time(NULL) < end; i++) {
		char name[32];
		struct nft_batch *ob = nft_batch_new(o);
		snprintf(name, sizeof(name), "c%d", i % 50);
		if (i % 100 < 50)
			nft_batch_add_chain(ob, "other", name, -1, 0, NULL);
		else
			nft_batch_del_chain(ob, "other", name);
		int r = nft_batch_commit(ob); /* (a failed one is part of the storm too) */
		(void)r;
		nft_batch_free(ob);
		if (delay_us)
			usleep(delay_us);
	}
	_exit(0);
}

/* Reads of T while @child commits: how many were whole and how many interrupted every time. */
static void reads_during(pid_t child, int *ok, int *interrupted)
{
	*ok = *interrupted = 0;
	time_t end = time(NULL) + 10;
	for (int i = 0; i < 100 && time(NULL) < end; i++) {
		struct nft_table_state ts;
		int r = nft_read(N, T, &ts);
		if (r == 0) {
			assert_int_equal(ts.n_chains, 400);
			nft_table_state_free(&ts);
			(*ok)++;
		} else {
			assert_int_equal(r, -EINTR); /* interrupted at each of its attempts */
			(*interrupted)++;
		}
		/* the socket answers the next request, whatever the read left on it */
		uint32_t gen;
		assert_int_equal(nft_generation(N, &gen), 0);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/*
 * Dumps while someone else commits: a dump the kernel interrupts (NLM_F_DUMP_INTR) is read
 * again, and whatever a cut-short exchange leaves on the socket never answers the next one (it
 * did: every later request failed with EPROTO, and felix could not put its rules back).
 */
static void test_reads_during_commits(void **state)
{
	struct nft_batch *b = nft_batch_new(N);
	nft_batch_add_table(b, T);
	char name[32];
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "cali-c%d", i);
		nft_batch_add_chain(b, T, name, -1, 0, NULL);
		for (int k = 0; k < 5; k++)
			rule(b, name, "-m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -j ACCEPT");
	}
	commit(b);
	assert_int_equal(sh("nft add table ip other"), 0);
	int ok, interrupted;
	/* a storm of commits: most dumps are cut short, and the socket must not suffer */
	reads_during(committer(0), &ok, &interrupted);
	print_message("during a storm of commits: %d reads whole, %d interrupted\n", ok,
		      interrupted);
	assert_true(interrupted > 0);
	/* ten commits a second (more than kube-proxy makes): every read whole */
	reads_during(committer(100000), &ok, &interrupted);
	print_message("during ten commits a second: %d reads whole, %d interrupted\n", ok,
		      interrupted);
	assert_int_equal(interrupted, 0);
	(void)state;
}

/* Someone else's table is never read or written: only the names given. */
static void test_foreign_table(void **state)
{
	assert_int_equal(sh("nft add table ip kube-proxy"), 0);
	assert_int_equal(sh("nft add chain ip kube-proxy filter-forward '{ type filter hook "
			    "forward priority -110; }'"),
			 0);
	assert_int_equal(sh("nft add rule ip kube-proxy filter-forward ct state invalid drop"), 0);
	write_example();
	struct nft_batch *b = nft_batch_new(N);
	nft_batch_del_table(b, T);
	commit(b);
	char *kp = listed("kube-proxy");
	assert_non_null(strstr(kp, "ct state invalid drop"));
	free(kp);
	struct nft_table_state ts;
	assert_int_equal(nft_read(N, T, &ts), 0);
	assert_false(ts.exists);
	(void)state;
}

/* An IPv6 address as an element's bytes. */
static void addr6(const char *text, uint8_t *out)
{
	assert_int_equal(inet_pton(AF_INET6, text, out), 1);
}

static struct nft_elem range6(const char *lo, const char *hi)
{
	struct nft_elem e;
	memset(&e, 0, sizeof(e));
	addr6(lo, e.lo);
	addr6(hi, e.hi);
	return e;
}

static const char *const want_table6 =
	"table ip6 brindle-test {\n"
	"\tset cali60s_web {\n"
	"\t\ttype ipv6_addr\n"
	"\t\tflags interval\n"
	"\t\telements = { fd00::/120,\n"
	"\t\t\t     fd00:1::5,\n"
	"\t\t\t     ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120 }\n"
	"\t}\n"
	"\n"
	"\tset cali60n_http {\n"
	"\t\ttype ipv6_addr . inet_proto . inet_service\n"
	"\t\telements = { fd00::1 . tcp . 80 }\n"
	"\t}\n"
	"\n"
	"\tchain cali-pi-web {\n"
	"\t\tip6 saddr @cali60s_web counter packets 0 bytes 0 meta mark set meta mark | "
	"0x00010000 comment \"cali:aaaaaaaaaaaaaaaa\"\n"
	"\t\tip6 daddr . meta l4proto . th dport @cali60n_http counter packets 0 bytes 0 accept "
	"comment \"cali:bbbbbbbbbbbbbbbb\"\n"
	"\t\tip6 saddr fd00:10::/64 icmpv6 type echo-request counter "
	"packets 0 bytes 0 accept comment \"cali:cccccccccccccccc\"\n"
	"\t\tmeta l4proto tcp counter packets 0 bytes 0 reject with tcp reset comment "
	"\"cali:dddddddddddddddd\"\n"
	"\t\tcounter packets 0 bytes 0 reject comment \"cali:eeeeeeeeeeeeeeee\"\n"
	"\t}\n"
	"\n"
	"\tchain FORWARD {\n"
	"\t\ttype filter hook forward priority filter; policy accept;\n"
	"\t\tip6 daddr != fd00::/64 iifname \"cali*\" counter packets 0 bytes 0 jump cali-pi-web "
	"comment \"cali:ffffffffffffffff\"\n"
	"\t}\n"
	"}\n";

/*
 * The same backend on a handle of the ip6 family: IPv6 rules and sets (an interval to the top
 * of the address space too), listed by nft as written, read back by the backend, and apart
 * from the ip family's table of the same name.
 */
static void test_ipv6(void **state)
{
	struct nft *n6;
	assert_int_equal(nft_open(AF_INET6, &n6), 0);
	struct nft_batch *b = nft_batch_new(n6);
	nft_batch_add_table(b, T);
	nft_batch_add_set(b, T, "cali60s_web", NFT_SET_ADDRS);
	struct nft_elem web[] = {
		range6("fd00::", "fd00::ff"),
		range6("fd00:1::5", "fd00:1::5"),
		range6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00",
		       "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
	};
	nft_batch_elems(b, T, "cali60s_web", NFT_SET_ADDRS, web, 3, true);
	nft_batch_add_set(b, T, "cali60n_http", NFT_SET_PORTS);
	struct nft_elem http = range6("fd00::1", "::");
	http.proto = 6;
	http.port = 80;
	nft_batch_elems(b, T, "cali60n_http", NFT_SET_PORTS, &http, 1, true);
	nft_batch_add_chain(b, T, "cali-pi-web", -1, 0, NULL);
	nft_batch_add_chain(b, T, "FORWARD", NF_INET_FORWARD, 0, "filter");
	static const char *const pi[] = {
		"-m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -m set --match-set cali60s:web src "
		"-j MARK --set-xmark 0x10000/0x10000",
		"-m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -m set --match-set cali60n:http "
		"dst,dst -j ACCEPT",
		"-s fd00:10::/64 -p ipv6-icmp -m comment --comment \"cali:cccccccccccccccc\" -m "
		"icmp6 "
		"--icmpv6-type 128 -j ACCEPT",
		"-p tcp -m comment --comment \"cali:dddddddddddddddd\" -j REJECT --reject-with "
		"tcp-reset",
		"-m comment --comment \"cali:eeeeeeeeeeeeeeee\" -j REJECT",
	};
	for (size_t i = 0; i < ARRAY_SIZE(pi); i++)
		rule_af(AF_INET6, b, "cali-pi-web", pi[i]);
	rule_af(AF_INET6, b, "FORWARD",
		"! -d fd00::/64 -i cali+ -m comment --comment \"cali:ffffffffffffffff\" -j "
		"cali-pi-web");
	if (nft_batch_commit(b) < 0)
		fail_msg("commit: %s", nft_last_error(n6));
	nft_batch_free(b);

	char *got = listed_family("ip6", T);
	if (strcmp(got, want_table6) != 0)
		fail_msg("nft lists:\n%s\nwanted:\n%s", got, want_table6);
	free(got);

	struct nft_table_state ts;
	assert_int_equal(nft_read(n6, T, &ts), 0);
	assert_true(ts.exists);
	const struct nft_chain_state *c = nft_table_state_chain(&ts, "cali-pi-web");
	assert_non_null(c);
	assert_int_equal(c->n, 5);
	assert_string_equal(c->rules[4].id, "cali:eeeeeeeeeeeeeeee");
	const struct nft_set_state *s = nft_table_state_set(&ts, "cali60s_web");
	assert_non_null(s);
	assert_int_equal(s->kind, NFT_SET_ADDRS);
	assert_int_equal(s->n, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(nft_elem_cmp(&s->elems[i], &web[i]), 0);
	s = nft_table_state_set(&ts, "cali60n_http");
	assert_int_equal(s->kind, NFT_SET_PORTS);
	assert_int_equal(s->n, 1);
	assert_int_equal(nft_elem_cmp(&s->elems[0], &http), 0);
	nft_table_state_free(&ts);

	/* one element out by element, as felix removes a member */
	b = nft_batch_new(n6);
	nft_batch_elems(b, T, "cali60s_web", NFT_SET_ADDRS, &web[1], 1, false);
	if (nft_batch_commit(b) < 0)
		fail_msg("commit: %s", nft_last_error(n6));
	nft_batch_free(b);
	assert_int_equal(nft_read(n6, T, &ts), 0);
	s = nft_table_state_set(&ts, "cali60s_web");
	assert_int_equal(s->n, 2);
	assert_int_equal(nft_elem_cmp(&s->elems[1], &web[2]), 0);
	nft_table_state_free(&ts);

	/* the ip family's table of that name is another table, not there */
	assert_int_equal(nft_read(N, T, &ts), 0);
	assert_false(ts.exists);
	nft_close(n6);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_write_and_read, clean),
		cmocka_unit_test_teardown(test_edits, clean),
		cmocka_unit_test_teardown(test_flush_and_refill, clean),
		cmocka_unit_test_teardown(test_atomic_failure, clean),
		cmocka_unit_test_teardown(test_dispatch_map, clean),
		cmocka_unit_test_teardown(test_reads_during_commits, clean),
		cmocka_unit_test_teardown(test_foreign_table, clean),
		cmocka_unit_test_teardown(test_ipv6, clean),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
