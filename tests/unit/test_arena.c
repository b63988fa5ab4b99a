/* Arenas: allocation patterns that once went wrong. */
#include "harness.h"

#include <brindle/core/arena.h>

static void test_large_first_allocation(void **state)
{
	/* A first request big enough for its own chunk becomes the only chunk. */
	struct arena *a = arena_new();
	char *p = arena_alloc(a, 4096);
	memset(p, 'x', 4096);
	assert_int_equal(arena_used(a), 4096);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_large_first_allocation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
