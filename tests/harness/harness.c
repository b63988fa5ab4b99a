#include "harness.h"
#include <brindle/sys/strbuf_file.h>

#include <stdio.h>
#include <stdlib.h>

const char *test_source_path(const char *rel)
{
	static char buf[4096];
	const char *top = getenv("BRINDLE_SOURCE_DIR");
	snprintf(buf, sizeof(buf), "%s/%s", top ? top : ".", rel);
	return buf;
}

void test_read_source_file(const char *rel, struct strbuf *sb)
{
	const char *p = test_source_path(rel);
	if (sb_read_file(sb, p) < 0)
		fail_msg("cannot read %s", p);
}
