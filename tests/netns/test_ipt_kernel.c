/*
 * The kernel iptables backend (lib/ipt_kernel.c) against the real kernel, in
 * a network namespace of the test's own (unshare), so the machine's tables
 * are never touched. iptables-legacy, iptables-legacy-save and ipset run
 * inside that namespace too. The lock tests use a temporary lock file,
 * except one that takes the real /run/xtables.lock for a moment.
 *
 * The layout test reads entries with libiptc directly, to compare ours with
 * the ones iptables-legacy-restore builds for the same text byte for byte;
 * the same for IPv6 with libip6tc, ip6tables-legacy-restore and -save.
 */
#include "harness.h"

#include <brindle/sys/ipt.h>
#include <brindle/sys/clock.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libiptc/libiptc.h>
#include <libiptc/libip6tc.h>

static char lock_path[64];

static int sh(const char *fmt, ...) printf_like(1, 2);
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const char *tool(int af)
{
	return af == AF_INET6 ? "ip6tables" : "iptables";
}

/* `*tables-legacy-save` of @table (@opts: more options, e.g. "-c "), without comments. */
static void save_opts(int af, const char *opts, const char *table, struct strbuf *out)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "timeout 20 %s-legacy-save %s-t %s", tool(af), opts, table);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	char line[8192];
	sb_reset(out);
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#')
			sb_adds(out, line);
	assert_int_equal(pclose(f), 0);
}

static void save_af(int af, const char *table, struct strbuf *out)
{
	save_opts(af, "", table, out);
}

static void save(const char *table, struct strbuf *out)
{
	save_af(AF_INET, table, out);
}

/* Lines of @table's save that start with @prefix, in order. */
static void save_lines_af(int af, const char *table, const char *prefix, struct strbuf *out)
{
	struct strbuf all = STRBUF_INIT;
	sb_init(&all);
	save_af(af, table, &all);
	sb_reset(out);
	for (char *line = all.buf; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
		if (strncmp(line, prefix, strlen(prefix)) == 0)
			sb_add(out, line, n);
		line += n;
	}
	sb_free(&all);
}

static void save_lines(const char *table, const char *prefix, struct strbuf *out)
{
	save_lines_af(AF_INET, table, prefix, out);
}

/* Feeds @input to iptables-legacy-restore (ip6tables-) --noflush. */
/* `*tables-legacy-restore @opts` of @input (e.g. "--noflush"). */
static void restore_opts(int af, const char *opts, const char *input)
{
	char path[] = "/tmp/brindle-ipt-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, input, strlen(input)), (ssize_t)strlen(input));
	close(fd);
	int r = sh("timeout 20 %s-legacy-restore -w 5 %s < %s", tool(af), opts, path);
	unlink(path);
	assert_int_equal(r, 0);
}

static void restore_af(int af, const char *input)
{
	restore_opts(af, "--noflush", input);
}

/* The handle of the running test; closed by close_handle even when the test fails. */
static struct ipt *current;

static struct ipt *open_kernel_af(int af)
{
	assert_null(current);
	assert_int_equal(ipt_open_kernel(af, lock_path, 2000, &current), 0);
	return current;
}

static struct ipt *open_kernel(void)
{
	return open_kernel_af(AF_INET);
}

static int close_handle(void **state)
{
	ipt_close(current); /* aborts an open session: no lock stays held */
	current = NULL;
	return 0;
}

#define OK(t, call)                                                          \
	do {                                                                 \
		int r_ = (call);                                             \
		if (r_ != 0)                                                 \
			fail_msg("%s: %d %s", #call, r_, ipt_last_error(t)); \
	} while (0)

static int setup(void **state)
{
	if (unshare(CLONE_NEWNET) < 0) {
		print_error("unshare(CLONE_NEWNET): %s (needs root)\n", strerror(errno));
		return -1;
	}
	/* A run that crashed cannot unlink its lock file: remove those of dead processes. */
	DIR *d = opendir("/tmp");
	for (struct dirent *de; d && (de = readdir(d));) {
		int pid;
		char path[300];
		if (sscanf(de->d_name, "brindle-xtables-%d.lock", &pid) == 1 && pid > 0 &&
		    kill(pid, 0) < 0 && errno == ESRCH) {
			snprintf(path, sizeof(path), "/tmp/%s", de->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
	snprintf(lock_path, sizeof(lock_path), "/tmp/brindle-xtables-%d.lock", (int)getpid());
	static const char *const sets[] = { "s1 hash:net",
					    "s2 hash:ip,port",
					    "cali40s:abcdefghijklmnopqrstuvw hash:net",
					    "cali40masq-ipam-pools hash:net",
					    "cali40all-ipam-pools hash:net",
					    "s6 hash:net family inet6",
					    "cali60s:abcdefghijklmnopqrstuvw hash:net family inet6",
					    "cali60masq-ipam-pools hash:net family inet6",
					    "cali60all-ipam-pools hash:net family inet6" };
	for (size_t i = 0; i < ARRAY_SIZE(sets); i++)
		if (sh("ipset create %s", sets[i]) != 0)
			return -1;
	return 0;
}

static int teardown(void **state)
{
	unlink(lock_path);
	return 0; /* the namespace, its tables and sets go with the process */
}

/* Every construct of the subset, by table; each as iptables-legacy-save prints it. */
static const char *const filter_rules[] = {
	"-j ACCEPT",
	"-j DROP",
	"-j RETURN",
	"-j cali-y",
	"-g cali-y",
	"-s 10.0.0.1/32 -j DROP",
	"-s 10.0.0.0/24 -d 10.1.0.0/16 -j DROP",
	"! -s 10.0.0.0/8 ! -d 192.168.1.0/24 -j DROP",
	"! -s 0.0.0.0/0 -j DROP",
	"-i cali+ -j ACCEPT",
	"! -i cali+ -o eth0 -j ACCEPT",
	"-i caliabcdef01234 ! -o vxlan.calico -j ACCEPT",
	"-p tcp -j ACCEPT",
	"! -p udp -j ACCEPT",
	"-p ipencap -j ACCEPT",
	"-p gre -j DROP",
	"-p sctp -j DROP",
	"-p 200 -j DROP",
	"-s 10.0.0.1/32 -d 10.1.0.0/16 -i cali+ ! -o eth0 ! -p udp -j RETURN",
	"-m comment --comment \"cali:abcdefghijklmnop\" -j ACCEPT",
	"-m comment --comment \"cali:abcdefghijklmnop\" -m comment --comment \"a \\\"q\\\" b\\\\c "
	"it\\'s\" -j cali-y",
	"-m comment --comment plain -g cali-y",
	"-m comment --comment \"Unknown interface\" -j DROP",
	"-m mark --mark 0x10000/0x10000 -j RETURN",
	"-m mark ! --mark 0x0/0x30000 -j ACCEPT",
	"-m mark --mark 0x5 -j ACCEPT",
	"-m conntrack --ctstate INVALID,NEW,RELATED,ESTABLISHED,UNTRACKED,SNAT,DNAT -j ACCEPT",
	"-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
	"-m conntrack ! --ctstate INVALID -j ACCEPT",
	"-m set --match-set s1 src -j ACCEPT",
	"-m set --match-set s1 src -m set ! --match-set s2 dst,dst -j ACCEPT",
	"-m set --match-set cali40s:abcdefghijklmnopqrstuvw src,dst,src -j ACCEPT",
	"-p tcp -m multiport --dports 80 -j ACCEPT",
	"-p tcp -m multiport --dports 80,443,1000:2000 -m multiport ! --sports 1:2 -j ACCEPT",
	"-p udp -m multiport --sports 0,65535 -j ACCEPT",
	"-p sctp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 -j ACCEPT",
	"-p tcp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14:15 -j ACCEPT",
	"-p icmp -m icmp --icmp-type 8 -j ACCEPT",
	"-p icmp -m icmp ! --icmp-type 3/4 -j ACCEPT",
	"-p icmp -m icmp --icmp-type any -j ACCEPT",
	"-p icmp -m icmp --icmp-type 8/0 -j ACCEPT",
	"-m addrtype ! --src-type LOCAL --limit-iface-out -m addrtype --dst-type UNICAST,LOCAL -j "
	"ACCEPT",
	"-m addrtype --src-type LOCAL --limit-iface-in -j ACCEPT",
	"-m addrtype --src-type LOCAL ! --dst-type BROADCAST,MULTICAST -j ACCEPT",
	"-m limit --limit 10/min -j ACCEPT",
	"-m limit --limit 7/sec --limit-burst 20 -j ACCEPT",
	"-m limit --limit 3/hour -j ACCEPT",
	"-m limit --limit 2/day --limit-burst 1 -j ACCEPT",
	"-m limit --limit 1/day --limit-burst 3 -j ACCEPT",
	"-m limit --limit 1/hour --limit-burst 119 -j ACCEPT",
	"-m limit --limit 10000/sec -j ACCEPT",
	"-m limit --limit 7/min --limit-burst 10000 -j ACCEPT",
	"-m limit --limit 13/hour -j ACCEPT",
	"-d 0.0.0.0/1 -j DROP",
	"-p udplite -m multiport --dports 5:6 -j ACCEPT",
	"-p dccp -m multiport ! --dports 7 -j ACCEPT",
	"-p icmp -m icmp --icmp-type 0/255 -j ACCEPT",
	/* the longest comment: 255 characters */
	"-m comment --comment \""
	"Unknown interface Unknown interface Unknown interface Unknown interface Unknown inter"
	"face Unknown interface Unknown interface Unknown interface Unknown interface Unknown "
	"interface Unknown interface Unknown interface Unknown interface Unknown interface Unk"
	"\" -j ACCEPT",
	"-j MARK --set-xmark 0x10000/0x10000",
	"-j MARK --set-xmark 0x0/0x30000",
	"-j MARK --set-xmark 0x1/0xffffffff",
	"-j LOG --log-prefix 01234567890123456789012345678 --log-level 7",
	"-j NFLOG --nflog-prefix "
	"\"0123456789012345678901234567890123456789012345678901234567\\\"\\'x\" --nflog-group 3",
	"-j NFLOG",
	"-j NFLOG --nflog-prefix \"hello there\" --nflog-group 2 --nflog-threshold 3",
	"-j NFLOG --nflog-prefix \"API0|default.allow\" --nflog-group 1",
	"-j LOG --log-prefix \"calico-drop: \" --log-level 5",
	"-j LOG --log-prefix x",
	"-j REJECT --reject-with icmp-port-unreachable",
	"-p tcp -j REJECT --reject-with tcp-reset",
	"-j REJECT --reject-with icmp-host-prohibited",
	"-i cali+ -p tcp -m comment --comment \"cali:0123456789abcdef\" -m conntrack --ctstate NEW "
	"-m mark --mark 0x0/0x20000 -m set --match-set s1 src -m multiport --dports 80,443 -m "
	"limit --limit 5/sec -j MARK --set-xmark 0x10000/0x10000",
};

static const char *const nat_rules[] = {
	"-j MASQUERADE",
	"-j MASQUERADE --random-fully",
	"-m set --match-set cali40masq-ipam-pools src -m set ! --match-set cali40all-ipam-pools "
	"dst -j MASQUERADE --random-fully",
	"-o tunl0 -m addrtype ! --src-type LOCAL --limit-iface-out -m addrtype --src-type LOCAL "
	"-j MASQUERADE",
};

/* IPv6: what differs from IPv4 (addresses, ICMPv6, REJECT's types) and the shared matches. */
static const char *const filter_rules6[] = {
	"-j ACCEPT",
	"-g cali-y",
	"-s fd00::1/128 -j DROP",
	"-s fd00:10::/64 -d 2001:db8::/32 -j DROP",
	"! -s fd00::/8 ! -d ::1/128 -j DROP",
	"! -s ::/0 -j DROP",
	"-i cali+ ! -o eth0 ! -p udp -j RETURN",
	"-p ipv6-icmp -j ACCEPT",
	"-p ipv6-icmp -m icmp6 --icmpv6-type 135 -j ACCEPT",
	"-p ipv6-icmp -m icmp6 ! --icmpv6-type 1/3 -j ACCEPT",
	"-p ipv6-icmp -m icmp6 --icmpv6-type 128/0 -j ACCEPT",
	"-p tcp -m multiport --dports 80,443,1000:2000 -j ACCEPT",
	"-m comment --comment \"cali:abcdefghijklmnop\" -m mark --mark 0x10000/0x10000 -j RETURN",
	"-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
	("-m set --match-set s6 src -m set ! --match-set cali60s:abcdefghijklmnopqrstuvw dst "
	 "-j ACCEPT"),
	"-m addrtype --dst-type LOCAL -j ACCEPT",
	"-m limit --limit 7/sec --limit-burst 20 -j ACCEPT",
	"-j MARK --set-xmark 0x0/0x30000",
	"-j NFLOG --nflog-prefix \"API0|default.allow\" --nflog-group 1",
	"-j LOG --log-prefix \"calico-drop: \" --log-level 5",
	"-j REJECT --reject-with icmp6-port-unreachable",
	"-j REJECT --reject-with icmp6-adm-prohibited",
	"-p tcp -j REJECT --reject-with tcp-reset",
};

static const char *const nat_rules6[] = {
	"-j MASQUERADE",
	"-m set --match-set cali60masq-ipam-pools src -m set ! --match-set cali60all-ipam-pools "
	"dst -j MASQUERADE --random-fully",
};

/* Fails naming the first line that differs (cmocka cuts long messages). */
static void same_lines(const char *want, const char *got)
{
	for (size_t line = 1;; line++) {
		size_t a = strcspn(want, "\n"), b = strcspn(got, "\n");
		if (a != b || memcmp(want, got, a) != 0)
			fail_msg("line %zu:\nwant: %.*s\ngot:  %.*s", line, (int)a, want, (int)b,
				 got);
		if (!want[a] || !got[b]) {
			assert_int_equal(want[a], got[b]);
			return;
		}
		want += a + 1;
		got += b + 1;
	}
}

/* A table's rules as libiptc (libip6tc) hands them out, with their targets' names. */
struct lib_rules {
	struct xtc_handle *h;
	const void **v;
	const char **targets;
	size_t n;
};

/* Chain @chain's first @n rules of @h (one rule iterator per handle: one chain at a time). */
static void lib_rules(int af, struct xtc_handle *h, const char *chain, size_t n,
		      struct lib_rules *out)
{
	out->h = h;
	out->v = calloc(n + 1, sizeof(*out->v));
	out->targets = calloc(n + 1, sizeof(*out->targets));
	out->n = 0;
	if (af == AF_INET6) {
		for (const struct ip6t_entry *e = ip6tc_first_rule(chain, h); e && out->n < n;
		     e = ip6tc_next_rule(e, h)) {
			out->targets[out->n] = ip6tc_get_target(e, h);
			out->v[out->n++] = e;
		}
	} else {
		for (const struct ipt_entry *e = iptc_first_rule(chain, h); e && out->n < n;
		     e = iptc_next_rule(e, h)) {
			out->targets[out->n] = iptc_get_target(e, h);
			out->v[out->n++] = e;
		}
	}
}

static void lib_rules_free(struct lib_rules *r)
{
	free(r->v);
	free(r->targets);
}

/* Entry @o (ours) and @th (iptables'), as libiptc read them back: the same bytes. */
static void same_entry(int af, const char *rule, const void *o, const void *th,
		       const char *o_target, const char *th_target)
{
	size_t head, toff, next;
	if (af == AF_INET6) {
		const struct ip6t_entry *a = o, *b = th;
		if (memcmp(&a->ipv6, &b->ipv6, sizeof(a->ipv6)) != 0 ||
		    a->target_offset != b->target_offset || a->next_offset != b->next_offset)
			fail_msg("entry header differs from ip6tables': %s", rule);
		head = sizeof(*a), toff = a->target_offset, next = a->next_offset;
	} else {
		const struct ipt_entry *a = o, *b = th;
		if (memcmp(&a->ip, &b->ip, sizeof(a->ip)) != 0 ||
		    a->target_offset != b->target_offset || a->next_offset != b->next_offset)
			fail_msg("entry header differs from iptables': %s", rule);
		head = sizeof(*a), toff = a->target_offset, next = a->next_offset;
	}
	/* Each extension: size, name (the kernel leaves the bytes after its NUL alone), data. */
	for (size_t off = head; off < next;) {
		const struct xt_entry_match *mo = (const void *)((const char *)o + off);
		const struct xt_entry_match *mt = (const void *)((const char *)th + off);
		bool standard = off == toff && !mo->u.user.name[0];
		if (mo->u.match_size != mt->u.match_size ||
		    strcmp(mo->u.user.name, mt->u.user.name) != 0 ||
		    mo->u.user.revision != mt->u.user.revision ||
		    (!standard && memcmp(mo->data, mt->data, mo->u.match_size - sizeof(*mo)) != 0))
			fail_msg("%s differs from %s': %s", mo->u.user.name, tool(af), rule);
		if (standard && strcmp(o_target, th_target) != 0)
			fail_msg("%s: %s vs %s", rule, o_target, th_target);
		off += mo->u.match_size;
	}
}

static void write_and_check(int af, const char *table, const char *const *rules, size_t n)
{
	struct ipt *t = open_kernel_af(af);
	struct ipt_table_state st;
	OK(t, ipt_begin(t, table, &st));
	ipt_table_state_free(&st);
	OK(t, ipt_new_chain(t, "cali-t"));
	OK(t, ipt_new_chain(t, "cali-y"));
	for (size_t i = 0; i < n; i++)
		OK(t, ipt_append(t, "cali-t", rules[i]));
	OK(t, ipt_commit(t));

	struct strbuf got = STRBUF_INIT, want = STRBUF_INIT;
	sb_init(&got);
	sb_init(&want);
	for (size_t i = 0; i < n; i++)
		sb_addf(&want, "-A cali-t %s\n", rules[i]);
	save_lines_af(af, table, "-A cali-t ", &got);
	same_lines(sb_str(&want), sb_str(&got));

	/* Ids and targets read back. */
	OK(t, ipt_begin(t, table, &st));
	const struct ipt_chain_state *c = ipt_table_state_chain(&st, "cali-t");
	assert_non_null(c);
	assert_int_equal(c->n, n);
	for (size_t i = 0; i < n; i++) {
		char id[IPT_ID_LEN + 1];
		bool has = ipt_rule_text_id(rules[i], id);
		assert_string_equal(c->ids[i], has ? id : "");
		const char *j = strstr(rules[i], " -j ");
		const char *g = strstr(rules[i], "-g ");
		const char *target = j ? j + 4 : rules[i] + 3;
		if (!j && g)
			target = g + 3;
		size_t tl = strcspn(target, " ");
		if (strlen(c->targets[i]) != tl || strncmp(c->targets[i], target, tl) != 0)
			fail_msg("%s: target %s", rules[i], c->targets[i]);
	}
	ipt_table_state_free(&st);
	ipt_abort(t);

	/* The same text through iptables-legacy-restore gives the same bytes. */
	struct strbuf in = STRBUF_INIT;
	sb_init(&in);
	sb_addf(&in, "*%s\n:ipt-ref - [0:0]\n", table);
	for (size_t i = 0; i < n; i++)
		sb_addf(&in, "-A ipt-ref %s\n", rules[i]);
	sb_adds(&in, "COMMIT\n");
	restore_af(af, sb_str(&in));
	struct xtc_handle *h = af == AF_INET6 ? ip6tc_init(table) : iptc_init(table);
	assert_non_null(h);
	struct lib_rules ours, theirs;
	lib_rules(af, h, "cali-t", n, &ours);
	lib_rules(af, h, "ipt-ref", n, &theirs);
	assert_int_equal(ours.n, n);
	assert_int_equal(theirs.n, n);
	for (size_t i = 0; i < n; i++)
		same_entry(af, rules[i], ours.v[i], theirs.v[i], ours.targets[i],
			   theirs.targets[i]);
	lib_rules_free(&ours);
	lib_rules_free(&theirs);
	if (af == AF_INET6)
		ip6tc_free(h);
	else
		iptc_free(h);
	sb_free(&in);
	sb_free(&got);
	sb_free(&want);
	close_handle(NULL);
}

static void test_constructs_filter(void **state)
{
	write_and_check(AF_INET, "filter", filter_rules, ARRAY_SIZE(filter_rules));
}

static void test_constructs_nat(void **state)
{
	write_and_check(AF_INET, "nat", nat_rules, ARRAY_SIZE(nat_rules));
}

static void test_constructs_filter6(void **state)
{
	write_and_check(AF_INET6, "filter", filter_rules6, ARRAY_SIZE(filter_rules6));
}

static void test_constructs_nat6(void **state)
{
	write_and_check(AF_INET6, "nat", nat_rules6, ARRAY_SIZE(nat_rules6));
}

static void test_positions_and_chains(void **state)
{
	struct ipt *t = open_kernel();
	struct ipt_table_state st;
	struct strbuf got = STRBUF_INIT;
	sb_init(&got);
	OK(t, ipt_begin(t, "mangle", &st));
	assert_int_equal(st.n, 5);
	assert_string_equal(st.chains[0].name, "PREROUTING");
	assert_true(st.chains[0].builtin);
	ipt_table_state_free(&st);
	OK(t, ipt_new_chain(t, "cali-p"));
	OK(t, ipt_new_chain(t, "cali-q"));
	assert_int_equal(ipt_new_chain(t, "cali-p"), -EEXIST);
	assert_int_equal(ipt_new_chain(t, "MARK"), -EINVAL);
	assert_int_equal(ipt_new_chain(t, "cali-0123456789012345678901234"), -EINVAL);
	OK(t,
	   ipt_append(t, "cali-p", "-m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -j ACCEPT"));
	OK(t,
	   ipt_append(t, "cali-p", "-m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -j cali-q"));
	OK(t, ipt_insert(t, "cali-p", 0,
			     "-m comment --comment \"cali:cccccccccccccccc\" -j DROP"));
	OK(t, ipt_insert(t, "PREROUTING", 0,
			     "-m comment --comment \"cali:dddddddddddddddd\" -j cali-p"));
	assert_int_equal(ipt_insert(t, "cali-p", 4, "-j DROP"), -ENOENT);
	assert_int_equal(ipt_replace(t, "cali-p", 3, "-j DROP"), -ENOENT);
	assert_int_equal(ipt_delete(t, "cali-p", 3), -ENOENT);
	assert_int_equal(ipt_append(t, "cali-nope", "-j DROP"), -ENOENT);
	assert_int_equal(ipt_append(t, "cali-p", "-j cali-nope"), -ENOENT);
	assert_string_equal(ipt_last_error(t),
			    "-j cali-nope: no chain cali-nope to jump to in table mangle");
	assert_int_equal(ipt_append(t, "cali-p", "-j bogus --x"), -EINVAL);
	OK(t, ipt_commit(t));
	save_lines("mangle", "-A ", &got);
	assert_string_equal(
		sb_str(&got),
		"-A PREROUTING -m comment --comment \"cali:dddddddddddddddd\" -j cali-p\n"
		"-A cali-p -m comment --comment \"cali:cccccccccccccccc\" -j DROP\n"
		"-A cali-p -m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -j ACCEPT\n"
		"-A cali-p -m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -j cali-q\n");

	OK(t, ipt_begin(t, "mangle", &st));
	const struct ipt_chain_state *c = ipt_table_state_chain(&st, "cali-p");
	assert_int_equal(c->n, 3);
	assert_string_equal(c->ids[0], "cali:cccccccccccccccc");
	assert_string_equal(c->ids[2], "cali:bbbbbbbbbbbbbbbb");
	assert_string_equal(c->targets[2], "cali-q");
	assert_string_equal(c->targets[0], "DROP");
	ipt_table_state_free(&st);
	/* Positions count as edited so far. */
	OK(t, ipt_replace(t, "cali-p", 1,
			      "-m comment --comment \"cali:eeeeeeeeeeeeeeee\" -j RETURN"));
	OK(t, ipt_delete(t, "cali-p", 0));
	OK(t, ipt_insert(t, "cali-p", 2,
			     "-m comment --comment \"cali:ffffffffffffffff\" -j ACCEPT"));
	assert_int_equal(ipt_delete_chain(t, "cali-q"), -EMLINK);
	assert_int_equal(ipt_delete_chain(t, "cali-p"), -EMLINK);
	assert_int_equal(ipt_delete_chain(t, "PREROUTING"), -EINVAL);
	OK(t, ipt_commit(t));
	save_lines("mangle", "-A cali-p", &got);
	assert_string_equal(sb_str(&got),
			    "-A cali-p -m comment --comment \"cali:eeeeeeeeeeeeeeee\" -j RETURN\n"
			    "-A cali-p -m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -j cali-q\n"
			    "-A cali-p -m comment --comment \"cali:ffffffffffffffff\" -j ACCEPT\n");

	/* Flush, unhook and delete; a non-empty chain stays. */
	OK(t, ipt_begin(t, "mangle", &st));
	ipt_table_state_free(&st);
	OK(t, ipt_delete(t, "PREROUTING", 0));
	assert_int_equal(ipt_delete_chain(t, "cali-p"), -ENOTEMPTY);
	OK(t, ipt_flush_chain(t, "cali-p"));
	OK(t, ipt_delete_chain(t, "cali-p"));
	OK(t, ipt_delete_chain(t, "cali-q"));
	assert_int_equal(ipt_flush_chain(t, "cali-p"), -ENOENT);
	OK(t, ipt_commit(t));
	save("mangle", &got);
	assert_string_equal(
		sb_str(&got),
		"*mangle\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n"
		":FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n"
		"COMMIT\n");

	/* Abort writes nothing; a second begin in a session is refused. */
	OK(t, ipt_begin(t, "mangle", &st));
	ipt_table_state_free(&st);
	assert_int_equal(ipt_begin(t, "mangle", &st), -EINPROGRESS);
	OK(t, ipt_new_chain(t, "cali-r"));
	ipt_abort(t);
	save_lines("mangle", ":cali-r", &got);
	assert_string_equal(sb_str(&got), "");
	assert_int_equal(ipt_new_chain(t, "cali-r"), -EINVAL);
	assert_int_equal(ipt_begin(t, "nosuch", &st), -ENOENT);
	sb_free(&got);
	close_handle(NULL);
}

/* Drops our lines (they all mention "cali") from a save. */
static void without_ours(const char *in, struct strbuf *out)
{
	sb_reset(out);
	for (const char *line = in; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
		if (!memmem(line, n, "cali", 4))
			sb_add(out, line, n);
		line += n;
	}
}

static void test_foreign_rules_survive(void **state)
{
	static const char *const tables[] = { "filter", "nat" };
	assert_int_equal(
		sh("iptables-legacy -w 5 -t filter -N KUBE-SERVICES && "
		   "iptables-legacy -w 5 -t filter -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp "
		   "-m comment --comment \"default/kubernetes:https has no endpoints\" "
		   "-m tcp --dport 443 -j REJECT --reject-with icmp-port-unreachable && "
		   "iptables-legacy -w 5 -t filter -A FORWARD -m conntrack --ctstate INVALID "
		   "-j DROP && "
		   "iptables-legacy -w 5 -t filter -A FORWARD -m physdev --physdev-is-bridged "
		   "-j ACCEPT && "
		   "iptables-legacy -w 5 -t nat -N KUBE-SERVICES && "
		   "iptables-legacy -w 5 -t nat -A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m "
		   "udp --dport 53 -j DNAT --to-destination 10.244.0.5:53 && "
		   "iptables-legacy -w 5 -t nat -A PREROUTING -j KUBE-SERVICES && "
		   "iptables-legacy -w 5 -t nat -A POSTROUTING -s 10.0.0.0/8 -j SNAT --to-source "
		   "192.168.1.1"),
		0);
	struct strbuf before[2], after = STRBUF_INIT, stripped = STRBUF_INIT;
	sb_init(&after);
	sb_init(&stripped);
	for (size_t i = 0; i < 2; i++) {
		sb_init(&before[i]);
		save(tables[i], &before[i]);
		without_ours(sb_str(&before[i]), &stripped); /* earlier tests' chains */
		sb_reset(&before[i]);
		sb_adds(&before[i], sb_str(&stripped));
	}
	struct ipt *t = open_kernel();
	struct ipt_table_state st;
	for (int round = 0; round < 2; round++) {
		OK(t, ipt_begin(t, "filter", &st));
		const struct ipt_chain_state *fwd = ipt_table_state_chain(&st, "FORWARD");
		assert_int_equal(fwd->n, 2 * (size_t)round + 2);
		assert_string_equal(fwd->targets[fwd->n - 1], "ACCEPT");
		assert_string_equal(fwd->ids[fwd->n - 1], round ? "cali:appendappendappe" : "");
		assert_string_equal(fwd->ids[round], "");
		assert_string_equal(fwd->targets[round], "DROP");
		const struct ipt_chain_state *ks = ipt_table_state_chain(&st, "KUBE-SERVICES");
		assert_non_null(ks);
		assert_false(ks->builtin);
		assert_string_equal(ks->targets[0], "REJECT");
		ipt_table_state_free(&st);
		char chain[32];
		snprintf(chain, sizeof(chain), "cali-FORWARD-%d", round);
		OK(t, ipt_new_chain(t, chain));
		char rule[128];
		snprintf(rule, sizeof(rule),
			 "-m comment --comment \"cali:forwardforward%04d\" -j %s", round, chain);
		OK(t, ipt_insert(t, "FORWARD", 0, rule));
		OK(t, ipt_append(t, "FORWARD",
				     "-m comment --comment \"cali:appendappendappe\" -m mark "
				     "--mark 0x10000/0x10000 -j ACCEPT"));
		OK(t, ipt_commit(t));

		OK(t, ipt_begin(t, "nat", &st));
		ipt_table_state_free(&st);
		snprintf(chain, sizeof(chain), "cali-POSTROUTING-%d", round);
		OK(t, ipt_new_chain(t, chain));
		OK(t, ipt_append(t, chain,
				     "-m set --match-set cali40masq-ipam-pools src -j MASQUERADE "
				     "--random-fully"));
		snprintf(rule, sizeof(rule), "-j %s", chain);
		OK(t, ipt_insert(t, "POSTROUTING", 0, rule));
		OK(t, ipt_commit(t));
	}
	for (size_t i = 0; i < 2; i++) {
		save(tables[i], &after);
		without_ours(sb_str(&after), &stripped);
		if (strcmp(sb_str(&stripped), sb_str(&before[i])) != 0)
			fail_msg("%s changed:\nbefore:\n%s\nafter:\n%s", tables[i],
				 sb_str(&before[i]), sb_str(&stripped));
		sb_free(&before[i]);
	}
	/* The foreign FORWARD rules kept their place between ours. */
	save_lines("filter", "-A FORWARD", &after);
	assert_string_equal(
		sb_str(&after),
		"-A FORWARD -m comment --comment \"cali:forwardforward0001\" -j cali-FORWARD-1\n"
		"-A FORWARD -m comment --comment \"cali:forwardforward0000\" -j cali-FORWARD-0\n"
		"-A FORWARD -m conntrack --ctstate INVALID -j DROP\n"
		"-A FORWARD -m physdev --physdev-is-bridged -j ACCEPT\n"
		"-A FORWARD -m comment --comment \"cali:appendappendappe\" -m mark --mark "
		"0x10000/0x10000 -j ACCEPT\n"
		"-A FORWARD -m comment --comment \"cali:appendappendappe\" -m mark --mark "
		"0x10000/0x10000 -j ACCEPT\n");
	sb_free(&after);
	sb_free(&stripped);
	close_handle(NULL);
}

/*
 * What libiptc did besides writing, the backend does too: counters of the
 * rules and policies that stay are kept, and user chains are in name order
 * (a chain that sorts before the others, and our new rules in a built-in
 * chain, are the entries the writer copies aside before moving the rest).
 */
static void counters_and_order(int af)
{
	static const char table[] = "*raw\n"
				    ":PREROUTING ACCEPT [0:0]\n"
				    ":OUTPUT ACCEPT [11:1100]\n"
				    ":KUBE-X - [0:0]\n"
				    "[3:300] -A PREROUTING -j KUBE-X\n"
				    "[7:700] -A KUBE-X -p tcp -j ACCEPT\n"
				    "COMMIT\n";
	restore_opts(af, "-c", table);
	struct strbuf before = STRBUF_INIT, got = STRBUF_INIT;
	sb_init(&before);
	sb_init(&got);
	save_opts(af, "-c ", "raw", &before);
	assert_string_equal(sb_str(&before), table);

	struct ipt *t = open_kernel_af(af);
	struct ipt_table_state st;
	OK(t, ipt_begin(t, "raw", &st));
	ipt_table_state_free(&st);
	OK(t, ipt_new_chain(t, "cali-a"));
	OK(t, ipt_new_chain(t, "A-first"));
	OK(t, ipt_append(t, "A-first", "-m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -j DROP"));
	OK(t, ipt_append(t, "cali-a", "-m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -j A-first"));
	OK(t, ipt_insert(t, "PREROUTING", 0,
			 "-m comment --comment \"cali:cccccccccccccccc\" -j cali-a"));
	OK(t, ipt_commit(t));
	save_opts(af, "-c ", "raw", &got);
	assert_string_equal(
		sb_str(&got),
		"*raw\n"
		":PREROUTING ACCEPT [0:0]\n"
		":OUTPUT ACCEPT [11:1100]\n"
		":A-first - [0:0]\n"
		":KUBE-X - [0:0]\n"
		":cali-a - [0:0]\n"
		"[0:0] -A PREROUTING -m comment --comment \"cali:cccccccccccccccc\" -j cali-a\n"
		"[3:300] -A PREROUTING -j KUBE-X\n"
		"[0:0] -A A-first -m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -j DROP\n"
		"[7:700] -A KUBE-X -p tcp -j ACCEPT\n"
		"[0:0] -A cali-a -m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -j A-first\n"
		"COMMIT\n");

	/* Ours gone again: the table as it was, counters and all. */
	OK(t, ipt_begin(t, "raw", &st));
	ipt_table_state_free(&st);
	OK(t, ipt_delete(t, "PREROUTING", 0));
	OK(t, ipt_flush_chain(t, "cali-a"));
	OK(t, ipt_flush_chain(t, "A-first"));
	OK(t, ipt_delete_chain(t, "cali-a"));
	OK(t, ipt_delete_chain(t, "A-first"));
	OK(t, ipt_commit(t));
	save_opts(af, "-c ", "raw", &got);
	assert_string_equal(sb_str(&got), table);
	assert_int_equal(sh("%s-legacy -w 5 -t raw -F && %s-legacy -w 5 -t raw -X && "
			    "%s-legacy -w 5 -t raw -Z",
			    tool(af), tool(af), tool(af)),
			 0);
	sb_free(&before);
	sb_free(&got);
	close_handle(NULL);
}

static void test_counters_and_order(void **state)
{
	counters_and_order(AF_INET);
}

static void test_counters_and_order6(void **state)
{
	counters_and_order(AF_INET6);
}

/* A child that holds the flock on @path until its pipe is closed. */
static pid_t hold_lock(const char *path, int *release_fd)
{
	int ready[2], release[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(release), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(30); /* bounded even if the parent forgets us or the lock is taken */
		close(release[1]);
		int fd = open(path, O_CREAT | O_RDWR, 0600);
		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			_exit(1);
		ssize_t w = write(ready[1], "x", 1);
		(void)w;
		char c;
		ssize_t r = read(release[0], &c, 1);
		(void)r;
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1); /* 0: the child could not take the lock */
	close(ready[0]);
	*release_fd = release[1];
	return pid;
}

static void test_lock(void **state)
{
	int release;
	pid_t pid = hold_lock(lock_path, &release);
	struct ipt *t;
	struct ipt_table_state st;
	assert_int_equal(ipt_open_kernel(AF_INET, lock_path, 300, &current), 0);
	t = current;
	uint64_t t0 = now_ms();
	assert_int_equal(ipt_begin(t, "filter", &st), -EBUSY);
	uint64_t waited = now_ms() - t0;
	assert_true(waited >= 300 && waited < 2000);
	assert_non_null(strstr(ipt_last_error(t), "held by another process"));
	close(release);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	OK(t, ipt_begin(t, "filter", &st));
	ipt_table_state_free(&st);
	ipt_abort(t);
	close_handle(NULL);

	/* Released during the wait: begin gets it. */
	pid = hold_lock(lock_path, &release);
	assert_int_equal(ipt_open_kernel(AF_INET, lock_path, 5000, &current), 0);
	t = current;
	pid_t releaser = fork();
	assert_true(releaser >= 0);
	if (releaser == 0) {
		usleep(200 * 1000);
		_exit(0); /* closes its copy; the parent's copy goes below */
	}
	close(release); /* the holder still sees the releaser's copy open */
	t0 = now_ms();
	OK(t, ipt_begin(t, "filter", &st));
	assert_true(now_ms() - t0 < 4000);
	ipt_table_state_free(&st);
	/* While we hold it, iptables itself waits for us. */
	assert_int_equal(
		sh("XTABLES_LOCKFILE=%s timeout 10 iptables-legacy -w 1 -L -n >/dev/null 2>&1",
		   lock_path),
		4);
	ipt_abort(t);
	assert_int_equal(waitpid(releaser, &status, 0), releaser);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close_handle(NULL);
}

static void test_default_lock_path(void **state)
{
	struct ipt *t;
	struct ipt_table_state st;
	assert_int_equal(ipt_open_kernel(AF_INET, NULL, 10000, &current), 0);
	t = current;
	OK(t, ipt_begin(t, "raw", &st));
	assert_int_equal(st.n, 2);
	ipt_table_state_free(&st);
	OK(t, ipt_commit(t));
	close_handle(NULL);
}

/* A DROP rule we write stops pings between two namespaces; deleting it lets them through. */
static void test_packets(void **state)
{
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0)
			_exit(1);
		ssize_t w = write(pipefd[1], "x", 1);
		(void)w;
		alarm(60);
		pause();
		_exit(0);
	}
	char c;
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	assert_int_equal(sh("ip link add brv0 type veth peer name brv1 && "
			    "ip link set brv1 netns %d && "
			    "ip addr add 198.51.100.1/24 dev brv0 && ip link set brv0 up && "
			    "nsenter -t %d -n sh -c 'ip addr add 198.51.100.2/24 dev brv1 && "
			    "ip link set brv1 up && ip link set lo up'",
			    (int)child, (int)child),
			 0);
	/* (Not 10/8: the SNAT rule of test_foreign_rules_survive would take it.) The first ping
	 * may wait for the link to come up: a bounded retry. */
	int r = 1;
	for (int i = 0; i < 10 && r != 0; i++)
		r = sh("ping -c 1 -W 1 198.51.100.2 >/dev/null 2>&1");
	assert_int_equal(r, 0);

	struct ipt *t = open_kernel();
	struct ipt_table_state st;
	OK(t, ipt_begin(t, "filter", &st));
	ipt_table_state_free(&st);
	OK(t, ipt_new_chain(t, "cali-OUTPUT"));
	OK(t, ipt_append(t, "cali-OUTPUT",
			     "-d 198.51.100.2/32 -p icmp -m comment --comment "
			     "\"cali:dropdropdropdrop\" -m icmp --icmp-type 8 -j DROP"));
	OK(t, ipt_insert(t, "OUTPUT", 0, "-o brv0 -j cali-OUTPUT"));
	OK(t, ipt_commit(t));
	assert_int_not_equal(sh("ping -c 1 -W 1 198.51.100.2 >/dev/null 2>&1"), 0);
	struct strbuf counters = STRBUF_INIT;
	sb_init(&counters);
	FILE *f = popen("iptables-legacy-save -c -t filter | grep dropdrop", "r");
	char line[512] = "";
	assert_non_null(fgets(line, sizeof(line), f));
	pclose(f);
	assert_int_equal(strncmp(line, "[1:84]", 6), 0);

	OK(t, ipt_begin(t, "filter", &st));
	ipt_table_state_free(&st);
	OK(t, ipt_delete(t, "cali-OUTPUT", 0));
	OK(t, ipt_commit(t));
	assert_int_equal(sh("ping -c 1 -W 1 198.51.100.2 >/dev/null 2>&1"), 0);
	sb_free(&counters);
	close_handle(NULL);
	assert_int_equal(sh("ip link del brv0"), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_constructs_filter, close_handle),
		cmocka_unit_test_teardown(test_constructs_nat, close_handle),
		cmocka_unit_test_teardown(test_constructs_filter6, close_handle),
		cmocka_unit_test_teardown(test_constructs_nat6, close_handle),
		cmocka_unit_test_teardown(test_positions_and_chains, close_handle),
		cmocka_unit_test_teardown(test_foreign_rules_survive, close_handle),
		cmocka_unit_test_teardown(test_counters_and_order, close_handle),
		cmocka_unit_test_teardown(test_counters_and_order6, close_handle),
		cmocka_unit_test_teardown(test_lock, close_handle),
		cmocka_unit_test_teardown(test_default_lock_path, close_handle),
		cmocka_unit_test_teardown(test_packets, close_handle),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
