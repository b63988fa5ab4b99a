/*
 * IPAM's pure half: ordinals inside a block (FIFO reuse, attributes shared
 * and compacted, empty marks), block names, the next unclaimed block of a
 * pool (overlapping no block of any size), overlapping blocks, whether an
 * address's owner is gone, and which pools serve a node.
 */
#include "harness.h"

#include <brindle/sys/ipam.h>
#include <brindle/core/json.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static struct br_cidr parse_cidr(const char *s)
{
	struct br_cidr c;
	assert_int_equal(cidr_parse(s, true, &c), 0);
	return c;
}

static struct br_ip IP(const char *s) {
	struct br_ip ip;
	assert_int_equal(ip_parse(s, &ip), 0);
	return ip;
}

static const char *
addr_text(const struct br_ip *ip)
{
	static char buf[4][IP_STRLEN];
	static int i;
	return ip_str(ip, buf[i++ % 4]);
}

static struct br_ipamblock *new_block(const char *cidr, const char *node)
{
	struct br_cidr c = parse_cidr(cidr);
	char name[IPAM_BLOCK_NAME_LEN];
	ipam_block_name(&c, name);
	struct br_ipamblock *b =
		(struct br_ipamblock *)model_new(model_kind(KIND_IPAMBLOCK), NULL, name);
	ipam_block_init(b, &c, node, false);
	return b;
}

static void valid(const struct br_ipamblock *b)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (ipam_block_validate(b, NULL, &err) < 0)
		fail_msg("invalid block: %s", sb_str(&err));
	sb_free(&err);
}

/* Through the stored form and back, as the datastore would. */
static struct br_ipamblock *roundtrip(struct br_ipamblock *b)
{
	struct strbuf js = STRBUF_INIT;
	sb_init(&js);
	model_to_json(&b->o, &js);
	struct model_errors errs = { 0 };
	struct br_object *o = NULL;
	struct arena *a = arena_new();
	struct jv *doc;
	assert_int_equal(json_parse(a, js.buf, js.len, &doc, NULL), 0);
	o = model_decode_kind(model_kind(KIND_IPAMBLOCK), doc, &errs);
	if (!o)
		fail_msg("does not decode: %s\n%s", errs.n ? errs.v[0] : "", js.buf);
	arena_free(a);
	sb_free(&js);
	model_free(&b->o);
	return (struct br_ipamblock *)o;
}

static void test_names(void **state)
{
	char name[IPAM_BLOCK_NAME_LEN];
	struct br_cidr c = parse_cidr("10.244.3.64/26"), back;
	ipam_block_name(&c, name);
	assert_string_equal(name, "10.244.3.64-26");
	assert_int_equal(ipam_block_name_parse(name, &back), 0);
	assert_int_equal(cidr_cmp(&c, &back), 0);
	c = parse_cidr("fd00::40/122");
	ipam_block_name(&c, name);
	assert_string_equal(name, "fd00::40-122");
	assert_int_equal(ipam_block_name_parse(name, &back), 0);
	assert_int_equal(ipam_block_name_parse("10.244.3.65-26", &back), -EINVAL); /* host bits */
	assert_int_equal(ipam_block_name_parse("10.244.3.64", &back), -EINVAL);
	assert_int_equal(ipam_block_name_parse("x-26", &back), -EINVAL);
}

static void test_assign_release_fifo(void **state)
{
	struct br_ipamblock *b = new_block("10.0.0.0/29", "node-a");
	struct br_labels sec = { 0 };
	labels_set(b->o.arena, &sec, "pod", "p1");
	assert_int_equal(ipam_block_capacity(b), 8);
	assert_int_equal(ipam_block_free_count(b), 8);
	char host[64];
	assert_string_equal(ipam_block_host(b, host, sizeof(host)), "node-a");

	struct br_ip ips[8];
	for (int i = 0; i < 8; i++) {
		char h[16];
		snprintf(h, sizeof(h), "net.c%d", i);
		assert_int_equal(ipam_block_assign(b, h, &sec, NULL, &ips[i]), 0);
	}
	assert_string_equal(addr_text(&ips[0]), "10.0.0.0");
	assert_string_equal(addr_text(&ips[7]), "10.0.0.7");
	struct br_ip extra;
	assert_int_equal(ipam_block_assign(b, "net.c9", &sec, NULL, &extra), -ENOSPC);
	assert_int_equal(ipam_block_used(b), 8);
	/* Identical (handle, secondary) pairs share nothing across handles. */
	assert_int_equal(b->spec.n_attributes, 8);
	valid(b);
	b = roundtrip(b);
	valid(b);

	/* Released addresses come back in the order they were freed. */
	assert_int_equal(ipam_block_release_handle(b, "net.c5", 100), 1);
	assert_int_equal(ipam_block_release_handle(b, "net.c2", 100), 1);
	assert_int_equal(ipam_block_release_handle(b, "net.c2", 100), 0);
	assert_int_equal(b->spec.n_attributes, 6);
	assert_null(ipam_block_handle_of(b, &ips[5]));
	assert_string_equal(ipam_block_handle_of(b, &ips[7]), "net.c7");
	valid(b);
	b = roundtrip(b);
	struct br_ip got;
	assert_int_equal(ipam_block_assign(b, "net.x", NULL, NULL, &got), 0);
	assert_string_equal(addr_text(&got), "10.0.0.5");
	assert_int_equal(ipam_block_assign(b, "net.y", NULL, NULL, &got), 0);
	assert_string_equal(addr_text(&got), "10.0.0.2");
	assert_int_equal(ipam_block_empty_since(b), -1);
	model_free(&b->o);
}

static void test_handles_and_specific(void **state)
{
	struct br_ipamblock *b = new_block("10.0.1.0/28", "node-b");
	struct br_ip ip = IP("10.0.1.9"), out[4];
	assert_int_equal(ipam_block_assign_ip(b, &ip, "net.a", NULL), 0);
	assert_int_equal(ipam_block_assign_ip(b, &ip, "net.b", NULL), -EADDRINUSE);
	struct br_ip outside = IP("10.0.2.1");
	assert_int_equal(ipam_block_assign_ip(b, &outside, "net.b", NULL), -ERANGE);
	/* The free list no longer offers the taken one. */
	for (int i = 0; i < 15; i++) {
		struct br_ip g;
		assert_int_equal(ipam_block_assign(b, i % 2 ? "net.a" : "net.b", NULL, NULL, &g),
				 0);
		assert_false(ip_equal(&g, &ip));
	}
	valid(b);
	assert_int_equal(ipam_block_free_count(b), 0);
	size_t n = ipam_block_ips_of(b, "net.a", out, 4);
	assert_int_equal(n, 8); /* counts all, writes at most 4 */
	assert_string_equal(addr_text(&out[0]), "10.0.1.1");
	assert_int_equal(b->spec.n_attributes, 2); /* shared per handle */

	const char *h;
	assert_int_equal(ipam_block_release_ip(b, &ip, 7, &h), 0);
	assert_string_equal(h, "net.a");
	assert_int_equal(ipam_block_release_ip(b, &ip, 7, &h), -ENOENT);
	assert_int_equal(ipam_block_release_handle(b, "net.a", 7), 7);
	assert_int_equal(ipam_block_empty_since(b), -1);
	assert_int_equal(ipam_block_release_handle(b, "net.b", 42), 8);
	/* Emptied: marked with the time, and the mark goes with the next address. */
	assert_int_equal(ipam_block_empty_since(b), 42);
	assert_int_equal(b->spec.n_attributes, 0);
	valid(b);
	b = roundtrip(b);
	assert_int_equal(ipam_block_empty_since(b), 42);
	struct br_ip g;
	int64_t seq = b->spec.sequence_number;
	assert_int_equal(ipam_block_assign(b, "net.c", NULL, NULL, &g), 0);
	assert_int_equal(ipam_block_empty_since(b), -1);
	assert_true(b->spec.sequence_number > seq);
	model_free(&b->o);
}

static void test_validate_rejects(void **state)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct br_ipamblock *b = new_block("10.0.0.0/30", NULL);
	b->spec.unallocated.v[1] = b->spec.unallocated.v[0]; /* duplicate free entry */
	assert_int_equal(ipam_block_validate(b, NULL, &err), -EINVAL);
	model_free(&b->o);
	b = new_block("10.0.0.0/30", NULL);
	b->spec.allocations.v[2] = 5; /* no such attribute */
	assert_int_equal(ipam_block_validate(b, NULL, &err), -EINVAL);
	model_free(&b->o);
	b = new_block("10.0.0.0/30", NULL);
	b->spec.allocations.n = 3;
	assert_int_equal(ipam_block_validate(b, NULL, &err), -EINVAL);
	model_free(&b->o);
	b = new_block("10.0.0.0/30", NULL);
	b->spec.cidr = "10.0.0.4/30"; /* name says otherwise */
	assert_int_equal(ipam_block_validate(b, NULL, &err), -EINVAL);
	model_free(&b->o);
	sb_free(&err);
}

/* IPReservations: automatic assignment skips reserved addresses, FIFO otherwise. */
static void test_reserved(void **state)
{
	struct br_ipamblock *b = new_block("10.0.0.0/29", NULL);
	struct br_cidr rv[2] = { parse_cidr("10.0.0.0/31"), parse_cidr("10.0.0.5/32") };
	struct ipam_reserved r = { rv, 2 };
	assert_int_equal(ipam_block_free_unreserved(b, &r), 5);
	assert_int_equal(ipam_block_free_unreserved(b, NULL), 8);
	const char *want[] = { "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.6", "10.0.0.7" };
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		struct br_ip got;
		assert_int_equal(ipam_block_assign(b, "net.r", NULL, &r, &got), 0);
		char buf[IP_STRLEN];
		assert_string_equal(ip_str(&got, buf), want[i]);
	}
	struct br_ip got;
	assert_int_equal(ipam_block_assign(b, "net.r", NULL, &r, &got), -ENOSPC);
	assert_int_equal(ipam_block_free_unreserved(b, &r), 0);
	assert_int_equal(ipam_block_free_count(b), 3); /* the reserved ones stay free */
	/* an explicit request still gets a reserved address (as Calico) */
	struct br_ip five = IP("10.0.0.5");
	assert_int_equal(ipam_block_assign_ip(b, &five, "net.explicit", NULL), 0);
	model_free(&b->o);

	struct br_cidr blk = parse_cidr("10.0.0.8/29");
	struct br_cidr whole[1] = { parse_cidr("10.0.0.0/28") };
	struct ipam_reserved rw = { whole, 1 };
	assert_true(ipam_block_all_reserved(&blk, &rw));
	struct br_cidr halves[2] = { parse_cidr("10.0.0.8/30"), parse_cidr("10.0.0.12/30") };
	struct ipam_reserved rh = { halves, 2 };
	assert_true(ipam_block_all_reserved(&blk, &rh));
	rh.n = 1;
	assert_false(ipam_block_all_reserved(&blk, &rh));
	assert_false(ipam_block_all_reserved(&blk, NULL));
}

static struct br_ippool *pool(const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0 || n != 1)
		fail_msg("bad pool: %s", errs.n ? errs.v[0] : "");
	struct br_object *o = objs[0];
	free(objs);
	return (struct br_ippool *)o;
}

static void test_pools(void **state)
{
	struct br_ippool *p =
		pool("apiVersion: projectcalico.org/v3\nkind: IPPool\n"
		     "metadata: {name: p}\nspec: {cidr: 10.1.0.0/27, blockSize: 29}\n");
	struct br_cidr taken[3] = { parse_cidr("10.1.0.0/29"), parse_cidr("10.1.0.16/29"),
				    parse_cidr("10.2.0.0/29") };
	struct br_cidr got;
	assert_int_equal(ipam_pool_free_block(p, taken, 0, &got), 0);
	assert_int_equal(cidr_cmp(&got, &taken[0]), 0);
	assert_int_equal(ipam_pool_free_block(p, taken, 3, &got), 0);
	struct br_cidr second = parse_cidr("10.1.0.8/29");
	assert_int_equal(cidr_cmp(&got, &second), 0);
	struct br_cidr all[4] = { parse_cidr("10.1.0.0/29"), parse_cidr("10.1.0.8/29"),
				  parse_cidr("10.1.0.16/29"), parse_cidr("10.1.0.24/29") };
	assert_int_equal(ipam_pool_free_block(p, all, 4, &got), -ENOSPC);
	struct br_ip ip = IP("10.1.0.13");
	assert_int_equal(ipam_pool_block_of(p, &ip, &got), 0);
	assert_int_equal(cidr_cmp(&got, &all[1]), 0);
	ip = IP("10.1.0.40");
	assert_int_equal(ipam_pool_block_of(p, &ip, &got), -ERANGE);

	struct br_labels rack1 = { 0 }, none = { 0 };
	struct arena *la = arena_new();
	labels_set(la, &rack1, "rack", "r1");
	assert_true(ipam_pool_serves(p, &none, NULL));
	model_free(&p->o);

	p = pool("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: r1}\n"
		 "spec: {cidr: 10.3.0.0/24, nodeSelector: rack == 'r1'}\n");
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	assert_true(ipam_pool_serves(p, &rack1, NULL));
	assert_false(ipam_pool_serves(p, &none, &why));
	assert_non_null(strstr(sb_str(&why), "does not select"));
	p->spec.disabled = true;
	sb_reset(&why);
	assert_false(ipam_pool_serves(p, &rack1, &why));
	assert_non_null(strstr(sb_str(&why), "disabled"));
	model_free(&p->o);

	p = pool("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: t}\n"
		 "spec: {cidr: 10.4.0.0/24, allowedUses: [Tunnel]}\n");
	assert_false(ipam_pool_serves(p, &rack1, NULL));
	model_free(&p->o);
	sb_free(&why);
	arena_free(la);
}

/*
 * Blocks of another size (an overlapping pool, a pool whose blockSize was
 * changed) rule out every block they overlap, not only the one of the same
 * CIDR: matching exact CIDRs handed 10.1.0.0 out twice.
 */
static void test_free_block_overlaps(void **state)
{
	struct br_ippool *p =
		pool("apiVersion: projectcalico.org/v3\nkind: IPPool\n"
		     "metadata: {name: p}\nspec: {cidr: 10.1.0.0/24, blockSize: 28}\n");
	struct br_cidr got, want;
	/* A larger block (a /26 of an overlapping pool) covers four /28s. */
	struct br_cidr taken[5] = { parse_cidr("10.1.0.0/26") };
	assert_int_equal(ipam_pool_free_block(p, taken, 1, &got), 0);
	want = parse_cidr("10.1.0.64/28");
	assert_int_equal(cidr_cmp(&got, &want), 0);
	/* A smaller one (a /30) inside the next /28 rules it out too; order does not matter. */
	taken[1] = taken[0];
	taken[0] = parse_cidr("10.1.0.68/30");
	assert_int_equal(ipam_pool_free_block(p, taken, 2, &got), 0);
	want = parse_cidr("10.1.0.80/28");
	assert_int_equal(cidr_cmp(&got, &want), 0);
	/* Blocks elsewhere (another network, another family) change nothing. */
	taken[2] = parse_cidr("10.2.0.0/26");
	taken[3] = parse_cidr("fd00::/122");
	taken[4] = parse_cidr("10.1.0.80/28");
	assert_int_equal(ipam_pool_free_block(p, taken, 5, &got), 0);
	want = parse_cidr("10.1.0.96/28");
	assert_int_equal(cidr_cmp(&got, &want), 0);
	/* A block that holds the whole pool leaves nothing. */
	taken[0] = parse_cidr("10.0.0.0/8");
	assert_int_equal(ipam_pool_free_block(p, taken, 1, &got), -ENOSPC);
	model_free(&p->o);
}

static void test_overlaps(void **state)
{
	struct br_cidr v[6] = { parse_cidr("10.0.0.64/26"), parse_cidr("10.0.1.0/26"),
				parse_cidr("10.0.0.0/24"),  parse_cidr("fd00::/122"),
				parse_cidr("10.0.0.64/28"), parse_cidr("10.0.1.64/26") };
	struct ipam_pair *pairs;
	size_t n = ipam_overlaps(v, 6, &pairs);
	/* /24 with both blocks inside it, and the /26 with the /28 inside it. */
	assert_int_equal(n, 3);
	bool seen[3] = { false };
	for (size_t i = 0; i < n; i++) {
		assert_true(pairs[i].i < pairs[i].j);
		if (pairs[i].i == 0 && pairs[i].j == 2)
			seen[0] = true;
		else if (pairs[i].i == 2 && pairs[i].j == 4)
			seen[1] = true;
		else if (pairs[i].i == 0 && pairs[i].j == 4)
			seen[2] = true;
		else
			fail_msg("unexpected pair %zu, %zu", pairs[i].i, pairs[i].j);
	}
	assert_true(seen[0] && seen[1] && seen[2]);
	free(pairs);
	v[0] = v[4]; /* the same block twice */
	assert_int_equal(ipam_overlaps(v, 2, &pairs), 0);
	free(pairs);
	assert_int_equal(ipam_overlaps(&v[0], 1, &pairs), 0);
	free(pairs);
	struct br_cidr same[2] = { parse_cidr("10.9.0.0/26"), parse_cidr("10.9.0.0/26") };
	assert_int_equal(ipam_overlaps(same, 2, &pairs), 1);
	free(pairs);
}

static struct br_object *wep(const char *name, const char *cid, const char *ip)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		 "metadata: {name: %s, namespace: ns}\n"
		 "spec: {node: n1, interfaceName: cali1, containerID: %s, ipNetworks: [%s]}\n",
		 name, cid, ip);
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("t", buf, strlen(buf), NULL, &objs, &n, &errs) < 0 || n != 1)
		fail_msg("bad endpoint: %s", errs.n ? errs.v[0] : "");
	struct br_object *o = objs[0];
	free(objs);
	return o;
}

/*
 * Whether an address is a leak: only when brindle-cni assigned it (it writes
 * an endpoint) and that endpoint is gone for longer than the grace period.
 * brindle-ipam serving another plugin writes no endpoint: never known gone.
 */
static void test_owner_state(void **state)
{
	struct arena *a = arena_new();
	struct br_ipam_attr attr = { .handle_id = "net.c1" };
	labels_set(a, &attr.secondary, IPAM_ATTR_NAMESPACE, "ns");
	labels_set(a, &attr.secondary, IPAM_ATTR_NODE, "n1");
	labels_set(a, &attr.secondary, IPAM_ATTR_TIMESTAMP, "1000");
	struct br_ip ip = IP("10.0.0.5");
	struct br_object *weps[2] = { wep("other", "c9", "10.0.0.9/32") };
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	/* No endpoint attribute: brindle-ipam for another plugin. */
	assert_int_equal(ipam_owner_state(&attr, &ip, weps, 1, 5000, 300, &why),
			 IPAM_OWNER_UNKNOWN);
	assert_non_null(strstr(sb_str(&why), "writes no endpoints"));
	/* An endpoint that has the address is live, whatever the attributes say. */
	weps[1] = wep("pod-eth0", "c7", "10.0.0.5/32");
	assert_int_equal(ipam_owner_state(&attr, &ip, weps, 2, 5000, 300, NULL), IPAM_OWNER_LIVE);
	model_free(weps[1]);
	labels_set(a, &attr.secondary, IPAM_ATTR_ENDPOINT, "pod-eth0");
	/* brindle-cni's, its endpoint gone for long enough: a leak. */
	sb_reset(&why);
	assert_int_equal(ipam_owner_state(&attr, &ip, weps, 1, 5000, 300, &why), IPAM_OWNER_GONE);
	assert_non_null(strstr(sb_str(&why), "ns/pod-eth0"));
	/* ... but not within the grace period: the ADD may not have written it yet. */
	assert_int_equal(ipam_owner_state(&attr, &ip, weps, 1, 1299, 300, NULL),
			 IPAM_OWNER_UNKNOWN);
	/* The pod's endpoint now belongs to another container (a new sandbox): gone. */
	weps[1] = wep("pod-eth0", "c2", "10.0.0.6/32");
	assert_int_equal(ipam_owner_state(&attr, &ip, weps, 2, 5000, 300, NULL), IPAM_OWNER_GONE);
	model_free(weps[1]);
	/* Its own container's endpoint exists (without the address): live. */
	weps[1] = wep("pod-eth0", "c1", "10.0.0.6/32");
	assert_int_equal(ipam_owner_state(&attr, &ip, weps, 2, 5000, 300, NULL), IPAM_OWNER_LIVE);
	model_free(weps[1]);
	/* No time of assignment: an ADD in progress cannot be told apart. */
	labels_del(&attr.secondary, IPAM_ATTR_TIMESTAMP);
	assert_int_equal(ipam_owner_state(&attr, &ip, weps, 1, 5000, 300, NULL),
			 IPAM_OWNER_UNKNOWN);
	model_free(weps[0]);
	sb_free(&why);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_assign_release_fifo),
		cmocka_unit_test(test_handles_and_specific),
		cmocka_unit_test(test_validate_rejects),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_pools),
		cmocka_unit_test(test_free_block_overlaps),
		cmocka_unit_test(test_overlaps),
		cmocka_unit_test(test_owner_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
