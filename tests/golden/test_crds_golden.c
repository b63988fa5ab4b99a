/*
 * deploy/crds.yaml is what `brindlectl manifests crds` prints: the shipped
 * CRDs never drift from the model they are generated from. When the model
 * changes, refresh the file with
 *   build/test/ctl/brindlectl manifests crds > deploy/crds.yaml
 * or BRINDLE_UPDATE_GOLDEN=1 (this test rewrites it), and review the diff.
 */
#include "harness.h"

#include <brindle/core/model_crd.h>
#include <brindle/sys/strbuf_file.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CRDS "deploy/crds.yaml"

static void test_crds_current(void **state)
{
	(void)state;
	struct strbuf got = STRBUF_INIT, want = STRBUF_INIT;
	sb_init(&got);
	sb_init(&want);
	model_crds_yaml(&got);
	const char *path = test_source_path(CRDS);
	const char *u = getenv("BRINDLE_UPDATE_GOLDEN");
	if (u && *u && strcmp(u, "0") != 0) {
		FILE *f = fopen(path, "w");
		if (!f || fwrite(got.buf, 1, got.len, f) != got.len || fclose(f) != 0)
			fail_msg("cannot write %s", path);
	} else if (sb_read_file(&want, path) < 0) {
		fail_msg("cannot read %s", path);
	} else if (want.len != got.len || memcmp(want.buf, got.buf, got.len) != 0) {
		size_t line = 1, i = 0;
		for (; i < want.len && i < got.len && want.buf[i] == got.buf[i]; i++)
			line += want.buf[i] == '\n';
		fail_msg("%s is stale: it differs from the model's CRDs from line %zu. Refresh it "
			 "with `build/test/ctl/brindlectl manifests crds > " CRDS "` (or "
			 "BRINDLE_UPDATE_GOLDEN=1 ctest -R crds_golden) and commit it",
			 path, line);
	}
	sb_free(&got);
	sb_free(&want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crds_current),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
