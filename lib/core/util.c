/* Allocation wrappers that never return NULL, and the monotonic clock. */
#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void die_oom(void)
{
	fputs("brindle: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die_oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die_oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die_oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		die_oom();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		die_oom();
	return p;
}

void grow_array(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return;
	size_t ncap = *cap ? *cap : 8;
	while (ncap < need)
		ncap *= 2;
	*v = xrealloc(*v, ncap * elem);
	*cap = ncap;
}
