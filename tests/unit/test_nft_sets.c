/* The nftables writer's record of sets (felix/dataplane/nft_sets.c): sorted records, packed
 * elements kept in the order memcmp gives, shrinking after a plan. */
#include "harness.h"

#include "dataplane/nft_sets.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static struct nft_elem v4(const char *lo, const char *hi)
{
	struct nft_elem e = { 0 };
	assert_int_equal(inet_pton(AF_INET, lo, e.lo), 1);
	assert_int_equal(inet_pton(AF_INET, hi, e.hi), 1);
	return e;
}

static void test_records_sorted_and_fitted(void **state)
{
	struct msets s = { 0 };
	char name[32];
	for (int i = 599; i >= 0; i--) { /* added in reverse: each lands in its place */
		snprintf(name, sizeof(name), "cali40s_%04d", i);
		struct mset *ms = msets_add(&s, name);
		assert_string_equal(ms->name, name);
		assert_null(ms->keys);
	}
	assert_int_equal(s.n, 600);
	for (size_t i = 1; i < s.n; i++)
		assert_true(strcmp(s.v[i - 1].name, s.v[i].name) < 0);
	assert_int_equal(s.cap, 1024); /* doubled */
	msets_fit(&s);		       /* over a quarter unused: shrunk */
	assert_int_equal(s.cap, 601);
	assert_non_null(msets_get(&s, "cali40s_0500"));
	for (int i = 0; i < 600; i += 2) {
		snprintf(name, sizeof(name), "cali40s_%04d", i);
		msets_del(&s, name);
	}
	msets_del(&s, "cali40s_none"); /* not there: nothing */
	assert_int_equal(s.n, 300);
	assert_null(msets_get(&s, "cali40s_0500"));
	assert_non_null(msets_get(&s, "cali40s_0501"));
	msets_fit(&s);
	assert_int_equal(s.cap, 301);
	msets_add(&s, "cali40s_more1"); /* fills the one spare record */
	msets_fit(&s);
	assert_int_equal(s.cap, 301);
	msets_add(&s, "cali40s_more2"); /* doubles */
	assert_int_equal(s.cap, 602);
	msets_fit(&s);
	assert_int_equal(s.cap, 303);
	msets_fit(&s); /* fitted: stays */
	assert_int_equal(s.cap, 303);
	msets_clear(&s);
	assert_int_equal(s.n, 0);
	assert_null(s.v);
}

static void test_elements_packed_and_edited(void **state)
{
	struct msets s = { 0 };
	struct mset *ms = msets_add(&s, "cali40s_nets");
	ms->kind = NFT_SET_ADDRS;
	struct nft_elem have[] = { v4("10.0.0.0", "10.0.0.255"), v4("10.0.2.1", "10.0.2.1") };
	mset_set_elems(AF_INET, ms, have, 2);
	assert_int_equal(ms->stride, 8);
	assert_int_equal(ms->n, 2);
	assert_false(ms->hosts);
	assert_false(mset_is_host(AF_INET, NFT_SET_ADDRS, &have[0]));
	assert_true(mset_is_host(AF_INET, NFT_SET_ADDRS, &have[1]));

	/* one gone, two joined (one of them before both): kept sorted */
	struct nft_elem gone[] = { have[0] };
	struct nft_elem joined[] = { v4("10.0.3.0", "10.0.3.127"), v4("9.0.0.1", "9.0.0.1") };
	mset_edit(AF_INET, ms, gone, 1, joined, 2);
	assert_int_equal(ms->n, 3);
	uint8_t key[32];
	const struct nft_elem order[] = { joined[1], have[1], joined[0] };
	for (int i = 0; i < 3; i++) {
		mset_pack(AF_INET, ms->kind, &order[i], key);
		assert_int_equal(mset_find(ms, key), i);
		struct nft_elem back;
		mset_unpack(AF_INET, ms->kind, ms->keys + (size_t)i * ms->stride, &back);
		assert_memory_equal(back.lo, order[i].lo, 4);
		assert_memory_equal(back.hi, order[i].hi, 4);
	}
	mset_pack(AF_INET, ms->kind, &have[0], key);
	assert_int_equal(mset_find(ms, key), -2);   /* would go second */
	mset_edit(AF_INET, ms, NULL, 0, joined, 1); /* there already: nothing */
	assert_int_equal(ms->n, 3);
	msets_clear(&s);
}

static void test_named_ports_packed(void **state)
{
	struct nft_elem e = v4("10.1.2.3", "10.1.2.3"), back;
	e.proto = 6;
	e.port = 8080;
	uint8_t key[32];
	assert_int_equal(mset_stride(AF_INET, NFT_SET_PORTS), 7);
	assert_int_equal(mset_stride(AF_INET6, NFT_SET_PORTS), 19);
	assert_int_equal(mset_stride(AF_INET6, NFT_SET_ADDRS), 32);
	mset_pack(AF_INET, NFT_SET_PORTS, &e, key);
	assert_int_equal(key[4], 6);
	assert_int_equal(key[5] << 8 | key[6], 8080); /* network order, so memcmp sorts ports */
	mset_unpack(AF_INET, NFT_SET_PORTS, key, &back);
	assert_memory_equal(back.lo, e.lo, 4);
	assert_int_equal(back.proto, 6);
	assert_int_equal(back.port, 8080);
	assert_true(mset_is_host(AF_INET, NFT_SET_PORTS, &e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_sorted_and_fitted),
		cmocka_unit_test(test_elements_packed_and_edited),
		cmocka_unit_test(test_named_ports_packed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
