/*
 * Shared helpers for C tests. Include after <cmocka.h>'s prerequisites:
 * <stdarg.h>, <stddef.h>, <stdint.h>, <setjmp.h>.
 */
#ifndef BRINDLE_TEST_HARNESS_H
#define BRINDLE_TEST_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <brindle/core/strbuf.h>

/* Path of a file in the source tree ($BRINDLE_SOURCE_DIR/<rel>); static buffer. */
const char *test_source_path(const char *rel);
/* Reads a source-tree file into @sb; fails the test if it cannot. */
void test_read_source_file(const char *rel, struct strbuf *sb);
/*
 * snprintf into @buf that fails the test when the text does not fit: a path
 * or document cut short would test something else.
 */
void test_snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
