/*
 * iptables rule text <-> kernel entries (lib/ipt_rule_*.c) and the recording
 * backend (lib/ipt_record.c). The round-trip texts are what
 * iptables-legacy-save 1.8.9 printed for the same rules; the netns test
 * checks them against the kernel.
 */
#include "harness.h"

#include <brindle/sys/ipt.h>
#include <brindle/testing/ipt_record.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/x_tables.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/netfilter_ipv6/ip6t_REJECT.h>

/* Every construct of the subset, each as iptables-legacy-save prints it. */
static const char *const round_trips[] = {
	"-j ACCEPT",
	"-j DROP",
	"-j RETURN",
	"-j cali-y",
	"-g cali-y",
	"-s 10.0.0.1/32 -j DROP",
	"-s 10.0.0.0/24 -d 10.1.0.0/16 -j DROP",
	"! -s 10.0.0.0/8 ! -d 192.168.1.0/24 -j DROP",
	"! -s 0.0.0.0/0 -j DROP",
	"-d 0.0.0.0/1 -j DROP",
	"-i cali+ -j ACCEPT",
	"! -i cali+ -o eth0 -j ACCEPT",
	"-i caliabcdef01234 ! -o vxlan.calico -j ACCEPT",
	"-p tcp -j ACCEPT",
	"! -p udp -j ACCEPT",
	"-p ipencap -j ACCEPT",
	"-p gre -j DROP",
	"-p sctp -j DROP",
	"-p ipv6-icmp -j DROP",
	"-p 200 -j DROP",
	"-s 10.0.0.1/32 -d 10.1.0.0/16 -i cali+ ! -o eth0 ! -p udp -j RETURN",
	"-m comment --comment \"cali:abcdefghijklmnop\" -j ACCEPT",
	"-m comment --comment \"cali:abcdefghijklmnop\" -m comment --comment \"a \\\"q\\\" b\\\\c "
	"it\\'s\" -j cali-y",
	"-m comment --comment plain -g cali-y",
	"-m comment --comment \"\" -j DROP",
	"-m comment --comment \"Unknown interface\" -j DROP",
	"-m mark --mark 0x10000/0x10000 -j RETURN",
	"-m mark ! --mark 0x0/0x30000 -j ACCEPT",
	"-m mark --mark 0x5 -j ACCEPT",
	"-m mark --mark 0x10000/0x10000 -m mark ! --mark 0x0/0x30000 -m mark --mark 0x5 -j ACCEPT",
	"-m conntrack --ctstate INVALID,NEW,RELATED,ESTABLISHED,UNTRACKED,SNAT,DNAT -j ACCEPT",
	"-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
	"-m conntrack ! --ctstate INVALID -j ACCEPT",
	"-m conntrack --ctstate DNAT -j ACCEPT",
	"-m set --match-set s1 src -j ACCEPT",
	"-m set --match-set s1 src -m set ! --match-set s2 dst,dst -j ACCEPT",
	"-m set --match-set cali40s:abcdefghijklmnopqrstuvw src,dst,src -j ACCEPT",
	"-p tcp -m multiport --dports 80 -j ACCEPT",
	"-p tcp -m multiport --dports 80,443,1000:2000 -m multiport ! --sports 1:2 -j ACCEPT",
	"-p udp -m multiport --sports 0,65535 -j ACCEPT",
	"-p sctp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 -j ACCEPT",
	"-p tcp -m multiport --dports 1:2,3:4,5:6,7:8,9:10,11:12,13:14,15 -j ACCEPT",
	"-p tcp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14:15 -j ACCEPT",
	"-p icmp -m icmp --icmp-type 8 -j ACCEPT",
	"-p icmp -m icmp ! --icmp-type 3/4 -j ACCEPT",
	"-p icmp -m icmp --icmp-type any -j ACCEPT",
	"-p icmp -m icmp --icmp-type 8/0 -j ACCEPT",
	"-m addrtype ! --src-type LOCAL --limit-iface-out -m addrtype --dst-type UNICAST,LOCAL -j "
	"ACCEPT",
	"-m addrtype --src-type LOCAL --limit-iface-in -j ACCEPT",
	"-m addrtype --src-type LOCAL ! --dst-type BROADCAST,MULTICAST -j ACCEPT",
	"-o tunl0 -m addrtype ! --src-type LOCAL --limit-iface-out -m addrtype --src-type LOCAL -j "
	"MASQUERADE",
	"-m limit --limit 10/min -j ACCEPT",
	"-m limit --limit 7/sec --limit-burst 20 -j ACCEPT",
	"-m limit --limit 3/hour -j ACCEPT",
	"-m limit --limit 2/day --limit-burst 1 -j ACCEPT",
	"-m limit --limit 10000/sec -j ACCEPT",
	"-j MARK --set-xmark 0x10000/0x10000",
	"-j MARK --set-xmark 0x0/0x30000",
	"-j MARK --set-xmark 0x1/0xffffffff",
	"-j MASQUERADE",
	"-j MASQUERADE --random-fully",
	"-m set --match-set cali40masq-ipam-pools src -m set ! --match-set cali40all-ipam-pools "
	"dst -j MASQUERADE --random-fully",
	"-j NFLOG",
	"-j NFLOG --nflog-prefix \"hello there\" --nflog-group 2 --nflog-threshold 3",
	"-j NFLOG --nflog-prefix \"API0|default.allow\" --nflog-group 1",
	"-j NFLOG --nflog-group 65535",
	"-j LOG --log-prefix \"calico-drop: \" --log-level 5",
	"-j LOG --log-prefix x",
	"-j LOG",
	"-j REJECT --reject-with icmp-port-unreachable",
	"-p tcp -j REJECT --reject-with tcp-reset",
	"-j REJECT --reject-with icmp-host-prohibited",
	"-j REJECT --reject-with icmp-admin-prohibited",
	"-i cali+ -p tcp -m comment --comment \"cali:0123456789abcdef\" -m conntrack --ctstate NEW "
	"-m mark --mark 0x0/0x20000 -m set --match-set s1 src -m multiport --dports 80,443 -m "
	"limit --limit 5/sec -j MARK --set-xmark 0x10000/0x10000",
};

/* Each of @texts parses in family @af, prints back as given, parses again to the same bytes,
 * and has the same id as text and as entry. */
static void round_trip_all(int af, const char *const *texts, size_t n)
{
	struct ipt_set_table sets;
	ipt_set_table_init(&sets);
	for (size_t i = 0; i < n; i++) {
		const char *text = texts[i];
		struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
		void *e = NULL, *e2 = NULL;
		size_t len, len2;
		sb_init(&err);
		sb_init(&out);
		if (ipt_rule_parse(af, text, &sets.sets, &e, &len, &err) != 0)
			fail_msg("%s: %s", text, sb_str(&err));
		ipt_rule_format(af, e, NULL, &sets.sets, &out);
		if (strcmp(sb_str(&out), text) != 0)
			fail_msg("given:   %s\nprinted: %s", text, sb_str(&out));
		assert_int_equal(ipt_rule_parse(af, sb_str(&out), &sets.sets, &e2, &len2, &err), 0);
		assert_int_equal(len, len2);
		assert_memory_equal(e, e2, len);
		char id[IPT_ID_LEN + 1], id2[IPT_ID_LEN + 1];
		bool has = ipt_rule_entry_id(af, e, id);
		assert_int_equal(has, ipt_rule_text_id(text, id2));
		if (has)
			assert_string_equal(id, id2);
		free(e);
		free(e2);
		sb_free(&err);
		sb_free(&out);
	}
	ipt_set_table_free(&sets);
}

static void test_round_trips(void **state)
{
	round_trip_all(AF_INET, round_trips, ARRAY_SIZE(round_trips));
}

/* Layout details that iptables 1.8.9 produced (seen with libiptc on its entries). */
static void test_layout(void **state)
{
	struct ipt_set_table sets;
	struct strbuf err = STRBUF_INIT;
	void *v;
	size_t len;
	ipt_set_table_init(&sets);
	sb_init(&err);
	assert_int_equal(ipt_rule_parse(AF_INET,
					"-m comment --comment x -m mark --mark 0x1/0x3 -j cali-y",
					&sets.sets, &v, &len, &err),
			 0);
	struct ipt_entry *e = v;
	assert_int_equal(len, 112 + 288 + 48 + 40);
	assert_int_equal(e->target_offset, 112 + 288 + 48);
	assert_int_equal(e->next_offset, len);
	struct xt_entry_match *m = (void *)e->elems;
	assert_string_equal(m->u.user.name, "comment");
	assert_int_equal(m->u.match_size, 288);
	m = (void *)((char *)m + 288);
	assert_string_equal(m->u.user.name, "mark");
	assert_int_equal(m->u.user.revision, 1);
	struct xt_standard_target *t = (void *)((char *)e + e->target_offset);
	assert_string_equal(t->target.u.user.name, "cali-y");
	assert_int_equal(t->target.u.target_size, 40);
	free(v);

	static const struct {
		const char *rule, *name;
		unsigned rev, size;
	} exts[] = {
		{ "-m conntrack --ctstate NEW -j ACCEPT", "conntrack", 3, 200 },
		{ "-m set --match-set a src -j ACCEPT", "set", 4, 80 },
		{ "-p tcp -m multiport --dports 1 -j ACCEPT", "multiport", 1, 80 },
		{ "-p icmp -m icmp --icmp-type 8 -j ACCEPT", "icmp", 0, 40 },
		{ "-m addrtype --src-type LOCAL -j ACCEPT", "addrtype", 1, 40 },
		{ "-m limit --limit 1/sec -j ACCEPT", "limit", 0, 72 },
		{ "-j MARK --set-xmark 0x1/0x1", "MARK", 2, 40 },
		{ "-j MASQUERADE", "MASQUERADE", 0, 56 },
		{ "-j NFLOG", "NFLOG", 0, 112 },
		{ "-j LOG", "LOG", 0, 64 },
		{ "-j REJECT", "REJECT", 0, 40 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(exts); i++) {
		assert_int_equal(ipt_rule_parse(AF_INET, exts[i].rule, &sets.sets, &v, &len, &err),
				 0);
		e = v;
		m = (void *)e->elems;
		if (e->target_offset == sizeof(*e))
			m = (void *)((char *)e + e->target_offset);
		assert_string_equal(m->u.user.name, exts[i].name);
		assert_int_equal(m->u.user.revision, exts[i].rev);
		assert_int_equal(m->u.match_size, exts[i].size);
		free(v);
	}
	sb_free(&err);
	ipt_set_table_free(&sets);
}

/* IPv6 rules as ip6tables-legacy-save 1.8.9 printed them after `ip6tables-legacy -A`. */
static const char *const round_trips6[] = {
	"-s 2001:db8::/64 -d fd00::1/128 -p ipv6-icmp -m icmp6 --icmpv6-type 135 -j ACCEPT",
	"-p ipv6-icmp -m icmp6 ! --icmpv6-type 1/3 -j RETURN",
	"-p ipv6-icmp -j DROP",
	"-p tcp -j REJECT --reject-with tcp-reset",
	"-j REJECT --reject-with icmp6-port-unreachable",
	"-j REJECT --reject-with icmp6-adm-prohibited",
	"-m addrtype --dst-type LOCAL -j ACCEPT",
	"-s fd00::/48 -j MASQUERADE --random-fully",
	"! -s fd00:10::/56 ! -d ::/0 -i cali+ -o eth0 -j RETURN",
	("-d ::1/128 -p udp -m comment --comment \"cali:0123456789abcdef\" -m set --match-set "
	 "s6 dst -m multiport --dports 53 -j MARK --set-xmark 0x10000/0x10000"),
	"-s fc00::/7 -g cali-x",
};

static void test_round_trips6(void **state)
{
	round_trip_all(AF_INET6, round_trips6, ARRAY_SIZE(round_trips6));
}

/* The IPv6 entry: struct ip6t_entry, the protocol flag, the same matches after it. */
static void test_layout6(void **state)
{
	struct strbuf err = STRBUF_INIT;
	void *v;
	size_t len;
	sb_init(&err);
	assert_int_equal(
		ipt_rule_parse(AF_INET6,
			       "-s fd00::/8 -p ipv6-icmp -m icmp6 --icmpv6-type 128 -g cali-y",
			       NULL, &v, &len, &err),
		0);
	struct ip6t_entry *e = v;
	assert_int_equal(sizeof(*e), 168);
	assert_int_equal(len, 168 + 40 + 40);
	assert_int_equal(e->target_offset, 168 + 40);
	assert_int_equal(e->ipv6.proto, IPPROTO_ICMPV6);
	assert_int_equal(e->ipv6.flags, IP6T_F_PROTO | IP6T_F_GOTO);
	assert_int_equal(e->ipv6.src.s6_addr[0], 0xfd);
	assert_int_equal(e->ipv6.smsk.s6_addr[0], 0xff);
	assert_int_equal(e->ipv6.smsk.s6_addr[1], 0);
	struct xt_entry_match *m = (void *)e->elems;
	assert_string_equal(m->u.user.name, "icmp6");
	struct ip6t_icmp *ic = (void *)m->data;
	assert_int_equal(ic->type, 128);
	assert_int_equal(ic->code[1], 0xff);
	free(v);
	assert_int_equal(ipt_rule_parse(AF_INET6, "-j MASQUERADE", NULL, &v, &len, &err), 0);
	e = v;
	m = (void *)((char *)e + e->target_offset);
	assert_int_equal(m->u.match_size, 32 + 40); /* struct nf_nat_range */
	free(v);
	assert_int_equal(ipt_rule_parse(AF_INET6, "-j REJECT", NULL, &v, &len, &err), 0);
	e = v;
	struct xt_entry_target *t = (void *)((char *)e + e->target_offset);
	assert_int_equal(((struct ip6t_reject_info *)t->data)->with, IP6T_ICMP6_PORT_UNREACH);
	free(v);
	sb_free(&err);
}

static void test_bad_inputs6(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "-s 10.0.0.0/8 -j ACCEPT",
		  "token 2 (\"10.0.0.0/8\"): not an IPv6 address or CIDR" },
		{ "-d fd00::/129 -j ACCEPT",
		  "token 2 (\"fd00::/129\"): not an IPv6 address or CIDR" },
		{ "-p icmp -m icmp --icmp-type 8 -j ACCEPT",
		  "token 4 (\"icmp\"): an IPv6 rule matches ICMPv6: -m icmp6" },
		{ "-p tcp -m icmp6 --icmpv6-type 128 -j ACCEPT",
		  "token 4 (\"icmp6\"): needs -p ipv6-icmp (not negated)" },
		{ "-p ipv6-icmp -m icmp6 --icmpv6-type any -j ACCEPT",
		  "token 6 (\"any\"): not an icmpv6 type (T or T/C)" },
		{ "-p ipv6-icmp -m icmp6 -j ACCEPT",
		  "token 4 (\"icmp6\"): -m icmp6 needs --icmpv6-type" },
		{ "-j REJECT --reject-with icmp-port-unreachable",
		  "token 4 (\"icmp-port-unreachable\"): unknown reject type" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strbuf err = STRBUF_INIT;
		void *e = (void *)1;
		size_t len = 7;
		sb_init(&err);
		if (ipt_rule_parse(AF_INET6, bad[i].text, NULL, &e, &len, &err) != -EINVAL)
			fail_msg("parsed: %s", bad[i].text);
		if (strcmp(sb_str(&err), bad[i].msg) != 0)
			fail_msg("%s\n  want: %s\n  got:  %s", bad[i].text, bad[i].msg,
				 sb_str(&err));
		assert_ptr_equal(e, (void *)1);
		sb_free(&err);
	}
	/* and IPv6's icmp6 in an IPv4 rule */
	struct strbuf err = STRBUF_INIT;
	void *e;
	size_t len;
	sb_init(&err);
	assert_int_equal(ipt_rule_parse(AF_INET, "-p ipv6-icmp -m icmp6 --icmpv6-type 1 -j DROP",
					NULL, &e, &len, &err),
			 -EINVAL);
	assert_string_equal(sb_str(&err),
			    "token 4 (\"icmp6\"): an IPv4 rule matches ICMP: -m icmp");
	sb_reset(&err);
	assert_int_equal(ipt_rule_parse(AF_PACKET, "-j DROP", NULL, &e, &len, &err), -EINVAL);
	sb_free(&err);
}

static void test_bad_inputs(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "", "empty rule" },
		{ "   ", "empty rule" },
		{ "-p tcp -m multiport --dportz 80 -j ACCEPT",
		  "token 5 (\"--dportz\"): unknown option of multiport" },
		{ "-m comment --comment \"abc -j ACCEPT", "token 4: unterminated quote" },
		{ "-m comment --comment", "token 3 (\"--comment\"): missing argument" },
		{ "-m comment -j ACCEPT", "token 2 (\"comment\"): -m comment needs --comment" },
		{ "-m foo -j ACCEPT", "token 2 (\"foo\"): unknown match" },
		{ "--foo -j ACCEPT", "token 1 (\"--foo\"): unknown option" },
		{ "-s 10.0.0.300 -j ACCEPT",
		  "token 2 (\"10.0.0.300\"): not an IPv4 address or CIDR" },
		{ "-s 10.0.0.0/33 -j ACCEPT",
		  "token 2 (\"10.0.0.0/33\"): not an IPv4 address or CIDR" },
		{ "-s 10.0.0.0/8 -s 10.0.0.0/8 -j ACCEPT", "token 3 (\"-s\"): given twice" },
		{ "-i + -j ACCEPT",
		  "token 2 (\"+\"): \"+\" matches every interface: leave the option out" },
		{ "-i abcdefghijklmnop -j ACCEPT",
		  "token 2 (\"abcdefghijklmnop\"): not an interface name (1-15 characters, no '/', "
		  "blanks or quotes)" },
		{ "-p foo -j ACCEPT", "token 2 (\"foo\"): unknown protocol" },
		{ "-p all -j ACCEPT",
		  "token 2 (\"all\"): \"all\" matches every protocol: leave -p out" },
		{ "-p 256 -j ACCEPT", "token 2 (\"256\"): unknown protocol" },
		{ "-j ACCEPT -m mark --mark 1", "token 3 (\"-m\"): unexpected after the target" },
		{ "-m mark --mark 1", "token 4 (\"1\"): no target (-j or -g)" },
		{ "-j", "token 1 (\"-j\"): missing argument" },
		{ "-g ACCEPT", "token 2 (\"ACCEPT\"): -g needs a chain" },
		{ "-j cali-0123456789012345678901234",
		  "token 2 (\"cali-0123456789012345678901234\"): "
		  "not a chain name (1-28 characters)" },
		{ "! -m mark --mark 1 -j ACCEPT", "token 2 (\"-m\"): cannot be negated" },
		{ "-j ACCEPT !", "token 3 (\"!\"): unexpected after the target" },
		{ "-s 10.0.0.0/8 !", "token 3 (\"!\"): nothing to negate" },
		{ "-j LOG !", "token 3 (\"!\"): nothing to negate" },
		{ "-m mark !", "token 2 (\"mark\"): -m mark needs --mark" },
		{ "-m comment --comment \"a\\\x01\" -j ACCEPT",
		  "control character 0x01 at offset 24" },
		{ "-m mark --mark 0x1/0x100000000 -j ACCEPT",
		  "token 4 (\"0x1/0x100000000\"): not a mark (0xV or 0xV/0xM)" },
		{ "-m mark --mark 1 --mark 2 -j ACCEPT", "token 5 (\"--mark\"): given twice" },
		{ "-m conntrack --ctstate NEW,FOO -j ACCEPT",
		  "token 4 (\"NEW,FOO\"): unknown conntrack state \"FOO\"" },
		{ "-m conntrack --state NEW -j ACCEPT",
		  "token 3 (\"--state\"): unknown option of conntrack" },
		{ "-m set --match-set s1 -j ACCEPT",
		  "token 5 (\"-j\"): directions are src or dst, comma separated" },
		{ "-m set --match-set s1 src,dst,src,dst,src,dst,src -j ACCEPT",
		  "token 5 (\"src,dst,src,dst,src,dst,src\"): more than 6 directions" },
		{ "-m set --match-set abcdefghijklmnopqrstuvwxyz0123456 src -j ACCEPT",
		  "token 4 (\"abcdefghijklmnopqrstuvwxyz0123456\"): not an ip set name (1-31 "
		  "characters)" },
		{ "-m multiport --dports 80 -j ACCEPT",
		  "token 2 (\"multiport\"): needs -p tcp, udp, udplite, sctp or dccp (not "
		  "negated)" },
		{ "! -p tcp -m multiport --dports 80 -j ACCEPT",
		  "token 5 (\"multiport\"): needs -p tcp, udp, udplite, sctp or dccp (not "
		  "negated)" },
		{ "-p tcp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 -j ACCEPT",
		  "token 6 (\"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\"): more than 15 port slots "
		  "(a "
		  "range takes 2)" },
		{ "-p tcp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15:16 -j ACCEPT",
		  "token 6 (\"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15:16\"): more than 15 port slots "
		  "(a "
		  "range takes 2)" },
		{ "-p tcp -m multiport --dports 80:80 -j ACCEPT",
		  "token 6 (\"80:80\"): range 80:80 is empty or one port" },
		{ "-p tcp -m multiport --dports 65536 -j ACCEPT",
		  "token 6 (\"65536\"): not a port or range" },
		{ "-p tcp -m multiport --dports http -j ACCEPT",
		  "token 6 (\"http\"): not a port or range" },
		{ "-p tcp -m multiport --dports 1 --sports 2 -j ACCEPT",
		  "token 7 (\"--sports\"): given twice" },
		{ "-m icmp --icmp-type 8 -j ACCEPT",
		  "token 2 (\"icmp\"): needs -p icmp (not negated)" },
		{ "-p icmp -m icmp --icmp-type echo-request -j ACCEPT",
		  "token 6 (\"echo-request\"): not an icmp type (T, T/C or any)" },
		{ "-p icmp -m icmp --icmp-type 255/0 -j ACCEPT",
		  "token 6 (\"255/0\"): type 255 prints as \"any\", whatever its code" },
		{ "-m addrtype --limit-iface-out -j ACCEPT",
		  "token 2 (\"addrtype\"): -m addrtype needs --src-type or --dst-type" },
		{ "-m addrtype --src-type LOCAL --limit-iface-in --limit-iface-out -j ACCEPT",
		  "token 6 (\"--limit-iface-out\"): --limit-iface-in and --limit-iface-out exclude "
		  "each other" },
		{ "-m addrtype --src-type LOCALE -j ACCEPT",
		  "token 4 (\"LOCALE\"): unknown address type \"LOCALE\"" },
		{ "-m addrtype ! --limit-iface-out --src-type LOCAL -j ACCEPT",
		  "token 4 (\"--limit-iface-out\"): cannot be negated" },
		{ "-m limit --limit 10/fortnight -j ACCEPT",
		  "token 4 (\"10/fortnight\"): not a rate (N/sec, N/min, N/hour or N/day)" },
		{ "-m limit --limit 10001/sec -j ACCEPT",
		  "token 4 (\"10001/sec\"): rate too fast (at most 10000/sec)" },
		{ "-m limit --limit-burst 0 -j ACCEPT", "token 4 (\"0\"): not a burst (1-10000)" },
		/* The kernel refuses these (ERANGE); iptables-legacy -A says so too. */
		{ "-m limit --limit 1/day -j ACCEPT",
		  "token 2 (\"limit\"): rate times burst overflows the kernel's credits: lower "
		  "either" },
		{ "-m limit --limit 1/day --limit-burst 4 -j ACCEPT",
		  "token 6 (\"4\"): rate times burst overflows the kernel's credits: lower "
		  "either" },
		{ "-m limit --limit 1/hour --limit-burst 120 -j ACCEPT",
		  "token 6 (\"120\"): rate times burst overflows the kernel's credits: lower "
		  "either" },
		{ "-m limit ! --limit 1/sec -j ACCEPT",
		  "token 4 (\"--limit\"): cannot be negated" },
		{ "-j MARK", "token 1 (\"-j\"): -j MARK needs --set-xmark" },
		{ "-j MARK --set-xmark 0x1 --set-mark 0x2",
		  "token 5 (\"--set-mark\"): given twice" },
		{ "-j MARK --and-mark 0x1", "token 3 (\"--and-mark\"): unknown option of MARK" },
		{ "-j MASQUERADE --to-ports 80",
		  "token 3 (\"--to-ports\"): unknown option of MASQUERADE" },
		{ "-j NFLOG --nflog-group 65536", "token 4 (\"65536\"): not a group (0-65535)" },
		{ "-j LOG --log-prefix 012345678901234567890123456789",
		  "token 4 (\"012345678901234567890123456789\"): longer than 29 characters" },
		{ "-j LOG --log-level 8", "token 4 (\"8\"): not a log level (0-7)" },
		{ "-j REJECT --reject-with tcp-reset",
		  "token 4 (\"tcp-reset\"): needs -p tcp (not negated)" },
		{ "-j REJECT --reject-with echo-reply",
		  "token 4 (\"echo-reply\"): unknown reject type" },
		{ "-j cali-x cali-y", "token 3 (\"cali-y\"): unexpected after the target" },
		{ "-m comment --comment \"a\tb\" -j ACCEPT",
		  "control character 0x09 at offset 23" },
	};
	int wrong = 0;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strbuf err = STRBUF_INIT;
		struct ipt_set_table sets;
		void *e = (void *)1;
		size_t len = 7;
		sb_init(&err);
		ipt_set_table_init(&sets);
		if (ipt_rule_parse(AF_INET, bad[i].text, &sets.sets, &e, &len, &err) != -EINVAL)
			fail_msg("parsed: %s", bad[i].text);
		if (strcmp(sb_str(&err), bad[i].msg) != 0) {
			print_error("%s\n  want: %s\n  got:  %s\n", bad[i].text, bad[i].msg,
				    sb_str(&err));
			wrong++;
		}
		assert_ptr_equal(e, (void *)1);
		assert_int_equal(len, 7);
		sb_free(&err);
		ipt_set_table_free(&sets);
	}
	assert_int_equal(wrong, 0);
	/* Without a resolver, set matches are refused. */
	struct strbuf err = STRBUF_INIT;
	void *e;
	size_t len;
	sb_init(&err);
	assert_int_equal(ipt_rule_parse(AF_INET, "-m set --match-set s1 src -j ACCEPT", NULL, &e,
					&len, &err),
			 -EINVAL);
	assert_string_equal(sb_str(&err), "token 4 (\"s1\"): no resolver of ip set names");
	sb_free(&err);
}

/* Texts that parse but come back in iptables-save's own spelling. */
static void test_canonical(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "-s 10.0.0.1/24 -j DROP", "-s 10.0.0.0/24 -j DROP" },
		{ "-s 10.0.0.1 -j DROP", "-s 10.0.0.1/32 -j DROP" },
		{ "-p 6 -j DROP", "-p tcp -j DROP" },
		{ "-p 4 -j DROP", "-p ipencap -j DROP" },
		{ "-s 0.0.0.0/0 -j DROP", "-j DROP" },
		{ "-m comment --comment cali:x -j DROP",
		  "-m comment --comment \"cali:x\" -j DROP" },
		{ "-m comment --comment \"abc\" -j DROP", "-m comment --comment abc -j DROP" },
		{ "-m mark --mark 65536/0x10000 -j DROP",
		  "-m mark --mark 0x10000/0x10000 -j DROP" },
		{ "-m mark --mark 0x1/0xffffffff -j DROP", "-m mark --mark 0x1 -j DROP" },
		{ "-m conntrack --ctstate established,related -j ACCEPT",
		  "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT" },
		{ "-m addrtype --dst-type local,unicast -j ACCEPT",
		  "-m addrtype --dst-type UNICAST,LOCAL -j ACCEPT" },
		{ "-m limit --limit 10/min --limit-burst 5 -j ACCEPT",
		  "-m limit --limit 10/min -j ACCEPT" },
		{ "-m limit --limit 60/minute -j ACCEPT", "-m limit --limit 1/sec -j ACCEPT" },
		{ "-m limit -j ACCEPT", "-m limit --limit 3/hour -j ACCEPT" },
		{ "-m limit --limit 7 -j ACCEPT", "-m limit --limit 7/sec -j ACCEPT" },
		{ "-p icmp -m icmp --icmp-type 255 -j ACCEPT",
		  "-p icmp -m icmp --icmp-type any -j ACCEPT" },
		{ "-j MARK --set-mark 0x10000/0x10000", "-j MARK --set-xmark 0x10000/0x10000" },
		{ "-j MARK --set-mark 0x0/0x30000", "-j MARK --set-xmark 0x0/0x30000" },
		{ "-j MARK --set-xmark 0x1", "-j MARK --set-xmark 0x1/0xffffffff" },
		{ "-j LOG --log-prefix x --log-level 4", "-j LOG --log-prefix x" },
		{ "-j LOG --log-level notice", "-j LOG --log-level 5" },
		{ "-j REJECT", "-j REJECT --reject-with icmp-port-unreachable" },
		{ "-j NFLOG --nflog-group 0 --nflog-threshold 0", "-j NFLOG" },
		{ "-j  ACCEPT ", "-j ACCEPT" },
		{ "-m comment --comment a\"b c\"d -j ACCEPT",
		  "-m comment --comment \"ab cd\" -j ACCEPT" },
	};
	struct ipt_set_table sets;
	ipt_set_table_init(&sets);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
		void *e;
		size_t len;
		sb_init(&err);
		sb_init(&out);
		if (ipt_rule_parse(AF_INET, cases[i].in, &sets.sets, &e, &len, &err) != 0)
			fail_msg("%s: %s", cases[i].in, sb_str(&err));
		ipt_rule_format(AF_INET, e, NULL, &sets.sets, &out);
		if (strcmp(sb_str(&out), cases[i].out) != 0)
			fail_msg("%s\n  want: %s\n  got:  %s", cases[i].in, cases[i].out,
				 sb_str(&out));
		free(e);
		sb_free(&err);
		sb_free(&out);
	}
	ipt_set_table_free(&sets);
}

/* Entries as libiptc hands them out: verdicts and jumps carry no name. */
static void test_format_foreign(void **state)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	void *v;
	size_t len;
	sb_init(&err);
	sb_init(&out);
	assert_int_equal(ipt_rule_parse(AF_INET, "-j cali-y", NULL, &v, &len, &err), 0);
	struct ipt_entry *e = v;
	struct xt_standard_target *t = (void *)((char *)e + e->target_offset);
	memset(t->target.u.user.name, 0, sizeof(t->target.u.user.name));
	t->verdict = 1234;
	ipt_rule_format(AF_INET, e, "KUBE-SERVICES", NULL, &out);
	assert_string_equal(sb_str(&out), "-j KUBE-SERVICES");
	sb_reset(&out);
	t->verdict = -NF_DROP - 1;
	ipt_rule_format(AF_INET, e, NULL, NULL, &out);
	assert_string_equal(sb_str(&out), "-j DROP");
	sb_reset(&out);
	e->ip.flags |= IPT_F_GOTO;
	ipt_rule_format(AF_INET, e, "cali-x", NULL, &out);
	assert_string_equal(sb_str(&out), "-g cali-x");
	sb_reset(&out);
	/* A module we do not know, and a match outside the subset. */
	snprintf(t->target.u.user.name, sizeof(t->target.u.user.name), "CLASSIFY");
	e->ip.flags = 0;
	ipt_rule_format(AF_INET, e, "CLASSIFY", NULL, &out);
	assert_string_equal(sb_str(&out), "-j CLASSIFY (unsupported)");
	free(v);
	sb_reset(&out);
	assert_int_equal(
		ipt_rule_parse(AF_INET,
			       "-p tcp -m multiport --dports 1 -m set --match-set s src -j ACCEPT",
			       NULL, &v, &len, &err),
		-EINVAL);
	assert_int_equal(
		ipt_rule_parse(AF_INET, "-m mark --mark 1 -j ACCEPT", NULL, &v, &len, &err), 0);
	e = v;
	struct xt_entry_match *m = (void *)e->elems;
	snprintf(m->u.user.name, sizeof(m->u.user.name), "owner");
	ipt_rule_format(AF_INET, e, NULL, NULL, &out);
	assert_string_equal(sb_str(&out), "-m owner (unsupported) -j ACCEPT");
	free(v);
	sb_free(&err);
	sb_free(&out);
}

static void test_chain_names(void **state)
{
	assert_true(ipt_chain_name_valid("cali-FORWARD"));
	assert_true(ipt_chain_name_valid("KUBE-SERVICES"));
	assert_true(ipt_chain_name_valid("cali-pi-_0123456789abcdefghi")); /* 28 */
	assert_false(ipt_chain_name_valid("cali-pi-_0123456789abcdefghij"));
	assert_false(ipt_chain_name_valid(""));
	assert_false(ipt_chain_name_valid("-cali"));
	assert_false(ipt_chain_name_valid("!cali"));
	assert_false(ipt_chain_name_valid("cali x"));
	assert_false(ipt_chain_name_valid("cali\"x"));
	assert_false(ipt_chain_name_valid("ACCEPT"));
	assert_false(ipt_chain_name_valid("MARK"));
	assert_false(ipt_chain_name_valid("QUEUE"));
}

static void test_ids(void **state)
{
	char id[IPT_ID_LEN + 1];
	assert_true(ipt_rule_text_id(
		"-m comment --comment \"cali:0123456789abcdef\" -m comment --comment x -j ACCEPT",
		id));
	assert_string_equal(id, "cali:0123456789abcdef");
	assert_true(ipt_rule_text_id("-m comment --comment foo -m comment --comment "
				     "\"cali:0123456789abcdefXYZ\" -j ACCEPT",
				     id));
	assert_string_equal(id, "cali:0123456789abcdef");
	assert_false(ipt_rule_text_id("-m comment --comment \"cali:short\" -j ACCEPT", id));
	assert_false(ipt_rule_text_id("-j ACCEPT", id));
	assert_false(
		ipt_rule_text_id("-m set --match-set cali:0123456789abcdef src -j ACCEPT", id));

	struct strbuf err = STRBUF_INIT;
	void *e;
	size_t len;
	sb_init(&err);
	assert_int_equal(ipt_rule_parse(AF_INET,
					"-m comment --comment x -m comment --comment "
					"\"cali:0123456789abcdef\" -j ACCEPT",
					NULL, &e, &len, &err),
			 0);
	assert_true(ipt_rule_entry_id(AF_INET, e, id));
	assert_string_equal(id, "cali:0123456789abcdef");
	free(e);
	assert_int_equal(ipt_rule_parse(AF_INET, "-j ACCEPT", NULL, &e, &len, &err), 0);
	assert_false(ipt_rule_entry_id(AF_INET, e, id));
	free(e);
	sb_free(&err);
}

/* --- the recording backend --------------------------------------------------------- */

static void save_is(struct ipt *t, const char *table, const char *want)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	ipt_record_save(t, table, &sb);
	if (strcmp(sb_str(&sb), want) != 0)
		fail_msg("want:\n%s\ngot:\n%s", want, sb_str(&sb));
	sb_free(&sb);
}

static void test_record_session(void **state)
{
	struct ipt *t = ipt_open_recording();
	struct ipt_table_state st;
	save_is(t, "raw", "*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n");
	save_is(t, "mangle",
		"*mangle\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n"
		":OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n");

	assert_int_equal(ipt_begin(t, "filter", &st), 0);
	assert_int_equal(st.n, 3);
	assert_string_equal(st.chains[1].name, "FORWARD");
	assert_true(st.chains[1].builtin);
	ipt_table_state_free(&st);
	assert_int_equal(ipt_new_chain(t, "cali-b"), 0);
	assert_int_equal(ipt_new_chain(t, "cali-a"), 0);
	assert_int_equal(ipt_new_chain(t, "cali-a"), -EEXIST);
	assert_int_equal(ipt_append(t, "cali-a",
					"-m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -j DROP"),
			 0);
	assert_int_equal(ipt_insert(t, "cali-a", 0,
					"-m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -g cali-b"),
			 0);
	assert_int_equal(ipt_insert(t, "FORWARD", 0, "-i cali+ -j cali-a"), 0);
	assert_int_equal(ipt_append(t, "FORWARD", "-m mark --mark 0x10000/0x10000 -j ACCEPT"),
			 0);
	/* Nothing shows before the commit. */
	save_is(t, "filter",
		"*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT "
		"[0:0]\nCOMMIT\n");
	assert_int_equal(ipt_commit(t), 0);
	assert_int_equal(ipt_record_commits(t, "filter"), 1);
	assert_int_equal(ipt_record_commits(t, "nat"), 0);
	save_is(t, "filter",
		"*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
		":cali-a - [0:0]\n:cali-b - [0:0]\n"
		"-A FORWARD -i cali+ -j cali-a\n"
		"-A FORWARD -m mark --mark 0x10000/0x10000 -j ACCEPT\n"
		"-A cali-a -m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -g cali-b\n"
		"-A cali-a -m comment --comment \"cali:aaaaaaaaaaaaaaaa\" -j DROP\n"
		"COMMIT\n");

	/* The state read back: kernel order, ids, targets. */
	assert_int_equal(ipt_begin(t, "filter", &st), 0);
	assert_int_equal(st.n, 5);
	const struct ipt_chain_state *c = ipt_table_state_chain(&st, "cali-a");
	assert_non_null(c);
	assert_false(c->builtin);
	assert_int_equal(c->n, 2);
	assert_string_equal(c->ids[0], "cali:bbbbbbbbbbbbbbbb");
	assert_string_equal(c->targets[0], "cali-b");
	assert_string_equal(c->ids[1], "cali:aaaaaaaaaaaaaaaa");
	assert_string_equal(c->targets[1], "DROP");
	c = ipt_table_state_chain(&st, "FORWARD");
	assert_int_equal(c->n, 2);
	assert_string_equal(c->ids[0], "");
	assert_string_equal(c->targets[0], "cali-a");
	assert_null(ipt_table_state_chain(&st, "cali-c"));
	assert_non_null(ipt_table_state_chain(&st, "cali-b"));
	ipt_table_state_free(&st);

	/* Abort discards; replace and delete by position. */
	assert_int_equal(ipt_replace(t, "cali-a", 1, "-j ACCEPT"), 0);
	assert_int_equal(ipt_delete(t, "FORWARD", 1), 0);
	ipt_abort(t);
	assert_int_equal(ipt_record_commits(t, "filter"), 1);
	assert_int_equal(ipt_begin(t, "filter", &st), 0);
	ipt_table_state_free(&st);
	assert_int_equal(ipt_replace(t, "cali-a", 1, "-j ACCEPT"), 0);
	assert_int_equal(ipt_delete(t, "FORWARD", 1), 0);
	assert_int_equal(ipt_commit(t), 0);
	save_is(t, "filter",
		"*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
		":cali-a - [0:0]\n:cali-b - [0:0]\n"
		"-A FORWARD -i cali+ -j cali-a\n"
		"-A cali-a -m comment --comment \"cali:bbbbbbbbbbbbbbbb\" -g cali-b\n"
		"-A cali-a -j ACCEPT\n"
		"COMMIT\n");
	assert_int_equal(ipt_record_commits(t, "filter"), 2);
	ipt_close(t);
}

static void test_record_errors(void **state)
{
	struct ipt *t = ipt_open_recording();
	struct ipt_table_state st;
	assert_int_equal(ipt_new_chain(t, "cali-a"), -EINVAL);
	assert_string_equal(ipt_last_error(t), "no session: call begin first");
	assert_int_equal(ipt_begin(t, "security", &st), -ENOENT);
	assert_int_equal(ipt_begin(t, "nat", &st), 0);
	ipt_table_state_free(&st);
	assert_int_equal(ipt_begin(t, "nat", &st), -EINPROGRESS);
	assert_int_equal(ipt_append(t, "cali-x", "-j ACCEPT"), -ENOENT);
	assert_string_equal(ipt_last_error(t), "no chain cali-x in table nat");
	assert_int_equal(ipt_append(t, "POSTROUTING", "-j cali-x"), -ENOENT);
	assert_string_equal(ipt_last_error(t), "-j cali-x: no chain cali-x to jump to");
	assert_int_equal(
		ipt_append(t, "POSTROUTING", "-j REJECT --reject-with icmp-port-unreachable"),
		-EINVAL);
	assert_string_equal(ipt_last_error(t), "-j REJECT --reject-with icmp-port-unreachable: "
					       "target REJECT is not valid in table nat");
	assert_int_equal(ipt_append(t, "POSTROUTING", "-s 10.0.0.1/24 -j MASQUERADE"), -EINVAL);
	assert_string_equal(ipt_last_error(t), "rule text is not as iptables-save prints it:\n"
					       "  given:   -s 10.0.0.1/24 -j MASQUERADE\n"
					       "  printed: -s 10.0.0.0/24 -j MASQUERADE");
	assert_int_equal(ipt_append(t, "POSTROUTING", "-j MASQUERADE --to-ports 1"), -EINVAL);
	assert_string_equal(ipt_last_error(t), "-j MASQUERADE --to-ports 1: token 3 "
					       "(\"--to-ports\"): unknown option of MASQUERADE");
	assert_int_equal(ipt_new_chain(t, "MARK"), -EINVAL);
	assert_int_equal(ipt_new_chain(t, "cali-0123456789012345678901234"), -EINVAL);
	assert_int_equal(ipt_new_chain(t, "cali-a"), 0);
	assert_int_equal(ipt_new_chain(t, "cali-b"), 0);
	assert_int_equal(ipt_append(t, "cali-a", "-j cali-b"), 0);
	assert_int_equal(ipt_insert(t, "cali-a", 2, "-j ACCEPT"), -ENOENT);
	assert_string_equal(ipt_last_error(t), "no position 2 in chain cali-a (1 rules)");
	assert_int_equal(ipt_replace(t, "cali-a", 1, "-j ACCEPT"), -ENOENT);
	assert_int_equal(ipt_delete(t, "cali-a", 1), -ENOENT);
	assert_int_equal(ipt_delete_chain(t, "cali-b"), -EMLINK);
	assert_int_equal(ipt_delete_chain(t, "cali-a"), -ENOTEMPTY);
	assert_int_equal(ipt_delete_chain(t, "OUTPUT"), -EINVAL);
	assert_int_equal(ipt_delete_chain(t, "cali-c"), -ENOENT);
	assert_int_equal(ipt_flush_chain(t, "cali-c"), -ENOENT);
	assert_int_equal(ipt_flush_chain(t, "cali-a"), 0);
	assert_int_equal(ipt_delete_chain(t, "cali-b"), 0);
	assert_int_equal(ipt_delete_chain(t, "cali-a"), 0);
	/* A loop fails the commit and ends the session. */
	assert_int_equal(ipt_new_chain(t, "cali-a"), 0);
	assert_int_equal(ipt_new_chain(t, "cali-b"), 0);
	assert_int_equal(ipt_append(t, "cali-a", "-j cali-b"), 0);
	assert_int_equal(ipt_append(t, "cali-b", "-g cali-a"), 0);
	assert_int_equal(ipt_commit(t), -ELOOP);
	assert_int_equal(ipt_record_commits(t, "nat"), 0);
	assert_int_equal(ipt_commit(t), -EINVAL);
	ipt_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),    cmocka_unit_test(test_layout),
		cmocka_unit_test(test_bad_inputs),     cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_format_foreign), cmocka_unit_test(test_ids),
		cmocka_unit_test(test_chain_names),    cmocka_unit_test(test_record_session),
		cmocka_unit_test(test_record_errors),  cmocka_unit_test(test_round_trips6),
		cmocka_unit_test(test_layout6),	       cmocka_unit_test(test_bad_inputs6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
