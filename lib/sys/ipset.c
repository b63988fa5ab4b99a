/* The ip set handle over its backend: dispatch, error text, sorted lists. */
#include "ipset_internal.h"

#include <brindle/sys/ipset.h>

#include <stdlib.h>
#include <string.h>

/* --- dispatch --------------------------------------------------------------------- */

void ips_close(struct ips *s)
{
	if (s)
		s->ops->close(s);
}

const char *ips_last_error(const struct ips *s)
{
	return sb_str(&s->err);
}

static int list(struct ips *s, const char *prefix, struct ips_list *out,
		int (*fn)(struct ips *s, const char *prefix, struct ips_list *out))
{
	struct ips_list l = { 0 };
	sb_reset(&s->err);
	int r = fn(s, prefix ? prefix : "", &l);
	if (r < 0) {
		ips_list_free(&l);
		return r;
	}
	ips_list_sort(&l);
	ips_list_free(out);
	*out = l;
	return 0;
}

int ips_list_sets(struct ips *s, const char *prefix, struct ips_list *out)
{
	return list(s, prefix, out, s->ops->list);
}

int ips_list_names(struct ips *s, const char *prefix, struct ips_list *out)
{
	return list(s, prefix, out, s->ops->list_names);
}

int ips_apply(struct ips *s, struct ips_batch *b, int *errs)
{
	sb_reset(&s->err);
	if (ips_batch_count(b) == 0)
		return 0;
	int *own = errs ? NULL : xcalloc(ips_batch_count(b), sizeof(int));
	int *e = errs ? errs : own;
	memset(e, 0, ips_batch_count(b) * sizeof(int));
	int r = s->ops->apply(s, b, e);
	free(own);
	return r;
}
