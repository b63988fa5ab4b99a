/* The recording sysctl backend: values in memory, a log of writes (sysctl_record.h). */
#include <brindle/core/hmap.h>
#include <brindle/core/strbuf.h>
#include <brindle/testing/sysctl_record.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- recording ----------------------------------------------------------------------- */

struct sysctl_record {
	struct sysctl s;
	struct hmap values; /* path → strdup'd value */
	char **log;
	size_t nlog, cap;
};

static int r_read(struct sysctl *s, const char *path, char *buf, size_t size)
{
	struct sysctl_record *r = container_of(s, struct sysctl_record, s);
	const char *v = hmap_get(&r->values, path);
	if (!v)
		return -ENOENT;
	snprintf(buf, size, "%s", v);
	return 0;
}

static int r_write(struct sysctl *s, const char *path, const char *value)
{
	struct sysctl_record *r = container_of(s, struct sysctl_record, s);
	/* Interface settings exist once the interface does; the test presets them. */
	if (!hmap_has(&r->values, path))
		return -ENOENT;
	free(hmap_put(&r->values, path, xstrdup(value)));
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sb_addf(&sb, "%s=%s", path, value);
	GROW(r->log, r->cap, r->nlog + 1);
	r->log[r->nlog++] = sb_detach(&sb);
	return 0;
}

static void r_close(struct sysctl *s)
{
	struct sysctl_record *r = container_of(s, struct sysctl_record, s);
	for (struct hmap_iter it = hmap_iter(&r->values); hmap_next(&it);)
		free(it.value);
	hmap_clear(&r->values);
	for (size_t i = 0; i < r->nlog; i++)
		free(r->log[i]);
	free(r->log);
	free(r);
}

static const struct sysctl_ops record_ops = { r_read, r_write, r_close };

struct sysctl *sysctl_open_recording(void)
{
	struct sysctl_record *r = xcalloc(1, sizeof(*r));
	r->s.ops = &record_ops;
	return &r->s;
}

size_t sysctl_record_count(const struct sysctl *s)
{
	return s->ops == &record_ops ? container_of(s, const struct sysctl_record, s)->nlog : 0;
}

const char *sysctl_record_entry(const struct sysctl *s, size_t i)
{
	const struct sysctl_record *r = container_of(s, const struct sysctl_record, s);
	return s->ops == &record_ops && i < r->nlog ? r->log[i] : NULL;
}

void sysctl_record_set(struct sysctl *s, const char *path, const char *value)
{
	if (s->ops != &record_ops)
		return;
	struct sysctl_record *r = container_of(s, struct sysctl_record, s);
	free(hmap_put(&r->values, path, xstrdup(value)));
}
