/* ip sets: canonical members, batch descriptions, and the recording backend's kernel rules. */
#include "harness.h"

#include <brindle/sys/ipset.h>
#include <brindle/testing/ipset_record.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>

static void expect_member(enum ips_type t, uint8_t family, const char *in, const char *want)
{
	char out[64];
	int r = ips_member_canonical(t, family, in, out, sizeof(out));
	if (r != 0)
		fail_msg("%s %s: %s: expected \"%s\", got %d", ips_type_name(t),
			 family == AF_INET ? "inet" : "inet6", in, want, r);
	assert_string_equal(out, want);
	/* The canonical form is a fixed point. */
	char again[64];
	assert_int_equal(ips_member_canonical(t, family, out, again, sizeof(again)), 0);
	assert_string_equal(again, out);
}

static void expect_bad(enum ips_type t, uint8_t family, const char *in)
{
	char out[64] = "untouched";
	int r = ips_member_canonical(t, family, in, out, sizeof(out));
	if (r != -EINVAL)
		fail_msg("%s %s: \"%s\": expected -EINVAL, got %d (\"%s\")", ips_type_name(t),
			 family == AF_INET ? "inet" : "inet6", in ? in : "(null)", r, out);
	assert_string_equal(out, "untouched");
}

static void test_types(void **state)
{
	enum ips_type t;
	assert_string_equal(ips_type_name(IPS_HASH_NET), "hash:net");
	assert_string_equal(ips_type_name(IPS_HASH_IP), "hash:ip");
	assert_string_equal(ips_type_name(IPS_HASH_IP_PORT), "hash:ip,port");
	assert_null(ips_type_name(IPS_OTHER));
	assert_null(ips_type_name((enum ips_type)99));
	assert_int_equal(ips_type_parse("hash:ip,port", &t), 0);
	assert_int_equal(t, IPS_HASH_IP_PORT);
	assert_int_equal(ips_type_parse("hash:net", &t), 0);
	assert_int_equal(t, IPS_HASH_NET);
	assert_int_equal(ips_type_parse("hash:net,port", &t), -EINVAL);
	assert_int_equal(ips_type_parse("list:set", &t), -EINVAL);
	assert_int_equal(ips_type_parse(NULL, &t), -EINVAL);

	struct ips_info a = { "a", IPS_HASH_NET, AF_INET, 0 }, b = a;
	b.maxelem = IPS_MAXELEM_DEFAULT;
	assert_true(ips_info_same_header(&a, &b));
	b.maxelem = 65536;
	assert_false(ips_info_same_header(&a, &b));
	b = a;
	b.family = AF_INET6;
	assert_false(ips_info_same_header(&a, &b));
}

static void test_members_net(void **state)
{
	expect_member(IPS_HASH_NET, AF_INET, "10.0.0.1", "10.0.0.1");
	expect_member(IPS_HASH_NET, AF_INET, "10.0.0.1/32", "10.0.0.1");
	expect_member(IPS_HASH_NET, AF_INET, "10.0.0.0/24", "10.0.0.0/24");
	expect_member(IPS_HASH_NET, AF_INET, "10.0.0.5/24", "10.0.0.0/24");
	expect_member(IPS_HASH_NET, AF_INET, "10.0.0.1/31", "10.0.0.0/31");
	expect_member(IPS_HASH_NET, AF_INET, "255.255.255.255/1", "128.0.0.0/1");
	expect_member(IPS_HASH_NET, AF_INET, "0.0.0.0", "0.0.0.0");
	expect_member(IPS_HASH_NET, AF_INET, "0.0.0.0/8", "0.0.0.0/8");
	expect_member(IPS_HASH_NET, AF_INET6, "fd00::5/64", "fd00::/64");
	expect_member(IPS_HASH_NET, AF_INET6, "FD00:0:0:1::1", "fd00:0:0:1::1");
	expect_member(IPS_HASH_NET, AF_INET6, "fd00:0:0:0:0:0:0:1/128", "fd00::1");
	expect_member(IPS_HASH_NET, AF_INET6, "::ffff:1.2.3.4", "::ffff:1.2.3.4");
	expect_member(IPS_HASH_NET, AF_INET6, "::/1", "::/1");
	expect_member(IPS_HASH_NET, AF_INET6, "::", "::");

	expect_bad(IPS_HASH_NET, AF_INET, "10.0.0.300");
	expect_bad(IPS_HASH_NET, AF_INET, "10.0.0.0/33");
	expect_bad(IPS_HASH_NET, AF_INET, "0.0.0.0/0"); /* the kernel refuses /0 */
	expect_bad(IPS_HASH_NET, AF_INET6, "::/0");
	expect_bad(IPS_HASH_NET, AF_INET, "10.0.0.0/024");
	expect_bad(IPS_HASH_NET, AF_INET, "10.0.0.0/");
	expect_bad(IPS_HASH_NET, AF_INET, "010.0.0.1");
	expect_bad(IPS_HASH_NET, AF_INET, "10.1");
	expect_bad(IPS_HASH_NET, AF_INET, " 10.0.0.1");
	expect_bad(IPS_HASH_NET, AF_INET, "10.0.0.1 ");
	/* A range is ipset's syntax for several members. */
	expect_bad(IPS_HASH_NET, AF_INET, "10.0.0.1-10.0.0.3");
	expect_bad(IPS_HASH_NET, AF_INET, "fd00::1"); /* wrong family */
	expect_bad(IPS_HASH_NET, AF_INET6, "10.0.0.1");
	expect_bad(IPS_HASH_NET, AF_INET, "localhost");
	expect_bad(IPS_HASH_NET, AF_INET, "");
	expect_bad(IPS_HASH_NET, AF_INET, NULL);
	expect_bad(IPS_HASH_NET, AF_INET, "10.0.0.1,tcp:80");
	expect_bad(IPS_HASH_NET, AF_INET6, "fd00::/129");
	expect_bad(IPS_HASH_NET, 0, "10.0.0.1");
	expect_bad(IPS_OTHER, AF_INET, "10.0.0.1");
}

static void test_members_ip(void **state)
{
	expect_member(IPS_HASH_IP, AF_INET, "10.0.0.1", "10.0.0.1");
	expect_member(IPS_HASH_IP, AF_INET, "10.0.0.1/32", "10.0.0.1");
	expect_member(IPS_HASH_IP, AF_INET, "255.255.255.255", "255.255.255.255");
	expect_member(IPS_HASH_IP, AF_INET6, "fd00::1/128", "fd00::1");
	expect_member(IPS_HASH_IP, AF_INET6, "2001:DB8::0:1", "2001:db8::1");

	expect_bad(IPS_HASH_IP, AF_INET, "10.0.0.0/24"); /* the kernel would add 256 members */
	expect_bad(IPS_HASH_IP, AF_INET, "10.0.0.1/31");
	expect_bad(IPS_HASH_IP, AF_INET, "0.0.0.0"); /* the kernel: null-valued element */
	expect_bad(IPS_HASH_IP, AF_INET6, "::");
	expect_bad(IPS_HASH_IP, AF_INET6, "fd00::1/64");
	expect_bad(IPS_HASH_IP, AF_INET, "10.0.0.1,80");
}

static void test_members_ip_port(void **state)
{
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:8080", "10.0.0.1,tcp:8080");
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,8080", "10.0.0.1,tcp:8080");
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1/32,udp:53", "10.0.0.1,udp:53");
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,sctp:9", "10.0.0.1,sctp:9");
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,udplite:9", "10.0.0.1,udplite:9");
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,6:80", "10.0.0.1,tcp:80");
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,132:80", "10.0.0.1,sctp:80");
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:0", "10.0.0.1,tcp:0");
	expect_member(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,udp:65535", "10.0.0.1,udp:65535");
	expect_member(IPS_HASH_IP_PORT, AF_INET6, "FD00::1,tcp:80", "fd00::1,tcp:80");
	expect_member(IPS_HASH_IP_PORT, AF_INET6,
		      "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128,udplite:65535",
		      "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,udplite:65535");

	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:99999");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:65536");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:080");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:-1");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:+1");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:http");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:80-81");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,TCP:80");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,icmp:8");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,gre:0");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,47:0");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,:80");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.0/24,tcp:80");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "0.0.0.0,tcp:80");
	expect_bad(IPS_HASH_IP_PORT, AF_INET6, "::,tcp:80");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:80,1");
	expect_bad(IPS_HASH_IP_PORT, AF_INET, "fd00::1,tcp:80");

	/* Too small an output buffer is not a bad member. */
	char small[8];
	assert_int_equal(ips_member_canonical(IPS_HASH_IP_PORT, AF_INET, "10.0.0.1,tcp:80", small,
					      sizeof(small)),
			 -ENOSPC);
}

static void test_batch_describe(void **state)
{
	struct ips_batch *b = ips_batch_new();
	struct ips_info n4 = { "cali40s:abc", IPS_HASH_NET, AF_INET, 0 };
	struct ips_info p6 = { "cali60n:xyz", IPS_HASH_IP_PORT, AF_INET6, 4096 };
	ips_batch_create(b, &n4);
	ips_batch_create(b, &p6);
	ips_batch_add(b, "cali40s:abc", "10.0.0.1");
	ips_batch_del(b, "cali40s:abc", "10.0.0.0/24");
	ips_batch_flush(b, "cali40s:abc");
	ips_batch_swap(b, "cali40s:abc", "cali4t0");
	ips_batch_destroy(b, "cali4t0");
	assert_int_equal(ips_batch_count(b), 7);
	const char *want[] = {
		"create cali40s:abc hash:net family inet maxelem 1048576",
		"create cali60n:xyz hash:ip,port family inet6 maxelem 4096",
		"add cali40s:abc 10.0.0.1",
		"del cali40s:abc 10.0.0.0/24",
		"flush cali40s:abc",
		"swap cali40s:abc cali4t0",
		"destroy cali4t0",
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(ips_batch_describe(b, i), want[i]);
	assert_string_equal(ips_batch_describe(b, 7), "");
	ips_batch_reset(b);
	assert_int_equal(ips_batch_count(b), 0);
	ips_batch_add(b, "s", "1.2.3.4");
	assert_string_equal(ips_batch_describe(b, 0), "add s 1.2.3.4");
	ips_batch_free(b);
	ips_batch_free(NULL);
}

/* Apply @b and expect the given results, one per operation. */
static void apply_expect(struct ips *s, struct ips_batch *b, const int *want)
{
	size_t n = ips_batch_count(b);
	int errs[64];
	assert_true(n <= ARRAY_SIZE(errs));
	int failed = 0;
	for (size_t i = 0; i < n; i++)
		failed += want[i] != 0;
	int r = ips_apply(s, b, errs);
	for (size_t i = 0; i < n; i++)
		if (errs[i] != want[i])
			fail_msg("%s: expected %d, got %d", ips_batch_describe(b, i), want[i],
				 errs[i]);
	assert_int_equal(r, failed);
	ips_batch_reset(b);
}

static const struct ips_set *find(const struct ips_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].info.name, name) == 0)
			return &l->v[i];
	return NULL;
}

static void test_recording(void **state)
{
	struct ips *s = ips_open_recording();
	struct ips_batch *b = ips_batch_new();
	struct ips_info n4 = { "cali40s:a", IPS_HASH_NET, AF_INET, 0 };
	struct ips_info t4 = { "cali4t0", IPS_HASH_NET, AF_INET, 3 };
	struct ips_info i4 = { "cali40this-host", IPS_HASH_IP, AF_INET, 0 };
	struct ips_info n6 = { "cali60s:a", IPS_HASH_NET, AF_INET6, 0 };
	struct ips_info foreign = { "kube-foo", IPS_HASH_NET, AF_INET, 0 };

	ips_batch_create(b, &n4);
	ips_batch_create(b, &t4);
	ips_batch_create(b, &i4);
	ips_batch_create(b, &n6);
	ips_batch_create(b, &foreign);
	ips_batch_add(b, "cali40s:a", "10.0.0.5/24");
	ips_batch_add(b, "cali40s:a", "10.0.0.0/24"); /* already there: fine */
	ips_batch_add(b, "cali40s:a", "10.1.0.1/32");
	ips_batch_add(b, "cali40s:a", "fd00::1");     /* wrong family */
	ips_batch_add(b, "cali40s:nope", "10.0.0.1"); /* no such set */
	ips_batch_add(b, "cali40this-host", "10.0.0.0/24");
	ips_batch_add(b, "cali4t0", "10.9.0.1");
	ips_batch_add(b, "cali4t0", "10.9.0.2");
	ips_batch_add(b, "cali4t0", "10.9.0.3");
	ips_batch_add(b, "cali4t0", "10.9.0.4");   /* maxelem 3 */
	ips_batch_add(b, "cali4t0", "10.9.0.1");   /* an existing member still "adds" */
	ips_batch_del(b, "cali40s:a", "10.7.7.7"); /* not a member: fine */
	apply_expect(s, b,
		     (int[]){ 0, 0, 0, 0, 0, 0, 0, 0, -EINVAL, -ENOENT, -EINVAL, 0, 0, 0, -ENOSPC,
			      0, 0 });
	assert_string_equal(ips_last_error(s), "add cali40s:a fd00::1: Invalid argument");
	assert_int_equal(ips_record_count(s), 13);
	assert_string_equal(ips_record_entry(s, 0),
			    "create cali40s:a hash:net family inet maxelem 1048576");
	assert_string_equal(ips_record_entry(s, 5), "add cali40s:a 10.0.0.5/24");
	assert_null(ips_record_entry(s, 13));

	/* Creating again: the same header is fine, another is not. */
	ips_batch_create(b, &n4);
	struct ips_info other = n4;
	other.maxelem = 65536;
	ips_batch_create(b, &other);
	other.type = IPS_HASH_IP;
	other.maxelem = 0;
	ips_batch_create(b, &other);
	struct ips_info bad = { "x", IPS_OTHER, AF_INET, 0 };
	ips_batch_create(b, &bad);
	bad.type = IPS_HASH_NET;
	bad.family = 0;
	ips_batch_create(b, &bad);
	struct ips_info longname = { "", IPS_HASH_NET, AF_INET, 0 };
	memset(longname.name, 'a', IPS_NAME_MAX);
	ips_batch_create(b, &longname); /* 31 characters: fine */
	ips_batch_add(b, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "10.0.0.1");
	ips_batch_add(b, "has space", "10.0.0.1");
	ips_batch_add(b, "", "10.0.0.1");
	apply_expect(s, b,
		     (int[]){ 0, -EEXIST, -EEXIST, -EINVAL, -EINVAL, 0, -ENAMETOOLONG, -EINVAL,
			      -EINVAL });

	struct ips_list l = { 0 };
	assert_int_equal(ips_list_sets(s, "cali", &l), 0);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.v[0].info.name, "cali40s:a"); /* sorted by name */
	assert_string_equal(l.v[1].info.name, "cali40this-host");
	const struct ips_set *a = find(&l, "cali40s:a");
	assert_int_equal(a->info.type, IPS_HASH_NET);
	assert_int_equal(a->info.family, AF_INET);
	assert_int_equal(a->info.maxelem, IPS_MAXELEM_DEFAULT);
	assert_int_equal(a->n, 2);
	assert_string_equal(a->members[0], "10.0.0.0/24");
	assert_string_equal(a->members[1], "10.1.0.1");
	const struct ips_set *t = find(&l, "cali4t0");
	assert_int_equal(t->n, 3);
	assert_int_equal(t->info.maxelem, 3);
	assert_null(find(&l, "kube-foo"));

	/* Names only. */
	assert_int_equal(ips_list_names(s, "cali40", &l), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.v[0].n, 0);
	assert_null(l.v[0].members);

	/* Swap: same type and family only; contents change places, names stay. */
	ips_batch_swap(b, "cali40s:a", "cali4t0");
	ips_batch_swap(b, "cali40s:a", "cali40this-host");
	ips_batch_swap(b, "cali40s:a", "cali60s:a");
	ips_batch_swap(b, "cali40s:a", "nosuch");
	ips_batch_swap(b, "nosuch", "cali40s:a");
	apply_expect(s, b, (int[]){ 0, -EINVAL, -EINVAL, -ENOENT, -ENOENT });
	assert_int_equal(ips_list_sets(s, "cali4", &l), 0);
	a = find(&l, "cali40s:a");
	assert_int_equal(a->n, 3);
	assert_string_equal(a->members[0], "10.9.0.1");
	assert_int_equal(a->info.maxelem, 3);
	t = find(&l, "cali4t0");
	assert_int_equal(t->n, 2);
	assert_int_equal(t->info.maxelem, IPS_MAXELEM_DEFAULT);

	/* Flush, del, destroy; a set in use cannot be destroyed; the mark stays with the name. */
	ips_record_set_in_use(s, "cali40s:a", true);
	ips_batch_del(b, "cali4t0", "10.0.0.0/24");
	ips_batch_flush(b, "cali40s:a");
	ips_batch_flush(b, "nosuch");
	ips_batch_del(b, "nosuch", "10.0.0.1");
	ips_batch_destroy(b, "cali40s:a");
	ips_batch_swap(b, "cali40s:a", "cali4t0");
	ips_batch_destroy(b, "cali4t0");
	ips_batch_destroy(b, "cali4t0"); /* gone already: fine */
	apply_expect(s, b, (int[]){ 0, 0, -ENOENT, -ENOENT, -EBUSY, 0, 0, 0 });
	assert_int_equal(ips_list_sets(s, "cali4", &l), 0);
	a = find(&l, "cali40s:a");
	assert_int_equal(a->n, 1);
	assert_string_equal(a->members[0], "10.1.0.1");
	assert_null(find(&l, "cali4t0"));
	ips_record_set_in_use(s, "cali40s:a", false);
	ips_batch_destroy(b, "cali40s:a");
	apply_expect(s, b, (int[]){ 0 });

	/* Injected failures hit the first matching operation only. */
	ips_record_clear_log(s);
	ips_record_fail_next(s, "10.0.0.7", -EPERM);
	ips_batch_add(b, "cali40this-host", "10.0.0.6");
	ips_batch_add(b, "cali40this-host", "10.0.0.7");
	ips_batch_add(b, "cali40this-host", "10.0.0.7");
	apply_expect(s, b, (int[]){ 0, -EPERM, 0 });
	assert_int_equal(ips_record_count(s), 2);
	assert_string_equal(ips_record_entry(s, 1), "add cali40this-host 10.0.0.7");

	/* An empty batch is nothing to do. */
	assert_int_equal(ips_apply(s, b, NULL), 0);

	ips_list_free(&l);
	ips_list_free(&l);
	ips_batch_free(b);
	ips_close(s);
	ips_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),	       cmocka_unit_test(test_members_net),
		cmocka_unit_test(test_members_ip),     cmocka_unit_test(test_members_ip_port),
		cmocka_unit_test(test_batch_describe), cmocka_unit_test(test_recording),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
