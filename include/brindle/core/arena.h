/*
 * Arenas: bump allocation with one free for everything. A decoded resource,
 * a calculation cycle or a rendered config owns one arena; nothing allocated
 * from it is freed on its own.
 */
#ifndef BRINDLE_ARENA_H
#define BRINDLE_ARENA_H

#include <stdarg.h>
#include <stddef.h>
#include <brindle/core/util.h>

struct arena;

struct arena *arena_new(void);
/* Frees the arena and everything allocated from it. Accepts NULL. */
void arena_free(struct arena *a);
/* Frees everything allocated from @a but keeps the arena (and its first chunk). */
void arena_reset(struct arena *a);

/* Zeroed memory, aligned for any type. Never returns NULL. */
void *arena_alloc(struct arena *a, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
void *arena_memdup(struct arena *a, const void *p, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...) printf_like(2, 3);
char *arena_vprintf(struct arena *a, const char *fmt, va_list ap) printf_like(2, 0);
/* Bytes handed out so far (for memory accounting). */
size_t arena_used(const struct arena *a);

#define arena_new_array(a, type, n) ((type *)arena_alloc((a), sizeof(type) * (n)))

#endif
