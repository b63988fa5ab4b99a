/* Small macros shared by every module. Nothing here allocates or does I/O. */
#ifndef BRINDLE_UTIL_H
#define BRINDLE_UTIL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define ARRAY_SIZE(a)			(sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define must_check			__attribute__((warn_unused_result))
#define printf_like(f, a)		__attribute__((format(printf, f, a)))
#define maybe_unused			__attribute__((unused))
#define likely(x)			__builtin_expect(!!(x), 1)
#define unlikely(x)			__builtin_expect(!!(x), 0)
#define MIN(a, b)			((a) < (b) ? (a) : (b))
#define MAX(a, b)			((a) > (b) ? (a) : (b))

static inline bool streq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static inline bool str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static inline bool str_has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* Aborts with a message; for allocation failure and programmer errors only. */
__attribute__((noreturn)) void die_oom(void);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Grow *v (of *cap elements of size elem) to hold at least need elements. */
void grow_array(void **v, size_t *cap, size_t need, size_t elem);
#define GROW(v, cap, need) grow_array((void **)&(v), &(cap), (need), sizeof(*(v)))

#endif
