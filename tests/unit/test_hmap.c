#include "harness.h"

#include <brindle/core/hmap.h>

#include <stdio.h>
#include <stdlib.h>

/* Each test runs on a map of each kind: plain, and bulk (entries from an arena). */
static void init(struct hmap *m, void **state)
{
	if (*state)
		hmap_init_bulk(m);
	else
		*m = (struct hmap)HMAP_INIT;
}

static void test_put_get_del(void **state)
{
	struct hmap m;
	init(&m, state);
	char key[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_null(hmap_put(&m, key, (void *)(intptr_t)(i + 1)));
	}
	assert_int_equal(m.n, 5000);
	assert_ptr_equal(hmap_put(&m, "k7", (void *)(intptr_t)99), (void *)(intptr_t)8);
	assert_ptr_equal(hmap_get(&m, "k7"), (void *)(intptr_t)99);
	assert_null(hmap_get(&m, "nope"));
	for (int i = 0; i < 5000; i += 2) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_non_null(hmap_del(&m, key));
	}
	assert_int_equal(m.n, 2500);
	assert_false(hmap_has(&m, "k0"));
	assert_true(hmap_has(&m, "k1"));
	hmap_clear(&m);
	assert_int_equal(m.n, 0);
	assert_null(hmap_get(&m, "k1"));
}

static void test_iterate_and_delete(void **state)
{
	struct hmap m;
	init(&m, state);
	char key[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "x%d", i);
		hmap_put(&m, key, (void *)(intptr_t)i);
	}
	long sum = 0;
	int seen = 0;
	for (struct hmap_iter it = hmap_iter(&m); hmap_next(&it);) {
		sum += (intptr_t)it.value;
		seen++;
		if ((intptr_t)it.value % 3 == 0)
			hmap_del(&m, it.key);
	}
	assert_int_equal(seen, 1000);
	assert_int_equal(sum, 999 * 1000 / 2);
	assert_int_equal(m.n, 1000 - 334);
	struct hmap empty = HMAP_INIT;
	struct hmap_iter it = hmap_iter(&empty);
	assert_false(hmap_next(&it));
	hmap_clear(&m);
}

/* A bulk map is filled and emptied whole again and again; it stays a bulk map. */
static void test_bulk_refill(void **state)
{
	struct hmap m;
	hmap_init_bulk(&m);
	char key[64];
	for (int round = 0; round < 3; round++) {
		int n = 3000 * (round + 1);
		for (int i = 0; i < n; i++) {
			snprintf(key, sizeof(key), "cali40s:set%d\n10.0.%d.%d", round, i / 256,
				 i % 256);
			assert_null(hmap_put(&m, key, (void *)(intptr_t)(i + 1)));
		}
		assert_int_equal(m.n, n);
		snprintf(key, sizeof(key), "cali40s:set%d\n10.0.0.7", round);
		assert_ptr_equal(hmap_get(&m, key), (void *)(intptr_t)8);
		assert_ptr_equal(hmap_del(&m, key), (void *)(intptr_t)8);
		assert_false(hmap_has(&m, key));
		assert_int_equal(m.n, n - 1);
		hmap_clear(&m);
		assert_int_equal(m.n, 0);
		assert_true(m.bulk);
		assert_null(m.arena);
		assert_false(hmap_has(&m, "cali40s:set0\n10.0.0.1"));
	}
	hmap_clear(&m); /* an empty bulk map clears too */
}

int main(void)
{
	static int bulk = 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_del),
		cmocka_unit_test(test_iterate_and_delete),
		cmocka_unit_test_prestate(test_put_get_del, &bulk),
		cmocka_unit_test_prestate(test_iterate_and_delete, &bulk),
		cmocka_unit_test(test_bulk_refill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
