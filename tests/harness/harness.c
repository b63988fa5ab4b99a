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

void test_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		fail_msg("%.60s...: longer than the %zu bytes given", buf, size);
}
