/* Growable, always NUL-terminated byte strings. */
#ifndef BRINDLE_STRBUF_H
#define BRINDLE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <brindle/core/util.h>

struct strbuf {
	char *buf; /* NUL-terminated; never NULL after sb_init */
	size_t len, cap;
};

#define STRBUF_INIT \
	{           \
		0   \
	}

void sb_init(struct strbuf *sb);
void sb_free(struct strbuf *sb);
void sb_reset(struct strbuf *sb);
void sb_add(struct strbuf *sb, const void *p, size_t n);
void sb_adds(struct strbuf *sb, const char *s);
void sb_addc(struct strbuf *sb, char c);
void sb_addf(struct strbuf *sb, const char *fmt, ...) printf_like(2, 3);
void sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap) printf_like(2, 0);
void sb_truncate(struct strbuf *sb, size_t len);
/* Room for @extra more bytes (and the NUL) without another allocation. */
void sb_reserve(struct strbuf *sb, size_t extra);
/* Returns the buffer, transferring ownership; @sb is left empty. */
char *sb_detach(struct strbuf *sb);

static inline const char *sb_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

#endif
