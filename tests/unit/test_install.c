/* Finding the build tree and the install prefix from the running program. */
#include "harness.h"

#include <brindle/core/arena.h>
#include <brindle/paths.h>
#include <brindle/sys/install.h>

#include <unistd.h>

static void test_build_tree(void **state)
{
	/* This test runs from <build>/tests: its prefix is the build directory. */
	struct arena *a = arena_new();
	assert_true(install_in_build_tree(a));
	assert_string_equal(install_find(a, "confd/brindle-confd", X_OK),
			    BRINDLE_BUILD_DIR "/confd/brindle-confd");
	/* Nothing anywhere: the path under the running program's prefix, for the message. */
	assert_string_equal(install_find(a, "no/such/file", R_OK),
			    BRINDLE_BUILD_DIR "/no/such/file");
	arena_free(a);
}

static void test_absolute(void **state)
{
	struct arena *a = arena_new();
	assert_string_equal(install_find(a, "/opt/x/none", R_OK), "/opt/x/none");
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_tree),
		cmocka_unit_test(test_absolute),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
