/*
 * Chunked bump allocator. Chunks double in size up to 64 KiB; requests larger
 * than a quarter chunk get a chunk of their own, so big arrays waste nothing.
 */
#include <brindle/core/arena.h>

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>

struct chunk {
	struct chunk *next;
	size_t size, used;
	alignas(max_align_t) unsigned char data[];
};

struct arena {
	struct chunk *head;
	size_t next_size;
	size_t total;
};

#define FIRST_CHUNK 1024
#define MAX_CHUNK (64 * 1024)

struct arena *arena_new(void)
{
	struct arena *a = xcalloc(1, sizeof(*a));
	a->next_size = FIRST_CHUNK;
	return a;
}

void arena_free(struct arena *a)
{
	if (!a)
		return;
	struct chunk *c = a->head;
	while (c) {
		struct chunk *next = c->next;
		free(c);
		c = next;
	}
	free(a);
}

void arena_reset(struct arena *a)
{
	struct chunk *c = a->head;
	while (c) {
		struct chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->next_size = FIRST_CHUNK;
	a->total = 0;
}

static struct chunk *chunk_new(size_t size)
{
	struct chunk *c = xmalloc(sizeof(*c) + size);
	c->next = NULL;
	c->size = size;
	c->used = 0;
	return c;
}

void *arena_alloc(struct arena *a, size_t n)
{
	const size_t align = alignof(max_align_t);
	n = (n + align - 1) & ~(align - 1);
	if (n == 0)
		n = align;
	a->total += n;

	struct chunk *c = a->head;
	if (c && c->size - c->used >= n) {
		void *p = c->data + c->used;
		c->used += n;
		memset(p, 0, n);
		return p;
	}
	if (n > a->next_size / 4) {
		/* Large: own chunk, linked behind the current one. */
		struct chunk *big = chunk_new(n);
		big->used = n;
		if (c) {
			big->next = c->next;
			c->next = big;
		} else {
			a->head = big;
		}
		memset(big->data, 0, n);
		return big->data;
	}
	c = chunk_new(a->next_size);
	if (a->next_size < MAX_CHUNK)
		a->next_size *= 2;
	c->next = a->head;
	a->head = c;
	c->used = n;
	memset(c->data, 0, n);
	return c->data;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

void *arena_memdup(struct arena *a, const void *p, size_t n)
{
	void *q = arena_alloc(a, n);
	if (n)
		memcpy(q, p, n);
	return q;
}

char *arena_vprintf(struct arena *a, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		n = 0;
	char *p = arena_alloc(a, (size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = arena_vprintf(a, fmt, ap);
	va_end(ap);
	return p;
}

size_t arena_used(const struct arena *a)
{
	return a->total;
}
